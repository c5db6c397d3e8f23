/* interp.c: the interpreter of the tile IR (see interp.h), the oracle of every
 * GPU test and the CPU backend of the runtime.
 *
 * Every value of a block is a dense row-major buffer of Scalar (scalar.h), one
 * per IR value, zeroed on its first definition in a block and reused when a
 * loop defines it again; the buffers themselves are kept from block to block
 * (allocating them afresh in every block made the run's speed depend on how
 * malloc trims its heap).  Locals (`var`s) get a buffer each.  Blocks run one
 * after the other, x fastest, so atomics are plain read-modify-writes.
 *
 * Numerics (the GPU-like choices; docs/language.md repeats them):
 *  - element-wise ops go through scalar_unary / scalar_binary and casts through
 *    scalar_convert, so results match constant folding bit for bit;
 *  - sum / prod / cumsum / cumprod run in index order.  f32 (and tf32)
 *    accumulate in f32, rounding after each step; f16 and bf16 accumulate in
 *    f32 and round once to their dtype at the end (for scans: each output is
 *    the f32 running value rounded once); f64 in f64; integers wrap in their
 *    dtype;
 *  - max / min and maximum / minimum propagate NaN; argmax / argmin return
 *    the first index of the extreme value, and a NaN counts as the extreme
 *    (the first NaN wins);
 *  - mma: float operands (f16 bf16 tf32 f32) are multiplied and accumulated
 *    with fmaf in f32, in k order, starting from the accumulator; the result
 *    is rounded once to the accumulator dtype (so an f16 accumulator rounds
 *    once at the end).  tf32 operands are values already rounded by CAST.
 *    i8 operands accumulate exactly into i32 (wrapping);
 *  - load / gather padding of an integer or bool array is 0 whatever the mode;
 *  - range(lo, hi, step) runs while i < hi, adding step; a runtime step <= 0
 *    runs no iteration (lowering rejects constant steps <= 0).
 */
#include "interp.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Largest tile the interpreter materialises (elements per value). */
#define INTERP_MAX_TILE_ELEMS ((int64_t)1 << 24)

typedef enum Flow { FLOW_NEXT, FLOW_BREAK, FLOW_CONTINUE, FLOW_RETURN, FLOW_ERROR } Flow;

typedef struct Interp {
    const IrFunc *f;
    const InterpArg *args;
    Scalar **vals;          /* per value: its buffer once defined in this block, else NULL */
    Scalar **bufs;          /* per value: its buffer of numel elements, kept across blocks */
    Scalar **locals;        /* per local: buffer, allocated at run start */
    int grid[3], bid[3];
    int64_t steps, max_steps;
    bool check_races;
    uint32_t **writer;      /* per param: the block (linear id + 1) that wrote each element, or 0 */
    uint32_t **reader;      /* per param the kernel writes: the block that read each element, 0 or several */
    bool *written;          /* per param: the kernel stores or scatters to it */
    FILE *out;
    char *err;
    size_t errlen;
    bool failed;
} Interp;

/* ---- errors --------------------------------------------------------------- */

static Flow fail(Interp *I, const IrOp *op, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static Flow fail(Interp *I, const IrOp *op, const char *fmt, ...) {
    if (I->failed) return FLOW_ERROR;
    I->failed = true;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!I->err || I->errlen == 0) return FLOW_ERROR;
    if (op && op->loc.file)
        snprintf(I->err, I->errlen, "kernel '%s': %s in block (%d, %d, %d) at %s:%d:%d",
                 I->f->name, msg, I->bid[0], I->bid[1], I->bid[2],
                 op->loc.file, op->loc.line, op->loc.col);
    else
        snprintf(I->err, I->errlen, "kernel '%s': %s in block (%d, %d, %d)", I->f->name, msg,
                 I->bid[0], I->bid[1], I->bid[2]);
    return FLOW_ERROR;
}

/* ---- values ------------------------------------------------------------- */

static const Type *vtype(const Interp *I, int v) { return &I->f->values[v].type; }
static int64_t vnumel(const Interp *I, int v) { return type_numel(vtype(I, v)); }

/* The buffer of operand k of op (already defined), or NULL after an error. */
static Scalar *arg(Interp *I, const IrOp *op, int k) {
    if (k >= op->nargs || op->args[k] < 0 || op->args[k] >= I->f->nvalues) {
        fail(I, op, "malformed IR: '%s' lacks operand %d", ir_op_info[op->op].mnemonic, k);
        return NULL;
    }
    Scalar *p = I->vals[op->args[k]];
    if (!p) fail(I, op, "malformed IR: operand %%%d of '%s' used before its definition",
                 op->args[k], ir_op_info[op->op].mnemonic);
    return p;
}

static DType arg_dtype(const Interp *I, const IrOp *op, int k) { return vtype(I, op->args[k])->dtype; }
static const Type *arg_type(const Interp *I, const IrOp *op, int k) { return vtype(I, op->args[k]); }

/* The buffer for op's result, allocated on first use. */
static Scalar *result(Interp *I, const IrOp *op) {
    int v = op->result;
    if (v < 0 || v >= I->f->nvalues) {
        fail(I, op, "malformed IR: '%s' has no result", ir_op_info[op->op].mnemonic);
        return NULL;
    }
    if (!I->vals[v]) {
        int64_t n = vnumel(I, v);
        if (n > INTERP_MAX_TILE_ELEMS) {
            char buf[128];
            fail(I, op, "tile %s is too large for the interpreter", type_str(vtype(I, v), buf, sizeof buf));
            return NULL;
        }
        const size_t bytes = (size_t)(n > 0 ? n : 1) * sizeof(Scalar);
        if (!I->bufs[v] && !(I->bufs[v] = malloc(bytes))) { fail(I, op, "out of memory"); return NULL; }
        memset(I->bufs[v], 0, bytes);   /* as fresh as in the block before */
        I->vals[v] = I->bufs[v];
    }
    return I->vals[v];
}

/* Element i of a tile of n elements; a one-element tile broadcasts. */
static inline Scalar elem(const Scalar *t, int64_t n, int64_t i) { return n == 1 ? t[0] : t[i]; }

static Scalar convert_if(DType from, DType to, Scalar v) {
    return from == to ? v : scalar_convert(from, to, v);
}

