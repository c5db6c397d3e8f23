/* rel_soak.c: many launches in one process, and no growth in memory.
 *
 *   1. 100,000 launches of a small kernel (y += a * x on 16 elements); y is
 *      checked exactly at the end (every launch counted once).
 *   2. 1,000 small Mamba-2 forwards (the three examples/mamba2 programs, f32 with exact
 *      products): each allocates its intermediates and outputs, runs the three
 *      kernels, copies y back and frees; the first is checked against a
 *      float64 recurrence, every later one must equal it.
 *   3. Context life cycles: create, load, specialise, launch, release, destroy.
 * Host memory (resident set, /proc/self/statm) and, on CUDA, device memory in
 * use (tile_mem_info) are printed after a warm-up and at the end of each
 * phase; growth beyond a small slack fails.
 *
 *   rel_soak TILE_DIR [--backend cpu|cuda] [--launches N] [--forwards N] [--cycles N]
 *            [--host-slack-kb N]   (under a tool that grows the process itself)
 *   rel_soak --probe --backend cuda      exit 0 if the backend is here, else 77
 * Exit status: 0 ok, 1 a failed check, 77 no such backend here. */
#include "rel_common.h"

#include <math.h>
#include <stdint.h>
#include <time.h>

/* Host slack: 1 MiB on the CPU; 4 MiB with CUDA, whose driver allocates on
 * the host for its own reasons (contexts, module images). */
static long host_slack_kb = 1024;
enum { DEVICE_SLACK_MB = 16 };

/* Under AddressSanitizer freed memory sits in a quarantine of up to 256 MiB, so
 * the resident set grows whatever the program does: there the growth is only
 * reported, and LeakSanitizer's check at exit is what catches a leak. */
#if defined(__SANITIZE_ADDRESS__)
#define REL_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define REL_UNDER_ASAN 1
#endif
#endif
#ifndef REL_UNDER_ASAN
#define REL_UNDER_ASAN 0
#endif

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---- device memory (CUDA only) ------------------------------------------- */

/* Device memory in use in MiB, or -1 when unknown (CPU backend). */
static long device_used_mb(tile_ctx *ctx) {
    if (tile_ctx_backend(ctx) != TILE_BACKEND_CUDA) return -1;
    if (tile_synchronize(ctx) != TILE_OK) return -1;
    size_t free_b = 0, total_b = 0;
    if (tile_mem_info(ctx, &free_b, &total_b) != TILE_OK) return -1;
    return (long)((total_b - free_b) >> 20);
}

typedef struct Mem { long host_kb, device_mb; } Mem;

static Mem mem_now(tile_ctx *ctx) { return (Mem){rel_rss_kb(), device_used_mb(ctx)}; }

static void mem_report(const char *phase, Mem start, Mem end, tile_ctx *ctx) {
    printf("  %s: host RSS %ld KiB -> %ld KiB (%+ld)", phase, start.host_kb, end.host_kb, end.host_kb - start.host_kb);
    if (start.device_mb >= 0 && end.device_mb >= 0)
        printf("; device in use %ld MiB -> %ld MiB (%+ld)", start.device_mb, end.device_mb,
               end.device_mb - start.device_mb);
    else
        printf("; device memory: %s", tile_ctx_backend(ctx) == TILE_BACKEND_CUDA ? "unknown (tile_mem_info failed)" : "n/a on cpu");
    printf("\n");
    REL_CHECK(end.host_kb - start.host_kb <= host_slack_kb, "%s: host memory grew by %ld KiB (slack %ld KiB)", phase,
              end.host_kb - start.host_kb, host_slack_kb);
    if (start.device_mb >= 0 && end.device_mb >= 0)
        REL_CHECK(end.device_mb - start.device_mb <= DEVICE_SLACK_MB, "%s: device memory grew by %ld MiB (slack %d MiB)",
                  phase, end.device_mb - start.device_mb, DEVICE_SLACK_MB);
}

/* ---- 1. many launches of a small kernel --------------------------------- */

