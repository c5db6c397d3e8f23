/* tile_device.h: the device header every kernel tilec generates includes.
 * NVRTC-safe: no standard headers.  One small wrapper per PTX instruction the
 * emitter needs: mma shapes, ldmatrix, shuffles, cp.async, conversions, fast
 * exp2, and the integer / float helpers whose semantics match scalar.c.
 * (The C string in cuda_device.c is generated from this file by
 * tests/gpu/gen_device_header.sh; a test checks that they agree.)
 * Every function that holds PTX stands inside #ifndef TILE_HOST_EMULATION:
 * the emu backend compiles kernels for the host with runtime/emu_device.h,
 * which defines those functions in C++ and leaves the rest of this file,
 * compiled as it is, to be tested with them. */
#ifndef TILE_DEVICE_H
#define TILE_DEVICE_H

#define TILE_DEV static __device__ __forceinline__

/* ---- 16-bit floats are carried as their bits (unsigned short) ------------ */
TILE_DEV float tile_bf16_f32(unsigned short b) { return __uint_as_float(((unsigned)b) << 16); }
#ifndef TILE_HOST_EMULATION
TILE_DEV unsigned short tile_f32_bf16(float f) {
    unsigned short r;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(f));
    return r;
}
TILE_DEV float tile_f16_f32(unsigned short h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
TILE_DEV unsigned short tile_f32_f16(float f) {
    unsigned short r;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(f));
    return r;
}
/* two at once, as one packed instruction (same rounding): the input named
 * hi goes to the upper half of the packed result */
TILE_DEV void tile_f32x2_bf16(float lo, float hi, unsigned short &rlo, unsigned short &rhi) {
    unsigned p;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(p) : "f"(hi), "f"(lo));
    rlo = (unsigned short)p;
    rhi = (unsigned short)(p >> 16);
}
TILE_DEV void tile_f32x2_f16(float lo, float hi, unsigned short &rlo, unsigned short &rhi) {
    unsigned p;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(p) : "f"(hi), "f"(lo));
    rlo = (unsigned short)p;
    rhi = (unsigned short)(p >> 16);
}
TILE_DEV unsigned short tile_f64_f16(double f) {
    unsigned short r;
    asm("cvt.rn.f16.f64 %0, %1;" : "=h"(r) : "d"(f));
    return r;
}
#endif
TILE_DEV unsigned short tile_f64_bf16(double f) { return tile_f32_bf16((float)f); }
/* f32 -> tf32: round to nearest even, low 13 bits zero; inf stays inf, NaN
 * NaN (the interpreter's tf32_round).  From sm_90 cvt.rn.tf32.f32,
 * one instruction (cvt.rna, ties away, is three: ptxas); before it, and where
 * the kernel asks (below), the same in integer instructions. */
TILE_DEV float tile_tf32_int(float f) {
    unsigned u = __float_as_uint(f);
    if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0xfffu + ((u >> 13) & 1u)) & 0xffffe000u;
    else if (u & 0x7fffffu) u = (u | 0x400000u) & 0xffffe000u;   /* NaN: quiet, still NaN in tf32's bits */
    return __uint_as_float(u);
}
/* A tf32 array's element as the language reads it (scalar.c's tf32_word): the
 * word with its low 13 bits dropped, as the tensor cores read it. */
TILE_DEV float tile_tf32_word(float f) { return __uint_as_float(__float_as_uint(f) & 0xffffe000u); }
TILE_DEV float tile_tf32(float f) {
#if __CUDA_ARCH__ >= 900
    unsigned r;
    asm("cvt.rn.tf32.f32 %0, %1;" : "=r"(r) : "f"(f));
    return __uint_as_float(r);
#else
    return tile_tf32_int(f);
#endif
}
/* Rounding tf32 operands in shared memory, in place (emit_cuda_async.c's
 * emit_round): wgmma reads them as they lie and drops the low 13 bits
 * (round toward zero), where the language rounds to nearest.  A thread loads
 * a batch of its 16-byte pieces (4 f32 each), then rounds and stores them. */
