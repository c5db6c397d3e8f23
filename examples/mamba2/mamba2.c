/* mamba2.c: the Mamba-2 SSD forward pass driver: three tile programs
 * (chunk_cumsum.tile, fwd_pass_state.tile, compute_out.tile) run through
 * libtile on the GPU or on the CPU interpreter, checked against a float64
 * recurrence (--check) and timed (--bench).  See README.md.
 *
 * Exit status: 0 ok; 1 a failed check or a runtime failure; 2 bad usage or
 * bad input (nothing written); 77 the backend asked for with --backend is
 * not available here (CTest counts it as skipped). */
#include "mamba2.h"
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef MAMBA2_TILE_SOURCE_DIR
#define MAMBA2_TILE_SOURCE_DIR "."
#endif

enum { EXIT_CHECK = 1, EXIT_USAGE = 2, EXIT_SKIP = 77 };

static const char usage_text[] =
    "usage: mamba2 [options]\n"
    "  shape:   --batch N --seqlen N --heads N --headdim N --dstate N --groups N --chunk 64|128|256\n"
    "  inputs:  --dtype bf16|f16|f32  --seed N  --dt-softplus  --dt-min X --dt-max X\n"
    "           --z  --D none|heads|headdim  --dt-bias  --initial-states   (random inputs)\n"
    "           --inputs DIR   read x.npy dt.npy A.npy B.npy C.npy [D z dt_bias initial_states].npy\n"
    "  run:     --backend cpu|cuda|emu  --precision tf32|fp32\n"
    "           --state-dtype f32|bf16 (of the per-chunk states; default bf16 for bf16 inputs\n"
    "           without --carry tf32, which give the same y either way, else f32)\n"
    "  output:  --save DIR (y.npy, final_states.npy)  --save-inputs DIR\n"
    "  check:   --check  --tol X  --check-pairs N\n"
    "  bench:   --bench  --iters N  --warmup N\n"
    "  tiles:   --block-n-state N  --block-n-out N   (dstate slice of kernels 2 and 3)\n"
    "           --block-p-state N (head dims per block of kernel 2)\n"
    "           --heads-state 1|2 (kernel 2 walks that many heads of a group per block, reading\n"
    "           each step's B once for them; 2 needs an even number of heads per group)\n"
    "           --block-k N (tokens per mma step of kernel 2)  --warps-state N  --warps-out N\n"
    "           --block-m N (tokens per row block of kernel 3, up to the chunk)\n"
    "           --block-k-out N (tokens per causal step of kernel 3, up to --block-m)\n"
    "           --heads-per-block N (kernel 3 on N heads of a group per block; bf16/f16 inputs)\n"
    "           --seq-heads N (kernel 3 on up to N heads of a group per block, one after another:\n"
    "           C_m is read and the block's fixed cost paid once; default 4 on large 16-bit runs\n"
    "           where it fits in registers: README.md)\n"
    "           --carry tf32 (kernel 3's carried-state product in tf32, reading f32 states as\n"
    "           they are; bf16/f16 inputs; default: in the inputs' dtype)\n"
    "           --scores separate|fused (kernel 3's C Bᵀ scores: computed once per group by a\n"
    "           fourth launch and read back; or computed in kernel 3's loop from C_m kept in\n"
    "           registers, --block-n-out covering dstate; default fused for bf16/f16 inputs\n"
    "           with dstate <= 128, the faster there; separate for f32)\n"
    "           --occupancy-out N, --occupancy-state N (blocks per SM the registers of kernel\n"
    "           3, of kernel 2, are sized for, at most: the CUDA backend lowers it while ptxas\n"
    "           spills; default for kernel 3 with fused scores 4 (2 for f32, and for f32 states\n"
    "           with dstate > 64 and a per-head D), with separate scores 2 (16-bit); for kernel\n"
    "           2: 3, with 32-token steps, where that makes fewer waves of blocks than 2\n"
    "           (16-bit inputs on wgmma, 64 x 128 state tiles, no kernel-2 flags given); else\n"
    "           the compiler's)\n"
    "  pass:    --pass chunks|scan (kernels 2 and 3 as written, or ssd_scan: one block per (batch,\n"
    "           head, head-dim tile) walks the sequence with the state on chip; default on wgmma,\n"
    "           without --state-dtype and the chunked pass's tiles flags:\n"
    "           scan for 16-bit inputs, and for f32 ones without --z with at least 4 x SMs blocks\n"
    "           (batch x heads x 64-head-dim tiles); else chunks: README.md); --state-dtype, kernel 3's\n"
    "           and its scores' flags, --block-n-state, --block-k, --heads-state are the chunked\n"
    "           pass's; --block-p-state, --warps-state, --occupancy-state set kernel 2's, or on\n"
    "           the scan ssd_scan's (--block-p-state ssd_scan_states' too)\n"
    "           --scan-step N (tokens per step of ssd_scan, 16..256; default 64, 32 for f32\n"
    "           inputs with dstate <= 32 (<= 64 without wgmma); without --pass it picks the scan)\n"
    "           --decay-on-b 0|1 (f32 ssd_scan: the state's product as xT (B o decay), ssd_scan.tile's\n"
    "           DECAY_ON_B; default 1 but at dstate 33..64)\n"
    "           --d-diagonal 0|1 (ssd_scan: a per-head D added on the causal weights' diagonal, or\n"
    "           D x added after the products in f32; default 1)\n"
    "           --tf32-bc 0|1 (f32 ssd_scan: B and C rounded to tf32 copies once by round_tf32_bc,\n"
    "           read by ssd_scan_tf32, instead of by every block; default 1)\n"
    "           --segments N (1..64: the scan's sequence cut into N runs of steps, one block\n"
    "           each, the states they start from made by ssd_scan_states first; at most the\n"
    "           steps, and 65535 / batch; default on the GPU: what keeps the SMs busiest, 1 on\n"
    "           the CPU; without --pass it picks the scan)\n"
    "  tune:    --tune (autotune the four kernels on these inputs first; the tiles flags given\n"
    "           are held; winners cached in $TILE_CACHE_DIR, else ~/.cache/tilec)\n"
    "           --verbose (the tuner's table of points and times on stderr)\n"
    "  plan:    --plan (print each kernel the run would launch on an sm_90 GPU with 132 SMs\n"
    "           (wgmma: an H200), its constants and grid, and stop: no inputs made, no backend\n"
    "           opened)\n"
    "With neither --bench nor --save, --check is implied.  MAMBA2_TILE_DIR overrides\n"
    "where the .tile programs are read from.\n";

typedef struct Config {
    M2Extents shape;          /* as given; checked by m2_shape_make */
    M2Options opt;
    struct M2RandomFeatures features;
    uint64_t seed;
    const char *inputs_dir, *save_dir, *save_inputs_dir, *backend;
    int check, bench, iters, warmup, check_pairs;
    int tune, verbose;        /* --tune, --verbose */
    int plan;                 /* --plan: print the kernels, constants and grids, run nothing */
    int state_dtype_given;    /* --state-dtype given; else bf16 for bf16 inputs, f32 otherwise */
    double tol;               /* <= 0: the default of the dtype and precision */
} Config;

/* ---- command line ------------------------------------------------------- */

