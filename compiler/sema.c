/* sema.c: the type rules of the tile language (see sema.h).
 *
 * Choices made where the spec is silent (copied into docs/language.md):
 *  - Promotion (section 3): bool < integers < floats.  A float with an integer
 *    gives the float (i64 + f16 -> f16).  Among floats the wider wins, and
 *    f16 with bf16 gives f32.  Among integers of one signedness the wider wins;
 *    signed with unsigned picks the smallest type holding both, NumPy-like
 *    (i32 + u16 -> i32, i8 + u32 -> i64); signed with unsigned of the same
 *    width (i32 + u32, the spec's rule) and u64 with any signed integer are
 *    errors naming both dtypes.
 *  - Loose literals: an integer literal takes the other operand's dtype; a
 *    float literal takes a float operand's dtype and makes an integer or bool
 *    operand f32 (i32 + 1.5 -> f32); an integer literal beside a bool is i32.
 *    Alone, an integer literal is i32 (i64 if its value does not fit) and a
 *    float literal f32.
 *  - Arithmetic (+ - * / % maximum minimum pow) on two bools computes in i32.
 *    Shifts keep the left operand's dtype; the count is converted to it.
 *  - exp/log/sqrt/... of an integer tile convert it to f32 first.
 *  - sum/prod/cumsum/cumprod of bool count in i32; otherwise reductions keep
 *    the dtype (sum of i8 stays i8 and wraps, as on the GPU).
 *  - tf32 values may only be mma operands, astype sources/targets and shape-op
 *    operands (reshape, permute, ...); any arithmetic on them is an error.
 *  - a @ b converts both operands to their common dtype; floats accumulate in
 *    f32, i8 in i32; other dtypes (f64, wider integers) are errors.
 *  - One tile holds at most 2^20 elements. */
#include "sema.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static const char *tf32_hint = "tf32 values can only be mma operands (convert with astype)";

/* ---- dtypes ----------------------------------------------------------- */

DType sema_promote(DType a, DType b) {
    if (a == DT_TF32 || b == DT_TF32) return DT_INVALID;
    if (a == b) return a;
    if (a == DT_BOOL) return b;
    if (b == DT_BOOL) return a;
    bool fa = dtype_is_float(a), fb = dtype_is_float(b);
    if (fa && fb) {
        if ((a == DT_F16 && b == DT_BF16) || (a == DT_BF16 && b == DT_F16)) return DT_F32;
        return dtype_bits(a) >= dtype_bits(b) ? a : b;
    }
    if (fa) return a;
    if (fb) return b;
    bool ua = dtype_is_unsigned(a), ub = dtype_is_unsigned(b);
    if (ua == ub) return dtype_bits(a) >= dtype_bits(b) ? a : b;
    DType s = ua ? b : a, u = ua ? a : b;
    if (dtype_bits(s) > dtype_bits(u)) return s;
    if (dtype_bits(s) == dtype_bits(u)) return DT_INVALID;   /* the spec's rule */
    /* the unsigned one is wider: the next wider signed type holds both */
    switch (dtype_bits(u)) {
    case 16: return DT_I32;
    case 32: return DT_I64;
    default: return DT_INVALID;
    }
}

bool sema_check_promote(Diag *d, Loc loc, const char *what, DType a, DType b, DType *out) {
    if (a == DT_TF32 || b == DT_TF32) {
        diag_error(d, loc, "%s of %s and %s: %s", what, dtype_name(a), dtype_name(b), tf32_hint);
        return false;
    }
    DType r = sema_promote(a, b);
    if (r == DT_INVALID) {
        diag_error(d, loc, "%s of %s and %s: mixing signed and unsigned integers needs an explicit astype",
                   what, dtype_name(a), dtype_name(b));
        return false;
    }
    *out = r;
    return true;
}

DType sema_loose_dtype(DType other, bool literal_is_float) {
    if (dtype_is_float(other)) return other;
    if (literal_is_float) return DT_F32;
    if (other == DT_BOOL) return DT_I32;
    return other;
}

DType sema_default_dtype(bool literal_is_float, int64_t ival) {
    if (literal_is_float) return DT_F32;
    return (ival >= INT32_MIN && ival <= INT32_MAX) ? DT_I32 : DT_I64;
}

