/* cuda_compile.h: a kernel's IR to a loadable image (emit_cuda.h, then
 * NVRTC), at the highest occupancy that does not spill.  Prefix:
 * cuda_compile_.  Used by the CUDA backend (cuda_backend.c) and the nvrtc
 * tests (nvrtc_check --settle); needs no GPU and no driver. */
#ifndef TILE_CUDA_COMPILE_H
#define TILE_CUDA_COMPILE_H

#include "cuda_nvrtc.h"
#include "emit_cuda.h"

typedef struct CudaImage {
    void *data;          /* malloc'd cubin for sm_<arch>, or PTX with its NUL (the driver reads either) */
    size_t size;
    int is_cubin;
    int arch;            /* the architecture it is for (90 when NVRTC did not know the asked one) */
    CudaResources res;   /* ptxas's report of the cubin (found = 0 without one) */
    int compilations;    /* NVRTC runs it took */
    double compile_ms;   /* their wall time */
} CudaImage;

/* Compiles *code, the kernel's emission with *opt, for sm_<arch>.  While
 * ptxas reports local-memory spills and the emission asked __launch_bounds__
 * for more than one block per SM (code->occupancy), emits the kernel again
 * with one block fewer (opt.max_occupancy) and compiles that, keeping the
 * first image without spills, or the last.  On return *code is the emission
 * the image is of.  Returns 0, or -1 with a message in err (an emission
 * error's text included). */
int  cuda_compile_settled(const IrFunc *f, CudaEmitOptions opt, int arch, CudaKernelCode *code, CudaImage *out,
                          char *err, size_t errlen);
void cuda_image_free(CudaImage *im);

#endif
