/* fold.c: constant folding (pass_fold, see passes.h).
 *
 * - scalar element-wise ops and casts whose operands are all constants become
 *   CONST, computed with scalar.c exactly as the interpreter would compute them;
 * - algebraic no-ops that are exact are bypassed: x + 0 and x - 0 (integers
 *   only: -0.0 + 0.0 is +0.0), x * 1, 1 * x, x / 1, casts to the same dtype,
 *   reshape / broadcast to the same type, the identity permute, and where()
 *   with a constant condition;
 * - an IF with a constant condition is replaced by the ops of its taken branch.
 * Bypassed ops lose their uses and are left for pass_dce to remove.
 */
#include "passes.h"
#include "scalar.h"

#include <string.h>

typedef struct Folder {
    IrFunc *f;
    int *repl;      /* value -> the value that replaces it, or -1 */
} Folder;

static int resolve(const Folder *F, int v) {
    while (v >= 0 && v < F->f->nvalues && F->repl[v] >= 0) v = F->repl[v];
    return v;
}

static Scalar lit_value(const IrOp *op, DType dt) {
    Scalar s;
    if (dtype_is_float(dt)) s.f = op->lit.f;
    else if (dtype_is_unsigned(dt)) s.u = op->lit.u;
    else s.i = op->lit.i;
    return scalar_canon(dt, s);
}

/* A scalar CONST: its value. */
static bool scalar_const(const IrFunc *f, int v, Scalar *out) {
    if (v < 0 || v >= f->nvalues) return false;
    const IrValue *val = &f->values[v];
    if (!val->def || val->def->op != OP_CONST || val->type.rank != 0) return false;
    *out = lit_value(val->def, val->type.dtype);
    return true;
}

/* A tile all of whose elements are one constant: a CONST (any shape) seen
 * through broadcasts and reshapes. */
static bool splat_const(const IrFunc *f, int v, Scalar *out) {
    for (int depth = 0; depth < 16 && v >= 0 && v < f->nvalues; depth++) {
        const IrValue *val = &f->values[v];
        const IrOp *d = val->def;
        if (!d) return false;
        if (d->op == OP_CONST) { *out = lit_value(d, val->type.dtype); return true; }
        if ((d->op != OP_BROADCAST && d->op != OP_RESHAPE) || d->nargs != 1) return false;
        if (f->values[d->args[0]].type.dtype != val->type.dtype) return false;
        v = d->args[0];
    }
    return false;
}

static bool is_int_value(DType dt, Scalar s, int64_t want) {
    if (dtype_is_float(dt)) return s.f == (double)want;
    if (dtype_is_unsigned(dt)) return want >= 0 && s.u == (uint64_t)want;
    return dt != DT_BOOL && s.i == want;
}

static void make_const(IrOp *op, DType dt, Scalar v) {
    op->op = OP_CONST;
    op->nargs = 0;
    if (dtype_is_float(dt)) op->lit.f = v.f;
    else if (dtype_is_unsigned(dt)) op->lit.u = v.u;
    else op->lit.i = v.i;
}

static bool is_unary(OpId op) { return op >= OP_NEG && op <= OP_ISNAN; }
static bool is_binary(OpId op) { return op >= OP_ADD && op <= OP_SHR; }
static bool is_compare_or_logic(OpId op) { return op >= OP_LT && op <= OP_LOR; }

