/* bench_gpu.c: GPU benchmarks of kernels written in the tile language.
 *   - matmul (examples/matmul.tile) in bf16 and tf32 at 4096^3 and 8192^3
 *     against cuBLAS (cublasGemmEx), B stored K x N; and tf32 with B stored
 *     N x K ("nt", a linear layer's weight; the orientation wgmma reads tf32
 *     in, where K x N takes a transposed copy), against cuBLAS on the same
 *     layout;
 *   - row softmax and layernorm (examples/) against the bandwidth of a
 *     device-to-device copy, on inputs larger than the L2 cache;
 *   - JIT time per kernel: cold (empty cache) and on a disk-cache hit; and all of
 *     them cold at once (tile_kernel_prefetch) against the sum one at a time.
 * CUDA events, warm-up runs, medians.  Prints a table last.
 *   bench_gpu [ROOT]      (ROOT: the repository, for examples/) */
#include "tile.h"

#include <cublas_v2.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char root[1024] = ".";
static char table[16384];
static size_t table_len;

#define ROW(...) (table_len += (size_t)snprintf(table + table_len, sizeof table - table_len, __VA_ARGS__))

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

static void die(tile_ctx *ctx, const char *what) {
    fprintf(stderr, "%s: %s\n", what, ctx ? tile_ctx_last_error(ctx) : "");
    exit(1);
}

static void *dev_random(tile_ctx *ctx, tile_dtype t, size_t n, unsigned seed) {
    size_t es = (size_t)tile_dtype_size(t);
    unsigned char *h = malloc(n * es);
    srand(seed);
    for (size_t i = 0; i < n; i++) {
        float f = (float)rand() / (float)RAND_MAX * 2.0f - 1.0f;
        if (t == TILE_F32) memcpy(h + i * 4, &f, 4);
        else {   /* bf16: the top half of the f32 */
            unsigned u;
            memcpy(&u, &f, 4);
            unsigned short b = (unsigned short)(u >> 16);
            memcpy(h + i * 2, &b, 2);
        }
    }
    void *d;
    if (tile_malloc(ctx, n * es, &d) != TILE_OK || tile_memcpy_h2d(ctx, d, h, n * es) != TILE_OK) die(ctx, "alloc");
    free(h);
    return d;
}

typedef void (*RunFn)(void *arg);

/* Median milliseconds of `iters` timed runs after `warm` warm-up runs. */
static float time_median(tile_ctx *ctx, RunFn fn, void *arg, int warm, int iters) {
    tile_event *a, *b;
    tile_event_create(ctx, &a);
    tile_event_create(ctx, &b);
    for (int i = 0; i < warm; i++) fn(arg);
    float ms[64];
    if (iters > 64) iters = 64;
    for (int i = 0; i < iters; i++) {
        tile_event_record(a, NULL);
        fn(arg);
        tile_event_record(b, NULL);
        if (tile_event_elapsed_ms(a, b, &ms[i]) != TILE_OK) die(ctx, "timing");
    }
    tile_event_destroy(a);
    tile_event_destroy(b);
    qsort(ms, (size_t)iters, sizeof ms[0], cmp_float);
    return ms[iters / 2];
}

/* ---- tile kernels ------------------------------------------------------------------ */

typedef struct Launch {
    tile_kernel *k;
    int grid[3];
    tile_arg args[8];
    int nargs;
} Launch;

static void run_launch(void *p) {
    Launch *l = p;
    if (tile_launch(l->k, l->grid, l->args, l->nargs, NULL) != TILE_OK) {
        fprintf(stderr, "launch failed\n");
        exit(1);
    }
}

static tile_module *load(tile_ctx *ctx, const char *rel) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    tile_module *m;
    if (tile_module_load_file(ctx, path, &m) != TILE_OK) die(ctx, path);
    return m;
}

/* ---- matmul ----------------------------------------------------------------------- */

/* The products timed: operand dtype, and how B is stored. */
typedef enum { MM_BF16, MM_TF32, MM_TF32_NT } MatmulKind;
static const struct {
    const char *label, *kernel;   /* in the table; in examples/matmul.tile */
    int tf32, nt;                 /* nt: b holds B^T (N x K, row-major) */
} matmul_kinds[] = {
    [MM_BF16] = {"bf16", "matmul_bf16", 0, 0},
    [MM_TF32] = {"tf32", "matmul_tf32", 1, 0},
    [MM_TF32_NT] = {"tf32nt", "matmul_nt_tf32", 1, 1},
};

