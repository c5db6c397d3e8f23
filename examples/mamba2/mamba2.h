/* mamba2.h: the Mamba-2 SSD forward driver, shared between its files.
 * Prefix: m2_.
 *
 *   mamba2.c      the command line, the four launches of the three programs, --check, --bench
 *   mamba2_io.c   inputs: random ones, or .npy files checked for shape; saving
 *   mamba2_ref.c  the float64 sequential-recurrence reference and error norms
 *
 * Host arrays are C order, in the layouts of the command line's .npy files.
 * x, B, C, z and y are held in the run's dtype, exactly as the kernels read
 * and write them (bf16 and f16 as their 16-bit patterns, f32 as float): the
 * reference sees the values the kernels see, uploads and downloads are plain
 * copies, and a run with 2.7e9 elements in x keeps 2 bytes per element of it
 * on the host in bf16, not a float32 copy as well.  dt, A, D, dt_bias, the
 * states and the final states are float32, as on the device.
 *
 * Every element index is a size_t: arrays may hold more than 2^31 elements.
 * Each extent is at most 2^31 - 1 (the kernels take extents as i32). */
#ifndef MAMBA2_H
#define MAMBA2_H

#include <stddef.h>
#include <stdint.h>
#include "tile.h"

/* A checked shape: every extent in 1..2^31-1 (m2_shape_make). */
typedef struct M2Shape {
    int batch, seqlen, heads, headdim, dstate, groups, chunk;
} M2Shape;

/* A shape as given (command line, .npy headers), before it is checked: 64-bit,
 * so that an extent of 2^31 or more is reported by name, not wrapped. */
typedef struct M2Extents {
    int64_t batch, seqlen, heads, headdim, dstate, groups, chunk;
} M2Extents;

typedef struct M2Inputs {
    M2Shape s;
    tile_dtype dtype;  /* of x, B, C and z: the run's dtype */
    void *x;           /* (batch, seqlen, heads, headdim), in dtype */
    float *dt;         /* (batch, seqlen, heads) */
    float *A;          /* (heads) */
    void *B, *C;       /* (batch, seqlen, groups, dstate), in dtype */
    float *D;          /* (heads, headdim) or NULL; a per-head D is repeated along headdim */
    int D_per_head;    /* D was given with shape (heads) */
    void *z;           /* (batch, seqlen, heads, headdim) or NULL, in dtype */
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
    int block_p_state;               /* head dims per block of kernel 2; 0 = the default */
    int heads_state;                 /* kernel 2's heads of a group walked together per block (1 or 2); 0 = the default */
    int block_k;                     /* tokens per mma step of kernel 2; 0 = 64 */
    int block_k_out;                 /* tokens per causal step of kernel 3; 0 = 64 (at most block_m) */
    int heads_per_block;             /* kernel 3 on this many heads per block; 0 or 1 = one */
    int seq_heads;                   /* kernel 3's heads per block one after another; 0 = the default */
    int warps_state, warps_out;      /* num_warps of kernels 2 and 3; 0 = the compiler's choice */
    int block_m;                     /* tokens per row block of kernel 3 (and of its scores); 0 = 128 for
                                        16-bit inputs, 64 for f32 */
    int carry_tf32;                  /* --carry tf32: kernel 3's C·h_cᵀ in tf32 (16-bit inputs) */
    int scores;                      /* --scores: kernel 3's C Bᵀ scores, M2_SCORES_* */
    int occupancy_out;               /* --occupancy-out: kernel 3's blocks per SM; 0 = the default */
    int occupancy_state;             /* --occupancy-state: kernel 2's; 0 = the compiler's choice */
    int pass;                        /* --pass: M2_PASS_* */
    int scan_step;                   /* --scan-step: tokens per step of ssd_scan; 0: mamba2.c's scan_step */
    int decay_on_b;                  /* --decay-on-b N: f32 ssd_scan's DECAY_ON_B, as N + 1; 0: mamba2.c's rule */
    int d_diagonal;                  /* --d-diagonal N: the scan's per-head D on the causal diagonal, as N + 1;
                                        0: mamba2.c's rule */
    int tf32_bc;                     /* --tf32-bc N: f32 ssd_scan reads B and C rounded to tf32 once
                                        (round_tf32_bc, ssd_scan_tf32), as N + 1; 0: yes */
    int segments;                    /* --segments: the scan's sequence cut into this many runs, a block
                                        each (ssd_scan.tile's SPLIT); 0 = the driver's choice */
} M2Options;

/* How kernels 2 and 3 run: CHUNKS, the chunked pass (fwd_pass_state writes
 * each chunk's state, compute_out reads them back), or SCAN, one kernel
 * (ssd_scan.tile) walking the sequence per (batch, head) with the state on
 * chip.  DEFAULT: the driver's choice (mamba2.c, run_plan). */