/* An integer (or float, truncated) element as int64, saturating. */
static int64_t to_i64(DType dt, Scalar v) {
    if (dtype_is_float(dt)) {
        if (isnan(v.f)) return 0;
        if (v.f >= 9.2e18) return INT64_MAX;
        if (v.f <= -9.2e18) return INT64_MIN;
        return (int64_t)v.f;
    }
    if (dtype_is_unsigned(dt)) return v.u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v.u;
    return v.i;
}

static Scalar const_value(const IrOp *op, DType dt) {
    Scalar s;
    if (dtype_is_float(dt)) s.f = op->lit.f;
    else if (dtype_is_unsigned(dt)) s.u = op->lit.u;
    else s.i = op->lit.i;
    return scalar_canon(dt, s);
}

/* Row-major multi-index of flat element `flat` in `shape`. */
static void unravel(int64_t flat, int rank, const int *shape, int64_t *idx) {
    for (int d = rank - 1; d >= 0; d--) {
        idx[d] = flat % shape[d];
        flat /= shape[d];
    }
}

static Scalar padding_value(DType dt, int pad) {
    Scalar s;
    s.u = 0;
    if (!dtype_is_float(dt)) return s;        /* integer arrays pad with 0 */
    switch (pad) {
    case PAD_NAN: s.f = NAN; break;
    case PAD_POS_INF: s.f = INFINITY; break;
    case PAD_NEG_INF: s.f = -INFINITY; break;
    default: s.f = 0; break;
    }
    return scalar_canon(dt, s);
}

/* ---- element-wise --------------------------------------------------------- */

static bool is_compare(OpId op) {
    return op == OP_LT || op == OP_LE || op == OP_GT || op == OP_GE || op == OP_EQ || op == OP_NE;
}

static Flow exec_unary(Interp *I, const IrOp *op) {
    Scalar *a = arg(I, op, 0), *r = result(I, op);
    if (!a || !r) return FLOW_ERROR;
    DType adt = arg_dtype(I, op, 0), rdt = vtype(I, op->result)->dtype;
    int64_t n = vnumel(I, op->result), na = vnumel(I, op->args[0]);
    if (na != n && na != 1) return fail(I, op, "malformed IR: operand shape differs from the result's");
    if (op->op == OP_CAST) {
        for (int64_t i = 0; i < n; i++) r[i] = scalar_convert(adt, rdt, elem(a, na, i));
        return FLOW_NEXT;
    }
    /* ISNAN and NOT work in the operand's dtype; the rest in the result's. */
    DType dt = (op->op == OP_ISNAN || op->op == OP_NOT) ? adt : rdt;
    for (int64_t i = 0; i < n; i++)
        r[i] = scalar_unary(op->op, dt, convert_if(adt, dt, elem(a, na, i)));
    return FLOW_NEXT;
}

static Flow exec_binary(Interp *I, const IrOp *op) {
    Scalar *a = arg(I, op, 0), *b = arg(I, op, 1), *r = result(I, op);
    if (!a || !b || !r) return FLOW_ERROR;
    DType adt = arg_dtype(I, op, 0), bdt = arg_dtype(I, op, 1), rdt = vtype(I, op->result)->dtype;
    int64_t n = vnumel(I, op->result), na = vnumel(I, op->args[0]), nb = vnumel(I, op->args[1]);
    if ((na != n && na != 1) || (nb != n && nb != 1))
        return fail(I, op, "malformed IR: operand shapes differ from the result's");
    if (op->op == OP_SHL || op->op == OP_SHR) {
        /* The count may have another dtype: clamp it first (PTX clamps to the width). */
        for (int64_t i = 0; i < n; i++) {
            Scalar x = convert_if(adt, rdt, elem(a, na, i)), c;
            int64_t cnt = to_i64(bdt, elem(b, nb, i));
            c.u = (cnt < 0 || cnt > 64) ? 64 : (uint64_t)cnt;
            r[i] = scalar_binary(op->op, rdt, x, c, NULL);
        }
        return FLOW_NEXT;
    }
    DType dt = is_compare(op->op) || op->op == OP_LAND || op->op == OP_LOR ? adt : rdt;
    for (int64_t i = 0; i < n; i++)
        r[i] = scalar_binary(op->op, dt, convert_if(adt, dt, elem(a, na, i)),
                             convert_if(bdt, dt, elem(b, nb, i)), NULL);
    return FLOW_NEXT;
}

static Flow exec_where(Interp *I, const IrOp *op) {
    Scalar *c = arg(I, op, 0), *a = arg(I, op, 1), *b = arg(I, op, 2), *r = result(I, op);
    if (!c || !a || !b || !r) return FLOW_ERROR;
    DType cdt = arg_dtype(I, op, 0), adt = arg_dtype(I, op, 1), bdt = arg_dtype(I, op, 2);
    DType rdt = vtype(I, op->result)->dtype;
    int64_t n = vnumel(I, op->result);
    int64_t nc = vnumel(I, op->args[0]), na = vnumel(I, op->args[1]), nb = vnumel(I, op->args[2]);
    if ((nc != n && nc != 1) || (na != n && na != 1) || (nb != n && nb != 1))
        return fail(I, op, "malformed IR: where operands differ in shape from the result");
    for (int64_t i = 0; i < n; i++)
        r[i] = scalar_is_true(cdt, elem(c, nc, i)) ? convert_if(adt, rdt, elem(a, na, i))
                                                   : convert_if(bdt, rdt, elem(b, nb, i));
    return FLOW_NEXT;
}

/* ---- reductions and scans --------------------------------------------- */

/* Splits a tile into outer x len x inner around `axis` (all of it when the
 * axis is out of range: a whole-tile reduction). */
static void axis_split(const Type *t, int axis, int64_t *outer, int64_t *len, int64_t *inner) {
    if (axis < 0 || axis >= t->rank) {
        *outer = 1; *len = type_numel(t); *inner = 1;
        return;
    }
    *outer = 1; *inner = 1;
    for (int d = 0; d < axis; d++) *outer *= t->shape[d];
    *len = t->shape[axis];
    for (int d = axis + 1; d < t->rank; d++) *inner *= t->shape[d];
}

/* f16 and bf16 accumulate in f32 (see the header comment). */
static DType accum_dtype(DType dt) {
    return (dt == DT_F16 || dt == DT_BF16 || dt == DT_TF32) ? DT_F32 : dt;
}

