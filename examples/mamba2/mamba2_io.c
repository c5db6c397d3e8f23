/* mamba2_io.c: the driver's inputs and outputs: random inputs, the .npy
 * input directory (every file checked for dtype and shape before anything
 * runs), rounding to the run's dtype, and saving results as float32 .npy. */
#include "mamba2.h"
#include "npy.h"
#include <math.h>
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
    /* Each extent is an i32 in the kernels, and so is every tile index. */
    if ((int64_t)s->batch * s->heads > 65535)
        return fail(err, errlen, "batch * heads = %lld exceeds the grid limit 65535",
                    (long long)s->batch * s->heads);
    if ((int64_t)s->batch * s->seqlen * s->heads * (s->headdim > s->dstate ? s->headdim : s->dstate) > INT32_MAX)
        return fail(err, errlen, "shape too large: more than 2^31 elements in one array");
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

static void round_all(float *p, size_t n, tile_dtype dt) {
    if (!p) return;
    for (size_t i = 0; i < n; i++) p[i] = m2_round(p[i], dt);
}

void m2_inputs_round(M2Inputs *in, tile_dtype dtype) {
    round_all(in->x, m2_numel_x(&in->s), dtype);
    round_all(in->z, m2_numel_x(&in->s), dtype);
    round_all(in->B, m2_numel_bc(&in->s), dtype);
    round_all(in->C, m2_numel_bc(&in->s), dtype);
}

void m2_inputs_free(M2Inputs *in) {
    free(in->x); free(in->dt); free(in->A); free(in->B); free(in->C);
    free(in->D); free(in->z); free(in->dt_bias); free(in->initial_states);
    memset(in, 0, sizeof *in);
}

/* ---- random inputs -------------------------------------------------------- */

typedef struct Rng { uint64_t s; } Rng;

