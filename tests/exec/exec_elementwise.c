/* exec_elementwise.c: every element-wise operation of the spec on tiles
 * loaded from arrays whose extent is not a multiple of the tile: float math,
 * integer math (truncating division, remainder, cdiv, division by zero,
 * shifts, wrap), comparisons, logic, where, isnan, astype between dtypes
 * (bf16 / f16 / tf32 rounding, saturation), promotion and loose literals,
 * and the same operations on scalars. */
#include "harness.h"

#include <stdint.h>
#include <string.h>

#define POISON 99.0
#define N_ELEMS 37

typedef double (*RefFn)(double x, double y);

typedef struct Case {
    const char *expr;       /* in terms of x and y */
    DType in, out;
    double lo, hi;          /* input range */
    RefFn ref;              /* exact value before rounding to `out` */
    double rtol;            /* 0 = exact */
} Case;

/* ---- float references (double, rounded to the dtype by the checker) ---- */
static double r_add(double x, double y) { return x + y; }
static double r_sub(double x, double y) { return x - y; }
static double r_mul(double x, double y) { return x * y; }
static double r_div(double x, double y) { return x / y; }
static double r_fmod(double x, double y) { return fmod(x, y); }
static double r_neg(double x, double y) { return -x; }
static double r_max(double x, double y) { return x > y ? x : y; }
static double r_min(double x, double y) { return x < y ? x : y; }
static double r_pow(double x, double y) { return pow(fabs(x), y); }
static double r_exp(double x, double y) { return exp(x); }
static double r_exp2(double x, double y) { return exp2(x); }
static double r_log(double x, double y) { return log(fabs(x)); }
static double r_log2(double x, double y) { return log2(fabs(x)); }
static double r_sqrt(double x, double y) { return sqrt(fabs(x)); }
static double r_rsqrt(double x, double y) { return 1 / sqrt(fabs(x) + 1); }
static double r_abs(double x, double y) { return fabs(x); }
static double r_floor(double x, double y) { return floor(x); }
static double r_ceil(double x, double y) { return ceil(x); }
static double r_sin(double x, double y) { return sin(x); }
static double r_cos(double x, double y) { return cos(x); }
static double r_tanh(double x, double y) { return tanh(x); }
static double r_sigmoid(double x, double y) { return 1 / (1 + exp(-x)); }
static double r_lt(double x, double y) { return x < y; }
static double r_le(double x, double y) { return x <= y; }
static double r_gt(double x, double y) { return x > y; }
static double r_ge(double x, double y) { return x >= y; }
static double r_eq(double x, double y) { return x == y; }
static double r_ne(double x, double y) { return x != y; }
static double r_where(double x, double y) { return x > y ? x : y * 2; }
static double r_twice(double x, double y) { return x * 2; }
static double r_axpy(double x, double y) { return 3 * x + y; }
static double r_land(double x, double y) { return (x > 0) && (y > 0); }
static double r_lor(double x, double y) { return (x > 0) || (y > 0); }
static double r_lnot(double x, double y) { return !(x > 0); }

/* ---- integer references (C semantics on int64, wrapped by the checker) ---- */
static double r_idiv(double x, double y) { return y == 0 ? 0 : (double)((int64_t)x / (int64_t)y); }
static double r_imod(double x, double y) { return y == 0 ? 0 : (double)((int64_t)x % (int64_t)y); }
static double r_cdiv(double x, double y) {
    if (y == 0) return 0;
    int64_t a = (int64_t)x, b = (int64_t)y, q = a / b;
    return (double)(q + ((a % b != 0) && ((a < 0) == (b < 0))));
}
static double r_band(double x, double y) { return (double)((int64_t)x & (int64_t)y); }
static double r_bor(double x, double y) { return (double)((int64_t)x | (int64_t)y); }
static double r_bxor(double x, double y) { return (double)((int64_t)x ^ (int64_t)y); }
static double r_bnot(double x, double y) { return (double)~(int64_t)x; }
static double r_shl32(double x, double y) { return (double)(int32_t)((uint32_t)(int32_t)x << ((int64_t)y & 31)); }
static double r_shr32(double x, double y) { return (double)((int32_t)x >> ((int64_t)y & 31)); }
static double r_shru32(double x, double y) { return (double)((uint32_t)x >> ((int64_t)y & 31)); }
static double r_iabs(double x, double y) { return fabs(x); }

