/* layout.h: which thread of a block holds which element of a tile, in which
 * register.  Prefix: lay_.  Used by the CUDA emitter (emit_cuda.c).
 *
 * Every extent is a power of two, so a tile's row-major linear element index
 * is a string of bits, and every layout here is a *bit map*: each bit of the
 * element index comes from one bit of the register number, of the lane
 * (0..31) or of the warp number -- or from nothing (NONE): the value does not
 * depend on that bit (a broadcast; several elements share one register).
 * Lane and warp bits that no element bit uses are replicated: those threads
 * hold the same elements (the "owner" of an element is the copy whose
 * replicated bits are all zero; only owners do side effects).
 *
 *   blocked [4, 64] f32, 4 warps, V = 4 (elements 0..255, bit 0 lowest):
 *       bits 0-1  -> register bits 0-1   (4 contiguous elements per thread)
 *       bits 2-6  -> lane bits 0-4       (32 lanes along the row)
 *       bit  7    -> warp bit 0          (2 warps per 2 rows ...)
 *   so thread (warp w, lane l) holds row 2w + (l >> 4)... in registers 0..3.
 *
 *   mma accumulator (m16n8 fragment of mma.sync), for [M, N]:
 *       col bit 0 -> reg bit 0;   col bits 1-2 -> lane bits 0-1;
 *       row bits 0-2 -> lane bits 2-4;   row bit 3 -> reg bit 1;
 *       higher col / row bits -> register bits (the warp's n / m fragments),
 *       then warp bits (which warp owns which block of fragments).
 *
 * Because the map is on linear bits, reshape is free (same bits, new shape),
 * permute and broadcast are relabellings of bits, reductions combine register
 * bits in-thread, lane bits with shuffles and warp bits through shared memory.
 */
#ifndef TILEC_LAYOUT_H
#define TILEC_LAYOUT_H

#include "base.h"

enum { LAY_NONE = 0, LAY_REG, LAY_LANE, LAY_WARP };

#define LAY_MAX_BITS 31

typedef struct Layout {
    int rank;
    int shape[TILE_MAX_RANK];
    int nbits;                         /* log2(numel) */
    unsigned char space[LAY_MAX_BITS]; /* per linear element bit: LAY_* */
    unsigned char bit[LAY_MAX_BITS];   /* bit number within that space */
    int nregbits;                      /* registers per thread = 1 << nregbits */
    int kind;                          /* LAYK_*: for names in generated code only */
} Layout;

enum { LAYK_BLOCKED, LAYK_MMA, LAYK_OTHER };

int  lay_log2(int64_t v);                         /* v a power of two */
/* Linear bit position of bit j of dimension d's coordinate. */
int  lay_pos(int rank, const int *shape, int d, int j);
/* dim and coordinate bit of linear bit position b. */
void lay_dim_of(int rank, const int *shape, int b, int *d, int *j);
static inline int lay_nregs(const Layout *l) { return 1 << l->nregbits; }

/* Blocked layout of `t` over 2^warpbits warps: up to `max_vec` consecutive
 * elements of dimension `fastest` per thread, then lanes, then warps, then
 * more registers; the other dimensions follow in row-major order. */
Layout lay_blocked(const Type *t, int fastest, int warpbits, int max_vec);
/* Layout of a 2-D t for storing it transposed: `vec` consecutive elements of
 * dimension 1 per thread (a 16-byte read of its rows), the 32 lanes along
 * dimension 0 (so that a warp's stores into the transposed tile's rows land
 * in 32 consecutive columns of one), then warps along dimension 1, then
 * registers.  t->shape[0] >= 32, t->shape[1] >= vec << warpbits. */
Layout lay_lanes_down(const Type *t, int warpbits, int vec);
/* mma.sync accumulator layout of t ([.., M, N], M % 16 == 0, N % 8 == 0) with
 * 2^wmbits x 2^wnbits warps over the M x N blocks (more warps replicate). */