/* NaN-aware "x is more extreme than best" for argmax (want_max) / argmin. */
static bool beats(DType dt, Scalar x, Scalar best, bool want_max) {
    if (dtype_is_float(dt)) {
        if (isnan(best.f)) return false;
        if (isnan(x.f)) return true;
        return want_max ? x.f > best.f : x.f < best.f;
    }
    OpId cmp = want_max ? OP_GT : OP_LT;
    return scalar_binary(cmp, dt, x, best, NULL).i != 0;
}

static Flow exec_reduce(Interp *I, const IrOp *op) {
    Scalar *x = arg(I, op, 0), *r = result(I, op);
    if (!x || !r) return FLOW_ERROR;
    const Type *xt = arg_type(I, op, 0);
    DType dt = xt->dtype, rdt = vtype(I, op->result)->dtype;
    int64_t outer, len, inner;
    axis_split(xt, op->axis, &outer, &len, &inner);
    if (outer * inner != vnumel(I, op->result))
        return fail(I, op, "malformed IR: reduction result has the wrong number of elements");
    bool arg_op = op->op == OP_ARGMAX || op->op == OP_ARGMIN;
    DType acc_dt = accum_dtype(dt);
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t in = 0; in < inner; in++) {
            const Scalar *p = x + o * len * inner + in;
            Scalar acc = convert_if(dt, acc_dt, p[0]);
            int64_t best = 0;
            for (int64_t k = 1; k < len; k++) {
                Scalar v = p[k * inner];
                switch (op->op) {
                case OP_REDUCE_SUM: acc = scalar_binary(OP_ADD, acc_dt, acc, convert_if(dt, acc_dt, v), NULL); break;
                case OP_REDUCE_PROD: acc = scalar_binary(OP_MUL, acc_dt, acc, convert_if(dt, acc_dt, v), NULL); break;
                case OP_REDUCE_MAX: acc = scalar_binary(OP_MAXIMUM, dt, acc, v, NULL); break;
                case OP_REDUCE_MIN: acc = scalar_binary(OP_MINIMUM, dt, acc, v, NULL); break;
                default:
                    if (beats(dt, v, p[best * inner], op->op == OP_ARGMAX)) best = k;
                    break;
                }
            }
            Scalar out;
            if (arg_op) out = scalar_from_int(rdt, len > 0 ? best : 0);
            else if (len == 0) out = scalar_from_int(rdt, op->op == OP_REDUCE_PROD);
            else out = convert_if(op->op == OP_REDUCE_SUM || op->op == OP_REDUCE_PROD ? acc_dt : dt, rdt, acc);
            r[o * inner + in] = out;
        }
    }
    return FLOW_NEXT;
}

static Flow exec_scan(Interp *I, const IrOp *op) {
    Scalar *x = arg(I, op, 0), *r = result(I, op);
    if (!x || !r) return FLOW_ERROR;
    const Type *xt = arg_type(I, op, 0);
    DType dt = xt->dtype, rdt = vtype(I, op->result)->dtype, acc_dt = accum_dtype(dt);
    if (vnumel(I, op->result) != type_numel(xt))
        return fail(I, op, "malformed IR: scan result differs in size from its operand");
    int64_t outer, len, inner;
    axis_split(xt, op->axis, &outer, &len, &inner);
    OpId step = op->op == OP_CUMSUM ? OP_ADD : OP_MUL;
    bool reverse = op->flag != 0;
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t in = 0; in < inner; in++) {
            int64_t base = o * len * inner + in;
            Scalar acc;
            for (int64_t j = 0; j < len; j++) {
                int64_t k = reverse ? len - 1 - j : j;
                Scalar v = convert_if(dt, acc_dt, x[base + k * inner]);
                acc = j == 0 ? v : scalar_binary(step, acc_dt, acc, v, NULL);
                r[base + k * inner] = convert_if(acc_dt, rdt, acc);
            }
        }
    }
    return FLOW_NEXT;
}

/* ---- matrix ---------------------------------------------------------------- */

static Flow exec_mma(Interp *I, const IrOp *op) {
    Scalar *a = arg(I, op, 0), *b = arg(I, op, 1), *c = arg(I, op, 2), *r = result(I, op);
    if (!a || !b || !c || !r) return FLOW_ERROR;
    const Type *at = arg_type(I, op, 0), *bt = arg_type(I, op, 1), *ct = arg_type(I, op, 2);
    const Type *rt = vtype(I, op->result);
    if (at->rank < 2 || bt->rank < 2 || rt->rank < 2 || at->rank > 3 || bt->rank > 3 || rt->rank > 3)
        return fail(I, op, "malformed IR: mma operands must be 2-d or 3-d");
    int64_t M = at->shape[at->rank - 2], K = at->shape[at->rank - 1];
    int64_t N = bt->shape[bt->rank - 1];
    int64_t batch = rt->rank == 3 ? rt->shape[0] : 1;
    if (bt->shape[bt->rank - 2] != K || rt->shape[rt->rank - 2] != M || rt->shape[rt->rank - 1] != N ||
        type_numel(ct) != type_numel(rt) || (at->rank == 3 && at->shape[0] != batch) ||
        (bt->rank == 3 && bt->shape[0] != batch))
        return fail(I, op, "malformed IR: mma operand shapes do not agree");
    DType adt = at->dtype, bdt = bt->dtype, cdt = ct->dtype, rdt = rt->dtype;
    int64_t a_bs = at->rank == 3 ? M * K : 0, b_bs = bt->rank == 3 ? K * N : 0;
    for (int64_t z = 0; z < batch; z++) {
        const Scalar *A = a + z * a_bs, *B = b + z * b_bs;
        for (int64_t i = 0; i < M; i++) {
            for (int64_t j = 0; j < N; j++) {
                int64_t ri = (z * M + i) * N + j;
                if (!dtype_is_float(adt)) {
                    /* i8 -> i32: exact products; the wrap of the sum equals the
                     * wrap of each step. */
                    uint64_t acc = (uint64_t)to_i64(cdt, c[ri]);
                    for (int64_t k = 0; k < K; k++)
                        acc += (uint64_t)to_i64(adt, A[i * K + k]) * (uint64_t)to_i64(bdt, B[k * N + j]);
                    Scalar s;
                    s.u = acc;
                    r[ri] = scalar_canon(rdt, s);
                } else if (rdt == DT_F64) {
                    double acc = scalar_to_double(cdt, c[ri]);
                    for (int64_t k = 0; k < K; k++) acc = fma(A[i * K + k].f, B[k * N + j].f, acc);
                    r[ri] = scalar_from_double(rdt, acc);
                } else {
                    float acc = (float)scalar_to_double(cdt, c[ri]);
                    for (int64_t k = 0; k < K; k++)
                        acc = fmaf((float)A[i * K + k].f, (float)B[k * N + j].f, acc);
                    r[ri] = scalar_from_double(rdt, acc);
                }
            }
        }
    }
    return FLOW_NEXT;
}