static double wrap_to(DType dt, double v) {
    switch (dt) {
    case DT_I8: return (double)(int8_t)(int64_t)v;
    case DT_I16: return (double)(int16_t)(int64_t)v;
    case DT_I32: return (double)(int32_t)(int64_t)v;
    case DT_U8: return (double)(uint8_t)(int64_t)v;
    case DT_U16: return (double)(uint16_t)(int64_t)v;
    case DT_U32: return (double)(uint32_t)(int64_t)v;
    default: return v;
    }
}

static const Case cases[] = {
    { "x + y", DT_F32, DT_F32, -4, 4, r_add, 0 },
    { "x - y", DT_F32, DT_F32, -4, 4, r_sub, 0 },
    { "x * y", DT_F32, DT_F32, -4, 4, r_mul, 0 },
    { "x / y", DT_F32, DT_F32, 0.5, 4, r_div, 0 },
    { "x % y", DT_F32, DT_F32, 0.5, 4, r_fmod, 0 },
    { "-x", DT_F32, DT_F32, -4, 4, r_neg, 0 },
    { "maximum(x, y)", DT_F32, DT_F32, -4, 4, r_max, 0 },
    { "minimum(x, y)", DT_F32, DT_F32, -4, 4, r_min, 0 },
    { "pow(abs(x), y)", DT_F32, DT_F32, -2, 2, r_pow, 1e-6 },
    { "exp(x)", DT_F32, DT_F32, -4, 4, r_exp, 1e-6 },
    { "exp2(x)", DT_F32, DT_F32, -4, 4, r_exp2, 1e-6 },
    { "log(abs(x))", DT_F32, DT_F32, 0.1, 4, r_log, 1e-6 },
    { "log2(abs(x))", DT_F32, DT_F32, 0.1, 4, r_log2, 1e-6 },
    { "sqrt(abs(x))", DT_F32, DT_F32, -4, 4, r_sqrt, 0 },
    { "rsqrt(abs(x) + 1.0)", DT_F32, DT_F32, -4, 4, r_rsqrt, 1e-6 },
    { "abs(x)", DT_F32, DT_F32, -4, 4, r_abs, 0 },
    { "floor(x)", DT_F32, DT_F32, -4, 4, r_floor, 0 },
    { "ceil(x)", DT_F32, DT_F32, -4, 4, r_ceil, 0 },
    { "sin(x)", DT_F32, DT_F32, -4, 4, r_sin, 1e-6 },
    { "cos(x)", DT_F32, DT_F32, -4, 4, r_cos, 1e-6 },
    { "tanh(x)", DT_F32, DT_F32, -4, 4, r_tanh, 1e-6 },
    { "sigmoid(x)", DT_F32, DT_F32, -8, 8, r_sigmoid, 1e-6 },
    { "x.exp()", DT_F32, DT_F32, -4, 4, r_exp, 1e-6 },
    { "x < y", DT_F32, DT_BOOL, -2, 2, r_lt, 0 },
    { "x <= y", DT_F32, DT_BOOL, -2, 2, r_le, 0 },
    { "x > y", DT_F32, DT_BOOL, -2, 2, r_gt, 0 },
    { "x >= y", DT_F32, DT_BOOL, -2, 2, r_ge, 0 },
    { "x == y", DT_I32, DT_BOOL, -2, 2, r_eq, 0 },
    { "x != y", DT_I32, DT_BOOL, -2, 2, r_ne, 0 },
    { "where(x > y, x, y * 2.0)", DT_F32, DT_F32, -4, 4, r_where, 0 },
    { "(x > 0.0) && (y > 0.0)", DT_F32, DT_BOOL, -4, 4, r_land, 0 },
    { "(x > 0.0) || (y > 0.0)", DT_F32, DT_BOOL, -4, 4, r_lor, 0 },
    { "!(x > 0.0)", DT_F32, DT_BOOL, -4, 4, r_lnot, 0 },
    /* 16-bit floats: every op rounds its result to the dtype */
    { "x + y", DT_F16, DT_F16, -100, 100, r_add, 0 },
    { "x * y", DT_F16, DT_F16, -100, 100, r_mul, 0 },
    { "x / y", DT_BF16, DT_BF16, 1, 100, r_div, 0 },
    { "x * 2", DT_F16, DT_F16, -100, 100, r_twice, 0 },      /* loose literal keeps f16 */
    { "x * 3.0 + y", DT_BF16, DT_BF16, -100, 100, NULL, 0 },  /* checked step by step below */
    { "exp(x)", DT_BF16, DT_BF16, -4, 4, r_exp, 0 },
    /* integers */
    { "x + y", DT_I32, DT_I32, -1000, 1000, r_add, 0 },
    { "x - y", DT_I32, DT_I32, -1000, 1000, r_sub, 0 },
    { "x * y", DT_I32, DT_I32, -100000, 100000, r_mul, 0 },   /* wraps */
    { "x / y", DT_I32, DT_I32, -20, 20, r_idiv, 0 },           /* y = 0 gives 0 */
    { "x % y", DT_I32, DT_I32, -20, 20, r_imod, 0 },
    { "cdiv(x, y)", DT_I32, DT_I32, -20, 20, r_cdiv, 0 },
    { "x & y", DT_I32, DT_I32, -1000, 1000, r_band, 0 },
    { "x | y", DT_I32, DT_I32, -1000, 1000, r_bor, 0 },
    { "x ^ y", DT_I32, DT_I32, -1000, 1000, r_bxor, 0 },
    { "~x", DT_I32, DT_I32, -1000, 1000, r_bnot, 0 },
    { "x << (y & 31)", DT_I32, DT_I32, -100000, 100000, r_shl32, 0 },
    { "x >> (y & 31)", DT_I32, DT_I32, -100000, 100000, r_shr32, 0 },
    { "x >> (y & 31)", DT_U32, DT_U32, 0, 4000000000.0, r_shru32, 0 },
    { "maximum(x, y)", DT_I32, DT_I32, -50, 50, r_max, 0 },
    { "minimum(x, y)", DT_I64, DT_I64, -50, 50, r_min, 0 },
    { "abs(x)", DT_I32, DT_I32, -50, 50, r_iabs, 0 },
    { "-x", DT_I16, DT_I16, -50, 50, r_neg, 0 },
    { "x + y", DT_I8, DT_I8, -128, 127, r_add, 0 },            /* wraps */
    { "x * y", DT_U8, DT_U8, 0, 255, r_mul, 0 },               /* wraps */
    { "x / y", DT_U16, DT_U16, 0, 65535, r_idiv, 0 },
    { "3 * x + y", DT_I64, DT_I64, -1e12, 1e12, r_axpy, 0 },
};

