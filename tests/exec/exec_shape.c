/* exec_shape.c: creation (zeros ones full arange) and shape operations
 * (reshape incl. -1, permute, transpose, expand_dims, broadcast_to, extract,
 * cat, item), and NumPy broadcasting in binary operations. */
#include "harness.h"

static void t_creation(void) {
    const char *src =
        "kernel mk(z: i32[_, _], o: f16[_, _], f: f32[_, _], fr: f32[_], ar: i32[_], af: f32[_], v: f32) {\n"
        "    store(z, index=(0, 0), tile=zeros((4, 8), i32));\n"
        "    store(o, index=(0, 0), tile=ones((4, 8), f16));\n"
        "    store(f, index=(0, 0), tile=full((4, 8), 2.5, f32));\n"
        "    store(fr, index=(0,), tile=full((8,), v, f32));\n"
        "    store(ar, index=(0,), tile=arange(16));\n"
        "    store(af, index=(0,), tile=arange(8, dtype=f32) * 0.5);\n"
        "}\n";
    HArray *z = h_array(DT_I32, 2, (int64_t)4, (int64_t)8), *o = h_array(DT_F16, 2, (int64_t)4, (int64_t)8);
    HArray *f = h_array(DT_F32, 2, (int64_t)4, (int64_t)8), *fr = h_array(DT_F32, 1, (int64_t)8);
    HArray *ar = h_array(DT_I32, 1, (int64_t)16), *af = h_array(DT_F32, 1, (int64_t)8);
    h_fill(z, 7);
    HArg args[] = { HA(z), HA(o), HA(f), HA(fr), HA(ar), HA(af), HF(-3.25) };
    HRun r = { .src = src, .kernel = "mk", .consts = NULL, .grid = { 1, 1, 1 } };
    if (h_run(&r, args, 7, NULL, NULL, 0) == 0) {
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 8; j++) {
                H_CHECK(AT2(z, i, j) == 0, "zeros");
                H_CHECK(AT2(o, i, j) == 1, "ones");
                H_CHECK(AT2(f, i, j) == 2.5, "full");
            }
        for (int i = 0; i < 8; i++) H_CHECK(AT1(fr, i) == -3.25, "full with a runtime value: %g", AT1(fr, i));
        for (int i = 0; i < 16; i++) H_CHECK(AT1(ar, i) == i, "arange[%d] = %g", i, AT1(ar, i));
        for (int i = 0; i < 8; i++) H_CHECK(AT1(af, i) == i * 0.5, "arange f32 [%d] = %g", i, AT1(af, i));
    }
    h_free(z); h_free(o); h_free(f); h_free(fr); h_free(ar); h_free(af);
}