typedef struct Gemm {
    cublasHandle_t h;
    int n;
    MatmulKind kind;
    void *a, *b, *c;
} Gemm;

static void run_cublas(void *p) {
    Gemm *g = p;
    float one = 1, zero = 0;
    /* row-major C = A B is column-major C^T = B^T A^T */
    cublasStatus_t st;
    /* nt: column-major C^T = (B^T)^T A^T, B^T's memory read as its column-major transpose */
    cublasOperation_t opb = matmul_kinds[g->kind].nt ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (matmul_kinds[g->kind].tf32)
        st = cublasGemmEx(g->h, opb, CUBLAS_OP_N, g->n, g->n, g->n, &one, g->b, CUDA_R_32F, g->n, g->a,
                          CUDA_R_32F, g->n, &zero, g->c, CUDA_R_32F, g->n, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT);
    else
        st = cublasGemmEx(g->h, opb, CUBLAS_OP_N, g->n, g->n, g->n, &one, g->b, CUDA_R_16BF, g->n, g->a,
                          CUDA_R_16BF, g->n, &zero, g->c, CUDA_R_32F, g->n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (st != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "cublas failed: %d\n", (int)st);
        exit(1);
    }
}

/* Relative L2 difference of two device arrays of n floats. */
static double rel_l2(tile_ctx *ctx, const void *x, const void *ref, size_t n) {
    float *hx = malloc(n * 4), *hr = malloc(n * 4);
    if (!hx || !hr || tile_memcpy_d2h(ctx, hx, x, n * 4) != TILE_OK || tile_memcpy_d2h(ctx, hr, ref, n * 4) != TILE_OK)
        die(ctx, "copy back");
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)hx[i] - hr[i];
        num += d * d;
        den += (double)hr[i] * hr[i];
    }
    free(hx);
    free(hr);
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* Is `word` one of the comma-separated words of `list`? */
static bool has_word(const char *list, const char *word) {
    size_t n = strlen(word);
    for (const char *p = list; (p = strstr(p, word)) != NULL; p += n)
        if ((p == list || p[-1] == ',') && (p[n] == '\0' || p[n] == ',')) return true;
    return false;
}