static void run_case(const Case *c) {
    const char *in = dtype_name(c->in), *out = dtype_name(c->out);
    char src[1024];
    snprintf(src, sizeof src,
             "kernel ew(a: %s[N], b: %s[N], out: %s[N]) {\n"
             "    let x = load(a, index=(bid(0),), shape=(16,));\n"
             "    let y = load(b, index=(bid(0),), shape=(16,));\n"
             "    store(out, index=(bid(0),), tile=%s);\n"
             "}\n", in, in, out, c->expr);
    HArray *a = h_array(c->in, 1, (int64_t)N_ELEMS), *b = h_array(c->in, 1, (int64_t)N_ELEMS);
    HArray *o = h_array_gapped(c->out, 1, (int64_t[]){ N_ELEMS }, 4);
    h_fill_random(a, c->lo, c->hi);
    h_fill_random(b, c->lo, c->hi);
    if (!dtype_is_float(c->in)) { SET1(b, 0, 0); SET1(b, 1, 0); SET1(a, 2, c->lo); SET1(b, 2, -1); }
    h_fill(o, c->out == DT_BOOL ? 1 : POISON);
    HArg args[] = { HA(a), HA(b), HA(o) };
    HRun r = { .src = src, .kernel = "ew", .consts = NULL, .grid = { 3, 1, 1 } };
    if (h_run(&r, args, 3, NULL, NULL, 0) == 0) {
        for (int i = 0; i < N_ELEMS; i++) {
            double x = AT1(a, i), y = AT1(b, i), got = AT1(o, i), want;
            if (c->ref) {
                want = c->ref(x, y);
            } else {   /* x * 3.0 + y in bf16: round after each op */
                want = h_round(c->in, x * 3);
                want = want + y;
            }
            want = dtype_is_float(c->out) ? h_round(c->out, want) : wrap_to(c->out, want);
            bool ok = c->rtol ? h_close(got, want, 1e-7, c->rtol) : h_same(got, want);
            H_CHECK(ok, "%s on %s: x=%.9g y=%.9g got %.9g want %.9g", c->expr, in, x, y, got, want);
        }
        H_CHECK(h_gap_changes(o, c->out == DT_BOOL ? 1 : POISON) == 0, "%s: store outside the array", c->expr);
    }
    h_free(a);
    h_free(b);
    h_free(o);
}

