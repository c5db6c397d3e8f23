/* rel_inputs.c: input folders at the numeric extremes for the mamba2 driver
 * (`mamba2 --inputs DIR`), and two checks on its .npy outputs.
 *
 *   rel_inputs extreme DIR --batch B --seqlen L --heads H --headdim P --dstate N
 *              [--groups G] [--seed S] [--A a0,a1,...]
 *       x.npy dt.npy A.npy B.npy C.npy D.npy z.npy initial_states.npy, float32:
 *       δ = softplus(dt) spans 1e-3..10 (10% of the tokens exactly at 10),
 *       A spans -100..-0.01 over the heads (or the --A list, which may hold
 *       values > 0 to test the clamp), |x| up to 1e4 (5% at +-1e4), B, C, z,
 *       D ~ N(0, 1), the initial state ~ N(0, 1).
 *   rel_inputs finite FILE.npy...      every value finite (prints the largest |v|)
 *   rel_inputs compare GOT.npy WANT.npy TOL
 *       same shape and relative L2 of GOT - WANT at most TOL
 *
 * Exit status: 0 ok, 1 a failed check, 2 bad usage or I/O. */
enum { EXIT_USAGE = 2, EXIT_IO = 3 };   /* EXIT_IO is reported as 2, without the usage text */
#include "npy.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct Rng { uint64_t s; } Rng;

