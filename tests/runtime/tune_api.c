/* tune_api.c: the autotuner (tile_tune) on the CPU backend: every point of a
 * two-axis space compiled and timed, a point failing its static_assert
 * skipped, the winner a point of the space that runs correctly with its hint
 * in the IR, the disk cache (hit without timing, shape classes, a corrupt file
 * ignored with a warning and rewritten, an unwritable directory), `fixed`
 * constants, and the errors of bad calls.
 * usage: tune_api SCRATCH_DIR */
#include "check.h"
#include "ir.h"
#include "tile.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *program =
    "const SMALL = 8;\n"
    "kernel saxpy(x: f32[N], y: f32[N], out: f32[N], a: f32, const BLOCK: i32) {\n"
    "    static_assert(BLOCK <= 32, \"BLOCK must be at most 32\");\n"
    "    let i = bid(0);\n"
    "    let tx = load(x, index=(i,), shape=(BLOCK,));\n"
    "    let ty = load(y, index=(i,), shape=(BLOCK,));\n"
    "    store(out, index=(i,), tile=tx * a + ty);\n"
    "}\n"
    "tune saxpy { BLOCK in (SMALL, 2 * SMALL, 32, 64); num_warps in (2, 4); }\n"
    "\n"
    "kernel plain(out: f32[N], const B: i32 = 16) {\n"
    "    store(out, index=(bid(0),), tile=ones((B,), f32));\n"
    "}\n"
    "\n"
    "kernel broken(out: f32[N], const B: i32) {\n"
    "    static_assert(B > 100, \"B is too small\");\n"
    "    store(out, index=(bid(0),), tile=ones((B,), f32));\n"
    "}\n"
    "tune broken { B in (1, 2); }\n";

static char dir[1024], cache_dir[1200], log_path[1200];
static tile_ctx *ctx;
static tile_module *mod;

enum { N_MAX = 200 };
static float xs[N_MAX], ys[N_MAX], outs[N_MAX];

static int64_t find_const(const tile_const *c, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (strcmp(c[i].name, name) == 0) return c[i].i;
    return -1;
}

/* grid[0] = cdiv(N, BLOCK or B); user points at N. */
static void grid_of(const tile_const *consts, int n, int grid[3], void *user) {
    int64_t block = find_const(consts, n, "BLOCK");
    if (block < 0) block = find_const(consts, n, "B");
    if (block <= 0) block = 16;
    int64_t len = *(int *)user;
    grid[0] = (int)((len + block - 1) / block);
    grid[1] = grid[2] = 1;
}

static void saxpy_args(int n, tile_arg args[4]) {
    int64_t shape[1] = {n};
    for (int i = 0; i < n; i++) {
        xs[i] = (float)i;
        ys[i] = 1.0f;
        outs[i] = -7.0f;
    }
    args[0] = tile_arg_array(tile_array_contiguous(xs, TILE_F32, 1, shape));
    args[1] = tile_arg_array(tile_array_contiguous(ys, TILE_F32, 1, shape));
    args[2] = tile_arg_array(tile_array_contiguous(outs, TILE_F32, 1, shape));
    args[3] = tile_arg_f32(2.0f);
}

/* Reads the log written so far (the tuner's verbose output and warnings). */
static char *read_log(FILE *log) {
    fflush(log);
    FILE *f = fopen(log_path, "rb");
    if (!f) return strdup("");
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return strdup(buf);
}

static FILE *fresh_log(void) {
    FILE *f = fopen(log_path, "w");
    if (!f) {
        perror(log_path);
        exit(1);
    }
    return f;
}

/* The path of the one tune-*.txt file in the cache dir ("" if none). */
static int cache_files(char *path, size_t n) {
    DIR *d = opendir(cache_dir);
    int count = 0;
    if (path) path[0] = '\0';
    if (!d) return 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, "tune-", 5) != 0) continue;
        count++;
        if (path) snprintf(path, n, "%s/%s", cache_dir, e->d_name);
    }
    closedir(d);
    return count;
}