static void t_elementwise_table(void) {
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i]);
}

/* isnan on NaN inputs and where() selecting on it. */
static void t_isnan_where(void) {
    const char *src =
        "kernel nanfix(a: f32[N], out: f32[N], flags: bool[N]) {\n"
        "    let x = load(a, index=(bid(0),), shape=(16,));\n"
        "    store(flags, index=(bid(0),), tile=isnan(x));\n"
        "    store(out, index=(bid(0),), tile=where(isnan(x), -1.0, x));\n"
        "}\n";
    HArray *a = h_array(DT_F32, 1, (int64_t)20), *o = h_array(DT_F32, 1, (int64_t)20), *fl = h_array(DT_BOOL, 1, (int64_t)20);
    h_fill_random(a, -1, 1);
    for (int i = 0; i < 20; i += 3) SET1(a, i, NAN);
    SET1(a, 1, INFINITY);
    HArg args[] = { HA(a), HA(o), HA(fl) };
    HRun r = { .src = src, .kernel = "nanfix", .consts = NULL, .grid = { 2, 1, 1 } };
    if (h_run(&r, args, 3, NULL, NULL, 0) == 0)
        for (int i = 0; i < 20; i++) {
            bool n = isnan(AT1(a, i));
            H_CHECK(AT1(fl, i) == n, "isnan[%d]", i);
            H_CHECK(h_same(AT1(o, i), n ? -1.0 : AT1(a, i)), "where[%d] = %g", i, AT1(o, i));
        }
    h_free(a); h_free(o); h_free(fl);
}

static float bits_f32(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }
static uint32_t f32_bits(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }
/* cvt.rn.tf32.f32 (ties to even), written out independently of scalar.c:
 * the dropped 13 bits against half of them */
static float ref_tf32(float x) {
    uint32_t u = f32_bits(x);
    if ((u & 0x7f800000u) == 0x7f800000u) return x;
    uint32_t kept = u & 0xffffe000u, dropped = u & 0x1fffu;
    if (dropped > 0x1000u || (dropped == 0x1000u && (kept & 0x2000u))) kept += 0x2000u;
    return bits_f32(kept);
}

