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
 * A thread runs until it must wait: at __syncthreads, at an mbarrier, or at
 * a warp-wide instruction (shuffle, ldmatrix, mma.sync, __syncwarp) until
 * its warp's other lanes reach it.  The last lane to arrive computes the
 * instruction for the whole warp.  The blocks alternate between two orders:
 * each thread a step in turn, and each warp as far as it can go before the
 * next (run_block).
 *
 * What is checked, beyond the results: lanes of a warp at different
 * warp-wide instructions (of different kinds, or ldmatrix / mma.sync at
 * different places in the kernel), and threads that can never meet (a deadlock), fail
 * the launch; so do ldmatrix and cp.async addresses outside the block's
 * shared memory or misaligned.  cp.async copies read global memory when
 * issued and land in shared memory only at the wait that covers them, so a
 * read before its wait sees old data.  Shared memory starts each block as
 * 0xff bytes (NaN as floats).  wgmma (sm_90a code, TILEC_EMU_ARCH): the
 * threads of a warp group meet at each of its instructions, and a product is
 * computed at the wait that covers it.  TMA: a copy into shared memory reads
 * global memory when issued and lands when a thread waits on its mbarrier
 * (an ldmatrix or 16-byte shared load of its bytes before then fails the
 * launch); a store reads shared memory at its bulk group's wait.  Not
 * emulated: races
 * between threads that meet at no barrier (the fibers take turns only where
 * they wait). */
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
#include <vector>

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
static unsigned launches;        /* tile_emu_launch's calls so far (run_block's order) */
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

/* The n threads of a party (a Warp or a WarpGroup: arrived, gen) meet: the
 * last to arrive runs compute(party), the others wait until it has. */