#ifndef TILE_HOST_EMULATION
TILE_DEV uint4 tile_lds16(const void *p) {
    uint4 v;
    asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "r"((unsigned)__cvta_generic_to_shared(p)));
    return v;
}
#endif
/* TILE_TF32_ROUND_INT (emit_cuda.c): a kernel of two blocks per SM or more,
 * whose roundings in place contend, rounds in integer instructions (cvt.rn
 * takes one issue slot but seems to hold its pipe longer: measured slower
 * there, faster at one block per SM).  Only this rounding in place: the
 * transposed copies (emit_cuda_async.c) and fragment reads use tile_tf32. */
TILE_DEV float tile_tf32_in_place(float f) {
#if defined(TILE_TF32_ROUND_INT)
    return tile_tf32_int(f);
#else
    return tile_tf32(f);
#endif
}
#ifndef TILE_HOST_EMULATION
TILE_DEV void tile_sts16(void *p, const unsigned r[4]) {
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" :: "r"((unsigned)__cvta_generic_to_shared(p)), "r"(r[0]),
                 "r"(r[1]), "r"(r[2]), "r"(r[3]) : "memory");
}
#endif
TILE_DEV void tile_tf32_sts16(void *p, uint4 v) {
    const unsigned r[4] = {__float_as_uint(tile_tf32_in_place(__uint_as_float(v.x))), __float_as_uint(tile_tf32_in_place(__uint_as_float(v.y))),
                           __float_as_uint(tile_tf32_in_place(__uint_as_float(v.z))), __float_as_uint(tile_tf32_in_place(__uint_as_float(v.w)))};
    tile_sts16(p, r);
}

/* ---- float helpers -------------------------------------------------------- */
TILE_DEV float tile_nanf() { return __int_as_float(0x7fc00000); }
TILE_DEV double tile_nan() { return __longlong_as_double(0x7ff8000000000000LL); }
#ifndef TILE_HOST_EMULATION
TILE_DEV float tile_exp2f(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
/* maximum / minimum propagate NaN (max.NaN), as scalar.c does. */
TILE_DEV float tile_fmaxf(float a, float b) {
    float r;
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
}
TILE_DEV float tile_fminf(float a, float b) {
    float r;
    asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
}
#endif
TILE_DEV double tile_fmax(double a, double b) { return (a != a || b != b) ? tile_nan() : (a > b ? a : b); }
TILE_DEV double tile_fmin(double a, double b) { return (a != a || b != b) ? tile_nan() : (a < b ? a : b); }
TILE_DEV float tile_sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }
TILE_DEV double tile_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

/* Float -> integer as cvt.rzi.sat: truncate, saturate, NaN -> 0.
 * lo: smallest value; hi: first value past the range (exclusive). */
template <typename T> TILE_DEV T tile_f2i(double x, double lo, double hi, T tmin, T tmax) {
    if (x != x) return (T)0;
    x = trunc(x);
    if (x >= hi) return tmax;
    if (x < lo) return tmin;
    return (T)x;
}

/* ---- integer helpers (division by zero gives 0; wrap like the hardware) --- */
template <typename T> TILE_DEV bool tile_signed() { return (T)-1 < (T)0; }
template <typename T> TILE_DEV T tile_neg(T a) { return (T)(0ull - (unsigned long long)a); }
template <typename T> TILE_DEV T tile_idiv(T a, T b) {
    if (b == (T)0) return (T)0;
    if (tile_signed<T>() && b == (T)-1) return tile_neg<T>(a);
    return (T)(a / b);
}
template <typename T> TILE_DEV T tile_imod(T a, T b) {
    if (b == (T)0) return (T)0;
    if (tile_signed<T>() && b == (T)-1) return (T)0;
    return (T)(a % b);
}
template <typename T> TILE_DEV T tile_icdiv(T a, T b) {
    if (b == (T)0) return (T)0;
    if (tile_signed<T>() && b == (T)-1) return tile_neg<T>(a);
    T q = (T)(a / b), m = (T)(a % b);
    if (!tile_signed<T>()) return (T)(q + (m != 0));
    return (T)(q + (m != 0 && ((m > 0) == (b > 0))));
}
/* The same three on operands the emitter knows are >= 0 (block indices,
 * extents, constants and their quotients): unsigned division is shorter, and
 * no sign fix-ups are needed.  U is T's unsigned type. */
