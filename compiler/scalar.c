/* scalar.c: one element's numerics (see scalar.h). */
#include "scalar.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- bit-exact 16-bit and tf32 conversions ---------------------------- */

static uint32_t f32_bits(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }
static float bits_f32(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }

uint16_t f32_to_bf16_bits(float x) {
    uint32_t u = f32_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);   /* round to nearest even */
    return (uint16_t)((u + rounding) >> 16);
}

float bf16_bits_to_f32(uint16_t b) { return bits_f32((uint32_t)b << 16); }

float f16_bits_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1f) return bits_f32(sign | 0x7f800000u | (man << 13));   /* inf / nan */
    if (exp == 0) {                                                       /* zero / subnormal */
        float v = ldexpf((float)man, -24);
        return sign ? -v : v;
    }
    return bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

uint16_t f64_to_f16_bits(double x) {
    uint16_t sign = signbit(x) ? 0x8000u : 0;
    if (isnan(x)) return 0x7e00u;
    double a = fabs(x);
    if (a >= 65520.0) return sign | 0x7c00u;          /* rounds to infinity */
    if (a < ldexp(1.0, -14)) {                         /* subnormal: units of 2^-24 */
        double q = a * ldexp(1.0, 24);
        double r = nearbyint(q);                       /* default mode: ties to even */
        return sign | (uint16_t)r;                     /* r may be 1024 = smallest normal */
    }
    int e;
    double m = frexp(a, &e);                           /* a = m * 2^e, m in [0.5, 1) */
    double q = nearbyint(ldexp(m, 11));                /* 11 significant bits */
    if (q >= 2048.0) { q /= 2; e++; }
    int biased = e - 1 + 15;
    if (biased >= 31) return sign | 0x7c00u;
    return sign | (uint16_t)(biased << 10) | ((uint16_t)q & 0x3ffu);
}

uint16_t f32_to_f16_bits(float x) { return f64_to_f16_bits((double)x); }

float tf32_round(float x) {
    uint32_t u = f32_bits(x);
    if ((u & 0x7f800000u) == 0x7f800000u)               /* inf unchanged; NaN quiet, its low 13 bits */
        return (u & 0x7fffffu) ? bits_f32((u | 0x400000u) & 0xffffe000u) : x;   /* dropped (so still NaN) */
    u += 0xfffu + ((u >> 13) & 1u);                     /* just under half the dropped 13 bits, */
    u &= 0xffffe000u;                                   /* a half more where the kept ones are odd: ties to even */
    return bits_f32(u);
}

/* A tf32 array's element: its f32 word with the low 13 mantissa bits
 * dropped, as the tensor cores read it (a word a tf32 store wrote, rounded by
 * astype, reads back unchanged; a NaN whose payload lay in those bits alone
 * reads as an infinity, as it does there). */
float tf32_word(float x) { return bits_f32(f32_bits(x) & 0xffffe000u); }

/* ---- canonical forms -------------------------------------------------- */

static double round_float(DType dt, double x) {
    switch (dt) {
    case DT_F64: return x;
    case DT_F32: return (double)(float)x;
    case DT_TF32: return (double)tf32_round((float)x);
    case DT_BF16: return (double)bf16_bits_to_f32(f32_to_bf16_bits((float)x));
    case DT_F16: return (double)f16_bits_to_f32(f64_to_f16_bits(x));
    default: return x;
    }
}

Scalar scalar_canon(DType dt, Scalar v) {
    Scalar r;
    switch (dt) {
    case DT_BOOL: r.i = v.i != 0; break;
    case DT_I8: r.i = (int8_t)v.i; break;
    case DT_I16: r.i = (int16_t)v.i; break;
    case DT_I32: r.i = (int32_t)v.i; break;
    case DT_I64: r.i = v.i; break;
    case DT_U8: r.u = (uint8_t)v.u; break;
    case DT_U16: r.u = (uint16_t)v.u; break;
    case DT_U32: r.u = (uint32_t)v.u; break;
    case DT_U64: r.u = v.u; break;
    default: r.f = round_float(dt, v.f); break;
    }
    return r;
}

Scalar scalar_from_int(DType dt, int64_t x) {
    Scalar v;
    if (dtype_is_float(dt)) { v.f = (double)x; return scalar_canon(dt, v); }
    v.i = x;
    return scalar_canon(dt, v);
}

