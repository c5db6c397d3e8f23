/* exec_mma.c: mma for f32, tf32, bf16, f16 (f16 and f32 accumulators) and
 * i8 -> i32 operands, a K loop over partial tiles, a batch dimension, and
 * the `@` / matmul forms.  References are computed in double from the
 * operands as the dtype holds them (tf32 rounded independently here). */
#include "harness.h"

#include <string.h>

static float bits_f32(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }
static uint32_t f32_bits(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }
static double ref_tf32(double v) {   /* ties to even */
    uint32_t u = f32_bits((float)v);
    if ((u & 0x7f800000u) == 0x7f800000u) return v;
    uint32_t kept = u & 0xffffe000u, dropped = u & 0x1fffu;
    if (dropped > 0x1000u || (dropped == 0x1000u && (kept & 0x2000u))) kept += 0x2000u;
    return bits_f32(kept);
}

/* c = a @ b over a K loop of tiles, for operand dtype `in` (with an optional
 * conversion expression), accumulator dtype `acc`. */
static void check_gemm(DType in, const char *conv, DType acc, DType out, double rtol) {
    const char *ind = dtype_name(in), *accd = dtype_name(acc), *outd = dtype_name(out);
    char src[2048];
    snprintf(src, sizeof src,
             "kernel mm(a: %s[M, K], b: %s[K, N], c: %s[M, N], const BM: i32, const BN: i32, const BK: i32) {\n"
             "    var acc = zeros((BM, BN), %s);\n"
             "    for k in range(num_tiles(a, 1, (BM, BK))) {\n"
             "        let x = load(a, index=(bid(0), k), shape=(BM, BK))%s;\n"
             "        let y = load(b, index=(k, bid(1)), shape=(BK, BN))%s;\n"
             "        acc = mma(x, y, acc);\n"
             "    }\n"
             "    store(c, index=(bid(0), bid(1)), tile=acc%s);\n"
             "}\n", ind, ind, outd, accd, conv, conv, acc == out ? "" : ".astype(f32)");
    const int64_t M = 37, N = 45, K = 70;
    HArray *a = h_array(in, 2, M, K), *b = h_array(in, 2, K, N), *c = h_array(out, 2, M, N);
    bool is_int = !dtype_is_float(in);
    h_fill_random(a, is_int ? -128 : -1, is_int ? 127 : 1);
    h_fill_random(b, is_int ? -128 : -1, is_int ? 127 : 1);
    h_fill(c, 99);
    HArg args[] = { HA(a), HA(b), HA(c) };
    HRun r = { .src = src, .kernel = "mm", .consts = "BM=16,BN=16,BK=16", .grid = { 3, 3, 1 } };
    if (h_run(&r, args, 3, NULL, NULL, 0) == 0) {
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double s = 0, mag = 0;
                for (int k = 0; k < K; k++) {
                    double x = AT2(a, i, k), y = AT2(b, k, j);
                    if (strstr(conv, "tf32")) { x = ref_tf32(x); y = ref_tf32(y); }
                    s += x * y;
                    mag += fabs(x * y);
                }
                double got = AT2(c, i, j);
                bool ok = is_int ? got == s : fabs(got - s) <= rtol * (mag + 1e-3);
                H_CHECK(ok, "%s%s -> %s: c[%d][%d] = %.9g, want %.9g", ind, conv, accd, i, j, got, s);
            }
    }
    h_free(a); h_free(b); h_free(c);
}

static void t_mma_f32(void) { check_gemm(DT_F32, "", DT_F32, DT_F32, 1e-6); }
static void t_mma_tf32(void) { check_gemm(DT_F32, ".astype(tf32)", DT_F32, DT_F32, 1e-6); }
static void t_mma_bf16(void) { check_gemm(DT_BF16, "", DT_F32, DT_F32, 1e-6); }
static void t_mma_f16_f32acc(void) { check_gemm(DT_F16, "", DT_F32, DT_F32, 1e-6); }
static void t_mma_f16_f16acc(void) { check_gemm(DT_F16, "", DT_F16, DT_F32, 4e-3); }
static void t_mma_i8(void) { check_gemm(DT_I8, "", DT_I32, DT_I32, 0); }

/* tf32 really rounds: products of values with low mantissa bits differ from
 * the f32 result. */