static void clear_cache(void) {
    DIR *d = opendir(cache_dir);
    if (!d) return;
    char path[2048];
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.' && (e->d_name[1] == '\0' || (e->d_name[1] == '.' && e->d_name[2] == '\0'))) continue;
        snprintf(path, sizeof path, "%s/%s", cache_dir, e->d_name);
        unlink(path);
    }
    closedir(d);
}

static tile_tune_options options(FILE *log, tile_tune_stats *stats) {
    tile_tune_options o = tile_tune_default_options();
    o.warmup = 1;
    o.repeat = 3;
    o.verbose = 1;
    o.cache_dir = cache_dir;
    o.log = log;
    o.stats = stats;
    return o;
}

/* Tunes saxpy on N elements; checks the result of the winner. */
static tile_status tune_saxpy(int n, tile_tune_options *o, tile_kernel **best, tile_const *bc, int *nbc) {
    tile_arg args[4];
    saxpy_args(n, args);
    tile_status st = tile_tune(mod, "saxpy", NULL, 0, grid_of, &n, args, 4, o, best, bc, nbc);
    if (st != TILE_OK) {
        fprintf(stderr, "tile_tune: %s: %s\n", tile_status_name(st), tile_ctx_last_error(ctx));
        return st;
    }
    /* run the winner on fresh outputs: out = 2x + 1 everywhere */
    saxpy_args(n, args);
    int grid[3];
    grid_of(bc, *nbc, grid, &n);
    CHECK(tile_launch(*best, grid, args, 4, NULL) == TILE_OK);
    int bad = 0;
    for (int i = 0; i < n; i++) bad += outs[i] != 2.0f * (float)i + 1.0f;
    CHECK(bad == 0);
    return st;
}

static void check_winner(tile_kernel *best, const tile_const *bc, int nbc) {
    CHECK(nbc == 2);
    int64_t block = find_const(bc, nbc, "BLOCK"), warps = find_const(bc, nbc, "num_warps");
    CHECK(block == 8 || block == 16 || block == 32);   /* 64 fails its static_assert */
    CHECK(warps == 2 || warps == 4);
    const IrFunc *f = tile_kernel_ir(best);
    CHECK(f && f->num_warps == warps);   /* the hint reached the compiled kernel */
}

