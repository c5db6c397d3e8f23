/* test_scalar.c: unit tests of one element's numerics (compiler/scalar.c):
 * f16 / bf16 / tf32 rounding of known bit patterns, ties to even, NaN and
 * infinity, float -> int saturation, integer wrap and division by zero. */
#include "harness.h"

#include <string.h>

static float bits_f32(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }
static uint32_t f32_bits(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }

static void t_bf16(void) {
    H_CHECK(f32_to_bf16_bits(1.0f) == 0x3f80, "bf16(1) = %#x", f32_to_bf16_bits(1.0f));
    H_CHECK(f32_to_bf16_bits(-2.0f) == 0xc000, "bf16(-2)");
    /* exactly half way: ties to even */
    H_CHECK(f32_to_bf16_bits(bits_f32(0x3f808000u)) == 0x3f80, "tie down to even");
    H_CHECK(f32_to_bf16_bits(bits_f32(0x3f818000u)) == 0x3f82, "tie up to even");
    H_CHECK(f32_to_bf16_bits(bits_f32(0x3f808001u)) == 0x3f81, "above half rounds up");
    H_CHECK(f32_to_bf16_bits(bits_f32(0x3f807fffu)) == 0x3f80, "below half rounds down");
    H_CHECK(f32_to_bf16_bits(INFINITY) == 0x7f80, "inf");
    H_CHECK(f32_to_bf16_bits(-INFINITY) == 0xff80, "-inf");
    uint16_t n = f32_to_bf16_bits(NAN);
    H_CHECK((n & 0x7f80) == 0x7f80 && (n & 0x7f), "nan stays nan: %#x", n);
    /* a NaN whose payload lives only in the low bits must not become inf */
    n = f32_to_bf16_bits(bits_f32(0x7f800001u));
    H_CHECK((n & 0x7f) != 0, "low-payload nan stays nan: %#x", n);
    H_CHECK(f32_to_bf16_bits(bits_f32(0x7f7fffffu)) == 0x7f80, "FLT_MAX rounds to inf");
    H_CHECK(bf16_bits_to_f32(0x3fc0) == 1.5f, "bf16 0x3fc0 = 1.5");
}

static void t_f16(void) {
    H_CHECK(f32_to_f16_bits(1.0f) == 0x3c00, "f16(1)");
    H_CHECK(f32_to_f16_bits(-2.5f) == 0xc100, "f16(-2.5)");
    H_CHECK(f32_to_f16_bits(65504.0f) == 0x7bff, "f16 max");
    H_CHECK(f32_to_f16_bits(65519.0f) == 0x7bff, "just below the overflow threshold");
    H_CHECK(f32_to_f16_bits(65520.0f) == 0x7c00, "65520 rounds to inf");
    H_CHECK(f32_to_f16_bits(ldexpf(1, -24)) == 0x0001, "smallest subnormal");
    H_CHECK(f32_to_f16_bits(ldexpf(1, -25)) == 0x0000, "half the smallest subnormal: tie to even 0");
    H_CHECK(f32_to_f16_bits(ldexpf(3, -25)) == 0x0002, "1.5 subnormal units: tie to even 2");
    H_CHECK(f32_to_f16_bits(ldexpf(1, -14)) == 0x0400, "smallest normal");
    /* 1 + 2^-11 is half way between 1 and 1 + 2^-10 */
    H_CHECK(f32_to_f16_bits(1.0f + ldexpf(1, -11)) == 0x3c00, "tie to even (down)");
    H_CHECK(f32_to_f16_bits(1.0f + 3 * ldexpf(1, -11)) == 0x3c02, "tie to even (up)");
    H_CHECK(f32_to_f16_bits(-0.0f) == 0x8000, "-0");
    H_CHECK((f32_to_f16_bits(NAN) & 0x7c00) == 0x7c00 && (f32_to_f16_bits(NAN) & 0x3ff), "nan");
    H_CHECK(f16_bits_to_f32(0x0001) == ldexpf(1, -24), "decode subnormal");
    H_CHECK(f16_bits_to_f32(0xfc00) == -INFINITY, "decode -inf");
    H_CHECK(f16_bits_to_f32(0x3555) == 0.333251953125f, "decode 0x3555");
}