template <typename P, typename F> static void meet(P &party, int n, const char *what, F compute) {
    progress = true;
    if (++party.arrived == n) {
        compute(party);
        party.arrived = 0;
        party.gen++;
        return;
    }
    unsigned gen = party.gen;
    cur->waits_at = what;
    while (party.gen == gen) yield();
    cur->waits_at = NULL;
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
    meet(w, w.nlanes, what, compute);
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

static void tma_read_check(const void *p, int bytes, const char *what);

/* ldmatrix .x1/.x2/.x4 [.trans]: lane t gives the address of row t % 8 of
 * matrix t / 8 (8 x 8 16-bit elements, rows of 16 bytes); register i of lane
 * t gets matrix i's row t / 4, elements 2 (t % 4) and 2 (t % 4) + 1, or with
 * .trans its column t / 4, rows 2 (t % 4) and 2 (t % 4) + 1. */
/* (not inlined: its return address is the call's place in the kernel, warp_meet's site) */
__attribute__((noinline)) static void ldsm(int n, bool trans, unsigned *r, const void *p) {
    if (cur->lane < 8 * n) check_smem(p, 16, 16, "ldmatrix"), tma_read_check(p, 16, "ldmatrix");
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

/* ---- wgmma: sm_90a's products of a warp group (4 warps, 128 threads) ---------- */
/* The threads of a warp group meet as a warp's lanes do (warp_meet); `arg`
 * is this thread's operands, read by the last to arrive. */
struct WarpGroup;
template <typename F> static void group_meet(int kind, const void *site, const char *what, const void *arg, F compute);

/* A product issued and not yet waited for: its operands' descriptors,
 * register A's words and the accumulators' addresses, thread by thread.  It
 * is computed at the wait that covers it, as the hardware may: shared
 * memory overwritten or accumulators read before that wait show. */
struct WgProduct {
    int type, cols;               /* type: 0 bf16, 1 f16, 2 tf32 */
    uint64_t da, db;              /* da unused with A in registers */
    bool a_regs, ta, tb;          /* ta, tb: M- or N-major (the instruction's transpose immediates) */
    unsigned group;               /* the commit group it belongs to */
    std::vector<float *> acc;     /* thread t's register r: acc[t * cols / 2 + r] */
    std::vector<unsigned> afrag;  /* thread t's word j: afrag[4 t + j] */
};
struct WarpGroup {
    int arrived, kind;
    const void *site;
    unsigned gen;
    const void *arg[128];
    unsigned committed;           /* commit groups so far */
    std::vector<WgProduct> pending;
};
static WarpGroup groups[MAX_THREADS / 128];
enum { K_WG_MMA = 100, K_WG_FENCE, K_WG_COMMIT, K_WG_WAIT };

template <typename F> static void group_meet(int kind, const void *site, const char *what, const void *arg, F compute) {
    if (nthreads % 128 != 0) fail("%s in a block of %d threads (not whole warp groups)", what, nthreads);
    WarpGroup &g = groups[cur->tid.x / 128];
    if (g.arrived == 0) g.kind = kind, g.site = site;
    else if (g.kind != kind || g.site != site)
        fail("threads of warp group %u meet at different warp-group instructions (%s here)", cur->tid.x / 128, what);
    g.arg[cur->tid.x % 128] = arg;
    meet(g, 128, what, compute);
}

/* A shared-memory address under the swizzle of width W bytes (0: none), as
 * wgmma reads and TMA writes: its 16-byte index within W bytes XORed with its
 * bits 7 and up (the 128-byte row mod W / 16). */
static unsigned swizzled(unsigned addr, int W) {
    return W ? addr ^ ((addr >> 7) & (unsigned)(W / 16 - 1)) << 4 : addr;
}

/* Element (i, k) of an operand in shared memory (i: A's row or B's column)
 * as its descriptor places it, by wgmma's canonical layouts (PTX ISA, "Shared
 * Memory Matrix Layout"), in 16-byte units T = 16 / size elements:
 *   K-major, no swizzle: 8 x 16-byte core matrices of 128 contiguous bytes,
 *     8 rows of i apart by sbo, 16 bytes of k apart by lbo;
 *   K-major, swizzled rows of W bytes: row i at (i / 8) sbo + (i % 8) W, k
 *     within the row (an instruction's 32 bytes of K lie in one);
 *   M- or N-major, no swizzle: 8 rows of k apart by lbo, 16 bytes of i apart by sbo;
 *   M- or N-major, swizzled: panels of W bytes of i apart by lbo, 8 rows of
 *     k apart by sbo, row k % 8 at (k % 8) W within them;
 * then the swizzle (swizzled). */
static const unsigned char *wg_element(uint64_t desc, bool mn_major, int i, int k, int size) {
    const unsigned start = (unsigned)(desc & 0x3fff) << 4, lbo = (unsigned)((desc >> 16) & 0x3fff) << 4,
                   sbo = (unsigned)((desc >> 32) & 0x3fff) << 4;
    const int layout = (int)(desc >> 62), W = layout == 1 ? 128 : layout == 2 ? 64 : layout == 3 ? 32 : 0, T = 16 / size;
    /* (a start inside a swizzle pattern's rows would need the descriptor's base offset, which is not emulated) */
    if (W && ((start >> 7) & (unsigned)(W / 16 - 1)) != 0) fail("wgmma: a swizzled operand starts at shared offset %u, inside the pattern's rows", start);
    unsigned off;
    if (!mn_major) off = W ? (i / 8) * sbo + (i % 8) * W + k * size : (i / 8) * sbo + (k / T) * lbo + (i % 8) * 16 + (k % T) * size;
    else if (!W) off = (k / 8) * lbo + (i / T) * sbo + (k % 8) * 16 + (i % T) * size;
    else off = (i / (W / size)) * lbo + (k / 8) * sbo + (k % 8) * W + (i % (W / size)) * size;
    const unsigned addr = swizzled(start + off, W);
    if (addr + (unsigned)size > (unsigned)smem_used)
        fail("wgmma: an operand's element (%d, %d) at shared offset %u, past the block's %d bytes", i, k, addr, smem_used);
    return tile_smem + addr;
}
static double wg_value(const unsigned char *p, int type) {
    if (type == 2) return __uint_as_float(load32(p) & 0xffffe000u);   /* tf32: the low 13 bits unread */
    return type == 0 ? bf16_to_f32(load16(p)) : f16_to_f32(load16(p));
}

/* D (64 x cols) += A (64 x K) B (K x cols), in double, rounded once.  Warp w
 * of the group holds D's rows 16 w.. and, from registers, A's, as mma.sync
 * does for its 16 rows: D's register 4 j + r is row g + 8 (r >> 1), column 8 j
 * + 2 q + (r & 1) (g = lane / 4, q = lane % 4). */
static void wg_compute(const WgProduct &p) {
    const int K = p.type == 2 ? 8 : 16, size = p.type == 2 ? 4 : 2, N = p.cols;
    static double A[64][16], B[256][16];
    for (int m = 0; m < 64; m++)
        for (int k = 0; k < K; k++) {
            if (!p.a_regs) {
                A[m][k] = wg_value(wg_element(p.da, p.ta, m, k, size), p.type);
                continue;
            }
            const int w = m / 16, g = m % 8, hi = (m % 16) / 8;   /* row g + 8 hi of warp w */
            int t, j, half = 0;
            if (p.type == 2) t = 32 * w + 4 * g + k % 4, j = hi + 2 * (k / 4);
            else t = 32 * w + 4 * g + (k % 8) / 2, j = hi + 2 * (k / 8), half = k % 2;
            const unsigned v = p.afrag[4 * t + j];
            if (p.type == 2) A[m][k] = __uint_as_float(v & 0xffffe000u);
            else {
                const unsigned short x = (unsigned short)(v >> (16 * half));
                A[m][k] = p.type == 0 ? bf16_to_f32(x) : f16_to_f32(x);
            }
        }
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++) B[n][k] = wg_value(wg_element(p.db, p.tb, n, k, size), p.type);
    for (int t = 0; t < 128; t++) {
        const int w = t / 32, g = (t % 32) / 4, q = t % 4;
        for (int r = 0; r < N / 2; r++) {
            const int row = 16 * w + g + 8 * ((r % 4) >> 1), col = 8 * (r / 4) + 2 * q + (r & 1);
            float *d = p.acc[(size_t)t * (N / 2) + r];
            double sum = *d;
            for (int k = 0; k < K; k++) sum += A[row][k] * B[col][k];
            *d = (float)sum;
        }
    }
}

struct WgArgs {
    float *const *acc;
    const unsigned *afrag;
    uint64_t da, db;
};
/* (not inlined: its return address is the call's place in the kernel, group_meet's site) */
__attribute__((noinline)) static void wgmma(const char *type, int cols, float *const *acc, const unsigned *afrag,
                                            uint64_t da, uint64_t db, int ta, int tb) {
    const WgArgs mine = {acc, afrag, da, db};
    group_meet(K_WG_MMA, __builtin_return_address(0), "wgmma.mma_async", &mine, [&](WarpGroup &g) {
        WgProduct p;
        p.type = !strcmp(type, "bf16") ? 0 : !strcmp(type, "f16") ? 1 : 2;
        p.cols = cols;
        p.da = da, p.db = db, p.a_regs = afrag != NULL, p.ta = ta != 0, p.tb = tb != 0;
        if (cols % 8 != 0 || cols < 8 || cols > 256) fail("wgmma: n%d", cols);
        if (p.type == 2 && (p.ta || p.tb)) fail("wgmma: tf32 operands are K-major only (no transpose)");
        p.group = g.committed;
        p.acc.resize((size_t)128 * (cols / 2));
        if (p.a_regs) p.afrag.resize(4 * 128);
        for (int t = 0; t < 128; t++) {
            const WgArgs *x = (const WgArgs *)g.arg[t];
            if (x->db != db || (!p.a_regs && x->da != da))
                fail("wgmma: the threads of warp group %u give different descriptors", cur->tid.x / 128);
            memcpy(&p.acc[(size_t)t * (cols / 2)], x->acc, sizeof(float *) * (size_t)(cols / 2));
            if (p.a_regs) memcpy(&p.afrag[4 * t], x->afrag, 4 * sizeof(unsigned));
        }
        g.pending.push_back(std::move(p));
    });
}

/* wgmma.wait_group n: every product of a group older than the n latest
 * committed is computed, in the order issued. */
static void wg_wait(unsigned n) {
    group_meet(K_WG_WAIT + 8 * (int)n, NULL, "wgmma.wait_group", NULL, [&](WarpGroup &g) {
        size_t kept = 0;
        for (size_t i = 0; i < g.pending.size(); i++) {
            if (g.pending[i].group + n < g.committed) wg_compute(g.pending[i]);
            else if (kept++ != i) g.pending[kept - 1] = std::move(g.pending[i]);   /* (a vector moved onto itself empties) */
        }
        g.pending.resize(kept);
    });
}

/* ---- TMA and mbarriers (sm_90a) ---------------------------------------------- */
} // namespace tile_emu
struct TileTensorMap;   /* (tile_device.h's: 16 words, read here as TmaBox) */
namespace tile_emu {
/* A tensor map as emu_backend.c encodes it into TileTensorMap's 16 words:
 * 0 the base, 1 rank | element bytes << 8 | swizzle bytes << 16, 2..6 the
 * extents, 7..10 the byte strides of axes 1.., 11..15 the box (innermost first). */
struct TmaBox {
    unsigned long long w[16];
    int rank() const { return (int)(w[1] & 0xff); }
    int elem() const { return (int)((w[1] >> 8) & 0xff); }
    int swizzle() const { return (int)(w[1] >> 16); }
    long long box_elems() const {
        long long n = 1;
        for (int k = 0; k < rank(); k++) n *= (long long)w[11 + k];
        return n;
    }
};

/* Calls visit(global address or NULL where outside the array, shared
 * offset) for each element of the box at coordinates c (innermost first),
 * the box laid out in shared memory from `dst` row by row, innermost
 * contiguous, and its addresses swizzled as wgmma reads them (swizzled). */
template <typename F> static void tma_each(const TmaBox &m, unsigned dst, const int *c, F visit) {
    const int r = m.rank(), es = m.elem(), W = m.swizzle();
    if (W && (long long)m.w[11] * es != W) fail("TMA: a swizzled box's rows of %lld bytes, not %d (not emulated)", (long long)m.w[11] * es, W);
    if (dst % (W ? 8u * (unsigned)W : 128u) != 0) fail("TMA: shared offset %u misaligned for the box", dst);
    long long idx[5] = {0, 0, 0, 0, 0};
    for (long long e = 0, n = m.box_elems(); e < n; e++) {
        bool inside = true;
        long long off = 0;
        for (int k = 0; k < r; k++) {
            const long long x = (long long)c[k] + idx[k];
            inside = inside && x >= 0 && x < (long long)m.w[2 + k];
            if (inside) off += x * (k ? (long long)m.w[6 + k] : es);   /* (outside, x may be near 2^31) */
        }
        const unsigned addr = swizzled(dst + (unsigned)(e * es), W);
        if (addr + (unsigned)es > (unsigned)smem_used) fail("TMA: the box reaches past the block's %d bytes of shared memory", smem_used);
        visit(inside ? (unsigned char *)(uintptr_t)m.w[0] + off : (unsigned char *)NULL, addr);
        for (int k = 0; k < r && ++idx[k] == (long long)m.w[11 + k]; k++) idx[k] = 0;
    }
}

/* An mbarrier: arrivals still expected this phase, and the bytes of TMA
 * copies.  The copies read global memory when issued and land in shared
 * memory when a thread waits on the barrier, each completing its bytes. */
struct TmaLoad {
    std::vector<unsigned> addr;
    std::vector<unsigned char> data;
    int es;
    unsigned lo, hi;   /* the shared bytes it fills lie in [lo, hi) */
};
struct MBar {
    unsigned count, left, phase;
    long long tx;
    std::vector<TmaLoad> loads;
};
static std::vector<std::pair<unsigned, MBar>> mbars;   /* by shared offset; few a block */

static MBar &mbar_at(const void *bar, const char *what) {
    const unsigned off = (unsigned)((const unsigned char *)bar - tile_smem);
    for (auto &b : mbars)
        if (b.first == off) return b.second;
    fail("%s: shared offset %u holds no mbarrier", what, off);
    return mbars[0].second;   /* (not reached) */
}
/* A read of shared memory that a TMA copy still in flight fills is a race
 * on the GPU (the copy may land before or after it): it fails the launch
 * (a stage read after its buffer was refilled, say; the emulation lands
 * copies only at a wait, so the read would see old data here). */
static void tma_read_check(const void *p, int bytes, const char *what) {
    const unsigned off = (unsigned)((const unsigned char *)p - tile_smem);
    for (auto &b : mbars)
        for (const TmaLoad &l : b.second.loads)
            if (off < l.hi && off + (unsigned)bytes > l.lo)
                fail("%s at shared offset %u reads what a TMA copy in flight fills ([%u, %u))", what, off, l.lo, l.hi);
}
/* (the bytes may run ahead of expect_tx, negative for a while, as on the
 * hardware; a phase whose copies overshoot never completes: a deadlock) */
static void mbar_settle(MBar &m) {
    if (m.left == 0 && m.tx == 0) m.phase++, m.left = m.count;
}
static void mbar_land(MBar &m) {
    for (TmaLoad &l : m.loads) {
        for (size_t i = 0; i < l.addr.size(); i++) memcpy(tile_smem + l.addr[i], &l.data[i * (size_t)l.es], (size_t)l.es);
        m.tx -= (long long)l.addr.size() * l.es;
    }
    m.loads.clear();
}

/* A TMA store waiting in this thread's bulk group `group`: shared memory is
 * read when the group is waited for (or the thread ends). */
struct TmaStore {
    TmaBox map;
    unsigned src, group;
    int c[5];
};
static std::vector<TmaStore> stores[MAX_THREADS];
static unsigned bulk_groups[MAX_THREADS];

static void stores_run(bool all) {
    std::vector<TmaStore> &v = stores[cur->tid.x];
    size_t kept = 0;
    for (size_t i = 0; i < v.size(); i++) {
        const TmaStore &st = v[i];
        if (all || st.group < bulk_groups[cur->tid.x]) {
            const int es = st.map.elem();
            tma_each(st.map, st.src, st.c, [&](unsigned char *g, unsigned a) {
                if (g) memcpy(g, tile_smem + a, (size_t)es);
            });
        } else if (kept++ != i) {
            v[kept - 1] = v[i];
        }
    }
    v.resize(kept);
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
    tile_emu::tma_read_check(p, 16, "ld.shared.v4");
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
TILE_DEV unsigned tile_smem_addr(const void *p) { return (unsigned)((const unsigned char *)p - tile_smem); }
TILE_DEV void tile_wgmma_fence() {
    tile_emu::group_meet(tile_emu::K_WG_FENCE, NULL, "wgmma.fence", NULL, [](tile_emu::WarpGroup &) {});
}
/* (the products write the accumulators through their addresses, at a wait: nothing to order here) */
TILE_DEV void tile_wgmma_fence_operand(float &) {}
TILE_DEV void tile_wgmma_fence_operand(unsigned &) {}
TILE_DEV void tile_wgmma_commit() {
    tile_emu::group_meet(tile_emu::K_WG_COMMIT, NULL, "wgmma.commit_group", NULL,
                         [](tile_emu::WarpGroup &g) { g.committed++; });
}
TILE_DEV void tile_wgmma_wait0() { tile_emu::wg_wait(0); }
TILE_DEV void tile_wgmma_wait1() { tile_emu::wg_wait(1); }
/* (one thread runs at a time and every write lands at once: no proxies to order) */
TILE_DEV void tile_fence_proxy_async() {}
/* The product the emitter writes as wgmma.mma_async in inline PTX
 * (emit_cuda_wgmma.c, CudaEmitOptions.host_entry): A from shared memory
 * (afrag NULL, da its descriptor) or registers (afrag, this thread's 4 words). */
TILE_DEV void tile_emu_wgmma(const char *type, int cols, float *const *acc, const unsigned *afrag,
                             unsigned long long da, unsigned long long db, int ta, int tb) {
    tile_emu::wgmma(type, cols, acc, afrag, da, db, ta, tb);
}
TILE_DEV void tile_fence_proxy_async_all() {}
TILE_DEV void tile_mbar_init(void *bar, unsigned count) {
    using namespace tile_emu;
    check_smem(bar, 8, 8, "mbarrier.init");
    const unsigned off = (unsigned)((unsigned char *)bar - tile_smem);
    for (auto &b : mbars)
        if (b.first == off) fail("mbarrier.init of a barrier in use (shared offset %u)", off);
    if (count < 1) fail("mbarrier.init with a count of 0");
    mbars.push_back({off, MBar{count, count, 0, 0, {}}});
    progress = true;
}
TILE_DEV void tile_mbar_init_fence() {}
TILE_DEV void tile_mbar_inval(void *bar) {
    using namespace tile_emu;
    MBar &m = mbar_at(bar, "mbarrier.inval");
    if (!m.loads.empty()) fail("mbarrier.inval with TMA copies in flight on it");
    const unsigned off = (unsigned)((unsigned char *)bar - tile_smem);
    for (size_t i = 0; i < mbars.size(); i++)
        if (mbars[i].first == off) {
            mbars.erase(mbars.begin() + (long)i);
            break;
        }
}
TILE_DEV void tile_mbar_expect(void *bar, unsigned bytes) {
    using namespace tile_emu;
    MBar &m = mbar_at(bar, "mbarrier.arrive.expect_tx");
    if (m.left == 0) fail("mbarrier: more arrivals than its count");
    m.tx += bytes;
    m.left--;
    mbar_settle(m);
    progress = true;
}
TILE_DEV void tile_mbar_arrive(void *bar) {
    using namespace tile_emu;
    MBar &m = mbar_at(bar, "mbarrier.arrive");
    if (m.left == 0) fail("mbarrier: more arrivals than its count");
    m.left--;
    mbar_settle(m);
    progress = true;
}
/* (the copies on the barrier land first: a wait is where they may show) */
TILE_DEV void tile_mbar_wait(void *bar, unsigned parity) {
    using namespace tile_emu;
    for (;;) {
        MBar &m = mbar_at(bar, "mbarrier.try_wait");
        if ((m.phase & 1) != (parity & 1)) return;   /* (done before: the next phase's copies stay in flight) */
        if (!m.loads.empty()) {
            mbar_land(m);
            mbar_settle(m);
            progress = true;
        }
        if ((m.phase & 1) != (parity & 1)) return;
        cur->waits_at = "mbarrier.try_wait";
        yield();
        cur->waits_at = NULL;
    }
}
template <typename... C> static void tile_tma_load(void *smem, const TileTensorMap *map, void *bar, C... coords) {
    using namespace tile_emu;
    const int c[] = {coords...};
    TmaBox m;
    memcpy(m.w, map, sizeof m.w);
    if (m.rank() != (int)sizeof...(coords)) fail("TMA load: %d coordinates for a map of rank %d", (int)sizeof...(coords), m.rank());
    MBar &b = mbar_at(bar, "TMA load");
    TmaLoad l;
    l.es = m.elem();
    l.lo = ~0u, l.hi = 0;
    tma_each(m, (unsigned)((unsigned char *)smem - tile_smem), c, [&](const unsigned char *g, unsigned a) {
        l.addr.push_back(a);
        l.lo = a < l.lo ? a : l.lo;
        l.hi = a + (unsigned)l.es > l.hi ? a + (unsigned)l.es : l.hi;
        for (int i = 0; i < l.es; i++) l.data.push_back(g ? g[i] : 0);
    });
    b.loads.push_back(std::move(l));
    progress = true;
}
template <typename... C> static void tile_tma_store(void *smem, const TileTensorMap *map, C... coords) {
    using namespace tile_emu;
    TmaStore st;
    memcpy(st.map.w, map, sizeof st.map.w);
    if (st.map.rank() != (int)sizeof...(coords)) fail("TMA store: %d coordinates for a map of rank %d", (int)sizeof...(coords), st.map.rank());
    const int c[] = {coords...};
    for (int k = 0; k < 5; k++) st.c[k] = k < (int)sizeof...(coords) ? c[k] : 0;
    st.src = (unsigned)((unsigned char *)smem - tile_smem);
    st.group = bulk_groups[cur->tid.x];
    stores[cur->tid.x].push_back(st);
}
TILE_DEV void tile_bulk_commit() { tile_emu::bulk_groups[tile_emu::cur->tid.x]++; }
TILE_DEV void tile_bulk_wait_read() { tile_emu::stores_run(false); }
TILE_DEV void tile_bulk_wait() { tile_emu::stores_run(false); }
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
    stores_run(true);   /* (TMA stores not waited for still complete) */
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
    mbars.clear();
    for (int t = 0; t < nthreads; t++) stores[t].clear(), bulk_groups[t] = 0;
    for (WarpGroup &g : groups) {   /* (products never waited for, left by the last block, are dropped) */
        g.arrived = 0;
        g.committed = 0;
        g.pending.clear();
    }
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
    /* Two orders, the blocks alternating (and a launch's first block
     * alternating between launches): each thread a step in turn (the warps
     * keep in step), and each warp as far as it can go before the next (a
     * warp runs ahead of the others wherever nothing holds it back, as one
     * may on the GPU: a missing barrier then shows) */
    const unsigned linear = block_idx.x + grid_dim.x * (block_idx.y + grid_dim.y * block_idx.z);
    const bool warp_ahead = (linear + launches) % 2 == 0;
    while (alive > 0 && !failure[0]) {   /* (fiber_main counts the threads down) */
        bool any = false;
        for (int w = 0; w * 32 < nthreads && !failure[0]; w++) {
            do {
                progress = false;
                for (int t = 32 * w; t < 32 * w + 32 && t < nthreads && !failure[0]; t++) {
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
                any |= progress;
            } while (warp_ahead && progress && !failure[0]);
        }
        progress = any;
        if (alive == 0 && !failure[0])
            for (WarpGroup &g : groups)
                if (!g.pending.empty()) {
                    snprintf(failure, sizeof failure, "block (%u,%u,%u): wgmma products issued and never waited for",
                             block_idx.x, block_idx.y, block_idx.z);
                    break;
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
    launches++;
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