static void test_search_and_cache(void) {
    /* (the knob 3b sets, unset throughout: the caller's value, if any, back at the end) */
    const char *outer = getenv("TILEC_STAGE_RELEASE");
    char *saved = outer ? strdup(outer) : NULL;
    unsetenv("TILEC_STAGE_RELEASE");
    clear_cache();
    tile_tune_stats stats;
    FILE *log = fresh_log();
    tile_tune_options o = options(log, &stats);
    tile_kernel *best = NULL;
    tile_const bc[4];
    int nbc = 4;

    /* 1. a fresh search: 8 points, 6 timed, 2 skipped by the static_assert */
    CHECK(tune_saxpy(100, &o, &best, bc, &nbc) == TILE_OK);
    check_winner(best, bc, nbc);
    CHECK(stats.npoints == 8);
    CHECK(stats.ntimed == 6);
    CHECK(stats.nskipped == 2);
    CHECK(!stats.cache_hit && stats.cache_stored && !stats.cache_corrupt);
    CHECK(stats.best_ms > 0);
    char *text = read_log(log);
    CHECK_HAS(text, "8 points");
    CHECK_HAS(text, "BLOCK=8 num_warps=2");
    CHECK_HAS(text, "BLOCK=16 num_warps=4");
    CHECK_HAS(text, "BLOCK=32 num_warps=2");
    CHECK_HAS(text, "BLOCK=64 num_warps=4");
    CHECK_HAS(text, "skipped (compile: ");
    CHECK_HAS(text, "BLOCK must be at most 32");
    CHECK_HAS(text, "best BLOCK=");
    free(text);
    char path[2048];
    CHECK(cache_files(path, sizeof path) == 1);
    int64_t first_block = find_const(bc, nbc, "BLOCK"), first_warps = find_const(bc, nbc, "num_warps");
    float first_ms = stats.best_ms;

    /* 2. the same key again: the cached winner, nothing timed */
    fclose(log);
    log = fresh_log();
    o.log = log;
    nbc = 4;
    CHECK(tune_saxpy(100, &o, &best, bc, &nbc) == TILE_OK);
    check_winner(best, bc, nbc);
    CHECK(stats.cache_hit && stats.ntimed == 0 && stats.nskipped == 0);
    CHECK(find_const(bc, nbc, "BLOCK") == first_block && find_const(bc, nbc, "num_warps") == first_warps);
    CHECK(stats.best_ms == first_ms);
    text = read_log(log);
    CHECK_HAS(text, "cached winner");
    CHECK(!strstr(text, " ms\n  "));   /* no table */
    free(text);

    /* 3. a nearby shape (100 -> 120: both round up to 128) shares the winner;
     *    another class (300 -> 512) is tuned afresh and stored beside it */
    nbc = 4;
    CHECK(tune_saxpy(120, &o, &best, bc, &nbc) == TILE_OK);
    CHECK(stats.cache_hit && stats.ntimed == 0);
    nbc = 4;
    CHECK(tune_saxpy(N_MAX, &o, &best, bc, &nbc) == TILE_OK);   /* 200 -> 256 */
    CHECK(!stats.cache_hit && stats.ntimed == 6);
    CHECK(cache_files(NULL, 0) == 2);

    /* 3b. a compiler knob of the environment (TILEC_...) is part of the key: the
     *     code each point runs may differ under it; unset, the winner is back;
     *     one that changes no code (TILEC_CACHE_LOG) or is empty is not */
    setenv("TILEC_CACHE_LOG", "0", 1);
    setenv("TILEC_STAGE_RELEASE", "", 1);
    nbc = 4;
    CHECK(tune_saxpy(100, &o, &best, bc, &nbc) == TILE_OK);
    CHECK(stats.cache_hit && stats.ntimed == 0);
    unsetenv("TILEC_CACHE_LOG");
    setenv("TILEC_STAGE_RELEASE", "1", 1);
    nbc = 4;
    CHECK(tune_saxpy(100, &o, &best, bc, &nbc) == TILE_OK);
    CHECK(!stats.cache_hit && stats.ntimed == 6 && stats.cache_stored);
    CHECK(cache_files(NULL, 0) == 3);
    unsetenv("TILEC_STAGE_RELEASE");
    nbc = 4;
    CHECK(tune_saxpy(100, &o, &best, bc, &nbc) == TILE_OK);
    CHECK(stats.cache_hit && stats.ntimed == 0);

    /* 4. force: times again even with a cached winner */
    o.force = 1;
    nbc = 4;
    CHECK(tune_saxpy(100, &o, &best, bc, &nbc) == TILE_OK);
    CHECK(!stats.cache_hit && stats.ntimed == 6 && stats.cache_stored);
    o.force = 0;
    fclose(log);
    if (saved) setenv("TILEC_STAGE_RELEASE", saved, 1);
    free(saved);
}