static int parse_int(const char *flag, const char *text, int lo, int hi, int *out) {
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || *end || end == text || v < lo || v > hi) {
        fprintf(stderr, "mamba2: %s expects an integer in %d..%d, got '%s'\n", flag, lo, hi, text);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* A shape extent: any integer >= 1 here; m2_shape_make says which extent is
 * too large for the kernels, and why. */
static int parse_extent(const char *flag, const char *text, int64_t *out) {
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || *end || end == text || v < 1) {
        fprintf(stderr, "mamba2: %s expects an integer of at least 1, got '%s'\n", flag, text);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_double(const char *flag, const char *text, double *out) {
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || *end || end == text || isnan(v)) {
        fprintf(stderr, "mamba2: %s expects a number, got '%s'\n", flag, text);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_pow2_in(const char *flag, const char *text, int lo, int hi, int *out) {
    if (parse_int(flag, text, lo, hi, out)) return -1;
    if (*out & (*out - 1)) {
        fprintf(stderr, "mamba2: %s expects a power of two in %d..%d, got %d\n", flag, lo, hi, *out);
        return -1;
    }
    return 0;
}

/* Tile sizes: powers of two in 16..256. */
static int parse_pow2(const char *flag, const char *text, int *out) { return parse_pow2_in(flag, text, 16, 256, out); }

/* Parses argv into cfg; returns 0, or an exit status. */
static int parse_args(int argc, char **argv, Config *cfg) {
    M2Extents *s = &cfg->shape;
    int any_action = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        char flag[64];
        const char *value = NULL;
        const char *eq = strchr(arg, '=');
        if (strncmp(arg, "--", 2) == 0 && eq && (size_t)(eq - arg) < sizeof flag) {
            memcpy(flag, arg, (size_t)(eq - arg));
            flag[eq - arg] = 0;
            value = eq + 1;
        } else {
            snprintf(flag, sizeof flag, "%s", arg);
        }
        /* Flags without a value. */
        if (!strcmp(flag, "--help") || !strcmp(flag, "-h")) { fputs(usage_text, stdout); exit(0); }
        if (!strcmp(flag, "--check")) { cfg->check = 1; any_action = 1; continue; }
        if (!strcmp(flag, "--bench")) { cfg->bench = 1; any_action = 1; continue; }
        if (!strcmp(flag, "--tune")) { cfg->tune = 1; continue; }
        if (!strcmp(flag, "--plan")) { cfg->plan = 1; any_action = 1; continue; }
        if (!strcmp(flag, "--verbose") || !strcmp(flag, "-v")) { cfg->verbose = 1; continue; }
        if (!strcmp(flag, "--dt-softplus")) { cfg->opt.dt_softplus = 1; continue; }
        if (!strcmp(flag, "--z")) { cfg->features.has_z = 1; continue; }
        if (!strcmp(flag, "--dt-bias")) { cfg->features.has_dt_bias = 1; continue; }
        if (!strcmp(flag, "--initial-states")) { cfg->features.has_initial = 1; continue; }
        if (!value) {
            if (i + 1 >= argc) {
                fprintf(stderr, "mamba2: unknown option or missing value: %s\n%s", arg, usage_text);
                return EXIT_USAGE;
            }
            value = argv[++i];
        }
        int rc = 0;
        if (!strcmp(flag, "--batch")) rc = parse_extent(flag, value, &s->batch);
        else if (!strcmp(flag, "--seqlen")) rc = parse_extent(flag, value, &s->seqlen);
        else if (!strcmp(flag, "--heads")) rc = parse_extent(flag, value, &s->heads);
        else if (!strcmp(flag, "--headdim")) rc = parse_extent(flag, value, &s->headdim);
        else if (!strcmp(flag, "--dstate")) rc = parse_extent(flag, value, &s->dstate);
        else if (!strcmp(flag, "--groups")) rc = parse_extent(flag, value, &s->groups);
        else if (!strcmp(flag, "--chunk")) rc = parse_extent(flag, value, &s->chunk);
        else if (!strcmp(flag, "--seed")) { int v; rc = parse_int(flag, value, 0, INT_MAX, &v); cfg->seed = (uint64_t)v; }
        else if (!strcmp(flag, "--iters")) rc = parse_int(flag, value, 1, 100000, &cfg->iters);
        else if (!strcmp(flag, "--warmup")) rc = parse_int(flag, value, 0, 100000, &cfg->warmup);
        else if (!strcmp(flag, "--check-pairs")) rc = parse_int(flag, value, 1, INT_MAX, &cfg->check_pairs);
        else if (!strcmp(flag, "--block-n-state")) rc = parse_pow2(flag, value, &cfg->opt.block_n_state);
        else if (!strcmp(flag, "--block-p-state")) rc = parse_pow2(flag, value, &cfg->opt.block_p_state);
        else if (!strcmp(flag, "--heads-state")) rc = parse_int(flag, value, 1, 2, &cfg->opt.heads_state);
        else if (!strcmp(flag, "--block-n-out")) rc = parse_pow2(flag, value, &cfg->opt.block_n_out);
        else if (!strcmp(flag, "--block-k")) rc = parse_pow2(flag, value, &cfg->opt.block_k);
        else if (!strcmp(flag, "--block-k-out")) rc = parse_pow2(flag, value, &cfg->opt.block_k_out);
        else if (!strcmp(flag, "--heads-per-block")) rc = parse_pow2_in(flag, value, 1, 16, &cfg->opt.heads_per_block);
        else if (!strcmp(flag, "--seq-heads")) rc = parse_int(flag, value, 1, 1024, &cfg->opt.seq_heads);
        else if (!strcmp(flag, "--block-m")) rc = parse_pow2(flag, value, &cfg->opt.block_m);
        else if (!strcmp(flag, "--carry")) {
            if (strcmp(value, "tf32") && strcmp(value, "operand")) {
                fprintf(stderr, "mamba2: --carry expects tf32 or operand, got '%s'\n", value);
                rc = -1;
            }
            cfg->opt.carry_tf32 = !strcmp(value, "tf32");
        }
        else if (!strcmp(flag, "--scores")) {
            if (!strcmp(value, "fused")) cfg->opt.scores = M2_SCORES_FUSED;
            else if (!strcmp(value, "separate")) cfg->opt.scores = M2_SCORES_SEPARATE;
            else { fprintf(stderr, "mamba2: --scores expects fused or separate, got '%s'\n", value); rc = -1; }
        }
        else if (!strcmp(flag, "--pass")) {
            if (!strcmp(value, "scan")) cfg->opt.pass = M2_PASS_SCAN;
            else if (!strcmp(value, "chunks")) cfg->opt.pass = M2_PASS_CHUNKS;
            else { fprintf(stderr, "mamba2: --pass expects scan or chunks, got '%s'\n", value); rc = -1; }
        }
        else if (!strcmp(flag, "--scan-step")) rc = parse_pow2(flag, value, &cfg->opt.scan_step);
        else if (!strcmp(flag, "--decay-on-b")) {
            rc = parse_int(flag, value, 0, 1, &cfg->opt.decay_on_b);
            cfg->opt.decay_on_b++;   /* (0: not given) */
        }
        else if (!strcmp(flag, "--d-diagonal")) {
            rc = parse_int(flag, value, 0, 1, &cfg->opt.d_diagonal);
            cfg->opt.d_diagonal++;   /* (0: not given) */
        }
        else if (!strcmp(flag, "--tf32-bc")) {
            rc = parse_int(flag, value, 0, 1, &cfg->opt.tf32_bc);
            cfg->opt.tf32_bc++;   /* (0: not given) */
        }
        else if (!strcmp(flag, "--segments")) rc = parse_int(flag, value, 1, 64, &cfg->opt.segments);
        else if (!strcmp(flag, "--warps-state")) rc = parse_int(flag, value, 1, 32, &cfg->opt.warps_state);
        else if (!strcmp(flag, "--warps-out")) rc = parse_int(flag, value, 1, 32, &cfg->opt.warps_out);
        else if (!strcmp(flag, "--occupancy-out")) rc = parse_int(flag, value, 1, 32, &cfg->opt.occupancy_out);
        else if (!strcmp(flag, "--occupancy-state")) rc = parse_int(flag, value, 1, 32, &cfg->opt.occupancy_state);
        else if (!strcmp(flag, "--tol")) rc = parse_double(flag, value, &cfg->tol);
        else if (!strcmp(flag, "--dt-min")) rc = parse_double(flag, value, &cfg->opt.dt_min);
        else if (!strcmp(flag, "--dt-max")) rc = parse_double(flag, value, &cfg->opt.dt_max);
        else if (!strcmp(flag, "--inputs")) cfg->inputs_dir = value;
        else if (!strcmp(flag, "--save")) { cfg->save_dir = value; any_action = 1; }
        else if (!strcmp(flag, "--save-inputs")) cfg->save_inputs_dir = value;
        else if (!strcmp(flag, "--backend")) {
            if (strcmp(value, "cpu") && strcmp(value, "cuda") && strcmp(value, "emu")) {
                fprintf(stderr, "mamba2: --backend expects cpu, cuda or emu, got '%s'\n", value);
                rc = -1;
            }
            cfg->backend = value;
        } else if (!strcmp(flag, "--dtype")) {
            if (!strcmp(value, "bf16")) cfg->opt.dtype = TILE_BF16;
            else if (!strcmp(value, "f16")) cfg->opt.dtype = TILE_F16;
            else if (!strcmp(value, "f32")) cfg->opt.dtype = TILE_F32;
            else { fprintf(stderr, "mamba2: --dtype expects bf16, f16 or f32, got '%s'\n", value); rc = -1; }
        } else if (!strcmp(flag, "--state-dtype")) {
            cfg->state_dtype_given = 1;
            if (!strcmp(value, "f32")) cfg->opt.state_dtype = TILE_F32;
            else if (!strcmp(value, "bf16")) cfg->opt.state_dtype = TILE_BF16;
            else { fprintf(stderr, "mamba2: --state-dtype expects f32 or bf16, got '%s'\n", value); rc = -1; }
        } else if (!strcmp(flag, "--precision")) {
            if (!strcmp(value, "tf32")) cfg->opt.fp32_products = 0;
            else if (!strcmp(value, "fp32")) cfg->opt.fp32_products = 1;
            else { fprintf(stderr, "mamba2: --precision expects tf32 or fp32, got '%s'\n", value); rc = -1; }
        } else if (!strcmp(flag, "--D")) {
            if (!strcmp(value, "none")) cfg->features.has_D = 0;
            else if (!strcmp(value, "heads")) { cfg->features.has_D = 1; cfg->features.D_per_head = 1; }
            else if (!strcmp(value, "headdim")) { cfg->features.has_D = 1; cfg->features.D_per_head = 0; }
            else { fprintf(stderr, "mamba2: --D expects none, heads or headdim, got '%s'\n", value); rc = -1; }
        } else {
            fprintf(stderr, "mamba2: unknown option %s\n%s", flag, usage_text);
            return EXIT_USAGE;
        }
        if (rc) return EXIT_USAGE;
    }
    if (!any_action) cfg->check = 1;
    /* States default to bf16 for bf16 inputs: kernel 3 rounds them to bf16
     * for its mma anyway, so y is the same bit for bit (tested), and the
     * states' bytes halve (mamba_ssm also passes states in the inputs' dtype).
     * --carry tf32 reads them as f32, so keeps f32; so do f16 and f32 inputs. */
    if (!cfg->state_dtype_given)
        cfg->opt.state_dtype = cfg->opt.dtype == TILE_BF16 && !cfg->opt.carry_tf32 ? TILE_BF16 : TILE_F32;
    if (cfg->opt.dt_min > cfg->opt.dt_max) {
        fprintf(stderr, "mamba2: --dt-min %g is larger than --dt-max %g\n", cfg->opt.dt_min, cfg->opt.dt_max);
        return EXIT_USAGE;
    }
    return 0;
}

/* ---- finding the .tile programs ---------------------------------------- */

static int file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* MAMBA2_TILE_DIR, else the executable's folder, else the source folder. */
static void tile_dir(char *out, size_t n) {
    const char *env = getenv("MAMBA2_TILE_DIR");
    if (env && *env) { snprintf(out, n, "%s", env); return; }
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = 0;
            char probe[4200];
            snprintf(probe, sizeof probe, "%s/compute_out.tile", exe);
            if (file_exists(probe)) { snprintf(out, n, "%s", exe); return; }
        }
    }
    snprintf(out, n, "%s", MAMBA2_TILE_SOURCE_DIR);
}

/* ---- the run on a backend ---------------------------------------------- */

static int pow2_at_least(int v) {
    int p = 1;
    while (p < v) p <<= 1;
    return p;
}
static int min_int(int a, int b) { return a < b ? a : b; }
static int max_int(int a, int b) { return a > b ? a : b; }
static int cdiv_int(int a, int b) { return (a + b - 1) / b; }

/* The launches of the three programs.  compute_out.tile either computes the
 * chunk's C Bᵀ scores inside the output kernel (fused, three launches) or
 * first once per group (chunk_scores, a fourth launch) for the output kernel
 * to read. */
enum { K_CUMSUM, K_STATE, K_SCORES, K_OUT, K_COUNT };
static const char *const kernel_label[K_COUNT] = {"chunk_cumsum", "fwd_pass_state", "chunk_scores", "compute_out"};
/* --pass scan: kernel 3's slot runs ssd_scan, and 2's ssd_scan_states where
 * the sequence is split into segments (the states each segment starts from);
 * the scores' slot, with f32 inputs, round_tf32_bc (B and C's tf32 copies) */
static const char *const scan_label[K_COUNT] = {"chunk_cumsum", "scan_states", "chunk_scores", "ssd_scan"};
static const char *label_of(int scan, int k, int skipped) {
    if (scan && k == K_SCORES && !skipped) return "round_tf32";
    return scan ? scan_label[k] : kernel_label[k];
}
/* Why kernel k is not launched. */
static const char *skipped_why(int scan, int k) {
    if (scan) return k == K_STATE ? "the sequence is not split (--segments)" : "inside ssd_scan";
    return k == K_SCORES ? "the scores are computed inside compute_out" : "not asked for";
}

typedef struct Run {
    tile_ctx *ctx;
    tile_module *mod[K_COUNT];
    tile_kernel *kern[K_COUNT];
    int grid[K_COUNT][3];
    tile_arg args[K_COUNT][16];
    int nargs[K_COUNT];
    /* device buffers */
    void *x, *dt, *A, *B, *C, *D, *z, *dt_bias, *initial, *dt_out, *dA_cumsum, *states, *final_states, *y, *dummy;
    void *dA_lo;                   /* --precision fp32: the decays' low parts (chunk_cumsum.tile) */
    void *scores;                  /* (batch, chunk, group, Q, Q) f32; NULL when fused */
    void *b_tf32, *c_tf32;         /* --pass scan, f32: B and C rounded to tf32 (round_tf32_bc) */
    int skip[K_COUNT];             /* kernels not launched (chunk_scores when fused) */
    int scan;                      /* --pass scan: K_OUT is ssd_scan, no per-chunk states */
    void *seg_states, *seg_decay;  /* --pass scan split: where each segment but the last ends */
    int segments, segment_steps;   /* --pass scan: the sequence's runs of steps, a block each */
    int Bt, L, H, P, N, Q, G, nchunks;   /* what the grids depend on besides the block sizes */
} Run;

/* What a run launches: each kernel's name and constants (the plain run's, and
 * those --tune holds), chosen from the shape, the options and which optional
 * inputs there are (run_plan), before any memory is touched. */
typedef struct Plan {
    char name[K_COUNT][64];
    tile_const consts[K_COUNT][16], fixed[K_COUNT][16];
    int nconsts[K_COUNT], nfixed[K_COUNT];
    int skip[K_COUNT];             /* kernels not launched (chunk_scores when fused) */
    int heads;                     /* compute_out_heads' heads per block, or 1 */
    int fused, exact;
    int scan;                      /* --pass scan (ssd_scan.tile in K_OUT's slot, its states' in K_STATE's) */
} Plan;

static const char *short_dtype(tile_dtype t) { return tile_dtype_name(t); }

#define TRY(call) do { tile_status st_ = (call); if (st_ != TILE_OK) { \
        fprintf(stderr, "mamba2: %s failed: %s\n%s\n", #call, tile_status_name(st_), tile_ctx_last_error(run->ctx)); \
        return -1; } } while (0)

/* Allocates a device buffer and copies `n` elements of dtype dt into it from
 * the host (which holds them in dt already: no staging copy). */
static int upload(Run *run, void **dev, const void *host, size_t n, tile_dtype dt) {
    const size_t bytes = n * (size_t)tile_dtype_size(dt);
    TRY(tile_malloc(run->ctx, bytes ? bytes : 16, dev));
    tile_status st = tile_memcpy_h2d(run->ctx, *dev, host, bytes);
    if (st != TILE_OK) {
        fprintf(stderr, "mamba2: upload failed: %s\n", tile_ctx_last_error(run->ctx));
        return -1;
    }
    return 0;
}

static int alloc_zero(Run *run, void **dev, size_t bytes) {
    TRY(tile_malloc(run->ctx, bytes ? bytes : 16, dev));
    TRY(tile_memset(run->ctx, *dev, 0, bytes ? bytes : 16));
    return 0;
}

static tile_arg array_arg(void *data, tile_dtype dt, int rank, int64_t e0, int64_t e1, int64_t e2, int64_t e3,
                          int64_t e4) {
    const int64_t shape[5] = {e0, e1, e2, e3, e4};
    return tile_arg_array(tile_array_contiguous(data, dt, rank, shape));
}

static int load_module(Run *run, int which, const char *dir, const char *file) {
    char path[4300];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    TRY(tile_module_load_file(run->ctx, path, &run->mod[which]));
    return 0;
}

/* The value of constant `name` in consts, else dflt (the .tile default). */
static int const_of(const tile_const *c, int n, const char *name, int dflt) {
    for (int i = 0; i < n; i++)
        if (!strcmp(c[i].name, name)) return c[i].kind == TILE_CONST_FLOAT ? (int)c[i].f : (int)c[i].i;
    return dflt;
}