/* ---- shape ops ------------------------------------------------------------- */

static Flow exec_shape(Interp *I, const IrOp *op) {
    Scalar *x = arg(I, op, 0), *r = result(I, op);
    if (!x || !r) return FLOW_ERROR;
    const Type *xt = arg_type(I, op, 0), *rt = vtype(I, op->result);
    int64_t n = type_numel(rt), nx = type_numel(xt);
    DType xdt = xt->dtype, rdt = rt->dtype;
    int64_t ridx[TILE_MAX_RANK], xidx[TILE_MAX_RANK];
    switch (op->op) {
    case OP_RESHAPE:
        if (n != nx) return fail(I, op, "malformed IR: reshape changes the number of elements");
        for (int64_t i = 0; i < n; i++) r[i] = convert_if(xdt, rdt, x[i]);
        return FLOW_NEXT;
    case OP_PERMUTE:
        if (n != nx || op->nints != rt->rank || xt->rank != rt->rank)
            return fail(I, op, "malformed IR: bad permute");
        {
            bool seen[TILE_MAX_RANK] = { false };
            for (int d = 0; d < rt->rank; d++) {
                int ax = op->ints[d];
                if (ax < 0 || ax >= xt->rank || seen[ax] || xt->shape[ax] != rt->shape[d])
                    return fail(I, op, "malformed IR: permute axes are not a permutation");
                seen[ax] = true;
            }
        }
        for (int64_t i = 0; i < n; i++) {
            unravel(i, rt->rank, rt->shape, ridx);
            for (int d = 0; d < rt->rank; d++) xidx[op->ints[d]] = ridx[d];
            int64_t off = 0;
            for (int d = 0; d < xt->rank; d++) off = off * xt->shape[d] + xidx[d];
            r[i] = convert_if(xdt, rdt, x[off]);
        }
        return FLOW_NEXT;
    case OP_BROADCAST: {
        if (xt->rank > rt->rank) return fail(I, op, "malformed IR: broadcast to a lower rank");
        int lead = rt->rank - xt->rank;
        for (int d = 0; d < xt->rank; d++)
            if (xt->shape[d] != 1 && xt->shape[d] != rt->shape[d + lead])
                return fail(I, op, "malformed IR: shapes do not broadcast");
        for (int64_t i = 0; i < n; i++) {
            unravel(i, rt->rank, rt->shape, ridx);
            int64_t off = 0;
            for (int d = 0; d < xt->rank; d++)
                off = off * xt->shape[d] + (xt->shape[d] == 1 ? 0 : ridx[d + lead]);
            r[i] = convert_if(xdt, rdt, x[off]);
        }
        return FLOW_NEXT;
    }
    case OP_EXTRACT: {
        if (xt->rank != rt->rank || op->nints < rt->rank)
            return fail(I, op, "malformed IR: bad extract");
        for (int d = 0; d < rt->rank; d++) {
            int64_t lo = (int64_t)op->ints[d] * rt->shape[d];
            if (lo < 0 || lo + rt->shape[d] > xt->shape[d])
                return fail(I, op, "extract index %d on axis %d is out of range", op->ints[d], d);
        }
        for (int64_t i = 0; i < n; i++) {
            unravel(i, rt->rank, rt->shape, ridx);
            int64_t off = 0;
            for (int d = 0; d < xt->rank; d++)
                off = off * xt->shape[d] + (int64_t)op->ints[d] * rt->shape[d] + ridx[d];
            r[i] = convert_if(xdt, rdt, x[off]);
        }
        return FLOW_NEXT;
    }
    default:
        return fail(I, op, "malformed IR: not a shape op");
    }
}

static Flow exec_cat(Interp *I, const IrOp *op) {
    Scalar *a = arg(I, op, 0), *b = arg(I, op, 1), *r = result(I, op);
    if (!a || !b || !r) return FLOW_ERROR;
    const Type *at = arg_type(I, op, 0), *bt = arg_type(I, op, 1), *rt = vtype(I, op->result);
    int ax = op->axis;
    if (ax < 0 || ax >= rt->rank || at->rank != rt->rank || bt->rank != rt->rank ||
        at->shape[ax] + bt->shape[ax] != rt->shape[ax])
        return fail(I, op, "malformed IR: bad cat");
    for (int d = 0; d < rt->rank; d++)
        if (d != ax && (at->shape[d] != rt->shape[d] || bt->shape[d] != rt->shape[d]))
            return fail(I, op, "malformed IR: cat operands differ off the axis");
    int64_t outer, len, inner, la = at->shape[ax], lb = bt->shape[ax];
    axis_split(rt, ax, &outer, &len, &inner);
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t k = 0; k < len; k++) {
            for (int64_t in = 0; in < inner; in++) {
                Scalar v = k < la ? convert_if(at->dtype, rt->dtype, a[(o * la + k) * inner + in])
                                  : convert_if(bt->dtype, rt->dtype, b[(o * lb + k - la) * inner + in]);
                r[(o * len + k) * inner + in] = v;
            }
        }
    }
    return FLOW_NEXT;
}

/* ---- memory ------------------------------------------------------------------ */

static const InterpArray *array_of(Interp *I, const IrOp *op) {
    if (op->array < 0 || op->array >= I->f->nparams || I->f->params[op->array].kind != IRP_ARRAY) {
        fail(I, op, "malformed IR: '%s' names no array parameter", ir_op_info[op->op].mnemonic);
        return NULL;
    }
    return &I->args[op->array].array;
}

static void *elem_ptr(const InterpArray *arr, const int64_t *coord) {
    int64_t off = 0;
    for (int d = 0; d < arr->rank; d++) off += coord[d] * arr->strides[d];
    return (char *)arr->data + off * dtype_size(arr->dtype);
}

static bool in_range(const InterpArray *arr, const int64_t *coord) {
    for (int d = 0; d < arr->rank; d++)
        if (coord[d] < 0 || coord[d] >= arr->shape[d]) return false;
    return true;
}

