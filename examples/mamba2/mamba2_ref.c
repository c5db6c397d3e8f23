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

void m2_reference_head(const M2Inputs *in, const M2Options *o, int b, int h,
                       double *y_bh, double *state_bh) {
    const M2Shape *s = &in->s;
    const int L = s->seqlen, H = s->heads, P = s->headdim, N = s->dstate, G = s->groups;
    const int g = h / (H / G);
    const size_t state_size = (size_t)P * N;

    if (in->initial_states) {
        const float *init = in->initial_states + ((size_t)b * H + h) * state_size;
        for (size_t i = 0; i < state_size; i++) state_bh[i] = init[i];
    } else {
        memset(state_bh, 0, state_size * sizeof(double));
    }
    const double a = in->A[h];
    const double bias = in->dt_bias ? in->dt_bias[h] : 0.0;
    for (int t = 0; t < L; t++) {
        double delta = (double)in->dt[((size_t)b * L + t) * H + h] + bias;
        if (o->dt_softplus) delta = ref_softplus(delta);
        delta = fmin(fmax(delta, o->dt_min), o->dt_max);
        const double decay = exp(delta * a);
        const size_t row = ((size_t)b * L + t) * H + h;          /* (b, t, h) */
        const float *xt = in->x + row * P;
        const float *Bt = in->B + (((size_t)b * L + t) * G + g) * N;
        const float *Ct = in->C + (((size_t)b * L + t) * G + g) * N;
        double *yt = y_bh + (size_t)t * P;
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
                const double zv = in->z[row * P + p];
                acc *= zv / (1.0 + exp(-zv));
            }
            yt[p] = acc;
        }
    }
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

void m2_check(const M2Inputs *in, const M2Options *o, const M2Outputs *out, int npairs,
              M2Error *err_y, M2Error *err_state, int *pairs_checked) {
    const M2Shape *s = &in->s;
    const int L = s->seqlen, H = s->heads, P = s->headdim, N = s->dstate;
    const int total = s->batch * H;
    if (npairs <= 0 || npairs > total) npairs = total;
    double *y_bh = malloc(sizeof(double) * (size_t)L * P);
    double *state_bh = malloc(sizeof(double) * (size_t)P * N);
    ErrSum ey = {0, 0, 0}, es = {0, 0, 0};
    int checked = 0;
    if (y_bh && state_bh) {
        for (int k = 0; k < npairs; k++) {
            /* Spread the sample over batches and heads, first and last included. */
            const int pair = npairs == 1 ? 0 : (int)((int64_t)k * (total - 1) / (npairs - 1));
            const int b = pair / H, h = pair % H;
            m2_reference_head(in, o, b, h, y_bh, state_bh);
            for (int t = 0; t < L; t++)
                for (int p = 0; p < P; p++)
                    err_add(&ey, out->y[(((size_t)b * L + t) * H + h) * P + p], y_bh[(size_t)t * P + p]);
            const float *fs = out->final_states + ((size_t)b * H + h) * P * N;
            for (size_t i = 0; i < (size_t)P * N; i++) err_add(&es, fs[i], state_bh[i]);
            checked++;
        }
    }
    free(y_bh);
    free(state_bh);
    *err_y = err_finish(&ey);
    *err_state = err_finish(&es);
    *pairs_checked = checked;
}