template <typename T, typename U> TILE_DEV T tile_udiv(T a, T b) { return b == (T)0 ? (T)0 : (T)((U)a / (U)b); }
template <typename T, typename U> TILE_DEV T tile_umod(T a, T b) { return b == (T)0 ? (T)0 : (T)((U)a % (U)b); }
template <typename T, typename U> TILE_DEV T tile_ucdiv(T a, T b) {
    return b == (T)0 ? (T)0 : (T)((U)a / (U)b + ((U)a % (U)b != 0));
}
/* Shift counts are clamped to the width, as PTX shl / shr do. */
template <typename T> TILE_DEV T tile_shl(T a, T b) {
    const unsigned long long bits = sizeof(T) * 8;
    unsigned long long n = (tile_signed<T>() && b < (T)0) ? bits : (unsigned long long)b;
    if (n >= bits) return (T)0;
    return (T)((unsigned long long)a << n);
}
template <typename T> TILE_DEV T tile_shr(T a, T b) {
    const unsigned long long bits = sizeof(T) * 8;
    unsigned long long n = (tile_signed<T>() && b < (T)0) ? bits : (unsigned long long)b;
    if (n >= bits) return tile_signed<T>() ? (a < (T)0 ? (T)-1 : (T)0) : (T)0;
    return (T)(a >> n);
}
template <typename T> TILE_DEV T tile_ipow(T a, T b) {
    if (tile_signed<T>() && b < (T)0)
        return a == (T)1 ? (T)1 : a == (T)-1 ? ((b & 1) ? (T)-1 : (T)1) : (T)0;
    unsigned long long r = 1, base = (unsigned long long)a, e = (unsigned long long)b;
    while (e) {
        if (e & 1) r *= base;
        base *= base;
        e >>= 1;
    }
    return (T)r;
}

/* argmax / argmin: does (w at index j) beat (v at index i)?  NaN is the most
 * extreme value; ties go to the smaller index (the first one). */
template <typename T> TILE_DEV bool tile_arg_better(T w, int j, T v, int i, bool want_max) {
    bool wn = w != w, vn = v != v;
    if (wn || vn) return wn && (!vn || j < i);
    if (w == v) return j < i;
    return want_max ? w > v : w < v;
}

/* Bits of one type as another (the smaller one zero-extended). */
template <typename To, typename From> TILE_DEV To tile_bits(From v) {
    union {
        From f;
        To t;
        unsigned long long pad;
    } u;
    u.pad = 0;
    u.f = v;
    return u.t;
}

/* ---- warp shuffles of any register type ------------------------------------ */
/* tile_shfl_xor(v, m): lane ^ m's value (reductions); tile_shfl(v, src): lane
 * src's value (layout conversions).  Native for 32/64-bit types; narrower
 * ones travel as int. */
#define TILE_SHFL_OF(T) \
    TILE_DEV T tile_shfl_xor(T v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); } \
    TILE_DEV T tile_shfl(T v, int src) { return __shfl_sync(0xffffffffu, v, src); }
TILE_SHFL_OF(float)
TILE_SHFL_OF(double)
TILE_SHFL_OF(int)
TILE_SHFL_OF(unsigned)
TILE_SHFL_OF(long long)
TILE_SHFL_OF(unsigned long long)
#undef TILE_SHFL_OF
template <typename T> TILE_DEV T tile_shfl_xor(T v, int m) { return (T)__shfl_xor_sync(0xffffffffu, (int)v, m); }
template <typename T> TILE_DEV T tile_shfl(T v, int src) { return (T)__shfl_sync(0xffffffffu, (int)v, src); }

