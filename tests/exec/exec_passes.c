/* exec_passes.c: what pass_fold and pass_dce do to the IR (every other exec
 * test already checks that they never change a result).  Counts ops of each
 * kind after passes_run and runs the kernels. */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

typedef struct Count { OpId op; int n; } Count;
static void count_visit(IrFunc *f, IrOp *op, void *ctx) {
    Count *c = ctx;
    if (op->op == c->op) c->n++;
}
static int count_ops(IrFunc *f, OpId op) {
    Count c = { op, 0 };
    ir_walk(f, f->body, count_visit, &c);
    return c.n;
}

static const char *SRC =
    "kernel k(a: f32[N], b: i32[N], out: f32[N], iout: i32[N], cnt: i32[_]) {\n"
    "    let c = 2 + 3 * 4 - (10 / 3);\n"                      /* folds to 11 */
    "    let x = load(a, index=(bid(0),), shape=(16,));\n"
    "    let y = load(b, index=(bid(0),), shape=(16,));\n"
    "    let dead = exp(x) + load(a, index=(0,), shape=(16,));\n"  /* unused: removed */
    "    var never_read = 0;\n"
    "    never_read = 5;\n"
    "    if 1 < 2 { store(out, index=(bid(0),), tile=x * 1.0 + c.astype(f32)); }\n"
    "    else { store(out, index=(bid(0),), tile=x); }\n"
    "    store(iout, index=(bid(0),), tile=(y + 0) * 1 + (0 + y) - y);\n"
    "    atomic_add(cnt, (0,), 1);\n"
    "}\n";

static void t_fold_dce_ir(void) {
    Arena a;
    arena_init(&a);
    IrFunc *f = h_lower(&a, SRC, "k", NULL);
    if (f) {
        int loads_before = count_ops(f, OP_LOAD);
        passes_run(f, NULL, NULL);
        H_CHECK(count_ops(f, OP_IF) == 0, "constant if not inlined");
        H_CHECK(count_ops(f, OP_EXP) == 0, "unused exp not removed");
        H_CHECK(count_ops(f, OP_LOAD) == 2 && loads_before >= 3, "unused load not removed (%d loads)", count_ops(f, OP_LOAD));
        H_CHECK(count_ops(f, OP_LOCAL_SET) == 0, "stores to a never-read var not removed");
        H_CHECK(count_ops(f, OP_MUL) == 0, "x * 1 / 3 * 4 not folded (%d mul)", count_ops(f, OP_MUL));
        H_CHECK(count_ops(f, OP_DIV) == 0, "10 / 3 not folded");
        H_CHECK(count_ops(f, OP_ADD) == 2, "expected the two float/int adds that must stay, got %d", count_ops(f, OP_ADD));
        H_CHECK(count_ops(f, OP_STORE) == 2 && count_ops(f, OP_ATOMIC_ADD) == 1, "an effect was removed");
    }
    arena_free(&a);

    HArray *x = h_array(DT_F32, 1, (int64_t)20), *y = h_array(DT_I32, 1, (int64_t)20);
    HArray *o = h_array(DT_F32, 1, (int64_t)20), *io = h_array(DT_I32, 1, (int64_t)20), *cnt = h_array(DT_I32, 1, (int64_t)1);
    h_fill_random(x, -1, 1);
    h_fill_random(y, -100, 100);
    HArg args[] = { HA(x), HA(y), HA(o), HA(io), HA(cnt) };
    HRun r = { .src = SRC, .kernel = "k", .consts = NULL, .grid = { 2, 1, 1 } };
    if (h_run(&r, args, 5, NULL, NULL, 0) == 0) {
        for (int i = 0; i < 20; i++) {
            H_CHECK(AT1(o, i) == (double)(float)(AT1(x, i) + 11), "out[%d]", i);
            H_CHECK(AT1(io, i) == AT1(y, i), "iout[%d]", i);
        }
        H_CHECK(AT1(cnt, 0) == 2, "atomic count");
    }
    h_free(x); h_free(y); h_free(o); h_free(io); h_free(cnt);
}

/* x + 0.0 must stay for floats: -0.0 + 0.0 is +0.0. */
static void t_float_add_zero_kept(void) {
    const char *src =
        "kernel z(a: f32[N], out: f32[N]) {\n"
        "    store(out, index=(0,), tile=load(a, index=(0,), shape=(4,)) + 0.0);\n"
        "}\n";
    HArray *a = h_array(DT_F32, 1, (int64_t)4), *o = h_array(DT_F32, 1, (int64_t)4);
    h_fill(a, -0.0);
    HArg args[] = { HA(a), HA(o) };
    HRun r = { .src = src, .kernel = "z", .consts = NULL, .grid = { 1, 1, 1 } };
    if (h_run(&r, args, 2, NULL, NULL, 0) == 0)
        for (int i = 0; i < 4; i++) H_CHECK(h_same(AT1(o, i), 0.0), "-0.0 + 0.0 = %g", AT1(o, i));
    h_free(a);
    h_free(o);
}

static void t_dump_after(void) {
    Arena a;
    arena_init(&a);
    IrFunc *f = h_lower(&a, SRC, "k", NULL);
    if (f) {
        char *buf = NULL;
        size_t len = 0;
        FILE *out = open_memstream(&buf, &len);
        passes_run(f, "all", out);
        fclose(out);
        H_CHECK(buf && strstr(buf, "// after fold\n") && strstr(buf, "// after dce\n"), "dump: %s", buf);
        free(buf);
        buf = NULL;
        out = open_memstream(&buf, &len);
        passes_run(f, "dce", out);
        fclose(out);
        H_CHECK(buf && !strstr(buf, "// after fold") && strstr(buf, "// after dce\n"), "dump of one pass: %s", buf);
        free(buf);
    }
    int n = 0;
    for (const Pass *p = ir_passes; p->name; p++) {
        H_CHECK(p->why && p->why[0], "pass %s has no reason", p->name);
        n++;
    }
    H_CHECK(n >= 2, "pass list");
    arena_free(&a);
}

int main(void) {
    H_RUN_TEST(t_fold_dce_ir);
    H_RUN_TEST(t_float_add_zero_kept);
    H_RUN_TEST(t_dump_after);
    return h_finish();
}