/* Float -> integer as cvt.rzi.sat: truncate, saturate at the dtype's range, NaN -> 0. */
static Scalar float_to_int(DType dt, double x) {
    Scalar v;
    if (dt == DT_BOOL) { v.i = x != 0; return v; }
    if (isnan(x)) { v.i = 0; return v; }
    x = trunc(x);
    if (dtype_is_unsigned(dt)) {
        double hi = ldexp(1.0, dtype_bits(dt)) - 1;
        if (x <= 0) v.u = 0;
        else if (x >= hi) v.u = dt == DT_U64 ? UINT64_MAX : (uint64_t)hi;
        else v.u = (uint64_t)x;
        return v;
    }
    int bits = dtype_bits(dt);
    double hi = ldexp(1.0, bits - 1);     /* exclusive */
    if (x >= hi) v.i = bits == 64 ? INT64_MAX : (int64_t)hi - 1;
    else if (x < -hi) v.i = bits == 64 ? INT64_MIN : -(int64_t)hi;
    else v.i = (int64_t)x;
    return v;
}

Scalar scalar_from_double(DType dt, double x) {
    if (dtype_is_float(dt)) { Scalar v; v.f = x; return scalar_canon(dt, v); }
    return float_to_int(dt, x);
}

double scalar_to_double(DType dt, Scalar v) {
    if (dtype_is_float(dt)) return v.f;
    if (dtype_is_unsigned(dt)) return (double)v.u;
    return (double)v.i;
}

Scalar scalar_convert(DType from, DType to, Scalar v) {
    if (dtype_is_float(to)) {
        Scalar r;
        /* Integers convert with one rounding; floats round from their exact value. */
        r.f = dtype_is_unsigned(from) ? (double)v.u : dtype_is_float(from) ? v.f : (double)v.i;
        if (to == DT_F16 && !dtype_is_float(from))
            r.f = (double)f16_bits_to_f32(f64_to_f16_bits(r.f));
        return scalar_canon(to, r);
    }
    if (dtype_is_float(from)) return float_to_int(to, v.f);
    if (to == DT_BOOL) { Scalar r; r.i = v.i != 0; return r; }
    /* integer -> integer: two's-complement wrap (sign- or zero-extension first) */
    Scalar r;
    r.i = v.i;
    return scalar_canon(to, r);
}

bool scalar_is_true(DType dt, Scalar v) {
    if (dtype_is_float(dt)) return v.f != 0;
    return v.i != 0;
}

/* ---- element-wise ops ------------------------------------------------- */

static Scalar mk_bool(bool b) { Scalar r; r.i = b; return r; }
static Scalar mk_f(DType dt, double x) { Scalar r; r.f = x; return scalar_canon(dt, r); }

Scalar scalar_unary(OpId op, DType dt, Scalar a) {
    if (op == OP_ISNAN) return mk_bool(dtype_is_float(dt) && isnan(a.f));
    if (op == OP_NOT) return mk_bool(!scalar_is_true(dt, a));
    if (dtype_is_float(dt)) {
        double x = a.f;
        switch (op) {
        case OP_NEG: return mk_f(dt, -x);
        case OP_ABS: return mk_f(dt, fabs(x));
        case OP_EXP: return mk_f(dt, exp(x));
        case OP_EXP2: return mk_f(dt, exp2(x));
        case OP_LOG: return mk_f(dt, log(x));
        case OP_LOG2: return mk_f(dt, log2(x));
        case OP_SQRT: return mk_f(dt, sqrt(x));
        case OP_RSQRT: return mk_f(dt, 1.0 / sqrt(x));
        case OP_FLOOR: return mk_f(dt, floor(x));
        case OP_CEIL: return mk_f(dt, ceil(x));
        case OP_SIN: return mk_f(dt, sin(x));
        case OP_COS: return mk_f(dt, cos(x));
        case OP_TANH: return mk_f(dt, tanh(x));
        case OP_SIGMOID: return mk_f(dt, 1.0 / (1.0 + exp(-x)));
        default: return a;
        }
    }
    Scalar r = a;
    switch (op) {
    case OP_NEG: r.u = 0 - a.u; break;
    case OP_ABS: if (!dtype_is_unsigned(dt) && a.i < 0) r.u = 0 - a.u; break;
    case OP_BITNOT: r.u = ~a.u; break;
    default: break;
    }
    return scalar_canon(dt, r);
}