static void bench_matmul(tile_ctx *ctx, cublasHandle_t h, int n, MatmulKind kind) {
    /* TILEC_BENCH_MATMUL_FILE: another program with kernels of the same names and
     * constants (an experiment written by hand), relative to ROOT */
    const char *file = getenv("TILEC_BENCH_MATMUL_FILE");
    tile_module *m = load(ctx, file && *file ? file : "examples/matmul.tile");
    const char *label = matmul_kinds[kind].label;
    tile_dtype in = matmul_kinds[kind].tf32 ? TILE_F32 : TILE_BF16;
    size_t nn = (size_t)n * n;
    void *a = dev_random(ctx, in, nn, 1), *b = dev_random(ctx, in, nn, 2), *c, *ref;
    if (tile_malloc(ctx, nn * 4, &c) != TILE_OK || tile_malloc(ctx, nn * 4, &ref) != TILE_OK) die(ctx, "alloc");
    int64_t shape[2] = {n, n};
    /* cuBLAS's product, which every configuration's must match (the same
     * inputs and f32 accumulation: only the order of the sums differs) */
    Gemm g = {h, n, kind, a, b, ref};
    run_cublas(&g);
    /* warp tiles 32x64 (8 warps on 128x128) up to 64x64 (4 warps on 128x128, 8 on 128x256);
     * on an sm_90 device they run on wgmma where their loop is pipelined, tf32 with B
     * copied transposed each iteration (TILEC_WGMMA=0: mma.sync) */
    static const int default_cfgs[][4] = {{128, 128, 32, 8}, {128, 128, 32, 4}, {128, 256, 32, 8}, {128, 64, 32, 4},
                                          {64, 128, 32, 4},  {64, 64, 32, 4},   {128, 128, 64, 8}, {128, 128, 64, 4},
                                          {128, 256, 64, 8}, {256, 128, 64, 8}, {64, 256, 64, 4}};
    /* TILEC_BENCH_CONFIGS=128x128x64x4,...: these instead (BMxBNxBKxWARPS; bench/ab_matmul.sh) */
    const char *only_cfgs = getenv("TILEC_BENCH_CONFIGS");
    int cfgs[32][4];
    size_t ncfgs = 0;
    if (only_cfgs && *only_cfgs) {
        for (const char *p = only_cfgs; *p && ncfgs < 32;) {
            int *c = cfgs[ncfgs], used = 0;
            if (sscanf(p, "%dx%dx%dx%d%n", &c[0], &c[1], &c[2], &c[3], &used) != 4 || used == 0) {
                fprintf(stderr, "TILEC_BENCH_CONFIGS: expected BMxBNxBKxWARPS at '%s'\n", p);
                exit(2);
            }
            ncfgs++;
            p += used;
            if (*p == ',') p++;
        }
    } else {
        memcpy(cfgs, default_cfgs, sizeof default_cfgs);
        ncfgs = sizeof default_cfgs / sizeof default_cfgs[0];
    }
    double best_ms = 1e30;
    char best[64] = "";
    /* TILEC_BENCH_GROUP_M: the blocks' order over C (examples/matmul.tile, tile_of; 0: bid(0), bid(1)) */
    const char *group = getenv("TILEC_BENCH_GROUP_M");
    for (size_t i = 0; i < ncfgs; i++) {
        tile_const cs[5] = {{"BM", 0, cfgs[i][0], 0}, {"BN", 0, cfgs[i][1], 0}, {"BK", 0, cfgs[i][2], 0},
                            {"num_warps", 0, cfgs[i][3], 0}, {"GROUP_M", 0, group ? atoi(group) : 0, 0}};
        tile_kernel *k;
        if (tile_kernel_get(m, matmul_kinds[kind].kernel, cs, group ? 5 : 4, &k) != TILE_OK) {
            fprintf(stderr, "config %d: %s\n", (int)i, tile_ctx_last_error(ctx));
            continue;
        }
        Launch l = {k, {(n + cfgs[i][0] - 1) / cfgs[i][0], (n + cfgs[i][1] - 1) / cfgs[i][1], 1}, {{0}}, 3};
        l.args[0] = tile_arg_array(tile_array_contiguous(a, in, 2, shape));
        l.args[1] = tile_arg_array(tile_array_contiguous(b, in, 2, shape));
        l.args[2] = tile_arg_array(tile_array_contiguous(c, TILE_F32, 2, shape));
        if (tile_memset(ctx, c, 0xff, nn * 4) != TILE_OK) die(ctx, "poison");   /* NaN: unwritten elements fail */
        float ms = time_median(ctx, run_launch, &l, 2, n >= 8192 ? 5 : 10);
        double err = rel_l2(ctx, c, ref, nn);
        int ok = err < 1e-3;   /* far below any wrong layout (O(1)), above reordered sums */
        printf("  matmul %s n=%d BM=%d BN=%d BK=%d warps=%d: %.3f ms, %.1f TFLOP/s, rel. L2 vs cuBLAS %.1e%s\n",
               label, n, cfgs[i][0], cfgs[i][1], cfgs[i][2], cfgs[i][3], ms,
               2.0 * n * (double)nn / ms / 1e9, err, ok ? "" : "  WRONG: not counted");
        if (ok && ms < best_ms) {
            best_ms = ms;
            snprintf(best, sizeof best, "%dx%dx%d/%dw", cfgs[i][0], cfgs[i][1], cfgs[i][2], cfgs[i][3]);
        }
    }
    if (!best[0]) {   /* every configuration failed or was wrong, or none was asked for */
        ROW("matmul %-6s %5d^3       no configuration ran correctly (TILEC_BENCH_CONFIGS=%s)\n", label, n,
            only_cfgs ? only_cfgs : "all");
    } else {
        float cms = time_median(ctx, run_cublas, &g, 2, n >= 8192 ? 5 : 10);
        double tfl = 2.0 * n * (double)nn / best_ms / 1e9, ctfl = 2.0 * n * (double)nn / cms / 1e9;
        ROW("matmul %-6s %5d^3       %8.3f ms %7.1f TF/s | cuBLAS %8.3f ms %7.1f TF/s | %5.1f%%  (%s)\n",
            label, n, best_ms, tfl, cms, ctfl, 100.0 * tfl / ctfl, best);
    }
    tile_free(ctx, a);
    tile_free(ctx, b);
    tile_free(ctx, c);
    tile_free(ctx, ref);
    tile_module_release(m);
}

/* ---- bandwidth-bound kernels --------------------------------------------------------- */

