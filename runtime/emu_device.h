/* emu_device.h: CUDA on the host, for the kernels tilec generates (the emu
 * backend, emu_backend.c).  The C++ compiler force-includes it (-include)
 * before the generated source, which includes tile_device.h as it does on
 * the GPU.  This file supplies what NVRTC would (CUDA's built-in variables,
 * vector types and intrinsics) and, with TILE_HOST_EMULATION defined, the
 * functions of tile_device.h that hold PTX, which it leaves out then.  The
 * rest of tile_device.h compiles as it is, so it is tested too.
 *
 * Execution: the blocks run one after another.  Each thread of a block is a
 * fiber with its own stack: ucontext starts it, _setjmp/_longjmp switch
 * (swapcontext would save the signal mask, a system call, at every switch).
 * A thread runs until it must wait: at __syncthreads, or at a warp-wide
 * instruction (shuffle, ldmatrix, mma.sync, __syncwarp) until its warp's
 * other lanes reach it.  The last lane to arrive computes the instruction
 * for the whole warp.
 *
 * What is checked, beyond the results: lanes of a warp at different
 * warp-wide instructions (of different kinds, or ldmatrix / mma.sync at
 * different places in the kernel), and threads that can never meet (a deadlock), fail
 * the launch; so do ldmatrix and cp.async addresses outside the block's
 * shared memory or misaligned.  cp.async copies read global memory when
 * issued and land in shared memory only at the wait that covers them, so a
 * read before its wait sees old data.  Shared memory starts each block as
 * 0xff bytes (NaN as floats).  Not emulated: wgmma, TMA and mbarriers (the
 * emu backend compiles for mma.sync, without them); races between threads
 * that meet at no barrier (the fibers take turns only where they wait). */
#ifndef TILE_EMU_DEVICE_H
#define TILE_EMU_DEVICE_H
#define TILE_HOST_EMULATION 1

#include <csetjmp>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/mman.h>
#include <ucontext.h>

/* ---- CUDA's keywords and types ---------------------------------------------- */
#define __device__
#define __global__
/* (each call of a warp-wide instruction stays where the kernel makes it: warp_meet tells them apart) */
#define __forceinline__ inline __attribute__((always_inline))
#define __launch_bounds__(...)
#define __align__(n)
#define __shared__
#define __grid_constant__

struct alignas(8) uint2 { unsigned x, y; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
struct alignas(8) float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
static inline uint2 make_uint2(unsigned x, unsigned y) { return uint2{x, y}; }
static inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return uint4{x, y, z, w}; }
static inline float2 make_float2(float x, float y) { return float2{x, y}; }
static inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
struct tile_emu_dim3 { unsigned x, y, z; };

template <typename To, typename From> static inline To tile_emu_bits(From v) {
    static_assert(sizeof(To) == sizeof(From), "same size");
    To t;
    memcpy(&t, &v, sizeof t);
    return t;
}
static inline float __uint_as_float(unsigned u) { return tile_emu_bits<float>(u); }
static inline float __int_as_float(int u) { return tile_emu_bits<float>(u); }
static inline unsigned __float_as_uint(float f) { return tile_emu_bits<unsigned>(f); }
static inline int __float_as_int(float f) { return tile_emu_bits<int>(f); }
static inline double __longlong_as_double(long long v) { return tile_emu_bits<double>(v); }
static inline long long __double_as_longlong(double v) { return tile_emu_bits<long long>(v); }
/* (not CUDA's name at global scope: newer C libraries declare an rsqrtf of their own) */
static inline float tile_emu_rsqrtf(float x) { return 1.0f / sqrtf(x); }
#define rsqrtf tile_emu_rsqrtf

