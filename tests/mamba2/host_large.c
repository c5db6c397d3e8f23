/* host_large.c: the Mamba-2 driver's host side at shapes of more than 2^31
 * elements, on the CPU and without the memory (issue 6).
 *
 *   1. m2_shape_make accepts the issue's shape (batch 2, seqlen 262144, 80
 *      heads, headdim 64: 2,684,354,560 elements in x) without allocating,
 *      and refuses an extent of 2^31 or more with a message naming it; the
 *      grid limits (batch * heads, chunks) are refused by name too.
 *   2. The float64 reference (m2_reference_head) and the check (m2_check) read
 *      x, z, B, C and y at element offsets above 2^32, the initial and final
 *      states above 2^31, dt and D: every array of a shape with 65535 heads,
 *      headdim and dstate 256 and 300 tokens lives in a sparse MAP_NORESERVE
 *      mapping (about 85 GB of address space, a few MB touched), and the last
 *      (batch, head) pair must give bit for bit what the same head gives in a
 *      compact one-head copy.  A 32-bit offset anywhere reads zeros or
 *      another head instead.
 *   3. m2_inputs_random fills large arrays with several threads: every
 *      element equals the serial splitmix64 stream's.
 *   4. m2_put / m2_get round to nearest even and keep NaN a NaN.
 *
 * Exit status: 0 ok, 1 a failed check, 77 no address space for part 2 (the
 * other parts ran and passed). */
#include "mamba2.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static int failures;

#define CHECK(cond, ...)                                                             \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                            \
            fputc('\n', stderr);                                                     \
            failures++;                                                              \
        }                                                                            \
    } while (0)

/* ---- 1. shapes --------------------------------------------------------------- */

static M2Extents issue_shape(void) {
    return (M2Extents){.batch = 2, .seqlen = 262144, .heads = 80, .headdim = 64, .dstate = 128,
                       .groups = 1, .chunk = 256};
}

/* e must be refused with a message containing `want`. */
static void expect_refused(M2Extents e, const char *want) {
    char err[512] = "";
    M2Shape s = {0};
    const int rc = m2_shape_make(&s, &e, err, sizeof err);
    CHECK(rc == -1, "shape accepted, expected '%s'", want);
    CHECK(strstr(err, want) != NULL, "message '%s' lacks '%s'", err, want);
    if (rc == -1) printf("ok   refused: %s\n", err);
}

static void test_shapes(void) {
    char err[512] = "";
    M2Shape s = {0};
    M2Extents e = issue_shape();
    CHECK(m2_shape_make(&s, &e, err, sizeof err) == 0, "the issue's shape refused: %s", err);
    CHECK(s.batch == 2 && s.seqlen == 262144 && s.heads == 80 && s.headdim == 64 && s.dstate == 128 &&
          s.groups == 1 && s.chunk == 256, "shape not copied");
    CHECK(m2_numel_x(&s) == (size_t)2684354560u, "numel x %zu", m2_numel_x(&s));
    CHECK(m2_numel_x(&s) > (size_t)INT32_MAX, "not above 2^31");
    CHECK(m2_numel_bc(&s) == (size_t)67108864u, "numel B %zu", m2_numel_bc(&s));
    CHECK(m2_numel_state(&s) == (size_t)1310720u, "numel state %zu", m2_numel_state(&s));
    printf("ok   accepted: batch 2, seqlen 262144, heads 80, headdim 64 (%zu elements in x), nothing allocated\n",
           m2_numel_x(&s));

    /* The largest extents the kernels take, with everything else at 1. */
    e = (M2Extents){.batch = 1, .seqlen = 65535LL * 256, .heads = 1, .headdim = 1, .dstate = 1, .groups = 1,
                    .chunk = 256};
    CHECK(m2_shape_make(&s, &e, err, sizeof err) == 0, "65535 chunks of 256 refused: %s", err);

    e = issue_shape(); e.seqlen = (int64_t)1 << 31;
    expect_refused(e, "seqlen 2147483648 exceeds 2^31-1");
    e = issue_shape(); e.headdim = (int64_t)1 << 31;
    expect_refused(e, "headdim 2147483648 exceeds 2^31-1");
    e = issue_shape(); e.batch = (int64_t)1 << 40;
    expect_refused(e, "batch 1099511627776 exceeds 2^31-1");
    e = issue_shape(); e.dstate = INT64_MAX;
    expect_refused(e, "dstate 9223372036854775807 exceeds 2^31-1");
    e = issue_shape(); e.groups = 0;
    expect_refused(e, "groups 0: every extent must be at least 1");
    e = issue_shape(); e.seqlen = 65535LL * 64 + 1; e.chunk = 64;
    expect_refused(e, "65536 chunks of 64: more than the grid limit 65535");
    e = issue_shape(); e.batch = 820;
    expect_refused(e, "batch * heads = 65600 exceeds the grid limit 65535");
    e = issue_shape(); e.headdim = 257;
    expect_refused(e, "headdim 257 is larger than the supported 256");
    e = issue_shape(); e.heads = 6; e.groups = 4;
    expect_refused(e, "must be a multiple of groups");
    e = issue_shape(); e.chunk = 96;
    expect_refused(e, "unsupported chunk size 96");
}