typedef struct Copy {
    tile_ctx *ctx;
    void *dst, *src;
    size_t bytes;
} Copy;

static void run_copy(void *p) {
    Copy *c = p;
    tile_memcpy_d2d(c->ctx, c->dst, c->src, c->bytes);
}

static void bench_rows(tile_ctx *ctx, int rows, int cols) {
    size_t n = (size_t)rows * cols;
    void *x = dev_random(ctx, TILE_F32, n, 3), *out, *w = dev_random(ctx, TILE_F32, (size_t)cols, 4),
         *b = dev_random(ctx, TILE_F32, (size_t)cols, 5);
    if (tile_malloc(ctx, n * 4, &out) != TILE_OK) die(ctx, "alloc");
    Copy cp = {ctx, out, x, n * 4};
    float copy_ms = time_median(ctx, run_copy, &cp, 3, 20);
    double copy_gbs = 2.0 * n * 4 / copy_ms / 1e6;
    ROW("d2d copy     %5dx%-5d   %8.3f ms %7.0f GB/s\n", rows, cols, copy_ms, copy_gbs);
    int64_t shape[2] = {rows, cols}, shape1[1] = {cols};
    struct { const char *file, *kernel; } ks[] = {{"examples/softmax.tile", "softmax_row"},
                                                  {"examples/layernorm.tile", "layernorm"}};
    for (int i = 0; i < 2; i++) {
        tile_module *m = load(ctx, ks[i].file);
        double best = 1e30;
        int best_w = 0;
        for (int warps = 4; warps <= 16; warps *= 2) {
            tile_const cs[2] = {{"BLOCK_N", 0, cols, 0}, {"num_warps", 0, warps, 0}};
            tile_kernel *k;
            if (tile_kernel_get(m, ks[i].kernel, cs, 2, &k) != TILE_OK) {
                fprintf(stderr, "%s: %s\n", ks[i].kernel, tile_ctx_last_error(ctx));
                continue;
            }
            Launch l = {k, {rows, 1, 1}, {{0}}, 0};
            l.args[l.nargs++] = tile_arg_array(tile_array_contiguous(x, TILE_F32, 2, shape));
            if (i == 1) {
                l.args[l.nargs++] = tile_arg_array(tile_array_contiguous(w, TILE_F32, 1, shape1));
                l.args[l.nargs++] = tile_arg_array(tile_array_contiguous(b, TILE_F32, 1, shape1));
            }
            l.args[l.nargs++] = tile_arg_array(tile_array_contiguous(out, TILE_F32, 2, shape));
            if (i == 1) l.args[l.nargs++] = tile_arg_f32(1e-5f);
            float ms = time_median(ctx, run_launch, &l, 3, 20);
            printf("  %s %dx%d warps=%d: %.3f ms, %.0f GB/s\n", ks[i].kernel, rows, cols, warps, ms, 2.0 * n * 4 / ms / 1e6);
            if (ms < best) best = ms, best_w = warps;
        }
        double gbs = 2.0 * n * 4 / best / 1e6;
        ROW("%-12s %5dx%-5d   %8.3f ms %7.0f GB/s | %5.1f%% of copy (%d warps)\n", ks[i].kernel, rows, cols, best, gbs,
            100.0 * gbs / copy_gbs, best_w);
        tile_module_release(m);
    }
    tile_free(ctx, x);
    tile_free(ctx, out);
    tile_free(ctx, w);
    tile_free(ctx, b);
}

/* ---- JIT times -------------------------------------------------------------------------- */