/* Large 16-bit runs (H200, same-run A/B; docs/performance.md): 16384 blocks or
 * more of 64 rows at one head per block. There compute_out computes its own
 * scores and walks about 4 heads of a group per block, one after another
 * (SEQ_HEADS): (8, 4096, 80, 64, 128, 1, 256) bf16 compute_out 1.26 -> 1.21 ms
 * (2026-12-01), plus no scores kernel; (2, 16384, 80, ...) 1.27 -> 1.21; with
 * dstate 64 and 8 groups (5 heads) 1.10 -> 0.98; f16 inputs with their f32
 * states 1.414 -> 1.204 (2026-12-02, 253 registers at 2 blocks per SM, no
 * spills; bf16 inputs with f32 states 1.411 -> 1.201; both with D per head,
 * the only skip term that gives f32 states 2 blocks per SM: below). Smaller
 * runs keep one head per block (1.7-2% slower at (1, 4096, 80) and (8, 2048,
 * 24) with 2), as do f32 inputs (7% slower) and f16 inputs with bf16 states,
 * where the head loop spills (they convert the bf16 states in registers;
 * ptxas, NVRTC 13.0).
 */
static int large_16bit_run(const M2Options *o, tile_dtype sdt, int occupancy_out, int batch, int heads, int nchunks,
                           int chunk) {
    /* f32 states only where the plan asks for 2 blocks per SM (the fused
     * defaults with a per-head D and dstate over 64, or --occupancy-out 2):
     * at 3, with dstate 128 and the skip term after the loop or none, the
     * head loop spills 60-76 bytes (ptxas, NVRTC 13.0); with dstate 64 (3
     * blocks per SM, or 4 on wgmma) it compiles without spills at 1, 4, 5 or 8
     * heads but was not timed, so it keeps one head */
    const int kernel_fits = (o->dtype == TILE_BF16 || (o->dtype == TILE_F16 && sdt != TILE_BF16)) &&
                            (sdt != TILE_F32 || occupancy_out == 2);
    return kernel_fits && !o->carry_tf32 && o->heads_per_block <= 1 &&
           (long long)batch * heads * nchunks * cdiv_int(chunk, 64) >= 16384;
}

/* Four heads per block, or the divisor of the heads per group from 4 to 8
 * when 4 does not divide them, so that the group's last block does not walk
 * fewer (10 heads per group: 5 and 10 at 0.98 ms, 4 at 1.00); without such a
 * divisor (9, 11, 13, ...) 4, the last block walking the rest. */
static int default_seq_heads(int per_group) {
    if (per_group % 4 == 0) return 4;
    for (int d = 5; d <= 8; d++)
        if (per_group % d == 0) return d;
    return per_group < 4 ? per_group : 4;
}

/* The grid of kernel `which` for the block sizes in consts: the one place
 * grids are computed, for the plain run and for every point --tune times. */
static void grid_for(const Run *run, int which, const tile_const *c, int n, int grid[3]) {
    if (which == K_CUMSUM) {
        const int block_h = max_int(1, const_of(c, n, "BLOCK_H", 16));
        /* its chunks are ssd_scan's steps under --pass scan */
        grid[0] = cdiv_int(run->L, max_int(1, const_of(c, n, "CHUNK", run->Q)));
        grid[1] = cdiv_int(run->H, block_h);
        grid[2] = run->Bt;
    } else if (run->scan && (which == K_STATE || which == K_OUT)) {
        /* ssd_scan's (batch, segment) blocks, and ssd_scan_states' for all but the last segment */
        grid[0] = cdiv_int(run->P, max_int(1, const_of(c, n, "BLOCK_P", 64)));
        grid[1] = run->H;
        grid[2] = run->Bt * (which == K_OUT ? run->segments : run->segments - 1);
    } else if (which == K_STATE) {
        const int block_p = max_int(1, const_of(c, n, "BLOCK_P", 64));
        const int block_n = max_int(1, const_of(c, n, "BLOCK_N", 64));
        grid[0] = cdiv_int(run->P, block_p) * cdiv_int(run->N, block_n);
        grid[1] = run->H / max_int(1, const_of(c, n, "HEADS", 1));
        grid[2] = run->Bt;
    } else if (run->scan && which == K_SCORES) {
        /* round_tf32_bc over (batch * seqlen * groups, dstate) */
        const long long rows = (long long)run->Bt * run->L * run->G, block_r = max_int(1, const_of(c, n, "BLOCK_R", 32));
        grid[0] = (int)((rows + block_r - 1) / block_r);
        grid[1] = cdiv_int(run->N, max_int(1, const_of(c, n, "BLOCK_C", 128)));
        grid[2] = 1;
    } else if (which == K_SCORES) {
        const int per = max_int(1, run->Q / max_int(1, const_of(c, n, "BLOCK_M", 64)));
        grid[0] = per * per;
        grid[1] = run->nchunks;
        grid[2] = run->Bt * run->G;
    } else {
        const int block_m = max_int(1, const_of(c, n, "BLOCK_M", 64));
        const int block_p = max_int(1, const_of(c, n, "BLOCK_P", 64));
        const int heads = max_int(1, const_of(c, n, "HEADS", 1));
        const int seq = max_int(1, const_of(c, n, "SEQ_HEADS", 1));
        grid[0] = max_int(1, run->Q / block_m) * cdiv_int(run->P, block_p);
        grid[1] = run->nchunks;
        /* SEQ_HEADS: each block walks up to that many heads of one group */
        grid[2] = heads > 1 ? run->Bt * cdiv_int(run->H, heads) : run->Bt * run->G * cdiv_int(run->H / run->G, seq);
    }
}

typedef struct GridUser { const Run *run; int which; } GridUser;
static void tune_grid(const tile_const *consts, int nconsts, int grid[3], void *user) {
    const GridUser *g = user;
    grid_for(g->run, g->which, consts, nconsts, grid);
}

/* " NAME=VALUE" for each constant, after `label` (no newline). */
static void print_consts(const char *label, const tile_const *c, int n) {
    printf("%s", label);
    for (int i = 0; i < n; i++) {
        if (c[i].kind == TILE_CONST_FLOAT) printf(" %s=%g", c[i].name, c[i].f);
        else if (c[i].kind == TILE_CONST_DTYPE) printf(" %s=%s", c[i].name, tile_dtype_name((tile_dtype)c[i].i));
        else printf(" %s=%lld", c[i].name, (long long)c[i].i);
    }
}

/* --tune: searches the kernel's `tune` block with `fixed` held, on the run's
 * real arguments; the winner becomes run->kern[which].  The winner is then
 * launched once so the next kernel is tuned on what this one computes (a
 * cache hit times nothing). */
static int tune_kernel(Run *run, int which, const char *name, const tile_const *fixed, int nfixed, int verbose) {
    tile_tune_stats stats;
    memset(&stats, 0, sizeof stats);
    tile_tune_options opt = tile_tune_default_options();
    opt.verbose = verbose;
    opt.log = stderr;
    opt.stats = &stats;
    /* The interpreter's times only rank points roughly; keep its search short. */
    if (tile_ctx_backend(run->ctx) == TILE_BACKEND_CPU) { opt.warmup = 0; opt.repeat = 1; }
    GridUser gu = {run, which};
    tile_const best[16];
    int nbest = (int)(sizeof best / sizeof best[0]);
    tile_status st = tile_tune(run->mod[which], name, fixed, nfixed, tune_grid, &gu, run->args[which],
                               run->nargs[which], &opt, &run->kern[which], best, &nbest);
    if (st != TILE_OK) {
        fprintf(stderr, "mamba2: tuning %s failed: %s\n%s\n", name, tile_status_name(st),
                tile_ctx_last_error(run->ctx));
        return -1;
    }
    grid_for(run, which, best, nbest, run->grid[which]);
    printf("tune: %s:", name);
    print_consts("", best, nbest);
    if (stats.cache_hit) printf("  %.4f ms (cache hit)\n", stats.best_ms);
    else printf("  %.4f ms (%d of %d points timed, %d skipped)\n", stats.best_ms, stats.ntimed, stats.npoints,
                stats.nskipped);
    fflush(stdout);
    TRY(tile_launch(run->kern[which], run->grid[which], run->args[which], run->nargs[which], NULL));
    TRY(tile_synchronize(run->ctx));
    return 0;
}

/* Uploads the inputs, compiles the kernels (tuned with `tune`) and prepares
 * the four launches. */
/* Which optional inputs a run has, as the plan asks. */
static struct M2RandomFeatures features_of(const M2Inputs *in) {
    return (struct M2RandomFeatures){in->D != NULL, in->D_per_head, in->z != NULL, in->dt_bias != NULL,
                                     in->initial_states != NULL};
}

/* Kernel k's constant c in the plain run, and in what --tune holds when held. */
static void plan_add(Plan *p, int k, tile_const c, int held) {
    p->consts[k][p->nconsts[k]++] = c;
    if (held) p->fixed[k][p->nfixed[k]++] = c;
}

static void plan_const(Plan *p, int k, const char *name, int value, int held) {
    plan_add(p, k, (tile_const){name, 0, value, 0}, held);
}

/* Does the run's backend compile its products for wgmma (sm_90a)?  The
 * register counts that decide blocks per SM differ from mma.sync's.  Without
 * a context (--plan opens none) the answer is yes: the H200's. */
static int on_wgmma(const Run *run) {
    return !run->ctx || strcmp(tile_ctx_codegen_tag(run->ctx), "wgmma") == 0;
}

/* Do `blocks` blocks make fewer waves over the device's SMs at `more` blocks
 * per SM than at `fewer`?  Without a context (--plan) the H200's 132 SMs;
 * never on the CPU backend. */
static int fewer_waves(const Run *run, int blocks, int more, int fewer) {
    const int sms = run->ctx ? tile_ctx_multiprocessors(run->ctx) : 132;
    return sms > 0 && cdiv_int(blocks, more * sms) < cdiv_int(blocks, fewer * sms);
}

/* chunk_cumsum's constants: its chunk (ssd_scan's step under --pass scan),
 * the heads per block, and what --tune holds. */
static void plan_cumsum(Plan *p, int chunk, int heads, int softplus, int exact) {
    plan_const(p, K_CUMSUM, "CHUNK", chunk, 1);
    plan_const(p, K_CUMSUM, "BLOCK_H", min_int(16, pow2_at_least(heads)), 0);
    plan_const(p, K_CUMSUM, "SOFTPLUS", softplus, 1);
    plan_const(p, K_CUMSUM, "EXACT", exact, 1);
}

/* Can ssd_scan run these options and shape?  0, or why not. */
static const char *scan_unfit(const M2Options *o, const M2Shape *s) {
    if (o->dtype == TILE_F32 && o->fp32_products) return "exact fp32 products (--precision fp32)";
    if (o->heads_per_block > 1 || o->seq_heads > 1 || o->scores != M2_SCORES_DEFAULT || o->carry_tf32)
        return "kernel 3's options (--heads-per-block, --seq-heads, --scores, --carry)";
    if (s->dstate > 128) return "dstate over 128 (the state's registers)";
    return NULL;
}

/* Is a tiles flag of the chunked pass alone given (kernel 3's, and kernel
 * 2's that ssd_scan does not have)? */
static int chunked_tiles_given(const M2Options *o) {
    return o->block_n_state || o->block_n_out || o->heads_state > 1 || o->block_k || o->block_k_out || o->block_m ||
           o->warps_out || o->occupancy_out;
}

/* Does the run take ssd_scan, or the chunked pass?  As --pass says; by
 * default, on wgmma (where it was measured), the scan for 16-bit inputs, with
 * z too since its tile no longer rides the scan's pipeline (which took the
 * kernel to 1 block per SM: compiler/emit_cuda_async.c, drop_costly_readbacks;
 * bf16 with z, H200, 2026-12-04, chunked -> scan: the anchor 1.477 ->
 * 1.184-1.188 ms, (2, 16384, 80) 1.648 -> 1.204, (1, 4096, 80) 0.288 -> 0.194,
 * (8, 2048, 24) 0.289 -> 0.224-0.238; at 1 block per SM the scan was slower at
 * three of them: 1.49, 1.73, 0.26, 0.32); and for f32 inputs (tf32; with z not
 * timed, so not with z) where there are 4 blocks per SM or more: each block
 * walks the whole sequence (or a segment of it, scan_segments; tf32 with the
 * split not measured against chunks beyond (2, 16384, 80): 2.80 against 2.97
 * ms, and (1, 4096, 80): 0.411 against 0.410), and tf32's steps are slower.
 * H200, same calls, 2026-12-03 (bench/ab_mamba2.sh), chunked -> scan: bf16 at
 * (8, 4096, 80, 64, 128, 1, 256) 1.125 -> 0.821 ms, with dstate 64 and 8
 * groups 0.935 -> 0.659, (1, 4096, 80) 0.225 -> 0.199, (2, 16384, 80) 1.212 ->
 * 1.064, (8, 2048, 24) 0.224 -> 0.150; tf32 (D after the products) at the
 * anchor 2.51 -> 2.38 and with dstate 64 and 8 groups 2.24 -> 1.73 (640
 * blocks; 1.40 in 32-token steps, scan_step), but (1, 4096, 80) 0.426 -> 0.584
 * and (2, 16384, 80) 2.62 -> 3.16 (80 and 160 blocks).  With initial states
 * too since they are loaded into the state's registers (2026-12-03, the
 * session after; bf16 anchor with initial states, same call: chunked 1.046 ms,
 * scan 0.683; before, with the states converted through shared memory, 2.035
 * and 1.611).  Not when a tiles flag of the chunked pass is given. */
