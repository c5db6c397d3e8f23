/* cuda_compile.h: a kernel's IR to a loadable image (emit_cuda.h, then
 * NVRTC), at the highest occupancy up to its own that does not spill.
 * Prefix: cuda_compile_.  Used by the CUDA backend (cuda_backend.c), `tilec
 * --emit=ptx|cubin` and the nvrtc tests (nvrtc_check --settle); needs no GPU
 * and no driver. */
#ifndef TILE_CUDA_COMPILE_H
#define TILE_CUDA_COMPILE_H

#include "cuda_nvrtc.h"
#include "emit_cuda.h"

typedef struct CudaCompiled {
    void *image;         /* malloc'd cubin for sm_<arch>, or PTX with its NUL (the driver reads either) */
    size_t size;
    char *ptx;           /* malloc'd PTX text the cubin was made from; NULL where the image is PTX */
    char *log;           /* malloc'd NVRTC log of the image's compilation (ptxas -v lines, C7514 ...) */
    CudaResources res;   /* ptxas's report of the cubin (found = 0 for PTX) */
    int compilations;    /* NVRTC runs it took */
    double compile_ms;   /* their wall time */
    int max_occupancy;   /* the kept emission's CudaEmitOptions.max_occupancy: the caller's,
                          * or the one the rule lowered it to (emit again with it to get
                          * the image's threads, shared memory and tensor maps) */
} CudaCompiled;

/* Does the rule below apply?  Yes unless TILEC_SETTLE_OCCUPANCY=0 (then every
 * kernel is compiled at the occupancy it asks for, spills or not). */
int  cuda_compile_settles(void);

/* Compiles *code, the kernel's emission with `opt`, for sm_<arch>.  While
 * ptxas reports local-memory spills, the emission asked __launch_bounds__
 * for more than one block per SM (code->occupancy; where it asked none, the
 * blocks ptxas's registers allow) and the registers were not already at
 * ptxas's maximum, emits the kernel again with one block fewer
 * (opt.max_occupancy) and compiles that.  Keeps the image with the fewest
 * spilled bytes, the first such (highest occupancy) on a tie, and sets *code
 * to the emission it is of.  The caller frees *code (cuda_code_free) either
 * way, and *out (cuda_compile_free) on success; on error *out is empty and
 * err holds the message. */
int  cuda_compile_settled(const IrFunc *f, CudaEmitOptions opt, int arch, CudaKernelCode *code, CudaCompiled *out,
                          char *err, size_t errlen);
void cuda_compile_free(CudaCompiled *c);

#endif