static uint64_t rng_next(Rng *r) {   /* splitmix64 */
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double rng_uniform(Rng *r) { return ((double)(rng_next(r) >> 11) + 0.5) * 0x1p-53; }
static double rng_normal(Rng *r) {
    return sqrt(-2.0 * log(rng_uniform(r))) * cos(6.283185307179586 * rng_uniform(r));
}
/* The raw dt whose softplus is v (the driver's kernels apply softplus to dt). */
static double inverse_softplus(double v) { return v > 20.0 ? v : log(expm1(v)); }

static int write_npy(const char *dir, const char *name, int rank, const int64_t *shape, const float *data) {
    char path[4096], err[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (npy_write(path, TILE_F32, rank, shape, data, err, sizeof err) == 0) return 0;
    fprintf(stderr, "rel_inputs: %s\n", err);
    return -1;
}

static float *floats(size_t n) {
    float *p = malloc((n ? n : 1) * sizeof(float));
    if (!p) {
        fprintf(stderr, "rel_inputs: out of memory for %zu floats\n", n);
        exit(EXIT_USAGE);
    }
    return p;
}

static int parse_a_list(const char *text, float *A, int heads) {
    int n = 0;
    const char *p = text;
    while (*p && n < heads) {
        char *end;
        A[n++] = strtof(p, &end);
        if (end == p) break;
        p = *end == ',' ? end + 1 : end;
    }
    if (n != heads) {
        fprintf(stderr, "rel_inputs: --A lists %d values, %d heads\n", n, heads);
        return -1;
    }
    return 0;
}

static int cmd_extreme(int argc, char **argv) {
    if (argc < 3) return 2;
    const char *dir = argv[2], *a_list = NULL;
    long batch = 1, seqlen = 256, heads = 4, headdim = 32, dstate = 16, groups = 1, seed = 1;
    for (int i = 3; i + 1 < argc; i += 2) {
        const char *f = argv[i], *v = argv[i + 1];
        if (!strcmp(f, "--batch")) batch = atol(v);
        else if (!strcmp(f, "--seqlen")) seqlen = atol(v);
        else if (!strcmp(f, "--heads")) heads = atol(v);
        else if (!strcmp(f, "--headdim")) headdim = atol(v);
        else if (!strcmp(f, "--dstate")) dstate = atol(v);
        else if (!strcmp(f, "--groups")) groups = atol(v);
        else if (!strcmp(f, "--seed")) seed = atol(v);
        else if (!strcmp(f, "--A")) a_list = v;
        else { fprintf(stderr, "rel_inputs: unknown option %s\n", f); return 2; }
    }
    if (batch < 1 || seqlen < 1 || heads < 1 || headdim < 1 || dstate < 1 || groups < 1 || heads % groups) {
        fprintf(stderr, "rel_inputs: bad shape\n");
        return 2;
    }
    if (mkdir(dir, 0777) != 0 && access(dir, W_OK) != 0) {
        fprintf(stderr, "rel_inputs: cannot create %s\n", dir);
        return EXIT_IO;
    }
    Rng r = {(uint64_t)seed * 0x2545f4914f6cdd1dull + 7};
    const size_t ntok = (size_t)batch * seqlen * heads, nx = ntok * headdim;
    const size_t nbc = (size_t)batch * seqlen * groups * dstate, nstate = (size_t)batch * heads * headdim * dstate;

    float *A = floats(heads);
    if (a_list) {
        if (parse_a_list(a_list, A, (int)heads)) return 2;
    } else {
        /* -100 on head 0 down to -0.01 on the last, log-spaced. */
        for (long h = 0; h < heads; h++)
            A[h] = heads == 1 ? -100.0f : (float)(-100.0 * pow(1e-4, (double)h / (double)(heads - 1)));
    }
    float *dt = floats(ntok);
    for (size_t i = 0; i < ntok; i++) {
        const double u = rng_uniform(&r);
        double delta;
        if (u < 0.1) delta = 10.0;                                      /* the ceiling of the issue */
        else if (u < 0.5) delta = exp(log(1e-3) + rng_uniform(&r) * log(1e4));   /* log-uniform 1e-3..10 */
        else delta = 1e-3 + 0.5 * rng_uniform(&r);
        dt[i] = (float)inverse_softplus(delta);
    }
    float *x = floats(nx), *z = floats(nx);
    for (size_t i = 0; i < nx; i++) {
        const double u = rng_uniform(&r);
        double v = u < 0.05 ? (rng_uniform(&r) < 0.5 ? -1e4 : 1e4)
                            : rng_normal(&r) * pow(10.0, 4.0 * rng_uniform(&r));
        x[i] = (float)fmax(-1e4, fmin(1e4, v));
        z[i] = (float)rng_normal(&r);
    }
    float *B = floats(nbc), *C = floats(nbc);
    for (size_t i = 0; i < nbc; i++) B[i] = (float)rng_normal(&r);
    for (size_t i = 0; i < nbc; i++) C[i] = (float)rng_normal(&r);
    float *D = floats(heads), *init = floats(nstate);
    for (long h = 0; h < heads; h++) D[h] = (float)rng_normal(&r);
    for (size_t i = 0; i < nstate; i++) init[i] = (float)rng_normal(&r);

    const int64_t sx[4] = {batch, seqlen, heads, headdim}, sbc[4] = {batch, seqlen, groups, dstate};
    const int64_t sstate[4] = {batch, heads, headdim, dstate}, sh[1] = {heads};
    int rc = write_npy(dir, "x.npy", 4, sx, x) || write_npy(dir, "dt.npy", 3, sx, dt) ||
             write_npy(dir, "A.npy", 1, sh, A) || write_npy(dir, "B.npy", 4, sbc, B) ||
             write_npy(dir, "C.npy", 4, sbc, C) || write_npy(dir, "D.npy", 1, sh, D) ||
             write_npy(dir, "z.npy", 4, sx, z) || write_npy(dir, "initial_states.npy", 4, sstate, init);
    free(A); free(dt); free(x); free(z); free(B); free(C); free(D); free(init);
    if (rc) return EXIT_IO;
    printf("rel_inputs: wrote %s: (%ld, %ld, %ld, %ld) x, dstate %ld, groups %ld\n", dir, batch, seqlen, heads,
           headdim, dstate, groups);
    return 0;
}

static int read_f32(const char *path, NpyArray *a) {
    char err[512];
    if (npy_read(path, a, err, sizeof err) != 0) {
        fprintf(stderr, "rel_inputs: %s\n", err);
        return -1;
    }
    if (a->dtype != TILE_F32) {
        fprintf(stderr, "rel_inputs: %s: dtype %s, expected float32\n", path, tile_dtype_name(a->dtype));
        npy_free(a);
        return -1;
    }
    return 0;
}

static int cmd_finite(int argc, char **argv) {
    int bad_files = 0;
    for (int i = 2; i < argc; i++) {
        NpyArray a;
        if (read_f32(argv[i], &a)) return EXIT_IO;
        const float *v = a.data;
        int64_t bad = 0;
        double max_abs = 0;
        for (int64_t k = 0; k < a.numel; k++) {
            if (!isfinite(v[k])) bad++;
            else if (fabs(v[k]) > max_abs) max_abs = fabs(v[k]);
        }
        printf("%s: %lld values, %lld not finite, largest |v| %.4g\n", argv[i], (long long)a.numel,
               (long long)bad, max_abs);
        bad_files += bad != 0;
        npy_free(&a);
    }
    return bad_files ? 1 : 0;
}

static int cmd_compare(int argc, char **argv) {
    if (argc != 5) return 2;
    const double tol = atof(argv[4]);
    NpyArray got, want;
    if (read_f32(argv[2], &got)) return EXIT_IO;
    if (read_f32(argv[3], &want)) { npy_free(&got); return EXIT_IO; }
    int rc = 0;
    if (got.rank != want.rank || got.numel != want.numel ||
        memcmp(got.shape, want.shape, sizeof got.shape[0] * (size_t)got.rank) != 0) {
        fprintf(stderr, "rel_inputs: %s and %s differ in shape\n", argv[2], argv[3]);
        rc = 1;
    } else {
        const float *g = got.data, *w = want.data;
        double diff2 = 0, ref2 = 0;
        for (int64_t k = 0; k < got.numel; k++) {
            const double d = (double)g[k] - w[k];
            diff2 += d * d;
            ref2 += (double)w[k] * w[k];
        }
        const double rel = ref2 > 0 ? sqrt(diff2 / ref2) : sqrt(diff2);
        printf("%s vs %s: relative L2 %.3e (tolerance %.1e)\n", argv[2], argv[3], rel, tol);
        if (!(rel <= tol)) rc = 1;
    }
    npy_free(&got);
    npy_free(&want);
    return rc;
}

int main(int argc, char **argv) {
    int rc = 2;
    if (argc >= 2 && !strcmp(argv[1], "extreme")) rc = cmd_extreme(argc, argv);
    else if (argc >= 2 && !strcmp(argv[1], "finite")) rc = cmd_finite(argc, argv);
    else if (argc >= 2 && !strcmp(argv[1], "compare")) rc = cmd_compare(argc, argv);
    if (rc == EXIT_IO) return 2;
    if (rc == EXIT_USAGE)
        fprintf(stderr, "usage: rel_inputs extreme DIR [--batch B --seqlen L --heads H --headdim P --dstate N"
                        " --groups G --seed S --A a,b,..]\n"
                        "       rel_inputs finite FILE.npy...\n"
                        "       rel_inputs compare GOT.npy WANT.npy TOL\n");
    return rc;
}
