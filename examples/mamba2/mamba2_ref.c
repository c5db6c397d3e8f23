/* mamba2_ref.c: the float64 reference of the Mamba-2 SSD forward pass: the
 * sequential recurrence, token by token, with none of the chunking of the
 * kernels, so it checks the chunked algebra as well as the code:
 *
 *   δ_t = clamp(softplus?(dt_t + dt_bias_h), dt_min, dt_max)
 *   h_t = exp(δ_t A_h) h_{t-1} + δ_t x_t B_tᵀ          (h is headdim x dstate)
 *   y_t = h_t C_t + D_h ∘ x_t,  then y_t · z_t · sigmoid(z_t) when z is given */
#include "mamba2.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static double ref_softplus(double v) {
    return v > 20.0 ? v : log1p(exp(v));
}

/* The recurrence of (b, h), token by token: row(u, t, y_t) receives the
 * token's output (headdim values) as soon as it is known, and state_bh holds
 * the final state at the end.  Memory: the state and one row of each input,
 * read in place from the host arrays (x, B, C, z in the run's dtype) at 64-bit
 * offsets; nothing else of the inputs is copied or converted. */
typedef void (*RowFn)(void *u, int t, const double *y_t);

static void reference_walk(const M2Inputs *in, const M2Options *o, int b, int h, double *state_bh,
                           RowFn row, void *u) {
    const M2Shape *s = &in->s;
    const int L = s->seqlen, H = s->heads, P = s->headdim, N = s->dstate, G = s->groups;
    const int g = h / (H / G);
    const size_t state_size = (size_t)P * N;
    /* headdim and dstate are at most 256 (m2_shape_check). */
    float xt[256], zt[256], Bt[256], Ct[256];
    double yt[256];

    if (in->initial_states) {
        const float *init = in->initial_states + ((size_t)b * H + h) * state_size;
        for (size_t i = 0; i < state_size; i++) state_bh[i] = init[i];
    } else {
        memset(state_bh, 0, state_size * sizeof(double));
    }
    const double a = in->A[h];
    const double bias = in->dt_bias ? in->dt_bias[h] : 0.0;
    for (int t = 0; t < L; t++) {
        const size_t row_bth = ((size_t)b * L + t) * H + h;          /* (b, t, h) */
        const size_t row_btg = ((size_t)b * L + t) * G + g;          /* (b, t, g) */
        double delta = (double)in->dt[row_bth] + bias;
        if (o->dt_softplus) delta = ref_softplus(delta);
        delta = fmin(fmax(delta, o->dt_min), o->dt_max);
        const double decay = exp(delta * a);
        m2_get_row(in->x, in->dtype, row_bth * P, P, xt);
        if (in->z) m2_get_row(in->z, in->dtype, row_bth * P, P, zt);
        m2_get_row(in->B, in->dtype, row_btg * N, N, Bt);
        m2_get_row(in->C, in->dtype, row_btg * N, N, Ct);
        for (int p = 0; p < P; p++) {
            double *hp = state_bh + (size_t)p * N;
            const double dx = delta * xt[p];
            double acc = 0.0;
            for (int n = 0; n < N; n++) {
                hp[n] = decay * hp[n] + dx * Bt[n];
                acc += hp[n] * Ct[n];
            }
            if (in->D) acc += (double)in->D[(size_t)h * P + p] * xt[p];
            if (in->z) {
                const double zv = zt[p];
                acc *= zv / (1.0 + exp(-zv));
            }
            yt[p] = acc;
        }
        row(u, t, yt);
    }
}

typedef struct KeepRows { double *y_bh; int P; } KeepRows;

static void keep_row(void *u, int t, const double *y_t) {
    const KeepRows *k = u;
    memcpy(k->y_bh + (size_t)t * k->P, y_t, (size_t)k->P * sizeof(double));
}

void m2_reference_head(const M2Inputs *in, const M2Options *o, int b, int h,
                       double *y_bh, double *state_bh) {
    KeepRows k = {y_bh, in->s.headdim};
    reference_walk(in, o, b, h, state_bh, keep_row, &k);
}

/* Accumulates squared error, squared reference and the largest |error|. */
typedef struct ErrSum { double diff2, ref2, max_abs; } ErrSum;

static void err_add(ErrSum *e, double got, double want) {
    const double d = got - want;
    e->diff2 += d * d;
    e->ref2 += want * want;
    if (!(fabs(d) <= e->max_abs)) e->max_abs = fabs(d);   /* NaN wins */
}

static M2Error err_finish(const ErrSum *e) {
    M2Error r;
    r.rel_l2 = e->ref2 > 0 ? sqrt(e->diff2 / e->ref2) : sqrt(e->diff2);
    r.max_abs = e->max_abs;
    return r;
}

/* Compares each reference row of (b, h) with y as it comes. */
typedef struct CompareRows {
    const M2Outputs *out;
    const M2Shape *s;
    int b, h;
    ErrSum *e;
} CompareRows;

static void compare_row(void *u, int t, const double *y_t) {
    const CompareRows *c = u;
    const int L = c->s->seqlen, H = c->s->heads, P = c->s->headdim;
    const size_t base = (((size_t)c->b * L + t) * H + c->h) * P;
    for (int p = 0; p < P; p++) err_add(c->e, m2_get(c->out->y, c->out->dtype, base + (size_t)p), y_t[p]);
}

void m2_check(const M2Inputs *in, const M2Options *o, const M2Outputs *out, int npairs,
              M2Error *err_y, M2Error *err_state, int *pairs_checked) {
    const M2Shape *s = &in->s;
    const int H = s->heads, P = s->headdim, N = s->dstate;
    const int total = s->batch * H;
    if (npairs <= 0 || npairs > total) npairs = total;
    double *state_bh = malloc(sizeof(double) * (size_t)P * N);
    ErrSum ey = {0, 0, 0}, es = {0, 0, 0};
    int checked = 0;
    if (state_bh) {
        for (int k = 0; k < npairs; k++) {
            /* Spread the sample over batches and heads, first and last included. */
            const int pair = npairs == 1 ? 0 : (int)((int64_t)k * (total - 1) / (npairs - 1));
            const int b = pair / H, h = pair % H;
            CompareRows c = {out, s, b, h, &ey};
            reference_walk(in, o, b, h, state_bh, compare_row, &c);
            const float *fs = out->final_states + ((size_t)b * H + h) * P * N;
            for (size_t i = 0; i < (size_t)P * N; i++) err_add(&es, fs[i], state_bh[i]);
            checked++;
        }
    }
    free(state_bh);
    *err_y = err_finish(&ey);
    *err_state = err_finish(&es);
    *pairs_checked = checked;
}