/* ---- the scheduler's state: one block at a time ----------------------------- */
namespace tile_emu {

/* each thread's stack: STACK_BYTES, the lowest GUARD_BYTES of them unmapped
 * (an overflow faults instead of writing over the next thread's stack) */
enum { MAX_THREADS = 1024, SMEM_BYTES = 256 * 1024, STACK_BYTES = 512 * 1024, GUARD_BYTES = 64 * 1024, MAX_COPIES = 1024 };

struct Copy {                 /* a cp.async: its data read at issue, written at its wait */
    unsigned char *dst;
    unsigned char data[16];
    unsigned group;           /* the commit group it belongs to */
};

struct Fiber {
    jmp_buf jb;
    ucontext_t uc;
    tile_emu_dim3 tid;
    int warp, lane;
    bool started, done;
    const char *waits_at;     /* where it waits (a deadlock's message) */
    unsigned open_group;      /* cp.async: groups committed so far */
    int ncopies;
    Copy *copies;
};

/* A warp-wide instruction's operands and results, one slot per lane. */
struct Slot {
    uint64_t w[12];
    const unsigned char *p;
    int arg;
};
struct Warp {
    int nlanes, arrived, kind;
    const void *site;         /* where in the kernel the instruction the lanes meet at stands */
    unsigned gen;
    Slot in[32], out[32];
};

static Fiber *fibers;
static unsigned char *stacks;
static int nthreads;
static Fiber *cur;
static jmp_buf sched;
static bool progress;
static char failure[512];
static Warp warps[MAX_THREADS / 32];
static int bar_arrived, alive;   /* at __syncthreads; threads not yet returned */
static unsigned bar_gen;
static void *const *params;
static int smem_used;
static tile_emu_dim3 block_idx, grid_dim, block_dim;

} // namespace tile_emu

/* the block's shared memory (the generated kernel declares it extern) */
alignas(1024) unsigned char tile_smem[tile_emu::SMEM_BYTES];

#define threadIdx (tile_emu::cur->tid)
#define blockIdx (tile_emu::block_idx)
#define gridDim (tile_emu::grid_dim)
#define blockDim (tile_emu::block_dim)

namespace tile_emu {

/* Back to the scheduler; returns when this thread runs again. */
static inline void yield() {
    if (!_setjmp(cur->jb)) _longjmp(sched, 1);
}

/* The launch fails with this message; the thread never runs again. */
static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...) {
    if (!failure[0]) {
        char msg[400];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        snprintf(failure, sizeof failure, "block (%u,%u,%u) thread %u: %s", block_idx.x, block_idx.y, block_idx.z,
                 cur->tid.x, msg);
    }
    for (;;) yield();
}

/* The lanes of this thread's warp meet at the instruction `kind` (named
 * `what`) that stands at `site` in the kernel (NULL: any site, as
 * __syncwarp and shuffles may meet from different places); the last to
 * arrive runs compute(warp), which reads every lane's `in` slot and writes
 * its `out` slot.  A lane reads its `out` slot before it can arrive at the
 * next instruction, and the next compute needs every lane there, so one
 * pair of slots serves every instruction. */
template <typename F> static void warp_meet(int kind, const void *site, const char *what, F compute) {
    Warp &w = warps[cur->warp];
    if (w.arrived == 0) w.kind = kind, w.site = site;
    else if (w.kind != kind || w.site != site)
        fail("lanes of warp %d meet at different warp-wide instructions (%s here)", cur->warp, what);
    progress = true;
    if (++w.arrived == w.nlanes) {
        compute(w);
        w.arrived = 0;
        w.gen++;
        return;
    }
    unsigned gen = w.gen;
    cur->waits_at = what;
    while (w.gen == gen) yield();
    cur->waits_at = NULL;
}

static void check_smem(const void *p, int bytes, int align, const char *what) {
    const unsigned char *c = (const unsigned char *)p;
    if (c < tile_smem || c + bytes > tile_smem + smem_used)
        fail("%s: address %p is not in the block's %d bytes of shared memory", what, p, smem_used);
    if ((uintptr_t)c % (uintptr_t)align != 0) fail("%s: shared address offset %ld is not %d-byte aligned", what,
                                                   (long)(c - tile_smem), align);
}

enum { K_SYNCWARP = 1, K_SHFL, K_LDSM, K_MMA_BF16, K_MMA_F16, K_MMA_TF32 };

static inline unsigned load32(const unsigned char *p) { unsigned v; memcpy(&v, p, 4); return v; }
static inline unsigned short load16(const unsigned char *p) { unsigned short v; memcpy(&v, p, 2); return v; }