/* ---- shapes ----------------------------------------------------------- */

bool sema_broadcast_shapes(const Type *a, const Type *b, Type *out) {
    int rank = a->rank > b->rank ? a->rank : b->rank;
    int shape[TILE_MAX_RANK];
    for (int i = 0; i < rank; i++) {
        int ia = i - (rank - a->rank), ib = i - (rank - b->rank);
        int ea = ia >= 0 ? a->shape[ia] : 1, eb = ib >= 0 ? b->shape[ib] : 1;
        if (ea != eb && ea != 1 && eb != 1) return false;
        shape[i] = ea == 1 ? eb : ea;
    }
    out->rank = rank;
    for (int i = 0; i < rank; i++) out->shape[i] = shape[i];
    for (int i = rank; i < TILE_MAX_RANK; i++) out->shape[i] = 0;
    return true;
}

bool sema_check_broadcast(Diag *d, Loc loc, const Type *a, const Type *b, Type *out) {
    if (sema_broadcast_shapes(a, b, out)) return true;
    char sa[200], sb[200];
    diag_error(d, loc, "cannot broadcast %s with %s", type_str(a, sa, sizeof sa), type_str(b, sb, sizeof sb));
    return false;
}

bool sema_broadcasts_to(const Type *from, const Type *to) {
    if (from->rank > to->rank) return false;
    for (int i = 0; i < from->rank; i++) {
        int e = from->shape[i], t = to->shape[i + to->rank - from->rank];
        if (e != t && e != 1) return false;
    }
    return true;
}

bool sema_check_tile_shape(Diag *d, Loc loc, int rank, const int64_t *shape) {
    char buf[200];
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; i < rank && k < sizeof buf; i++)
        k += (size_t)snprintf(buf + k, sizeof buf - k, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (rank > TILE_MAX_RANK) {
        diag_error(d, loc, "tile of rank %d: at most %d dimensions", rank, TILE_MAX_RANK);
        return false;
    }
    int64_t total = 1;
    for (int i = 0; i < rank; i++) {
        if (!is_pow2(shape[i])) {
            diag_error(d, loc, "tile extent %lld in shape [%s] is not a power of two",
                       (long long)shape[i], buf);
            return false;
        }
        total *= shape[i];
        if (total > SEMA_MAX_TILE_ELEMS) {
            diag_error(d, loc, "tile of shape [%s] is too large: at most %d elements per tile",
                       buf, SEMA_MAX_TILE_ELEMS);
            return false;
        }
    }
    return true;
}

bool sema_check_axis(Diag *d, Loc loc, const char *what, int64_t axis, int rank, int *out) {
    if (axis < -rank || axis >= rank) {
        if (rank == 0)
            diag_error(d, loc, "%s: axis %lld of a scalar (it has no axes)", what, (long long)axis);
        else
            diag_error(d, loc, "%s: axis %lld is out of range for rank %d (use %d..%d)", what,
                       (long long)axis, rank, -rank, rank - 1);
        return false;
    }
    *out = (int)(axis < 0 ? axis + rank : axis);
    return true;
}

bool sema_check_permutation(Diag *d, Loc loc, const char *what, int n, const int64_t *axes,
                            int rank, int *out) {
    if (n != rank) {
        diag_error(d, loc, "%s: %d axes given for rank %d", what, n, rank);
        return false;
    }
    bool seen[TILE_MAX_RANK] = {false};
    for (int i = 0; i < n; i++) {
        int ax;
        if (!sema_check_axis(d, loc, what, axes[i], rank, &ax)) return false;
        if (seen[ax]) {
            diag_error(d, loc, "%s: axis %d appears twice (need a permutation of 0..%d)", what, ax, rank - 1);
            return false;
        }
        seen[ax] = true;
        out[i] = ax;
    }
    return true;
}

/* ---- element-wise ops ------------------------------------------------- */

