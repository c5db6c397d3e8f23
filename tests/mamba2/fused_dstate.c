/* fused_dstate.c: compute_out with its scores computed in the loop (FUSED = 1)
 * keeps C_m in one BLOCK_N tile, so dstate must fit in BLOCK_N.  Given a
 * smaller BLOCK_N the kernel writes NaN to y rather than an output missing
 * dstate's last columns; with BLOCK_N covering dstate it writes the output.
 * Checked on ones (the output is finite and not zero), on the interpreter or
 * the GPU (exit 77 when there is none).
 * usage: fused_dstate EXAMPLES_MAMBA2_DIR [--backend cpu|cuda] */
#include "tile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BT = 1, L = 64, H = 2, P = 32, N = 32, G = 1, Q = 64 };

static int failures;

#define TRY(call)                                                                                    \
    do {                                                                                             \
        tile_status st_ = (call);                                                                    \
        if (st_ != TILE_OK) {                                                                        \
            fprintf(stderr, "%s:%d: %s: %s\n%s\n", __FILE__, __LINE__, #call, tile_status_name(st_), \
                    tile_ctx_last_error(ctx));                                                       \
            return -1;                                                                               \
        }                                                                                            \
    } while (0)

static tile_arg arr(void *data, int rank, int64_t e0, int64_t e1, int64_t e2, int64_t e3, int64_t e4) {
    const int64_t shape[5] = {e0, e1, e2, e3, e4};
    return tile_arg_array(tile_array_contiguous(data, TILE_F32, rank, shape));
}

/* The backend's copy of n floats (device memory on CUDA); NULL on failure. */
static void *to_device(tile_ctx *ctx, const float *host, size_t n) {
    void *dev = NULL;
    if (tile_malloc(ctx, n * sizeof *host, &dev) != TILE_OK) return NULL;
    if (tile_memcpy_h2d(ctx, dev, host, n * sizeof *host) != TILE_OK) {
        tile_free(ctx, dev);
        return NULL;
    }
    return dev;
}

static float *filled(size_t n, float v) {
    float *p = malloc(n * sizeof *p);
    if (p)
        for (size_t i = 0; i < n; i++) p[i] = v;
    return p;
}

/* Runs compute_out_f32_sf32 with FUSED = 1 and BLOCK_N = block_n on dstate N;
 * counts y's NaNs and its finite non-zero elements. */