/* Damages the file and checks that it is ignored with a warning, then rewritten. */
static void check_corrupt(const char *how, void (*damage)(const char *path)) {
    clear_cache();
    tile_tune_stats stats;
    FILE *log = fresh_log();
    tile_tune_options o = options(log, &stats);
    o.verbose = 0;   /* the warning is printed anyway */
    tile_kernel *best;
    tile_const bc[4];
    int nbc = 4;
    CHECK(tune_saxpy(100, &o, &best, bc, &nbc) == TILE_OK);
    char path[2048];
    CHECK(cache_files(path, sizeof path) == 1);
    damage(path);
    nbc = 4;
    CHECK(tune_saxpy(100, &o, &best, bc, &nbc) == TILE_OK);
    check_winner(best, bc, nbc);
    if (!stats.cache_corrupt) fprintf(stderr, "corruption '%s' was not detected\n", how);
    CHECK(stats.cache_corrupt && !stats.cache_hit && stats.ntimed == 6 && stats.cache_stored);
    char *text = read_log(log);
    CHECK_HAS(text, "warning: tune cache file");
    CHECK_HAS(text, "is corrupt");
    free(text);
    /* rewritten: the next call hits */
    nbc = 4;
    CHECK(tune_saxpy(100, &o, &best, bc, &nbc) == TILE_OK);
    CHECK(stats.cache_hit && !stats.cache_corrupt);
    fclose(log);
}

static void truncate_file(const char *path) {
    struct stat st;
    CHECK(stat(path, &st) == 0);
    CHECK(truncate(path, st.st_size / 2) == 0);
}

static void flip_digit(const char *path) {   /* a value changed: the checksum catches it */
    FILE *f = fopen(path, "r+b");
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf, f);
    char *c = strstr(buf, "const BLOCK i ");
    CHECK(c != NULL);
    if (c) {
        c += strlen("const BLOCK i ");
        *c = *c == '1' ? '3' : '1';
    }
    rewind(f);
    fwrite(buf, 1, n, f);
    fclose(f);
}

static void write_garbage(const char *path) {
    FILE *f = fopen(path, "wb");
    fputs("this is not a tune cache file\n", f);
    fclose(f);
}

static void test_unwritable_cache(void) {
    /* a directory below a regular file can never be created */
    char blocker[1300], bad_dir[1400];
    snprintf(blocker, sizeof blocker, "%s/not_a_dir", dir);
    FILE *f = fopen(blocker, "w");
    CHECK(f != NULL);
    if (f) fclose(f);
    snprintf(bad_dir, sizeof bad_dir, "%s/cache", blocker);
    tile_tune_stats stats;
    FILE *log = fresh_log();
    tile_tune_options o = options(log, &stats);
    o.cache_dir = bad_dir;
    tile_kernel *best;
    tile_const bc[4];
    int nbc = 4;
    CHECK(tune_saxpy(100, &o, &best, bc, &nbc) == TILE_OK);
    check_winner(best, bc, nbc);
    CHECK(stats.ntimed == 6 && !stats.cache_stored && !stats.cache_hit);
    char *text = read_log(log);
    CHECK_HAS(text, "not cached");
    free(text);
    /* caching off altogether */
    o.cache_dir = "off";
    nbc = 4;
    CHECK(tune_saxpy(100, &o, &best, bc, &nbc) == TILE_OK);
    CHECK(stats.ntimed == 6 && !stats.cache_stored && !stats.cache_hit);
    fclose(log);
}

