/* cuda_nvrtc.h: compiling generated CUDA C++ with NVRTC.  Prefix: cuda_nvrtc_.
 * Used by the CUDA backend (cuda_backend.c), `tilec --emit=ptx|cubin` and the
 * nvrtc tests; needs no GPU and no driver. */
#ifndef TILE_CUDA_NVRTC_H
#define TILE_CUDA_NVRTC_H

#include <stddef.h>

typedef struct CudaBinary {
    char *ptx;            /* malloc'd PTX text (always produced) */
    size_t ptx_size;
    void *cubin;          /* malloc'd cubin for sm_<arch>, or NULL (PTX only) */
    size_t cubin_size;
    char *log;            /* malloc'd NVRTC log (warnings, ptxas -v lines), may be "" */
    double compile_ms;    /* wall time of the NVRTC calls */
} CudaBinary;

/* The monotonic clock compile times are read on, in ms. */
double cuda_nvrtc_now_ms(void);

/* Resources of one kernel, parsed from the ptxas -v lines of the log. */
typedef struct CudaResources {
    int registers;
    int spill_stores, spill_loads;   /* bytes */
    int stack_frame;                 /* bytes */
    int found;                       /* the log had the lines */
} CudaResources;

/* Compiles `source` (which includes "tile_device.h") for compute/sm_<arch>
 * (e.g. 90), or compute/sm_<arch>a when arch_specific (the code uses
 * features of that architecture alone: wgmma, CudaKernelCode.sm90a).
 * want_cubin: also an sm cubin (with ptxas -v in the log).
 * Returns 0, or -1 with a message (the NVRTC log included) in err. */
int  cuda_nvrtc_compile(const char *source, const char *name, int arch, int arch_specific, int want_cubin,
                        CudaBinary *out, char *err, size_t errlen);
/* cuda_nvrtc_compile on the source with a symbol unique to this call added:
 * NVRTC 12.9+ may answer a source it has compiled before (in any process)
 * from its own cache without running ptxas, so without the resource report
 * (cuda_nvrtc_resources).  For callers that must read the report. */
int  cuda_nvrtc_compile_fresh(const char *source, const char *name, int arch, int arch_specific, int want_cubin,
                              CudaBinary *out, char *err, size_t errlen);
void cuda_binary_free(CudaBinary *b);
/* The compile options besides --gpu-architecture, as one string, for cache keys. */
const char *cuda_nvrtc_options(void);
/* "major.minor" of NVRTC, for cache keys. */
const char *cuda_nvrtc_version(void);
void cuda_nvrtc_resources(const char *log, CudaResources *r);

#endif