/* ldmatrix .x1/.x2/.x4 [.trans]: lane t gives the address of row t % 8 of
 * matrix t / 8 (8 x 8 16-bit elements, rows of 16 bytes); register i of lane
 * t gets matrix i's row t / 4, elements 2 (t % 4) and 2 (t % 4) + 1, or with
 * .trans its column t / 4, rows 2 (t % 4) and 2 (t % 4) + 1. */
/* (not inlined: its return address is the call's place in the kernel, warp_meet's site) */
__attribute__((noinline)) static void ldsm(int n, bool trans, unsigned *r, const void *p) {
    if (cur->lane < 8 * n) check_smem(p, 16, 16, "ldmatrix");
    warps[cur->warp].in[cur->lane].p = (const unsigned char *)p;
    warp_meet(K_LDSM + 8 * n + (trans ? 64 : 0), __builtin_return_address(0), "ldmatrix", [&](Warp &w) {
        if (w.nlanes != 32) fail("ldmatrix in a warp of %d threads", w.nlanes);
        for (int t = 0; t < 32; t++)
            for (int i = 0; i < n; i++) {
                if (!trans) {
                    w.out[t].w[i] = load32(w.in[8 * i + t / 4].p + (t % 4) * 4);
                } else {
                    unsigned lo = load16(w.in[8 * i + 2 * (t % 4)].p + (t / 4) * 2);
                    unsigned hi = load16(w.in[8 * i + 2 * (t % 4) + 1].p + (t / 4) * 2);
                    w.out[t].w[i] = lo | hi << 16;
                }
            }
    });
    for (int i = 0; i < n; i++) r[i] = (unsigned)warps[cur->warp].out[cur->lane].w[i];
}

