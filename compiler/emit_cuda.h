/* emit_cuda.h: tile IR -> CUDA C++ (one extern "C" __global__ per specialised
 * kernel), compiled by NVRTC in the runtime.  Prefix: cuda_.
 *
 * Kernel parameters, in IrFunc.params order (the runtime packs them so):
 *   array  i: T *p<i> (16-bit floats as unsigned short, bool as unsigned char),
 *             then int p<i>_n<d> for each extent, then long long p<i>_s<d> for
 *             each stride (in elements);
 *   scalar i: its register type: bool, signed char, short, int, long long,
 *             the unsigned ones, float (f32, tf32), double, and unsigned short
 *             holding the bits of an f16 / bf16;
 * then the tensor maps of CudaKernelCode.tmaps, if any.
 * Launch with `threads` threads per block and `smem_bytes` of dynamic shared
 * memory (over 48 KiB needs cuFuncSetAttribute MAX_DYNAMIC_SHARED_SIZE_BYTES).
 * The grid is the tile grid: blockIdx.{x,y,z} = bid(0, 1, 2). */
#ifndef TILEC_EMIT_CUDA_H
#define TILEC_EMIT_CUDA_H

#include "ir.h"

/* Per-array facts known at launch.  They specialise the kernel, so they are
 * part of the kernel cache key. */
enum {
    /* 16-byte aligned base, unit stride on the last axis, and every other
     * stride a multiple of 16 bytes: vector loads / stores along the last axis */
    CUDA_ARRAY_VEC16 = 1,
    /* every element offset fits in 31 bits: 32-bit address arithmetic */
    CUDA_ARRAY_OFF32 = 2,
    /* a tensor map can describe it (cuTensorMapEncodeTiled): rank <= 5,
     * 16-byte aligned base, unit stride on the last axis, and the others
     * multiples of 16 bytes below 2^40, each at least the span of the axes
     * inside it (row-major order, no overlap): sm_90a kernels may copy its
     * tiles with the tensor memory accelerator (emit_cuda_async.c) */
    CUDA_ARRAY_TMA = 4,
};
/* The facts of the likely variant (a contiguous array of moderate size),
 * which the runtime compiles first and tilec --emit assumes. */
#define CUDA_ARRAY_FAST (CUDA_ARRAY_VEC16 | CUDA_ARRAY_OFF32 | CUDA_ARRAY_TMA)

/* A tensor map the kernel copies through, into shared memory or out of it
 * (stores by TMA: emit_cuda_store.c) (CudaKernelCode.tmaps): the runtime encodes
 * it at launch for the array argument `param` and passes it by value, after
 * the IrFunc parameters, as `const __grid_constant__ TileTensorMap tm<k>`. */
#define CUDA_MAX_TMAPS 8
typedef struct CudaTensorMap {
    int param;                     /* the array parameter it describes */
    int elem_bytes;                /* 2 or 4 */
    int box[5];                    /* the box's extent along each array axis, outermost first */
    int swizzle;                   /* bytes: 0 (rows as they lie), 32, 64 or 128 */
} CudaTensorMap;

typedef struct CudaEmitOptions {
    int num_warps;                     /* 0: the kernel's hint, else 4 */
    const unsigned char *array_flags;  /* one per IrFunc param (CUDA_ARRAY_*); NULL = none */
    int line_directives;               /* nonzero: #line back to the .tile source */
    /* nonzero: the code is for sm_90a (Hopper's arch-specific features):
     * tensor-core products whose operands both come through cp.async may use
     * wgmma (emit_cuda_wgmma.c); CudaKernelCode.sm90a says whether one did */
    int target_sm90a;
    /* > 0: at most this many blocks per SM in __launch_bounds__, whatever
     * the kernel's occupancy hint asks, and this many where it asks none
     * (the CUDA backend lowers it one step at a time while ptxas reports
     * spills) */
    int max_occupancy;
    /* nonzero: after the kernel, `extern "C" void tile_host_entry(void *const
     * *args)`, which calls it with the arguments a launch's kernelParams
     * would hold (the emu backend runs the kernel on the host so:
     * runtime/emu_backend.c); wgmma is written as calls of tile_emu_wgmma
     * (runtime/emu_device.h), not inline PTX */
    int host_entry;
    /* nonzero: the device has the tensor memory accelerator (sm_90 and
     * newer), which target_sm90a implies: without target_sm90a, the
     * pipelined copies of the operands mma.sync reads go by TMA too unless
     * TILEC_MMA_TMA=0 (emit_cuda_async.c, plan_tma); with it, only with
     * TILEC_MMA_TMA=1 */
    int target_tma;
} CudaEmitOptions;

typedef struct CudaKernelCode {
    char *source;        /* malloc'd CUDA C++ (includes "tile_device.h") */
    char *name;          /* malloc'd: the __global__ function's name */
    int threads;         /* threads per block */
    int smem_bytes;      /* dynamic shared memory per block */
    int sm90a;           /* uses wgmma: compile for sm_90a (compute_90a), nothing else */
    int occupancy;       /* the blocks per SM __launch_bounds__ asks registers for; 0: none asked */
    int ntmaps;          /* tensor maps it takes after its parameters */
    CudaTensorMap tmaps[CUDA_MAX_TMAPS];
} CudaKernelCode;

/* Generates the kernel.  Returns 0, or -1 after reporting errors (an
 * operation the backend cannot do yet) with diag_error at the op's location. */
int  cuda_emit(const IrFunc *f, const CudaEmitOptions *opt, CudaKernelCode *out, Diag *d);
void cuda_code_free(CudaKernelCode *c);

/* The text of tile_device.h, to hand to NVRTC as a header (cuda_device.c). */
#define CUDA_DEVICE_HEADER_NAME "tile_device.h"
extern const char cuda_device_header[];

#endif
