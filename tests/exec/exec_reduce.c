/* exec_reduce.c: sum / max / min / prod with an axis, keepdims, negative
 * axes and whole-tile reductions; argmax / argmin with ties; cumsum /
 * cumprod, inclusive, forward and reverse; reductions of f16 and bool tiles.
 * Tiles are [8, 16] loaded from [6, 13] arrays, so the padding takes part. */
#include "harness.h"

#include <string.h>

enum { TR = 8, TC = 16, AR = 6, AC = 13 };

/* The tile as the kernel sees it: the array, then padding. */
static void ref_tile(const HArray *x, double pad, double t[TR][TC]) {
    for (int i = 0; i < TR; i++)
        for (int j = 0; j < TC; j++) t[i][j] = (i < AR && j < AC) ? AT2(x, i, j) : pad;
}

static void t_sum_axes(void) {
    const char *src =
        "kernel red(a: f32[R, C], s0: f32[_], s1: f32[_], sk: f32[_, _], sn: f32[_], whole: f32[_]) {\n"
        "    let t = load(a, index=(0, 0), shape=(8, 16));\n"
        "    store(s0, index=(0,), tile=sum(t, axis=0));\n"
        "    store(s1, index=(0,), tile=t.sum(axis=1));\n"
        "    store(sk, index=(0, 0), tile=sum(t, axis=1, keepdims=true));\n"
        "    store(sn, index=(0,), tile=t.sum(axis=-1));\n"
        "    scatter(whole, (0,), sum(t));\n"
        "}\n";
    HArray *a = h_array(DT_F32, 2, (int64_t)AR, (int64_t)AC);
    HArray *s0 = h_array(DT_F32, 1, (int64_t)TC), *s1 = h_array(DT_F32, 1, (int64_t)TR);
    HArray *sk = h_array(DT_F32, 2, (int64_t)TR, (int64_t)1), *sn = h_array(DT_F32, 1, (int64_t)TR);
    HArray *whole = h_array(DT_F32, 1, (int64_t)1);
    h_fill_random(a, -1, 1);
    HArg args[] = { HA(a), HA(s0), HA(s1), HA(sk), HA(sn), HA(whole) };
    HRun r = { .src = src, .kernel = "red", .consts = NULL, .grid = { 1, 1, 1 } };
    if (h_run(&r, args, 6, NULL, NULL, 0) == 0) {
        double t[TR][TC], all = 0;
        ref_tile(a, 0, t);
        for (int j = 0; j < TC; j++) {
            double s = 0;
            for (int i = 0; i < TR; i++) s += t[i][j];
            H_CHECK(h_close(AT1(s0, j), s, 1e-6, 1e-5), "sum axis 0 [%d] = %g, want %g", j, AT1(s0, j), s);
        }
        for (int i = 0; i < TR; i++) {
            double s = 0;
            for (int j = 0; j < TC; j++) s += t[i][j];
            all += s;
            H_CHECK(h_close(AT1(s1, i), s, 1e-6, 1e-5), "sum axis 1 [%d] = %g, want %g", i, AT1(s1, i), s);
            H_CHECK(AT2(sk, i, 0) == AT1(s1, i), "keepdims [%d]", i);
            H_CHECK(AT1(sn, i) == AT1(s1, i), "axis=-1 [%d]", i);
        }
        H_CHECK(h_close(AT1(whole, 0), all, 1e-5, 1e-5), "whole sum = %g, want %g", AT1(whole, 0), all);
    }
    h_free(a); h_free(s0); h_free(s1); h_free(sk); h_free(sn); h_free(whole);
}

