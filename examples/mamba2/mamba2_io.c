/* mamba2_io.c: the driver's inputs and outputs: random inputs, the .npy
 * input directory (every file checked for dtype and shape before anything
 * runs), rounding to the run's dtype, and saving results as float32 .npy. */
#include "mamba2.h"
#include "npy.h"
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

size_t m2_numel_x(const M2Shape *s) {
    return (size_t)s->batch * s->seqlen * s->heads * s->headdim;
}
size_t m2_numel_bc(const M2Shape *s) {
    return (size_t)s->batch * s->seqlen * s->groups * s->dstate;
}
size_t m2_numel_state(const M2Shape *s) {
    return (size_t)s->batch * s->heads * s->headdim * s->dstate;
}

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* One extent of the shape as given: 1..2^31-1. */
static int extent_check(const char *name, int64_t v, char *err, size_t errlen) {
    if (v < 1) return fail(err, errlen, "%s %lld: every extent must be at least 1", name, (long long)v);
    if (v > INT32_MAX)
        return fail(err, errlen, "%s %lld exceeds 2^31-1: each extent is an i32 in the kernels "
                    "(arrays may hold more than 2^31 elements in all)", name, (long long)v);
    return 0;
}

int m2_shape_make(M2Shape *s, const M2Extents *e, char *err, size_t errlen) {
    const struct { const char *name; int64_t v; } dims[] = {
        {"batch", e->batch}, {"seqlen", e->seqlen}, {"heads", e->heads}, {"headdim", e->headdim},
        {"dstate", e->dstate}, {"groups", e->groups}, {"chunk", e->chunk},
    };
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        if (extent_check(dims[i].name, dims[i].v, err, errlen)) return -1;
    M2Shape t = {(int)e->batch, (int)e->seqlen, (int)e->heads, (int)e->headdim,
                 (int)e->dstate, (int)e->groups, (int)e->chunk};
    if (m2_shape_check(&t, err, errlen)) return -1;
    *s = t;
    return 0;
}

int m2_shape_check(const M2Shape *s, char *err, size_t errlen) {
    if (s->batch < 1 || s->seqlen < 1 || s->heads < 1 || s->headdim < 1 || s->dstate < 1 || s->groups < 1)
        return fail(err, errlen, "every extent must be at least 1 (batch %d, seqlen %d, heads %d, headdim %d, dstate %d, groups %d)",
                    s->batch, s->seqlen, s->heads, s->headdim, s->dstate, s->groups);
    if (s->chunk != 64 && s->chunk != 128 && s->chunk != 256)
        return fail(err, errlen, "unsupported chunk size %d: use 64, 128 or 256", s->chunk);
    if (s->heads % s->groups != 0)
        return fail(err, errlen, "heads (%d) must be a multiple of groups (%d)", s->heads, s->groups);
    if (s->headdim > 256)
        return fail(err, errlen, "headdim %d is larger than the supported 256", s->headdim);
    if (s->dstate > 256)
        return fail(err, errlen, "dstate %d is larger than the supported 256", s->dstate);
    /* Grids: compute_out runs (.., chunks, batch * heads) blocks, and the
     * runtime allows 65535 on the last two axes.  No limit on the number of
     * elements: the kernels index in tiles (i32, each below its extent) and
     * the runtime gives an array whose offsets pass 2^31 - 1 64-bit offsets. */
    if ((int64_t)s->batch * s->heads > 65535)
        return fail(err, errlen, "batch * heads = %lld exceeds the grid limit 65535",
                    (long long)s->batch * s->heads);
    const int64_t nchunks = ((int64_t)s->seqlen + s->chunk - 1) / s->chunk;
    if (nchunks > 65535)
        return fail(err, errlen, "seqlen %d is %lld chunks of %d: more than the grid limit 65535 "
                    "(at most %lld tokens at this chunk size)", s->seqlen, (long long)nchunks, s->chunk,
                    65535LL * s->chunk);
    return 0;
}

/* ---- rounding to bf16 / f16 (round to nearest even, as cvt.rn) ---------- */