bool sema_unary(Diag *d, Loc loc, OpId op, const char *spelling, DType in,
                DType *operand, DType *result) {
    char name[64];   /* operators are quoted: '-' needs ..., exp needs ... */
    snprintf(name, sizeof name, isalpha((unsigned char)spelling[0]) ? "%s" : "'%s'", spelling);
    if (in == DT_TF32) {
        diag_error(d, loc, "%s of tf32: %s", name, tf32_hint);
        return false;
    }
    *operand = *result = in;
    switch (ir_op_info[op].rule) {
    case RULE_UNARY_NUM:
        if (in == DT_BOOL) {
            diag_error(d, loc, "%s needs a numeric operand, got bool", name);
            return false;
        }
        return true;
    case RULE_UNARY_BOOL:
        if (in != DT_BOOL) {
            diag_error(d, loc, "%s needs a bool operand, got %s", name, dtype_name(in));
            return false;
        }
        return true;
    case RULE_UNARY_INT:
        if (!dtype_is_int(in)) {
            diag_error(d, loc, "%s needs an integer operand, got %s", name, dtype_name(in));
            return false;
        }
        return true;
    case RULE_UNARY_FLOAT:
        if (!dtype_is_float(in)) *operand = *result = DT_F32;
        return true;
    case RULE_ISNAN:
        if (!dtype_is_float(in)) {
            diag_error(d, loc, "%s needs a float operand, got %s", name, dtype_name(in));
            return false;
        }
        *result = DT_BOOL;
        return true;
    default:
        return true;
    }
}

bool sema_binary(Diag *d, Loc loc, OpId op, const char *name, DType a, DType b,
                 DType *operand, DType *result) {
    OpRule rule = ir_op_info[op].rule;
    if (rule == RULE_LOGICAL) {
        if (a != DT_BOOL || b != DT_BOOL) {
            diag_error(d, loc, "'%s' needs bool operands, got %s and %s", name, dtype_name(a), dtype_name(b));
            return false;
        }
        *operand = *result = DT_BOOL;
        return true;
    }
    if (rule == RULE_SHIFT) {
        if (!dtype_is_int(a) || !dtype_is_int(b)) {
            diag_error(d, loc, "'%s' needs integer operands, got %s and %s", name, dtype_name(a), dtype_name(b));
            return false;
        }
        *operand = *result = a;
        return true;
    }
    DType p;
    char what[64];
    snprintf(what, sizeof what, "'%s'", name);
    if (!sema_check_promote(d, loc, what, a, b, &p)) return false;
    switch (rule) {
    case RULE_ARITH:
        if (p == DT_BOOL) p = DT_I32;
        break;
    case RULE_INT_ARITH:
        if (!dtype_is_int(p)) {
            diag_error(d, loc, "%s needs integer operands, got %s and %s", name, dtype_name(a), dtype_name(b));
            return false;
        }
        break;
    case RULE_BITWISE:
        if (dtype_is_float(p)) {
            diag_error(d, loc, "'%s' needs integer or bool operands, got %s and %s", name,
                       dtype_name(a), dtype_name(b));
            return false;
        }
        break;
    default:
        break;
    }
    *operand = p;
    *result = rule == RULE_COMPARE ? DT_BOOL : p;
    return true;
}

/* ---- reductions ------------------------------------------------------- */

bool sema_reduce(Diag *d, Loc loc, OpId op, DType in, DType *operand, DType *result) {
    const char *name = ir_op_info[op].builtin;
    if (in == DT_TF32) {
        diag_error(d, loc, "%s of tf32: %s", name, tf32_hint);
        return false;
    }
    *operand = in;
    if (in == DT_BOOL && (op == OP_REDUCE_SUM || op == OP_REDUCE_PROD || op == OP_CUMSUM || op == OP_CUMPROD))
        *operand = DT_I32;
    *result = (op == OP_ARGMAX || op == OP_ARGMIN) ? DT_I32 : *operand;
    return true;
}

/* ---- matrix ----------------------------------------------------------- */

static bool mma_acc_ok(DType op, DType acc) {
    switch (op) {
    case DT_F16: return acc == DT_F16 || acc == DT_F32;
    case DT_BF16: case DT_TF32: case DT_F32: return acc == DT_F32;
    case DT_I8: return acc == DT_I32;
    default: return false;
    }
}

