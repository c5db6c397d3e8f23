/* exec_control.c: bid / num_blocks on a 3-d grid, for (all range forms,
 * negative steps), while, if / else if / else, break, continue, return,
 * static_range, var with compound assignment, fn helpers, file-level and
 * kernel constants, shadowing, print output, and the step limit. */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

static void t_grid_3d(void) {
    const char *src =
        "kernel g(out: i32[_]) {\n"
        "    let (x, y, z) = (bid(0), bid(1), bid(2));\n"
        "    let lin = x + num_blocks(0) * (y + num_blocks(1) * z);\n"
        "    let v = x + 10 * y + 100 * z + 1000 * num_blocks(0) + 10000 * num_blocks(1) + 100000 * num_blocks(2);\n"
        "    scatter(out, (lin,), v);\n"
        "}\n";
    HArray *out = h_array(DT_I32, 1, (int64_t)24);
    h_fill(out, -1);
    HArg args[] = { HA(out) };
    HRun r = { .src = src, .kernel = "g", .consts = NULL, .grid = { 3, 2, 4 } };
    if (h_run(&r, args, 1, NULL, NULL, 0) == 0)
        for (int z = 0; z < 4; z++)
            for (int y = 0; y < 2; y++)
                for (int x = 0; x < 3; x++) {
                    double want = x + 10 * y + 100 * z + 3000 + 20000 + 400000;
                    H_CHECK(AT1(out, x + 3 * (y + 2 * z)) == want, "block (%d,%d,%d)", x, y, z);
                }
    h_free(out);
}

/* Loops over scalars: every range form and compound assignment. */
static void t_loops(void) {
    const char *src =
        "kernel lp(out: i32[_], n: i32, zero: i32) {\n"
        "    var a = 0;\n"
        "    for i in range(n) { a += i; }\n"
        "    scatter(out, (0,), a);\n"
        "    var b = 0;\n"
        "    for i in range(3, n) { b = b + i * i; }\n"
        "    scatter(out, (1,), b);\n"
        "    var c = 0;\n"
        "    for i in range(1, n, 3) { c += i; }\n"
        "    scatter(out, (2,), c);\n"
        "    var d = 0;\n"
        "    for i in range(n - 1, 2 * n, 2) { d = d * 2 + i; d -= 1; }\n"
        "    scatter(out, (3,), d);\n"
        "    var e = 1;\n"
        "    for i in range(5) { e *= 3; e /= 2; }\n"
        "    scatter(out, (4,), e);\n"
        "    var f = 0;\n"
        "    for i in range(n) { for j in range(i) { f += j; } }\n"
        "    scatter(out, (5,), f);\n"
        "    var g = 0;\n"
        "    for i in range(n, 3) { g += 1; }\n"     /* empty range */
        "    for i in range(0, n, zero) { g += 1; }\n" /* a runtime step <= 0 runs nothing */
        "    scatter(out, (6,), g);\n"
        "}\n";
    int n = 11;
    HArray *out = h_array(DT_I32, 1, (int64_t)7);
    HArg args[] = { HA(out), HI(n), HI(0) };
    HRun r = { .src = src, .kernel = "lp", .consts = NULL, .grid = { 1, 1, 1 } };
    if (h_run(&r, args, 3, NULL, NULL, 0) == 0) {
        int w[7] = { 0 };
        for (int i = 0; i < n; i++) w[0] += i;
        for (int i = 3; i < n; i++) w[1] += i * i;
        for (int i = 1; i < n; i += 3) w[2] += i;
        for (int i = n - 1; i < 2 * n; i += 2) { w[3] = w[3] * 2 + i; w[3] -= 1; }
        w[4] = 1;
        for (int i = 0; i < 5; i++) { w[4] *= 3; w[4] /= 2; }
        for (int i = 0; i < n; i++) for (int j = 0; j < i; j++) w[5] += j;
        for (int k = 0; k < 7; k++) H_CHECK(AT1(out, k) == w[k], "out[%d] = %g, want %d", k, AT1(out, k), w[k]);
    }
    h_free(out);
}