static float bits_to_float(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint32_t float_to_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

static float round_bf16(float v) {
    uint32_t u = float_to_bits(v);
    if ((u & 0x7fffffffu) > 0x7f800000u) return v;                 /* NaN */
    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    return bits_to_float(u);
}

static float round_f16(float v) {
    const float a = fabsf(v);
    if (isnan(v)) return v;
    if (a >= 65520.0f) return copysignf(INFINITY, v);              /* rounds past 65504 */
    if (a < 0x1p-14f)                                              /* subnormal: units of 2^-24 */
        return copysignf((float)nearbyint((double)a * 0x1p24) * 0x1p-24f, v);
    /* Normal: keep 10 of the 23 mantissa bits, ties to even. */
    uint32_t u = float_to_bits(a);
    const uint32_t rem = u & 0x1fffu;
    u &= ~0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (u & 0x2000u))) u += 0x2000u;
    return copysignf(bits_to_float(u), v);
}

float m2_round(float v, tile_dtype dt) {
    switch (dt) {
    case TILE_BF16: return round_bf16(v);
    case TILE_F16: return round_f16(v);
    default: return v;
    }
}

/* ---- host arrays in the run's dtype --------------------------------------- */

/* The f16 bits of r, a value f16 represents exactly (round_f16's result). */
static uint16_t f16_bits(float r) {
    const uint32_t u = float_to_bits(r);
    const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    const float a = fabsf(r);
    if (isnan(a)) return sign | 0x7e00u;
    if (a >= 65520.0f) return sign | 0x7c00u;
    if (a < 0x1p-14f) return sign | (uint16_t)nearbyint((double)a * 0x1p24);
    const uint32_t e = ((u >> 23) & 0xffu) - 127u + 15u;
    return sign | (uint16_t)((e << 10) | ((u >> 13) & 0x3ffu));
}

static float f16_value(uint16_t h) {
    const int sign = h >> 15, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    float v;
    if (e == 0) v = ldexpf((float)m, -24);
    else if (e == 31) v = m ? NAN : INFINITY;
    else v = ldexpf((float)(m | 0x400), e - 25);
    return sign ? -v : v;
}

/* The bf16 bits of v rounded to nearest even; NaN stays NaN (quiet). */
static uint16_t bf16_bits(float v) {
    const uint32_t u = float_to_bits(v);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u);
    return (uint16_t)(float_to_bits(round_bf16(v)) >> 16);
}

float m2_get(const void *p, tile_dtype dt, size_t i) {
    if (dt == TILE_F32) return ((const float *)p)[i];
    const uint16_t h = ((const uint16_t *)p)[i];
    return dt == TILE_BF16 ? bits_to_float((uint32_t)h << 16) : f16_value(h);
}

void m2_get_row(const void *p, tile_dtype dt, size_t i, int n, float *dst) {
    if (dt == TILE_F32) {
        memcpy(dst, (const float *)p + i, (size_t)n * sizeof(float));
        return;
    }
    const uint16_t *h = (const uint16_t *)p + i;
    if (dt == TILE_BF16)
        for (int k = 0; k < n; k++) dst[k] = bits_to_float((uint32_t)h[k] << 16);
    else
        for (int k = 0; k < n; k++) dst[k] = f16_value(h[k]);
}

void m2_put(void *p, tile_dtype dt, size_t i, float v) {
    if (dt == TILE_F32) ((float *)p)[i] = v;
    else ((uint16_t *)p)[i] = dt == TILE_BF16 ? bf16_bits(v) : f16_bits(round_f16(v));
}

/* Converts n float32 values at p to dt in place (element i moves from byte
 * 4i to byte 2i, after every byte below it was read) and gives back the
 * unused half.  Bytes are moved with memcpy: the buffer holds floats and
 * 16-bit patterns at once. */
static void *to_dtype_in_place(float *p, size_t n, tile_dtype dt) {
    if (!p || dt == TILE_F32) return p;
    unsigned char *b = (unsigned char *)p;
    for (size_t i = 0; i < n; i++) {
        float v;
        memcpy(&v, b + 4 * i, 4);
        const uint16_t h = dt == TILE_BF16 ? bf16_bits(v) : f16_bits(round_f16(v));
        memcpy(b + 2 * i, &h, 2);
    }
    void *q = realloc(p, n ? 2 * n : 1);
    return q ? q : p;
}