Layout lay_mma(const Type *t, int wmbits, int wnbits);
/* wgmma accumulator layout of t ([M, N], M % 64 == 0, N % 8 == 0): warp
 * groups of 4 warps, 2^wgmbits of them over M and 2^wgnbits over N; in a
 * group, warp w % 4 holds rows 16 (w % 4) .. + 15 of every 64-row chunk.  Per
 * 16-row band the bits are lay_mma's (col bit 0 -> reg 0, col bits 1-2 ->
 * lanes 0-1, row bits 0-2 -> lanes 2-4, row bit 3 -> reg 1, then the n8
 * blocks), row bits 4-5 -> warp bits 0-1, then the group's 64-row chunks:
 * registers 4 (chunk * N8 + n8 block) + 0..3 are the instruction's d list. */
Layout lay_wgmma(const Type *t, int wgmbits, int wgnbits);
/* mma.sync A-operand fragment layout of t ([M, K], M % 16 == 0, K a multiple
 * of the k step: 16 for 16-bit operands, 8 for tf32), for an mma whose warps
 * split M 2^wmbits ways and N 2^wnbits ways (the N warps hold copies).  The
 * registers of fragment mi at k step ks are 8 (16-bit) or 4 (tf32) in a row
 * from (mi * KS + ks) * that:
 *   16-bit: K bit 0 -> reg 0, K bits 1-2 -> lanes 0-1, M bits 0-2 -> lanes 2-4,
 *           M bit 3 -> reg 1, K bit 3 -> reg 2 (the instruction's a0, a1, ...);
 *   tf32:   K bits 0-1 -> lanes 0-1, M bits 0-2 -> lanes 2-4, M bit 3 -> reg 0,
 *           K bit 2 -> reg 1.
 * An mma accumulator [M, 16] of warps split along M only is the 16-bit layout:
 * a product can feed the next mma without leaving registers.
 * kperm: the same fragments with the k step's columns permuted so that each
 * thread holds consecutive ones (16-bit: 4, K bits 0-1 -> regs 0-1, K bits
 * 2-3 -> lanes 0-1, M bit 3 -> reg 2; tf32: 2, K bit 0 -> reg 0, K bits 1-2 ->
 * lanes 0-1, M bit 3 -> reg 1): loads of A's inputs are vectors.  B's rows
 * must then be read with the same permutation (emit_cuda_ops.c). */
Layout lay_mma_a(const Type *t, int wmbits, int wnbits, bool half, bool kperm);
/* The same bits for a new shape of the same numel (reshape). */
Layout lay_reshape(const Layout *x, int rank, const int *shape);

/* A layout of a tile of `shape` whose bit i is w's bit position pos_of[i]
 * (-1: NONE), registers renumbered compactly: how an operand of a view must
 * lie for the view to lie as w. */
Layout lay_pick(const Layout *w, int rank, const int *shape, const int *pos_of);
/* x with every NONE bit mapped (full): the lowest ones to new register bits,
 * the highest to lane and warp bits x leaves free, so that threads hold no
 * more registers than the tile needs.  Anything x maps is unchanged, so a
 * value of layout x is read in the result register by register. */
Layout lay_complete(const Layout *x, int warpbits);

bool lay_equal(const Layout *a, const Layout *b);
bool lay_full(const Layout *l);                   /* no NONE bits */
int  lay_mapped_bits(const Layout *l);            /* bits that are not NONE */
/* Can a value of layout x be read register by register into layout r?  True
 * when every bit x maps, r maps to the same lane / warp bit or to any
 * register bit, and every bit x leaves NONE is anything in r. */
bool lay_compatible(const Layout *x, const Layout *r);
/* For r's register `reg`, the register of x holding the same element
 * (lay_compatible(x, r) must hold). */
int  lay_reg_map(const Layout *x, const Layout *r, int reg);
/* Linear-index bits contributed by register `reg` (constant part). */
int64_t lay_reg_elem(const Layout *l, int reg);
/* Masks of lane and warp bits that some element bit uses. */
unsigned lay_lane_mask(const Layout *l);
unsigned lay_warp_mask(const Layout *l);

#endif