/* ---- atomics: a compare-and-swap loop for any type and any update -------- */
#ifndef TILE_HOST_EMULATION
/* a 16-bit compare-and-swap (sm_70+): the value found at h */
TILE_DEV unsigned short tile_atom_cas16(unsigned short *h, unsigned short cmp, unsigned short v) {
    unsigned short old;
    asm volatile("atom.cas.b16 %0, [%1], %2, %3;" : "=h"(old) : "l"(h), "h"(cmp), "h"(v) : "memory");
    return old;
}
#endif
template <typename T, typename F> TILE_DEV void tile_atomic_rmw(T *p, F update) {
    if (sizeof(T) == 4) {
        unsigned *w = (unsigned *)p, old = *w, assumed;
        do {
            assumed = old;
            old = atomicCAS(w, assumed, tile_bits<unsigned>(update(tile_bits<T>(assumed))));
        } while (old != assumed);
    } else if (sizeof(T) == 8) {
        unsigned long long *w = (unsigned long long *)p, old = *w, assumed;
        do {
            assumed = old;
            old = atomicCAS(w, assumed, tile_bits<unsigned long long>(update(tile_bits<T>(assumed))));
        } while (old != assumed);
    } else if (sizeof(T) == 2) {
        /* a 16-bit swap (sm_70+): swapping the 32-bit word around the element would
         * read its neighbour, which may never have been written (initcheck) */
        unsigned short *h = (unsigned short *)p, old = *h, assumed, next;
        do {
            assumed = old;
            next = tile_bits<unsigned short>(update(tile_bits<T>(assumed)));
            old = tile_atom_cas16(h, assumed, next);
        } while (old != assumed);
    } else {
        /* 1-byte elements: swap the aligned 32-bit word that holds them */
        unsigned long long addr = (unsigned long long)p;
        unsigned *w = (unsigned *)(addr & ~3ull);
        unsigned shift = (unsigned)(addr & 3ull) * 8u, mask = 0xffu << shift;
        unsigned old = *w, assumed;
        do {
            assumed = old;
            T v = tile_bits<T>((assumed & mask) >> shift);
            unsigned nb = tile_bits<unsigned>(update(v));
            old = atomicCAS(w, assumed, (assumed & ~mask) | ((nb << shift) & mask));
        } while (old != assumed);
    }
}

/* ---- shared memory, ldmatrix, cp.async ------------------------------------- */
/* x, computed where it stands: the compiler cannot see through the move, so
 * it keeps the value in a register instead of computing it again inside a
 * loop (offsets that are the same every iteration, tr_offsets) */
#ifndef TILE_HOST_EMULATION
TILE_DEV int tile_opaque(int x) {
    int y;
    asm("mov.b32 %0, %1;" : "=r"(y) : "r"(x));
    return y;
}
TILE_DEV unsigned tile_smem_addr(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
TILE_DEV void tile_ldsm_x4(unsigned &r0, unsigned &r1, unsigned &r2, unsigned &r3, const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(tile_smem_addr(p)));
}
TILE_DEV void tile_ldsm_x2_trans(unsigned &r0, unsigned &r1, const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];"
                 : "=r"(r0), "=r"(r1) : "r"(tile_smem_addr(p)));
}
TILE_DEV void tile_ldsm_x4_trans(unsigned &r0, unsigned &r1, unsigned &r2, unsigned &r3, const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(tile_smem_addr(p)));
}
TILE_DEV void tile_ldsm_x2(unsigned &r0, unsigned &r1, const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];"
                 : "=r"(r0), "=r"(r1) : "r"(tile_smem_addr(p)));
}
/* 16 bytes global -> shared without registers; the first `bytes` (0..16) are
 * read, the rest zero-filled (array edges) */
TILE_DEV void tile_cp_async16(void *smem, const void *gmem, int bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
                 :: "r"(tile_smem_addr(smem)), "l"(gmem), "r"(bytes) : "memory");
}
#endif
/* The part of a 16-byte piece that lies inside the array (`bytes`, 0..14, a
 * multiple of 2), the rest zero: plain loads and stores, so nothing past the
 * array's end is read */