static void bench_jit(const char *cache_dir) {
    struct { const char *file, *kernel; tile_const c[4]; int nc; } ks[] = {
        {"examples/matmul.tile", "matmul_bf16", {{"BM", 0, 128, 0}, {"BN", 0, 128, 0}, {"BK", 0, 32, 0}, {"num_warps", 0, 8, 0}}, 4},
        {"examples/matmul.tile", "matmul_tf32", {{"BM", 0, 128, 0}, {"BN", 0, 128, 0}, {"BK", 0, 32, 0}, {"num_warps", 0, 8, 0}}, 4},
        {"examples/softmax.tile", "softmax_row", {{"BLOCK_N", 0, 4096, 0}}, 1},
        {"examples/layernorm.tile", "layernorm", {{"BLOCK_N", 0, 4096, 0}}, 1},
        {"examples/vector_add.tile", "vector_add", {{"BLOCK", 0, 1024, 0}}, 1},
    };
    enum { NK = sizeof ks / sizeof ks[0] };
    setenv("TILE_CACHE_DIR", cache_dir, 1);
    double cold_sum = 0;
    for (size_t i = 0; i < NK; i++) {
        double t[2];
        for (int pass = 0; pass < 2; pass++) {   /* 0: cold (empty cache); 1: disk-cache hit in a new context */
            tile_ctx *ctx;
            if (tile_ctx_create(&ctx, TILE_BACKEND_CUDA, 0) != TILE_OK) die(ctx, "context");
            tile_module *m = load(ctx, ks[i].file);
            tile_kernel *k;
            double t0 = now_ms();
            if (tile_kernel_get(m, ks[i].kernel, ks[i].c, ks[i].nc, &k) != TILE_OK) die(ctx, ks[i].kernel);
            t[pass] = now_ms() - t0;
            tile_ctx_destroy(ctx);
        }
        ROW("jit %-20s cold %7.1f ms | cache hit %6.1f ms\n", ks[i].kernel, t[0], t[1]);
        cold_sum += t[0];
    }
    /* the same kernels cold again, compiled ahead all at once (tile_kernel_prefetch: one
     * NVRTC per thread) and then got: a driver's start-up, or a tuner's batch of points */
    char ahead_dir[4200];
    snprintf(ahead_dir, sizeof ahead_dir, "%s/ahead", cache_dir);
    setenv("TILE_CACHE_DIR", ahead_dir, 1);
    tile_ctx *ctx;
    if (tile_ctx_create(&ctx, TILE_BACKEND_CUDA, 0) != TILE_OK) die(ctx, "context");
    tile_kernel_request reqs[NK];
    for (size_t i = 0; i < NK; i++) reqs[i] = (tile_kernel_request){load(ctx, ks[i].file), ks[i].kernel, ks[i].c, ks[i].nc, NULL, 0};
    double t0 = now_ms();
    if (tile_kernel_prefetch(ctx, reqs, NK) != TILE_OK) die(ctx, "prefetch");
    for (size_t i = 0; i < NK; i++) {
        tile_kernel *k;
        if (tile_kernel_get(reqs[i].module, ks[i].kernel, ks[i].c, ks[i].nc, &k) != TILE_OK) die(ctx, ks[i].kernel);
    }
    double ahead = now_ms() - t0;
    tile_ctx_destroy(ctx);
    setenv("TILE_CACHE_DIR", cache_dir, 1);
    ROW("jit all %d cold, one at a time %7.1f ms | compiled ahead at once %7.1f ms (%.1fx)\n", (int)NK, cold_sum,
        ahead, cold_sum / ahead);
}

int main(int argc, char **argv) {
    if (argc > 1) snprintf(root, sizeof root, "%s", argv[1]);
    tile_ctx *ctx;
    if (tile_ctx_create(&ctx, TILE_BACKEND_CUDA, 0) != TILE_OK) {
        printf("skipped: %s\n", tile_ctx_last_error(ctx));
        return 77;
    }
    char device[256];
    snprintf(device, sizeof device, "%s", tile_ctx_device_name(ctx));
    printf("device: %s\n", device);
    char cache[] = "/tmp/tilec-bench-XXXXXX";
    if (!mkdtemp(cache)) return 1;
    bench_jit(cache);
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) { fprintf(stderr, "cublasCreate failed\n"); return 1; }
    const char *only = getenv("TILEC_BENCH_ONLY");
    if (!only || strstr(only, "rows")) {
        bench_rows(ctx, 16384, 4096);
        bench_rows(ctx, 65536, 1024);
    }
    /* "matmul": all three; "bf16", "tf32", "tf32nt": those alone (comma-separated) */
    bool mm[3];
    for (int k = 0; k < 3; k++) mm[k] = !only || strstr(only, "matmul") || has_word(only, matmul_kinds[k].label);
    if (mm[MM_BF16] || mm[MM_TF32] || mm[MM_TF32_NT])
        for (int n = 4096; n <= 8192; n *= 2)
            for (int k = 0; k < 3; k++)
                if (mm[k]) bench_matmul(ctx, h, n, (MatmulKind)k);
    cublasDestroy(h);
    tile_ctx_destroy(ctx);
    printf("\n== summary (%s)\n%s", device, table);
    return 0;
}