static int use_scan(const Run *run, const M2Options *o, const M2Shape *s, const struct M2RandomFeatures *f) {
    if (o->pass != M2_PASS_DEFAULT) return o->pass == M2_PASS_SCAN;
    if (scan_unfit(o, s) || !on_wgmma(run)) return 0;
    if (chunked_tiles_given(o)) return 0;
    if (o->dtype != TILE_F32) return 1;
    if (f->has_z) return 0;
    /* (blocks of the default 64 head dims: --block-p-state is fwd_pass_state's
     * too, and smaller tiles on the scan were not timed for tf32) */
    const int sms = run->ctx ? tile_ctx_multiprocessors(run->ctx) : 132;
    const long long blocks = (long long)s->batch * s->heads * cdiv_int(s->headdim, 64);
    return sms > 0 && blocks >= 4LL * sms;
}

/* The time of `blocks` blocks walking `steps` steps each, in steps of one
 * block alone on an SM, with up to `per_sm` of them on an SM at once: a
 * step of two blocks sharing an SM takes 1.5 of one alone, three 2.0
 * (ssd_scan, H200, 2026-12-03: 2.3 us a 64-token step at (1, 4096, 80), 80
 * blocks on 132 SMs; 3.4 us at (2, 16384, 80), 28 SMs holding two).  A
 * single wave runs at the pace of its fullest SM; with several, every wave,
 * the last too, at the full pace (measured: (2, 16384, 80) cut in 2, 320
 * blocks, took as long as 2 full waves, not a full wave and 56 blocks alone). */
static double walk_time(long long blocks, int steps, int per_sm, int sms) {
    static const double shared_step[] = {0, 1.0, 1.5, 2.0};
    const long long wave = (long long)per_sm * sms;
    if (blocks <= wave) return steps * shared_step[(blocks + sms - 1) / sms];
    return (double)((blocks + wave - 1) / wave) * steps * shared_step[per_sm];
}

/* How many runs of steps (segments) the scan cuts the sequence into, one
 * block each: as --segments says; 1 on the CPU; else the count from 1 to 8
 * whose walks take least by walk_time, at least 5% less than fewer
 * segments: ssd_scan at 2 blocks per SM, plus ssd_scan_states (all but the
 * last segment; its steps 0.35 of the scan's, 3 blocks per SM), the states
 * the scan's blocks read first (0.4 of a step each) and a step's worth a
 * block for its start and end.  H200,
 * 2026-12-03, bf16 totals in ms by segments (bench/ab_mamba2.sh):
 *   (2, 16384, 80): 1: 0.888, 2: 1.098, 3: 0.760, 4: 0.877, 6: 0.821, 8: 0.771, 16: 0.933 (picks 3)
 *   (1, 4096, 80):  1: 0.164, 2: 0.182, 3: 0.134, 4: 0.153, 6: 0.142, 8: 0.164 (picks 3)
 *   (8, 4096, 80):  1: 0.670, 2: 0.710, 3: 0.783 (picks 1); (8, 2048, 24): 1: 0.139, 2: 0.170, 4: 0.159 (1)
 *   (1, 65536, 80): 1: 2.327, 3: 1.658, 6: 1.671, 8: 1.760 (picks 3) */
static int scan_segments(const Run *run, const M2Options *o, long long blocks, int nsteps, int batch) {
    /* (the grid's third axis holds batch x segments: at most 65535) */
    const int most = min_int(nsteps, max_int(1, 65535 / max_int(1, batch)));
    if (o->segments) return min_int(o->segments, most);
    if (run->ctx && tile_ctx_backend(run->ctx) != TILE_BACKEND_CUDA) return 1;
    const int sms = run->ctx ? tile_ctx_multiprocessors(run->ctx) : 132;
    if (sms <= 0) return 1;
    /* (a block's start and end, its pipeline filled and its state stored: about a step) */
    int best = 1;
    double best_time = walk_time(blocks, nsteps + 1, 2, sms);
    for (int segs = 2; segs <= 8 && segs <= most; segs++) {
        const int steps = cdiv_int(nsteps, segs);
        if (cdiv_int(nsteps, steps) != segs) continue;   /* (the same cut as fewer segments) */
        const double t = walk_time(blocks * segs, steps + 1, 2, sms) + 0.4 * (segs - 1) +
                         0.35 * walk_time(blocks * (segs - 1), steps + 1, 3, sms);
        if (t < 0.95 * best_time) best = segs, best_time = t;
    }
    return best;
}

/* The scan's step (tokens): as --scan-step says; else 64, and 32 for f32
 * inputs with dstate <= 32 (<= 64 without wgmma).  Without wgmma a 64-token
 * step's tiles (x, B and C, 17 KB each in padded rows) make no two-stage
 * pipeline within the compiler's budget for a loop off wgmma, and its copies
 * wait where they stand; in 32-token steps they ride a pipeline, at 128
 * registers and 3 blocks per SM (ptxas).  H200, 2026-12-04 (bench/ab_mamba2.sh,
 * ssd_scan ms, 64 -> 32; 16-token steps slower than either): (8, 4096, 80,
 * 64, 64, 1) 1.612 -> 1.371, with 8 groups 1.70-1.78 -> 1.371-1.376, (8,
 * 4096, 80, 64, 32, 1) 1.231-1.237 -> 1.104-1.106; at dstate 128 32-token
 * steps are slower (2.19 -> 2.46: 124 KB, 1 block per SM), and in bf16 at
 * dstate 64 (0.395 -> 0.50-0.54).  On wgmma a 64-token step's scores and
 * C·hᵀ go to wgmma (mma.sync reading the tf32 buffers they share through
 * wgmma's swizzle; 32-token steps are too short for its 64 rows): dstate 64
 * with 8 groups 1.284 ms in 64-token steps, 1.370 in 32 (1.245 since, with
 * the tf32 changes of the same session); dstate 32 1.141 in 64, 1.103 in 32
 * (H200, 2026-12-04, third session; docs/performance.md). */
static int scan_step(const Run *run, const M2Options *o, const M2Shape *s) {
    if (o->scan_step) return o->scan_step;
    return o->dtype == TILE_F32 && s->dstate <= (on_wgmma(run) ? 32 : 64) ? 32 : 64;
}

/* The plan of --pass scan: chunk_cumsum restarting every STEP tokens, then
 * ssd_scan (ssd_scan.tile) in kernel 3's slot; no per-chunk states.  With
 * the sequence split into segments, ssd_scan_states first in kernel 2's. */
static void scan_plan(Run *run, Plan *p, const M2Shape *s, const M2Options *o, const struct M2RandomFeatures *f) {
    const tile_dtype dt = o->dtype;
    const int step = scan_step(run, o, s);
    p->scan = run->scan = 1;
    p->heads = 1;
    const int block_p = o->block_p_state ? o->block_p_state : min_int(64, pow2_at_least(s->headdim));
    const int block_n = max_int(16, pow2_at_least(s->dstate));
    const int nsteps = cdiv_int(s->seqlen, step);
    const int segs =
        scan_segments(run, o, (long long)s->batch * s->heads * cdiv_int(s->headdim, block_p), nsteps, s->batch);
    run->segment_steps = cdiv_int(nsteps, segs);
    run->segments = cdiv_int(nsteps, run->segment_steps);
    /* (whole steps a segment: 10 steps in 6 make 5 of 2) */
    if (o->segments && run->segments != o->segments)
        fprintf(stderr, "mamba2: --segments %d: %d segments of %d steps (the sequence has %d steps of %d tokens; "
                        "at most 65535 / batch segments)\n",
                o->segments, run->segments, run->segment_steps, nsteps, step);
    /* f32: B and C rounded to tf32 once, by a launch in the scores' slot, for
     * ssd_scan_tf32 to read (every block of a group rounded them again in
     * shared memory, each step).  ssd_scan ms at (8, 4096, 80, 64, 128, 1),
     * H200: docs/performance.md, "B and C rounded once" */
    const int tf32_bc = dt == TILE_F32 && (o->tf32_bc ? o->tf32_bc - 1 : 1);
    p->skip[K_SCORES] = !tf32_bc;
    p->skip[K_STATE] = run->segments == 1;
    snprintf(p->name[K_CUMSUM], sizeof p->name[K_CUMSUM], "chunk_cumsum");
    snprintf(p->name[K_STATE], sizeof p->name[K_STATE], "ssd_scan_states_%s", short_dtype(dt));
    snprintf(p->name[K_SCORES], sizeof p->name[K_SCORES], tf32_bc ? "round_tf32_bc" : "chunk_scores");
    snprintf(p->name[K_OUT], sizeof p->name[K_OUT], "ssd_scan_%s", tf32_bc ? "tf32" : short_dtype(dt));
    plan_cumsum(p, step, s->heads, o->dt_softplus, 0);

    plan_const(p, K_OUT, "STEP", step, 1);
    plan_const(p, K_OUT, "BLOCK_P", block_p, o->block_p_state != 0);
    plan_const(p, K_OUT, "BLOCK_N", block_n, 1);
    plan_const(p, K_OUT, "HAS_INITIAL", f->has_initial, 1);
    /* a per-head D on the causal weights' diagonal (ssd_scan.tile's
     * D_DIAGONAL), as compute_out does; D of (heads, headdim) after the
     * products.  f32 inputs too since the fifth session of 2026-12-04 (the
     * diagonal had spilled 116 bytes at 255 registers; no spills once B and C
     * came as tf32 arrays): D x then goes through the weights' product in
     * tf32, but y's tile needs no x in its layout, a conversion through
     * shared memory with two barriers a step: ssd_scan 1.254 -> 1.104 ms at
     * (8, 4096, 80, 64, 128, 1), H200; y 3.3e-4 -> 3.8e-4 from the float64
     * reference at a small shape (--d-diagonal 0 for D x after).  ssd_scan_f32
     * (--tf32-bc 0) keeps D after: the diagonal spilled there */
    const int diagonal = o->d_diagonal ? o->d_diagonal - 1 : dt != TILE_F32 || tf32_bc;
    plan_const(p, K_OUT, "HAS_D", !f->has_D ? 0 : f->D_per_head && diagonal ? 2 : 1, 1);
    plan_const(p, K_OUT, "HAS_Z", f->has_z, 1);
    plan_const(p, K_OUT, "SPLIT", run->segments > 1, 1);
    /* f32 but at dstate 64: the state's product as xᵀ (B ∘ decay)
     * (ssd_scan.tile's DECAY_ON_B).  ssd_scan ms, H200, 2026-12-04 (fourth
     * session; bench/ab_mamba2.sh with --decay-on-b 0 and 1): (8, 4096, 80,
     * 64, 128, 1) 1.742 -> 1.480 (all four products on wgmma), (8, 4096, 80,
     * 64, 32, 1) in 32-token steps 1.086 -> 0.863; but at dstate 64 with 8
     * groups 1.197 -> 1.485 (x_k's buffers would cost the second block per SM,
     * so the compiler keeps x_k a plain load and the state's product on
     * mma.sync, cuda_emit) */
    if (dt == TILE_F32)
        plan_const(p, K_OUT, "DECAY_ON_B", o->decay_on_b ? o->decay_on_b - 1 : s->dstate <= 32 || s->dstate > 64, 1);
    if (o->warps_state) plan_const(p, K_OUT, "num_warps", o->warps_state, 1);
    if (o->occupancy_state) plan_const(p, K_OUT, "occupancy", o->occupancy_state, 1);
    /* B and C's copies: 32 KB of each a block, its columns all of dstate's */
    if (tf32_bc) {
        plan_const(p, K_SCORES, "BLOCK_C", block_n, 1);
        plan_const(p, K_SCORES, "BLOCK_R", max_int(8, 8192 / block_n), 1);
    }
    /* the segments' states: any head-dim tiles (they meet in memory), the scan's by default */
    plan_const(p, K_STATE, "STEP", step, 1);
    plan_const(p, K_STATE, "BLOCK_P", block_p, o->block_p_state != 0);
    plan_const(p, K_STATE, "BLOCK_N", block_n, 1);
}

/* The plan of a run of shape s with options o and the optional inputs f
 * says are there; also sets the extents in run that grid_for reads. */