static void *alloc_elems(size_t n, tile_dtype dt) {
    return malloc(n ? n * (size_t)tile_dtype_size(dt) : 1);
}

void m2_inputs_free(M2Inputs *in) {
    free(in->x); free(in->dt); free(in->A); free(in->B); free(in->C);
    free(in->D); free(in->z); free(in->dt_bias); free(in->initial_states);
    memset(in, 0, sizeof *in);
}

/* ---- random inputs -------------------------------------------------------- */

/* splitmix64: the state only counts (s += GOLDEN per draw), so the stream can
 * be entered at any draw, which lets threads fill parts of one array with
 * exactly the values one thread would. */
#define GOLDEN 0x9e3779b97f4a7c15ull

typedef struct Rng { uint64_t s; } Rng;

static uint64_t rng_next(Rng *r) {
    uint64_t z = (r->s += GOLDEN);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double rng_uniform(Rng *r) {          /* in (0, 1) */
    return ((double)(rng_next(r) >> 11) + 0.5) * 0x1p-53;
}
static double rng_normal(Rng *r) {           /* two draws */
    const double u1 = rng_uniform(r);
    const double u2 = rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}
static double inverse_softplus(double v) { return log(expm1(v)); }

/* Elements [begin, end) of an array of normals times scale, element i from
 * draws 2i and 2i + 1 after state s0. */
typedef struct NormalPart {
    void *dst;
    tile_dtype dt;
    double scale;
    uint64_t s0;
    size_t begin, end;
} NormalPart;

static void *normal_part_fill(void *arg) {
    const NormalPart *w = arg;
    Rng r = {w->s0 + 2 * (uint64_t)w->begin * GOLDEN};
    for (size_t i = w->begin; i < w->end; i++) m2_put(w->dst, w->dt, i, (float)(w->scale * rng_normal(&r)));
    return NULL;
}

/* n normals times scale into dst (in dt) from the stream r, which moves on by
 * 2n draws.  Large arrays are split over the processors (2.7e9 normals take
 * about 90 s on one core). */
static void fill_normals(void *dst, tile_dtype dt, size_t n, double scale, Rng *r) {
    enum { MAX_THREADS = 64 };
    const size_t per_thread_min = (size_t)1 << 22;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    size_t nthreads = ncpu > 1 ? (size_t)ncpu : 1;
    if (nthreads > MAX_THREADS) nthreads = MAX_THREADS;
    if (nthreads > n / per_thread_min) nthreads = n / per_thread_min > 0 ? n / per_thread_min : 1;
    NormalPart parts[MAX_THREADS];
    pthread_t threads[MAX_THREADS];
    int started[MAX_THREADS] = {0};
    for (size_t t = 0; t < nthreads; t++) {
        parts[t] = (NormalPart){dst, dt, scale, r->s, n / nthreads * t, t + 1 == nthreads ? n : n / nthreads * (t + 1)};
        if (t > 0) started[t] = pthread_create(&threads[t], NULL, normal_part_fill, &parts[t]) == 0;
    }
    normal_part_fill(&parts[0]);
    for (size_t t = 1; t < nthreads; t++) {
        if (started[t]) pthread_join(threads[t], NULL);
        else normal_part_fill(&parts[t]);    /* no thread: this one does it */
    }
    r->s += 2 * (uint64_t)n * GOLDEN;
}

int m2_inputs_random(M2Inputs *in, const M2Shape *s, const struct M2RandomFeatures *f,
                     int dt_softplus, tile_dtype dtype, uint64_t seed, char *err, size_t errlen) {
    memset(in, 0, sizeof *in);
    in->s = *s;
    in->dtype = dtype;
    const size_t nx = m2_numel_x(s), nbc = m2_numel_bc(s);
    const size_t ndt = (size_t)s->batch * s->seqlen * s->heads;
    Rng r = {seed * 0x2545f4914f6cdd1dull + 1};
    in->x = alloc_elems(nx, dtype);
    in->dt = alloc_elems(ndt, TILE_F32);
    in->A = alloc_elems((size_t)s->heads, TILE_F32);
    in->B = alloc_elems(nbc, dtype);
    in->C = alloc_elems(nbc, dtype);
    if (f->has_D) in->D = alloc_elems((size_t)s->heads * s->headdim, TILE_F32);
    if (f->has_z) in->z = alloc_elems(nx, dtype);
    if (f->has_dt_bias) in->dt_bias = alloc_elems((size_t)s->heads, TILE_F32);
    if (f->has_initial) in->initial_states = alloc_elems(m2_numel_state(s), TILE_F32);
    if (!in->x || !in->dt || !in->A || !in->B || !in->C || (f->has_D && !in->D) || (f->has_z && !in->z) ||
        (f->has_dt_bias && !in->dt_bias) || (f->has_initial && !in->initial_states)) {
        m2_inputs_free(in);
        return fail(err, errlen, "out of memory for the inputs");
    }
    /* As Mamba-2 initialises them: A = -exp(U(log 1, log 16)), δ in [0.001, 0.1]. */
    for (int h = 0; h < s->heads; h++)
        in->A[h] = (float)-exp(rng_uniform(&r) * log(16.0));
    if (in->dt_bias)
        for (int h = 0; h < s->heads; h++) {
            const double target = 0.001 + 0.099 * rng_uniform(&r);
            in->dt_bias[h] = (float)(dt_softplus ? inverse_softplus(target) : 0.5 * target);
        }
    for (size_t i = 0; i < ndt; i++) {
        const double target = 0.001 + 0.099 * rng_uniform(&r);
        if (dt_softplus)
            in->dt[i] = (float)(in->dt_bias ? 0.5 * rng_normal(&r) : inverse_softplus(target));
        else
            in->dt[i] = (float)(in->dt_bias ? 0.5 * target : target);
    }
    fill_normals(in->x, dtype, nx, 1.0, &r);
    fill_normals(in->B, dtype, nbc, 1.0, &r);
    fill_normals(in->C, dtype, nbc, 1.0, &r);
    if (in->D) {
        in->D_per_head = f->D_per_head;
        for (int h = 0; h < s->heads; h++) {
            const float per_head = (float)rng_normal(&r);
            for (int p = 0; p < s->headdim; p++)
                in->D[(size_t)h * s->headdim + p] = f->D_per_head ? per_head : (float)rng_normal(&r);
        }
    }
    if (in->z) fill_normals(in->z, dtype, nx, 1.0, &r);
    if (in->initial_states) fill_normals(in->initial_states, TILE_F32, m2_numel_state(s), 0.5, &r);
    return 0;
}

/* ---- reading an input directory ----------------------------------------- */

static const char *shape_text(char *buf, size_t n, int rank, const int64_t *shape) {
    size_t k = 0;
    k += (size_t)snprintf(buf + k, n - k, "(");
    for (int i = 0; i < rank && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (k < n) snprintf(buf + k, n - k, rank == 1 ? ",)" : ")");
    return buf;
}

/* One input file: its NpyArray and whether it was present. */
typedef struct InputFile {
    const char *name;      /* "x.npy" */
    int required;
    NpyArray arr;
    int present;
} InputFile;

enum { F_X, F_DT, F_A, F_B, F_C, F_D, F_Z, F_DT_BIAS, F_INITIAL, F_COUNT };

static int read_one(const char *dir, InputFile *f, char *err, size_t errlen) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, f->name);
    if (access(path, F_OK) != 0) {
        if (f->required) return fail(err, errlen, "%s: missing (a required input)", path);
        return 0;
    }
    char msg[512];
    if (npy_read(path, &f->arr, msg, sizeof msg) != 0)
        return fail(err, errlen, "%s", msg);
    f->present = 1;
    if (f->arr.dtype != TILE_F32) {
        const char *descr = npy_descr(f->arr.dtype);
        return fail(err, errlen, "%s: dtype %s (%s), expected float32 (<f4)", path,
                    tile_dtype_name(f->arr.dtype), descr ? descr : "?");
    }
    return 0;
}