/* 16-bit floats' bits and back, exactly (round to nearest even). */
static inline float f16_to_f32(unsigned short h) {
    int e = (h >> 10) & 31, m = h & 1023;
    float v = e == 0 ? ldexpf((float)m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexpf((float)(m | 1024), e - 25);
    return (h & 0x8000) ? -v : v;
}
static inline unsigned short f64_to_f16(double d) {
    unsigned short sign = std::signbit(d) ? 0x8000 : 0;
    if (d != d) return (unsigned short)(sign | 0x7e00);
    double a = fabs(d);
    if (a >= 65520.0) return (unsigned short)(sign | 0x7c00);   /* past the halfway point to 2^16: inf */
    if (a < 0x1p-14) return (unsigned short)(sign | (unsigned)nearbyint(a * 0x1p24));   /* subnormal (1024: the least normal) */
    int e;
    frexp(a, &e);                                               /* a = m 2^e, m in [0.5, 1) */
    double m = nearbyint(ldexp(a, 11 - e));                     /* 1024..2048 */
    if (m >= 2048) m = 1024, e++;
    return (unsigned short)(sign | (unsigned)(e + 14) << 10 | ((unsigned)m - 1024));
}
static inline unsigned short f32_to_bf16(float f) {
    unsigned u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40);   /* NaN stays NaN */
    return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
static inline float bf16_to_f32(unsigned short b) { return __uint_as_float((unsigned)b << 16); }

/* mma.sync m16n8k16 (16-bit operands) and m16n8k8 (tf32), row.col, f32
 * accumulators; g = lane / 4, q = lane % 4.  A: register j holds row g + 8 (j
 * & 1), columns (16-bit) 2q + 8 (j >> 1) and the next, or (tf32) q + 4 (j >>
 * 1).  B: register j holds column g, rows 2q + 8j and the next, or (tf32) q +
 * 4j.  C and D: registers 0, 1 row g, 2, 3 row g + 8, columns 2q and 2q + 1.
 * The sums are taken in double and rounded once. */
__attribute__((noinline)) static void mma(int kind, float &d0, float &d1, float &d2, float &d3, unsigned a0, unsigned a1, unsigned a2,
                unsigned a3, unsigned b0, unsigned b1) {
    Slot &s = warps[cur->warp].in[cur->lane];
    const unsigned in[6] = {a0, a1, a2, a3, b0, b1};
    for (int i = 0; i < 6; i++) s.w[i] = in[i];
    const float c[4] = {d0, d1, d2, d3};
    for (int i = 0; i < 4; i++) s.w[6 + i] = __float_as_uint(c[i]);
    warp_meet(kind, __builtin_return_address(0), "mma.sync", [&](Warp &w) {
        if (w.nlanes != 32) fail("mma.sync in a warp of %d threads", w.nlanes);
        const bool tf32 = kind == K_MMA_TF32;
        const int K = tf32 ? 8 : 16;
        double A[16][16], B[16][8];
        for (int t = 0; t < 32; t++) {
            const int g = t / 4, q = t % 4;
            for (int j = 0; j < 4; j++) {
                const unsigned v = (unsigned)w.in[t].w[j];
                const int row = g + 8 * (j & 1);
                if (tf32) {
                    A[row][q + 4 * (j >> 1)] = __uint_as_float(v & 0xffffe000u);
                } else {
                    for (int h = 0; h < 2; h++) {
                        const unsigned short x = (unsigned short)(v >> (16 * h));
                        A[row][2 * q + 8 * (j >> 1) + h] = kind == K_MMA_BF16 ? bf16_to_f32(x) : f16_to_f32(x);
                    }
                }
            }
            for (int j = 0; j < 2; j++) {
                const unsigned v = (unsigned)w.in[t].w[4 + j];
                if (tf32) {
                    B[q + 4 * j][g] = __uint_as_float(v & 0xffffe000u);
                } else {
                    for (int h = 0; h < 2; h++) {
                        const unsigned short x = (unsigned short)(v >> (16 * h));
                        B[2 * q + 8 * j + h][g] = kind == K_MMA_BF16 ? bf16_to_f32(x) : f16_to_f32(x);
                    }
                }
            }
        }
        for (int t = 0; t < 32; t++) {
            const int g = t / 4, q = t % 4;
            for (int i = 0; i < 4; i++) {
                const int row = g + 8 * (i >> 1), col = 2 * q + (i & 1);
                double sum = __uint_as_float((unsigned)w.in[t].w[6 + i]);
                for (int k = 0; k < K; k++) sum += A[row][k] * B[k][col];
                w.out[t].w[i] = __float_as_uint((float)sum);
            }
        }
    });
    const Slot &o = warps[cur->warp].out[cur->lane];
    d0 = __uint_as_float((unsigned)o.w[0]);
    d1 = __uint_as_float((unsigned)o.w[1]);
    d2 = __uint_as_float((unsigned)o.w[2]);
    d3 = __uint_as_float((unsigned)o.w[3]);
}

/* A shuffle: every lane reads lane `src`'s value (its own where src lies
 * outside the warp). */
template <typename T> static T shfl(T v, int src) {
    static_assert(sizeof(T) <= 8, "shuffles move up to 64 bits");
    Slot &s = warps[cur->warp].in[cur->lane];
    s.w[0] = 0;
    memcpy(&s.w[0], &v, sizeof v);
    s.arg = src;
    warp_meet(K_SHFL, NULL, "shuffle", [&](Warp &w) {
        for (int t = 0; t < w.nlanes; t++) {
            const int from = w.in[t].arg;
            w.out[t].w[0] = from >= 0 && from < w.nlanes ? w.in[from].w[0] : w.in[t].w[0];
        }
    });
    T r;
    memcpy(&r, &warps[cur->warp].out[cur->lane].w[0], sizeof r);
    return r;
}

/* cp.async groups: copies of groups < open_group - n land now. */
static void copies_land(unsigned keep) {
    Fiber *f = cur;
    int k = 0;
    for (int i = 0; i < f->ncopies; i++) {
        Copy &c = f->copies[i];
        if (c.group + keep < f->open_group) memcpy(c.dst, c.data, 16);
        else f->copies[k++] = c;
    }
    f->ncopies = k;
}

} // namespace tile_emu