static void t_tf32(void) {
    H_CHECK(f32_bits(tf32_round(1.0f)) == 0x3f800000u, "tf32(1)");
    H_CHECK(f32_bits(tf32_round(bits_f32(0x3f801000u))) == 0x3f800000u, "tie to even: down");
    H_CHECK(f32_bits(tf32_round(bits_f32(0xbf801000u))) == 0xbf800000u, "negative tie to even: down");
    H_CHECK(f32_bits(tf32_round(bits_f32(0x3f800fffu))) == 0x3f800000u, "below half down");
    H_CHECK(f32_bits(tf32_round(bits_f32(0x3f801001u))) == 0x3f802000u, "above half up");
    H_CHECK(f32_bits(tf32_round(bits_f32(0x3f803000u))) == 0x3f804000u, "odd tie up to even");
    H_CHECK(f32_bits(tf32_round(bits_f32(0x7f7fffffu))) == 0x7f800000u, "overflow to inf");
    H_CHECK(f32_bits(tf32_round(bits_f32(0x3ffff000u))) == 0x40000000u, "odd tie carries into the exponent");
    H_CHECK(f32_bits(tf32_round(bits_f32(0x00001000u))) == 0x00000000u, "denormal even tie down");
    H_CHECK(f32_bits(tf32_round(bits_f32(0x80003000u))) == 0x80004000u, "negative denormal odd tie up");
    uint32_t nan_low = f32_bits(tf32_round(bits_f32(0x7f800001u)));   /* payload in the dropped bits alone */
    H_CHECK((nan_low & 0x7f800000u) == 0x7f800000u && (nan_low & 0x7fe000u) && !(nan_low & 0x1fffu), "NaN stays NaN in tf32's bits");
    H_CHECK(isinf(tf32_round(INFINITY)), "inf");
    H_CHECK(isnan(tf32_round(NAN)), "nan");
    Scalar v = { .f = bits_f32(0x3f801000u) };
    Scalar t = scalar_convert(DT_F32, DT_TF32, v);
    H_CHECK(f32_bits((float)t.f) == 0x3f800000u, "astype(tf32) rounds as cvt.rn");
}

static void t_float_to_int(void) {
    Scalar s;
    s.f = 3e9;
    H_CHECK(scalar_convert(DT_F32, DT_I32, s).i == INT32_MAX, "saturate high");
    s.f = -3e9;
    H_CHECK(scalar_convert(DT_F32, DT_I32, s).i == INT32_MIN, "saturate low");
    s.f = NAN;
    H_CHECK(scalar_convert(DT_F32, DT_I32, s).i == 0, "nan -> 0");
    s.f = -2.7;
    H_CHECK(scalar_convert(DT_F32, DT_I32, s).i == -2, "truncate toward zero");
    s.f = -5;
    H_CHECK(scalar_convert(DT_F32, DT_U8, s).u == 0, "negative to unsigned saturates at 0");
    s.f = 300;
    H_CHECK(scalar_convert(DT_F32, DT_U8, s).u == 255, "u8 saturates at 255");
    s.f = 200;
    H_CHECK(scalar_convert(DT_F32, DT_I8, s).i == 127, "i8 saturates at 127");
    s.f = INFINITY;
    H_CHECK(scalar_convert(DT_F32, DT_I64, s).i == INT64_MAX, "inf -> i64 max");
    s.f = 0.5;
    H_CHECK(scalar_convert(DT_F32, DT_BOOL, s).i == 1, "0.5 -> true");
}

