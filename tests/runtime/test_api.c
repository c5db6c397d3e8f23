/* test_api.c: the runtime API on the CPU backend: modules, the kernel cache,
 * every check of tile_launch, memory, events, and the CUDA backend's absence.
 * usage: test_api SCRATCH_DIR */
#include "check.h"
#include "tile.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>

static const char *program =
    "kernel vadd(x: f32[N], y: f32[N], out: f32[N], const BLOCK: i32 = 16) {\n"
    "    let i = bid(0);\n"
    "    let a = load(x, index=(i,), shape=(BLOCK,));\n"
    "    let b = load(y, index=(i,), shape=(BLOCK,));\n"
    "    store(out, index=(i,), tile=a + b);\n"
    "}\n"
    "\n"
    "kernel scale(x: f32[M, N], out: f32[M, N], s: f32, const BM: i32) {\n"
    "    let (i, j) = (bid(0), bid(1));\n"
    "    let t = load(x, index=(i, j), shape=(BM, 4));\n"
    "    store(out, index=(i, j), tile=t * s);\n"
    "}\n"
    "\n"
    "kernel fill(out: i32[N], v: i32) {\n"
    "    store(out, index=(bid(0),), tile=full((16,), v, i32));\n"
    "}\n";

static char dir[1024];

#define CHECK_ST(expr, want)                                                          \
    do {                                                                              \
        tile_status got_ = (expr);                                                    \
        if (got_ != (want)) {                                                         \
            fprintf(stderr, "%s:%d: %s gave %s, expected %s: %s\n", __FILE__, __LINE__, #expr, \
                    tile_status_name(got_), tile_status_name(want), tile_ctx_last_error(ctx)); \
            check_failures++;                                                         \
        }                                                                             \
    } while (0)

static tile_ctx *ctx;

static void test_cuda_absent_or_working(void) {
    tile_ctx *c = NULL;
    tile_status st = tile_ctx_create(&c, TILE_BACKEND_CUDA, 0);
    if (st != TILE_OK) {
        CHECK(st == TILE_ERR_NO_DEVICE || st == TILE_ERR_UNSUPPORTED);
        CHECK_HAS(tile_ctx_last_error(c), "CUDA");
    }
    tile_ctx_destroy(c);
    st = tile_ctx_create(&c, (tile_backend_kind)7, 0);
    CHECK(st == TILE_ERR_INVALID_ARG);
    CHECK_HAS(tile_ctx_last_error(c), "unknown backend kind 7");
    tile_ctx_destroy(c);
}

static void test_modules(void) {
    tile_module *mod = NULL;
    /* syntax and type errors come back with file:line:col, the line and a caret */
    CHECK_ST(tile_module_load_string(ctx, "bad.tile", "kernel k(x: f32[N]) {\n    let a = ;\n}\n", &mod),
             TILE_ERR_COMPILE);
    CHECK(mod == NULL);
    CHECK_HAS(tile_ctx_last_error(ctx), "bad.tile:2:");
    CHECK_HAS(tile_ctx_last_error(ctx), "error:");
    CHECK_HAS(tile_ctx_last_error(ctx), "    let a = ;");
    CHECK_HAS(tile_ctx_last_error(ctx), "^");
    CHECK_ST(tile_module_load_string(ctx, "sem.tile",
                                     "kernel k(x: f32[N]) {\n    let a = undefined_name + 1;\n}\n", &mod),
             TILE_ERR_COMPILE);
    CHECK_HAS(tile_ctx_last_error(ctx), "sem.tile:2:");
    CHECK_HAS(tile_ctx_last_error(ctx), "undefined_name");

    /* from a file, and a missing file */
    char path[1200];
    snprintf(path, sizeof path, "%s/prog.tile", dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(program, f);
        fclose(f);
    }
    CHECK_ST(tile_module_load_file(ctx, path, &mod), TILE_OK);
    CHECK(tile_module_num_kernels(mod) == 3);
    CHECK(tile_module_kernel_name(mod, 1) && strcmp(tile_module_kernel_name(mod, 1), "scale") == 0);
    CHECK(tile_module_kernel_name(mod, 3) == NULL);
    tile_module_release(mod);
    snprintf(path, sizeof path, "%s/missing.tile", dir);
    CHECK_ST(tile_module_load_file(ctx, path, &mod), TILE_ERR_IO);
    CHECK_HAS(tile_ctx_last_error(ctx), "missing.tile: cannot open");
}