/* ---- CUDA's intrinsics -------------------------------------------------------- */
static inline void __syncthreads() {
    using namespace tile_emu;
    progress = true;
    if (++bar_arrived == alive) {
        bar_arrived = 0;
        bar_gen++;
        return;
    }
    unsigned gen = bar_gen;
    cur->waits_at = "__syncthreads";
    while (bar_gen == gen) yield();
    cur->waits_at = NULL;
}
static inline void __syncwarp(unsigned = 0xffffffffu) {
    tile_emu::warp_meet(tile_emu::K_SYNCWARP, NULL, "__syncwarp", [](tile_emu::Warp &) {});
}
template <typename T> static inline T __shfl_xor_sync(unsigned, T v, int m) {
    return tile_emu::shfl(v, (tile_emu::cur->lane ^ m) & 31);
}
template <typename T> static inline T __shfl_sync(unsigned, T v, int src) { return tile_emu::shfl(v, src & 31); }
/* one thread runs at a time: atomics are plain read-modify-writes */
template <typename T> static inline T atomicCAS(T *p, T cmp, T v) {
    T old = *p;
    if (old == cmp) *p = v;
    return old;
}
template <typename T> static inline T atomicAdd(T *p, T v) {
    T old = *p;
    *p = old + v;
    return old;
}
template <typename T> static inline T atomicMax(T *p, T v) {
    T old = *p;
    if (v > old) *p = v;
    return old;
}
template <typename T> static inline T atomicMin(T *p, T v) {
    T old = *p;
    if (v < old) *p = v;
    return old;
}

