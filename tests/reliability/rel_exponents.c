/* rel_exponents.c: every exponent the Mamba-2 kernels form stays <= 0 at the
 * numeric extremes.  Runs kernel 1 (examples/mamba2/chunk_cumsum.tile, with
 * softplus) on δ = softplus(dt) up to 10 and A down to -100, then checks the
 * values the later kernels exponentiate:
 *   exp2(cs_m)            the carried state (compute_out)        cs_m <= 0
 *   exp2(cs_m - cs_k)     k <= m inside a chunk (compute_out)    cs non-increasing
 *   exp2(total - cs_t)    each token to the chunk's end (fwd_pass_state)
 * -- all three hold iff, inside each chunk, cs starts <= 0 and never rises --
 * and that δ and cs are finite and match a float64 computation.  The kernels
 * also clamp each exponent at 0; this checks that the clamp has nothing to do
 * on valid input (on the GPU, where scans may sum in another order, a rise of
 * a few ulps is reported and tolerated).
 *
 *   rel_exponents TILE_DIR [--backend cpu|cuda] [--batch B] [--seqlen L] [--heads H] [--chunk Q]
 * Exit status: 0 ok, 1 a failed check, 77 no such backend here. */
#include "rel_common.h"

#include <math.h>
#include <stdint.h>

static const double LOG2E = 1.4426950408889634;