TILE_DEV void tile_copy16_partial(void *smem, const void *gmem, int bytes) {
    unsigned short *d = (unsigned short *)smem;
    const unsigned short *g = (const unsigned short *)gmem;
#pragma unroll
    for (int i = 0; i < 8; i++) d[i] = 2 * i < bytes ? g[i] : (unsigned short)0;
}
#ifndef TILE_HOST_EMULATION
TILE_DEV void tile_cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
/* waits until at most N of this thread's committed groups are in flight */
template <int N> TILE_DEV void tile_cp_async_wait() { asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory"); }
TILE_DEV void tile_cp_async_wait_all() { asm volatile("cp.async.wait_all;" ::: "memory"); }
#endif

/* ---- wgmma (sm_90a; only kernels compiled for it call these) ---------------- */
/* Shared-memory matrix descriptor of an operand (emit_cuda_wgmma.c says
 * what lbo and sbo are): no swizzle, 8 x 16-byte core matrices of 128
 * contiguous bytes (layout 0), or rows of 128, 64 or 32 bytes whose 16-byte
 * pieces the hardware permutes (layout 1, 2, 3: the swizzle of that width) */
TILE_DEV unsigned long long tile_wgmma_desc(unsigned addr, unsigned lbo, unsigned sbo, int layout) {
    return (unsigned long long)((addr & 0x3FFFFu) >> 4) | (unsigned long long)((lbo & 0x3FFFFu) >> 4) << 16 |
           (unsigned long long)((sbo & 0x3FFFFu) >> 4) << 32 | (unsigned long long)(layout & 3) << 62;
}
/* the descriptor of the piece `off` bytes (a multiple of 16) further on: only
 * the start address field changes, and it cannot carry out (shared memory
 * addresses stay below 2^18), so one 32-bit add replaces a new descriptor */
TILE_DEV unsigned long long tile_wgmma_desc_at(unsigned long long desc, unsigned off) {
    return (unsigned long long)(unsigned)(desc >> 32) << 32 | (unsigned)((unsigned)desc + (off >> 4));
}
/* the accumulator registers were written by ordinary instructions: order them before the next wgmma */
#ifndef TILE_HOST_EMULATION
TILE_DEV void tile_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
/* no instruction: the register's value is opaque to the compiler from here on */
TILE_DEV void tile_wgmma_fence_operand(float &x) { asm volatile("" : "+f"(x)); }
TILE_DEV void tile_wgmma_fence_operand(unsigned &x) { asm volatile("" : "+r"(x)); }
TILE_DEV void tile_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
TILE_DEV void tile_wgmma_wait0() { asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); }
TILE_DEV void tile_wgmma_wait1() { asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory"); }
/* this thread's writes to shared memory (cp.async included) made visible to
 * the async proxy, which wgmma reads its operands through */
TILE_DEV void tile_fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
#endif

/* ---- the tensor memory accelerator (TMA; sm_90, only kernels compiled for
 * sm_90a call these): a tile copied by one thread's instruction, described
 * by a tensor map the runtime encodes at launch and passes by value as a
 * __grid_constant__ parameter; the copy completes on an mbarrier that
 * counts the bytes it expects (emit_cuda_async.c) ------------------------- */
struct __align__(64) TileTensorMap { unsigned long long v[16]; };
/* this thread's earlier writes, to shared and global memory, ordered before
 * the copy engine's later accesses (a TMA copy may read an array the block
 * wrote before the loop) */
/* a TMA coordinate: a tile's first element, clamped into int's range (the
 * box then lies wholly outside the array, and reads as zeros, as a tile
 * index out of range must) */
TILE_DEV int tile_tma_coord(long long c) {
    return c < -2147483647LL - 1 ? (int)(-2147483647LL - 1) : c > 2147483647LL ? 2147483647 : (int)c;
}
#ifndef TILE_HOST_EMULATION
TILE_DEV void tile_fence_proxy_async_all() { asm volatile("fence.proxy.async;" ::: "memory"); }
TILE_DEV void tile_mbar_init(void *bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(tile_smem_addr(bar)), "r"(count) : "memory");
}
/* the barriers' initialisation made visible to the copy engine (and to the
 * other threads, after the barrier that follows) */
TILE_DEV void tile_mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
TILE_DEV void tile_mbar_inval(void *bar) {
    asm volatile("mbarrier.inval.shared::cta.b64 [%0];" :: "r"(tile_smem_addr(bar)) : "memory");
}
/* this thread's arrival, and `bytes` more for the phase to wait for */
TILE_DEV void tile_mbar_expect(void *bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(tile_smem_addr(bar)), "r"(bytes)
                 : "memory");
}
/* this thread's arrival, its earlier accesses of shared memory before it */
TILE_DEV void tile_mbar_arrive(void *bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(tile_smem_addr(bar)) : "memory");
}
/* waits until the phase of parity `parity` has completed */
TILE_DEV void tile_mbar_wait(void *bar, unsigned parity) {
    unsigned done;
    do {
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(done) : "r"(tile_smem_addr(bar)), "r"(parity) : "memory");
    } while (!done);
}
/* the box of `map` at coordinates c0 (innermost), c1, ... into shared memory
 * at `smem`, completing on `bar`; elements outside the array read as zero */