static void t_reshape_permute(void) {
    const char *src =
        "kernel rp(a: f32[P, Q, R], r1: f32[_, _], r2: f32[_, _], pm: f32[_, _, _], tr: f32[_, _], tr3: f32[_, _, _]) {\n"
        "    let t = load(a, index=(0, 0, 0), shape=(2, 4, 8));\n"
        "    store(r1, index=(0, 0), tile=reshape(t, (8, 8)));\n"
        "    store(r2, index=(0, 0), tile=t.reshape((-1, 32)));\n"
        "    store(pm, index=(0, 0, 0), tile=permute(t, (2, 0, 1)));\n"
        "    let m = reshape(t, (8, 8)).reshape((4, 16));\n"
        "    store(tr, index=(0, 0), tile=transpose(m));\n"
        "    store(tr3, index=(0, 0, 0), tile=t.transpose());\n"
        "}\n";
    HArray *a = h_array(DT_F32, 3, (int64_t)2, (int64_t)4, (int64_t)8);
    HArray *r1 = h_array(DT_F32, 2, (int64_t)8, (int64_t)8), *r2 = h_array(DT_F32, 2, (int64_t)2, (int64_t)32);
    HArray *pm = h_array(DT_F32, 3, (int64_t)8, (int64_t)2, (int64_t)4), *tr = h_array(DT_F32, 2, (int64_t)16, (int64_t)4);
    HArray *tr3 = h_array(DT_F32, 3, (int64_t)2, (int64_t)8, (int64_t)4);
    h_fill_random(a, -1, 1);
    HArg args[] = { HA(a), HA(r1), HA(r2), HA(pm), HA(tr), HA(tr3) };
    HRun r = { .src = src, .kernel = "rp", .consts = NULL, .grid = { 1, 1, 1 } };
    if (h_run(&r, args, 6, NULL, NULL, 0) == 0) {
        const float *x = a->data;   /* contiguous: flat row-major */
        for (int k = 0; k < 64; k++) {
            H_CHECK(AT2(r1, k / 8, k % 8) == x[k], "reshape (8, 8) [%d]", k);
            H_CHECK(AT2(r2, k / 32, k % 32) == x[k], "reshape (-1, 32) [%d]", k);
            H_CHECK(AT2(tr, k % 16, k / 16) == x[k], "transpose [%d]", k);
        }
        for (int q = 0; q < 2; q++)
            for (int s = 0; s < 4; s++)
                for (int p = 0; p < 8; p++) {
                    H_CHECK(AT3(pm, p, q, s) == AT3(a, q, s, p), "permute [%d][%d][%d]", p, q, s);
                    H_CHECK(AT3(tr3, q, p, s) == AT3(a, q, s, p), "transpose of 3-d swaps the last two [%d][%d][%d]", q, p, s);
                }
    }
    h_free(a); h_free(r1); h_free(r2); h_free(pm); h_free(tr); h_free(tr3);
}

static void t_expand_broadcast(void) {
    const char *src =
        "kernel eb(a: f32[N], b: f32[M], e0: f32[_, _], e1: f32[_, _], bt: f32[_, _], outer: f32[_, _], trail: f32[_, _]) {\n"
        "    let u = load(a, index=(0,), shape=(8,));\n"
        "    let v = load(b, index=(0,), shape=(4,));\n"
        "    store(e0, index=(0, 0), tile=expand_dims(u, 0));\n"
        "    store(e1, index=(0, 0), tile=u.expand_dims(axis=1));\n"
        "    store(bt, index=(0, 0), tile=broadcast_to(expand_dims(u, 1), (8, 4)));\n"
        "    store(outer, index=(0, 0), tile=expand_dims(u, 1) * expand_dims(v, 0));\n"
        "    store(trail, index=(0, 0), tile=v + zeros((8, 4), f32) + 1.0);\n"
        "}\n";
    HArray *a = h_array(DT_F32, 1, (int64_t)8), *b = h_array(DT_F32, 1, (int64_t)4);
    HArray *e0 = h_array(DT_F32, 2, (int64_t)1, (int64_t)8), *e1 = h_array(DT_F32, 2, (int64_t)8, (int64_t)1);
    HArray *bt = h_array(DT_F32, 2, (int64_t)8, (int64_t)4), *outer = h_array(DT_F32, 2, (int64_t)8, (int64_t)4);
    HArray *trail = h_array(DT_F32, 2, (int64_t)8, (int64_t)4);
    h_fill_random(a, -1, 1);
    h_fill_random(b, -1, 1);
    HArg args[] = { HA(a), HA(b), HA(e0), HA(e1), HA(bt), HA(outer), HA(trail) };
    HRun r = { .src = src, .kernel = "eb", .consts = NULL, .grid = { 1, 1, 1 } };
    if (h_run(&r, args, 7, NULL, NULL, 0) == 0)
        for (int i = 0; i < 8; i++) {
            H_CHECK(AT2(e0, 0, i) == AT1(a, i) && AT2(e1, i, 0) == AT1(a, i), "expand_dims [%d]", i);
            for (int j = 0; j < 4; j++) {
                H_CHECK(AT2(bt, i, j) == AT1(a, i), "broadcast_to [%d][%d]", i, j);
                H_CHECK(AT2(outer, i, j) == (double)(float)(AT1(a, i) * AT1(b, j)), "outer [%d][%d]", i, j);
                H_CHECK(AT2(trail, i, j) == (double)(float)(AT1(b, j) + 1.0), "trailing broadcast [%d][%d]", i, j);
            }
        }
    h_free(a); h_free(b); h_free(e0); h_free(e1); h_free(bt); h_free(outer); h_free(trail);
}