/* Ranks 2 or 3, equal batch extents: shared by mma and @. */
static bool check_matrix_shapes(Diag *d, Loc loc, const char *what, const Type *a, const Type *b) {
    char sa[200], sb[200];
    type_str(a, sa, sizeof sa);
    type_str(b, sb, sizeof sb);
    if (a->rank < 2 || a->rank > 3 || a->rank != b->rank) {
        diag_error(d, loc, "%s of %s and %s: operands must both be [M, K] and [K, N] (or with one leading batch dimension)",
                   what, sa, sb);
        return false;
    }
    int r = a->rank;
    if (a->shape[r - 1] != b->shape[r - 2] || (r == 3 && a->shape[0] != b->shape[0])) {
        diag_error(d, loc, "%s of %s and %s: inner dimensions do not match", what, sa, sb);
        return false;
    }
    return true;
}

bool sema_mma(Diag *d, Loc loc, const Type *a, const Type *b, const Type *acc) {
    if (!check_matrix_shapes(d, loc, "mma", a, b)) return false;
    char sa[200], sb[200], sc[200];
    type_str(a, sa, sizeof sa);
    type_str(b, sb, sizeof sb);
    type_str(acc, sc, sizeof sc);
    if (a->dtype != b->dtype) {
        diag_error(d, loc, "mma operands must have the same dtype, got %s and %s", sa, sb);
        return false;
    }
    int r = a->rank;
    if (acc->rank != r || acc->shape[r - 2] != a->shape[r - 2] || acc->shape[r - 1] != b->shape[r - 1] ||
        (r == 3 && acc->shape[0] != a->shape[0])) {
        diag_error(d, loc, "mma accumulator %s does not match %s @ %s", sc, sa, sb);
        return false;
    }
    if (!mma_acc_ok(a->dtype, acc->dtype)) {
        if (!mma_acc_ok(a->dtype, DT_F32) && !mma_acc_ok(a->dtype, DT_I32))
            diag_error(d, loc, "mma does not take %s operands (use f16, bf16, tf32, f32 or i8)", dtype_name(a->dtype));
        else
            diag_error(d, loc, "mma with %s operands cannot accumulate in %s (use %s)", dtype_name(a->dtype),
                       dtype_name(acc->dtype), a->dtype == DT_F16 ? "f16 or f32" : a->dtype == DT_I8 ? "i32" : "f32");
        return false;
    }
    return true;
}

bool sema_matmul(Diag *d, Loc loc, const Type *a, const Type *b, DType *operand, Type *result) {
    if (!check_matrix_shapes(d, loc, "'@'", a, b)) return false;
    DType p = a->dtype;
    if (a->dtype != b->dtype) {
        /* tf32 only mixes with itself */
        if (!sema_check_promote(d, loc, "'@'", a->dtype, b->dtype, &p)) return false;
    }
    DType acc;
    if (p == DT_F16 || p == DT_BF16 || p == DT_TF32 || p == DT_F32) acc = DT_F32;
    else if (p == DT_I8) acc = DT_I32;
    else {
        diag_error(d, loc, "'@' does not take %s operands (use f16, bf16, tf32, f32 or i8)", dtype_name(p));
        return false;
    }
    int r = a->rank;
    *operand = p;
    *result = *a;
    result->dtype = acc;
    result->shape[r - 1] = b->shape[r - 1];
    return true;
}

/* ---- shape ops -------------------------------------------------------- */

static void set_shape(Type *t, DType dt, int rank, const int64_t *shape) {
    memset(t, 0, sizeof *t);
    t->dtype = dt;
    t->rank = rank;
    for (int i = 0; i < rank; i++) t->shape[i] = (int)shape[i];
}