#define TILE_TMA_LOAD(N, COORDS, ...)                                                                    \
    asm volatile("cp.async.bulk.tensor." #N "d.shared::cluster.global.tile.mbarrier::complete_tx::bytes " \
                 "[%0], [%1, {" COORDS "}], [%2];"                                                        \
                 :: "r"(tile_smem_addr(smem)), "l"((unsigned long long)map), "r"(tile_smem_addr(bar)), __VA_ARGS__ \
                 : "memory")
TILE_DEV void tile_tma_load(void *smem, const TileTensorMap *map, void *bar, int c0) {
    TILE_TMA_LOAD(1, "%3", "r"(c0));
}
TILE_DEV void tile_tma_load(void *smem, const TileTensorMap *map, void *bar, int c0, int c1) {
    TILE_TMA_LOAD(2, "%3, %4", "r"(c0), "r"(c1));
}
TILE_DEV void tile_tma_load(void *smem, const TileTensorMap *map, void *bar, int c0, int c1, int c2) {
    TILE_TMA_LOAD(3, "%3, %4, %5", "r"(c0), "r"(c1), "r"(c2));
}
TILE_DEV void tile_tma_load(void *smem, const TileTensorMap *map, void *bar, int c0, int c1, int c2, int c3) {
    TILE_TMA_LOAD(4, "%3, %4, %5, %6", "r"(c0), "r"(c1), "r"(c2), "r"(c3));
}
TILE_DEV void tile_tma_load(void *smem, const TileTensorMap *map, void *bar, int c0, int c1, int c2, int c3, int c4) {
    TILE_TMA_LOAD(5, "%3, %4, %5, %6, %7", "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4));
}
/* the box of `map` at coordinates c0 (innermost), c1, ... written from shared
 * memory at `smem` (elements outside the array are not written), in this
 * thread's next bulk group (tile_bulk_commit) */
#define TILE_TMA_STORE(N, COORDS, ...)                                                                   \
    asm volatile("cp.async.bulk.tensor." #N "d.global.shared::cta.bulk_group [%0, {" COORDS "}], [%1];"    \
                 :: "l"((unsigned long long)map), "r"(tile_smem_addr(smem)), __VA_ARGS__ : "memory")
TILE_DEV void tile_tma_store(void *smem, const TileTensorMap *map, int c0) {
    TILE_TMA_STORE(1, "%2", "r"(c0));
}
TILE_DEV void tile_tma_store(void *smem, const TileTensorMap *map, int c0, int c1) {
    TILE_TMA_STORE(2, "%2, %3", "r"(c0), "r"(c1));
}
TILE_DEV void tile_tma_store(void *smem, const TileTensorMap *map, int c0, int c1, int c2) {
    TILE_TMA_STORE(3, "%2, %3, %4", "r"(c0), "r"(c1), "r"(c2));
}
TILE_DEV void tile_tma_store(void *smem, const TileTensorMap *map, int c0, int c1, int c2, int c3) {
    TILE_TMA_STORE(4, "%2, %3, %4, %5", "r"(c0), "r"(c1), "r"(c2), "r"(c3));
}
TILE_DEV void tile_tma_store(void *smem, const TileTensorMap *map, int c0, int c1, int c2, int c3, int c4) {
    TILE_TMA_STORE(5, "%2, %3, %4, %5, %6", "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4));
}
TILE_DEV void tile_bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
/* this thread's bulk groups done reading shared memory / done altogether */
TILE_DEV void tile_bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); }
TILE_DEV void tile_bulk_wait() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }
#endif

/* ---- mma.sync: one wrapper per shape (row.col, f32 accumulators) ---------- */
#ifndef TILE_HOST_EMULATION
TILE_DEV void tile_mma_m16n8k16_bf16(float &d0, float &d1, float &d2, float &d3,
                                     unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                     unsigned b0, unsigned b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
TILE_DEV void tile_mma_m16n8k16_f16(float &d0, float &d1, float &d2, float &d3,
                                    unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                    unsigned b0, unsigned b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
TILE_DEV void tile_mma_m16n8k8_tf32(float &d0, float &d1, float &d2, float &d3,
                                    unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                    unsigned b0, unsigned b1) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
#endif

#endif
