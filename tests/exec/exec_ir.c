/* exec_ir.c: IR built by hand (no parser or lowering), for what programs
 * cannot reach directly: pass_fold inlining an IF with a constant condition
 * (lowering already drops those), and the interpreter's errors on malformed
 * IR, huge tiles and bad launches -- an error message, never a crash. */
#include "harness.h"

#include <string.h>

static const Loc L0 = { "hand.tile", 1, 1 };

static IrFunc *new_func(Arena *a, const char *name) {
    IrFunc *f = ir_func_new(a, name, L0);
    f->params = ARENA_ARRAY(a, IrParam, 1);
    f->nparams = 1;
    f->params[0].kind = IRP_ARRAY;
    f->params[0].name = "out";
    f->params[0].dtype = DT_I32;
    f->params[0].rank = 1;
    f->params[0].written = true;
    return f;
}

static int iconst(IrFunc *f, IrBlock *b, int64_t v) {
    Type t = type_scalar(DT_I32);
    IrOp *o = ir_append(f, b, OP_CONST, L0, &t, 0, NULL);
    o->lit.i = v;
    return o->result;
}

static void scatter_to(IrFunc *f, IrBlock *b, int index, int value, OpId op) {
    int args[2] = { index, value };
    IrOp *o = ir_append(f, b, op, L0, NULL, 2, args);
    o->array = 0;
}

static int count_op(const IrBlock *b, OpId op) {
    int n = 0;
    for (int i = 0; b && i < b->nops; i++)
        n += (b->ops[i]->op == op) + count_op(b->ops[i]->body, op) + count_op(b->ops[i]->else_body, op);
    return n;
}

static int run_func(IrFunc *f, HArray *out, int gx, char *err, size_t errlen) {
    InterpArg arg;
    memset(&arg, 0, sizeof arg);
    arg.array.data = out->data;
    arg.array.dtype = out->dtype;
    arg.array.rank = out->rank;
    arg.array.shape[0] = out->shape[0];
    arg.array.strides[0] = 1;
    int grid[3] = { gx, 1, 1 };
    return interp_run(f, grid, &arg, 1, NULL, err, errlen);
}

/* if (3 < 5) { out[0] = 7; for k in 0..3 { out[1] += k } } else { out[0] = 9 } */
static IrFunc *build_const_if(Arena *a) {
    IrFunc *f = new_func(a, "cif");
    Type tb = type_scalar(DT_BOOL), ti = type_scalar(DT_I32);
    int lhs = iconst(f, f->body, 3), rhs = iconst(f, f->body, 5);
    int cmp_args[2] = { lhs, rhs };
    int cond = ir_append(f, f->body, OP_LT, L0, &tb, 2, cmp_args)->result;
    IrOp *ifop = ir_append(f, f->body, OP_IF, L0, NULL, 1, &cond);
    scatter_to(f, ifop->body, iconst(f, ifop->body, 0), iconst(f, ifop->body, 7), OP_SCATTER);
    int bounds[3] = { iconst(f, ifop->body, 0), iconst(f, ifop->body, 3), iconst(f, ifop->body, 1) };
    IrOp *loop = ir_append(f, ifop->body, OP_FOR, L0, &ti, 3, bounds);
    int one = iconst(f, loop->body, 1);
    /* k * 1 + 0: both no-ops fold away */
    int mul_args[2] = { loop->result, one };
    int m = ir_append(f, loop->body, OP_MUL, L0, &ti, 2, mul_args)->result;
    int add_args[2] = { m, iconst(f, loop->body, 0) };
    int s = ir_append(f, loop->body, OP_ADD, L0, &ti, 2, add_args)->result;
    scatter_to(f, loop->body, one, s, OP_ATOMIC_ADD);
    scatter_to(f, ifop->else_body, iconst(f, ifop->else_body, 0), iconst(f, ifop->else_body, 9), OP_SCATTER);
    /* an unused cast of a constant and an unused local */
    int cast_arg = lhs;
    ir_append(f, f->body, OP_CAST, L0, &tb, 1, &cast_arg);
    int loc = ir_new_local(f, ti, "unused", L0);
    int v = iconst(f, f->body, 4);
    IrOp *set = ir_append(f, f->body, OP_LOCAL_SET, L0, NULL, 1, &v);
    set->local = loc;
    return f;
}