static void run_plan(Run *run, Plan *p, const M2Shape *s, const M2Options *o, const struct M2RandomFeatures *f) {
    memset(p, 0, sizeof *p);
    const int Bt = s->batch, H = s->heads, P = s->headdim, N = s->dstate, G = s->groups;
    const int Q = s->chunk, nchunks = cdiv_int(s->seqlen, Q);
    run->Bt = Bt, run->L = s->seqlen, run->H = H, run->P = P, run->N = N, run->Q = Q, run->G = G;
    run->nchunks = nchunks;
    const tile_dtype dt = o->dtype, sdt = o->state_dtype;
    if (use_scan(run, o, s, f)) {
        scan_plan(run, p, s, o, f);
        return;
    }
    /* exact fp32 products: the cumulative decays also carry their low parts */
    const int exact = dt == TILE_F32 && o->fp32_products;
    /* several heads per block: one kernel generic over the dtypes, scores read from chunk_scores */
    const int heads = o->heads_per_block > 1 ? o->heads_per_block : 1;
    /* The default from the H200 (docs/performance.md): fused for 16-bit
     * inputs with dstate <= 128.  With its products on wgmma, A from
     * registers (2026-12-02), it is faster at every bf16 shape measured:
     * (8, 2048, 24, 64, 128, 1, 256) 0.306 -> 0.267 ms, (1, 4096, 80, ...)
     * 0.286 -> 0.260, the large runs by 10% more than on mma.sync.  On
     * mma.sync alone (other GPUs, TILEC_WGMMA=0) the separate scores were 1-4%
     * faster with dstate 128 and one group at the smaller shapes (2026-12-01),
     * and fused 50% slower in tf32, which keeps them. */
    const int fused = o->scores == M2_SCORES_FUSED ||
                      (o->scores == M2_SCORES_DEFAULT && dt != TILE_F32 && heads == 1 && !o->carry_tf32 && N <= 128);
    p->skip[K_SCORES] = fused;
    p->fused = fused;
    p->heads = heads;
    p->exact = exact;

    const int tf32 = dt == TILE_F32 && !o->fp32_products;
    char (*name)[64] = p->name;
    snprintf(name[K_CUMSUM], sizeof name[K_CUMSUM], "chunk_cumsum");
    snprintf(name[K_STATE], sizeof name[K_STATE], "fwd_pass_state_%s_s%s", short_dtype(dt), short_dtype(sdt));
    snprintf(name[K_SCORES], sizeof name[K_SCORES], "chunk_scores_%s", short_dtype(dt));
    if (heads > 1) snprintf(name[K_OUT], sizeof name[K_OUT], "compute_out_heads");
    else snprintf(name[K_OUT], sizeof name[K_OUT], "compute_out_%s_s%s", short_dtype(dt), short_dtype(sdt));

    const int block_p = min_int(64, pow2_at_least(P));
    /* compute_out's skip term: a per-head D rides the causal loop's mma, on the
     * weights' diagonal (compute_out.tile's D_DIAGONAL: no x_m load, no
     * epilogue; at (8, 4096, 80, 64, 128, 1, 256) bf16 compute_out 1.220 ->
     * 1.070 ms, with dstate 64 and 8 groups 1.012 -> 0.947, tf32 2.058 ->
     * 2.012; H200, 2026-12-01, on a prototype reading D_h once per head); one
     * of (heads, headdim) is added after it
     * (D_AFTER), as is every D of the separate-scores 16-bit kernel: there the
     * diagonal measured 0.170 -> 0.239 ms at (1, 4096, 80, 64, 128, 1, 256)
     * at one block per SM, and with the 2 blocks asked for below it has not
     * been timed.  Never by the state dtype, so that y stays the same bit for
     * bit whichever stores the states (mamba2_state_dtype_same_y). */
    const int has_d = !f->has_D ? 0 : f->D_per_head && (fused || dt == TILE_F32) ? 2 : 1;
    /* fwd_pass_state's head dims per block for 16-bit inputs: 64 (mamba2
     * --tune's winner on the H200 on 2026-12-01) when that still makes 512
     * blocks or more, about two waves of 2 per SM on 132 SMs: at (8, 4096, 80,
     * 64, 128, 1, 256) 0.452 -> 0.360 ms, with dstate 64 and 8 groups 0.306 ->
     * 0.208; with fewer blocks 32 (64 was 10-13% slower at 192 and 160 blocks).
     * 8 warps for f32 with exact products (0.89 vs 1.12 ms, 2026-11-29, when
     * tf32 took them too). */
    const int p64_blocks = Bt * H * cdiv_int(P, 64);
    /* tf32: 32 head dims, 32-token steps, 4 warps (the H200's tuner winner,
     * 2026-12-03; same-call A/B against 64 head dims, 64-token steps on 8 warps:
     * 0.737 -> 0.666 ms at (8, 4096, 80, 64, 128, 1, 256), 0.208 -> 0.160 at
     * batch 1, 1.118 -> 0.744 at (2, 16384), 0.554 -> 0.515 with dstate 64
     * and 8 groups). */
    const int block_p_state = o->block_p_state ? o->block_p_state
                              : tf32             ? min_int(32, block_p)
                              : dt == TILE_F32   ? block_p
                                                 : min_int(p64_blocks >= 512 ? 64 : 32, block_p);
    const int warps_state = o->warps_state ? o->warps_state : tf32 ? 4 : dt == TILE_F32 ? 8 : 0;
    /* fwd_pass_state: a 64 x 128 state tile reads x once for N <= 128; 64
     * tokens per step.  compute_out: dstate in slices of 32
     * keeps registers bounded.  (The fastest of a sweep on the H200.) */
    const int block_n_state = o->block_n_state ? o->block_n_state : min_int(128, max_int(16, pow2_at_least(N)));
    /* fused: C_m stays in registers for every step's scores, so its tile
     * covers dstate (main refuses a smaller --block-n-out) */
    const int block_n_out = o->block_n_out ? o->block_n_out
                                           : fused ? max_int(16, pow2_at_least(N)) : min_int(32, max_int(16, pow2_at_least(N)));
    /* compute_out's row block: 128 tokens for 16-bit inputs (1.43 vs 1.71 ms
     * at (8, 4096, 80, 64, 128, 1, 256) bf16 on the H200), 64 for f32 (2.03
     * vs 2.62 ms in tf32 on 2026-11-29: 128 rows of f32 scores left one block
     * per SM).  Since tf32 fragments are read by ldmatrix, 128 rows on 8 warps
     * fit 2 blocks per SM (128 registers) where D rides the diagonal, and are
     * faster: 2.03 -> 1.90 ms at that shape, 3-5% at the other tf32 shapes
     * timed (H200, 2026-12-03); without that D they take 253 registers, 1
     * block per SM (ptxas), and keep 64. */
    const int tf32_rows128 = tf32 && !fused && heads == 1 && has_d == 2;
    const int block_m = min_int(o->block_m                            ? o->block_m
                                : tf32_rows128                        ? 128
                                : dt == TILE_F32 || heads > 1 || fused ? 64
                                                                       : 128,
                                Q);
    /* fwd_pass_state's tokens per step: 64, or 32 at 3 blocks per SM where
     * that makes fewer waves of blocks than 2 per SM.  With 16-bit inputs on
     * wgmma a 64 x 128 state tile takes 242 registers and 79 KB of shared
     * memory at 64-token steps (2 blocks per SM), 168 and 40 KB at 32 (3;
     * ptxas, NVRTC 13.0).  At (8, 4096, 80, 64, 128, 1, 256) bf16, 640
     * blocks, 2 waves instead of 3: 0.346 -> 0.316 ms.  Where the waves are as
     * many the smaller steps cost: (2, 16384, 80, 64, 128) 0.449 -> 0.487,
     * tf32 0.755 -> 0.773; with dstate 64 (64 x 64 tiles, 4 blocks per SM
     * already) 0.210 -> 0.240 (H200, same call, 2026-12-02). */
    const int state_blocks = cdiv_int(P, block_p_state) * cdiv_int(N, block_n_state) * H * Bt;
    const int state_3_per_sm = dt != TILE_F32 && on_wgmma(run) && block_p_state == 64 && block_n_state == 128 &&
                               !o->block_k && !o->occupancy_state && !o->warps_state && o->heads_state <= 1 &&
                               fewer_waves(run, state_blocks, 3, 2);
    const int block_k = min_int(o->block_k ? o->block_k : state_3_per_sm || tf32 ? 32 : 64, Q);
    const int occupancy_state = o->occupancy_state ? o->occupancy_state : state_3_per_sm ? 3 : 0;
    /* with several heads per block, 32 keeps it within 128 registers.  Fused
     * (C_m's fragments, the scores and the output all in registers): 64 rows on
     * 4 warps, 16 rows each, in 32-token steps (156-168 registers, 3 blocks
     * per SM; 16-token steps for f32, whose C_m takes twice the registers).
     * No spills at (64, 128) (ptxas); the fastest fused setting timed on the
     * H200 (16-token steps, or 128 rows on 8 warps at 1 or 2 blocks per SM, were
     * 4-45% slower). */
    const int block_k_out = min_int(o->block_k_out ? o->block_k_out : heads > 1 || (fused && dt != TILE_F32) ? 32
                                                                    : fused ? 16 : 64, block_m);
    const int warps_out = o->warps_out ? o->warps_out : fused ? 4 : 0;
    /* the fused default's occupancy only with its own tiles and warps (others
     * may not fit it; --tune holds it all the same, and the backend lowers it
     * for a point that would spill) */
    const int fused_defaults = fused && !o->block_m && !o->warps_out && !o->block_k_out;
    /* Separate, 16-bit: 2 blocks per SM, which its shared memory (78 KB)
     * implies anyway; said outright because at 46 KB (the skip term on the
     * diagonal) ptxas took 182 registers and left one block per SM. */
    /* Fused with f32 states and dstate over 64 (16-bit inputs): 2, the state
     * tile converted in registers spilling at 3 with the skip term on the
     * diagonal (ptxas, NVRTC 13.0: 215 registers at 2). */
    /* Else 4, which the CUDA backend lowers one block at a time while ptxas
     * reports spills (cuda_compile.h): on wgmma the defaults fit 128 registers
     * with 16-bit inputs and no gate, no D per head dim, no --carry tf32, and
     * dstate up to 64, or up to 128 with bf16 inputs and bf16 states; with the
     * gate or a D per head dim they settle at 3, with --carry tf32 at 2 (it
     * spilled 124 bytes at the 3 asked for before), and on mma.sync at 3
     * (ptxas, NVRTC 13.0; tests/gpu's nvrtc_mamba2_settle pins them).  At 4 instead of 3 compute_out took
     * 0.896 -> 0.799 ms at (8, 4096, 80, 64, 128, 1, 256) bf16 (H200, same
     * call; docs/performance.md has the other shapes). */
    const int fused_occupancy = dt == TILE_F32 || (sdt == TILE_F32 && block_n_out > 64 && has_d == 2) ? 2 : 4;
    const int occupancy_out = o->occupancy_out ? o->occupancy_out
                              : fused_defaults ? fused_occupancy
                              : !fused && heads == 1 && dt != TILE_F32 ? 2 : 0;

    /* The plain run's constants.  --tune holds only what the run fixes (the
     * chunk, the optional inputs, TF32) and the tiles flags given; it searches
     * the rest over each kernel's `tune` block.  num_warps, a hint the
     * compiler accepts as a binding, only where one is chosen. */
    plan_cumsum(p, Q, H, o->dt_softplus, exact);

    plan_const(p, K_STATE, "CHUNK", Q, 1);
    plan_const(p, K_STATE, "HAS_INITIAL", f->has_initial, 1);
    plan_const(p, K_STATE, "BLOCK_K", block_k, o->block_k != 0);
    plan_const(p, K_STATE, "BLOCK_P", block_p_state, o->block_p_state != 0);
    plan_const(p, K_STATE, "BLOCK_N", block_n_state, o->block_n_state != 0);
    if (dt == TILE_F32) plan_const(p, K_STATE, "TF32", tf32, 1);
    if (warps_state) plan_const(p, K_STATE, "num_warps", warps_state, o->warps_state != 0);
    /* --tune holds the occupancy asked for (the backend lowers it for a point
     * that would spill): its tune blocks do not search it, and a search at the
     * compiler's own occupancy found the bf16 anchor's compute_out 0.785 ->
     * 0.885 ms slower than the plain run (H200, 2026-12-03) */
    if (occupancy_state) plan_const(p, K_STATE, "occupancy", occupancy_state, 1);
    if (o->heads_state > 1) plan_const(p, K_STATE, "HEADS", o->heads_state, 1);

    const int seq_heads = heads > 1         ? 1
                          : o->seq_heads     ? o->seq_heads
                          : fused && large_16bit_run(o, sdt, occupancy_out, Bt, H, nchunks, Q) ? default_seq_heads(H / G)
                                             : 1;
    plan_const(p, K_OUT, "CHUNK", Q, 1);
    plan_const(p, K_OUT, "HAS_D", has_d, 1);
    plan_const(p, K_OUT, "HAS_Z", f->has_z, 1);
    plan_const(p, K_OUT, "BLOCK_M", block_m, o->block_m != 0);
    plan_const(p, K_OUT, "BLOCK_P", block_p, 0);
    /* fused: the tuner keeps dstate in one slice (smaller ones re-read C in the loop) */
    plan_const(p, K_OUT, "BLOCK_N", block_n_out, o->block_n_out || fused);
    plan_const(p, K_OUT, "BLOCK_K", block_k_out, o->block_k_out != 0);
    if (dt == TILE_F32) plan_const(p, K_OUT, "TF32", tf32, 1);
    if (warps_out) plan_const(p, K_OUT, "num_warps", warps_out, o->warps_out != 0);
    if (occupancy_out) plan_const(p, K_OUT, "occupancy", occupancy_out, 1);
    if (o->carry_tf32 && dt != TILE_F32) plan_const(p, K_OUT, "CARRY_TF32", 1, 1);
    if (heads == 1) plan_const(p, K_OUT, "FUSED", fused, 1);
    /* --tune holds it too: the scores' mode was chosen for it */
    if (seq_heads > 1) plan_const(p, K_OUT, "SEQ_HEADS", seq_heads, 1);
    if (heads > 1) {
        plan_add(p, K_OUT, tile_const_dtype("T", dt), 1);
        plan_add(p, K_OUT, tile_const_dtype("S", sdt), 1);
        plan_const(p, K_OUT, "HEADS", heads, 1);
    }

    /* chunk_scores: all of dstate in one step for 16-bit inputs (no spills
     * at 128; 64 spills a word), 64 for f32.  Its rows are compute_out's
     * (--block-m sets both), except under tf32's 128-row compute_out: 128
     * rows of f32 scores take 255 registers and 128 KB, one block per SM,
     * and spill unaligned (ptxas), and were slower (0.029 -> 0.034 ms at the
     * anchor); compute_out reads the scores whatever tiles made them. */
    const int block_n_scores = min_int(dt == TILE_F32 ? 64 : 128, max_int(16, pow2_at_least(N)));
    const int block_m_scores = tf32_rows128 && !o->block_m ? 64 : block_m;
    plan_const(p, K_SCORES, "CHUNK", Q, 1);
    plan_const(p, K_SCORES, "BLOCK_M", block_m_scores, o->block_m != 0);
    plan_const(p, K_SCORES, "BLOCK_N", block_n_scores, 0);
    if (dt == TILE_F32) plan_const(p, K_SCORES, "TF32", tf32, 1);
}