typedef struct Rng { uint64_t s; } Rng;
static uint64_t rng_next(Rng *r) {   /* splitmix64 */
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double rng_uniform(Rng *r) { return ((double)(rng_next(r) >> 11) + 0.5) * 0x1p-53; }

static double softplus(double v) { return v > 20.0 ? v : log1p(exp(v)); }

typedef struct Shape { int batch, seqlen, heads, chunk; } Shape;

/* Runs chunk_cumsum; fills delta and cs, both (batch, heads, seqlen). */
static int run_kernel(tile_ctx *ctx, const char *tile_dir, const Shape *s, const float *A, const float *dt,
                      float *delta, float *cs) {
    char path[4096];
    snprintf(path, sizeof path, "%s/chunk_cumsum.tile", tile_dir);
    tile_module *mod = NULL;
    tile_kernel *k = NULL;
    REL_TRY(ctx, tile_module_load_file(ctx, path, &mod));
    const tile_const consts[] = {{"CHUNK", 0, s->chunk, 0}, {"BLOCK_H", 0, 16, 0}, {"SOFTPLUS", 0, 1, 0}};
    REL_TRY(ctx, tile_kernel_get(mod, "chunk_cumsum", consts, 3, &k));

    const size_t ntok = (size_t)s->batch * s->seqlen * s->heads;
    void *dA = NULL, *ddt = NULL, *dbias = NULL, *dout = NULL, *dcs = NULL, *dlo = NULL;
    REL_TRY(ctx, tile_malloc(ctx, (size_t)s->heads * 4, &dA));
    REL_TRY(ctx, tile_malloc(ctx, ntok * 4, &ddt));
    REL_TRY(ctx, tile_malloc(ctx, (size_t)s->heads * 4, &dbias));
    REL_TRY(ctx, tile_malloc(ctx, ntok * 4, &dout));
    REL_TRY(ctx, tile_malloc(ctx, ntok * 4, &dcs));
    REL_TRY(ctx, tile_malloc(ctx, 16, &dlo));   /* the low parts: not written (EXACT = 0) */
    REL_TRY(ctx, tile_memcpy_h2d(ctx, dA, A, (size_t)s->heads * 4));
    REL_TRY(ctx, tile_memcpy_h2d(ctx, ddt, dt, ntok * 4));
    REL_TRY(ctx, tile_memset(ctx, dbias, 0, (size_t)s->heads * 4));

    const int64_t sh[1] = {s->heads}, sdt[3] = {s->batch, s->seqlen, s->heads}, sout[3] = {s->batch, s->heads, s->seqlen};
    const int64_t one[3] = {1, 1, 1};
    tile_arg args[8] = {
        tile_arg_array(tile_array_contiguous(dA, TILE_F32, 1, sh)),
        tile_arg_array(tile_array_contiguous(ddt, TILE_F32, 3, sdt)),
        tile_arg_array(tile_array_contiguous(dbias, TILE_F32, 1, sh)),
        tile_arg_array(tile_array_contiguous(dout, TILE_F32, 3, sout)),
        tile_arg_array(tile_array_contiguous(dcs, TILE_F32, 3, sout)),
        tile_arg_array(tile_array_contiguous(dlo, TILE_F32, 3, one)),
        tile_arg_f32(-INFINITY), tile_arg_f32(INFINITY)};
    const int grid[3] = {(s->seqlen + s->chunk - 1) / s->chunk, (s->heads + 15) / 16, s->batch};
    REL_TRY(ctx, tile_launch(k, grid, args, 8, NULL));
    REL_TRY(ctx, tile_synchronize(ctx));
    REL_TRY(ctx, tile_memcpy_d2h(ctx, delta, dout, ntok * 4));
    REL_TRY(ctx, tile_memcpy_d2h(ctx, cs, dcs, ntok * 4));
    tile_free(ctx, dA); tile_free(ctx, ddt); tile_free(ctx, dbias); tile_free(ctx, dout); tile_free(ctx, dcs); tile_free(ctx, dlo);
    tile_module_release(mod);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: rel_exponents TILE_DIR [--backend cpu|cuda] [--batch B] [--seqlen L] [--heads H] [--chunk Q]\n");
        return 2;
    }
    const tile_backend_kind kind = rel_backend_arg(argc, argv);
    Shape s = {atoi(rel_flag(argc, argv, "--batch", "2")), atoi(rel_flag(argc, argv, "--seqlen", "1000")),
               atoi(rel_flag(argc, argv, "--heads", "20")), atoi(rel_flag(argc, argv, "--chunk", "256"))};
    if (s.batch < 1 || s.seqlen < 1 || s.heads < 1 || s.chunk < 16) {
        fprintf(stderr, "rel_exponents: bad shape\n");
        return 2;
    }
    tile_ctx *ctx = rel_ctx_or_skip(kind, "rel_exponents");

    /* A from -100 (head 0) to -0.01 (the last head); δ = softplus(dt) with 10%
     * of the tokens at 10 and the rest log-uniform down to 1e-3. */
    const size_t ntok = (size_t)s.batch * s.seqlen * s.heads;
    float *A = malloc((size_t)s.heads * 4), *dt = malloc(ntok * 4), *delta = malloc(ntok * 4), *cs = malloc(ntok * 4);
    if (!A || !dt || !delta || !cs) { fprintf(stderr, "rel_exponents: out of memory\n"); return 1; }
    for (int h = 0; h < s.heads; h++)
        A[h] = s.heads == 1 ? -100.0f : (float)(-100.0 * pow(1e-4, (double)h / (s.heads - 1)));
    Rng r = {12345};
    for (size_t i = 0; i < ntok; i++) {
        const double want = rng_uniform(&r) < 0.1 ? 10.0 : exp(log(1e-3) + rng_uniform(&r) * log(1e4));
        dt[i] = (float)log(expm1(want));   /* softplus(dt) = want */
    }
    if (run_kernel(ctx, argv[1], &s, A, dt, delta, cs) != 0) {
        tile_ctx_destroy(ctx);
        return 1;
    }

    /* Walk each (batch, head, chunk) in token order. */
    const double rise_tol_ulps = kind == TILE_BACKEND_CUDA ? 4.0 : 0.0;
    double worst_rise = 0, worst_delta_err = 0, worst_cs_err = 0, most_negative = 0, max_delta = 0;
    long long exponents = 0, bad_delta = 0, bad_cs = 0, rises = 0;
    for (int b = 0; b < s.batch; b++)
        for (int h = 0; h < s.heads; h++) {
            const size_t row = ((size_t)b * s.heads + h) * s.seqlen;
            for (int c0 = 0; c0 < s.seqlen; c0 += s.chunk) {
                const int c1 = c0 + s.chunk < s.seqlen ? c0 + s.chunk : s.seqlen;
                double ref = 0, abs_sum = 0, running_min = 0;   /* cs before the chunk's first token is 0 */
                for (int t = c0; t < c1; t++) {
                    const float dv = delta[row + t], cv = cs[row + t];
                    const double dref = softplus((double)dt[((size_t)b * s.seqlen + t) * s.heads + h]);
                    const double derr = fabs(dv - dref) / fmax(dref, 1e-30);
                    if (!isfinite(dv) || dv < 0 || derr > 1e-5) {
                        if (bad_delta++ < 5) fprintf(stderr, "  δ[b %d, h %d, t %d] = %.9g, float64 %.9g\n", b, h, t, dv, dref);
                    }
                    if (derr > worst_delta_err) worst_delta_err = derr;
                    if (dv > max_delta) max_delta = dv;
                    /* The reference sums the kernel's own δ, as f32 products, in float64. */
                    const double term = (double)(float)(dv * A[h] * (float)LOG2E);
                    ref += term;
                    abs_sum += fabs(term);
                    const double cerr = fabs(cv - ref);
                    if (!isfinite(cv) || cerr > (double)s.chunk * 0x1p-24 * abs_sum + 1e-30) {
                        if (bad_cs++ < 5) fprintf(stderr, "  cs[b %d, h %d, t %d] = %.9g, float64 %.9g\n", b, h, t, cv, ref);
                    }
                    if (abs_sum > 0 && cerr / abs_sum > worst_cs_err) worst_cs_err = cerr / abs_sum;
                    if (cv < most_negative) most_negative = cv;
                    /* The largest exponent ending at t: cs_t - min over k <= t (and 0,
                     * which stands for cs_t itself and, at the chunk's end, total - cs_t). */
                    const double rise = (double)cv - running_min;
                    exponents += t - c0 + 3;   /* cs_t - cs_k for k <= t, cs_t, total - cs_t */
                    if (rise > worst_rise) worst_rise = rise;
                    if (rise > rise_tol_ulps * ldexp(1.0, ilogb(fabs(cv) + 1e-30) - 23)) {
                        if (rises++ < 5) fprintf(stderr, "  exponent %.9g > 0 at b %d, h %d, t %d (cs %.9g)\n", rise, b, h, t, cv);
                    }
                    if (cv < running_min) running_min = cv;
                }
            }
        }
    printf("rel_exponents: %s, batch %d, seqlen %d, heads %d, chunk %d; A in [-100, -0.01], δ up to %.6g\n",
           kind == TILE_BACKEND_CUDA ? "cuda" : "cpu", s.batch, s.seqlen, s.heads, s.chunk, max_delta);
    printf("  δ = softplus(dt): worst relative error %.2e, %lld bad\n", worst_delta_err, bad_delta);
    printf("  cs (log2 decay):  most negative %.6g, worst error %.2e of the sum of |terms|, %lld bad\n",
           most_negative, worst_cs_err, bad_cs);
    printf("  exponents checked %lld, largest %.3g, %lld above 0 (beyond %.0f ulps)\n", exponents, worst_rise, rises,
           rise_tol_ulps);
    REL_CHECK(bad_delta == 0, "%lld δ values non-finite, negative or off the float64 softplus", bad_delta);
    REL_CHECK(bad_cs == 0, "%lld cs values non-finite or off the float64 sum", bad_cs);
    REL_CHECK(rises == 0, "%lld exponents above 0", rises);
    REL_CHECK(max_delta >= 9.99f && max_delta <= 10.001f, "δ reached %g, expected 10", max_delta);
    free(A); free(dt); free(delta); free(cs);
    tile_ctx_destroy(ctx);
    if (rel_failures) fprintf(stderr, "rel_exponents: %d check(s) failed\n", rel_failures);
    return rel_failures ? 1 : 0;
}