/* while with break / continue, if / else if / else. */
static void t_while_if(void) {
    const char *src =
        "kernel wh(out: i32[_], n: i32) {\n"
        "    var x = n;\n"
        "    var steps = 0;\n"
        "    while x != 1 {\n"
        "        if x % 2 == 0 { x = x / 2; } else { x = 3 * x + 1; }\n"
        "        steps += 1;\n"
        "    }\n"
        "    scatter(out, (0,), steps);\n"
        "    var s = 0;\n"
        "    var i = 0;\n"
        "    while true {\n"
        "        i += 1;\n"
        "        if i > 20 { break; }\n"
        "        if i % 3 == 0 { continue; }\n"
        "        s += i;\n"
        "    }\n"
        "    scatter(out, (1,), s);\n"
        "    var cls = 0;\n"
        "    if n < 5 { cls = 1; } else if n < 10 { cls = 2; } else if n < 20 { cls = 3; } else { cls = 4; }\n"
        "    scatter(out, (2,), cls);\n"
        "    var t = 0;\n"
        "    for k in range(100) {\n"
        "        if k == 7 { break; }\n"
        "        if k % 2 == 1 { continue; }\n"
        "        t += k;\n"
        "    }\n"
        "    scatter(out, (3,), t);\n"
        "}\n";
    int ns[] = { 27, 3, 7, 12, 50 };
    for (int q = 0; q < 5; q++) {
        int n = ns[q];
        HArray *out = h_array(DT_I32, 1, (int64_t)4);
        HArg args[] = { HA(out), HI(n) };
        HRun r = { .src = src, .kernel = "wh", .consts = NULL, .grid = { 1, 1, 1 } };
        if (h_run(&r, args, 2, NULL, NULL, 0) == 0) {
            int x = n, steps = 0;
            while (x != 1) { x = x % 2 == 0 ? x / 2 : 3 * x + 1; steps++; }
            int s = 0;
            for (int i = 1; i <= 20; i++) if (i % 3) s += i;
            int cls = n < 5 ? 1 : n < 10 ? 2 : n < 20 ? 3 : 4;
            H_CHECK(AT1(out, 0) == steps, "n=%d collatz steps %g, want %d", n, AT1(out, 0), steps);
            H_CHECK(AT1(out, 1) == s, "while/break/continue %g, want %d", AT1(out, 1), s);
            H_CHECK(AT1(out, 2) == cls, "n=%d else-if chain %g, want %d", n, AT1(out, 2), cls);
            H_CHECK(AT1(out, 3) == 0 + 2 + 4 + 6, "for/break/continue %g", AT1(out, 3));
        }
        h_free(out);
    }
}

/* return ends the block early; odd blocks write nothing; a return inside a loop. */
static void t_return(void) {
    const char *src =
        "kernel rt(out: f32[N]) {\n"
        "    for i in range(1000) {\n"
        "        if i == bid(0) { return; }\n"
        "        if i == 2 { break; }\n"
        "    }\n"
        "    if bid(0) % 2 == 1 { return; }\n"
        "    store(out, index=(bid(0),), tile=full((4,), 1.0, f32) * bid(0).astype(f32));\n"
        "}\n";
    HArray *out = h_array(DT_F32, 1, (int64_t)32);
    h_fill(out, -1);
    HArg args[] = { HA(out) };
    HRun r = { .src = src, .kernel = "rt", .consts = NULL, .grid = { 8, 1, 1 } };
    if (h_run(&r, args, 1, NULL, NULL, 0) == 0)
        for (int i = 0; i < 32; i++) {
            int b = i / 4;
            double want = (b <= 2 || b % 2 == 1) ? -1 : b;   /* blocks 0..2 return in the loop */
            H_CHECK(AT1(out, i) == want, "out[%d] = %g, want %g", i, AT1(out, i), want);
        }
    h_free(out);
}

/* fn helpers (generic over dtypes), file-level constants, kernel constants
 * with defaults and overrides, static_range, static_assert, shadowing, and
 * a tile-valued var updated in a loop. */