static void test_kernels(tile_module *mod) {
    tile_kernel *k1 = NULL, *k2 = NULL, *k3 = NULL, *k4 = NULL;
    CHECK_ST(tile_kernel_get(mod, "nope", NULL, 0, &k1), TILE_ERR_NOT_FOUND);
    CHECK_HAS(tile_ctx_last_error(ctx), "no kernel named 'nope'");
    CHECK_HAS(tile_ctx_last_error(ctx), "vadd, scale, fill");
    /* a constant with no default and no value names it */
    CHECK_ST(tile_kernel_get(mod, "scale", NULL, 0, &k1), TILE_ERR_COMPILE);
    CHECK_HAS(tile_ctx_last_error(ctx), "BM");
    tile_const bogus = {"BOGUS", 0, 1, 0};
    CHECK_ST(tile_kernel_get(mod, "vadd", &bogus, 1, &k1), TILE_ERR_COMPILE);
    CHECK_HAS(tile_ctx_last_error(ctx), "BOGUS");
    tile_const twice[2] = {{"BLOCK", 0, 16, 0}, {"BLOCK", 0, 32, 0}};
    CHECK_ST(tile_kernel_get(mod, "vadd", twice, 2, &k1), TILE_ERR_INVALID_ARG);
    CHECK_HAS(tile_ctx_last_error(ctx), "'BLOCK' given twice");

    /* the cache: same constants -> same kernel, also when a default is spelled out */
    tile_const b16 = {"BLOCK", 0, 16, 0}, b32 = {"BLOCK", 0, 32, 0};
    CHECK_ST(tile_kernel_get(mod, "vadd", NULL, 0, &k1), TILE_OK);
    CHECK_ST(tile_kernel_get(mod, "vadd", NULL, 0, &k2), TILE_OK);
    CHECK_ST(tile_kernel_get(mod, "vadd", &b16, 1, &k3), TILE_OK);
    CHECK_ST(tile_kernel_get(mod, "vadd", &b32, 1, &k4), TILE_OK);
    CHECK(k1 && k1 == k2 && k1 == k3);
    CHECK(k4 && k4 != k1);

    /* compiling ahead: only a bad list is an error; a bad request is left to tile_kernel_get */
    tile_kernel_request reqs[3] = {{mod, "vadd", &b32, 1, NULL, 0}, {mod, "nope", NULL, 0, NULL, 0},
                                   {mod, "vadd", twice, 2, NULL, 0}};
    CHECK_ST(tile_kernel_prefetch(ctx, reqs, 3), TILE_OK);
    CHECK_ST(tile_kernel_prefetch(ctx, reqs, -1), TILE_ERR_INVALID_ARG);
    CHECK_HAS(tile_ctx_last_error(ctx), "bad request list (-1 entries)");
    CHECK_ST(tile_kernel_prefetch(ctx, NULL, 1), TILE_ERR_INVALID_ARG);
    tile_kernel_request no_module = {NULL, "vadd", NULL, 0, NULL, 0};
    CHECK_ST(tile_kernel_prefetch(ctx, &no_module, 1), TILE_ERR_INVALID_ARG);
    CHECK_HAS(tile_ctx_last_error(ctx), "request 0: no module");
    CHECK_ST(tile_kernel_prefetch(NULL, reqs, 1), TILE_ERR_INVALID_ARG);

    /* introspection */
    CHECK(tile_kernel_num_params(k1) == 3);
    tile_param_info info;
    CHECK_ST(tile_kernel_param(k1, 0, &info), TILE_OK);
    CHECK(info.is_array && info.dtype == TILE_F32 && info.rank == 1 && !info.written);
    CHECK(info.dims[0] && strcmp(info.dims[0], "N") == 0);
    CHECK_ST(tile_kernel_param(k1, 2, &info), TILE_OK);
    CHECK(strcmp(info.name, "out") == 0 && info.written);
    CHECK_ST(tile_kernel_param(k1, 3, &info), TILE_ERR_INVALID_ARG);
    CHECK(strcmp(tile_kernel_name(k1), "vadd") == 0);
}

