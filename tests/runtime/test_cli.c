/* test_cli.c: the tilec command line end to end: `tilec run` on .npy files
 * written here, its argument errors and exit statuses, and the emit modes.
 * usage: test_cli PATH_TO_TILEC SCRATCH_DIR */
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
    "kernel bcopy(x: bf16[N], out: bf16[N]) {\n"
    "    store(out, index=(bid(0),), tile=load(x, index=(bid(0),), shape=(16,)));\n"
    "}\n";

static int exists(const char *name) {
    struct stat st;
    return stat(path_of(name), &st) == 0;
}

static void write_f32(const char *name, int rank, const int64_t *shape, const float *data) {
    char err[512];
    if (npy_write(path_of(name), TILE_F32, rank, shape, data, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
}

static void test_run_vadd(void) {
    enum { N = 40 };
    float x[N], y[N];
    for (int i = 0; i < N; i++) {
        x[i] = (float)i;
        y[i] = 0.5f * (float)i - 3.0f;
    }
    int64_t n = N, n_short = N - 1;
    write_f32("x.npy", 1, &n, x);
    write_f32("y.npy", 1, &n, y);
    write_f32("y39.npy", 1, &n_short, y);

    CHECK_RC(run_tilec("run prog.tile --kernel vadd --grid 3 x=x.npy y=y.npy 'out=out.npy:f32[40]'"), 0);
    NpyArray out;
    char err[512];
    int rc = npy_read(path_of("out.npy"), &out, err, sizeof err);
    CHECK(rc == 0);
    if (rc == 0) {
        CHECK(out.dtype == TILE_F32 && out.rank == 1 && out.shape[0] == N);
        int ok = 1;
        for (int i = 0; i < N; i++) ok &= ((float *)out.data)[i] == x[i] + y[i];
        CHECK(ok);
        npy_free(&out);
    }
    /* x and y are only read: they are not rewritten */
    NpyArray xa;
    CHECK(npy_read(path_of("x.npy"), &xa, err, sizeof err) == 0 && ((float *)xa.data)[5] == 5.0f);
    npy_free(&xa);

    /* argument errors: exit 2, nothing written */
    CHECK_RC(run_tilec("run prog.tile --kernel vadd --grid 3 x=x.npy y=y.npy"), 2);
    CHECK_HAS(err_text, "missing argument 'out'");
    CHECK_RC(run_tilec("run prog.tile --kernel vadd --grid 3 x=x.npy y=y.npy out=o2.npy:f32[40] z=1"), 2);
    CHECK_HAS(err_text, "argument 'z': kernel 'vadd' has no runtime parameter of that name");
    CHECK_RC(run_tilec("run prog.tile --kernel vadd --grid 3 x=x.npy x=y.npy y=y.npy out=o2.npy:f32[40]"), 2);
    CHECK_HAS(err_text, "argument 'x' given twice");
    CHECK_RC(run_tilec("run prog.tile --kernel vadd --grid 3 x=x.npy y=y39.npy out=o2.npy:f32[40]"), 2);
    CHECK_HAS(err_text, "extent mismatch: 'N' is 40 for x (axis 0) but 39 for y (axis 0)");
    CHECK(!exists("o2.npy"));
    CHECK_RC(run_tilec("run prog.tile --kernel vadd --grid 3 x=x.npy y=y.npy out=o2.npy:i32[40]"), 2);
    CHECK_HAS(err_text, "argument 'out': new array of dtype i32, but the parameter is f32");
    CHECK_RC(run_tilec("run prog.tile --kernel vadd --grid 3 x=x.npy y=y.npy out=o2.npy:f32[4,10]"), 2);
    CHECK_HAS(err_text, "new array of rank 2, but the parameter has rank 1");
    CHECK_RC(run_tilec("run prog.tile --kernel vadd --grid 3 x=x.npy y=y.npy out=o2.npy:f32[40"), 2);
    CHECK_HAS(err_text, "bad new-array spec");
    CHECK_RC(run_tilec("run prog.tile --kernel vadd --grid 3 x=nothere.npy y=y.npy out=o2.npy:f32[40]"), 2);
    CHECK_HAS(err_text, "nothere.npy: cannot open");
    CHECK_RC(run_tilec("run prog.tile --kernel vadd --grid 3 x=5 y=y.npy out=o2.npy:f32[40]"), 2);
    CHECK_HAS(err_text, "argument 'x' is an array");
    int32_t ints[40] = {0};
    CHECK(npy_write(path_of("xi.npy"), TILE_I32, 1, &n, ints, err, sizeof err) == 0);
    CHECK_RC(run_tilec("run prog.tile --kernel vadd --grid 3 x=xi.npy y=y.npy out=o2.npy:f32[40]"), 2);
    CHECK_HAS(err_text, "argument 'x': xi.npy has dtype i32, but the parameter is f32");
    int64_t shape_2d[2] = {4, 10};
    write_f32("x2d.npy", 2, shape_2d, x);
    CHECK_RC(run_tilec("run prog.tile --kernel vadd --grid 3 x=x2d.npy y=y.npy out=o2.npy:f32[40]"), 2);
    CHECK_HAS(err_text, "argument 'x': x2d.npy has rank 2, but the parameter has rank 1");
    CHECK_RC(run_tilec("run prog.tile --kernel vadd --grid 0 x=x.npy y=y.npy out=o2.npy:f32[40]"), 2);
    CHECK_HAS(err_text, "--grid 0");
    CHECK_RC(run_tilec("run prog.tile --kernel vadd --grid 1,70000 x=x.npy y=y.npy out=o2.npy:f32[40]"), 2);
    CHECK_HAS(err_text, "too large");
    CHECK_RC(run_tilec("run prog.tile --kernel nope --grid 1 x=x.npy"), 2);
    CHECK_HAS(err_text, "no kernel named 'nope'");
    CHECK_RC(run_tilec("run prog.tile --grid 1 x=x.npy"), 2);
    CHECK_HAS(err_text, "--kernel NAME is required");
    CHECK_RC(run_tilec("run prog.tile --kernel vadd --grid 3 --backend tpu x=x.npy"), 2);
    CHECK_HAS(err_text, "unknown backend 'tpu'");
    CHECK(!exists("o2.npy"));

    /* the CUDA backend: either it runs, or the error says why */
    int cuda = run_tilec("run prog.tile --kernel vadd --grid 3 --backend cuda x=x.npy y=y.npy out=oc.npy:f32[40]");
    if (cuda != 0) {
        CHECK_RC(cuda, 2);
        CHECK_HAS(err_text, "CUDA backend");
        CHECK(!exists("oc.npy"));
    }
}

static void test_run_scalars_and_bf16(void) {
    float x[8][8];
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++) x[i][j] = (float)(i - j);
    int64_t shape[2] = {8, 8};
    write_f32("m.npy", 2, shape, &x[0][0]);
    CHECK_RC(run_tilec("run prog.tile --kernel scale --grid 2,2 -D BM=4 x=m.npy s=-1.5 'out=ms.npy:f32[8,8]'"), 0);
    NpyArray out;
    char err[512];
    if (npy_read(path_of("ms.npy"), &out, err, sizeof err) == 0) {
        CHECK(((float *)out.data)[8 * 3 + 5] == -1.5f * x[3][5]);
        npy_free(&out);
    } else {
        CHECK_HAS(err, "(no error expected)");
    }
    CHECK_RC(run_tilec("run prog.tile --kernel scale --grid 2,2 -D BM=4 x=m.npy s=abc 'out=ms.npy:f32[8,8]'"), 2);
    CHECK_HAS(err_text, "argument 's' is f32: 'abc' is not a number");
    /* a constant with no default and no -D is named */
    CHECK_RC(run_tilec("run prog.tile --kernel scale --grid 2,2 x=m.npy s=1 'out=ms.npy:f32[8,8]'"), 1);
    CHECK_HAS(err_text, "BM");

    /* bf16: float32 data rounded to nearest even on the way in, saved as float32 */
    float b[16];
    for (int i = 0; i < 16; i++) b[i] = 1.0f + (float)i / 256.0f;   /* 1 + i * 2^-8 */
    int64_t n = 16;
    write_f32("b.npy", 1, &n, b);
    CHECK_RC(run_tilec("run prog.tile --kernel bcopy --grid 1 x=b.npy 'out=bo.npy:bf16[16]'"), 0);
    if (npy_read(path_of("bo.npy"), &out, err, sizeof err) == 0) {
        CHECK(out.dtype == TILE_F32 && out.numel == 16);
        float *o = out.data;
        CHECK(o[0] == 1.0f);
        CHECK(o[1] == 1.0f);          /* 1 + 2^-8: a tie, rounds to the even 1.0 */
        CHECK(o[2] == 1.0078125f);    /* exact */
        CHECK(o[3] == 1.015625f);     /* 1 + 3 * 2^-8: a tie, rounds to the even 1 + 2^-6 */
        npy_free(&out);
    } else {
        CHECK_HAS(err, "(no error expected)");
    }
    int16_t h[16] = {0};
    CHECK(npy_write(path_of("h.npy"), TILE_I16, 1, &n, h, err, sizeof err) == 0);
    CHECK_RC(run_tilec("run prog.tile --kernel bcopy --grid 1 x=h.npy 'out=bo.npy:bf16[16]'"), 2);
    CHECK_HAS(err_text, "h.npy has dtype i16, but the parameter is bf16 (give float32 or float64 data)");
}

static void test_emit(void) {
    CHECK_RC(run_tilec("--version"), 0);
    CHECK_HAS(out_text, "tilec ");
    CHECK_RC(run_tilec("--help"), 0);
    CHECK_HAS(out_text, "tilec run FILE");
    CHECK_RC(run_tilec("--frobnicate prog.tile"), 2);
    CHECK_HAS(err_text, "unknown option '--frobnicate'");
    CHECK_RC(run_tilec("%s", ""), 2);
    CHECK_HAS(err_text, "no input file");
    CHECK_RC(run_tilec("prog.tile"), 0);   /* check only */
    CHECK_RC(run_tilec("prog.tile --emit=ast"), 0);
    CHECK_HAS(out_text, "vadd");
    CHECK_RC(run_tilec("prog.tile --emit=ast --kernel scale"), 0);
    CHECK_HAS(out_text, "(kernel scale");
    CHECK(strstr(out_text, "(kernel vadd") == NULL);
    CHECK_RC(run_tilec("prog.tile --emit=ast --kernel nope"), 2);
    CHECK_HAS(err_text, "no kernel named 'nope'");
    CHECK_RC(run_tilec("prog.tile --emit=ir --kernel vadd"), 0);
    CHECK_HAS(out_text, "kernel vadd");
    CHECK_RC(run_tilec("prog.tile --emit=ir -D BM=4 -o ir.txt"), 0);
    char ir[65536];
    slurp(path_of("ir.txt"), ir, sizeof ir);
    CHECK_HAS(ir, "kernel scale");
    CHECK_HAS(ir, "kernel bcopy");
    CHECK_RC(run_tilec("prog.tile --emit=ir --kernel scale"), 1);
    CHECK_HAS(err_text, "BM");
    /* a failed compile leaves -o OUT as it was: not truncated, not half-written */
    CHECK_RC(run_tilec("prog.tile --emit=ir --kernel scale -o ir.txt"), 1);
    slurp(path_of("ir.txt"), ir, sizeof ir);
    CHECK_HAS(ir, "kernel bcopy");
    CHECK_RC(run_tilec("prog.tile --emit=ir --kernel scale -o ir_new.txt"), 1);
    CHECK(!exists("ir_new.txt"));
    CHECK_RC(run_tilec("prog.tile --emit=ir -D NOPE=3"), 2);
    CHECK_HAS(err_text, "-D NOPE: no kernel has a constant parameter of that name");
    CHECK_RC(run_tilec("prog.tile --emit=ir --kernel vadd --dump-after=all"), 0);
    CHECK_HAS(out_text, "// after ");
    CHECK_RC(run_tilec("prog.tile --emit=ir --dump-after=nosuchpass"), 2);
    CHECK_HAS(err_text, "unknown pass 'nosuchpass'");
    CHECK_RC(run_tilec("prog.tile --emit=bogus"), 2);
    CHECK_HAS(err_text, "unknown --emit mode 'bogus'");
    CHECK_RC(run_tilec("missing.tile --emit=ast"), 2);
    CHECK_HAS(err_text, "missing.tile: cannot open");

    FILE *f = fopen(path_of("bad.tile"), "w");
    if (f) {
        fputs("kernel k(x: f32[N]) {\n    let a = ;\n}\n", f);
        fclose(f);
    }
    CHECK_RC(run_tilec("bad.tile --emit=ast"), 1);
    CHECK_HAS(err_text, "bad.tile:2:");
    CHECK_HAS(err_text, "error:");
    CHECK_RC(run_tilec("run bad.tile --kernel k --grid 1"), 1);
    CHECK_HAS(err_text, "bad.tile:2:");
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: test_cli PATH_TO_TILEC SCRATCH_DIR\n");
        return 2;
    }
    tilec = argv[1];
    snprintf(dir, sizeof dir, "%s", argv[2]);
    mkdir(dir, 0755);
    FILE *f = fopen(path_of("prog.tile"), "w");
    if (!f) {
        perror("prog.tile");
        return 1;
    }
    fputs(program, f);
    fclose(f);
    test_run_vadd();
    test_run_scalars_and_bf16();
    test_emit();
    if (check_failures) fprintf(stderr, "%d check(s) failed\n", check_failures);
    return check_failures != 0;
}