static uint64_t rng_next(Rng *r) {           /* splitmix64 */
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double rng_uniform(Rng *r) {          /* in (0, 1) */
    return ((double)(rng_next(r) >> 11) + 0.5) * 0x1p-53;
}
static double rng_normal(Rng *r) {
    return sqrt(-2.0 * log(rng_uniform(r))) * cos(6.283185307179586 * rng_uniform(r));
}
static double inverse_softplus(double v) { return log(expm1(v)); }

static float *alloc_floats(size_t n) { return malloc(n ? n * sizeof(float) : 1); }

int m2_inputs_random(M2Inputs *in, const M2Shape *s, const struct M2RandomFeatures *f,
                     int dt_softplus, uint64_t seed, char *err, size_t errlen) {
    memset(in, 0, sizeof *in);
    in->s = *s;
    const size_t nx = m2_numel_x(s), nbc = m2_numel_bc(s);
    const size_t ndt = (size_t)s->batch * s->seqlen * s->heads;
    Rng r = {seed * 0x2545f4914f6cdd1dull + 1};
    in->x = alloc_floats(nx);
    in->dt = alloc_floats(ndt);
    in->A = alloc_floats(s->heads);
    in->B = alloc_floats(nbc);
    in->C = alloc_floats(nbc);
    if (f->has_D) in->D = alloc_floats((size_t)s->heads * s->headdim);
    if (f->has_z) in->z = alloc_floats(nx);
    if (f->has_dt_bias) in->dt_bias = alloc_floats(s->heads);
    if (f->has_initial) in->initial_states = alloc_floats(m2_numel_state(s));
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
    for (size_t i = 0; i < nx; i++) in->x[i] = (float)rng_normal(&r);
    for (size_t i = 0; i < nbc; i++) in->B[i] = (float)rng_normal(&r);
    for (size_t i = 0; i < nbc; i++) in->C[i] = (float)rng_normal(&r);
    if (in->D) {
        in->D_per_head = f->D_per_head;
        for (int h = 0; h < s->heads; h++) {
            const float per_head = (float)rng_normal(&r);
            for (int p = 0; p < s->headdim; p++)
                in->D[(size_t)h * s->headdim + p] = f->D_per_head ? per_head : (float)rng_normal(&r);
        }
    }
    if (in->z)
        for (size_t i = 0; i < nx; i++) in->z[i] = (float)rng_normal(&r);
    if (in->initial_states)
        for (size_t i = 0; i < m2_numel_state(s); i++) in->initial_states[i] = (float)(0.5 * rng_normal(&r));
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

int m2_inputs_read(M2Inputs *in, const char *dir, int chunk, char *err, size_t errlen) {
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
        for (int i = 0; i < 4; i++)
            if (x[i] < 1 || x[i] > INT32_MAX || b[i] < 1 || b[i] > INT32_MAX)
                rc = fail(err, errlen, "%s: x.npy %s and B.npy %s: every extent must be in 1..2^31-1", dir,
                          shape_text(xs, sizeof xs, 4, x), shape_text(bs, sizeof bs, 4, b));
        if (rc == 0 && (b[0] != x[0] || b[1] != x[1]))
            rc = fail(err, errlen, "%s/B.npy: shape %s disagrees with x.npy %s on batch or seqlen", dir,
                      shape_text(bs, sizeof bs, 4, b), shape_text(xs, sizeof xs, 4, x));
        s.batch = (int)x[0]; s.seqlen = (int)x[1]; s.heads = (int)x[2]; s.headdim = (int)x[3];
        s.groups = (int)b[2]; s.dstate = (int)b[3];
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
    if (rc == 0) {
        in->s = s;
        in->x = take(&files[F_X]);
        in->dt = take(&files[F_DT]);
        in->A = take(&files[F_A]);
        in->B = take(&files[F_B]);
        in->C = take(&files[F_C]);
        if (files[F_Z].present) in->z = take(&files[F_Z]);
        if (files[F_DT_BIAS].present) in->dt_bias = take(&files[F_DT_BIAS]);
        if (files[F_INITIAL].present) in->initial_states = take(&files[F_INITIAL]);
        if (files[F_D].present) {
            float *d = take(&files[F_D]);
            if (files[F_D].arr.rank == 2) {
                in->D = d;
            } else {                                 /* (heads) -> (heads, headdim) */
                in->D_per_head = 1;
                in->D = alloc_floats((size_t)s.heads * s.headdim);
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

static int write_f32(const char *dir, const char *name, int rank, const int64_t *shape, const float *data,
                     char *err, size_t errlen) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return npy_write(path, TILE_F32, rank, shape, data, err, errlen);
}

int m2_inputs_write(const M2Inputs *in, const char *dir, char *err, size_t errlen) {
    const M2Shape *s = &in->s;
    const int64_t shape_x[4] = {s->batch, s->seqlen, s->heads, s->headdim};
    const int64_t shape_bc[4] = {s->batch, s->seqlen, s->groups, s->dstate};
    const int64_t shape_state[4] = {s->batch, s->heads, s->headdim, s->dstate};
    const int64_t shape_h[2] = {s->heads, s->headdim};
    int rc = write_f32(dir, "x.npy", 4, shape_x, in->x, err, errlen);
    if (rc == 0) rc = write_f32(dir, "dt.npy", 3, shape_x, in->dt, err, errlen);
    if (rc == 0) rc = write_f32(dir, "A.npy", 1, shape_h, in->A, err, errlen);
    if (rc == 0) rc = write_f32(dir, "B.npy", 4, shape_bc, in->B, err, errlen);
    if (rc == 0) rc = write_f32(dir, "C.npy", 4, shape_bc, in->C, err, errlen);
    if (rc == 0 && in->z) rc = write_f32(dir, "z.npy", 4, shape_x, in->z, err, errlen);
    if (rc == 0 && in->dt_bias) rc = write_f32(dir, "dt_bias.npy", 1, shape_h, in->dt_bias, err, errlen);
    if (rc == 0 && in->initial_states)
        rc = write_f32(dir, "initial_states.npy", 4, shape_state, in->initial_states, err, errlen);
    if (rc == 0 && in->D) {
        if (!in->D_per_head) {
            rc = write_f32(dir, "D.npy", 2, shape_h, in->D, err, errlen);
        } else {
            float *d = alloc_floats(s->heads);
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
    int rc = write_f32(dir, "y.npy", 4, shape_y, out->y, err, errlen);
    if (rc == 0) rc = write_f32(dir, "final_states.npy", 4, shape_state, out->final_states, err, errlen);
    return rc;
}