/* Folds one op in place; returns whether anything changed. */
static bool fold_op(Folder *F, IrOp *op) {
    IrFunc *f = F->f;
    if (op->result < 0 || F->repl[op->result] >= 0) return false;
    const Type *rt = ir_type(f, op->result);
    DType rdt = rt->dtype;
    Scalar a, b, c;

    if ((is_unary(op->op) || op->op == OP_CAST) && op->nargs == 1 && rt->rank == 0 &&
        scalar_const(f, op->args[0], &a)) {
        DType adt = ir_type(f, op->args[0])->dtype;
        Scalar r;
        if (op->op == OP_CAST) r = scalar_convert(adt, rdt, a);
        else if (op->op == OP_ISNAN || op->op == OP_NOT) r = scalar_unary(op->op, adt, a);
        else if (adt == rdt) r = scalar_unary(op->op, rdt, a);
        else return false;
        make_const(op, rdt, r);
        return true;
    }
    if (is_binary(op->op) && op->nargs == 2) {
        DType adt = ir_type(f, op->args[0])->dtype, bdt = ir_type(f, op->args[1])->dtype;
        bool same = is_compare_or_logic(op->op) ? adt == bdt : (adt == rdt && bdt == rdt);
        if (same && rt->rank == 0 && scalar_const(f, op->args[0], &a) && scalar_const(f, op->args[1], &b)) {
            make_const(op, rdt, scalar_binary(op->op, adt, a, b, NULL));
            return true;
        }
        if (!same) return false;
        const Type *at = ir_type(f, op->args[0]), *bt = ir_type(f, op->args[1]);
        bool is_int = dtype_is_int(rdt);
        /* x op k -> x when exact; the kept operand must already have the result's type. */
        if (type_equal(at, rt) && splat_const(f, op->args[1], &b)) {
            bool zero = is_int_value(rdt, b, 0), one = is_int_value(rdt, b, 1);
            if (((op->op == OP_ADD || op->op == OP_SUB) && is_int && zero) ||
                ((op->op == OP_MUL || op->op == OP_DIV) && one && (is_int || dtype_is_float(rdt)))) {
                F->repl[op->result] = op->args[0];
                return true;
            }
        }
        if (type_equal(bt, rt) && splat_const(f, op->args[0], &a)) {
            if ((op->op == OP_ADD && is_int && is_int_value(rdt, a, 0)) ||
                (op->op == OP_MUL && is_int_value(rdt, a, 1) && (is_int || dtype_is_float(rdt)))) {
                F->repl[op->result] = op->args[1];
                return true;
            }
        }
        return false;
    }
    if (op->op == OP_WHERE && op->nargs == 3 && splat_const(f, op->args[0], &c)) {
        int pick = scalar_is_true(ir_type(f, op->args[0])->dtype, c) ? op->args[1] : op->args[2];
        if (type_equal(ir_type(f, pick), rt)) {
            F->repl[op->result] = pick;
            return true;
        }
        return false;
    }
    if (op->nargs == 1 && (op->op == OP_CAST || op->op == OP_RESHAPE || op->op == OP_BROADCAST) &&
        type_equal(ir_type(f, op->args[0]), rt)) {
        F->repl[op->result] = op->args[0];
        return true;
    }
    if (op->op == OP_PERMUTE && op->nargs == 1 && type_equal(ir_type(f, op->args[0]), rt)) {
        for (int d = 0; d < op->nints; d++)
            if (op->ints[d] != d) return false;
        F->repl[op->result] = op->args[0];
        return true;
    }
    return false;
}

/* Replaces blk->ops[i] (an IF) by the ops of `taken`. */
static void splice(IrFunc *f, IrBlock *blk, int i, const IrBlock *taken) {
    int k = taken ? taken->nops : 0;
    int n = blk->nops - 1 + k;
    IrOp **ops = ARENA_ARRAY(f->arena, IrOp *, n > 0 ? n : 1);
    memcpy(ops, blk->ops, sizeof(IrOp *) * (size_t)i);
    if (k) memcpy(ops + i, taken->ops, sizeof(IrOp *) * (size_t)k);
    memcpy(ops + i + k, blk->ops + i + 1, sizeof(IrOp *) * (size_t)(blk->nops - i - 1));
    blk->ops = ops;
    blk->nops = n;
    blk->cap = n > 0 ? n : 1;
}

static bool fold_block(Folder *F, IrBlock *blk) {
    bool changed = false;
    if (!blk) return false;
    for (int i = 0; i < blk->nops; i++) {
        IrOp *op = blk->ops[i];
        for (int k = 0; k < op->nargs; k++) {
            int r = resolve(F, op->args[k]);
            if (r != op->args[k]) { op->args[k] = r; changed = true; }
        }
        Scalar c;
        if (op->op == OP_IF && op->nargs == 1 && splat_const(F->f, op->args[0], &c)) {
            bool taken = scalar_is_true(ir_type(F->f, op->args[0])->dtype, c);
            splice(F->f, blk, i, taken ? op->body : op->else_body);
            i--;                  /* fold the inlined ops in place */
            changed = true;
            continue;
        }
        changed |= fold_op(F, op);
        changed |= fold_block(F, op->body);
        changed |= fold_block(F, op->else_body);
    }
    return changed;
}

void pass_fold(IrFunc *f) {
    if (!f || !f->body) return;
    Folder F = { f, ARENA_ARRAY(f->arena, int, f->nvalues > 0 ? f->nvalues : 1) };
    for (int v = 0; v < f->nvalues; v++) F.repl[v] = -1;
    /* A few rounds: a fold can expose another one earlier in program order
     * only through replaced operands, which the next round picks up. */
    for (int round = 0; round < 8 && fold_block(&F, f->body); round++) {}
}