static void t_fn_const_static(void) {
    const char *src =
        "const LOG2E = 1.4426950408889634;\n"
        "const SCALE = 3;\n"
        "fn softplus(x) { return where(x > 20.0, x, log(1.0 + exp(x))); }\n"
        "fn axpy(a, x, y) { return a * x + y; }\n"
        "fn twice(x) { let y = x + x; return y; }\n"
        "kernel k(a: f32[N], o1: f32[N], o2: f32[N], o3: i32[_], o4: f32[N], const B: i32 = 16, const REP: i32) {\n"
        "    static_assert(B % 16 == 0, \"B must be a multiple of 16\");\n"
        "    let x = load(a, index=(bid(0),), shape=(B,));\n"
        "    store(o1, index=(bid(0),), tile=softplus(x));\n"
        "    store(o2, index=(bid(0),), tile=axpy(2.0, x, x * LOG2E));\n"
        "    var acc = zeros((B,), f32);\n"
        "    for r in static_range(REP) { acc += x * (r + 1).astype(f32); }\n"
        "    store(o4, index=(bid(0),), tile=acc);\n"
        "    let s = twice(SCALE);\n"
        "    let s = s + twice(4);\n"
        "    scatter(o3, (bid(0),), s);\n"
        "}\n";
    const int64_t N = 40;
    HArray *a = h_array(DT_F32, 1, N), *o1 = h_array(DT_F32, 1, N), *o2 = h_array(DT_F32, 1, N);
    HArray *o3 = h_array(DT_I32, 1, (int64_t)4), *o4 = h_array(DT_F32, 1, N);
    h_fill_random(a, -30, 30);
    h_fill(o3, -1);
    HArg args[] = { HA(a), HA(o1), HA(o2), HA(o3), HA(o4) };
    HRun r = { .src = src, .kernel = "k", .consts = "REP=3", .grid = { 3, 1, 1 } };
    if (h_run(&r, args, 5, NULL, NULL, 0) == 0) {
        for (int i = 0; i < N; i++) {
            double x = AT1(a, i);
            double sp = x > 20 ? x : log((float)(1.0 + (float)exp(x)));
            H_CHECK(h_close(AT1(o1, i), sp, 1e-6, 1e-6), "softplus(%g) = %g, want %g", x, AT1(o1, i), sp);
            double ax = (float)((float)(2 * x) + (float)(x * (float)1.4426950408889634));
            H_CHECK(h_close(AT1(o2, i), ax, 0, 1e-7), "axpy [%d] = %g, want %g", i, AT1(o2, i), ax);
            double acc = (float)((float)((float)x + (float)(2 * x)) + (float)(3 * x));
            H_CHECK(h_close(AT1(o4, i), acc, 0, 1e-7), "static_range acc [%d] = %g, want %g", i, AT1(o4, i), acc);
        }
        for (int b = 0; b < 3; b++) H_CHECK(AT1(o3, b) == 14, "shadowing and fn on scalars: %g", AT1(o3, b));
    }
    /* a constant override and a failing static_assert */
    r.consts = "REP=1,B=32";
    h_fill(o4, 0);
    if (h_run(&r, args, 5, NULL, NULL, 0) == 0)
        for (int i = 0; i < N; i++) H_CHECK(AT1(o4, i) == AT1(a, i), "REP=1 B=32 [%d]", i);
    h_expect_compile_error(src, "k", "REP=1,B=8", "B must be a multiple of 16");
    h_expect_compile_error(src, "k", NULL, "REP");
    h_free(a); h_free(o1); h_free(o2); h_free(o3); h_free(o4);
}

static void t_print(void) {
    const char *src =
        "kernel p(a: f32[N], n: i32) {\n"
        "    let t = load(a, index=(0,), shape=(4,));\n"
        "    print(\"n={} t={}\", n, t);\n"
        "    print(\"grid {} of {}; m={}\", bid(0), num_blocks(0), reshape(arange(4), (2, 2)));\n"
        "    print(\"flag {}\", n > 3);\n"
        "}\n";
    HArray *a = h_array(DT_F32, 1, (int64_t)3);
    SET1(a, 0, 1.5);
    SET1(a, 1, -2);
    SET1(a, 2, 0.25);
    HArg args[] = { HA(a), HI(5) };
    char *out = NULL;
    HRun r = { .src = src, .kernel = "p", .consts = NULL, .grid = { 2, 1, 1 } };
    if (h_run(&r, args, 2, &out, NULL, 0) == 0) {
        const char *want =
            "[block 0,0,0] n=5 t=[1.5, -2, 0.25, 0]\n"
            "[block 0,0,0] grid 0 of 2; m=[[0, 1], [2, 3]]\n"
            "[block 0,0,0] flag true\n"
            "[block 1,0,0] n=5 t=[1.5, -2, 0.25, 0]\n"
            "[block 1,0,0] grid 1 of 2; m=[[0, 1], [2, 3]]\n"
            "[block 1,0,0] flag true\n";
        H_CHECK(out && strcmp(out, want) == 0, "print output:\n%s\nwant:\n%s", out ? out : "(null)", want);
    }
    free(out);
    h_free(a);
}