/* ---- 2. the reference at offsets above 2^32 ---------------------------------- */

static void *sparse(size_t bytes) {
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

typedef struct Mapping { void *p; size_t bytes; } Mapping;

/* Returns 0 when it ran, 77 when the mappings could not be made. */
static int test_reference_far(void) {
    /* 65535 heads (and groups) of headdim and dstate 256, 300 tokens: x, z, y,
     * B and C hold 5.03e9 elements each; the initial and final states 4.29e9. */
    const M2Shape s = {.batch = 1, .seqlen = 300, .heads = 65535, .headdim = 256, .dstate = 256,
                       .groups = 65535, .chunk = 64};
    char err[512] = "";
    CHECK(m2_shape_check(&s, err, sizeof err) == 0, "%s", err);
    const int L = s.seqlen, H = s.heads, P = s.headdim, N = s.dstate, G = s.groups;
    const int h = H - 1, g = G - 1;     /* the last head, of the last group */
    const tile_dtype dt = TILE_BF16;
    const size_t nx = m2_numel_x(&s), nbc = m2_numel_bc(&s), nstate = m2_numel_state(&s);
    CHECK(nx > ((size_t)1 << 32) && nbc > ((size_t)1 << 32) && nstate > ((size_t)1 << 31),
          "shape not large enough: %zu %zu %zu", nx, nbc, nstate);

    M2Inputs in;
    memset(&in, 0, sizeof in);
    in.s = s;
    in.dtype = dt;
    Mapping maps[10];
    int nmaps = 0;
#define MAP(field, n, size)                                                                    \
    do {                                                                                       \
        maps[nmaps].bytes = (size_t)(n) * (size);                                              \
        maps[nmaps].p = sparse(maps[nmaps].bytes);                                             \
        if (!maps[nmaps].p) goto no_memory;                                                    \
        field = maps[nmaps++].p;                                                               \
    } while (0)
    M2Outputs out = {.dtype = dt};
    MAP(in.x, nx, 2);
    MAP(in.z, nx, 2);
    MAP(in.B, nbc, 2);
    MAP(in.C, nbc, 2);
    MAP(in.dt, (size_t)L * H, 4);
    MAP(in.D, (size_t)H * P, 4);
    MAP(in.initial_states, nstate, 4);
    MAP(out.y, nx, 2);
    MAP(out.final_states, nstate, 4);
#undef MAP
    static float A[65535];
    for (int k = 0; k < H; k++) A[k] = -1.0f;
    in.A = A;

    /* The compact copy: the same head alone (batch 1, heads 1, groups 1). */
    M2Inputs one;
    memset(&one, 0, sizeof one);
    one.s = (M2Shape){.batch = 1, .seqlen = L, .heads = 1, .headdim = P, .dstate = N, .groups = 1, .chunk = 64};
    one.dtype = dt;
    uint16_t *ox = malloc((size_t)L * P * 2), *oz = malloc((size_t)L * P * 2);
    uint16_t *oB = malloc((size_t)L * N * 2), *oC = malloc((size_t)L * N * 2);
    float *odt = malloc((size_t)L * 4), *oD = malloc((size_t)P * 4), *oinit = malloc((size_t)P * N * 4);
    float oA = -0.75f;
    double *y1 = malloc((size_t)L * P * sizeof(double)), *st1 = malloc((size_t)P * N * sizeof(double));
    double *y2 = malloc((size_t)L * P * sizeof(double)), *st2 = malloc((size_t)P * N * sizeof(double));
    if (!ox || !oz || !oB || !oC || !odt || !oD || !oinit || !y1 || !st1 || !y2 || !st2) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    one.x = ox; one.z = oz; one.B = oB; one.C = oC; one.dt = odt; one.D = oD; one.initial_states = oinit;
    one.A = &oA;
    A[h] = oA;

    /* Values: a cheap deterministic pattern, written to both copies. */
    uint64_t r = 12345;
#define NEXT() ((float)((double)((r = r * 6364136223846793005ull + 1442695040888963407ull) >> 11) * 0x1p-53 - 0.5))
    for (int t = 0; t < L; t++) {
        const size_t far_x = ((size_t)t * H + h) * P, far_b = ((size_t)t * G + g) * N;
        for (int p = 0; p < P; p++) {
            const float xv = 4 * NEXT(), zv = 4 * NEXT();
            m2_put(in.x, dt, far_x + p, xv);
            m2_put(ox, dt, (size_t)t * P + p, xv);
            m2_put(in.z, dt, far_x + p, zv);
            m2_put(oz, dt, (size_t)t * P + p, zv);
        }
        for (int n = 0; n < N; n++) {
            const float bv = 2 * NEXT(), cv = 2 * NEXT();
            m2_put(in.B, dt, far_b + n, bv);
            m2_put(oB, dt, (size_t)t * N + n, bv);
            m2_put(in.C, dt, far_b + n, cv);
            m2_put(oC, dt, (size_t)t * N + n, cv);
        }
        odt[t] = in.dt[(size_t)t * H + h] = 0.05f + 0.1f * NEXT();
    }
    for (int p = 0; p < P; p++) oD[p] = in.D[(size_t)h * P + p] = NEXT();
    for (int i = 0; i < P * N; i++) oinit[i] = in.initial_states[(size_t)h * P * N + i] = NEXT();
#undef NEXT

    M2Options o;
    memset(&o, 0, sizeof o);
    o.dtype = dt;
    o.state_dtype = TILE_F32;
    o.dt_min = -INFINITY;
    o.dt_max = INFINITY;
    const int failures_before = failures;
    m2_reference_head(&in, &o, 0, h, y1, st1);
    m2_reference_head(&one, &o, 0, 0, y2, st2);
    CHECK(memcmp(y1, y2, (size_t)L * P * sizeof(double)) == 0, "y of head %d differs from the compact copy", h);
    CHECK(memcmp(st1, st2, (size_t)P * N * sizeof(double)) == 0, "state of head %d differs from the compact copy", h);
    double norm = 0;
    for (size_t i = 0; i < (size_t)L * P; i++) norm += y2[i] * y2[i];
    CHECK(norm > 1.0 && isfinite(norm), "reference y is degenerate (|y|^2 = %g)", norm);
    if (failures == failures_before)
        printf("ok   m2_reference_head: head %d at element offsets up to %zu (x) and %zu (B) equals its compact copy\n",
           h, ((size_t)(L - 1) * H + h) * P + P - 1, ((size_t)(L - 1) * G + g) * N + N - 1);

    /* m2_check on the first and the last pair: y (bf16) and the final
     * states written where they belong, from the compact reference. */
    for (int t = 0; t < L; t++)
        for (int p = 0; p < P; p++)
            m2_put(out.y, dt, ((size_t)t * H + h) * P + p, (float)y2[(size_t)t * P + p]);
    for (int i = 0; i < P * N; i++) out.final_states[(size_t)h * P * N + i] = (float)st2[i];
    M2Error ey, es;
    int checked = 0;
    m2_check(&in, &o, &out, 2, &ey, &es, &checked);
    CHECK(checked == 2, "%d pairs checked", checked);
    CHECK(ey.rel_l2 > 0 && ey.rel_l2 < 4e-3, "y rel L2 %.3e (bf16 rounding only expected)", ey.rel_l2);
    CHECK(es.rel_l2 < 1e-7, "final state rel L2 %.3e", es.rel_l2);
    if (failures == failures_before)
        printf("ok   m2_check: pairs 0 and %d, y rel L2 %.2e (bf16 rounding), final state %.2e\n", H - 1, ey.rel_l2,
           es.rel_l2);

    for (int i = 0; i < nmaps; i++) munmap(maps[i].p, maps[i].bytes);
    free(ox); free(oz); free(oB); free(oC); free(odt); free(oD); free(oinit);
    free(y1); free(st1); free(y2); free(st2);
    return 0;

no_memory:
    printf("skip the reference at offsets above 2^32: no sparse mapping of %zu bytes here\n", maps[nmaps].bytes);
    for (int i = 0; i < nmaps; i++) munmap(maps[i].p, maps[i].bytes);
    return 77;
}

/* ---- 3. threaded random inputs --------------------------------------------- */

#define GOLDEN 0x9e3779b97f4a7c15ull
static uint64_t sm_next(uint64_t *s) {
    uint64_t z = (*s += GOLDEN);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double sm_uniform(uint64_t *s) { return ((double)(sm_next(s) >> 11) + 0.5) * 0x1p-53; }
static double sm_normal(uint64_t *s) {
    const double u1 = sm_uniform(s);
    const double u2 = sm_uniform(s);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

static void test_random_threads(void) {
    /* 2^23 elements in x: at least two threads wherever there are two CPUs. */
    const M2Shape s = {.batch = 1, .seqlen = 4096, .heads = 32, .headdim = 64, .dstate = 16, .groups = 1, .chunk = 64};
    const struct M2RandomFeatures f = {0, 0, 0, 0, 0};
    const uint64_t seed = 7;
    char err[512];
    M2Inputs in;
    CHECK(m2_inputs_random(&in, &s, &f, 0, TILE_BF16, seed, err, sizeof err) == 0, "%s", err);
    if (!in.x) return;
    /* The serial stream: A (heads draws), dt (one draw each), then x, B, C. */
    uint64_t st = seed * 0x2545f4914f6cdd1dull + 1;
    for (int k = 0; k < s.heads; k++) sm_next(&st);
    const size_t ndt = (size_t)s.batch * s.seqlen * s.heads;
    for (size_t i = 0; i < ndt; i++) sm_next(&st);
    size_t bad = 0, first_bad = 0;
    const void *arrays[3] = {in.x, in.B, in.C};
    const size_t sizes[3] = {m2_numel_x(&s), m2_numel_bc(&s), m2_numel_bc(&s)};
    for (int a = 0; a < 3; a++)
        for (size_t i = 0; i < sizes[a]; i++) {
            const float want = m2_round((float)sm_normal(&st), TILE_BF16);
            const float got = m2_get(arrays[a], TILE_BF16, i);
            if (memcmp(&want, &got, 4) != 0 && bad++ == 0) first_bad = i;
        }
    CHECK(bad == 0, "%zu elements differ from the serial stream, the first at %zu", bad, first_bad);
    if (bad == 0)
        printf("ok   m2_inputs_random: %zu elements of x, B and C equal the serial stream\n",
               sizes[0] + sizes[1] + sizes[2]);
    m2_inputs_free(&in);
}

/* ---- 4. conversions -------------------------------------------------------- */

static void test_conversions(void) {
    uint16_t h[4];
    float f[4];
    m2_put(h, TILE_BF16, 0, 1.0f + 0x1p-8f);            /* a tie: to even (1.0) */
    m2_put(h, TILE_BF16, 1, 1.0f + 0x1p-8f + 0x1p-20f);  /* above the tie: up */
    m2_put(h, TILE_BF16, 2, NAN);
    m2_put(h, TILE_BF16, 3, -3.5f);
    CHECK(m2_get(h, TILE_BF16, 0) == 1.0f, "%g", m2_get(h, TILE_BF16, 0));
    CHECK(m2_get(h, TILE_BF16, 1) == 1.0f + 0x1p-7f, "%g", m2_get(h, TILE_BF16, 1));
    CHECK(isnan(m2_get(h, TILE_BF16, 2)), "bf16 NaN lost");
    CHECK(m2_get(h, TILE_BF16, 3) == -3.5f, "%g", m2_get(h, TILE_BF16, 3));
    m2_put(h, TILE_F16, 0, 65504.0f);
    m2_put(h, TILE_F16, 1, 70000.0f);
    m2_put(h, TILE_F16, 2, 0x1p-24f);
    m2_put(h, TILE_F16, 3, NAN);
    CHECK(m2_get(h, TILE_F16, 0) == 65504.0f, "%g", m2_get(h, TILE_F16, 0));
    CHECK(isinf(m2_get(h, TILE_F16, 1)), "%g", m2_get(h, TILE_F16, 1));
    CHECK(m2_get(h, TILE_F16, 2) == 0x1p-24f, "%g", m2_get(h, TILE_F16, 2));
    CHECK(isnan(m2_get(h, TILE_F16, 3)), "f16 NaN lost");
    m2_put(f, TILE_F32, 1, 0.1f);
    CHECK(m2_get(f, TILE_F32, 1) == 0.1f, "%g", m2_get(f, TILE_F32, 1));
    float row[4];
    m2_get_row(h, TILE_F16, 0, 3, row);
    CHECK(row[0] == 65504.0f && isinf(row[1]) && row[2] == 0x1p-24f, "m2_get_row");
    if (failures == 0)
        printf("ok   m2_put / m2_get: ties to even, overflow to inf, NaN kept (bf16, f16, f32)\n");
}

int main(void) {
    test_shapes();
    test_conversions();
    test_random_threads();
    const int far = test_reference_far();
    if (failures) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    return far == 77 ? 77 : 0;
}