static void t_max_min_prod(void) {
    const char *src =
        "kernel mm(a: f32[R, C], mx: f32[_], mn: f32[_], pr: f32[_], wmax: f32[_], wmin: f32[_]) {\n"
        "    let lo = load(a, index=(0, 0), shape=(8, 16), padding=neg_inf);\n"
        "    let hi = load(a, index=(0, 0), shape=(8, 16), padding=pos_inf);\n"
        "    let one = load(a, index=(0, 0), shape=(8, 16)) * 0.1 + 1.0;\n"
        "    store(mx, index=(0,), tile=max(lo, axis=0));\n"
        "    store(mn, index=(0,), tile=hi.min(axis=1));\n"
        "    store(pr, index=(0,), tile=prod(one, axis=1));\n"
        "    scatter(wmax, (0,), lo.max());\n"
        "    scatter(wmin, (0,), min(hi));\n"
        "}\n";
    HArray *a = h_array(DT_F32, 2, (int64_t)AR, (int64_t)AC);
    HArray *mx = h_array(DT_F32, 1, (int64_t)TC), *mn = h_array(DT_F32, 1, (int64_t)TR), *pr = h_array(DT_F32, 1, (int64_t)TR);
    HArray *wmax = h_array(DT_F32, 1, (int64_t)1), *wmin = h_array(DT_F32, 1, (int64_t)1);
    h_fill_random(a, -5, 5);
    HArg args[] = { HA(a), HA(mx), HA(mn), HA(pr), HA(wmax), HA(wmin) };
    HRun r = { .src = src, .kernel = "mm", .consts = NULL, .grid = { 1, 1, 1 } };
    if (h_run(&r, args, 6, NULL, NULL, 0) == 0) {
        double lo[TR][TC], hi[TR][TC], z[TR][TC];
        ref_tile(a, -INFINITY, lo);
        ref_tile(a, INFINITY, hi);
        ref_tile(a, 0, z);
        double gmax = -INFINITY, gmin = INFINITY;
        for (int j = 0; j < TC; j++) {
            double m = -INFINITY;
            for (int i = 0; i < TR; i++) m = fmax(m, lo[i][j]);
            H_CHECK(AT1(mx, j) == m, "max axis 0 [%d] = %g, want %g", j, AT1(mx, j), m);
            gmax = fmax(gmax, m);
        }
        for (int i = 0; i < TR; i++) {
            double m = INFINITY, p = 1;
            for (int j = 0; j < TC; j++) {
                m = fmin(m, hi[i][j]);
                p *= (double)(float)((double)(float)(z[i][j] * (double)0.1f) + 1.0);
            }
            gmin = fmin(gmin, m);
            H_CHECK(AT1(mn, i) == m, "min axis 1 [%d] = %g, want %g", i, AT1(mn, i), m);
            H_CHECK(h_close(AT1(pr, i), p, 1e-6, 1e-5), "prod [%d] = %g, want %g", i, AT1(pr, i), p);
        }
        H_CHECK(AT1(wmax, 0) == gmax && AT1(wmin, 0) == gmin, "whole max/min");
    }
    h_free(a); h_free(mx); h_free(mn); h_free(pr); h_free(wmax); h_free(wmin);
}

/* Small integers give many ties: the first index must win. */
static void t_argmax_argmin_ties(void) {
    const char *src =
        "kernel am(a: i32[R, C], amax: i32[_], amin: i32[_], fmax: i32[_], wam: i32[_]) {\n"
        "    let t = load(a, index=(0, 0), shape=(8, 16), padding=zero);\n"
        "    store(amax, index=(0,), tile=argmax(t, axis=1));\n"
        "    store(amin, index=(0,), tile=t.argmin(axis=0));\n"
        "    store(fmax, index=(0,), tile=argmax(t.astype(f32) * -1.0, axis=1));\n"
        "    scatter(wam, (0,), argmax(t));\n"
        "}\n";
    HArray *a = h_array(DT_I32, 2, (int64_t)AR, (int64_t)AC);
    HArray *amax = h_array(DT_I32, 1, (int64_t)TR), *amin = h_array(DT_I32, 1, (int64_t)TC);
    HArray *fmx = h_array(DT_I32, 1, (int64_t)TR), *wam = h_array(DT_I32, 1, (int64_t)1);
    h_fill_random(a, -2, 2);
    HArg args[] = { HA(a), HA(amax), HA(amin), HA(fmx), HA(wam) };
    HRun r = { .src = src, .kernel = "am", .consts = NULL, .grid = { 1, 1, 1 } };
    if (h_run(&r, args, 5, NULL, NULL, 0) == 0) {
        double t[TR][TC];
        ref_tile(a, 0, t);
        for (int i = 0; i < TR; i++) {
            int bi = 0, bn = 0;
            for (int j = 1; j < TC; j++) {
                if (t[i][j] > t[i][bi]) bi = j;
                if (-t[i][j] > -t[i][bn]) bn = j;
            }
            H_CHECK(AT1(amax, i) == bi, "argmax row %d = %g, want %d", i, AT1(amax, i), bi);
            H_CHECK(AT1(fmx, i) == bn, "argmax(-t) row %d = %g, want %d", i, AT1(fmx, i), bn);
        }
        for (int j = 0; j < TC; j++) {
            int bi = 0;
            for (int i = 1; i < TR; i++) if (t[i][j] < t[bi][j]) bi = i;
            H_CHECK(AT1(amin, j) == bi, "argmin col %d = %g, want %d", j, AT1(amin, j), bi);
        }
        int best = 0;
        for (int k = 1; k < TR * TC; k++) if (t[k / TC][k % TC] > t[best / TC][best % TC]) best = k;
        H_CHECK(AT1(wam, 0) == best, "whole argmax = %g, want %d (flat index)", AT1(wam, 0), best);
    }
    h_free(a); h_free(amax); h_free(amin); h_free(fmx); h_free(wam);
}