/* ---- tile_device.h's PTX wrappers, in C++ ------------------------------------- */
#define TILE_DEV static inline __attribute__((always_inline))
TILE_DEV unsigned short tile_f32_bf16(float f) { return tile_emu::f32_to_bf16(f); }
TILE_DEV float tile_f16_f32(unsigned short h) { return tile_emu::f16_to_f32(h); }
TILE_DEV unsigned short tile_f32_f16(float f) { return tile_emu::f64_to_f16((double)f); }
TILE_DEV void tile_f32x2_bf16(float lo, float hi, unsigned short &rlo, unsigned short &rhi) {
    rlo = tile_f32_bf16(lo);
    rhi = tile_f32_bf16(hi);
}
TILE_DEV void tile_f32x2_f16(float lo, float hi, unsigned short &rlo, unsigned short &rhi) {
    rlo = tile_f32_f16(lo);
    rhi = tile_f32_f16(hi);
}
TILE_DEV unsigned short tile_f64_f16(double f) { return tile_emu::f64_to_f16(f); }
/* ex2.approx.ftz: flushes subnormal inputs and results to zero */
TILE_DEV float tile_exp2f(float x) {
    if (fabsf(x) < 1.17549435e-38f) x = 0.0f;
    float y = exp2f(x);
    return fabsf(y) < 1.17549435e-38f ? 0.0f : y;
}
/* max.NaN / min.NaN: NaN if either is; +0 above -0 */
TILE_DEV float tile_fmaxf(float a, float b) {
    if (a != a || b != b) return __int_as_float(0x7fc00000);
    if (a == b) return std::signbit(a) ? b : a;
    return a > b ? a : b;
}
TILE_DEV float tile_fminf(float a, float b) {
    if (a != a || b != b) return __int_as_float(0x7fc00000);
    if (a == b) return std::signbit(a) ? a : b;
    return a < b ? a : b;
}
TILE_DEV unsigned short tile_atom_cas16(unsigned short *h, unsigned short cmp, unsigned short v) {
    return atomicCAS(h, cmp, v);
}
TILE_DEV uint4 tile_lds16(const void *p) {
    tile_emu::check_smem(p, 16, 16, "ld.shared.v4");
    uint4 v;
    memcpy(&v, p, 16);
    return v;
}
TILE_DEV void tile_sts16(void *p, const unsigned r[4]) {
    tile_emu::check_smem(p, 16, 16, "st.shared.v4");
    memcpy(p, r, 16);
}
TILE_DEV int tile_opaque(int x) { return x; }
TILE_DEV void tile_ldsm_x4(unsigned &r0, unsigned &r1, unsigned &r2, unsigned &r3, const void *p) {
    unsigned r[4];
    tile_emu::ldsm(4, false, r, p);
    r0 = r[0], r1 = r[1], r2 = r[2], r3 = r[3];
}
TILE_DEV void tile_ldsm_x4_trans(unsigned &r0, unsigned &r1, unsigned &r2, unsigned &r3, const void *p) {
    unsigned r[4];
    tile_emu::ldsm(4, true, r, p);
    r0 = r[0], r1 = r[1], r2 = r[2], r3 = r[3];
}
TILE_DEV void tile_ldsm_x2(unsigned &r0, unsigned &r1, const void *p) {
    unsigned r[2];
    tile_emu::ldsm(2, false, r, p);
    r0 = r[0], r1 = r[1];
}
TILE_DEV void tile_ldsm_x2_trans(unsigned &r0, unsigned &r1, const void *p) {
    unsigned r[2];
    tile_emu::ldsm(2, true, r, p);
    r0 = r[0], r1 = r[1];
}
TILE_DEV void tile_cp_async16(void *smem, const void *gmem, int bytes) {
    using namespace tile_emu;
    check_smem(smem, 16, 16, "cp.async");
    if ((uintptr_t)gmem % 16 != 0) fail("cp.async: global address %p is not 16-byte aligned", gmem);
    if (bytes < 0 || bytes > 16) fail("cp.async of %d bytes", bytes);
    if (cur->ncopies == MAX_COPIES) fail("more than %d cp.async copies in flight", (int)MAX_COPIES);
    Copy &c = cur->copies[cur->ncopies++];
    c.dst = (unsigned char *)smem;
    memset(c.data, 0, 16);
    if (bytes) memcpy(c.data, gmem, (size_t)bytes);
    c.group = cur->open_group;
}
TILE_DEV void tile_cp_async_commit() { tile_emu::cur->open_group++; }
template <int N> TILE_DEV void tile_cp_async_wait() { tile_emu::copies_land(N); }
TILE_DEV void tile_cp_async_wait_all() {
    tile_emu::cur->open_group++;   /* wait_all: the uncommitted copies too */
    tile_emu::copies_land(0);
}
TILE_DEV void tile_mma_m16n8k16_bf16(float &d0, float &d1, float &d2, float &d3, unsigned a0, unsigned a1,
                                     unsigned a2, unsigned a3, unsigned b0, unsigned b1) {
    tile_emu::mma(tile_emu::K_MMA_BF16, d0, d1, d2, d3, a0, a1, a2, a3, b0, b1);
}
TILE_DEV void tile_mma_m16n8k16_f16(float &d0, float &d1, float &d2, float &d3, unsigned a0, unsigned a1,
                                    unsigned a2, unsigned a3, unsigned b0, unsigned b1) {
    tile_emu::mma(tile_emu::K_MMA_F16, d0, d1, d2, d3, a0, a1, a2, a3, b0, b1);
}
TILE_DEV void tile_mma_m16n8k8_tf32(float &d0, float &d1, float &d2, float &d3, unsigned a0, unsigned a1,
                                    unsigned a2, unsigned a3, unsigned b0, unsigned b1) {
    tile_emu::mma(tile_emu::K_MMA_TF32, d0, d1, d2, d3, a0, a1, a2, a3, b0, b1);
}
#undef TILE_DEV

/* ---- the launch --------------------------------------------------------------- */
extern "C" void tile_host_entry(void *const *args);   /* the generated kernel's (emit_cuda.h) */