static void t_fold_inlines_const_if(void) {
    Arena a;
    arena_init(&a);
    IrFunc *ref = build_const_if(&a), *opt = build_const_if(&a);
    passes_run(opt, NULL, NULL);
    H_CHECK(count_op(opt->body, OP_IF) == 0, "constant if not inlined");
    H_CHECK(count_op(opt->body, OP_LT) == 0, "3 < 5 not folded");
    H_CHECK(count_op(opt->body, OP_FOR) == 1, "the loop inside the taken branch is lost");
    H_CHECK(count_op(opt->body, OP_MUL) == 0 && count_op(opt->body, OP_ADD) == 0, "k * 1 + 0 not folded");
    H_CHECK(count_op(opt->body, OP_CAST) == 0 && count_op(opt->body, OP_LOCAL_SET) == 0, "dead code left");
    for (int k = 0; k < 2; k++) {
        HArray *out = h_array(DT_I32, 1, (int64_t)2);
        char err[256];
        int rc = run_func(k ? opt : ref, out, 1, err, sizeof err);
        H_CHECK(rc == 0, "%s run failed: %s", k ? "optimised" : "reference", err);
        H_CHECK(AT1(out, 0) == 7 && AT1(out, 1) == 3, "%s: out = [%g, %g], want [7, 3]", k ? "optimised" : "reference",
                AT1(out, 0), AT1(out, 1));
        h_free(out);
    }
    arena_free(&a);
}

static void t_interp_errors(void) {
    Arena a;
    arena_init(&a);
    char err[256];
    HArray *out = h_array(DT_I32, 1, (int64_t)4);

    /* an operand used before its definition */
    IrFunc *f = new_func(&a, "bad");
    Type ti = type_scalar(DT_I32);
    int ghost = ir_new_value(f, ti, NULL);
    scatter_to(f, f->body, iconst(f, f->body, 0), ghost, OP_SCATTER);
    H_CHECK(run_func(f, out, 1, err, sizeof err) == -1 && strstr(err, "kernel 'bad'"), "undefined operand: %s", err);

    /* a tile too large to hold */
    f = new_func(&a, "huge");
    int shape[2] = { 1 << 16, 1 << 16 };
    Type big = type_tile(DT_F32, 2, shape);
    ir_append(f, f->body, OP_ARANGE, L0, &big, 0, NULL);
    H_CHECK(run_func(f, out, 1, err, sizeof err) == -1 && strstr(err, "too large"), "huge tile: %s", err);

    /* a negative grid and an array of the wrong dtype */
    f = new_func(&a, "launch");
    H_CHECK(run_func(f, out, -1, err, sizeof err) == -1 && strstr(err, "negative"), "negative grid: %s", err);
    HArray *wrong = h_array(DT_F32, 1, (int64_t)4);
    H_CHECK(run_func(f, wrong, 1, err, sizeof err) == -1 && strstr(err, "'out'"), "wrong dtype: %s", err);
    H_CHECK(run_func(f, out, 0, err, sizeof err) == 0, "an empty grid runs nothing: %s", err);

    /* integer division by zero is 0, not a trap */
    f = new_func(&a, "divz");
    int dargs[2] = { iconst(f, f->body, 7), iconst(f, f->body, 0) };
    int q = ir_append(f, f->body, OP_DIV, L0, &ti, 2, dargs)->result;
    scatter_to(f, f->body, iconst(f, f->body, 2), q, OP_SCATTER);
    h_fill(out, 5);
    H_CHECK(run_func(f, out, 1, err, sizeof err) == 0 && AT1(out, 2) == 0, "7 / 0 = %g", AT1(out, 2));
    passes_run(f, NULL, NULL);
    h_fill(out, 5);
    H_CHECK(run_func(f, out, 1, err, sizeof err) == 0 && AT1(out, 2) == 0, "folded 7 / 0 = %g", AT1(out, 2));

    h_free(out);
    h_free(wrong);
    arena_free(&a);
}

int main(void) {
    H_RUN_TEST(t_fold_inlines_const_if);
    H_RUN_TEST(t_interp_errors);
    return h_finish();
}