static void t_scans(void) {
    const char *src =
        "kernel sc(a: f32[R, C], cs1: f32[R, C], cs0r: f32[R, C], cp1: f32[R, C], cp1r: f32[R, C], ci: i32[R, C]) {\n"
        "    let t = load(a, index=(0, 0), shape=(8, 16));\n"
        "    store(cs1, index=(0, 0), tile=cumsum(t, axis=1));\n"
        "    store(cs0r, index=(0, 0), tile=t.cumsum(axis=0, reverse=true));\n"
        "    let p = t * 0.1 + 1.0;\n"
        "    store(cp1, index=(0, 0), tile=cumprod(p, axis=1));\n"
        "    store(cp1r, index=(0, 0), tile=cumprod(p, axis=1, reverse=true));\n"
        "    store(ci, index=(0, 0), tile=cumsum((t > 0.0).astype(i32), axis=1));\n"
        "}\n";
    HArray *a = h_array(DT_F32, 2, (int64_t)AR, (int64_t)AC);
    HArray *o[5];
    for (int k = 0; k < 4; k++) o[k] = h_array(DT_F32, 2, (int64_t)AR, (int64_t)AC);
    o[4] = h_array(DT_I32, 2, (int64_t)AR, (int64_t)AC);
    h_fill_random(a, -1, 1);
    HArg args[] = { HA(a), HA(o[0]), HA(o[1]), HA(o[2]), HA(o[3]), HA(o[4]) };
    HRun r = { .src = src, .kernel = "sc", .consts = NULL, .grid = { 1, 1, 1 } };
    if (h_run(&r, args, 6, NULL, NULL, 0) == 0) {
        double t[TR][TC], p[TR][TC];
        ref_tile(a, 0, t);
        for (int i = 0; i < TR; i++)
            for (int j = 0; j < TC; j++) p[i][j] = (float)((float)(t[i][j] * (double)0.1f) + 1.0);
        for (int i = 0; i < AR; i++) {
            double s = 0, c = 0, cnt = 0;
            for (int j = 0; j < AC; j++) {
                s += t[i][j];
                c *= j ? p[i][j] : 1;
                if (!j) c = p[i][j];
                cnt += t[i][j] > 0;
                H_CHECK(h_close(AT2(o[0], i, j), s, 1e-6, 1e-5), "cumsum axis 1 [%d][%d] = %g, want %g", i, j, AT2(o[0], i, j), s);
                H_CHECK(h_close(AT2(o[2], i, j), c, 1e-6, 1e-5), "cumprod [%d][%d] = %g, want %g", i, j, AT2(o[2], i, j), c);
                H_CHECK(AT2(o[4], i, j) == cnt, "int cumsum [%d][%d]", i, j);
                double rs = 0, rc = 1;
                for (int k = i; k < TR; k++) rs += t[k][j];
                for (int k = j; k < TC; k++) rc *= p[i][k];
                H_CHECK(h_close(AT2(o[1], i, j), rs, 1e-6, 1e-5), "reverse cumsum axis 0 [%d][%d] = %g, want %g", i, j, AT2(o[1], i, j), rs);
                H_CHECK(h_close(AT2(o[3], i, j), rc, 1e-6, 1e-5), "reverse cumprod [%d][%d] = %g, want %g", i, j, AT2(o[3], i, j), rc);
            }
        }
    }
    h_free(a);
    for (int k = 0; k < 5; k++) h_free(o[k]);
}

/* f16 sums accumulate in f32 (so 2048 + 1 + 1 ... is not stuck at 2048),
 * and bool tiles count. */
static void t_f16_and_bool(void) {
    const char *src =
        "kernel hs(a: f16[N], s: f16[_], cnt: i32[_], cs: f16[N]) {\n"
        "    let t = load(a, index=(0,), shape=(16,));\n"
        "    scatter(s, (0,), sum(t));\n"
        "    scatter(cnt, (0,), sum(t > 1.0));\n"
        "    store(cs, index=(0,), tile=cumsum(t, axis=0));\n"
        "}\n";
    HArray *a = h_array(DT_F16, 1, (int64_t)16), *s = h_array(DT_F16, 1, (int64_t)1);
    HArray *cnt = h_array(DT_I32, 1, (int64_t)1), *cs = h_array(DT_F16, 1, (int64_t)16);
    SET1(a, 0, 2048);
    for (int i = 1; i < 16; i++) SET1(a, i, 1);
    HArg args[] = { HA(a), HA(s), HA(cnt), HA(cs) };
    HRun r = { .src = src, .kernel = "hs", .consts = NULL, .grid = { 1, 1, 1 } };
    if (h_run(&r, args, 4, NULL, NULL, 0) == 0) {
        H_CHECK(AT1(s, 0) == 2064, "f16 sum = %g, want 2064 (f32 accumulation)", AT1(s, 0));
        H_CHECK(AT1(cnt, 0) == 1, "bool sum = %g", AT1(cnt, 0));
        for (int i = 0; i < 16; i++)
            H_CHECK(AT1(cs, i) == h_round(DT_F16, 2048 + i), "f16 cumsum[%d] = %g", i, AT1(cs, i));
    }
    h_free(a); h_free(s); h_free(cnt); h_free(cs);
}