static void test_launch_vadd(tile_module *mod) {
    tile_kernel *k = NULL;
    CHECK_ST(tile_kernel_get(mod, "vadd", NULL, 0, &k), TILE_OK);
    if (!k) return;
    enum { N = 40 };   /* not a multiple of the block: the last tile is partial */
    float x[N], y[N], out[N + 1];
    for (int i = 0; i < N; i++) {
        x[i] = (float)i * 0.25f;
        y[i] = 100.0f - (float)i;
    }
    for (int i = 0; i <= N; i++) out[i] = -1.0f;
    int64_t n = N, n_short = N - 1;
    tile_arg args[3] = {tile_arg_array(tile_array_contiguous(x, TILE_F32, 1, &n)),
                        tile_arg_array(tile_array_contiguous(y, TILE_F32, 1, &n)),
                        tile_arg_array(tile_array_contiguous(out, TILE_F32, 1, &n))};
    int grid[3] = {3, 1, 1};
    CHECK_ST(tile_launch(k, grid, args, 3, NULL), TILE_OK);
    int ok = 1;
    for (int i = 0; i < N; i++) ok &= out[i] == x[i] + y[i];
    CHECK(ok);
    CHECK(out[N] == -1.0f);   /* nothing written past the end */

    /* argument count and kind */
    CHECK_ST(tile_launch(k, grid, args, 2, NULL), TILE_ERR_INVALID_ARG);
    CHECK_HAS(tile_ctx_last_error(ctx), "takes 3 arguments (x, y, out), got 2");
    tile_arg bad[3];
    memcpy(bad, args, sizeof bad);
    bad[1] = tile_arg_f32(1.0f);
    CHECK_ST(tile_launch(k, grid, bad, 3, NULL), TILE_ERR_INVALID_ARG);
    CHECK_HAS(tile_ctx_last_error(ctx), "argument 1 ('y'): a scalar given, an array expected");
    /* dtype */
    memcpy(bad, args, sizeof bad);
    bad[0].array.dtype = TILE_F64;
    CHECK_ST(tile_launch(k, grid, bad, 3, NULL), TILE_ERR_INVALID_ARG);
    CHECK_HAS(tile_ctx_last_error(ctx), "argument 0 ('x'): dtype f64 given, f32 expected");
    /* rank */
    memcpy(bad, args, sizeof bad);
    int64_t two[2] = {4, 10};
    bad[2].array = tile_array_contiguous(out, TILE_F32, 2, two);
    CHECK_ST(tile_launch(k, grid, bad, 3, NULL), TILE_ERR_INVALID_ARG);
    CHECK_HAS(tile_ctx_last_error(ctx), "argument 2 ('out'): rank 2 given, rank 1 expected");
    /* null data */
    memcpy(bad, args, sizeof bad);
    bad[1].array.data = NULL;
    CHECK_ST(tile_launch(k, grid, bad, 3, NULL), TILE_ERR_INVALID_ARG);
    CHECK_HAS(tile_ctx_last_error(ctx), "('y'): null data pointer");
    /* negative extent, negative stride */
    memcpy(bad, args, sizeof bad);
    bad[0].array.shape[0] = -3;
    CHECK_ST(tile_launch(k, grid, bad, 3, NULL), TILE_ERR_INVALID_ARG);
    CHECK_HAS(tile_ctx_last_error(ctx), "negative extent -3 on axis 0");
    memcpy(bad, args, sizeof bad);
    bad[0].array.strides[0] = -1;
    CHECK_ST(tile_launch(k, grid, bad, 3, NULL), TILE_ERR_INVALID_ARG);
    CHECK_HAS(tile_ctx_last_error(ctx), "negative stride -1 on axis 0");
    /* an array no memory could hold: the last element's offset overflows int64,
     * in elements (39 * 2^58) or only in bytes (39 * 2^56 elements of 4 bytes) */
    memcpy(bad, args, sizeof bad);
    bad[0].array.strides[0] = (int64_t)1 << 58;
    CHECK_ST(tile_launch(k, grid, bad, 3, NULL), TILE_ERR_INVALID_ARG);
    CHECK_HAS(tile_ctx_last_error(ctx), "('x'): its last element lies 2^63 bytes or more past its first");
    bad[0].array.strides[0] = (int64_t)1 << 56;
    CHECK_ST(tile_launch(k, grid, bad, 3, NULL), TILE_ERR_INVALID_ARG);
    CHECK_HAS(tile_ctx_last_error(ctx), "2^63 bytes or more");
    /* extents named alike must agree, and the message names both arrays */
    memcpy(bad, args, sizeof bad);
    bad[1].array = tile_array_contiguous(y, TILE_F32, 1, &n_short);
    CHECK_ST(tile_launch(k, grid, bad, 3, NULL), TILE_ERR_INVALID_ARG);
    CHECK_HAS(tile_ctx_last_error(ctx), "extent mismatch: 'N' is 40 for x (axis 0) but 39 for y (axis 0)");
    /* grid */
    int zero[3] = {0, 1, 1}, big_y[3] = {1, 65536, 1}, big_z[3] = {1, 1, 70000};
    CHECK_ST(tile_launch(k, zero, args, 3, NULL), TILE_ERR_INVALID_ARG);
    CHECK_HAS(tile_ctx_last_error(ctx), "grid extent 0 on axis 0");
    CHECK_ST(tile_launch(k, big_y, args, 3, NULL), TILE_ERR_INVALID_ARG);
    CHECK_HAS(tile_ctx_last_error(ctx), "grid extent 65536 on axis 1 is too large");
    CHECK_ST(tile_launch(k, big_z, args, 3, NULL), TILE_ERR_INVALID_ARG);
    CHECK_HAS(tile_ctx_last_error(ctx), "on axis 2 is too large");
    CHECK_ST(tile_launch(k, NULL, args, 3, NULL), TILE_ERR_INVALID_ARG);
    /* empty arrays may have null data */
    int64_t empty = 0;
    tile_arg none[3] = {tile_arg_array(tile_array_contiguous(NULL, TILE_F32, 1, &empty)),
                        tile_arg_array(tile_array_contiguous(NULL, TILE_F32, 1, &empty)),
                        tile_arg_array(tile_array_contiguous(NULL, TILE_F32, 1, &empty))};
    int one[3] = {1, 1, 1};
    CHECK_ST(tile_launch(k, one, none, 3, NULL), TILE_OK);
}