/* Checks that file f has exactly the expected shape. */
static int expect_shape(const char *dir, const InputFile *f, int rank, const int64_t *want,
                        const char *why, char *err, size_t errlen) {
    int ok = f->arr.rank == rank;
    for (int i = 0; ok && i < rank; i++) ok = f->arr.shape[i] == want[i];
    if (ok) return 0;
    char got_s[128], want_s[128];
    return fail(err, errlen, "%s/%s: shape %s, expected %s (%s)", dir, f->name,
                shape_text(got_s, sizeof got_s, f->arr.rank, f->arr.shape),
                shape_text(want_s, sizeof want_s, rank, want), why);
}

static float *take(InputFile *f) {
    float *p = f->arr.data;
    f->arr.data = NULL;
    return p;
}

int m2_inputs_read(M2Inputs *in, const char *dir, int chunk, tile_dtype dtype, char *err, size_t errlen) {
    memset(in, 0, sizeof *in);
    InputFile files[F_COUNT] = {
        [F_X] = {"x.npy", 1, {0}, 0},           [F_DT] = {"dt.npy", 1, {0}, 0},
        [F_A] = {"A.npy", 1, {0}, 0},           [F_B] = {"B.npy", 1, {0}, 0},
        [F_C] = {"C.npy", 1, {0}, 0},           [F_D] = {"D.npy", 0, {0}, 0},
        [F_Z] = {"z.npy", 0, {0}, 0},           [F_DT_BIAS] = {"dt_bias.npy", 0, {0}, 0},
        [F_INITIAL] = {"initial_states.npy", 0, {0}, 0},
    };
    int rc = 0;
    for (int i = 0; i < F_COUNT && rc == 0; i++) rc = read_one(dir, &files[i], err, errlen);

    M2Shape s = {0};
    s.chunk = chunk;
    char xs[128], bs[128];
    if (rc == 0 && files[F_X].arr.rank != 4)
        rc = fail(err, errlen, "%s/x.npy: shape %s, expected 4 dimensions (batch, seqlen, heads, headdim)", dir,
                  shape_text(xs, sizeof xs, files[F_X].arr.rank, files[F_X].arr.shape));
    if (rc == 0 && files[F_B].arr.rank != 4)
        rc = fail(err, errlen, "%s/B.npy: shape %s, expected 4 dimensions (batch, seqlen, groups, dstate)", dir,
                  shape_text(bs, sizeof bs, files[F_B].arr.rank, files[F_B].arr.shape));
    if (rc == 0) {
        const int64_t *x = files[F_X].arr.shape, *b = files[F_B].arr.shape;
        static const char *const x_dims[4] = {"batch", "seqlen", "heads", "headdim"};
        static const char *const b_dims[4] = {"batch", "seqlen", "groups", "dstate"};
        char why[256];
        for (int i = 0; i < 4 && rc == 0; i++)
            if (extent_check(x_dims[i], x[i], why, sizeof why))
                rc = fail(err, errlen, "%s/x.npy: shape %s: %s", dir, shape_text(xs, sizeof xs, 4, x), why);
        for (int i = 0; i < 4 && rc == 0; i++)
            if (extent_check(b_dims[i], b[i], why, sizeof why))
                rc = fail(err, errlen, "%s/B.npy: shape %s: %s", dir, shape_text(bs, sizeof bs, 4, b), why);
        if (rc == 0 && (b[0] != x[0] || b[1] != x[1]))
            rc = fail(err, errlen, "%s/B.npy: shape %s disagrees with x.npy %s on batch or seqlen", dir,
                      shape_text(bs, sizeof bs, 4, b), shape_text(xs, sizeof xs, 4, x));
        if (rc == 0) {
            s.batch = (int)x[0]; s.seqlen = (int)x[1]; s.heads = (int)x[2]; s.headdim = (int)x[3];
            s.groups = (int)b[2]; s.dstate = (int)b[3];
        }
    }
    if (rc == 0 && s.heads % s.groups != 0)
        rc = fail(err, errlen, "%s: heads %d (x.npy %s) is not a multiple of groups %d (B.npy %s)", dir,
                  s.heads, shape_text(xs, sizeof xs, 4, files[F_X].arr.shape), s.groups,
                  shape_text(bs, sizeof bs, 4, files[F_B].arr.shape));
    if (rc == 0) {
        const int64_t shape_x[4] = {s.batch, s.seqlen, s.heads, s.headdim};
        const int64_t shape_bc[4] = {s.batch, s.seqlen, s.groups, s.dstate};
        const int64_t shape_state[4] = {s.batch, s.heads, s.headdim, s.dstate};
        const int64_t shape_h[1] = {s.heads};
        rc = expect_shape(dir, &files[F_DT], 3, shape_x, "batch, seqlen, heads of x.npy", err, errlen);
        if (rc == 0) rc = expect_shape(dir, &files[F_A], 1, shape_h, "heads of x.npy", err, errlen);
        if (rc == 0) rc = expect_shape(dir, &files[F_C], 4, shape_bc, "the shape of B.npy", err, errlen);
        if (rc == 0 && files[F_Z].present)
            rc = expect_shape(dir, &files[F_Z], 4, shape_x, "the shape of x.npy", err, errlen);
        if (rc == 0 && files[F_DT_BIAS].present)
            rc = expect_shape(dir, &files[F_DT_BIAS], 1, shape_h, "heads of x.npy", err, errlen);
        if (rc == 0 && files[F_INITIAL].present)
            rc = expect_shape(dir, &files[F_INITIAL], 4, shape_state, "batch, heads, headdim of x.npy, dstate of B.npy",
                              err, errlen);
        if (rc == 0 && files[F_D].present) {
            const NpyArray *d = &files[F_D].arr;
            const int64_t shape_hp[2] = {s.heads, s.headdim};
            if (d->rank == 1) rc = expect_shape(dir, &files[F_D], 1, shape_h, "heads of x.npy", err, errlen);
            else rc = expect_shape(dir, &files[F_D], 2, shape_hp, "(heads) or (heads, headdim) of x.npy", err, errlen);
        }
    }
    if (rc == 0) rc = m2_shape_check(&s, err, errlen);
    /* A = -exp(A_log) < 0 in the model.  A positive A makes every decay grow
     * without bound; the kernels clamp exponents at 0, which would quietly run
     * such a head as if A were 0: refuse it instead (A = 0, no decay, is fine). */
    for (int h = 0; rc == 0 && h < s.heads; h++) {
        const float a = ((const float *)files[F_A].arr.data)[h];
        if (!(a <= 0.0f))
            rc = fail(err, errlen, "%s/A.npy: A[%d] = %g: Mamba-2 needs A <= 0 (A = -exp(A_log)); a positive or NaN A "
                      "has no finite recurrence", dir, h, (double)a);
    }
    if (rc == 0) {
        in->s = s;
        in->dtype = dtype;
        in->x = to_dtype_in_place(take(&files[F_X]), m2_numel_x(&s), dtype);
        in->dt = take(&files[F_DT]);
        in->A = take(&files[F_A]);
        in->B = to_dtype_in_place(take(&files[F_B]), m2_numel_bc(&s), dtype);
        in->C = to_dtype_in_place(take(&files[F_C]), m2_numel_bc(&s), dtype);
        if (files[F_Z].present) in->z = to_dtype_in_place(take(&files[F_Z]), m2_numel_x(&s), dtype);
        if (files[F_DT_BIAS].present) in->dt_bias = take(&files[F_DT_BIAS]);
        if (files[F_INITIAL].present) in->initial_states = take(&files[F_INITIAL]);
        if (files[F_D].present) {
            float *d = take(&files[F_D]);
            if (files[F_D].arr.rank == 2) {
                in->D = d;
            } else {                                 /* (heads) -> (heads, headdim) */
                in->D_per_head = 1;
                in->D = alloc_elems((size_t)s.heads * s.headdim, TILE_F32);
                if (!in->D) rc = fail(err, errlen, "out of memory");
                for (int h = 0; in->D && h < s.heads; h++)
                    for (int p = 0; p < s.headdim; p++) in->D[(size_t)h * s.headdim + p] = d[h];
                free(d);
            }
        }
    }
    for (int i = 0; i < F_COUNT; i++)
        if (files[i].present) npy_free(&files[i].arr);
    if (rc != 0) m2_inputs_free(in);
    return rc;
}