/* Reductions of a 3-d tile along the middle axis. */
static void t_reduce_3d(void) {
    const char *src =
        "kernel r3(a: f32[A, B, C], out: f32[A, C], am: i32[A, C]) {\n"
        "    let t = load(a, index=(0, 0, 0), shape=(2, 4, 8));\n"
        "    store(out, index=(0, 0), tile=sum(t, axis=1));\n"
        "    store(am, index=(0, 0), tile=argmax(t, axis=1));\n"
        "}\n";
    HArray *a = h_array(DT_F32, 3, (int64_t)2, (int64_t)4, (int64_t)8);
    HArray *out = h_array(DT_F32, 2, (int64_t)2, (int64_t)8), *am = h_array(DT_I32, 2, (int64_t)2, (int64_t)8);
    h_fill_random(a, -1, 1);
    HArg args[] = { HA(a), HA(out), HA(am) };
    HRun r = { .src = src, .kernel = "r3", .consts = NULL, .grid = { 1, 1, 1 } };
    if (h_run(&r, args, 3, NULL, NULL, 0) == 0)
        for (int i = 0; i < 2; i++)
            for (int k = 0; k < 8; k++) {
                double s = 0;
                int best = 0;
                for (int j = 0; j < 4; j++) {
                    s += AT3(a, i, j, k);
                    if (AT3(a, i, j, k) > AT3(a, i, best, k)) best = j;
                }
                H_CHECK(h_close(AT2(out, i, k), s, 1e-6, 1e-5), "sum [%d][%d]", i, k);
                H_CHECK(AT2(am, i, k) == best, "argmax [%d][%d]", i, k);
            }
    h_free(a); h_free(out); h_free(am);
}

/* NaN propagates through max / min; argmax / argmin return the first NaN. */
static void t_nan_reductions(void) {
    const char *src =
        "kernel nr(a: f32[N], o: f32[_], i: i32[_]) {\n"
        "    let t = load(a, index=(0,), shape=(8,));\n"
        "    scatter(o, (0,), max(t));\n"
        "    scatter(o, (1,), min(t));\n"
        "    scatter(o, (2,), sum(t));\n"
        "    scatter(i, (0,), argmax(t));\n"
        "    scatter(i, (1,), argmin(t));\n"
        "}\n";
    HArray *a = h_array(DT_F32, 1, (int64_t)8), *o = h_array(DT_F32, 1, (int64_t)3), *iv = h_array(DT_I32, 1, (int64_t)2);
    double vals[8] = { 1, 5, NAN, -3, NAN, 7, -9, 0 };
    for (int k = 0; k < 8; k++) SET1(a, k, vals[k]);
    HArg args[] = { HA(a), HA(o), HA(iv) };
    HRun r = { .src = src, .kernel = "nr", .grid = { 1, 1, 1 } };
    if (h_run(&r, args, 3, NULL, NULL, 0) == 0) {
        H_CHECK(isnan(AT1(o, 0)) && isnan(AT1(o, 1)) && isnan(AT1(o, 2)), "max/min/sum with NaN: %g %g %g",
                AT1(o, 0), AT1(o, 1), AT1(o, 2));
        H_CHECK(AT1(iv, 0) == 2 && AT1(iv, 1) == 2, "argmax/argmin with NaN: %g %g, want 2 2", AT1(iv, 0), AT1(iv, 1));
    }
    h_free(a); h_free(o); h_free(iv);
}

int main(void) {
    H_RUN_TEST(t_sum_axes);
    H_RUN_TEST(t_max_min_prod);
    H_RUN_TEST(t_argmax_argmin_ties);
    H_RUN_TEST(t_scans);
    H_RUN_TEST(t_f16_and_bool);
    H_RUN_TEST(t_reduce_3d);
    H_RUN_TEST(t_nan_reductions);
    return h_finish();
}
