/* mamba2.h: the Mamba-2 SSD forward driver, shared between its files.
 * Prefix: m2_.
 *
 *   mamba2.c      the command line, the three launches, --check, --bench
 *   mamba2_io.c   inputs: random ones, or .npy files checked for shape; saving
 *   mamba2_ref.c  the float64 sequential-recurrence reference and error norms
 *
 * Host arrays are float32, C order, in the layouts of the command line's
 * .npy files.  x, B, C and z are kept already rounded to the run's dtype, so
 * the reference sees exactly the values the kernels see. */
#ifndef MAMBA2_H
#define MAMBA2_H

#include <stddef.h>
#include <stdint.h>
#include "tile.h"

typedef struct M2Shape {
    int batch, seqlen, heads, headdim, dstate, groups, chunk;
} M2Shape;

typedef struct M2Inputs {
    M2Shape s;
    float *x;          /* (batch, seqlen, heads, headdim) */
    float *dt;         /* (batch, seqlen, heads) */
    float *A;          /* (heads) */
    float *B, *C;      /* (batch, seqlen, groups, dstate) */
    float *D;          /* (heads, headdim) or NULL; a per-head D is repeated along headdim */
    int D_per_head;    /* D was given with shape (heads) */
    float *z;          /* (batch, seqlen, heads, headdim) or NULL */
    float *dt_bias;    /* (heads) or NULL */
    float *initial_states;  /* (batch, heads, headdim, dstate) or NULL */
} M2Inputs;

typedef struct M2Options {
    tile_dtype dtype;      /* of x, B, C, z and y: TILE_BF16, TILE_F16 or TILE_F32 */
    tile_dtype state_dtype;/* of the per-chunk states: TILE_F32 or TILE_BF16 */
    int fp32_products;     /* --precision fp32: f32 inputs multiply exactly */
    int dt_softplus;
    double dt_min, dt_max; /* the clamp of δ; (-inf, inf) = none */
    int block_n_state, block_n_out;  /* dstate slices of kernels 2 and 3; 0 = the default */
    int block_k;                     /* tokens per mma step of kernel 2; 0 = 64 */
    int warps_state, warps_out;      /* num_warps of kernels 2 and 3; 0 = the compiler's choice */
} M2Options;

/* Results, float32 host arrays. */
typedef struct M2Outputs {
    float *y;              /* (batch, seqlen, heads, headdim) */
    float *final_states;   /* (batch, heads, headdim, dstate) */
} M2Outputs;

/* ---- mamba2_io.c ---- */
size_t m2_numel_x(const M2Shape *s);      /* batch*seqlen*heads*headdim */
size_t m2_numel_bc(const M2Shape *s);     /* batch*seqlen*groups*dstate */
size_t m2_numel_state(const M2Shape *s);  /* batch*heads*headdim*dstate */
/* Checks the shape's values; returns 0 or -1 with a message. */
int  m2_shape_check(const M2Shape *s, char *err, size_t errlen);
/* Rounds v to the dtype (round to nearest even) and back to float. */
float m2_round(float v, tile_dtype dt);
/* Random inputs of shape s (a splitmix64 stream from seed). */
struct M2RandomFeatures { int has_D, D_per_head, has_z, has_dt_bias, has_initial; };
int  m2_inputs_random(M2Inputs *in, const M2Shape *s, const struct M2RandomFeatures *f,
                      int dt_softplus, uint64_t seed, char *err, size_t errlen);
/* Reads DIR/x.npy ... as the issue lists; the shape comes from the files and
 * s->chunk from `chunk`.  Returns 0, or -1 with a message naming the file and
 * the shapes. */
int  m2_inputs_read(M2Inputs *in, const char *dir, int chunk, char *err, size_t errlen);
/* Rounds x, B, C and z to dtype in place. */
void m2_inputs_round(M2Inputs *in, tile_dtype dtype);
/* Writes the inputs as .npy files into dir (which must exist). */
int  m2_inputs_write(const M2Inputs *in, const char *dir, char *err, size_t errlen);
void m2_inputs_free(M2Inputs *in);
/* Writes DIR/y.npy and DIR/final_states.npy as float32. */
int  m2_outputs_write(const M2Outputs *out, const M2Shape *s, const char *dir, char *err, size_t errlen);

/* ---- mamba2_ref.c ---- */
/* Runs the float64 recurrence for one (batch, head): y_bh is (seqlen, headdim),
 * state_bh (headdim, dstate). */
void m2_reference_head(const M2Inputs *in, const M2Options *o, int b, int h,
                       double *y_bh, double *state_bh);

typedef struct M2Error {
    double rel_l2, max_abs;
} M2Error;
/* Compares `out` with the reference on `npairs` (batch, head) pairs spread
 * over all of them (npairs <= 0 or >= batch*heads: every pair). */
void m2_check(const M2Inputs *in, const M2Options *o, const M2Outputs *out, int npairs,
              M2Error *err_y, M2Error *err_state, int *pairs_checked);

#endif