static void t_int_ops(void) {
    Scalar a, b;
    bool fault = false;
    a.i = 127; b.i = 1;
    H_CHECK(scalar_binary(OP_ADD, DT_I8, a, b, NULL).i == -128, "i8 wraps");
    a.i = -7; b.i = 2;
    H_CHECK(scalar_binary(OP_DIV, DT_I32, a, b, NULL).i == -3, "-7/2 truncates to -3");
    H_CHECK(scalar_binary(OP_MOD, DT_I32, a, b, NULL).i == -1, "-7%%2 = -1");
    H_CHECK(scalar_binary(OP_CDIV, DT_I32, a, b, NULL).i == -3, "cdiv(-7,2) = -3");
    a.i = 7;
    H_CHECK(scalar_binary(OP_CDIV, DT_I32, a, b, NULL).i == 4, "cdiv(7,2) = 4");
    b.i = 0;
    H_CHECK(scalar_binary(OP_DIV, DT_I32, a, b, &fault).i == 0 && fault, "division by zero gives 0");
    a.i = INT32_MIN; b.i = -1;
    H_CHECK(scalar_binary(OP_DIV, DT_I32, a, b, NULL).i == INT32_MIN, "INT_MIN / -1 wraps");
    a.u = 0xf0000000u; b.u = 4;
    H_CHECK(scalar_binary(OP_SHR, DT_U32, a, b, NULL).u == 0x0f000000u, "logical shift right");
    a.i = -16; b.i = 2;
    H_CHECK(scalar_binary(OP_SHR, DT_I32, a, b, NULL).i == -4, "arithmetic shift right");
    a.i = 1; b.i = 40;
    H_CHECK(scalar_binary(OP_SHL, DT_I32, a, b, NULL).i == 0, "shift past the width gives 0");
    a.u = 200; b.u = 100;
    H_CHECK(scalar_binary(OP_ADD, DT_U8, a, b, NULL).u == 44, "u8 wraps");
    a.i = 5;
    H_CHECK(scalar_unary(OP_BITNOT, DT_I32, a).i == -6, "~5");
    Scalar x = { .f = NAN }, y = { .f = 1 };
    H_CHECK(isnan(scalar_binary(OP_MAXIMUM, DT_F32, x, y, NULL).f), "maximum propagates nan");
    H_CHECK(scalar_binary(OP_LT, DT_F32, x, y, NULL).i == 0, "nan < 1 is false");
    H_CHECK(scalar_binary(OP_NE, DT_F32, x, x, NULL).i == 1, "nan != nan");
}

static void t_f16_arith(void) {
    /* f16 arithmetic rounds each result: 2048 + 1 = 2048 in f16 */
    Scalar a = { .f = 2048 }, b = { .f = 1 };
    H_CHECK(scalar_binary(OP_ADD, DT_F16, a, b, NULL).f == 2048, "f16 add rounds");
    Scalar c = { .f = 256 }, d = { .f = 1 };
    H_CHECK(scalar_binary(OP_ADD, DT_BF16, c, d, NULL).f == 256, "bf16 add rounds");
    Scalar i = { .i = 2049 };
    H_CHECK(scalar_convert(DT_I32, DT_F16, i).f == 2048, "i32 2049 -> f16 2048 (tie to even)");
    i.i = 2051;
    H_CHECK(scalar_convert(DT_I32, DT_F16, i).f == 2052, "i32 2051 -> f16 2052");
    i.i = 100000;
    H_CHECK(isinf(scalar_convert(DT_I32, DT_F16, i).f), "i32 100000 -> f16 inf");
}

int main(void) {
    H_RUN_TEST(t_bf16);
    H_RUN_TEST(t_f16);
    H_RUN_TEST(t_tf32);
    H_RUN_TEST(t_float_to_int);
    H_RUN_TEST(t_int_ops);
    H_RUN_TEST(t_f16_arith);
    return h_finish();
}