static void t_extract_cat_item(void) {
    const char *src =
        "kernel ec(a: f32[R, C], ex: f32[_, _], c0: f32[_, _], c1: f32[_, _], it: f32[_], sub: f32[_, _]) {\n"
        "    let t = load(a, index=(0, 0), shape=(8, 16));\n"
        "    store(ex, index=(0, 0), tile=extract(t, index=(1, 2), shape=(4, 4)));\n"
        "    let top = extract(t, index=(0, 0), shape=(4, 16));\n"
        "    let bot = t.extract(index=(1, 0), shape=(4, 16));\n"
        "    store(c0, index=(0, 0), tile=cat((bot, top), 0));\n"
        "    store(c1, index=(0, 0), tile=cat((top, bot), axis=1));\n"
        "    scatter(it, (0,), item(extract(t, index=(3, 5), shape=(1, 1))));\n"
        "    scatter(it, (1,), t.extract(index=(2, 7), shape=(1, 1)).item());\n"
        "    for i in static_range(2) {\n"
        "        store(sub, index=(i, 0), tile=extract(t, index=(i, 0), shape=(4, 16)) * 2.0);\n"
        "    }\n"
        "}\n";
    HArray *a = h_array(DT_F32, 2, (int64_t)8, (int64_t)16);
    HArray *ex = h_array(DT_F32, 2, (int64_t)4, (int64_t)4), *c0 = h_array(DT_F32, 2, (int64_t)8, (int64_t)16);
    HArray *c1 = h_array(DT_F32, 2, (int64_t)4, (int64_t)32), *it = h_array(DT_F32, 1, (int64_t)2);
    HArray *sub = h_array(DT_F32, 2, (int64_t)8, (int64_t)16);
    h_fill_random(a, -1, 1);
    HArg args[] = { HA(a), HA(ex), HA(c0), HA(c1), HA(it), HA(sub) };
    HRun r = { .src = src, .kernel = "ec", .consts = NULL, .grid = { 1, 1, 1 } };
    if (h_run(&r, args, 6, NULL, NULL, 0) == 0) {
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++) H_CHECK(AT2(ex, i, j) == AT2(a, 4 + i, 8 + j), "extract [%d][%d]", i, j);
        for (int i = 0; i < 8; i++)
            for (int j = 0; j < 16; j++) {
                H_CHECK(AT2(c0, i, j) == AT2(a, (i + 4) % 8, j), "cat axis 0 [%d][%d]", i, j);
                H_CHECK(AT2(sub, i, j) == 2 * AT2(a, i, j), "extract in static_range [%d][%d]", i, j);
            }
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 32; j++)
                H_CHECK(AT2(c1, i, j) == (j < 16 ? AT2(a, i, j) : AT2(a, i + 4, j - 16)), "cat axis 1 [%d][%d]", i, j);
        H_CHECK(AT1(it, 0) == AT2(a, 3, 5), "item");
        H_CHECK(AT1(it, 1) == AT2(a, 2, 7), "item method");
    }
    h_free(a); h_free(ex); h_free(c0); h_free(c1); h_free(it); h_free(sub);
}

int main(void) {
    H_RUN_TEST(t_creation);
    H_RUN_TEST(t_reshape_permute);
    H_RUN_TEST(t_expand_broadcast);
    H_RUN_TEST(t_extract_cat_item);
    return h_finish();
}