/* The race check (check_races).  Blocks run in no set order on the GPU, so
 * within one launch an element one block writes (store, scatter) must be
 * neither written nor read (load, gather) by another: the result would
 * depend on which came first.  The interpreter's fixed order hides that, so
 * it tracks, per array argument and logical element (row-major), the block
 * that wrote it and the block that read it (or "several") -- reads only of
 * arguments the kernel also writes.  Atomics are not tracked; arrays of over
 * 2^31 elements are skipped. */
#define READ_BY_SEVERAL UINT32_MAX

static void block_of(const Interp *I, uint32_t id, int b[3]) {
    int64_t o = (int64_t)id - 1;
    b[0] = (int)(o % I->grid[0]), b[1] = (int)(o / I->grid[0] % I->grid[1]), b[2] = (int)(o / I->grid[0] / I->grid[1]);
}

/* The three races, as the message words them: what `other` did to the
 * element, and what this block does to it. */
typedef enum Race { RACE_WRITE_WRITE, RACE_WRITE_READ, RACE_READ_WRITE } Race;
static const char *const race_words[][2] = {
    [RACE_WRITE_WRITE] = {"written", "written again"},
    [RACE_WRITE_READ] = {"written", "read by another block"},
    [RACE_READ_WRITE] = {"read", "written by another block"},
};

static bool race(Interp *I, const IrOp *op, const InterpArray *arr, const int64_t *coord, Race kind,
                 uint32_t other) {
    char where[160], who[48];
    int len = 0, b[3];
    for (int d = 0; d < arr->rank && len < (int)sizeof where - 24; d++)
        len += snprintf(where + len, sizeof where - (size_t)len, "%s%lld", d ? ", " : "", (long long)coord[d]);
    if (other == READ_BY_SEVERAL) {
        snprintf(who, sizeof who, "several blocks");
    } else {
        block_of(I, other, b);
        snprintf(who, sizeof who, "block (%d, %d, %d)", b[0], b[1], b[2]);
    }
    fail(I, op, "race: element (%s) of '%s', %s by %s, is %s (blocks run in no set order on the GPU)", where,
         I->f->params[op->array].name, race_words[kind][0], who, race_words[kind][1]);
    return false;
}

/* One block's access to the element at coord: write (store, scatter) or
 * read (load, gather); false after reporting a race.  True at once when the
 * check is off. */
static bool track(Interp *I, const IrOp *op, const InterpArray *arr, const int64_t *coord, bool write) {
    int p = op->array;
    if (!I->check_races || (!write && !I->written[p])) return true;   /* only read: any order reads the same */
    int64_t n = 1, li = 0;
    for (int d = 0; d < arr->rank; d++)   /* extents are < 2^31: stop before n can wrap */
        if ((n *= arr->shape[d]) > ((int64_t)1 << 31)) return true;
    for (int d = 0; d < arr->rank; d++) li = li * arr->shape[d] + coord[d];
    if ((!I->writer[p] && !(I->writer[p] = calloc((size_t)n, sizeof(uint32_t)))) ||
        (!I->reader[p] && !(I->reader[p] = calloc((size_t)n, sizeof(uint32_t))))) {
        fail(I, op, "out of memory for the race check (TILE_CHECK_RACES=0 turns it off)");
        return false;
    }
    uint32_t me = (uint32_t)(I->bid[0] + (int64_t)I->grid[0] * (I->bid[1] + (int64_t)I->grid[1] * I->bid[2])) + 1;
    if (me == 0 || me == READ_BY_SEVERAL) me = 1;
    uint32_t w = I->writer[p][li], r = I->reader[p][li];
    if (w != 0 && w != me) return race(I, op, arr, coord, write ? RACE_WRITE_WRITE : RACE_WRITE_READ, w);
    if (write) {
        if (r != 0 && r != me) return race(I, op, arr, coord, RACE_READ_WRITE, r);
        I->writer[p][li] = me;
    } else {
        I->reader[p][li] = r == 0 || r == me ? me : READ_BY_SEVERAL;
    }
    return true;
}

/* LOAD and STORE: tile element t maps to array coordinate
 * coord[order[d]] = index[d] * shape[d] + t[d] (the permuted view). */
static Flow exec_load_store(Interp *I, const IrOp *op) {
    const InterpArray *arr = array_of(I, op);
    if (!arr) return FLOW_ERROR;
    int rank = arr->rank;
    bool is_store = op->op == OP_STORE;
    if (op->nargs != rank + (is_store ? 1 : 0))
        return fail(I, op, "malformed IR: '%s' needs %d indices", ir_op_info[op->op].mnemonic, rank);
    const Type *tt = is_store ? arg_type(I, op, rank) : vtype(I, op->result);
    if (tt->rank != rank)
        return fail(I, op, "tile rank %d differs from the array's rank %d", tt->rank, rank);
    int order[TILE_MAX_RANK];
    for (int d = 0; d < rank; d++) order[d] = op->nints == rank ? op->ints[d] : d;
    int64_t base[TILE_MAX_RANK];
    for (int d = 0; d < rank; d++) {
        Scalar *ix = arg(I, op, d);
        if (!ix) return FLOW_ERROR;
        if (order[d] < 0 || order[d] >= rank) return fail(I, op, "malformed IR: bad order");
        /* A huge i64 index lands far outside the array, without overflow. */
        int64_t idx = to_i64(arg_dtype(I, op, d), ix[0]);
        if (__builtin_mul_overflow(idx, (int64_t)tt->shape[d], &base[d]) || base[d] > ((int64_t)1 << 62) ||
            base[d] < -((int64_t)1 << 62))
            base[d] = idx < 0 ? -((int64_t)1 << 62) : ((int64_t)1 << 62);
    }
    Scalar *t = is_store ? arg(I, op, rank) : result(I, op);
    if (!t) return FLOW_ERROR;
    DType tdt = tt->dtype;
    Scalar pad = padding_value(arr->dtype, op->flag);
    int64_t n = type_numel(tt), tidx[TILE_MAX_RANK], coord[TILE_MAX_RANK];
    for (int64_t i = 0; i < n; i++) {
        unravel(i, rank, tt->shape, tidx);
        for (int d = 0; d < rank; d++) coord[order[d]] = base[d] + tidx[d];
        bool ok = in_range(arr, coord);
        if (is_store) {
            if (ok && !track(I, op, arr, coord, true)) return FLOW_ERROR;
            if (ok) scalar_store(arr->dtype, elem_ptr(arr, coord), convert_if(tdt, arr->dtype, t[i]));
        } else {
            if (ok && !track(I, op, arr, coord, false)) return FLOW_ERROR;
            Scalar v = ok ? scalar_load(arr->dtype, elem_ptr(arr, coord)) : pad;
            t[i] = convert_if(arr->dtype, tdt, v);
        }
    }
    return FLOW_NEXT;
}