static int run_setup(Run *run, const M2Inputs *in, const M2Options *o, int tune, int verbose) {
    const M2Shape *s = &in->s;
    const struct M2RandomFeatures features = features_of(in);
    Plan plan;
    run_plan(run, &plan, s, o, &features);
    const int Bt = s->batch, L = s->seqlen, H = s->heads, P = s->headdim, N = s->dstate, G = s->groups;
    const int Q = s->chunk, nchunks = run->nchunks, heads = plan.heads, fused = plan.fused, exact = plan.exact;
    const tile_dtype dt = o->dtype, sdt = o->state_dtype;
    const size_t nx = m2_numel_x(s), nbc = m2_numel_bc(s), nstate = m2_numel_state(s);
    const size_t ntok = (size_t)Bt * L * H;

    if (upload(run, &run->x, in->x, nx, dt) || upload(run, &run->dt, in->dt, ntok, TILE_F32) ||
        upload(run, &run->A, in->A, (size_t)H, TILE_F32) || upload(run, &run->B, in->B, nbc, dt) ||
        upload(run, &run->C, in->C, nbc, dt))
        return -1;
    if (in->D && upload(run, &run->D, in->D, (size_t)H * P, TILE_F32)) return -1;
    if (in->z && upload(run, &run->z, in->z, nx, dt)) return -1;
    if (in->initial_states && upload(run, &run->initial, in->initial_states, nstate, TILE_F32)) return -1;
    if (in->dt_bias) {
        if (upload(run, &run->dt_bias, in->dt_bias, (size_t)H, TILE_F32)) return -1;
    } else if (alloc_zero(run, &run->dt_bias, (size_t)H * 4)) {
        return -1;
    }
    /* (no per-chunk states under --pass scan) */
    const size_t state_bytes = plan.scan ? 0 : (size_t)Bt * nchunks * H * P * N * (size_t)tile_dtype_size(sdt);
    if (alloc_zero(run, &run->dummy, 16) || alloc_zero(run, &run->dt_out, ntok * 4) ||
        alloc_zero(run, &run->dA_cumsum, ntok * 4) || alloc_zero(run, &run->states, state_bytes) ||
        alloc_zero(run, &run->final_states, nstate * 4) || alloc_zero(run, &run->y, nx * (size_t)tile_dtype_size(dt)))
        return -1;
    memcpy(run->skip, plan.skip, sizeof run->skip);
    if (!fused && !plan.scan && alloc_zero(run, &run->scores, (size_t)Bt * nchunks * G * Q * Q * 4)) return -1;
    const int tf32_bc = plan.scan && !plan.skip[K_SCORES];
    if (tf32_bc && (alloc_zero(run, &run->b_tf32, nbc * 4) || alloc_zero(run, &run->c_tf32, nbc * 4))) return -1;
    /* a split scan: where each segment but the last ends, and its whole decay */
    const int walked = plan.scan ? run->segments - 1 : 0;
    if (alloc_zero(run, &run->seg_states, (size_t)Bt * walked * H * P * N * 4) ||
        alloc_zero(run, &run->seg_decay, (size_t)Bt * H * walked * 4))
        return -1;
    if (exact && alloc_zero(run, &run->dA_lo, ntok * 4)) return -1;

    char dir[4096];
    tile_dir(dir, sizeof dir);
    if (load_module(run, K_CUMSUM, dir, "chunk_cumsum.tile") ||
        (!plan.scan && load_module(run, K_STATE, dir, "fwd_pass_state.tile")) ||
        load_module(run, K_OUT, dir, plan.scan ? "ssd_scan.tile" : "compute_out.tile"))
        return -1;
    /* one program, two kernels (the context releases it once) */
    run->mod[K_SCORES] = run->mod[K_OUT];
    if (plan.scan) run->mod[K_STATE] = run->mod[K_OUT];

    /* The decays' low parts: written and read only when exact (else any rank-3 array). */
    const tile_arg lo_arg = exact ? array_arg(run->dA_lo, TILE_F32, 3, Bt, H, L, 0, 0)
                                  : array_arg(run->dummy, TILE_F32, 3, 1, 1, 1, 0, 0);

    /* chunk_cumsum(A, dt, dt_bias, dt_out, dA_cumsum, dA_lo, dt_min, dt_max) */
    tile_arg *a = run->args[K_CUMSUM];
    a[0] = array_arg(run->A, TILE_F32, 1, H, 0, 0, 0, 0);
    a[1] = array_arg(run->dt, TILE_F32, 3, Bt, L, H, 0, 0);
    a[2] = array_arg(run->dt_bias, TILE_F32, 1, H, 0, 0, 0, 0);
    a[3] = array_arg(run->dt_out, TILE_F32, 3, Bt, H, L, 0, 0);
    a[4] = array_arg(run->dA_cumsum, TILE_F32, 3, Bt, H, L, 0, 0);
    a[5] = lo_arg;
    a[6] = tile_arg_f32((float)o->dt_min);
    a[7] = tile_arg_f32((float)o->dt_max);
    run->nargs[K_CUMSUM] = 8;

    /* fwd_pass_state(x, Bmat, dt_out, dA_cumsum, [dA_lo: the f32 kernels,]
     * initial_states, states, final_states) */
    a = run->args[K_STATE];
    int na = 0;
    a[na++] = array_arg(run->x, dt, 4, Bt, L, H, P, 0);
    a[na++] = array_arg(run->B, dt, 4, Bt, L, G, N, 0);
    a[na++] = array_arg(run->dt_out, TILE_F32, 3, Bt, H, L, 0, 0);
    a[na++] = array_arg(run->dA_cumsum, TILE_F32, 3, Bt, H, L, 0, 0);
    if (dt == TILE_F32) a[na++] = lo_arg;
    a[na++] = in->initial_states ? array_arg(run->initial, TILE_F32, 4, Bt, H, P, N, 0)
                                 : array_arg(run->dummy, TILE_F32, 4, 1, 1, 1, 1, 0);
    a[na++] = array_arg(run->states, sdt, 5, Bt, nchunks, H, P, N);
    a[na++] = array_arg(run->final_states, TILE_F32, 4, Bt, H, P, N, 0);
    run->nargs[K_STATE] = na;
    /* a split scan's arrays: (batch, segments - 1, heads, P, N) and (batch, heads, segments - 1) */
    const tile_arg seg_states_arg = array_arg(run->seg_states, TILE_F32, 5, Bt, walked, H, P, N);
    const tile_arg seg_decay_arg = array_arg(run->seg_decay, TILE_F32, 3, Bt, H, walked, 0, 0);
    if (plan.scan) {
        /* ssd_scan_states(x, Bmat, dt_out, dA_cumsum, seg_states, seg_decay, segment_steps) */
        na = 0;
        a[na++] = array_arg(run->x, dt, 4, Bt, L, H, P, 0);
        a[na++] = array_arg(run->B, dt, 4, Bt, L, G, N, 0);
        a[na++] = array_arg(run->dt_out, TILE_F32, 3, Bt, H, L, 0, 0);
        a[na++] = array_arg(run->dA_cumsum, TILE_F32, 3, Bt, H, L, 0, 0);
        a[na++] = seg_states_arg;
        a[na++] = seg_decay_arg;
        a[na++] = tile_arg_i32(run->segment_steps);
        run->nargs[K_STATE] = na;
    }

    /* chunk_scores(Bmat, Cmat, cb) */
    a = run->args[K_SCORES];
    a[0] = array_arg(run->B, dt, 4, Bt, L, G, N, 0);
    a[1] = array_arg(run->C, dt, 4, Bt, L, G, N, 0);
    a[2] = array_arg(run->scores, TILE_F32, 5, Bt, nchunks, G, Q, Q);
    run->nargs[K_SCORES] = 3;
    if (tf32_bc) {
        /* round_tf32_bc(Bmat, Cmat, b_tf32, c_tf32), as (batch * seqlen * groups, dstate) */
        const int64_t rows = (int64_t)Bt * L * G;
        a[0] = array_arg(run->B, TILE_F32, 2, rows, N, 0, 0, 0);
        a[1] = array_arg(run->C, TILE_F32, 2, rows, N, 0, 0, 0);
        a[2] = array_arg(run->b_tf32, TILE_TF32, 2, rows, N, 0, 0, 0);
        a[3] = array_arg(run->c_tf32, TILE_TF32, 2, rows, N, 0, 0, 0);
        run->nargs[K_SCORES] = 4;
    }

    a = run->args[K_OUT];
    if (plan.scan) {
        /* ssd_scan(x, Bmat, Cmat, z, D, dt_out, dA_cumsum, initial_states, y, final_states,
         * seg_states, seg_decay, segment_steps) */
        na = 0;
        a[na++] = array_arg(run->x, dt, 4, Bt, L, H, P, 0);
        a[na++] = tf32_bc ? array_arg(run->b_tf32, TILE_TF32, 4, Bt, L, G, N, 0) : array_arg(run->B, dt, 4, Bt, L, G, N, 0);
        a[na++] = tf32_bc ? array_arg(run->c_tf32, TILE_TF32, 4, Bt, L, G, N, 0) : array_arg(run->C, dt, 4, Bt, L, G, N, 0);
        a[na++] = in->z ? array_arg(run->z, dt, 4, Bt, L, H, P, 0) : array_arg(run->dummy, dt, 4, 1, 1, 1, 1, 0);
        a[na++] = in->D ? array_arg(run->D, TILE_F32, 2, H, P, 0, 0, 0)
                        : array_arg(run->dummy, TILE_F32, 2, 1, 1, 0, 0, 0);
        a[na++] = array_arg(run->dt_out, TILE_F32, 3, Bt, H, L, 0, 0);
        a[na++] = array_arg(run->dA_cumsum, TILE_F32, 3, Bt, H, L, 0, 0);
        a[na++] = in->initial_states ? array_arg(run->initial, TILE_F32, 4, Bt, H, P, N, 0)
                                     : array_arg(run->dummy, TILE_F32, 4, 1, 1, 1, 1, 0);
        a[na++] = array_arg(run->y, dt, 4, Bt, L, H, P, 0);
        a[na++] = array_arg(run->final_states, TILE_F32, 4, Bt, H, P, N, 0);
        a[na++] = seg_states_arg;
        a[na++] = seg_decay_arg;
        a[na++] = tile_arg_i32(run->segment_steps);
        run->nargs[K_OUT] = na;
    } else {
        /* compute_out(x, [Bmat: one head per block,] Cmat, cb, z, D, dt_out, dA_cumsum,
         * [dA_lo: the f32 kernels,] states, y); cb is not read when fused */
        na = 0;
        a[na++] = array_arg(run->x, dt, 4, Bt, L, H, P, 0);
        if (heads == 1) a[na++] = array_arg(run->B, dt, 4, Bt, L, G, N, 0);
        a[na++] = array_arg(run->C, dt, 4, Bt, L, G, N, 0);
        /* fused: an empty cb with the batch and group extents the kernel checks */
        a[na++] = fused ? array_arg(run->dummy, TILE_F32, 5, Bt, 0, G, 0, 0)
                        : array_arg(run->scores, TILE_F32, 5, Bt, nchunks, G, Q, Q);
        a[na++] = in->z ? array_arg(run->z, dt, 4, Bt, L, H, P, 0) : array_arg(run->dummy, dt, 4, 1, 1, 1, 1, 0);
        a[na++] = in->D ? array_arg(run->D, TILE_F32, 2, H, P, 0, 0, 0)
                        : array_arg(run->dummy, TILE_F32, 2, 1, 1, 0, 0, 0);
        a[na++] = array_arg(run->dt_out, TILE_F32, 3, Bt, H, L, 0, 0);
        a[na++] = array_arg(run->dA_cumsum, TILE_F32, 3, Bt, H, L, 0, 0);
        if (dt == TILE_F32) a[na++] = lo_arg;
        a[na++] = array_arg(run->states, sdt, 5, Bt, nchunks, H, P, N);
        a[na++] = array_arg(run->y, dt, 4, Bt, L, H, P, 0);
        run->nargs[K_OUT] = na;
    }

    if (!tune) {   /* all four compiled at once, for these arrays (on the CPU this does nothing) */
        tile_kernel_request reqs[K_COUNT];
        int nreqs = 0;
        for (int k = 0; k < K_COUNT; k++)
            if (!run->skip[k])
                reqs[nreqs++] = (tile_kernel_request){run->mod[k], plan.name[k], plan.consts[k], plan.nconsts[k],
                                                      run->args[k], run->nargs[k]};
        TRY(tile_kernel_prefetch(run->ctx, reqs, nreqs));
    }
    for (int k = 0; k < K_COUNT; k++) {
        if (run->skip[k]) continue;
        if (tune) {
            if (tune_kernel(run, k, plan.name[k], plan.fixed[k], plan.nfixed[k], verbose)) return -1;
        } else {
            TRY(tile_kernel_get(run->mod[k], plan.name[k], plan.consts[k], plan.nconsts[k], &run->kern[k]));
            grid_for(run, k, plan.consts[k], plan.nconsts[k], run->grid[k]);
        }
    }
    return 0;
}