namespace tile_emu {

/* A thread that returns no longer counts at __syncthreads (as bar.sync). */
static void fiber_main() {
    tile_host_entry(params);
    cur->done = true;
    progress = true;
    if (--alive > 0 && bar_arrived == alive) {
        bar_arrived = 0;
        bar_gen++;
    }
    _longjmp(sched, 1);
}

/* Runs one block to its end; false when the launch failed (in `failure`). */
static bool run_block() {
    memset(tile_smem, 0xff, (size_t)smem_used);
    bar_arrived = 0;
    alive = nthreads;
    for (int w = 0; w * 32 < nthreads; w++) {
        warps[w].nlanes = nthreads - 32 * w < 32 ? nthreads - 32 * w : 32;
        warps[w].arrived = 0;
    }
    for (int t = 0; t < nthreads; t++) {
        Fiber &f = fibers[t];
        f.tid = tile_emu_dim3{(unsigned)t, 0, 0};
        f.warp = t / 32;
        f.lane = t % 32;
        f.started = f.done = false;
        f.waits_at = NULL;
        f.open_group = 0;
        f.ncopies = 0;
        getcontext(&f.uc);
        f.uc.uc_stack.ss_sp = stacks + (size_t)t * STACK_BYTES + GUARD_BYTES;
        f.uc.uc_stack.ss_size = STACK_BYTES - GUARD_BYTES;
        f.uc.uc_link = NULL;
        makecontext(&f.uc, fiber_main, 0);
    }
    while (alive > 0 && !failure[0]) {   /* (fiber_main counts the threads down) */
        progress = false;
        for (int t = 0; t < nthreads && !failure[0]; t++) {
            Fiber &f = fibers[t];
            if (f.done) continue;
            cur = &f;
            if (!_setjmp(sched)) {
                if (!f.started) {
                    f.started = true;
                    setcontext(&f.uc);
                }
                _longjmp(f.jb, 1);
            }
        }
        if (!progress && alive > 0 && !failure[0]) {
            int n = snprintf(failure, sizeof failure, "block (%u,%u,%u): deadlock; threads wait at", block_idx.x,
                             block_idx.y, block_idx.z);
            for (int t = 0, shown = 0; t < nthreads && shown < 4 && n < (int)sizeof failure; t++)
                if (!fibers[t].done)
                    n += snprintf(failure + n, sizeof failure - (size_t)n, "%s %d: %s", shown++ ? "," : "", t,
                                  fibers[t].waits_at ? fibers[t].waits_at : "?");
        }
    }
    return !failure[0];
}

} // namespace tile_emu

/* Runs the kernel over `grid` with `threads` threads a block and `smem`
 * bytes of shared memory; `args` as tile_host_entry takes them.  0, or -1
 * with a message in err. */
extern "C" int tile_emu_launch(const int grid[3], int threads, int smem, void *const *args, char *err, int errlen) {
    using namespace tile_emu;
    if (threads < 1 || threads > MAX_THREADS || smem < 0 || smem > SMEM_BYTES) {
        snprintf(err, (size_t)errlen, "a block of %d threads and %d bytes of shared memory cannot be emulated",
                 threads, smem);
        return -1;
    }
    nthreads = threads;
    smem_used = smem;
    params = args;
    failure[0] = 0;
    grid_dim = tile_emu_dim3{(unsigned)grid[0], (unsigned)grid[1], (unsigned)grid[2]};
    block_dim = tile_emu_dim3{(unsigned)threads, 1, 1};
    size_t stack_bytes = (size_t)threads * STACK_BYTES;
    stacks = (unsigned char *)mmap(NULL, stack_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                                   -1, 0);
    fibers = (Fiber *)calloc((size_t)threads, sizeof(Fiber));
    Copy *copies = (Copy *)calloc((size_t)threads * MAX_COPIES, sizeof(Copy));
    bool ok = stacks != MAP_FAILED && fibers && copies;
    if (!ok) snprintf(failure, sizeof failure, "out of memory for %d threads", threads);
    for (int t = 0; ok && t < threads; t++) {
        fibers[t].copies = copies + (size_t)t * MAX_COPIES;
        ok = mprotect(stacks + (size_t)t * STACK_BYTES, GUARD_BYTES, PROT_NONE) == 0;
        if (!ok) snprintf(failure, sizeof failure, "cannot protect the threads' stacks");
    }
    for (int z = 0; ok && z < grid[2]; z++)
        for (int y = 0; ok && y < grid[1]; y++)
            for (int x = 0; ok && x < grid[0]; x++) {
                block_idx = tile_emu_dim3{(unsigned)x, (unsigned)y, (unsigned)z};
                ok = run_block();
            }
    if (stacks != MAP_FAILED) munmap(stacks, stack_bytes);
    free(fibers);
    free(copies);
    fibers = NULL;
    if (!ok) snprintf(err, (size_t)errlen, "%s", failure);
    return ok ? 0 : -1;
}

#endif