static void test_fixed_and_defaults(void) {
    clear_cache();
    tile_tune_stats stats;
    FILE *log = fresh_log();
    tile_tune_options o = options(log, &stats);
    int n = 64;
    tile_arg args[4];
    saxpy_args(n, args);
    tile_kernel *best;
    tile_const bc[4];
    int nbc = 4;
    /* BLOCK held at 16 (an axis shrunk to one value): only num_warps varies */
    tile_const fixed[] = {{"BLOCK", 0, 16, 0}};
    CHECK(tile_tune(mod, "saxpy", fixed, 1, grid_of, &n, args, 4, &o, &best, bc, &nbc) == TILE_OK);
    CHECK(stats.npoints == 2 && stats.ntimed == 2);
    CHECK(nbc == 2 && find_const(bc, nbc, "BLOCK") == 16);
    /* a fixed value is part of the key: BLOCK=8 is not served from BLOCK=16's entry */
    fixed[0].i = 8;
    nbc = 4;
    CHECK(tile_tune(mod, "saxpy", fixed, 1, grid_of, &n, args, 4, &o, &best, bc, &nbc) == TILE_OK);
    CHECK(!stats.cache_hit && find_const(bc, nbc, "BLOCK") == 8);

    /* no tune block: one point, with the fixed hint added */
    int64_t shape[1] = {n};
    tile_arg one = tile_arg_array(tile_array_contiguous(outs, TILE_F32, 1, shape));
    tile_const hint[] = {{"num_warps", 0, 8, 0}};
    nbc = 4;
    CHECK(tile_tune(mod, "plain", hint, 1, grid_of, &n, &one, 1, &o, &best, bc, &nbc) == TILE_OK);
    CHECK(stats.npoints == 1 && stats.ntimed == 1);
    CHECK(nbc == 1 && find_const(bc, nbc, "num_warps") == 8);
    CHECK(best && ((const IrFunc *)tile_kernel_ir(best))->num_warps == 8);
    int bad = 0;
    for (int i = 0; i < n; i++) bad += outs[i] != 1.0f;
    CHECK(bad == 0);
    fclose(log);
}

static void test_space(void) {
    int npoints = 0, n = 4;
    tile_const c[4];
    CHECK(tile_tune_space(mod, "saxpy", NULL, 0, 0, &npoints, NULL, NULL) == TILE_OK);
    CHECK(npoints == 8);
    /* the first axis varies slowest: point 5 is (BLOCK 32, num_warps 4) */
    CHECK(tile_tune_space(mod, "saxpy", NULL, 0, 5, &npoints, c, &n) == TILE_OK);
    CHECK(n == 2 && strcmp(c[0].name, "BLOCK") == 0 && c[0].i == 32);
    CHECK(strcmp(c[1].name, "num_warps") == 0 && c[1].i == 4);
    tile_const warps[] = {{"num_warps", 0, 8, 0}};
    n = 4;
    CHECK(tile_tune_space(mod, "saxpy", warps, 1, 1, &npoints, c, &n) == TILE_OK);
    CHECK(npoints == 4 && n == 2 && c[0].i == 16 && c[1].i == 8);
    n = 4;
    CHECK(tile_tune_space(mod, "saxpy", NULL, 0, 8, &npoints, c, &n) == TILE_ERR_INVALID_ARG);
}

static void test_errors(void) {
    tile_tune_stats stats;
    FILE *log = fresh_log();
    tile_tune_options o = options(log, &stats);
    int n = 64;
    tile_arg args[4];
    saxpy_args(n, args);
    tile_kernel *best = (tile_kernel *)1;
    tile_const bc[4];
    int nbc = 4;

    /* every point fails: the message lists why */
    int64_t shape[1] = {n};
    tile_arg one = tile_arg_array(tile_array_contiguous(outs, TILE_F32, 1, shape));
    CHECK(tile_tune(mod, "broken", NULL, 0, grid_of, &n, &one, 1, &o, &best, bc, &nbc) == TILE_ERR_COMPILE);
    CHECK(best == NULL);
    CHECK_HAS(tile_ctx_last_error(ctx), "no point of the tune space of 'broken'");
    CHECK_HAS(tile_ctx_last_error(ctx), "B=2: compile: ");
    CHECK_HAS(tile_ctx_last_error(ctx), "B is too small");
    CHECK(stats.nskipped == 2 && stats.ntimed == 0);

    /* wrong arguments: every launch fails, reported per point */
    CHECK(tile_tune(mod, "saxpy", NULL, 0, grid_of, &n, args, 3, &o, &best, bc, &nbc) == TILE_ERR_COMPILE);
    CHECK_HAS(tile_ctx_last_error(ctx), "launch: kernel 'saxpy' takes 4 arguments");

    CHECK(tile_tune(mod, "nope", NULL, 0, grid_of, &n, args, 4, &o, &best, bc, &nbc) == TILE_ERR_NOT_FOUND);
    CHECK_HAS(tile_ctx_last_error(ctx), "no kernel named 'nope'");
    CHECK(tile_tune(mod, "saxpy", NULL, 0, NULL, &n, args, 4, &o, &best, bc, &nbc) == TILE_ERR_INVALID_ARG);
    CHECK_HAS(tile_ctx_last_error(ctx), "grid_fn is NULL");
    tile_const unknown[] = {{"WIDTH", 0, 4, 0}};
    CHECK(tile_tune(mod, "saxpy", unknown, 1, grid_of, &n, args, 4, &o, &best, bc, &nbc) == TILE_ERR_INVALID_ARG);
    CHECK_HAS(tile_ctx_last_error(ctx), "'WIDTH' is not a constant parameter of kernel 'saxpy'");
    nbc = 1;
    CHECK(tile_tune(mod, "saxpy", NULL, 0, grid_of, &n, args, 4, &o, &best, bc, &nbc) == TILE_ERR_INVALID_ARG);
    CHECK_HAS(tile_ctx_last_error(ctx), "best_consts holds 1 constants, 2 needed");
    o.repeat = 0;
    nbc = 4;
    CHECK(tile_tune(mod, "saxpy", NULL, 0, grid_of, &n, args, 4, &o, &best, bc, &nbc) == TILE_ERR_INVALID_ARG);
    CHECK(tile_tune(NULL, "saxpy", NULL, 0, grid_of, &n, args, 4, NULL, &best, NULL, NULL) == TILE_ERR_INVALID_ARG);
    fclose(log);
}