static void test_launch_scalars(tile_module *mod) {
    tile_kernel *k = NULL;
    tile_const bm = {"BM", 0, 4, 0};
    CHECK_ST(tile_kernel_get(mod, "scale", &bm, 1, &k), TILE_OK);
    if (!k) return;
    float x[8][8], out[8][8];
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++) x[i][j] = (float)(i * 8 + j);
    int64_t shape[2] = {8, 8};
    tile_arg args[3] = {tile_arg_array(tile_array_contiguous(x, TILE_F32, 2, shape)),
                        tile_arg_array(tile_array_contiguous(out, TILE_F32, 2, shape)), tile_arg_i32(3)};
    int grid[3] = {2, 2, 1};
    CHECK_ST(tile_launch(k, grid, args, 3, NULL), TILE_OK);   /* i32 3 converted to f32 */
    int ok = 1;
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++) ok &= out[i][j] == 3.0f * x[i][j];
    CHECK(ok);
    args[2] = tile_arg_f64(0.5);
    CHECK_ST(tile_launch(k, grid, args, 3, NULL), TILE_OK);
    CHECK(out[7][7] == 31.5f);
    /* a transposed (strided) view of x */
    tile_array xt = tile_array_contiguous(x, TILE_F32, 2, shape);
    xt.strides[0] = 1;
    xt.strides[1] = 8;
    args[0] = tile_arg_array(xt);
    args[2] = tile_arg_f32(1.0f);
    CHECK_ST(tile_launch(k, grid, args, 3, NULL), TILE_OK);
    CHECK(out[2][5] == x[5][2] && out[6][1] == x[1][6]);

    tile_kernel *fill = NULL;
    CHECK_ST(tile_kernel_get(mod, "fill", NULL, 0, &fill), TILE_OK);
    if (!fill) return;
    int32_t v[16];
    int64_t n = 16;
    tile_arg fa[2] = {tile_arg_array(tile_array_contiguous(v, TILE_I32, 1, &n)), tile_arg_f64(2.5)};
    int g1[3] = {1, 1, 1};
    CHECK_ST(tile_launch(fill, g1, fa, 2, NULL), TILE_ERR_INVALID_ARG);
    CHECK_HAS(tile_ctx_last_error(ctx), "f64 value 2.5 is not an integer, but the parameter is i32");
    fa[1] = tile_arg_f64(7.0);
    CHECK_ST(tile_launch(fill, g1, fa, 2, NULL), TILE_OK);
    CHECK(v[0] == 7 && v[15] == 7);
    fa[1].dtype = (tile_dtype)99;
    CHECK_ST(tile_launch(fill, g1, fa, 2, NULL), TILE_ERR_INVALID_ARG);
    CHECK_HAS(tile_ctx_last_error(ctx), "invalid scalar dtype 99");
}