static const char *axpy_source =
    "kernel axpy(x: f32[N], y: f32[N], a: f32, const BLOCK: i32 = 16) {\n"
    "    let i = bid(0);\n"
    "    let t = load(x, index=(i,), shape=(BLOCK,)) * a + load(y, index=(i,), shape=(BLOCK,));\n"
    "    store(y, index=(i,), tile=t);\n"
    "}\n";

static int soak_launches(tile_ctx *ctx, long launches) {
    enum { N = 16, WARMUP = 1000 };
    tile_module *mod = NULL;
    tile_kernel *k = NULL;
    REL_TRY(ctx, tile_module_load_string(ctx, "axpy.tile", axpy_source, &mod));
    REL_TRY(ctx, tile_kernel_get(mod, "axpy", NULL, 0, &k));
    float host[N];
    for (int i = 0; i < N; i++) host[i] = (float)(i % 4);   /* x: 0 1 2 3 ... */
    void *x = NULL, *y = NULL;
    REL_TRY(ctx, tile_malloc(ctx, sizeof host, &x));
    REL_TRY(ctx, tile_malloc(ctx, sizeof host, &y));
    REL_TRY(ctx, tile_memcpy_h2d(ctx, x, host, sizeof host));
    REL_TRY(ctx, tile_memset(ctx, y, 0, sizeof host));
    const int64_t n = N;
    const tile_arg args[3] = {tile_arg_array(tile_array_contiguous(x, TILE_F32, 1, &n)),
                              tile_arg_array(tile_array_contiguous(y, TILE_F32, 1, &n)), tile_arg_f32(1.0f)};
    const int grid[3] = {1, 1, 1};
    Mem start = {0, 0};
    const double t0 = now_s();
    for (long i = 0; i < launches + WARMUP; i++) {
        if (i == WARMUP) start = mem_now(ctx);
        tile_status st = tile_launch(k, grid, args, 3, NULL);
        if (st != TILE_OK) {
            fprintf(stderr, "rel_soak: launch %ld failed: %s\n%s\n", i, tile_status_name(st), tile_ctx_last_error(ctx));
            rel_failures++;
            return -1;
        }
    }
    const Mem end = mem_now(ctx);
    const double secs = now_s() - t0;
    REL_TRY(ctx, tile_memcpy_d2h(ctx, host, y, sizeof host));
    int wrong = 0;
    for (int i = 0; i < N; i++) wrong += host[i] != (float)((i % 4) * (launches + WARMUP));
    printf("phase 1: %ld launches (+%d warm-up) of a %d-element kernel in %.1f s (%.1f us each)\n", launches,
           (int)WARMUP, N, secs, 1e6 * secs / (double)(launches + WARMUP));
    mem_report("launches", start, end, ctx);
    REL_CHECK(wrong == 0, "%d elements of y do not count every launch (y[1] = %g, want %ld)", wrong, host[1],
              launches + WARMUP);
    tile_free(ctx, x);
    tile_free(ctx, y);
    tile_module_release(mod);
    return 0;
}

/* ---- 2. small Mamba-2 forwards ------------------------------------------ */

/* batch 1, seqlen 128 (2 chunks of 64), 2 heads, 1 group, headdim 16, dstate 16. */
enum { BT = 1, L = 128, H = 2, G = 1, P = 16, NS = 16, Q = 64, NCHUNKS = L / Q };

typedef struct Forward {
    tile_kernel *kern[4];
    void *x, *dt, *A, *B, *C, *D, *bias, *dummy;   /* inputs, kept for the whole phase */
    float hx[BT * L * H * P], hdt[BT * L * H], hA[H], hB[BT * L * G * NS], hC[BT * L * G * NS], hD[H * P];
} Forward;

static uint64_t rng_state = 42;
static double uniform01(void) {   /* splitmix64 */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return ((double)((z ^ (z >> 31)) >> 11) + 0.5) * 0x1p-53;
}
static float normal(void) { return (float)(sqrt(-2.0 * log(uniform01())) * cos(6.283185307179586 * uniform01())); }