/* A tune value the autotuner cannot evaluate is reported at its location. */
static void test_unsupported_value(void) {
    tile_module *m = NULL;
    const char *src =
        "kernel k(out: f32[N], const B: i32) { store(out, index=(bid(0),), tile=ones((B,), f32)); }\n"
        "tune k { B in (16, max(8, 4)); }\n";
    if (tile_module_load_string(ctx, "odd.tile", src, &m) != TILE_OK) return;   /* rejected earlier: fine */
    int n = 16;
    int64_t shape[1] = {n};
    tile_arg one = tile_arg_array(tile_array_contiguous(outs, TILE_F32, 1, shape));
    tile_kernel *best;
    tile_tune_options o = tile_tune_default_options();
    o.cache_dir = "off";
    tile_status st = tile_tune(m, "k", NULL, 0, grid_of, &n, &one, 1, &o, &best, NULL, NULL);
    CHECK(st == TILE_ERR_COMPILE);
    CHECK_HAS(tile_ctx_last_error(ctx), "odd.tile:2:");
    CHECK_HAS(tile_ctx_last_error(ctx), "error: ");
    tile_module_release(m);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: tune_api SCRATCH_DIR\n");
        return 2;
    }
    snprintf(dir, sizeof dir, "%s", argv[1]);
    mkdir(dir, 0755);
    snprintf(cache_dir, sizeof cache_dir, "%s/cache", dir);
    snprintf(log_path, sizeof log_path, "%s/tune.log", dir);
    if (tile_ctx_create(&ctx, TILE_BACKEND_CPU, 0) != TILE_OK) {
        fprintf(stderr, "no CPU context: %s\n", tile_ctx_last_error(ctx));
        return 1;
    }
    if (tile_module_load_string(ctx, "tune_test.tile", program, &mod) != TILE_OK) {
        fprintf(stderr, "%s", tile_ctx_last_error(ctx));
        return 1;
    }
    test_search_and_cache();
    check_corrupt("truncated", truncate_file);
    check_corrupt("digit changed", flip_digit);
    check_corrupt("garbage", write_garbage);
    test_unwritable_cache();
    test_fixed_and_defaults();
    test_space();
    test_errors();
    test_unsupported_value();
    tile_ctx_destroy(ctx);
    if (check_failures) fprintf(stderr, "%d check(s) failed\n", check_failures);
    return check_failures != 0;
}