/* A failure while the kernel runs is TILE_ERR_LAUNCH with the interpreter's message. */
static void test_launch_failure(void) {
    tile_module *mod = NULL;
    tile_kernel *k = NULL;
    CHECK_ST(tile_module_load_string(ctx, "spin.tile",
                                     "kernel spin(out: i32[N]) {\n    var i = 0;\n"
                                     "    while i >= 0 { i = i + 1; }\n}\n", &mod), TILE_OK);
    if (!mod) return;
    CHECK_ST(tile_kernel_get(mod, "spin", NULL, 0, &k), TILE_OK);
    CHECK_ST(tile_ctx_set_step_limit(ctx, 10000), TILE_OK);
    int32_t out[4];
    int64_t n = 4;
    tile_arg a = tile_arg_array(tile_array_contiguous(out, TILE_I32, 1, &n));
    int grid[3] = {1, 1, 1};
    if (k) {
        CHECK_ST(tile_launch(k, grid, &a, 1, NULL), TILE_ERR_LAUNCH);
        CHECK_HAS(tile_ctx_last_error(ctx), "step limit");
        CHECK_HAS(tile_ctx_last_error(ctx), "spin");
    }
    CHECK_ST(tile_ctx_set_step_limit(ctx, -1), TILE_ERR_INVALID_ARG);
    CHECK_ST(tile_ctx_set_step_limit(ctx, 0), TILE_OK);
    tile_module_release(mod);
}

static void test_release(void) {
    tile_module *mod = NULL;
    tile_kernel *k = NULL;
    CHECK_ST(tile_module_load_string(ctx, "prog.tile", program, &mod), TILE_OK);
    if (!mod) return;
    CHECK_ST(tile_kernel_get(mod, "vadd", NULL, 0, &k), TILE_OK);
    tile_module_release(mod);
    CHECK_ST(tile_kernel_get(mod, "vadd", NULL, 0, &k), TILE_ERR_INVALID_ARG);
    CHECK_HAS(tile_ctx_last_error(ctx), "module was released");
    tile_kernel_request req = {mod, "vadd", NULL, 0, NULL, 0};
    CHECK_ST(tile_kernel_prefetch(ctx, &req, 1), TILE_ERR_INVALID_ARG);
    CHECK_HAS(tile_ctx_last_error(ctx), "request 0: the module was released");
    float x[16] = {0};
    int64_t n = 16;
    tile_arg args[3] = {tile_arg_array(tile_array_contiguous(x, TILE_F32, 1, &n)),
                        tile_arg_array(tile_array_contiguous(x, TILE_F32, 1, &n)),
                        tile_arg_array(tile_array_contiguous(x, TILE_F32, 1, &n))};
    int grid[3] = {1, 1, 1};
    CHECK_ST(tile_launch(k, grid, args, 3, NULL), TILE_ERR_INVALID_ARG);
    CHECK_HAS(tile_ctx_last_error(ctx), "module was released");
    tile_module_release(mod);   /* twice is harmless */
}