static void t_tf32_rounds(void) {
    const char *src =
        "kernel t(a: f32[M, K], b: f32[K, N], c: f32[M, N], d: f32[M, N]) {\n"
        "    let x = load(a, index=(0, 0), shape=(16, 8));\n"
        "    let y = load(b, index=(0, 0), shape=(8, 16));\n"
        "    store(c, index=(0, 0), tile=mma(x.astype(tf32), y.astype(tf32), zeros((16, 16), f32)));\n"
        "    store(d, index=(0, 0), tile=mma(x, y, zeros((16, 16), f32)));\n"
        "}\n";
    HArray *a = h_array(DT_F32, 2, (int64_t)16, (int64_t)8), *b = h_array(DT_F32, 2, (int64_t)8, (int64_t)16);
    HArray *c = h_array(DT_F32, 2, (int64_t)16, (int64_t)16), *d = h_array(DT_F32, 2, (int64_t)16, (int64_t)16);
    h_fill(a, 1.0 + ldexp(1, -12));     /* below half a tf32 ulp (2^-11): rounds to 1 */
    h_fill(b, 1.0);
    SET2(a, 0, 0, 1.0 + 3 * ldexp(1, -11)); /* 1 + 2^-10 and exactly half a tf32 ulp: to even -> 1 + 2^-9 */
    SET2(a, 2, 0, 1.0 + ldexp(1, -11));     /* exactly half a tf32 ulp: to even -> 1 */
    HArg args[] = { HA(a), HA(b), HA(c), HA(d) };
    HRun r = { .src = src, .kernel = "t", .consts = NULL, .grid = { 1, 1, 1 } };
    if (h_run(&r, args, 4, NULL, NULL, 0) == 0) {
        H_CHECK(AT2(c, 1, 0) == 8.0, "tf32 row of 1+2^-12 sums to 8, got %.9g", AT2(c, 1, 0));
        H_CHECK(AT2(d, 1, 0) == 8.0 + 8 * ldexp(1, -12), "f32 keeps the low bits, got %.9g", AT2(d, 1, 0));
        H_CHECK(AT2(c, 0, 0) == 8.0 + ldexp(1, -9), "odd tie rounds up to even: %.9g", AT2(c, 0, 0));
        H_CHECK(AT2(c, 2, 0) == 8.0, "even tie rounds down: %.9g", AT2(c, 2, 0));
    }
    h_free(a); h_free(b); h_free(c); h_free(d);
}

/* tf32 arrays: f32 words read with their low 13 bits dropped (as the tensor
 * cores read them), by mma and by astype alike; a store of astype's rounded
 * tile writes words that read back unchanged. */
static void t_tf32_arrays(void) {
    const char *src =
        "kernel t(a: tf32[M, K], b: tf32[K, N], f: f32[M, K], c: f32[M, N], e: f32[M, K], r: tf32[M, K]) {\n"
        "    let x = load(a, index=(0, 0), shape=(16, 8));\n"
        "    store(c, index=(0, 0), tile=mma(x, load(b, index=(0, 0), shape=(8, 16)), zeros((16, 16), f32)));\n"
        "    store(e, index=(0, 0), tile=x.astype(f32) * 2.0);\n"
        "    store(r, index=(0, 0), tile=load(f, index=(0, 0), shape=(16, 8)).astype(tf32));\n"
        "}\n";
    HArray *a = h_array(DT_TF32, 2, (int64_t)16, (int64_t)8), *b = h_array(DT_TF32, 2, (int64_t)8, (int64_t)16);
    HArray *f = h_array(DT_F32, 2, (int64_t)16, (int64_t)8), *c = h_array(DT_F32, 2, (int64_t)16, (int64_t)16);
    HArray *e = h_array(DT_F32, 2, (int64_t)16, (int64_t)8), *r = h_array(DT_TF32, 2, (int64_t)16, (int64_t)8);
    const float word = 1.0f + 3 * ldexpf(1, -11);   /* 1 + 2^-10, and half a tf32 ulp in the dropped bits */
    for (int64_t i = 0; i < 16 * 8; i++) memcpy((float *)a->data + i, &word, 4);
    h_fill(b, 1.0);
    h_fill(f, word);
    h_fill(r, -7.0);
    HArg args[] = { HA(a), HA(b), HA(f), HA(c), HA(e), HA(r) };
    HRun run = { .src = src, .kernel = "t", .consts = NULL, .grid = { 1, 1, 1 } };
    if (h_run(&run, args, 6, NULL, NULL, 0) == 0) {
        const double dropped = 1.0 + ldexp(1, -10), rounded = 1.0 + ldexp(1, -9);
        H_CHECK(AT2(a, 0, 0) == dropped, "a tf32 element reads without its low bits, got %.9g", AT2(a, 0, 0));
        H_CHECK(AT2(c, 3, 5) == 8 * dropped, "mma reads tf32 words without their low bits, got %.9g", AT2(c, 3, 5));
        H_CHECK(AT2(e, 7, 2) == 2 * dropped, "astype(f32) of a tf32 word drops them too, got %.9g", AT2(e, 7, 2));
        float w;
        memcpy(&w, (float *)r->data + 9, 4);
        H_CHECK(w == (float)rounded, "a store of astype(tf32) writes the rounded word (ties to even), got %.9g", w);
        H_CHECK(AT2(r, 1, 1) == rounded, "and it reads back unchanged, got %.9g", AT2(r, 1, 1));
    }
    h_free(a); h_free(b); h_free(f); h_free(c); h_free(e); h_free(r);
}