/* astype between dtypes, including tie cases of the 16-bit formats and tf32. */
static void t_astype(void) {
    const char *src =
        "kernel conv(a: f32[N], bf: bf16[N], hf: f16[N], tf: f32[N], i: i32[N], u: u8[N]) {\n"
        "    let x = load(a, index=(bid(0),), shape=(16,));\n"
        "    store(bf, index=(bid(0),), tile=x.astype(bf16));\n"
        "    store(hf, index=(bid(0),), tile=astype(x, f16));\n"
        "    store(tf, index=(bid(0),), tile=x.astype(tf32).astype(f32));\n"
        "    store(i, index=(bid(0),), tile=x.astype(i32));\n"
        "    store(u, index=(bid(0),), tile=x.astype(i32).astype(u8));\n"
        "}\n";
    const int64_t N = 40;
    HArray *a = h_array(DT_F32, 1, N), *bf = h_array(DT_BF16, 1, N), *hf = h_array(DT_F16, 1, N);
    HArray *tf = h_array(DT_F32, 1, N), *iv = h_array(DT_I32, 1, N), *u = h_array(DT_U8, 1, N);
    h_fill_random(a, -300, 300);
    float special[] = { bits_f32(0x3f808000u), bits_f32(0x3f818000u), bits_f32(0x3f801000u),
                        bits_f32(0xbf801000u), 1.0f + ldexpf(1, -11), 1.0f + 3 * ldexpf(1, -11),
                        70000.0f, 1e10f, -1e10f, NAN, INFINITY, -2.7f, 2.7f, -0.0f, 300.0f, -1.0f };
    for (int k = 0; k < 16; k++) SET1(a, k, special[k]);
    HArg args[] = { HA(a), HA(bf), HA(hf), HA(tf), HA(iv), HA(u) };
    HRun r = { .src = src, .kernel = "conv", .consts = NULL, .grid = { 3, 1, 1 } };
    if (h_run(&r, args, 6, NULL, NULL, 0) == 0) {
        for (int k = 0; k < N; k++) {
            float x = (float)AT1(a, k);
            uint16_t bbits, hbits;
            memcpy(&bbits, (char *)bf->data + 2 * k, 2);
            memcpy(&hbits, (char *)hf->data + 2 * k, 2);
            uint16_t want_b = f32_to_bf16_bits(x), want_h = f32_to_f16_bits(x);
            H_CHECK(bbits == want_b || (isnan(x) && (bbits & 0x7f80) == 0x7f80 && (bbits & 0x7f)),
                    "bf16(%a) = %#x, want %#x", x, bbits, want_b);
            H_CHECK(hbits == want_h || (isnan(x) && (hbits & 0x7c00) == 0x7c00 && (hbits & 0x3ff)),
                    "f16(%a) = %#x, want %#x", x, hbits, want_h);
            float t = (float)AT1(tf, k);
            H_CHECK(h_same(t, ref_tf32(x)), "tf32(%a) = %a, want %a", x, t, ref_tf32(x));
            double wi = isnan(x) ? 0 : x >= 2147483648.0 ? 2147483647.0 : x < -2147483648.0 ? -2147483648.0 : trunc(x);
            H_CHECK(AT1(iv, k) == wi, "i32(%g) = %g, want %g", x, AT1(iv, k), wi);
            H_CHECK(AT1(u, k) == (double)(uint8_t)(int32_t)wi, "u8(i32(%g)) = %g", x, AT1(u, k));
        }
        /* the pinned tie cases */
        uint16_t b0, b1, h4, h5;
        memcpy(&b0, bf->data, 2); memcpy(&b1, (char *)bf->data + 2, 2);
        memcpy(&h4, (char *)hf->data + 8, 2); memcpy(&h5, (char *)hf->data + 10, 2);
        H_CHECK(b0 == 0x3f80 && b1 == 0x3f82, "bf16 ties to even: %#x %#x", b0, b1);
        H_CHECK(h4 == 0x3c00 && h5 == 0x3c02, "f16 ties to even: %#x %#x", h4, h5);
        H_CHECK(f32_bits((float)AT1(tf, 2)) == 0x3f800000u && f32_bits((float)AT1(tf, 5)) == 0x3f804000u,
                "tf32 ties to even: %#x %#x", f32_bits((float)AT1(tf, 2)), f32_bits((float)AT1(tf, 5)));
        H_CHECK(isinf(AT1(hf, 6)), "70000 -> f16 inf");
    }
    h_free(a); h_free(bf); h_free(hf); h_free(tf); h_free(iv); h_free(u);
}

/* Integer and bool sources, and promotion of mixed dtypes. */
static void t_astype_ints_and_promotion(void) {
    const char *src =
        "kernel conv2(a: i32[N], h: f16[N], b: bf16[N], o16: f16[N], ob: f32[N], mix: f32[N], mixi: f32[N], bl: f32[N]) {\n"
        "    let x = load(a, index=(bid(0),), shape=(16,));\n"
        "    let hx = load(h, index=(bid(0),), shape=(16,));\n"
        "    let bx = load(b, index=(bid(0),), shape=(16,));\n"
        "    store(o16, index=(bid(0),), tile=x.astype(f16));\n"
        "    store(ob, index=(bid(0),), tile=(x > 0).astype(f32));\n"
        "    store(mix, index=(bid(0),), tile=hx + bx);\n"          /* f16 + bf16 -> f32 */
        "    store(mixi, index=(bid(0),), tile=x.astype(f32) * 0.5 + hx.astype(f32));\n"
        "    store(bl, index=(bid(0),), tile=x + hx.astype(f32));\n" /* i32 + f32 -> f32 */
        "}\n";
    const int64_t N = 30;
    HArray *a = h_array(DT_I32, 1, N), *h = h_array(DT_F16, 1, N), *b = h_array(DT_BF16, 1, N);
    HArray *o16 = h_array(DT_F16, 1, N), *ob = h_array(DT_F32, 1, N), *mix = h_array(DT_F32, 1, N);
    HArray *mixi = h_array(DT_F32, 1, N), *bl = h_array(DT_F32, 1, N);
    h_fill_random(a, -70000, 70000);
    SET1(a, 0, 2049);
    SET1(a, 1, 2051);
    h_fill_random(h, -10, 10);
    h_fill_random(b, -10, 10);
    HArg args[] = { HA(a), HA(h), HA(b), HA(o16), HA(ob), HA(mix), HA(mixi), HA(bl) };
    HRun r = { .src = src, .kernel = "conv2", .consts = NULL, .grid = { 2, 1, 1 } };
    if (h_run(&r, args, 8, NULL, NULL, 0) == 0) {
        for (int k = 0; k < N; k++) {
            double x = AT1(a, k), hx = AT1(h, k), bx = AT1(b, k);
            H_CHECK(h_same(AT1(o16, k), h_round(DT_F16, x)), "f16(%g) = %g", x, AT1(o16, k));
            H_CHECK(AT1(ob, k) == (x > 0), "bool->f32");
            H_CHECK(AT1(mix, k) == (double)(float)(hx + bx), "f16+bf16 in f32: %g", AT1(mix, k));
            H_CHECK(AT1(mixi, k) == (double)(float)((double)(float)(x * 0.5) + hx), "mixed %d", k);
            H_CHECK(AT1(bl, k) == (double)(float)(x + hx), "i32+f32 %d: %g vs %g", k, AT1(bl, k), (double)(float)(x + hx));
        }
        H_CHECK(AT1(o16, 0) == 2048 && AT1(o16, 1) == 2052, "i32 -> f16 ties to even");
    }
    h_free(a); h_free(h); h_free(b); h_free(o16); h_free(ob); h_free(mix); h_free(mixi); h_free(bl);
}