static void test_memory_and_events(void) {
    void *a = NULL, *b = NULL;
    CHECK_ST(tile_malloc(ctx, 64, &a), TILE_OK);
    CHECK_ST(tile_malloc(ctx, 64, &b), TILE_OK);
    unsigned char host[64], back[64];
    for (int i = 0; i < 64; i++) host[i] = (unsigned char)i;
    CHECK_ST(tile_memcpy_h2d(ctx, a, host, 64), TILE_OK);
    CHECK_ST(tile_memcpy_d2d(ctx, b, a, 64), TILE_OK);
    CHECK_ST(tile_memset(ctx, b, 0xab, 8), TILE_OK);
    CHECK_ST(tile_memcpy_d2h(ctx, back, b, 64), TILE_OK);
    CHECK(back[7] == 0xab && back[8] == 8 && back[63] == 63);
    CHECK_ST(tile_memcpy_h2d(ctx, NULL, host, 64), TILE_ERR_INVALID_ARG);
    CHECK_HAS(tile_ctx_last_error(ctx), "NULL dst");
    CHECK_ST(tile_synchronize(ctx), TILE_OK);
    CHECK_ST(tile_free(ctx, a), TILE_OK);
    CHECK_ST(tile_free(ctx, b), TILE_OK);
    CHECK_ST(tile_free(ctx, NULL), TILE_OK);

    /* memory of the device: a plausible total, free within it; NULLs allowed */
    size_t free_b = 0, total_b = 0;
    CHECK_ST(tile_mem_info(ctx, &free_b, &total_b), TILE_OK);
    CHECK(total_b >= ((size_t)64 << 20) && free_b <= total_b);
    CHECK_ST(tile_mem_info(ctx, NULL, &total_b), TILE_OK);
    CHECK_ST(tile_mem_info(ctx, NULL, NULL), TILE_OK);
    CHECK_ST(tile_mem_info(NULL, &free_b, &total_b), TILE_ERR_INVALID_ARG);

    tile_event *e0 = NULL, *e1 = NULL;
    float ms = -1;
    CHECK_ST(tile_event_create(ctx, &e0), TILE_OK);
    CHECK_ST(tile_event_create(ctx, &e1), TILE_OK);
    CHECK_ST(tile_event_record(e0, NULL), TILE_OK);
    CHECK_ST(tile_event_record(e1, NULL), TILE_OK);
    CHECK_ST(tile_event_elapsed_ms(e0, e1, &ms), TILE_OK);
    CHECK(ms >= 0 && ms < 10000);
    tile_event_destroy(e0);
    tile_event_destroy(e1);
}

static void test_helpers(void) {
    CHECK(strcmp(tile_status_name(TILE_ERR_COMPILE), "TILE_ERR_COMPILE") == 0);
    CHECK(strcmp(tile_dtype_name(TILE_BF16), "bf16") == 0 && tile_dtype_size(TILE_BF16) == 2);
    CHECK(strcmp(tile_dtype_name((tile_dtype)-1), "?") == 0);
    tile_dtype d;
    CHECK(tile_dtype_from_name("u16", &d) && d == TILE_U16);
    CHECK(!tile_dtype_from_name("float", &d));
    int64_t shape[3] = {2, 3, 4};
    tile_array a = tile_array_contiguous(NULL, TILE_F32, 3, shape);
    CHECK(a.strides[0] == 12 && a.strides[1] == 4 && a.strides[2] == 1 && tile_array_numel(&a) == 24);
    CHECK(strcmp(tile_ctx_device_name(ctx), "cpu (interpreter)") == 0);
    CHECK(tile_ctx_backend(ctx) == TILE_BACKEND_CPU);
    CHECK(strcmp(tile_ctx_codegen_tag(ctx), "") == 0);   /* the interpreter generates no code */
    CHECK(strcmp(tile_ctx_codegen_tag(NULL), "") == 0);
    CHECK(tile_ctx_multiprocessors(ctx) == 0);   /* no SMs to size grids by */
    CHECK(tile_ctx_multiprocessors(NULL) == 0);
}