/* Launches the four kernels; with events (K_COUNT + 1 of them) records one
 * before each kernel and one after the last. */
static int run_launch(Run *run, tile_event **ev) {
    for (int k = 0; k < K_COUNT; k++) {
        if (ev) TRY(tile_event_record(ev[k], NULL));
        if (run->skip[k]) continue;
        tile_status st = tile_launch(run->kern[k], run->grid[k], run->args[k], run->nargs[k], NULL);
        if (st != TILE_OK) {
            fprintf(stderr, "mamba2: launch of %s failed: %s\n%s\n", label_of(run->scan, k, 0), tile_status_name(st),
                    tile_ctx_last_error(run->ctx));
            return -1;
        }
    }
    if (ev) TRY(tile_event_record(ev[K_COUNT], NULL));
    TRY(tile_synchronize(run->ctx));
    return 0;
}

static int run_download(Run *run, const M2Inputs *in, const M2Options *o, M2Outputs *out) {
    const size_t nx = m2_numel_x(&in->s), nstate = m2_numel_state(&in->s);
    const size_t ybytes = nx * (size_t)tile_dtype_size(o->dtype);
    /* y stays in the run's dtype on the host too: no float32 copy of it. */
    out->dtype = o->dtype;
    out->y = malloc(ybytes + 1);
    out->final_states = malloc(nstate * sizeof(float) + 1);
    if (!out->y || !out->final_states) {
        fprintf(stderr, "mamba2: out of memory for the outputs\n");
        return -1;
    }
    tile_status st = tile_memcpy_d2h(run->ctx, out->y, run->y, ybytes);
    if (st == TILE_OK) st = tile_memcpy_d2h(run->ctx, out->final_states, run->final_states, nstate * 4);
    if (st != TILE_OK) {
        fprintf(stderr, "mamba2: download failed: %s\n", tile_ctx_last_error(run->ctx));
        return -1;
    }
    return 0;
}

static void run_free(Run *run) {
    void *bufs[] = {run->x, run->dt, run->A, run->B, run->C, run->D, run->z, run->dt_bias, run->initial,
                    run->dt_out, run->dA_cumsum, run->states, run->final_states, run->y, run->dummy, run->scores,
                    run->dA_lo, run->seg_states, run->seg_decay, run->b_tf32, run->c_tf32};
    if (!run->ctx) return;
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) tile_free(run->ctx, bufs[i]);
    tile_ctx_destroy(run->ctx);   /* releases the modules too */
}

/* ---- --bench ------------------------------------------------------------ */

static int cmp_float(const void *a, const void *b) {
    const float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}
static const char *backend_name(tile_backend_kind k) {
    return k == TILE_BACKEND_CUDA ? "cuda" : k == TILE_BACKEND_EMU ? "emu" : "cpu";
}

static float median(float *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_float);
    return n % 2 ? v[n / 2] : 0.5f * (v[n / 2 - 1] + v[n / 2]);
}

/* mamba_ssm times from ../shared/bench/anchors.md (H200), to put ours beside. */
typedef struct Anchor { int batch, seqlen, heads, headdim, dstate, groups, chunk; tile_dtype dtype; double ms; } Anchor;
static const Anchor anchors[] = {
    {1, 4096, 80, 64, 128, 1, 256, TILE_BF16, 0.516}, {1, 4096, 80, 64, 128, 1, 256, TILE_F32, 0.465},
    {8, 4096, 80, 64, 128, 1, 256, TILE_BF16, 1.415}, {8, 4096, 80, 64, 128, 1, 256, TILE_F32, 2.452},
    {2, 16384, 80, 64, 128, 1, 256, TILE_BF16, 1.416}, {8, 2048, 24, 64, 128, 1, 256, TILE_BF16, 0.568},
    {8, 4096, 80, 64, 64, 8, 256, TILE_BF16, 1.147},
};

static int bench(Run *run, const M2Inputs *in, const M2Options *o, int iters, int warmup) {
    const M2Shape *s = &in->s;
    tile_event *ev[K_COUNT + 1] = {0};
    float *times[K_COUNT + 1];
    for (int k = 0; k <= K_COUNT; k++) {
        times[k] = calloc((size_t)iters, sizeof(float));
        if (!times[k] || tile_event_create(run->ctx, &ev[k]) != TILE_OK) {
            fprintf(stderr, "mamba2: cannot create timing events: %s\n", tile_ctx_last_error(run->ctx));
            return -1;
        }
    }
    int rc = 0;
    for (int i = 0; i < warmup && rc == 0; i++) rc = run_launch(run, NULL);
    for (int i = 0; i < iters && rc == 0; i++) {
        rc = run_launch(run, ev);
        for (int k = 0; k < K_COUNT && rc == 0; k++)
            if (tile_event_elapsed_ms(ev[k], ev[k + 1], &times[k][i]) != TILE_OK) rc = -1;
        if (rc == 0 && tile_event_elapsed_ms(ev[0], ev[K_COUNT], &times[K_COUNT][i]) != TILE_OK) rc = -1;
    }
    if (rc == 0) {
        const double esize = tile_dtype_size(o->dtype);
        const double L = s->seqlen, Q = s->chunk, P = s->headdim, N = s->dstate;
        const double nchunks = ceil(L / Q);
        /* Compulsory traffic: read x, dt, B, C (z, D, dt_bias, initial states); write y, final state. */
        double bytes = (double)m2_numel_x(s) * esize * (in->z ? 3 : 2) + (double)s->batch * L * s->heads * 4 +
                       (double)m2_numel_bc(s) * esize * 2 + (double)m2_numel_state(s) * 4 * (in->initial_states ? 2 : 1);
        /* Useful flops as in anchors.md: C Bᵀ once per group (causal half), then per head the
         * causal scores @ x, the carried state term and the chunk state. */
        double flops = (double)s->batch * nchunks * s->groups * Q * Q * N +
                       (double)s->batch * nchunks * s->heads * (Q * Q * P + 4.0 * Q * N * P);
        const double total_ms = median(times[K_COUNT], iters);
        printf("bench: %s on %s, %d iterations after %d warm-up, median times\n",
               backend_name(tile_ctx_backend(run->ctx)), tile_ctx_device_name(run->ctx),
               iters, warmup);
        for (int k = 0; k < K_COUNT; k++)
            if (!run->skip[k]) printf("  %-15s %10.4f ms\n", label_of(run->scan, k, 0), median(times[k], iters));
            else printf("  %-15s %10s (%s)\n", label_of(run->scan, k, 1), "-", skipped_why(run->scan, k));
        printf("  %-15s %10.4f ms\n", "total", total_ms);
        printf("  traffic  %.3f GB compulsory -> %.1f GB/s (floor %.4f ms at 4.23 TB/s)\n", bytes * 1e-9,
               bytes / (total_ms * 1e-3) * 1e-9, bytes / 4.23e12 * 1e3);
        const double peak = o->dtype == TILE_F32 ? (o->fp32_products ? 0 : 359e12) : 700e12;
        printf("  compute  %.1f GFLOP useful -> %.2f TFLOP/s", flops * 1e-9, flops / (total_ms * 1e-3) * 1e-12);
        if (peak > 0) printf(" (floor %.4f ms at %.0f TFLOP/s)", flops / peak * 1e3, peak * 1e-12);
        printf("\n");
        for (size_t i = 0; i < sizeof anchors / sizeof anchors[0]; i++) {
            const Anchor *a = &anchors[i];
            if (a->batch == s->batch && a->seqlen == s->seqlen && a->heads == s->heads && a->headdim == s->headdim &&
                a->dstate == s->dstate && a->groups == s->groups && a->chunk == s->chunk && a->dtype == o->dtype)
                printf("  anchor   mamba_ssm %.3f ms on an H200 (anchors.md): ours / theirs = %.2f"
                       " (measure both in one run: bench/mamba_ssm_compare.py)\n", a->ms, total_ms / a->ms);
        }
    }
    for (int k = 0; k <= K_COUNT; k++) {
        free(times[k]);
        tile_event_destroy(ev[k]);
    }
    return rc;
}

/* ---- main --------------------------------------------------------------- */

/* (emu runs the CUDA backend's code on the host: its sums in the GPU's order) */
static double default_tol(const M2Options *o, tile_backend_kind backend) {
    if (o->dtype != TILE_F32) return 1e-2;
    if (!o->fp32_products) return 2e-3;
    return backend == TILE_BACKEND_CPU ? 1e-5 : 1e-4;
}

static int make_dir(const char *dir) {
    if (mkdir(dir, 0777) == 0 || errno == EEXIST) return 0;
    fprintf(stderr, "mamba2: cannot create %s: %s\n", dir, strerror(errno));
    return -1;
}

