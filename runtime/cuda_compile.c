/* cuda_compile.c: emission and NVRTC with the occupancy rule (cuda_compile.h).
 *
 * A kernel's occupancy (its hint, or the emitter's choice) sets the registers
 * ptxas may give a thread.  Asked for more blocks per SM than the kernel's
 * registers allow, ptxas spills them to local memory; how many registers a
 * kernel takes is known only after ptxas.  So the occupancy is honoured where
 * it compiles without spills and lowered one block at a time otherwise.
 * Spilling is not always slower: on the H200 Mamba-2's fused compute_out ran
 * faster at 4 blocks per SM with 32 bytes of spills than at 3 without, and
 * with f16 inputs at 4 with 208 bytes than at 2 (docs/performance.md).  But
 * its cost is unbounded (a spill in a hot loop is a local-memory round trip
 * each iteration), and the examples are held to none; a kernel whose spills
 * pay is compiled as asked with TILEC_SETTLE_OCCUPANCY=0. */
#include "cuda_compile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The most registers ptxas gives a thread: no fewer blocks can buy more. */
#define MAX_REGISTERS 255
/* Registers per SM (every GPU since Kepler) */
#define REGISTER_FILE 65536

int cuda_compile_settles(void) {
    const char *v = getenv("TILEC_SETTLE_OCCUPANCY");
    return !(v && strcmp(v, "0") == 0);
}

void cuda_compile_free(CudaCompiled *c) {
    if (!c) return;
    free(c->image);
    free(c->ptx);
    free(c->log);
    memset(c, 0, sizeof *c);
}

/* One image of `code` into *out (empty on entry): a cubin for sm_<arch> (PTX
 * for sm_90 when NVRTC does not know the architecture), with ptxas's report
 * when there is a cubin. */
static int compile_once(const CudaKernelCode *code, int arch, CudaCompiled *out, char *err, size_t errlen) {
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
        CudaBinary again;
        if (cuda_nvrtc_compile_fresh(code->source, code->name, arch, code->sm90a, 1, &again, err, errlen) == 0) {
            out->compilations++;
            out->compile_ms += again.compile_ms;
            if (again.cubin) {   /* its report and log; the image stays the source's own (no nonce) */
                free(bin.log);
                bin.log = again.log;
                again.log = NULL;
                cuda_nvrtc_resources(bin.log, &out->res);
            }
            cuda_binary_free(&again);
        }
    }
    if (bin.cubin) {
        out->image = bin.cubin;
        out->size = bin.cubin_size;
        out->ptx = bin.ptx;
        bin.cubin = NULL;
        bin.ptx = NULL;
    } else {
        out->image = bin.ptx;
        out->size = bin.ptx_size + 1;
        bin.ptx = NULL;
    }
    out->log = bin.log;
    bin.log = NULL;
    cuda_binary_free(&bin);
    return 0;
}

static int spilled(const CudaCompiled *c) { return c->res.spill_stores + c->res.spill_loads; }

int cuda_compile_settled(const IrFunc *f, CudaEmitOptions opt, int arch, CudaKernelCode *code, CudaCompiled *out,
                         char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (compile_once(code, arch, out, err, errlen) != 0) return -1;
    out->max_occupancy = opt.max_occupancy;
    if (!cuda_compile_settles()) return 0;
    /* the last attempt's occupancy and registers (the best one's are *code's and *out's) */
    int occupancy = code->occupancy, registers = out->res.registers, last_spilled = spilled(out);
    /* None asked: ptxas chose the registers of some number of blocks per SM
     * on its own (Mamba-2's fwd_pass_state in f16 on mma.sync: 128 registers,
     * 4 blocks of 128 threads, and 16 bytes of spills, where shared memory
     * allows 3); the rule starts from that number. */
    if (occupancy <= 0 && last_spilled > 0 && registers > 0 && code->threads > 0)
        occupancy = REGISTER_FILE / (((registers + 7) & ~7) * code->threads);   /* (allocated 8 at a time) */
    while (last_spilled > 0 && occupancy > 1 && registers < MAX_REGISTERS) {
        opt.max_occupancy = occupancy - 1;
        CudaKernelCode lower;
        Diag d;
        diag_init(&d, "", "");
        int rc = cuda_emit(f, &opt, &lower, &d);
        if (rc != 0) snprintf(err, errlen, "%s", diag_text(&d));
        diag_free(&d);
        CudaCompiled next = {0};
        if (rc == 0 && compile_once(&lower, arch, &next, err, errlen) != 0) {
            cuda_code_free(&lower);
            rc = -1;
        }
        if (rc != 0) {
            cuda_compile_free(out);
            return -1;
        }
        occupancy = lower.occupancy;
        registers = next.res.registers;
        last_spilled = spilled(&next);
        next.compilations += out->compilations;
        next.compile_ms += out->compile_ms;
        if (last_spilled < spilled(out)) {   /* fewer spills: the new best */
            cuda_compile_free(out);
            *out = next;
            out->max_occupancy = opt.max_occupancy;
            cuda_code_free(code);
            *code = lower;
        } else {                             /* keep the higher occupancy's */
            out->compilations = next.compilations;
            out->compile_ms = next.compile_ms;
            cuda_compile_free(&next);
            cuda_code_free(&lower);
        }
    }
    return 0;
}