bool sema_reshape(Diag *d, Loc loc, const Type *in, int n, const int64_t *req, Type *out) {
    char sa[200];
    type_str(in, sa, sizeof sa);
    if (n > TILE_MAX_RANK) {
        diag_error(d, loc, "reshape: rank %d is more than %d", n, TILE_MAX_RANK);
        return false;
    }
    int64_t shape[TILE_MAX_RANK], known = 1;
    int wild = -1;
    for (int i = 0; i < n; i++) {
        shape[i] = req[i];
        if (req[i] == -1) {
            if (wild >= 0) {
                diag_error(d, loc, "reshape: -1 may appear only once");
                return false;
            }
            wild = i;
        } else if (req[i] <= 0) {
            diag_error(d, loc, "reshape: extent %lld is not positive", (long long)req[i]);
            return false;
        } else {
            known *= req[i];
            if (known > SEMA_MAX_TILE_ELEMS) break;
        }
    }
    int64_t numel = type_numel(in);
    if (wild >= 0) {
        if (known == 0 || numel % known != 0) {
            diag_error(d, loc, "reshape: cannot infer -1 reshaping %s (%lld elements)", sa, (long long)numel);
            return false;
        }
        shape[wild] = numel / known;
        known = numel;
    }
    if (known != numel) {
        char sb[200];
        Type want;
        set_shape(&want, in->dtype, n, shape);
        diag_error(d, loc, "cannot reshape %s to %s: element counts differ", sa,
                   shape_str(n, want.shape, sb, sizeof sb));
        return false;
    }
    if (!sema_check_tile_shape(d, loc, n, shape)) return false;
    set_shape(out, in->dtype, n, shape);
    return true;
}

bool sema_broadcast_to(Diag *d, Loc loc, const Type *in, int n, const int64_t *shape, Type *out) {
    if (!sema_check_tile_shape(d, loc, n, shape)) return false;
    Type t;
    set_shape(&t, in->dtype, n, shape);
    if (!sema_broadcasts_to(in, &t)) {
        char sa[200], sb[200];
        diag_error(d, loc, "cannot broadcast %s to %s", type_str(in, sa, sizeof sa),
                   shape_str(t.rank, t.shape, sb, sizeof sb));
        return false;
    }
    *out = t;
    return true;
}

bool sema_extract(Diag *d, Loc loc, const Type *in, int nidx, const int64_t *index,
                  int nshape, const int64_t *shape, Type *out) {
    char sa[200];
    type_str(in, sa, sizeof sa);
    if (nidx != in->rank || nshape != in->rank) {
        diag_error(d, loc, "extract from %s needs %d index and %d shape entries, got %d and %d", sa,
                   in->rank, in->rank, nidx, nshape);
        return false;
    }
    if (!sema_check_tile_shape(d, loc, nshape, shape)) return false;
    for (int i = 0; i < in->rank; i++) {
        if (shape[i] > in->shape[i] || in->shape[i] % shape[i] != 0) {
            diag_error(d, loc, "extract: extent %lld does not divide dimension %d of %s", (long long)shape[i], i, sa);
            return false;
        }
        int64_t count = in->shape[i] / shape[i];
        if (index[i] < 0 || index[i] >= count) {
            diag_error(d, loc, "extract: index %lld on dimension %d is outside 0..%lld of %s", (long long)index[i], i,
                       (long long)(count - 1), sa);
            return false;
        }
    }
    set_shape(out, in->dtype, nshape, shape);
    return true;
}

bool sema_cat(Diag *d, Loc loc, const Type *a, const Type *b, int64_t axis, Type *out, int *axis_out) {
    char sa[200], sb[200];
    type_str(a, sa, sizeof sa);
    type_str(b, sb, sizeof sb);
    if (a->dtype != b->dtype) {
        diag_error(d, loc, "cat of %s and %s: dtypes differ (use astype)", sa, sb);
        return false;
    }
    if (a->rank != b->rank || a->rank == 0) {
        diag_error(d, loc, "cat of %s and %s: need tiles of the same rank", sa, sb);
        return false;
    }
    int ax;
    if (!sema_check_axis(d, loc, "cat", axis, a->rank, &ax)) return false;
    for (int i = 0; i < a->rank; i++)
        if (i != ax && a->shape[i] != b->shape[i]) {
            diag_error(d, loc, "cat of %s and %s along axis %d: other extents differ", sa, sb, ax);
            return false;
        }
    int64_t shape[TILE_MAX_RANK];
    for (int i = 0; i < a->rank; i++) shape[i] = a->shape[i];
    shape[ax] = (int64_t)a->shape[ax] + b->shape[ax];
    if (!sema_check_tile_shape(d, loc, a->rank, shape)) return false;
    set_shape(out, a->dtype, a->rank, shape);
    *axis_out = ax;
    return true;
}