/* Options that depend on the shape: 0, or -1 after saying why. */
static int check_options(const Config *cfg, const M2Shape *s) {
    const int hpb = cfg->opt.heads_per_block;
    if (cfg->opt.heads_state > 1 && (s->heads / s->groups) % cfg->opt.heads_state != 0) {
        fprintf(stderr, "mamba2: --heads-state %d must divide the heads of a group (%d / %d = %d)\n",
                cfg->opt.heads_state, s->heads, s->groups, s->heads / s->groups);
        return -1;
    }
    if (hpb > 1 && (cfg->opt.dtype == TILE_F32 || cfg->opt.carry_tf32 || (s->heads / s->groups) % hpb != 0)) {
        fprintf(stderr, "mamba2: --heads-per-block %d needs bf16 or f16 inputs without --carry tf32, and must divide "
                        "the heads of a group (%d / %d = %d)\n", hpb, s->heads, s->groups, s->heads / s->groups);
        return -1;
    }
    if (hpb > 1 && cfg->opt.seq_heads > 1) {
        fprintf(stderr, "mamba2: --heads-per-block and --seq-heads are two ways of giving a block several heads; "
                        "choose one\n");
        return -1;
    }
    if (hpb > 1 && cfg->opt.scores == M2_SCORES_FUSED) {
        fprintf(stderr, "mamba2: --scores fused runs one head per block; --heads-per-block %d reads the scores "
                        "from chunk_scores (--scores separate)\n", hpb);
        return -1;
    }
    /* fused keeps all of C_m's dstate columns in one tile (compute_out.tile
     * writes NaN rather than a y without the rest) */
    if (cfg->opt.scores == M2_SCORES_FUSED && cfg->opt.block_n_out && cfg->opt.block_n_out < s->dstate) {
        fprintf(stderr, "mamba2: --scores fused needs --block-n-out of at least dstate (%d), got %d\n", s->dstate,
                cfg->opt.block_n_out);
        return -1;
    }
    const M2Options *o = &cfg->opt;
    if (o->pass == M2_PASS_SCAN) {
        const char *why = scan_unfit(o, s);
        if (why) {
            fprintf(stderr, "mamba2: --pass scan does not take %s\n", why);
            return -1;
        }
        if (chunked_tiles_given(o) || cfg->state_dtype_given) {
            fprintf(stderr, "mamba2: --pass scan keeps no per-chunk states and has no kernel 3: --state-dtype, "
                            "--block-n-state, --block-n-out, --block-k, --block-k-out, --block-m, --heads-state, "
                            "--warps-out and --occupancy-out are the chunked pass's (--pass chunks)\n");
            return -1;
        }
    }
    if (o->pass == M2_PASS_CHUNKS && (o->scan_step || o->segments)) {
        fprintf(stderr, "mamba2: --scan-step and --segments are the scan pass's (--pass scan), not the chunked "
                        "pass's\n");
        return -1;
    }
    return 0;
}

/* The backend: as asked, or the GPU when there is one, else the CPU.
 * Returns 0, or the exit status (EXIT_SKIP: --backend cuda without one). */
static int open_backend(const Config *cfg, tile_ctx **ctx) {
    tile_status st;
    *ctx = NULL;
    if (cfg->backend && !strcmp(cfg->backend, "cpu")) {
        st = tile_ctx_create(ctx, TILE_BACKEND_CPU, 0);
    } else if (cfg->backend && !strcmp(cfg->backend, "emu")) {
        st = tile_ctx_create(ctx, TILE_BACKEND_EMU, 0);
    } else {
        st = tile_ctx_create(ctx, TILE_BACKEND_CUDA, 0);
        if (st != TILE_OK) {
            const char *why = *ctx ? tile_ctx_last_error(*ctx) : tile_status_name(st);
            if (cfg->backend) {
                fprintf(stderr, "mamba2: CUDA backend not available: %s\n", why);
                tile_ctx_destroy(*ctx);
                *ctx = NULL;
                return EXIT_SKIP;
            }
            fprintf(stderr, "mamba2: no GPU (%s); running on the CPU interpreter\n", why);
            tile_ctx_destroy(*ctx);
            *ctx = NULL;
            st = tile_ctx_create(ctx, TILE_BACKEND_CPU, 0);
        }
    }
    if (st != TILE_OK) {
        fprintf(stderr, "mamba2: cannot create a context: %s\n", *ctx ? tile_ctx_last_error(*ctx) : "");
        tile_ctx_destroy(*ctx);
        *ctx = NULL;
        return EXIT_CHECK;
    }
    return 0;
}

/* --plan: one line per kernel, its grid and the constants it is specialised
 * on (the plain run's; --tune searches from the ones it holds). */
static void print_plan(const Config *cfg, const M2Shape *s, const struct M2RandomFeatures *f) {
    Run run;
    Plan plan;
    memset(&run, 0, sizeof run);
    run_plan(&run, &plan, s, &cfg->opt, f);
    printf("plan: batch %d, seqlen %d, heads %d, headdim %d, dstate %d, groups %d, chunk %d; %s inputs, %s%s\n",
           s->batch, s->seqlen, s->heads, s->headdim, s->dstate, s->groups, s->chunk, tile_dtype_name(cfg->opt.dtype),
           plan.scan ? "the state on chip (--pass scan)" : tile_dtype_name(cfg->opt.state_dtype),
           plan.scan ? "" : " states");
    for (int k = 0; k < K_COUNT; k++) {
        if (plan.skip[k]) {
            printf("  %-26s not launched (%s)\n", plan.name[k], skipped_why(plan.scan, k));
            continue;
        }
        int grid[3];
        grid_for(&run, k, plan.consts[k], plan.nconsts[k], grid);
        char g[48];
        snprintf(g, sizeof g, "(%d, %d, %d)", grid[0], grid[1], grid[2]);
        printf("  %-26s grid %-16s", plan.name[k], g);
        print_consts("", plan.consts[k], plan.nconsts[k]);
        printf("\n");
        if (cfg->tune) {
            print_consts("      --tune holds:", plan.fixed[k], plan.nfixed[k]);
            printf("\n");
        }
    }
    int asks = 0;
    for (int k = 0; k < K_COUNT; k++)
        for (int i = 0; i < plan.nconsts[k]; i++) asks |= !plan.skip[k] && !strcmp(plan.consts[k][i].name, "occupancy");
    if (asks) printf("  (occupancy: blocks per SM asked for; the CUDA backend lowers it while ptxas spills)\n");
    if (cfg->tune) printf("  (--tune would search each kernel's tune block, holding the constants listed under each)\n");
}

int main(int argc, char **argv) {
    Config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.shape = (M2Extents){.batch = 2, .seqlen = 200, .heads = 4, .headdim = 32, .dstate = 16, .groups = 2, .chunk = 64};
    cfg.opt.dtype = TILE_F32;
    cfg.opt.state_dtype = TILE_F32;
    cfg.opt.dt_min = -INFINITY;
    cfg.opt.dt_max = INFINITY;
    cfg.features.has_D = 1;
    cfg.features.D_per_head = 1;
    cfg.seed = 1;
    cfg.iters = 0;
    cfg.warmup = -1;
    int rc = parse_args(argc, argv, &cfg);
    if (rc) return rc;
    /* A flag only one pass has picks that pass when --pass is not given:
     * --scan-step the scan, --state-dtype the chunked pass (use_scan's
     * default would drop it silently otherwise). */
    const int scan_flag = cfg.opt.scan_step || cfg.opt.segments;
    if (cfg.opt.pass == M2_PASS_DEFAULT && scan_flag && cfg.state_dtype_given) {
        fprintf(stderr, "mamba2: --scan-step and --segments are the scan pass's and --state-dtype the chunked "
                        "pass's: give one, or --pass\n");
        return EXIT_USAGE;
    }
    if (cfg.opt.pass == M2_PASS_DEFAULT && scan_flag) cfg.opt.pass = M2_PASS_SCAN;
    if (cfg.opt.pass == M2_PASS_DEFAULT && cfg.state_dtype_given) cfg.opt.pass = M2_PASS_CHUNKS;

    /* Inputs first: bad input exits 2 before any work or any file written. */
    char err[1024];
    M2Inputs in;
    if (cfg.shape.chunk != 64 && cfg.shape.chunk != 128 && cfg.shape.chunk != 256) {
        fprintf(stderr, "mamba2: unsupported chunk size %lld: use 64, 128 or 256\n", (long long)cfg.shape.chunk);
        return EXIT_USAGE;
    }
    M2Shape shape;
    if (cfg.inputs_dir) {
        if (m2_inputs_read(&in, cfg.inputs_dir, (int)cfg.shape.chunk, cfg.opt.dtype, err, sizeof err) != 0) {
            fprintf(stderr, "mamba2: %s\n", err);
            return EXIT_USAGE;
        }
        shape = in.s;
    } else if (m2_shape_make(&shape, &cfg.shape, err, sizeof err) != 0) {
        fprintf(stderr, "mamba2: %s\n", err);
        return EXIT_USAGE;
    }
    if (check_options(&cfg, &shape) != 0) {
        if (cfg.inputs_dir) m2_inputs_free(&in);
        return EXIT_USAGE;
    }

    if (cfg.plan) {
        const struct M2RandomFeatures f = cfg.inputs_dir ? features_of(&in) : cfg.features;
        print_plan(&cfg, &shape, &f);
        if (cfg.inputs_dir) m2_inputs_free(&in);
        return 0;
    }

    /* The backend, before random inputs are made: a GPU run on a machine
     * without one is skipped at once, not after seconds of making inputs. */
    Run run;
    memset(&run, 0, sizeof run);
    if ((rc = open_backend(&cfg, &run.ctx)) != 0) {
        if (cfg.inputs_dir) m2_inputs_free(&in);
        return rc;
    }
    if (!cfg.inputs_dir && m2_inputs_random(&in, &shape, &cfg.features, cfg.opt.dt_softplus, cfg.opt.dtype, cfg.seed,
                                            err, sizeof err) != 0) {
        fprintf(stderr, "mamba2: %s\n", err);
        tile_ctx_destroy(run.ctx);
        return EXIT_CHECK;
    }
    const M2Shape *s = &in.s;
    const tile_backend_kind backend = tile_ctx_backend(run.ctx);
    const struct M2RandomFeatures feats = features_of(&in);
    const int scan = use_scan(&run, &cfg.opt, s, &feats);
    printf("mamba2: batch %d, seqlen %d, heads %d, headdim %d, dstate %d, groups %d, chunk %d; %s inputs%s, "
           "%s%s%s%s%s%s%s on %s\n",
           s->batch, s->seqlen, s->heads, s->headdim, s->dstate, s->groups, s->chunk, tile_dtype_name(cfg.opt.dtype),
           cfg.opt.dtype == TILE_F32 ? (cfg.opt.fp32_products ? " (fp32 products)" : " (tf32 products)") : "",
           scan ? "the state on chip (--pass scan)" : tile_dtype_name(cfg.opt.state_dtype), scan ? "" : " states",
           in.D ? (in.D_per_head ? ", D (heads)" : ", D (heads, headdim)") : "",
           in.z ? ", z" : "", in.dt_bias ? ", dt_bias" : "", cfg.opt.dt_softplus ? ", softplus" : "",
           in.initial_states ? ", initial states" : "", tile_ctx_device_name(run.ctx));
    fflush(stdout);   /* before --tune's verbose table on stderr */

    int status = 0;
    M2Outputs out = {0};
    if (cfg.save_inputs_dir) {
        if (make_dir(cfg.save_inputs_dir) || m2_inputs_write(&in, cfg.save_inputs_dir, err, sizeof err)) {
            fprintf(stderr, "mamba2: %s\n", err);
            status = EXIT_CHECK;
        }
    }
    if (status == 0 && (run_setup(&run, &in, &cfg.opt, cfg.tune, cfg.verbose) || run_launch(&run, NULL) ||
                        run_download(&run, &in, &cfg.opt, &out)))
        status = EXIT_CHECK;
    if (status == 0 && cfg.check) {
        int pairs = cfg.check_pairs;
        const double work = (double)s->seqlen * s->headdim * s->dstate;
        if (pairs == 0 && work * s->batch * s->heads > 4e8) pairs = (int)fmax(4.0, 4e8 / work);
        M2Error ey, es;
        int checked = 0;
        m2_check(&in, &cfg.opt, &out, pairs, &ey, &es, &checked);
        const double tol = cfg.tol > 0 ? cfg.tol : default_tol(&cfg.opt, backend);
        printf("check: %d of %d (batch, head) pairs against the float64 recurrence\n", checked, s->batch * s->heads);
        printf("  y             rel L2 %.3e  max abs %.3e\n", ey.rel_l2, ey.max_abs);
        printf("  final state   rel L2 %.3e  max abs %.3e\n", es.rel_l2, es.max_abs);
        const int ok = checked > 0 && ey.rel_l2 <= tol && es.rel_l2 <= tol;
        printf("  %s (tolerance %.1e relative L2)\n", ok ? "PASS" : "FAIL", tol);
        if (!ok) status = EXIT_CHECK;
    }
    if (status == 0 && cfg.save_dir) {
        if (make_dir(cfg.save_dir) || m2_outputs_write(&out, s, cfg.save_dir, err, sizeof err)) {
            fprintf(stderr, "mamba2: %s\n", err);
            status = EXIT_CHECK;
        } else {
            printf("saved %s/y.npy and %s/final_states.npy\n", cfg.save_dir, cfg.save_dir);
        }
    }
    if (status == 0 && cfg.bench) {
        const int gpu = backend == TILE_BACKEND_CUDA;
        const int iters = cfg.iters ? cfg.iters : (gpu ? 50 : 3);
        const int warmup = cfg.warmup >= 0 ? cfg.warmup : (gpu ? 10 : 1);
        if (bench(&run, &in, &cfg.opt, iters, warmup)) status = EXIT_CHECK;
    }
    free(out.y);
    free(out.final_states);
    run_free(&run);
    m2_inputs_free(&in);
    return status;
}