/* GATHER, SCATTER and the atomics: element-wise indices, one tile per axis. */
static Flow exec_indexed(Interp *I, const IrOp *op) {
    const InterpArray *arr = array_of(I, op);
    if (!arr) return FLOW_ERROR;
    int rank = arr->rank;
    bool is_gather = op->op == OP_GATHER;
    if (op->nargs != rank + (is_gather ? 0 : 1))
        return fail(I, op, "malformed IR: '%s' needs %d indices", ir_op_info[op->op].mnemonic, rank);
    Scalar *ix[TILE_MAX_RANK];
    int64_t nix[TILE_MAX_RANK];
    for (int d = 0; d < rank; d++) {
        if (!(ix[d] = arg(I, op, d))) return FLOW_ERROR;
        nix[d] = vnumel(I, op->args[d]);
    }
    int64_t n;
    Scalar *val;
    DType vdt;
    if (is_gather) {
        n = vnumel(I, op->result);
        vdt = vtype(I, op->result)->dtype;
        if (!(val = result(I, op))) return FLOW_ERROR;
    } else {
        n = vnumel(I, op->args[rank]);
        vdt = arg_dtype(I, op, rank);
        if (!(val = arg(I, op, rank))) return FLOW_ERROR;
    }
    /* Indices and value broadcast together (a one-element tile stretches). */
    int64_t count = n;
    if (!is_gather) for (int d = 0; d < rank; d++) if (nix[d] > count) count = nix[d];
    if (n != count && n != 1) return fail(I, op, "malformed IR: value and indices differ in shape");
    for (int d = 0; d < rank; d++)
        if (nix[d] != count && nix[d] != 1) return fail(I, op, "malformed IR: index tiles differ in shape");
    Scalar pad = padding_value(arr->dtype, op->flag);
    int64_t coord[TILE_MAX_RANK];
    for (int64_t i = 0; i < count; i++) {
        for (int d = 0; d < rank; d++) coord[d] = to_i64(arg_dtype(I, op, d), elem(ix[d], nix[d], i));
        bool ok = in_range(arr, coord);
        if (is_gather) {
            if (ok && !track(I, op, arr, coord, false)) return FLOW_ERROR;
            val[i] = convert_if(arr->dtype, vdt, ok ? scalar_load(arr->dtype, elem_ptr(arr, coord)) : pad);
            continue;
        }
        if (!ok) continue;
        if (op->op == OP_SCATTER && !track(I, op, arr, coord, true)) return FLOW_ERROR;
        Scalar v = convert_if(vdt, arr->dtype, elem(val, n, i));
        void *p = elem_ptr(arr, coord);
        if (op->op == OP_ATOMIC_ADD || op->op == OP_ATOMIC_MAX || op->op == OP_ATOMIC_MIN) {
            OpId how = op->op == OP_ATOMIC_ADD ? OP_ADD : op->op == OP_ATOMIC_MAX ? OP_MAXIMUM : OP_MINIMUM;
            v = scalar_binary(how, arr->dtype, scalar_load(arr->dtype, p), v, NULL);
        }
        scalar_store(arr->dtype, p, v);
    }
    return FLOW_NEXT;
}

/* ---- print ---------------------------------------------------------------- */

static void print_tile(FILE *out, const Type *t, const Scalar *x, int dim, int64_t *pos) {
    char buf[64];
    if (dim == t->rank) {
        scalar_format(t->dtype, x[(*pos)++], buf, sizeof buf);
        fputs(buf, out);
        return;
    }
    fputc('[', out);
    for (int k = 0; k < t->shape[dim]; k++) {
        if (k) fputs(", ", out);
        print_tile(out, t, x, dim + 1, pos);
    }
    fputc(']', out);
}

static Flow exec_print(Interp *I, const IrOp *op) {
    FILE *out = I->out;
    fprintf(out, "[block %d,%d,%d] ", I->bid[0], I->bid[1], I->bid[2]);
    int next = 0;
    for (const char *s = op->str ? op->str : ""; *s; s++) {
        if ((s[0] == '{' && s[1] == '{') || (s[0] == '}' && s[1] == '}')) {
            fputc(*s++, out);
        } else if (s[0] == '{' && s[1] == '}' && next < op->nargs) {
            Scalar *x = arg(I, op, next);
            if (!x) return FLOW_ERROR;
            int64_t pos = 0;
            print_tile(out, arg_type(I, op, next), x, 0, &pos);
            next++;
            s++;
        } else {
            fputc(*s, out);
        }
    }
    fputc('\n', out);
    return FLOW_NEXT;
}

/* ---- control flow and the op dispatcher ------------------------------------ */

static Flow exec_block(Interp *I, const IrBlock *blk);

static Flow exec_for(Interp *I, const IrOp *op) {
    Scalar *lo = arg(I, op, 0), *hi = arg(I, op, 1), *st = arg(I, op, 2), *iv = result(I, op);
    if (!lo || !hi || !st || !iv) return FLOW_ERROR;
    DType ivdt = vtype(I, op->result)->dtype;
    int64_t i = to_i64(arg_dtype(I, op, 0), lo[0]);
    int64_t end = to_i64(arg_dtype(I, op, 1), hi[0]);
    int64_t step = to_i64(arg_dtype(I, op, 2), st[0]);
    if (step <= 0) return FLOW_NEXT;
    while (i < end) {
        if (++I->steps > I->max_steps) return fail(I, op, "step limit exceeded");
        iv[0] = scalar_from_int(ivdt, i);
        Flow fl = exec_block(I, op->body);
        if (fl == FLOW_BREAK) break;
        if (fl == FLOW_RETURN || fl == FLOW_ERROR) return fl;
        if (__builtin_add_overflow(i, step, &i)) break;
    }
    return FLOW_NEXT;
}