static tile_arg arr(void *data, tile_dtype dt, int rank, int64_t e0, int64_t e1, int64_t e2, int64_t e3, int64_t e4) {
    const int64_t shape[5] = {e0, e1, e2, e3, e4};
    return tile_arg_array(tile_array_contiguous(data, dt, rank, shape));
}

static int upload(tile_ctx *ctx, void **dev, const void *host, size_t bytes) {
    REL_TRY(ctx, tile_malloc(ctx, bytes, dev));
    REL_TRY(ctx, tile_memcpy_h2d(ctx, *dev, host, bytes));
    return 0;
}

static int forward_setup(tile_ctx *ctx, const char *dir, Forward *f, tile_module **mods) {
    for (int h = 0; h < H; h++) f->hA[h] = (float)-exp(uniform01() * log(16.0));
    for (size_t i = 0; i < sizeof f->hdt / 4; i++) f->hdt[i] = (float)(0.001 + 0.099 * uniform01());
    for (size_t i = 0; i < sizeof f->hx / 4; i++) f->hx[i] = normal();
    for (size_t i = 0; i < sizeof f->hB / 4; i++) f->hB[i] = normal();
    for (size_t i = 0; i < sizeof f->hC / 4; i++) f->hC[i] = normal();
    for (size_t i = 0; i < sizeof f->hD / 4; i++) f->hD[i] = normal();
    static const char *files[4] = {"chunk_cumsum.tile", "fwd_pass_state.tile", "compute_out.tile", "compute_out.tile"};
    static const char *names[4] = {"chunk_cumsum", "fwd_pass_state_f32_sf32", "compute_out_f32_sf32", "chunk_scores_f32"};
    const tile_const c[4][7] = {
        {{"CHUNK", 0, Q, 0}, {"BLOCK_H", 0, H, 0}, {"SOFTPLUS", 0, 0, 0}, {"EXACT", 0, 1, 0}},
        {{"CHUNK", 0, Q, 0}, {"BLOCK_K", 0, 64, 0}, {"BLOCK_P", 0, P, 0}, {"BLOCK_N", 0, NS, 0},
         {"HAS_INITIAL", 0, 0, 0}, {"TF32", 0, 0, 0}},
        {{"CHUNK", 0, Q, 0}, {"BLOCK_M", 0, 64, 0}, {"BLOCK_P", 0, P, 0}, {"BLOCK_N", 0, NS, 0},
         {"HAS_D", 0, 1, 0}, {"HAS_Z", 0, 0, 0}, {"TF32", 0, 0, 0}},
        {{"CHUNK", 0, Q, 0}, {"BLOCK_M", 0, 64, 0}, {"BLOCK_N", 0, NS, 0}, {"TF32", 0, 0, 0}}};
    const int nconsts[4] = {4, 6, 7, 4};
    for (int i = 0; i < 4; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        REL_TRY(ctx, tile_module_load_file(ctx, path, &mods[i]));
        REL_TRY(ctx, tile_kernel_get(mods[i], names[i], c[i], nconsts[i], &f->kern[i]));
    }
    if (upload(ctx, &f->x, f->hx, sizeof f->hx) || upload(ctx, &f->dt, f->hdt, sizeof f->hdt) ||
        upload(ctx, &f->A, f->hA, sizeof f->hA) || upload(ctx, &f->B, f->hB, sizeof f->hB) ||
        upload(ctx, &f->C, f->hC, sizeof f->hC) || upload(ctx, &f->D, f->hD, sizeof f->hD))
        return -1;
    REL_TRY(ctx, tile_malloc(ctx, H * 4, &f->bias));
    REL_TRY(ctx, tile_memset(ctx, f->bias, 0, H * 4));
    REL_TRY(ctx, tile_malloc(ctx, 16, &f->dummy));
    REL_TRY(ctx, tile_memset(ctx, f->dummy, 0, 16));
    return 0;
}

