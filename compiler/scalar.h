/* scalar.h: the numerics of one element, shared by constant evaluation
 * (lower.c), constant folding (fold.c) and the interpreter (interp.c), so the
 * three agree bit for bit.  Prefix: scalar_, and the f16/bf16/tf32 helpers.
 *
 * A Scalar holds one element of a known dtype:
 *   floats (f16 bf16 f32 f64 tf32): in .f, already rounded to the dtype;
 *   signed integers: in .i, sign-extended from the dtype's width;
 *   unsigned integers: in .u, zero-extended from the dtype's width;
 *   bool: .i is 0 or 1.
 */
#ifndef TILEC_SCALAR_H
#define TILEC_SCALAR_H

#include "base.h"
#include "ir.h"

typedef union Scalar {
    int64_t i;
    uint64_t u;
    double f;
} Scalar;

/* Bit-exact conversions, round to nearest even as the GPU's cvt.rn does;
 * NaN stays NaN, overflow goes to infinity. */
uint16_t f32_to_bf16_bits(float x);
float    bf16_bits_to_f32(uint16_t b);
uint16_t f32_to_f16_bits(float x);
float    f16_bits_to_f32(uint16_t h);
uint16_t f64_to_f16_bits(double x);      /* one rounding, straight from f64 */
/* f32 -> tf32 as cvt.rn.tf32.f32: round to nearest, ties to even, keeping 10
 * mantissa bits (the low 13 bits become zero); inf unchanged, NaN stays NaN
 * (quiet). */
float    tf32_round(float x);
float    tf32_word(float x);   /* a tf32 array element as read: low 13 bits dropped */

/* Rounds / wraps an arbitrary value into dtype `dt` (the canonical form above).
 * For floats `v.f` may be any double; for integers `v.i` any int64. */
Scalar scalar_canon(DType dt, Scalar v);
/* A double as an element of `dt` (floats rounded, integers truncated toward
 * zero and saturated, NaN -> 0, bool = (x != 0)). */
Scalar scalar_from_double(DType dt, double x);
Scalar scalar_from_int(DType dt, int64_t x);
double scalar_to_double(DType dt, Scalar v);
/* astype: convert v of dtype `from` to dtype `to`. */
Scalar scalar_convert(DType from, DType to, Scalar v);
bool   scalar_is_true(DType dt, Scalar v);     /* for bool conditions */

/* Element-wise ops of ops.def with one or two operands, all of dtype `dt`.
 * Comparisons and ISNAN return a bool Scalar.  Integer division or remainder
 * by zero gives 0 and sets *fault (when fault is non-NULL); nothing traps. */
Scalar scalar_unary(OpId op, DType dt, Scalar a);
Scalar scalar_binary(OpId op, DType dt, Scalar a, Scalar b, bool *fault);

/* Memory: read / write one element of dtype dt at p (dtype_size(dt) bytes). */
Scalar scalar_load(DType dt, const void *p);
void   scalar_store(DType dt, void *p, Scalar v);

/* Text of a scalar for printing ("1.5", "-3", "true"). */
void scalar_format(DType dt, Scalar v, char *buf, size_t n);

#endif