static Flow exec_op(Interp *I, const IrOp *op) {
    if (++I->steps > I->max_steps) return fail(I, op, "step limit exceeded");
    const IrFunc *f = I->f;
    Scalar *r;
    switch (op->op) {
    case OP_CONST: {
        if (!(r = result(I, op))) return FLOW_ERROR;
        DType dt = vtype(I, op->result)->dtype;
        Scalar v = const_value(op, dt);
        for (int64_t i = 0, n = vnumel(I, op->result); i < n; i++) r[i] = v;
        return FLOW_NEXT;
    }
    case OP_PARAM:
        if (op->index < 0 || op->index >= f->nparams || f->params[op->index].kind != IRP_SCALAR)
            return fail(I, op, "malformed IR: param names no scalar parameter");
        if (!(r = result(I, op))) return FLOW_ERROR;
        r[0] = convert_if(f->params[op->index].dtype, vtype(I, op->result)->dtype, I->args[op->index].scalar);
        return FLOW_NEXT;
    case OP_ARRAY_DIM:
    case OP_ARRAY_STRIDE: {
        const InterpArray *arr = array_of(I, op);
        if (!arr || !(r = result(I, op))) return FLOW_ERROR;
        if (op->axis < 0 || op->axis >= arr->rank) return fail(I, op, "array axis %d out of range", op->axis);
        int64_t v = op->op == OP_ARRAY_DIM ? arr->shape[op->axis] : arr->strides[op->axis];
        r[0] = scalar_from_int(vtype(I, op->result)->dtype, v);
        return FLOW_NEXT;
    }
    case OP_BID:
    case OP_NUM_BLOCKS:
        if (op->axis < 0 || op->axis > 2) return fail(I, op, "grid axis %d out of range", op->axis);
        if (!(r = result(I, op))) return FLOW_ERROR;
        r[0] = scalar_from_int(vtype(I, op->result)->dtype,
                               op->op == OP_BID ? I->bid[op->axis] : I->grid[op->axis]);
        return FLOW_NEXT;
    case OP_ARANGE: {
        if (!(r = result(I, op))) return FLOW_ERROR;
        DType dt = vtype(I, op->result)->dtype;
        for (int64_t i = 0, n = vnumel(I, op->result); i < n; i++) r[i] = scalar_from_int(dt, i);
        return FLOW_NEXT;
    }
    case OP_NEG: case OP_NOT: case OP_BITNOT: case OP_ABS: case OP_EXP: case OP_EXP2:
    case OP_LOG: case OP_LOG2: case OP_SQRT: case OP_RSQRT: case OP_FLOOR: case OP_CEIL:
    case OP_SIN: case OP_COS: case OP_TANH: case OP_SIGMOID: case OP_ISNAN: case OP_CAST:
        return exec_unary(I, op);
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_MOD: case OP_MAXIMUM:
    case OP_MINIMUM: case OP_POW: case OP_CDIV: case OP_LT: case OP_LE: case OP_GT:
    case OP_GE: case OP_EQ: case OP_NE: case OP_LAND: case OP_LOR: case OP_BITAND:
    case OP_BITOR: case OP_BITXOR: case OP_SHL: case OP_SHR:
        return exec_binary(I, op);
    case OP_WHERE:
        return exec_where(I, op);
    case OP_REDUCE_SUM: case OP_REDUCE_MAX: case OP_REDUCE_MIN: case OP_REDUCE_PROD:
    case OP_ARGMAX: case OP_ARGMIN:
        return exec_reduce(I, op);
    case OP_CUMSUM: case OP_CUMPROD:
        return exec_scan(I, op);
    case OP_MMA:
        return exec_mma(I, op);
    case OP_RESHAPE: case OP_PERMUTE: case OP_BROADCAST: case OP_EXTRACT:
        return exec_shape(I, op);
    case OP_CAT:
        return exec_cat(I, op);
    case OP_LOAD: case OP_STORE:
        return exec_load_store(I, op);
    case OP_GATHER: case OP_SCATTER: case OP_ATOMIC_ADD: case OP_ATOMIC_MAX: case OP_ATOMIC_MIN:
        return exec_indexed(I, op);
    case OP_FOR:
        return exec_for(I, op);
    case OP_LOOP:
        for (;;) {
            if (++I->steps > I->max_steps) return fail(I, op, "step limit exceeded");
            Flow fl = exec_block(I, op->body);
            if (fl == FLOW_BREAK) return FLOW_NEXT;
            if (fl == FLOW_RETURN || fl == FLOW_ERROR) return fl;
        }
    case OP_IF: {
        Scalar *c = arg(I, op, 0);
        if (!c) return FLOW_ERROR;
        const IrBlock *taken = scalar_is_true(arg_dtype(I, op, 0), c[0]) ? op->body : op->else_body;
        return taken ? exec_block(I, taken) : FLOW_NEXT;
    }
    case OP_BREAK: return FLOW_BREAK;
    case OP_CONTINUE: return FLOW_CONTINUE;
    case OP_RETURN: return FLOW_RETURN;
    case OP_LOCAL_GET:
    case OP_LOCAL_SET: {
        if (op->local < 0 || op->local >= f->nlocals) return fail(I, op, "malformed IR: bad local");
        const Type *lt = &f->locals[op->local].type;
        Scalar *loc = I->locals[op->local];
        int64_t n = type_numel(lt);
        if (op->op == OP_LOCAL_GET) {
            if (!(r = result(I, op))) return FLOW_ERROR;
            if (vnumel(I, op->result) != n) return fail(I, op, "malformed IR: local.get type differs");
            memcpy(r, loc, (size_t)n * sizeof(Scalar));
        } else {
            Scalar *x = arg(I, op, 0);
            if (!x) return FLOW_ERROR;
            int64_t nx = vnumel(I, op->args[0]);
            if (nx != n && nx != 1) return fail(I, op, "malformed IR: local.set type differs");
            DType xdt = arg_dtype(I, op, 0);
            for (int64_t i = 0; i < n; i++) loc[i] = convert_if(xdt, lt->dtype, elem(x, nx, i));
        }
        return FLOW_NEXT;
    }
    case OP_PRINT:
        return exec_print(I, op);
    default:
        return fail(I, op, "malformed IR: unknown op %d", (int)op->op);
    }
}

static Flow exec_block(Interp *I, const IrBlock *blk) {
    if (!blk) return FLOW_NEXT;
    for (int i = 0; i < blk->nops; i++) {
        Flow fl = exec_op(I, blk->ops[i]);
        if (fl != FLOW_NEXT) return fl;
    }
    return FLOW_NEXT;
}

/* ---- the grid ------------------------------------------------------------ */

/* Arguments must match the parameters, and arrays sharing an extent name must
 * agree on it. */