/* One forward: its own intermediates and output, freed before returning. */
static int forward_run(tile_ctx *ctx, Forward *f, float *y_host) {
    const size_t ntok = (size_t)BT * L * H * 4, nstates = (size_t)BT * NCHUNKS * H * P * NS * 4;
    void *dt_out = NULL, *cs = NULL, *cs_lo = NULL, *states = NULL, *final_states = NULL, *y = NULL, *cb = NULL;
    REL_TRY(ctx, tile_malloc(ctx, ntok, &dt_out));
    REL_TRY(ctx, tile_malloc(ctx, ntok, &cs));
    REL_TRY(ctx, tile_malloc(ctx, ntok, &cs_lo));   /* exact fp32: the decays' low parts */
    REL_TRY(ctx, tile_malloc(ctx, nstates, &states));
    REL_TRY(ctx, tile_malloc(ctx, (size_t)BT * H * P * NS * 4, &final_states));
    REL_TRY(ctx, tile_malloc(ctx, sizeof f->hx, &y));
    REL_TRY(ctx, tile_malloc(ctx, (size_t)BT * NCHUNKS * G * Q * Q * 4, &cb));
    const tile_arg a1[8] = {arr(f->A, TILE_F32, 1, H, 0, 0, 0, 0), arr(f->dt, TILE_F32, 3, BT, L, H, 0, 0),
                            arr(f->bias, TILE_F32, 1, H, 0, 0, 0, 0), arr(dt_out, TILE_F32, 3, BT, H, L, 0, 0),
                            arr(cs, TILE_F32, 3, BT, H, L, 0, 0), arr(cs_lo, TILE_F32, 3, BT, H, L, 0, 0),
                            tile_arg_f32(-INFINITY), tile_arg_f32(INFINITY)};
    const tile_arg a2[8] = {arr(f->x, TILE_F32, 4, BT, L, H, P, 0), arr(f->B, TILE_F32, 4, BT, L, G, NS, 0),
                            arr(dt_out, TILE_F32, 3, BT, H, L, 0, 0), arr(cs, TILE_F32, 3, BT, H, L, 0, 0),
                            arr(cs_lo, TILE_F32, 3, BT, H, L, 0, 0),
                            arr(f->dummy, TILE_F32, 4, 1, 1, 1, 1, 0), arr(states, TILE_F32, 5, BT, NCHUNKS, H, P, NS),
                            arr(final_states, TILE_F32, 4, BT, H, P, NS, 0)};
    const tile_arg a4[3] = {arr(f->B, TILE_F32, 4, BT, L, G, NS, 0), arr(f->C, TILE_F32, 4, BT, L, G, NS, 0),
                            arr(cb, TILE_F32, 5, BT, NCHUNKS, G, Q, Q)};
    const tile_arg a3[11] = {arr(f->x, TILE_F32, 4, BT, L, H, P, 0), arr(f->B, TILE_F32, 4, BT, L, G, NS, 0),
                            arr(f->C, TILE_F32, 4, BT, L, G, NS, 0),
                            arr(cb, TILE_F32, 5, BT, NCHUNKS, G, Q, Q), arr(f->dummy, TILE_F32, 4, 1, 1, 1, 1, 0),
                            arr(f->D, TILE_F32, 2, H, P, 0, 0, 0), arr(dt_out, TILE_F32, 3, BT, H, L, 0, 0),
                            arr(cs, TILE_F32, 3, BT, H, L, 0, 0), arr(cs_lo, TILE_F32, 3, BT, H, L, 0, 0),
                            arr(states, TILE_F32, 5, BT, NCHUNKS, H, P, NS),
                            arr(y, TILE_F32, 4, BT, L, H, P, 0)};
    const int g1[3] = {NCHUNKS, 1, BT}, g2[3] = {1, H, BT}, g3[3] = {1, NCHUNKS, BT * H}, g4[3] = {1, NCHUNKS, BT * G};
    REL_TRY(ctx, tile_launch(f->kern[0], g1, a1, 8, NULL));
    REL_TRY(ctx, tile_launch(f->kern[1], g2, a2, 8, NULL));
    REL_TRY(ctx, tile_launch(f->kern[3], g4, a4, 3, NULL));
    REL_TRY(ctx, tile_launch(f->kern[2], g3, a3, 11, NULL));
    REL_TRY(ctx, tile_memcpy_d2h(ctx, y_host, y, sizeof f->hx));
    void *bufs[7] = {dt_out, cs, cs_lo, states, final_states, y, cb};
    for (int i = 0; i < 7; i++) REL_TRY(ctx, tile_free(ctx, bufs[i]));
    return 0;
}

