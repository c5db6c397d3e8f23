/* cuda_compile.c: emission and NVRTC with the occupancy rule (cuda_compile.h).
 *
 * A kernel's occupancy (its hint, or the emitter's choice) sets the registers
 * ptxas may give a thread.  Asked for more blocks per SM than the kernel's
 * registers allow, ptxas spills them to local memory, which in the kernels
 * measured cost more than the warps it bought (docs/performance.md); how many
 * registers a kernel takes is known only after ptxas.  So the occupancy is
 * honoured when it compiles without spills and lowered one block at a time
 * otherwise. */
#include "cuda_compile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void cuda_image_free(CudaImage *im) {
    if (!im) return;
    free(im->data);
    memset(im, 0, sizeof *im);
}

/* NVRTC 12.9+ may answer a source it has compiled before (in any process)
 * from its own cache without running ptxas, so without the resource report
 * the rule reads: a symbol unique to this compilation makes the source new. */
static char *with_nonce(const char *source) {
    static unsigned long count;
    size_t n = strlen(source) + 128;
    char *s = malloc(n);
    if (s) snprintf(s, n, "%s\n__device__ int tilec_compile_nonce_%ld_%ld_%lu;\n", source, (long)getpid(),
                    (long)time(NULL), count++);
    return s;
}

/* One image of `code`: a cubin for sm_<arch> (PTX for sm_90 when NVRTC does
 * not know the architecture), with ptxas's report when there is a cubin. */
static int compile_once(const CudaKernelCode *code, int arch, CudaImage *out, char *err, size_t errlen) {
    CudaBinary bin;
    int rc = cuda_nvrtc_compile(code->source, code->name, arch, code->sm90a, 1, &bin, err, errlen);
    if (rc != 0 && !code->sm90a && strstr(err, "INVALID_OPTION")) {   /* a device newer than NVRTC */
        arch = 90;
        rc = cuda_nvrtc_compile(code->source, code->name, arch, 0, 0, &bin, err, errlen);
    }
    if (rc != 0) return -1;
    out->compilations++;
    out->compile_ms += bin.compile_ms;
    cuda_nvrtc_resources(bin.cubin ? bin.log : NULL, &out->res);
    if (bin.cubin && !out->res.found) {   /* answered from NVRTC's cache: again, for the report */
        char *unique = with_nonce(code->source);
        CudaBinary again;
        if (unique && cuda_nvrtc_compile(unique, code->name, arch, code->sm90a, 1, &again, err, errlen) == 0) {
            out->compilations++;
            out->compile_ms += again.compile_ms;
            if (again.cubin) {
                cuda_binary_free(&bin);
                bin = again;
                cuda_nvrtc_resources(bin.log, &out->res);
            } else {
                cuda_binary_free(&again);
            }
        }
        free(unique);
    }
    free(out->data);
    out->arch = arch;
    out->is_cubin = bin.cubin != NULL;
    if (bin.cubin) {
        out->data = bin.cubin;
        out->size = bin.cubin_size;
        bin.cubin = NULL;
    } else {
        out->data = bin.ptx;
        out->size = bin.ptx_size + 1;
        bin.ptx = NULL;
    }
    cuda_binary_free(&bin);
    return 0;
}

int cuda_compile_settled(const IrFunc *f, CudaEmitOptions opt, int arch, CudaKernelCode *code, CudaImage *out,
                         char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    for (;;) {
        if (compile_once(code, arch, out, err, errlen) != 0) {
            cuda_image_free(out);
            return -1;
        }
        if (out->res.spill_stores + out->res.spill_loads == 0 || code->occupancy <= 1) return 0;
        opt.max_occupancy = code->occupancy - 1;
        CudaKernelCode lower;
        Diag d;
        diag_init(&d, "", "");
        int rc = cuda_emit(f, &opt, &lower, &d);
        if (rc != 0) snprintf(err, errlen, "%s", diag_text(&d));
        diag_free(&d);
        if (rc != 0) {
            cuda_image_free(out);
            return -1;
        }
        cuda_code_free(code);
        *code = lower;
    }
}