static bool check_args(Interp *I, int nargs) {
    const IrFunc *f = I->f;
    if (nargs != f->nparams || (nargs > 0 && !I->args)) {
        fail(I, NULL, "expects %d arguments, got %d", f->nparams, nargs);
        return false;
    }
    for (int p = 0; p < f->nparams; p++) {
        const IrParam *pp = &f->params[p];
        if (pp->kind != IRP_ARRAY) continue;
        const InterpArray *a = &I->args[p].array;
        if (a->dtype != pp->dtype || a->rank != pp->rank) {
            fail(I, NULL, "argument '%s' is %s with rank %d, expected %s with rank %d", pp->name,
                 dtype_name(a->dtype), a->rank, dtype_name(pp->dtype), pp->rank);
            return false;
        }
        for (int d = 0; d < a->rank; d++) {
            if (a->shape[d] < 0 || a->shape[d] > INT32_MAX) {
                fail(I, NULL, "argument '%s' has an invalid extent %lld on axis %d", pp->name,
                     (long long)a->shape[d], d);
                return false;
            }
            if (!pp->dims[d]) continue;
            for (int q = 0; q < p; q++) {
                const IrParam *qp = &f->params[q];
                if (qp->kind != IRP_ARRAY) continue;
                for (int e = 0; e < qp->rank; e++) {
                    if (!qp->dims[e] || strcmp(qp->dims[e], pp->dims[d]) != 0) continue;
                    int64_t other = I->args[q].array.shape[e];
                    if (other != a->shape[d]) {
                        fail(I, NULL, "extent %s is %lld in '%s' but %lld in '%s'", pp->dims[d],
                             (long long)other, qp->name, (long long)a->shape[d], pp->name);
                        return false;
                    }
                }
            }
        }
        if (!a->data) {
            int64_t n = 1;
            for (int d = 0; d < a->rank; d++) n *= a->shape[d];
            if (n > 0) {
                fail(I, NULL, "argument '%s' has no data", pp->name);
                return false;
            }
        }
    }
    return true;
}

/* The array arguments the kernel stores or scatters to (the race check
 * tracks reads of these only). */
static void mark_written(Interp *I, const IrBlock *blk) {
    if (!blk) return;
    for (int i = 0; i < blk->nops; i++) {
        const IrOp *o = blk->ops[i];
        if (ir_op_mem_access(o) == IR_MEM_WRITE && o->array >= 0 && o->array < I->f->nparams)
            I->written[o->array] = true;
        mark_written(I, o->body);
        mark_written(I, o->else_body);
    }
}

int interp_run(const IrFunc *f, const int grid[3], const InterpArg *args, int nargs,
               const InterpOptions *opt, char *err, size_t errlen) {
    Interp I;
    memset(&I, 0, sizeof I);
    I.f = f;
    I.args = args;
    I.err = err;
    I.errlen = errlen;
    I.out = opt && opt->print_out ? opt->print_out : stdout;
    I.max_steps = opt && opt->max_steps > 0 ? opt->max_steps : 1000000000;
    I.check_races = opt && opt->check_races;
    if (err && errlen) err[0] = 0;
    for (int d = 0; d < 3; d++) {
        I.grid[d] = grid ? grid[d] : 1;
        if (I.grid[d] < 0) {
            fail(&I, NULL, "grid extent %d on axis %d is negative", I.grid[d], d);
            return -1;
        }
    }
    if (!check_args(&I, nargs)) return -1;
    int status = 0;
    I.vals = calloc((size_t)(f->nvalues > 0 ? f->nvalues : 1), sizeof(Scalar *));
    I.bufs = calloc((size_t)(f->nvalues > 0 ? f->nvalues : 1), sizeof(Scalar *));
    I.locals = calloc((size_t)(f->nlocals > 0 ? f->nlocals : 1), sizeof(Scalar *));
    I.writer = calloc((size_t)(f->nparams > 0 ? f->nparams : 1), sizeof(uint32_t *));
    I.reader = calloc((size_t)(f->nparams > 0 ? f->nparams : 1), sizeof(uint32_t *));
    I.written = calloc((size_t)(f->nparams > 0 ? f->nparams : 1), sizeof(bool));
    if (!I.vals || !I.bufs || !I.locals || !I.writer || !I.reader || !I.written) { fail(&I, NULL, "out of memory"); status = -1; goto done; }
    for (int l = 0; l < f->nlocals; l++) {
        int64_t n = type_numel(&f->locals[l].type);
        if (n > INTERP_MAX_TILE_ELEMS) {
            fail(&I, NULL, "local '%s' is too large for the interpreter", f->locals[l].name);
            status = -1;
            goto done;
        }
        if (!(I.locals[l] = calloc((size_t)n, sizeof(Scalar)))) {
            fail(&I, NULL, "out of memory");
            status = -1;
            goto done;
        }
    }
    mark_written(&I, f->body);
    for (int z = 0; z < I.grid[2] && status == 0; z++) {
        for (int y = 0; y < I.grid[1] && status == 0; y++) {
            for (int x = 0; x < I.grid[0] && status == 0; x++) {
                I.bid[0] = x; I.bid[1] = y; I.bid[2] = z;
                I.steps = 0;
                for (int l = 0; l < f->nlocals; l++)
                    memset(I.locals[l], 0, (size_t)type_numel(&f->locals[l].type) * sizeof(Scalar));
                /* Values never leak between blocks: forget every definition. */
                for (int v = 0; v < f->nvalues; v++) I.vals[v] = NULL;
                Flow fl = exec_block(&I, f->body);
                if (fl == FLOW_ERROR) status = -1;
                else if (fl == FLOW_BREAK || fl == FLOW_CONTINUE) {
                    fail(&I, NULL, "break or continue outside a loop");
                    status = -1;
                }
            }
        }
    }
done:
    if (I.bufs) for (int v = 0; v < f->nvalues; v++) free(I.bufs[v]);
    if (I.locals) for (int l = 0; l < f->nlocals; l++) free(I.locals[l]);
    if (I.writer) for (int p = 0; p < f->nparams; p++) free(I.writer[p]);
    if (I.reader) for (int p = 0; p < f->nparams; p++) free(I.reader[p]);
    free(I.writer);
    free(I.reader);
    free(I.written);
    free(I.vals);
    free(I.bufs);
    free(I.locals);
    if (I.out) fflush(I.out);
    return status;
}