/* ---- writing ------------------------------------------------------------ */

/* Writes data (held in dt) as a float32 .npy file: f32 as it is, bf16
 * converted by npy_write as it writes, f16 through one float32 copy. */
static int write_as_f32(const char *dir, const char *name, int rank, const int64_t *shape, const void *data,
                        tile_dtype dt, char *err, size_t errlen) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (dt != TILE_F16) return npy_write(path, dt, rank, shape, data, err, errlen);
    size_t n = 1;
    for (int i = 0; i < rank; i++) n *= (size_t)shape[i];
    float *tmp = alloc_elems(n, TILE_F32);
    if (!tmp) return fail(err, errlen, "%s: out of memory", path);
    for (size_t i = 0; i < n; i++) tmp[i] = m2_get(data, dt, i);
    int rc = npy_write(path, TILE_F32, rank, shape, tmp, err, errlen);
    free(tmp);
    return rc;
}

static int write_f32(const char *dir, const char *name, int rank, const int64_t *shape, const float *data,
                     char *err, size_t errlen) {
    return write_as_f32(dir, name, rank, shape, data, TILE_F32, err, errlen);
}

int m2_inputs_write(const M2Inputs *in, const char *dir, char *err, size_t errlen) {
    const M2Shape *s = &in->s;
    const int64_t shape_x[4] = {s->batch, s->seqlen, s->heads, s->headdim};
    const int64_t shape_bc[4] = {s->batch, s->seqlen, s->groups, s->dstate};
    const int64_t shape_state[4] = {s->batch, s->heads, s->headdim, s->dstate};
    const int64_t shape_h[2] = {s->heads, s->headdim};
    int rc = write_as_f32(dir, "x.npy", 4, shape_x, in->x, in->dtype, err, errlen);
    if (rc == 0) rc = write_f32(dir, "dt.npy", 3, shape_x, in->dt, err, errlen);
    if (rc == 0) rc = write_f32(dir, "A.npy", 1, shape_h, in->A, err, errlen);
    if (rc == 0) rc = write_as_f32(dir, "B.npy", 4, shape_bc, in->B, in->dtype, err, errlen);
    if (rc == 0) rc = write_as_f32(dir, "C.npy", 4, shape_bc, in->C, in->dtype, err, errlen);
    if (rc == 0 && in->z) rc = write_as_f32(dir, "z.npy", 4, shape_x, in->z, in->dtype, err, errlen);
    if (rc == 0 && in->dt_bias) rc = write_f32(dir, "dt_bias.npy", 1, shape_h, in->dt_bias, err, errlen);
    if (rc == 0 && in->initial_states)
        rc = write_f32(dir, "initial_states.npy", 4, shape_state, in->initial_states, err, errlen);
    if (rc == 0 && in->D) {
        if (!in->D_per_head) {
            rc = write_f32(dir, "D.npy", 2, shape_h, in->D, err, errlen);
        } else {
            float *d = alloc_elems((size_t)s->heads, TILE_F32);
            if (!d) return fail(err, errlen, "out of memory");
            for (int h = 0; h < s->heads; h++) d[h] = in->D[(size_t)h * s->headdim];
            rc = write_f32(dir, "D.npy", 1, shape_h, d, err, errlen);
            free(d);
        }
    }
    return rc;
}

int m2_outputs_write(const M2Outputs *out, const M2Shape *s, const char *dir, char *err, size_t errlen) {
    const int64_t shape_y[4] = {s->batch, s->seqlen, s->heads, s->headdim};
    const int64_t shape_state[4] = {s->batch, s->heads, s->headdim, s->dstate};
    int rc = write_as_f32(dir, "y.npy", 4, shape_y, out->y, out->dtype, err, errlen);
    if (rc == 0) rc = write_f32(dir, "final_states.npy", 4, shape_state, out->final_states, err, errlen);
    return rc;
}