/* Element-wise operations on scalars (kernel parameters). */
static void t_scalar_ops(void) {
    const char *src =
        "kernel sc(out: i32[_], fout: f32[_], n: i32, m: i32, eps: f32) {\n"
        "    scatter(out, (0,), cdiv(n, m));\n"
        "    scatter(out, (1,), n / m);\n"
        "    scatter(out, (2,), n % m);\n"
        "    scatter(out, (3,), maximum(n, m));\n"
        "    scatter(out, (4,), minimum(n, m));\n"
        "    scatter(out, (5,), -n);\n"
        "    scatter(out, (6,), n << 2);\n"
        "    scatter(out, (7,), n >> 1);\n"
        "    scatter(out, (8,), where(n > m, 1, 0));\n"
        "    scatter(out, (9,), (n * 1000003) ^ m);\n"
        "    scatter(fout, (0,), n.astype(f32) * eps);\n"
        "    scatter(fout, (1,), exp(eps));\n"
        "    scatter(fout, (2,), maximum(eps, 0.25));\n"
        "    scatter(fout, (3,), sqrt(eps) + 1.0);\n"
        "}\n";
    int pairs[][2] = { { -7, 2 }, { 7, 2 }, { 7, -2 }, { -7, -2 }, { 5, 0 }, { 123456, 7 } };
    for (int p = 0; p < 6; p++) {
        int n = pairs[p][0], m = pairs[p][1];
        HArray *out = h_array(DT_I32, 1, (int64_t)10), *fout = h_array(DT_F32, 1, (int64_t)4);
        HArg args[] = { HA(out), HA(fout), HI(n), HI(m), HF(0.75) };
        HRun r = { .src = src, .kernel = "sc", .consts = NULL, .grid = { 1, 1, 1 } };
        if (h_run(&r, args, 5, NULL, NULL, 0) == 0) {
            double want[10] = { r_cdiv(n, m), r_idiv(n, m), r_imod(n, m), n > m ? n : m, n < m ? n : m,
                                -n, (double)(n * 4), (double)(n >> 1), n > m,
                                (double)(int32_t)((uint32_t)n * 1000003u ^ (uint32_t)m) };
            for (int i = 0; i < 10; i++)
                H_CHECK(AT1(out, i) == want[i], "n=%d m=%d: out[%d] = %g, want %g", n, m, i, AT1(out, i), want[i]);
            H_CHECK(AT1(fout, 0) == (double)(float)(n * 0.75), "n*eps");
            H_CHECK(AT1(fout, 1) == (double)(float)exp(0.75), "exp(eps)");
            H_CHECK(AT1(fout, 2) == 0.75, "maximum(eps, 0.25)");
            H_CHECK(AT1(fout, 3) == (double)(float)((double)(float)sqrt(0.75) + 1.0), "sqrt(eps)+1");
        }
        h_free(out);
        h_free(fout);
    }
}

int main(void) {
    H_RUN_TEST(t_elementwise_table);
    H_RUN_TEST(t_isnan_where);
    H_RUN_TEST(t_astype);
    H_RUN_TEST(t_astype_ints_and_promotion);
    H_RUN_TEST(t_scalar_ops);
    return h_finish();
}
