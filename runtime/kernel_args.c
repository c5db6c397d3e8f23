/* kernel_args.c: a generated kernel's emission and a launch's arguments in
 * its parameter types (kernel_args.h). */
#include "kernel_args.h"

#include <stdlib.h>
#include <string.h>

tile_status kernel_args_emit(tile_ctx *ctx, const tile_kernel *k, const CudaEmitOptions *opt, CudaKernelCode *code) {
    Diag d;
    diag_init(&d, k->module->name, k->module->source);
    tile_status st = TILE_OK;
    if (cuda_emit(k->ir, opt, code, &d) != 0)
        st = tile_error(ctx, TILE_ERR_COMPILE, "kernel '%s' cannot be compiled for CUDA:\n%s", k->ir->name, diag_text(&d));
    diag_free(&d);
    return st;
}

unsigned char kernel_args_array_facts(const tile_array *a) {
    int es = tile_dtype_size(a->dtype);
    unsigned char f = 0;
    bool vec = a->rank > 0 && ((uintptr_t)a->data % 16) == 0 && (a->strides[a->rank - 1] == 1 || a->shape[a->rank - 1] <= 1);
    for (int d = 0; d + 1 < a->rank && vec; d++)
        if (a->shape[d] > 1 && (a->strides[d] * es) % 16 != 0) vec = false;
    if (vec) f |= CUDA_ARRAY_VEC16;
    int64_t max_off = 0;
    bool small = true;
    for (int d = 0; d < a->rank; d++) {
        if (a->shape[d] <= 0) continue;
        int64_t span;
        if (__builtin_mul_overflow(a->shape[d] - 1, a->strides[d], &span) ||
            __builtin_add_overflow(max_off, span, &max_off)) small = false;
    }
    if (small && max_off < ((int64_t)1 << 31) - 1) f |= CUDA_ARRAY_OFF32;
    return f;
}

/* The byte strides of array `a`'s tensor map, innermost dimension first
 * (TMA's order; the last axis's is implicit), when a map can describe it
 * (emit_cuda.h, CUDA_ARRAY_TMA).  An axis of extent 1 is never stepped
 * along: it gets the smallest stride the rules allow. */
bool kernel_args_tma_strides(const tile_array *a, uint64_t stride[4]) {
    int es = tile_dtype_size(a->dtype), r = a->rank;
    if (r < 1 || r > 5 || (uintptr_t)a->data % 16 != 0 || (a->strides[r - 1] != 1 && a->shape[r - 1] > 1)) return false;
    for (int d = 0; d < r; d++)
        if (a->shape[d] < 1 || a->shape[d] > INT32_MAX) return false;   /* (coordinates are 32-bit) */
    int64_t span = a->shape[r - 1] * es;   /* bytes the axes inside reach */
    for (int d = r - 2, k = 0; d >= 0; d--, k++) {
        int64_t sb = a->shape[d] > 1 ? a->strides[d] * es : (span + 15) / 16 * 16;
        if (sb % 16 != 0 || sb < span || sb >= ((int64_t)1 << 40)) return false;
        stride[k] = (uint64_t)sb;
        span = sb * a->shape[d];
    }
    return true;
}

static int kernel_args_slots(const IrFunc *f) {
    int n = 0;
    for (int i = 0; i < f->nparams; i++) n += f->params[i].kind == IRP_ARRAY ? 1 + 2 * f->params[i].rank : 1;
    return n;
}

static void kernel_args_pack(const IrFunc *f, const tile_launch_arg *args, uint64_t *store, void **params) {
    int n = 0;
    for (int i = 0; i < f->nparams; i++) {
        const IrParam *p = &f->params[i];
        if (p->kind == IRP_SCALAR) {   /* its register type (emit_cuda.h) is its element's */
            store[n] = 0;
            scalar_store(p->dtype, &store[n], args[i].scalar);
            params[n] = &store[n];
            n++;
            continue;
        }
        const tile_array *a = &args[i].array;
        uint64_t ptr = (uint64_t)(uintptr_t)a->data;
        memcpy(&store[n], &ptr, sizeof ptr);
        params[n] = &store[n];
        n++;
        for (int d = 0; d < p->rank; d++) {
            int32_t e = (int32_t)a->shape[d];
            store[n] = 0;
            memcpy(&store[n], &e, 4);
            params[n] = &store[n];
            n++;
        }
        for (int d = 0; d < p->rank; d++) {
            int64_t st = a->strides[d];
            memcpy(&store[n], &st, 8);
            params[n] = &store[n];
            n++;
        }
    }
}

tile_status kernel_args_build(tile_ctx *ctx, const IrFunc *f, const tile_launch_arg *args, int extra, KernelArgs *out) {
    int nslots = kernel_args_slots(f);
    *out = (KernelArgs){calloc((size_t)(nslots > 0 ? nslots : 1), sizeof(uint64_t)),
                        calloc((size_t)(nslots + extra > 0 ? nslots + extra : 1), sizeof(void *)), nslots};
    if (!out->store || !out->params) {
        kernel_args_free(out);
        return tile_error(ctx, TILE_ERR_NO_MEMORY, "out of memory");
    }
    kernel_args_pack(f, args, out->store, out->params);
    return TILE_OK;
}

void kernel_args_free(KernelArgs *a) {
    free(a->store);
    free(a->params);
    *a = (KernelArgs){NULL, NULL, 0};
}