static int cmp_values(DType dt, Scalar a, Scalar b) {
    if (dtype_is_float(dt)) return a.f < b.f ? -1 : a.f > b.f ? 1 : 0;
    if (dtype_is_unsigned(dt)) return a.u < b.u ? -1 : a.u > b.u ? 1 : 0;
    return a.i < b.i ? -1 : a.i > b.i ? 1 : 0;
}

static Scalar int_pow(DType dt, Scalar a, Scalar b) {
    Scalar r;
    r.u = 1;
    if (!dtype_is_unsigned(dt) && b.i < 0) {
        /* only 1 and -1 have integer reciprocals */
        r.i = a.i == 1 ? 1 : a.i == -1 ? ((b.i & 1) ? -1 : 1) : 0;
        return scalar_canon(dt, r);
    }
    uint64_t base = a.u, e = b.u;
    while (e) {                 /* wrapping multiply: unsigned arithmetic is defined */
        if (e & 1) r.u *= base;
        base *= base;
        e >>= 1;
    }
    return scalar_canon(dt, r);
}

Scalar scalar_binary(OpId op, DType dt, Scalar a, Scalar b, bool *fault) {
    switch (op) {
    case OP_LT: return mk_bool(cmp_values(dt, a, b) < 0 && !(dtype_is_float(dt) && (isnan(a.f) || isnan(b.f))));
    case OP_LE: return mk_bool(dtype_is_float(dt) ? a.f <= b.f : cmp_values(dt, a, b) <= 0);
    case OP_GT: return mk_bool(dtype_is_float(dt) ? a.f > b.f : cmp_values(dt, a, b) > 0);
    case OP_GE: return mk_bool(dtype_is_float(dt) ? a.f >= b.f : cmp_values(dt, a, b) >= 0);
    case OP_EQ: return mk_bool(dtype_is_float(dt) ? a.f == b.f : a.u == b.u);
    case OP_NE: return mk_bool(dtype_is_float(dt) ? a.f != b.f : a.u != b.u);
    case OP_LAND: return mk_bool(scalar_is_true(dt, a) && scalar_is_true(dt, b));
    case OP_LOR: return mk_bool(scalar_is_true(dt, a) || scalar_is_true(dt, b));
    default: break;
    }
    if (dtype_is_float(dt)) {
        double x = a.f, y = b.f;
        switch (op) {
        case OP_ADD: return mk_f(dt, x + y);
        case OP_SUB: return mk_f(dt, x - y);
        case OP_MUL: return mk_f(dt, x * y);
        case OP_DIV: return mk_f(dt, x / y);
        case OP_MOD: return mk_f(dt, fmod(x, y));
        case OP_MAXIMUM: return mk_f(dt, (isnan(x) || isnan(y)) ? NAN : (x > y ? x : y));
        case OP_MINIMUM: return mk_f(dt, (isnan(x) || isnan(y)) ? NAN : (x < y ? x : y));
        case OP_POW: return mk_f(dt, pow(x, y));
        default: return a;
        }
    }
    bool uns = dtype_is_unsigned(dt) || dt == DT_BOOL;
    int bits = dtype_bits(dt);
    Scalar r;
    r.u = 0;
    switch (op) {
    case OP_ADD: r.u = a.u + b.u; break;
    case OP_SUB: r.u = a.u - b.u; break;
    case OP_MUL: r.u = a.u * b.u; break;
    case OP_DIV:
    case OP_MOD:
    case OP_CDIV:
        if (b.u == 0) {
            if (fault) *fault = true;
            r.u = 0;
        } else if (uns) {
            uint64_t q = a.u / b.u, m = a.u % b.u;
            r.u = op == OP_DIV ? q : op == OP_MOD ? m : q + (m != 0);
        } else if (b.i == -1) {   /* avoid INT64_MIN / -1: wrap like the hardware */
            r.u = op == OP_MOD ? 0 : 0 - a.u;
        } else {
            int64_t q = a.i / b.i, m = a.i % b.i;
            if (op == OP_DIV) r.i = q;
            else if (op == OP_MOD) r.i = m;
            else r.i = q + (m != 0 && ((m > 0) == (b.i > 0)));   /* ceil division */
        }
        break;
    case OP_MAXIMUM: r = cmp_values(dt, a, b) >= 0 ? a : b; break;
    case OP_MINIMUM: r = cmp_values(dt, a, b) <= 0 ? a : b; break;
    case OP_POW: return int_pow(dt, a, b);
    case OP_BITAND: r.u = a.u & b.u; break;
    case OP_BITOR: r.u = a.u | b.u; break;
    case OP_BITXOR: r.u = a.u ^ b.u; break;
    case OP_SHL:
    case OP_SHR: {
        /* Shift counts are clamped to the width, as PTX shl/shr do. */
        uint64_t n = (!uns && b.i < 0) ? (uint64_t)bits : b.u;
        if (n > (uint64_t)bits) n = (uint64_t)bits;
        if (op == OP_SHL) r.u = n >= 64 ? 0 : a.u << n;
        else if (uns) r.u = n >= 64 ? 0 : a.u >> n;
        else r.i = n >= 64 ? (a.i < 0 ? -1 : 0) : (a.i >> n);   /* arithmetic */
        if (n >= (uint64_t)bits && op == OP_SHL) r.u = 0;
        if (n >= (uint64_t)bits && op == OP_SHR) r.i = uns ? 0 : (a.i < 0 ? -1 : 0);
        break;
    }
    default: return a;
    }
    return scalar_canon(dt, r);
}