enum { M2_PASS_DEFAULT, M2_PASS_CHUNKS, M2_PASS_SCAN };

/* Where kernel 3 gets its C_m B_kᵀ scores: SEPARATE (chunk_scores, a fourth
 * launch) or FUSED (computed in kernel 3's loop from C_m held in registers).
 * DEFAULT: FUSED for 16-bit inputs with dstate <= 64 or groups > 1, where the
 * H200 ran it faster; SEPARATE otherwise. */
enum { M2_SCORES_DEFAULT, M2_SCORES_FUSED, M2_SCORES_SEPARATE };

/* Results, host arrays. */
typedef struct M2Outputs {
    tile_dtype dtype;      /* of y: the run's dtype */
    void *y;               /* (batch, seqlen, heads, headdim), in dtype */
    float *final_states;   /* (batch, heads, headdim, dstate) */
} M2Outputs;

/* ---- mamba2_io.c ---- */
size_t m2_numel_x(const M2Shape *s);      /* batch*seqlen*heads*headdim */
size_t m2_numel_bc(const M2Shape *s);     /* batch*seqlen*groups*dstate */
size_t m2_numel_state(const M2Shape *s);  /* batch*heads*headdim*dstate */
/* Checks the extents e and makes *s of them: each extent in 1..2^31-1 (the
 * message names the one that is not), then m2_shape_check.  Nothing is
 * allocated: a shape of more than 2^31 elements per array is fine.  Returns 0,
 * or -1 with a message. */
int  m2_shape_make(M2Shape *s, const M2Extents *e, char *err, size_t errlen);
/* Checks the shape's values against what the kernels and grids support;
 * returns 0 or -1 with a message. */
int  m2_shape_check(const M2Shape *s, char *err, size_t errlen);
/* Rounds v to the dtype (round to nearest even) and back to float. */
float m2_round(float v, tile_dtype dt);
/* Element i of an array held in dtype dt (bf16/f16 bits, or float). */
float m2_get(const void *p, tile_dtype dt, size_t i);
/* Elements i .. i+n-1 of such an array, as floats, into dst. */
void m2_get_row(const void *p, tile_dtype dt, size_t i, int n, float *dst);
/* Stores v rounded to dt (round to nearest even) as element i. */
void m2_put(void *p, tile_dtype dt, size_t i, float v);
/* Random inputs of shape s (a splitmix64 stream from seed), x, B, C and z in
 * dtype.  The same values whatever the dtype (before rounding) and however
 * many threads fill the large arrays. */
struct M2RandomFeatures { int has_D, D_per_head, has_z, has_dt_bias, has_initial; };
int  m2_inputs_random(M2Inputs *in, const M2Shape *s, const struct M2RandomFeatures *f,
                      int dt_softplus, tile_dtype dtype, uint64_t seed, char *err, size_t errlen);
/* Reads DIR/x.npy ... as the issue lists; the shape comes from the files and
 * s->chunk from `chunk`; x, B, C and z are rounded to dtype.  Returns 0, or -1
 * with a message naming the file and the shapes. */
int  m2_inputs_read(M2Inputs *in, const char *dir, int chunk, tile_dtype dtype, char *err, size_t errlen);
/* Writes the inputs as float32 .npy files into dir (which must exist). */
int  m2_inputs_write(const M2Inputs *in, const char *dir, char *err, size_t errlen);
void m2_inputs_free(M2Inputs *in);
/* Writes DIR/y.npy and DIR/final_states.npy as float32 (f16 y through one
 * float32 copy while writing; bf16 and f32 without). */
int  m2_outputs_write(const M2Outputs *out, const M2Shape *s, const char *dir, char *err, size_t errlen);

/* ---- mamba2_ref.c ---- */
/* Runs the float64 recurrence for one (batch, head): y_bh is (seqlen, headdim),
 * state_bh (headdim, dstate).  Reads only that head's rows of the inputs. */
void m2_reference_head(const M2Inputs *in, const M2Options *o, int b, int h,
                       double *y_bh, double *state_bh);

typedef struct M2Error {
    double rel_l2, max_abs;
} M2Error;
/* Compares `out` with the reference on `npairs` (batch, head) pairs spread
 * over all of them (npairs <= 0 or >= batch*heads: every pair).  Memory:
 * one (headdim, dstate) state and a few rows; each pair's y is compared
 * token by token as the recurrence produces it. */
void m2_check(const M2Inputs *in, const M2Options *o, const M2Outputs *out, int npairs,
              M2Error *err_y, M2Error *err_state, int *pairs_checked);

#endif
