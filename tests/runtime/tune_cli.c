/* tune_cli.c: `tilec run --tune` end to end on the CPU backend: the table of
 * points on stderr, the winner run on the inputs given (an in-place kernel is
 * not run twice over), the cached winner on a second run, and --grid
 * expressions (cdiv, constants, array extents) with and without --tune.
 * usage: tune_cli PATH_TO_TILEC SCRATCH_DIR */
#include "check.h"
#include "cli_run.h"
#include "npy.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *program =
    "kernel saxpy(x: f32[N], y: f32[N], out: f32[N], a: f32, const BLOCK: i32) {\n"
    "    static_assert(BLOCK <= 32, \"BLOCK must be at most 32\");\n"
    "    let i = bid(0);\n"
    "    let tx = load(x, index=(i,), shape=(BLOCK,));\n"
    "    let ty = load(y, index=(i,), shape=(BLOCK,));\n"
    "    store(out, index=(i,), tile=tx * a + ty);\n"
    "}\n"
    "tune saxpy { BLOCK in (64, 8, 16, 32); num_warps in (2, 4); }\n"
    "\n"
    "kernel bump(x: f32[N], const BLOCK: i32 = 8) {\n"
    "    let t = load(x, index=(bid(0),), shape=(BLOCK,));\n"
    "    store(x, index=(bid(0),), tile=t + 1.0);\n"
    "}\n"
    "tune bump { BLOCK in (8, 16); }\n";

enum { N = 100 };

static void write_f32(const char *name, const float *data) {
    char err[512];
    int64_t n = N;
    if (npy_write(path_of(name), TILE_F32, 1, &n, data, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
}

/* Checks that `name` holds f(i) at every i. */
static void check_f32(const char *name, float (*f)(int)) {
    NpyArray a;
    char err[512];
    if (npy_read(path_of(name), &a, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        check_failures++;
        return;
    }
    CHECK(a.dtype == TILE_F32 && a.numel == N);
    int bad = 0;
    for (int i = 0; i < N && a.numel == N; i++) bad += ((float *)a.data)[i] != f(i);
    CHECK(bad == 0);
    npy_free(&a);
}

static float saxpy_want(int i) { return 2.0f * (float)i + 1.0f; }
static float bump_want(int i) { return (float)i + 1.0f; }

static void write_inputs(void) {
    float x[N], y[N];
    for (int i = 0; i < N; i++) {
        x[i] = (float)i;
        y[i] = 1.0f;
    }
    write_f32("x.npy", x);
    write_f32("y.npy", y);
}

static void test_tune_run(void) {
    write_inputs();
    const char *saxpy = "run k.tile --kernel saxpy --tune --grid 'cdiv(N, BLOCK)' x=x.npy y=y.npy "
                        "'out=out.npy:f32[100]' a=2";
    CHECK_RC(run_tilec("%s", saxpy), 0);
    CHECK_HAS(err_text, "8 points");
    CHECK_HAS(err_text, "BLOCK=8 num_warps=4");
    CHECK_HAS(err_text, "BLOCK=64 num_warps=2");
    CHECK_HAS(err_text, "skipped (compile: k.tile:2:5: error: static assertion failed");
    CHECK_HAS(err_text, "tilec: tuned saxpy: -D BLOCK=");
    check_f32("out.npy", saxpy_want);

    /* again: the cached winner, no table */
    CHECK_RC(run_tilec("%s", saxpy), 0);
    CHECK_HAS(err_text, "cached winner");
    CHECK(!strstr(err_text, "skipped"));
    check_f32("out.npy", saxpy_want);

    /* -D holds an axis */
    CHECK_RC(run_tilec("run k.tile --kernel saxpy --tune -D BLOCK=16 --grid 'cdiv(N, BLOCK)' x=x.npy y=y.npy "
                       "'out=out2.npy:f32[100]' a=2"), 0);
    CHECK_HAS(err_text, "2 points");
    CHECK_HAS(err_text, "tilec: tuned saxpy: -D BLOCK=16 -D num_warps=");
    check_f32("out2.npy", saxpy_want);

    /* in place: the timing runs bump x many times, the run proper once */
    CHECK_RC(run_tilec("run k.tile --kernel bump --tune --grid 'cdiv(N, BLOCK)' x=x.npy"), 0);
    CHECK_HAS(err_text, "tilec: tuned bump: -D BLOCK=");
    check_f32("x.npy", bump_want);
}

static void test_grid_expressions(void) {
    write_inputs();
    /* constants from -D and defaults, extents, arithmetic */
    CHECK_RC(run_tilec("run k.tile --kernel saxpy -D BLOCK=16 --grid '(N + BLOCK - 1) / BLOCK, 1, 1' x=x.npy "
                       "y=y.npy 'out=o3.npy:f32[100]' a=2"), 0);
    check_f32("o3.npy", saxpy_want);
    CHECK_RC(run_tilec("run k.tile --kernel bump --grid 'cdiv(N, BLOCK)' x=x.npy"), 0);   /* BLOCK = 8 (default) */
    check_f32("x.npy", bump_want);

    CHECK_RC(run_tilec("run k.tile --kernel bump --grid 'cdiv(N, WIDTH)' x=x.npy"), 2);
    CHECK_HAS(err_text, "unknown name 'WIDTH'");
    CHECK_RC(run_tilec("run k.tile --kernel bump --grid 'cdiv(N, 0)' x=x.npy"), 2);
    CHECK_HAS(err_text, "cdiv by 0");
    CHECK_RC(run_tilec("run k.tile --kernel bump --grid 'N - N' x=x.npy"), 2);
    CHECK_HAS(err_text, "entry 0 is 0");
    CHECK_RC(run_tilec("run k.tile --kernel bump --grid 'N,1,1,1' x=x.npy"), 2);
    CHECK_HAS(err_text, "expected 1 to 3 entries");
    CHECK_RC(run_tilec("run k.tile --kernel bump --grid '(N' x=x.npy"), 2);
    CHECK_HAS(err_text, "')' expected");
    CHECK_RC(run_tilec("k.tile --tune"), 2);
    CHECK_HAS(err_text, "belong to 'tilec run'");
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: tune_cli PATH_TO_TILEC SCRATCH_DIR\n");
        return 2;
    }
    tilec = argv[1];
    snprintf(dir, sizeof dir, "%s", argv[2]);
    mkdir(dir, 0755);
    char cache[1200];
    snprintf(cache, sizeof cache, "%s/cache", dir);
    char rm[1400];
    snprintf(rm, sizeof rm, "rm -rf '%s'", cache);   /* a fresh cache each run */
    if (system(rm) != 0) return 1;
    setenv("TILE_CACHE_DIR", cache, 1);
    FILE *f = fopen(path_of("k.tile"), "w");
    if (!f) {
        perror("k.tile");
        return 1;
    }
    fputs(program, f);
    fclose(f);
    test_tune_run();
    test_grid_expressions();
    if (check_failures) fprintf(stderr, "%d check(s) failed\n", check_failures);
    return check_failures != 0;
}