/* A kernel generic over its arrays' dtype: one specialisation per binding. */
static void test_dtype_constants(void) {
    static const char *src =
        "kernel twice(x: T[N], y: T[N], const T: dtype = f32) {\n"
        "    store(y, index=(bid(0),), tile=load(x, index=(bid(0),), shape=(16,)) * 2);\n"
        "}\n";
    tile_module *mod = NULL;
    CHECK_ST(tile_module_load_string(ctx, "generic.tile", src, &mod), TILE_OK);
    if (!mod) return;
    tile_kernel *kf = NULL, *kb = NULL, *kd = NULL;
    tile_const bf16 = tile_const_dtype("T", TILE_BF16), f32 = tile_const_dtype("T", TILE_F32);
    CHECK_ST(tile_kernel_get(mod, "twice", &bf16, 1, &kb), TILE_OK);
    CHECK_ST(tile_kernel_get(mod, "twice", &f32, 1, &kf), TILE_OK);
    CHECK_ST(tile_kernel_get(mod, "twice", NULL, 0, &kd), TILE_OK);
    CHECK(kb && kf && kb != kf && kd == kf);   /* the default is f32 */
    /* bf16 arrays run the bf16 specialisation; f32 arrays are refused by it */
    uint16_t x[16], y[16];
    for (int i = 0; i < 16; i++) x[i] = (uint16_t)(0x3f80 + (i << 4));   /* 1, 1.125, ... exact in bf16 */
    int64_t n = 16;
    tile_arg args[2] = {tile_arg_array(tile_array_contiguous(x, TILE_BF16, 1, &n)),
                        tile_arg_array(tile_array_contiguous(y, TILE_BF16, 1, &n))};
    int grid[3] = {1, 1, 1};
    CHECK_ST(tile_launch(kb, grid, args, 2, NULL), TILE_OK);
    CHECK_ST(tile_synchronize(ctx), TILE_OK);
    for (int i = 0; i < 16; i++) CHECK(y[i] == (uint16_t)(x[i] + 0x80));   /* times 2: exponent + 1 */
    CHECK_ST(tile_launch(kf, grid, args, 2, NULL), TILE_ERR_INVALID_ARG);
    CHECK_HAS(tile_ctx_last_error(ctx), "dtype bf16 given, f32 expected");
    /* bad bindings */
    tile_const number = {"T", TILE_CONST_INT, 3, 0}, bad_code = {"T", TILE_CONST_DTYPE, 99, 0},
               bad_kind = {"T", 7, 0, 0};
    CHECK_ST(tile_kernel_get(mod, "twice", &number, 1, &kd), TILE_ERR_COMPILE);
    CHECK_HAS(tile_ctx_last_error(ctx), "constant 'T' is a dtype (bf16, f32, ...), but was given a number");
    CHECK_ST(tile_kernel_get(mod, "twice", &bad_code, 1, &kd), TILE_ERR_INVALID_ARG);
    CHECK_HAS(tile_ctx_last_error(ctx), "constant 'T': 99 is not a tile_dtype");
    CHECK_ST(tile_kernel_get(mod, "twice", &bad_kind, 1, &kd), TILE_ERR_INVALID_ARG);
    CHECK_HAS(tile_ctx_last_error(ctx), "kind 7 is none of int, float, dtype");
    tile_module_release(mod);
}

int main(int argc, char **argv) {
    snprintf(dir, sizeof dir, "%s", argc > 1 ? argv[1] : ".");
    mkdir(dir, 0755);
    tile_status st = tile_ctx_create(&ctx, TILE_BACKEND_CPU, 0);
    if (st != TILE_OK) {
        fprintf(stderr, "cannot create a CPU context: %s\n", tile_ctx_last_error(ctx));
        return 1;
    }
    test_helpers();
    test_cuda_absent_or_working();
    test_modules();
    tile_module *mod = NULL;
    CHECK_ST(tile_module_load_string(ctx, "prog.tile", program, &mod), TILE_OK);
    if (mod) {
        test_kernels(mod);
        test_launch_vadd(mod);
        test_launch_scalars(mod);
    }
    test_dtype_constants();
    test_launch_failure();
    test_release();
    test_memory_and_events();
    tile_ctx_destroy(ctx);
    if (check_failures) fprintf(stderr, "%d check(s) failed\n", check_failures);
    return check_failures != 0;
}
