/* kernel_args.h: what the backends that run kernels of the CUDA emitter
 * share (cuda_backend.c on the GPU, emu_backend.c on the host): a kernel's
 * emission, and a launch's arguments as the kernel takes them (emit_cuda.h:
 * its parameters).  Prefix: kernel_args_. */
#ifndef TILE_KERNEL_ARGS_H
#define TILE_KERNEL_ARGS_H

#include "backend.h"
#include "emit_cuda.h"

/* Emits kernel `k` as `opt` says into *code; a failure is the context's
 * error (TILE_ERR_COMPILE, with the emitter's located messages). */
tile_status kernel_args_emit(tile_ctx *ctx, const tile_kernel *k, const CudaEmitOptions *opt, CudaKernelCode *code);

/* The facts of array `a` that specialise a kernel (emit_cuda.h):
 * CUDA_ARRAY_VEC16 and CUDA_ARRAY_OFF32; a tensor map's fact is the
 * backend's to add (kernel_args_tma_strides, where it can make maps). */
unsigned char kernel_args_array_facts(const tile_array *a);

/* The byte strides of array `a`'s tensor map, innermost dimension first
 * (TMA's order; the last axis's is implicit), when a map can describe it
 * (emit_cuda.h, CUDA_ARRAY_TMA): true and stride[0 .. rank - 2] filled. */
bool kernel_args_tma_strides(const tile_array *a, uint64_t stride[4]);

/* A launch's kernelParams: each argument of a launch of `f` in an 8-byte
 * slot of `store` (one per array pointer, extent and stride, one per
 * scalar), params[i] pointing at slot i for i < nslots, then `extra` more
 * pointers for the caller to set (its tensor maps).  Two allocations, so
 * that a driver reading past params[] reads past its allocation. */
typedef struct KernelArgs {
    uint64_t *store;
    void **params;
    int nslots;
} KernelArgs;

/* Packs the checked arguments of a launch of `f` (backend.h) into *out;
 * TILE_ERR_NO_MEMORY (the context's error, *out empty) when out of memory. */
tile_status kernel_args_build(tile_ctx *ctx, const IrFunc *f, const tile_launch_arg *args, int extra, KernelArgs *out);
void kernel_args_free(KernelArgs *a);

#endif