static int run(tile_ctx *ctx, tile_module *mod, int block_n, int *nans, int *finite) {
    const tile_const consts[] = {{"CHUNK", 0, Q, 0},       {"BLOCK_M", 0, 64, 0}, {"BLOCK_P", 0, P, 0},
                                 {"BLOCK_N", 0, block_n, 0}, {"BLOCK_K", 0, 32, 0}, {"FUSED", 0, 1, 0},
                                 {"TF32", 0, 0, 0},         {"num_warps", 0, 4, 0}};
    tile_kernel *k = NULL;
    TRY(tile_kernel_get(mod, "compute_out_f32_sf32", consts, (int)(sizeof consts / sizeof consts[0]), &k));
    const size_t nx = (size_t)BT * L * H * P, nbc = (size_t)BT * L * G * N, ntok = (size_t)BT * H * L;
    const size_t nstate = (size_t)BT * (L / Q) * H * P * N;
    float *x = filled(nx, 1.0f), *b = filled(nbc, 1.0f), *c = filled(nbc, 1.0f), *d = filled((size_t)H * P, 1.0f);
    float *dt = filled(ntok, 0.5f), *cs = filled(ntok, 0.0f), *states = filled(nstate, 0.25f);
    float *y = filled(nx, 0.0f), zero[1] = {0};
    int rc = -1;
    void *dev[9] = {NULL};
    if (x && b && c && d && dt && cs && states && y) {
        const float *host[9] = {x, b, c, d, dt, cs, states, y, zero};
        const size_t count[9] = {nx, nbc, nbc, (size_t)H * P, ntok, ntok, nstate, nx, 1};
        for (int i = 0; i < 9; i++) dev[i] = to_device(ctx, host[i], count[i]);
    }
    if (dev[0] && dev[1] && dev[2] && dev[3] && dev[4] && dev[5] && dev[6] && dev[7] && dev[8]) {
        void *dummy = dev[8];
        const tile_arg args[] = {arr(dev[0], 4, BT, L, H, P, 0),    arr(dev[1], 4, BT, L, G, N, 0),
                                 arr(dev[2], 4, BT, L, G, N, 0),    arr(dummy, 5, BT, 0, G, 0, 0),
                                 arr(dummy, 4, 1, 1, 1, 1, 0),      arr(dev[3], 2, H, P, 0, 0, 0),
                                 arr(dev[4], 3, BT, H, L, 0, 0),    arr(dev[5], 3, BT, H, L, 0, 0),
                                 arr(dummy, 3, 1, 1, 1, 0, 0),      arr(dev[6], 5, BT, L / Q, H, P, N),
                                 arr(dev[7], 4, BT, L, H, P, 0)};
        const int grid[3] = {1, L / Q, BT * H};
        if (tile_launch(k, grid, args, (int)(sizeof args / sizeof args[0]), NULL) == TILE_OK &&
            tile_synchronize(ctx) == TILE_OK && tile_memcpy_d2h(ctx, y, dev[7], nx * sizeof *y) == TILE_OK) {
            *nans = *finite = 0;
            for (size_t i = 0; i < nx; i++) {
                if (isnan(y[i])) (*nans)++;
                else if (isfinite(y[i]) && y[i] != 0.0f) (*finite)++;
            }
            rc = 0;
        } else {
            fprintf(stderr, "launch failed: %s\n", tile_ctx_last_error(ctx));
        }
    }
    for (int i = 0; i < 9; i++) tile_free(ctx, dev[i]);
    free(x), free(b), free(c), free(d), free(dt), free(cs), free(states), free(y);
    return rc;
}

int main(int argc, char **argv) {
    const int cuda = argc == 4 && !strcmp(argv[2], "--backend") && !strcmp(argv[3], "cuda");
    if (argc != 2 && !(argc == 4 && !strcmp(argv[2], "--backend") && (cuda || !strcmp(argv[3], "cpu")))) {
        fprintf(stderr, "usage: fused_dstate EXAMPLES_MAMBA2_DIR [--backend cpu|cuda]\n");
        return 2;
    }
    tile_ctx *ctx = NULL;
    tile_status st = tile_ctx_create(&ctx, cuda ? TILE_BACKEND_CUDA : TILE_BACKEND_CPU, 0);
    if (st != TILE_OK) {
        fprintf(stderr, "no %s context: %s\n", cuda ? "CUDA" : "CPU", ctx ? tile_ctx_last_error(ctx) : "");
        tile_ctx_destroy(ctx);
        return cuda && (st == TILE_ERR_NO_DEVICE || st == TILE_ERR_UNSUPPORTED) ? 77 : 1;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/compute_out.tile", argv[1]);
    tile_module *mod = NULL;
    if (tile_module_load_file(ctx, path, &mod) != TILE_OK) {
        fprintf(stderr, "%s\n", tile_ctx_last_error(ctx));
        tile_ctx_destroy(ctx);
        return 1;
    }
    const size_t total = (size_t)BT * L * H * P;
    int nans = -1, finite = -1;
    if (run(ctx, mod, N, &nans, &finite) != 0 || nans != 0 || finite != (int)total) {
        fprintf(stderr, "BLOCK_N = dstate = %d: %d NaN and %d finite non-zero of %zu, expected 0 and all\n", N, nans,
                finite, total);
        failures++;
    }
    if (run(ctx, mod, N / 2, &nans, &finite) != 0 || nans != (int)total) {
        fprintf(stderr, "BLOCK_N = %d < dstate = %d: %d NaN of %zu, expected all\n", N / 2, N, nans, total);
        failures++;
    }
    tile_ctx_destroy(ctx);
    if (failures) return 1;
    printf("fused_dstate: BLOCK_N covering dstate writes y; a smaller one writes NaN\n");
    return 0;
}
