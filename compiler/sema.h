/* sema.h: the type rules of the tile language (sema.c), called by the
 * lowering walk (lower.c).  Prefix: sema_.
 *
 * Every function here is pure typing: it looks at dtypes and shapes, never at
 * the AST or the IR.  The `check` functions report an error at `loc` (naming
 * both types where two meet) and return false; the caller then produces a
 * poison value so one mistake gives one message. */
#ifndef TILEC_SEMA_H
#define TILEC_SEMA_H

#include "base.h"
#include "ir.h"

/* The largest tile one value may hold: beyond this no block can keep it. */
#define SEMA_MAX_TILE_ELEMS (1 << 20)

/* ---- dtypes ----------------------------------------------------------- */

/* The common dtype of a binary operation (section 3), or DT_INVALID when
 * there is none (signed with unsigned of the same width, or tf32). */
DType sema_promote(DType a, DType b);
/* sema_promote with an error naming both dtypes; `what` names the operation. */
bool sema_check_promote(Diag *d, Loc loc, const char *what, DType a, DType b, DType *out);
/* The dtype a loose literal takes beside an operand of dtype `other`. */
DType sema_loose_dtype(DType other, bool literal_is_float);
/* The dtype of a loose literal standing alone: i32 (i64 if it does not fit), f32. */
DType sema_default_dtype(bool literal_is_float, int64_t ival);

/* ---- shapes ----------------------------------------------------------- */

/* NumPy broadcasting of two shapes into out->rank/out->shape (dtype untouched). */
bool sema_broadcast_shapes(const Type *a, const Type *b, Type *out);
bool sema_check_broadcast(Diag *d, Loc loc, const Type *a, const Type *b, Type *out);
/* Whether `from` broadcasts to exactly the shape of `to` (rank(from) <= rank(to)). */
bool sema_broadcasts_to(const Type *from, const Type *to);
/* Tile extents: compile-time powers of two, at most SEMA_MAX_TILE_ELEMS in all. */
bool sema_check_tile_shape(Diag *d, Loc loc, int rank, const int64_t *shape);
/* A Python-style axis (negative counts from the end) of a rank-`rank` tile. */
bool sema_check_axis(Diag *d, Loc loc, const char *what, int64_t axis, int rank, int *out);
/* A permutation of 0..rank-1 (negative entries allowed), e.g. permute / order. */
bool sema_check_permutation(Diag *d, Loc loc, const char *what, int n, const int64_t *axes,
                            int rank, int *out);

/* ---- element-wise ops ------------------------------------------------- */

/* One-operand ops (RULE_UNARY_*, ISNAN): the dtype the operand is converted to
 * first and the result dtype.  `name` is how the user wrote it ("exp", "-"). */
bool sema_unary(Diag *d, Loc loc, OpId op, const char *name, DType in,
                DType *operand, DType *result);
/* Two-operand ops (dtypes after loose literals were resolved). */
bool sema_binary(Diag *d, Loc loc, OpId op, const char *name, DType a, DType b,
                 DType *operand, DType *result);

/* ---- reductions, matrix, shape ops ------------------------------------ */

/* Reductions and scans: operand conversion (bool -> i32 for sum/prod/cumsum/
 * cumprod) and result dtype (i32 for argmax/argmin). */
bool sema_reduce(Diag *d, Loc loc, OpId op, DType in, DType *operand, DType *result);
/* mma(a, b, acc): shapes [.., M, K] @ [.., K, N] + [.., M, N] and the
 * operand -> accumulator dtype table of the spec. */
bool sema_mma(Diag *d, Loc loc, const Type *a, const Type *b, const Type *acc);
/* a @ b: the operand dtype (both converted to it) and the result type. */
bool sema_matmul(Diag *d, Loc loc, const Type *a, const Type *b, DType *operand, Type *result);
/* reshape: `req` may hold one -1; same element count; powers of two. */
bool sema_reshape(Diag *d, Loc loc, const Type *in, int n, const int64_t *req, Type *out);
bool sema_broadcast_to(Diag *d, Loc loc, const Type *in, int n, const int64_t *shape, Type *out);
/* extract: shape divides the tile, index (tile units) within it. */
bool sema_extract(Diag *d, Loc loc, const Type *in, int nidx, const int64_t *index,
                  int nshape, const int64_t *shape, Type *out);
/* cat((a, b), axis): same dtype and rank, same other extents. */
bool sema_cat(Diag *d, Loc loc, const Type *a, const Type *b, int64_t axis, Type *out, int *axis_out);

#endif