/* The float64 recurrence: h = exp(δA) h + δ x Bᵀ, y = h C + D x. */
static double forward_error(const Forward *f, const float *y) {
    double diff2 = 0, ref2 = 0;
    for (int b = 0; b < BT; b++)
        for (int h = 0; h < H; h++) {
            double state[P][NS] = {{0}};
            for (int t = 0; t < L; t++) {
                const size_t tok = ((size_t)b * L + t) * H + h;
                const double delta = f->hdt[tok], decay = exp(delta * f->hA[h]);
                const float *Bt = f->hB + ((size_t)b * L + t) * G * NS, *Ct = f->hC + ((size_t)b * L + t) * G * NS;
                for (int p = 0; p < P; p++) {
                    double acc = 0;
                    for (int n = 0; n < NS; n++) {
                        state[p][n] = decay * state[p][n] + delta * f->hx[tok * P + p] * Bt[n];
                        acc += state[p][n] * Ct[n];
                    }
                    acc += (double)f->hD[h * P + p] * f->hx[tok * P + p];
                    const double d = y[tok * P + p] - acc;
                    diff2 += d * d;
                    ref2 += acc * acc;
                }
            }
        }
    return sqrt(diff2 / ref2);
}

static int soak_forwards(tile_ctx *ctx, const char *dir, long forwards) {
    enum { WARMUP = 5 };
    static Forward f;
    static float first[BT * L * H * P], y[BT * L * H * P];
    tile_module *mods[4] = {0};
    int rc = forward_setup(ctx, dir, &f, mods);
    if (rc) return rc;
    if (forward_run(ctx, &f, first)) return -1;
    const double err = forward_error(&f, first);
    const int gpu = tile_ctx_backend(ctx) == TILE_BACKEND_CUDA;
    REL_CHECK(err <= (gpu ? 1e-4 : 1e-5), "the first forward's y is %.3e (relative L2) off the float64 recurrence", err);
    Mem start = {0, 0};
    long differing = 0;
    const double t0 = now_s();
    for (long i = 0; i < forwards + WARMUP; i++) {
        if (i == WARMUP) start = mem_now(ctx);
        if (forward_run(ctx, &f, y)) return -1;
        differing += memcmp(y, first, sizeof y) != 0;
    }
    const Mem end = mem_now(ctx);
    const double secs = now_s() - t0;
    printf("phase 2: %ld Mamba-2 forwards (+%d warm-up; batch %d, seqlen %d, heads %d, headdim %d, dstate %d) in %.1f s;"
           " the first %.2e off float64, %ld later ones differ from it\n",
           forwards, (int)WARMUP, BT, L, H, P, NS, secs, err, differing);
    mem_report("forwards", start, end, ctx);
    REL_CHECK(differing == 0, "%ld of %ld forwards gave a different y", differing, forwards + WARMUP);
    void *bufs[8] = {f.x, f.dt, f.A, f.B, f.C, f.D, f.bias, f.dummy};
    for (int i = 0; i < 8; i++) tile_free(ctx, bufs[i]);
    for (int i = 0; i < 4; i++) tile_module_release(mods[i]);
    return 0;
}

/* ---- 3. whole life cycles ----------------------------------------------- */