/* ---- memory ----------------------------------------------------------- */

Scalar scalar_load(DType dt, const void *p) {
    Scalar v;
    v.u = 0;
    switch (dt) {
    case DT_BOOL: { uint8_t x; memcpy(&x, p, 1); v.i = x != 0; break; }
    case DT_I8: { int8_t x; memcpy(&x, p, 1); v.i = x; break; }
    case DT_I16: { int16_t x; memcpy(&x, p, 2); v.i = x; break; }
    case DT_I32: { int32_t x; memcpy(&x, p, 4); v.i = x; break; }
    case DT_I64: { memcpy(&v.i, p, 8); break; }
    case DT_U8: { uint8_t x; memcpy(&x, p, 1); v.u = x; break; }
    case DT_U16: { uint16_t x; memcpy(&x, p, 2); v.u = x; break; }
    case DT_U32: { uint32_t x; memcpy(&x, p, 4); v.u = x; break; }
    case DT_U64: { memcpy(&v.u, p, 8); break; }
    case DT_F16: { uint16_t x; memcpy(&x, p, 2); v.f = f16_bits_to_f32(x); break; }
    case DT_BF16: { uint16_t x; memcpy(&x, p, 2); v.f = bf16_bits_to_f32(x); break; }
    case DT_F32: { float x; memcpy(&x, p, 4); v.f = x; break; }
    case DT_TF32: { float x; memcpy(&x, p, 4); v.f = tf32_word(x); break; }
    case DT_F64: { memcpy(&v.f, p, 8); break; }
    default: break;
    }
    return v;
}

void scalar_store(DType dt, void *p, Scalar v) {
    switch (dt) {
    case DT_BOOL: case DT_I8: case DT_U8: { uint8_t x = (uint8_t)v.u; if (dt == DT_BOOL) x = v.i != 0; memcpy(p, &x, 1); break; }
    case DT_I16: case DT_U16: { uint16_t x = (uint16_t)v.u; memcpy(p, &x, 2); break; }
    case DT_I32: case DT_U32: { uint32_t x = (uint32_t)v.u; memcpy(p, &x, 4); break; }
    case DT_I64: case DT_U64: memcpy(p, &v.u, 8); break;
    case DT_F16: { uint16_t x = f64_to_f16_bits(v.f); memcpy(p, &x, 2); break; }
    case DT_BF16: { uint16_t x = f32_to_bf16_bits((float)v.f); memcpy(p, &x, 2); break; }
    case DT_F32: case DT_TF32: { float x = (float)v.f; memcpy(p, &x, 4); break; }
    case DT_F64: memcpy(p, &v.f, 8); break;
    default: break;
    }
}

void scalar_format(DType dt, Scalar v, char *buf, size_t n) {
    if (dt == DT_BOOL) snprintf(buf, n, "%s", v.i ? "true" : "false");
    else if (dtype_is_float(dt)) snprintf(buf, n, "%g", v.f);
    else if (dtype_is_unsigned(dt)) snprintf(buf, n, "%llu", (unsigned long long)v.u);
    else snprintf(buf, n, "%lld", (long long)v.i);
}