static void t_step_limit(void) {
    const char *src =
        "kernel spin(out: i32[_]) {\n"
        "    var i = 0;\n"
        "    while true { i += 1; }\n"
        "    scatter(out, (0,), i);\n"
        "}\n";
    HArray *out = h_array(DT_I32, 1, (int64_t)1);
    HArg args[] = { HA(out) };
    char err[512] = "";
    HRun r = { .src = src, .kernel = "spin", .consts = NULL, .grid = { 3, 1, 1 }, .max_steps = 100000, .expect_error = true };
    h_run(&r, args, 1, NULL, err, sizeof err);
    H_CHECK(strstr(err, "kernel 'spin': step limit exceeded in block (0, 0, 0)") != NULL, "message: %s", err);
    h_free(out);
}

/* A tile-valued loop-carried var with loads inside: a running row sum. */
static void t_tile_loop(void) {
    const char *src =
        "kernel rs(a: f32[R, C], out: f32[R]) {\n"
        "    var acc = zeros((8,), f32);\n"
        "    var m = full((8,), -1.0e30, f32);\n"
        "    for j in range(num_tiles(a, 1, (8, 4))) {\n"
        "        let t = load(a, index=(bid(0), j), shape=(8, 4), padding=neg_inf);\n"
        "        m = maximum(m, max(t, axis=1));\n"
        "        acc = acc + sum(where(isnan(t) || t == -1.0 / 0.0, 0.0, t), axis=1);\n"
        "    }\n"
        "    store(out, index=(bid(0),), tile=acc + m * 0.0);\n"
        "}\n";
    const int64_t R = 19, C = 23;
    HArray *a = h_array(DT_F32, 2, R, C), *out = h_array(DT_F32, 1, R);
    h_fill_random(a, -1, 1);
    HArg args[] = { HA(a), HA(out) };
    HRun r = { .src = src, .kernel = "rs", .consts = NULL, .grid = { 3, 1, 1 } };
    if (h_run(&r, args, 2, NULL, NULL, 0) == 0)
        for (int i = 0; i < R; i++) {
            double s = 0;
            for (int j = 0; j < C; j++) s += AT2(a, i, j);
            H_CHECK(h_close(AT1(out, i), s, 1e-5, 1e-5), "row %d = %g, want %g", i, AT1(out, i), s);
        }
    h_free(a);
    h_free(out);
}

/* Hints change nothing in the result: latency on load / store, kernel hints,
 * and a tune block over the kernel's constants. */
static void t_hints_and_tune(void) {
    const char *src =
        "kernel hinted(x: f32[N], y: f32[N], const B: i32 = 16) with (num_warps = 4, occupancy = 2) {\n"
        "    let t = load(x, index=(bid(0),), shape=(B,), latency=3);\n"
        "    store(y, index=(bid(0),), tile=t + 1.0, latency=1);\n"
        "}\n"
        "tune hinted { B in (16, 32); num_warps in (4, 8); }\n";
    for (int k = 0; k < 2; k++) {
        HArray *x = h_array(DT_F32, 1, (int64_t)45), *y = h_array(DT_F32, 1, (int64_t)45);
        h_fill_random(x, -1, 1);
        HArg args[] = { HA(x), HA(y) };
        HRun r = { .src = src, .kernel = "hinted", .consts = k ? "B=32" : NULL, .grid = { k ? 2 : 3, 1, 1 } };
        if (h_run(&r, args, 2, NULL, NULL, 0) == 0)
            for (int i = 0; i < 45; i++) H_CHECK(AT1(y, i) == (double)(float)(AT1(x, i) + 1), "y[%d]", i);
        h_free(x);
        h_free(y);
    }
}

int main(void) {
    H_RUN_TEST(t_grid_3d);
    H_RUN_TEST(t_loops);
    H_RUN_TEST(t_while_if);
    H_RUN_TEST(t_return);
    H_RUN_TEST(t_fn_const_static);
    H_RUN_TEST(t_print);
    H_RUN_TEST(t_step_limit);
    H_RUN_TEST(t_tile_loop);
    H_RUN_TEST(t_hints_and_tune);
    return h_finish();
}