static int one_cycle(tile_backend_kind kind, int i) {
    tile_ctx *ctx = NULL;
    tile_status st = tile_ctx_create(&ctx, kind, 0);
    tile_module *mod = NULL;
    tile_kernel *k = NULL;
    void *x = NULL, *y = NULL;
    if (st == TILE_OK) st = tile_module_load_string(ctx, "axpy.tile", axpy_source, &mod);
    if (st == TILE_OK) st = tile_kernel_get(mod, "axpy", NULL, 0, &k);
    if (st == TILE_OK) st = tile_malloc(ctx, 64, &x);
    if (st == TILE_OK) st = tile_malloc(ctx, 64, &y);
    if (st == TILE_OK) st = tile_memset(ctx, x, 0, 64);
    if (st == TILE_OK) st = tile_memset(ctx, y, 0, 64);
    if (st == TILE_OK) {
        const int64_t n = 16;
        const tile_arg args[3] = {tile_arg_array(tile_array_contiguous(x, TILE_F32, 1, &n)),
                                  tile_arg_array(tile_array_contiguous(y, TILE_F32, 1, &n)), tile_arg_f32(2.0f)};
        const int grid[3] = {1, 1, 1};
        st = tile_launch(k, grid, args, 3, NULL);
        if (st == TILE_OK) st = tile_synchronize(ctx);
    }
    if (st != TILE_OK) {
        fprintf(stderr, "rel_soak: cycle %d: %s: %s\n", i, tile_status_name(st), tile_ctx_last_error(ctx));
        rel_failures++;
    }
    tile_free(ctx, x);
    tile_free(ctx, y);
    tile_module_release(mod);
    tile_ctx_destroy(ctx);
    return st == TILE_OK ? 0 : -1;
}

static int soak_cycles(tile_backend_kind kind, long cycles) {
    enum { WARMUP = 3 };
    long rss0 = 0;
    const double t0 = now_s();
    for (long i = 0; i < cycles + WARMUP; i++) {
        if (i == WARMUP) rss0 = rel_rss_kb();
        if (one_cycle(kind, (int)i)) return -1;
    }
    const long rss1 = rel_rss_kb();
    printf("phase 3: %ld context life cycles (create, load, specialise, launch, release, destroy) in %.2f s\n", cycles,
           now_s() - t0);
    printf("  cycles: host RSS %ld KiB -> %ld KiB (%+ld)\n", rss0, rss1, rss1 - rss0);
    REL_CHECK(rss1 - rss0 <= host_slack_kb, "life cycles: host memory grew by %ld KiB (slack %ld KiB)", rss1 - rss0,
              host_slack_kb);
    return 0;
}

int main(int argc, char **argv) {
    const tile_backend_kind kind = rel_backend_arg(argc, argv);
    int probe = 0;
    for (int i = 1; i < argc; i++) probe |= !strcmp(argv[i], "--probe");
    if (probe) {
        tile_ctx_destroy(rel_ctx_or_skip(kind, "rel_soak"));
        return 0;
    }
    if (argc < 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: rel_soak TILE_DIR [--backend cpu|cuda] [--launches N] [--forwards N] [--cycles N]"
                        " [--host-slack-kb N]\n");
        return 2;
    }
    const int gpu = kind == TILE_BACKEND_CUDA;
    if (gpu) host_slack_kb = 4096;
    if (REL_UNDER_ASAN) {
        host_slack_kb = 1L << 40;
        printf("rel_soak: AddressSanitizer build: host growth reported, not checked (LeakSanitizer checks leaks)\n");
    }
    const char *slack = rel_flag(argc, argv, "--host-slack-kb", NULL);
    if (slack) host_slack_kb = atol(slack);
    const long launches = atol(rel_flag(argc, argv, "--launches", "100000"));
    const long forwards = atol(rel_flag(argc, argv, "--forwards", "1000"));
    const long cycles = atol(rel_flag(argc, argv, "--cycles", gpu ? "30" : "2000"));
    tile_ctx *ctx = rel_ctx_or_skip(kind, "rel_soak");
    printf("rel_soak on %s; host RSS at start %ld KiB\n", tile_ctx_device_name(ctx), rel_rss_kb());
    if (launches > 0) soak_launches(ctx, launches);
    if (forwards > 0) soak_forwards(ctx, argv[1], forwards);
    tile_ctx_destroy(ctx);
    if (cycles > 0) soak_cycles(kind, cycles);
    printf("rel_soak: host RSS at the end %ld KiB; %s\n", rel_rss_kb(), rel_failures ? "FAILED" : "ok");
    return rel_failures ? 1 : 0;
}