/* A leading batch dimension on all three operands. */
static void t_mma_batch(void) {
    const char *src =
        "kernel bm(a: f32[Z, M, K], b: f32[Z, K, N], c: f32[Z, M, N]) {\n"
        "    let x = load(a, index=(0, 0, 0), shape=(2, 16, 8));\n"
        "    let y = load(b, index=(0, 0, 0), shape=(2, 8, 16));\n"
        "    store(c, index=(0, 0, 0), tile=mma(x, y, zeros((2, 16, 16), f32)));\n"
        "}\n";
    const int64_t Z = 2, M = 11, K = 7, N = 13;
    HArray *a = h_array(DT_F32, 3, Z, M, K), *b = h_array(DT_F32, 3, Z, K, N), *c = h_array(DT_F32, 3, Z, M, N);
    h_fill_random(a, -1, 1);
    h_fill_random(b, -1, 1);
    HArg args[] = { HA(a), HA(b), HA(c) };
    HRun r = { .src = src, .kernel = "bm", .consts = NULL, .grid = { 1, 1, 1 } };
    if (h_run(&r, args, 3, NULL, NULL, 0) == 0)
        for (int z = 0; z < Z; z++)
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N; j++) {
                    double s = 0;
                    for (int k = 0; k < K; k++) s += AT3(a, z, i, k) * AT3(b, z, k, j);
                    H_CHECK(h_close(AT3(c, z, i, j), s, 1e-5, 1e-5), "batch c[%d][%d][%d] = %g, want %g", z, i, j, AT3(c, z, i, j), s);
                }
    h_free(a); h_free(b); h_free(c);
}

/* `@` and matmul() on f32 and bf16: f32 results. */
static void t_matmul_operator(void) {
    const char *src =
        "kernel at(a: f32[M, K], b: f32[K, N], c: f32[M, N], hb: bf16[M, K], hc: bf16[K, N], d: f32[M, N], e: f32[M, N]) {\n"
        "    let x = load(a, index=(0, 0), shape=(16, 16));\n"
        "    let y = load(b, index=(0, 0), shape=(16, 16));\n"
        "    store(c, index=(0, 0), tile=x @ y);\n"
        "    store(d, index=(0, 0), tile=matmul(load(hb, index=(0, 0), shape=(16, 16)), load(hc, index=(0, 0), shape=(16, 16))));\n"
        "    store(e, index=(0, 0), tile=x @ y + 1.0);\n"
        "}\n";
    const int64_t M = 9, K = 12, N = 14;
    HArray *a = h_array(DT_F32, 2, M, K), *b = h_array(DT_F32, 2, K, N), *c = h_array(DT_F32, 2, M, N);
    HArray *hb = h_array(DT_BF16, 2, M, K), *hc = h_array(DT_BF16, 2, K, N), *d = h_array(DT_F32, 2, M, N);
    HArray *e = h_array(DT_F32, 2, M, N);
    h_fill_random(a, -1, 1);
    h_fill_random(b, -1, 1);
    h_fill_random(hb, -1, 1);
    h_fill_random(hc, -1, 1);
    HArg args[] = { HA(a), HA(b), HA(c), HA(hb), HA(hc), HA(d), HA(e) };
    HRun r = { .src = src, .kernel = "at", .consts = NULL, .grid = { 1, 1, 1 } };
    if (h_run(&r, args, 7, NULL, NULL, 0) == 0)
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double s = 0, t = 0;
                for (int k = 0; k < K; k++) {
                    s += AT2(a, i, k) * AT2(b, k, j);
                    t += AT2(hb, i, k) * AT2(hc, k, j);
                }
                H_CHECK(h_close(AT2(c, i, j), s, 1e-5, 1e-5), "@ c[%d][%d] = %g, want %g", i, j, AT2(c, i, j), s);
                H_CHECK(h_close(AT2(d, i, j), t, 1e-5, 1e-5), "matmul bf16 d[%d][%d] = %g, want %g", i, j, AT2(d, i, j), t);
                H_CHECK(h_close(AT2(e, i, j), s + 1, 1e-5, 1e-5), "@ + 1 e[%d][%d]", i, j);
            }
    h_free(a); h_free(b); h_free(c); h_free(hb); h_free(hc); h_free(d); h_free(e);
}

int main(void) {
    H_RUN_TEST(t_mma_f32);
    H_RUN_TEST(t_mma_tf32);
    H_RUN_TEST(t_mma_bf16);
    H_RUN_TEST(t_mma_f16_f32acc);
    H_RUN_TEST(t_mma_f16_f16acc);
    H_RUN_TEST(t_mma_i8);
    H_RUN_TEST(t_tf32_rounds);
    H_RUN_TEST(t_tf32_arrays);
    H_RUN_TEST(t_mma_batch);
    H_RUN_TEST(t_matmul_operator);
    return h_finish();
}
