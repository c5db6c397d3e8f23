/* prefetch_api.c: tile_kernel_prefetch's requests on the CUDA backend, run
 * on the stand-in driver by fake_cuda_prefetch.sh (exit 77 without a CUDA
 * context).  One batch holds a kernel, the same kernel with its default
 * spelled out, an unknown kernel, a constant given twice, a point its
 * static_assert refuses, the kernel again from a second module of the same
 * source, and the kernel with the arguments of a launch on arrays shifted by
 * one element: of the three variants asked for, two are compiled, the
 * kernel's and the shifted launch's (the script reads TILEC_CACHE_LOG's
 * lines); each tile_kernel_get after it must succeed or fail exactly as
 * without the prefetch, both modules' kernels and the launch must find their
 * images compiled. */
#include "check.h"
#include "tile.h"

static const char *program =
    "kernel scale(x: f32[N], out: f32[N], s: f32, const BLOCK: i32 = 128) {\n"
    "    static_assert(BLOCK <= 1024, \"BLOCK too large\");\n"
    "    let t = load(x, index=(bid(0),), shape=(BLOCK,));\n"
    "    store(out, index=(bid(0),), tile=t * s);\n"
    "}\n";

int main(void) {
    tile_ctx *ctx = NULL;
    if (tile_ctx_create(&ctx, TILE_BACKEND_CUDA, 0) != TILE_OK) {
        printf("skipped: %s\n", tile_ctx_last_error(ctx));
        tile_ctx_destroy(ctx);
        return 77;
    }
    tile_module *m1 = NULL, *m2 = NULL;
    CHECK(tile_module_load_string(ctx, "a.tile", program, &m1) == TILE_OK);
    CHECK(tile_module_load_string(ctx, "a.tile", program, &m2) == TILE_OK);   /* (one name: #line the same) */
    if (!m1 || !m2) return 1;
    tile_const spelled = {"BLOCK", TILE_CONST_INT, 128, 0}, huge = {"BLOCK", TILE_CONST_INT, 4096, 0};
    tile_const twice[2] = {spelled, spelled};
    /* x and out of 1000 floats one element into their buffers: no 16-byte accesses */
    enum { N = 1000 };
    void *x = NULL, *out = NULL;
    CHECK(tile_malloc(ctx, 4 * (N + 1), &x) == TILE_OK && tile_malloc(ctx, 4 * (N + 1), &out) == TILE_OK);
    if (!x || !out) return 1;
    int64_t n = N;
    tile_arg shifted[3] = {tile_arg_array(tile_array_contiguous((float *)x + 1, TILE_F32, 1, &n)),
                           tile_arg_array(tile_array_contiguous((float *)out + 1, TILE_F32, 1, &n)), tile_arg_f32(2)};
    tile_kernel_request reqs[] = {
        {m1, "scale", NULL, 0, NULL, 0},  {m1, "scale", &spelled, 1, NULL, 0}, {m1, "nope", NULL, 0, NULL, 0},
        {m1, "scale", twice, 2, NULL, 0}, {m1, "scale", &huge, 1, NULL, 0},    {m2, "scale", NULL, 0, NULL, 0},
        {m1, "scale", NULL, 0, shifted, 3},
    };
    CHECK(tile_kernel_prefetch(ctx, reqs, (int)(sizeof reqs / sizeof reqs[0])) == TILE_OK);
    tile_kernel *k1 = NULL, *k1b = NULL, *k2 = NULL, *bad = NULL;
    CHECK(tile_kernel_get(m1, "scale", NULL, 0, &k1) == TILE_OK);
    CHECK(tile_kernel_get(m1, "scale", &spelled, 1, &k1b) == TILE_OK && k1b == k1);
    CHECK(tile_kernel_get(m2, "scale", NULL, 0, &k2) == TILE_OK && k2 && k2 != k1);
    CHECK(tile_kernel_get(m1, "nope", NULL, 0, &bad) == TILE_ERR_NOT_FOUND);
    CHECK_HAS(tile_ctx_last_error(ctx), "no kernel named 'nope'");
    CHECK(tile_kernel_get(m1, "scale", twice, 2, &bad) == TILE_ERR_INVALID_ARG);
    CHECK_HAS(tile_ctx_last_error(ctx), "constant 'BLOCK' given twice");
    CHECK(tile_kernel_get(m1, "scale", &huge, 1, &bad) == TILE_ERR_COMPILE);
    CHECK_HAS(tile_ctx_last_error(ctx), "BLOCK too large");
    int grid[3] = {(N + 127) / 128, 1, 1};
    CHECK(tile_launch(k1, grid, shifted, 3, NULL) == TILE_OK);   /* (its variant: compiled ahead) */
    /* all there now: nothing asked of the backend */
    CHECK(tile_kernel_prefetch(ctx, reqs, 2) == TILE_OK);
    tile_free(ctx, x);
    tile_free(ctx, out);
    tile_ctx_destroy(ctx);
    if (check_failures) fprintf(stderr, "%d check(s) failed\n", check_failures);
    else printf("ok\n");
    return check_failures != 0;
}
