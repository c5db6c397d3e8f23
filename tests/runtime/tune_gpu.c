/* tune_gpu.c: tile_tune on the CUDA backend: a two-axis space timed with CUDA
 * events and the L2 flushed, the winner correct against a host computation and
 * its num_warps hint in the IR, a second call served from the cache, and the
 * device name in the key (the CPU backend does not share the entry).
 * Exits 77 (skipped) where there is no CUDA driver or device.
 * usage: tune_gpu SCRATCH_DIR */
#include "check.h"
#include "ir.h"
#include "tile.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *program =
    "kernel saxpy(x: f32[N], y: f32[N], out: f32[N], a: f32, const BLOCK: i32) {\n"
    "    let i = bid(0);\n"
    "    let tx = load(x, index=(i,), shape=(BLOCK,));\n"
    "    let ty = load(y, index=(i,), shape=(BLOCK,));\n"
    "    store(out, index=(i,), tile=tx * a + ty);\n"
    "}\n"
    "tune saxpy { BLOCK in (256, 1024, 4096); num_warps in (4, 8); }\n";

enum { N = 1 << 22 };

static void grid_of(const tile_const *consts, int n, int grid[3], void *user) {
    int64_t block = 256;
    for (int i = 0; i < n; i++)
        if (strcmp(consts[i].name, "BLOCK") == 0) block = consts[i].i;
    grid[0] = (int)((N + block - 1) / block);
    grid[1] = grid[2] = 1;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: tune_gpu SCRATCH_DIR\n");
        return 2;
    }
    tile_ctx *ctx = NULL;
    if (tile_ctx_create(&ctx, TILE_BACKEND_CUDA, 0) != TILE_OK) {
        fprintf(stderr, "skipped: %s\n", tile_ctx_last_error(ctx));
        tile_ctx_destroy(ctx);
        return 77;
    }
    char cache[1200];
    mkdir(argv[1], 0755);
    snprintf(cache, sizeof cache, "%s/cache_%d", argv[1], (int)getpid());
    tile_module *mod = NULL;
    if (tile_module_load_string(ctx, "tune_gpu.tile", program, &mod) != TILE_OK) {
        fprintf(stderr, "%s", tile_ctx_last_error(ctx));
        return 1;
    }
    float *hx = malloc(N * sizeof *hx), *hy = malloc(N * sizeof *hy), *ho = malloc(N * sizeof *ho);
    void *dx, *dy, *dout;
    CHECK(hx && hy && ho);
    for (int i = 0; i < N; i++) {
        hx[i] = (float)(i % 1000);
        hy[i] = 0.5f;
    }
    size_t bytes = (size_t)N * sizeof(float);
    CHECK(tile_malloc(ctx, bytes, &dx) == TILE_OK && tile_malloc(ctx, bytes, &dy) == TILE_OK &&
          tile_malloc(ctx, bytes, &dout) == TILE_OK);
    CHECK(tile_memcpy_h2d(ctx, dx, hx, bytes) == TILE_OK && tile_memcpy_h2d(ctx, dy, hy, bytes) == TILE_OK);
    int64_t shape[1] = {N};
    tile_arg args[4] = {tile_arg_array(tile_array_contiguous(dx, TILE_F32, 1, shape)),
                        tile_arg_array(tile_array_contiguous(dy, TILE_F32, 1, shape)),
                        tile_arg_array(tile_array_contiguous(dout, TILE_F32, 1, shape)), tile_arg_f32(3.0f)};

    tile_tune_stats stats;
    tile_tune_options o = tile_tune_default_options();
    o.verbose = 1;
    o.cache_dir = cache;
    o.stats = &stats;
    tile_kernel *best = NULL;
    tile_const bc[4];
    int nbc = 4;
    tile_status st = tile_tune(mod, "saxpy", NULL, 0, grid_of, NULL, args, 4, &o, &best, bc, &nbc);
    CHECK(st == TILE_OK);
    if (st != TILE_OK) fprintf(stderr, "%s\n", tile_ctx_last_error(ctx));
    CHECK(stats.npoints == 6 && stats.nskipped + stats.ntimed == 6 && stats.ntimed >= 1 && stats.cache_stored);
    CHECK(stats.best_ms > 0);
    if (st == TILE_OK) {
        int64_t warps = -1;
        for (int i = 0; i < nbc; i++)
            if (strcmp(bc[i].name, "num_warps") == 0) warps = bc[i].i;
        const IrFunc *f = tile_kernel_ir(best);
        CHECK(f && f->num_warps == warps);
        int grid[3];
        CHECK(tile_memset(ctx, dout, 0, bytes) == TILE_OK);
        grid_of(bc, nbc, grid, NULL);
        CHECK(tile_launch(best, grid, args, 4, NULL) == TILE_OK);
        CHECK(tile_memcpy_d2h(ctx, ho, dout, bytes) == TILE_OK);
        int bad = 0;
        for (int i = 0; i < N; i++) bad += ho[i] != 3.0f * hx[i] + 0.5f;
        CHECK(bad == 0);
    }
    /* the second call: the cache, nothing timed */
    nbc = 4;
    CHECK(tile_tune(mod, "saxpy", NULL, 0, grid_of, NULL, args, 4, &o, &best, bc, &nbc) == TILE_OK);
    CHECK(stats.cache_hit && stats.ntimed == 0);

    tile_free(ctx, dx);
    tile_free(ctx, dy);
    tile_free(ctx, dout);
    free(hx);
    free(hy);
    free(ho);
    tile_ctx_destroy(ctx);
    if (check_failures) fprintf(stderr, "%d check(s) failed\n", check_failures);
    return check_failures != 0;
}
