/* emit_cuda_wgmma.c: tensor-core products on Hopper's warpgroup mma
 * (wgmma.mma_async, sm_90a), for kernels compiled for sm_90a
 * (CudaEmitOptions.target_sm90a).
 *
 * An mma goes to wgmma when (the plan, ce_wgmma_plan) its operands are f16,
 * bf16 or tf32 (one dtype), its result f32 or f16, all three 2-D, K a
 * multiple of the instruction's (16; 8 for tf32), tf32 operands in shared
 * memory K-major (the only orientation wgmma reads 32-bit operands in; a
 * tf32 operand stored MN-major is read from a copy of it transposed once it lands,
 * transposed_width), the block has 4 warps or a multiple (whole warp
 * groups), and either
 *   - both operands come through cp.async (emit_cuda_async.c): wgmma reads
 *     them from shared memory itself, so registers hold only the
 *     accumulator; M % 64 == 0, the warp groups split the M x N tile into
 *     64-row chunks and at most 256 columns each (its result has a layout
 *     of its own, lay_wgmma, that an mma.sync partner would convert through
 *     shared memory: see below); or
 *   - A is in registers as the plan's mma fragments with every warp on 16
 *     rows of M (plan_reg_a), B comes through cp.async, N <= 256: the
 *     layouts are mma.sync's, so it meets other products freely; or
 *   - A comes through cp.async and B is a tile the kernel computed
 *     (ssd_scan's C·stateᵀ): the product stages B itself into the scratch
 *     area in a wgmma layout (ce_emit_mma; tf32 K-major), where mma.sync
 *     would stage it into padded rows, same stores and barriers; then A and
 *     B are read by descriptors.  bf16 ssd_scan at (8, 4096, 80, 64, 128):
 *     0.799 -> 0.723 ms (H200, docs/performance.md; TILEC_WGMMA_NOSTAGE=1
 *     keeps it on mma.sync).
 * The two shared-memory cases need the accumulator to meet no other mma, or
 * the warp groups on M alone, one 64-row chunk each, and the plan's split on
 * M alone too (layout_as_planned): the layouts are then the same.
 * Its operand tiles are then copied, instead of into padded rows, into one
 * of wgmma's canonical layouts (swizzle_width): swizzled, the widest of 128,
 * 64 or 32 bytes that the tile's rows split into (its 16-byte pieces
 * permuted within each 8-row group, so that a warp's copies read whole
 * 128-byte lines and write without bank conflicts), else core matrices (no
 * swizzle: each 8 rows x 16 bytes of the stored tile is 128 contiguous
 * bytes, those of one 8-row group side by side; 8 consecutive threads copy
 * the 8 rows of one).  The swizzle is what makes wgmma pay: with core
 * matrices a warp's copies read half lines, doubling L2 requests, and the
 * matmul ran at 212 TFLOP/s, bound by them; swizzled, 637 (H200,
 * docs/performance.md).  A descriptor gives each instruction its 64 x k
 * slice of A and k x N slice of B (k: 32 bytes, 16 elements or 8 tf32),
 * 16-bit ones in either orientation (K-major, or M- / N-major with the
 * instruction's transpose bit), tf32 ones K-major.  At each use: fence the
 * accumulator, one wgmma per 64-row chunk and k step, commit.  When the
 * accumulator is a loop-carried local it is the local's own registers
 * (ce_wgmma_inplace: copies in and out would make ptxas serialize the
 * products), and in a pipelined loop whose copies feed
 * every operand (emit_cuda_async.c), and nothing else in the loop reads or
 * writes its accumulator local, the batch stays in flight until the next
 * iteration's products are issued (wait_group 1): the pipeline refills a
 * buffer one iteration later than it would for mma.sync.  Otherwise the
 * batch is waited for at once (always with A from registers, which the
 * products read until they are done), and its accumulator registers are
 * made opaque to the compiler there, so that nothing reads them earlier.
 * tf32 operands: wgmma reads shared memory as it lies and drops each f32's
 * low 13 bits (round toward zero), where the language rounds to nearest
 * even (cvt.rn, as the interpreter and mma.sync fragment reads do); so their
 * buffers are rounded in place once they land (emit_cuda_async.c's
 * emit_round), or their transposed copies as they are made; a buffer that
 * other uses read exact (ce_async_exact_reads) is not, and no wgmma product
 * reads it where it lands (operand_load).  That costs: the 8192^3 NT matmul ran at 208 TFLOP/s rounded,
 * 325 with TILEC_TF32_TRUNCATE=1 (no rounding, error against cuBLAS 7.8e-4
 * instead of 1e-5; H200, docs/performance.md, which has the variants tried).
 * Registers written by ordinary instructions (A's packed fragments) are
 * written before the wgmma.fence that orders them before the products.  The
 * copies' writers fence the async proxy before the barrier that publishes a
 * buffer.
 *
 * The runtime compiles for sm_90a on an sm_90 device unless TILEC_WGMMA=0.
 * Prefix: ce_wgmma_. */
#include "emit_cuda_int.h"

#include <stdlib.h>

/* The most accumulator registers per thread a product may take: 64 x 256 per
 * warp group; more and ptxas serializes the products and spills. */
#define WGMMA_MAX_ACC_REGS 128

/* Warp groups over M and over N (log2) for an M x N product, or false. */
static bool choose_split(Emitter *E, int M, int N, int *wgm, int *wgn) {
    if (E->warpbits < 2) return false;
    int groups = E->warpbits - 2;
    *wgm = 0;
    while (*wgm < groups && ((M / 64) >> (*wgm + 1)) >= 1 && (M / 64) % (2 << *wgm) == 0) (*wgm)++;
    *wgn = groups - *wgm;
    int cols = N >> *wgn, chunks = (M / 64) >> *wgm;
    return cols >= 8 && cols % 8 == 0 && cols <= 256 && (cols << *wgn) == N && chunks * cols / 2 <= WGMMA_MAX_ACC_REGS;
}

/* The cp.async load operand `which` (0: A, 1: B) of `o` is read from
 * (through views), or -1.  A tf32 operand must be K-major: wgmma reads
 * 32-bit operands from shared memory in no other orientation. */
static int operand_load(Emitter *E, const IrOp *o, int which, bool transposed_ok) {
    int cd, lv = ce_async_operand_load(E, o->args[which], &cd, NULL);
    bool kmajor = false;
    if (lv < 0 || !ce_async_is_load(E, lv)) return -1;
    ce_async_operand_kmajor(E, o->args[which], which, &kmajor);
    if (ce_vdt(E, o->args[which]) != DT_TF32) return lv;
    /* (read where it lands: its buffer is rounded in place, which other
     * uses reading the exact f32 values forbid) */
    if (kmajor) return ce_async_exact_reads(E, lv) ? -1 : lv;
    return transposed_ok && !E->opt_tf32_no_transpose && !E->opt_no_wgmma_transpose ? lv : -1;
}

/* A tf32 B stored [K][N] (N-major) of a product whose A lies in shared memory
 * too is copied transposed, [N][K] and rounded, once it lands
 * (emit_cuda_async.c's emit_transpose), into wgmma's K-major layout swizzled
 * this many bytes wide: the widest its rows of K floats split into (K % 8 ==
 * 0: 32 bytes at least).  Its own buffer takes a swizzled N-major form,
 * which TMA can fill, read by the copy alone (or transposed in place,
 * tr_in_place).  The tf32 K x N matmul at 8192^3: 157 -> 219 TFLOP/s (H200,
 * docs/performance.md).  With A from registers too (Mamba-2's tf32
 * compute_out at (1, 4096, 80, 64, 128): 0.2387 -> 0.2344 ms; 1.643 -> 1.657
 * at the anchor when first tried, before tf32 rounded by cvt.rn;
 * TILEC_WGMMA_REG_A_NO_TRANSPOSE=1 keeps those on mma.sync), and for an A
 * stored [K][M] (M-major), whose copy [M][K] is K-major the same way. */
static int transposed_width(int K) { return K * 4 % 128 == 0 ? 128 : K * 4 % 64 == 0 ? 64 : 32; }

/* May reg-A product `o`, whose tf32 A fragments the plan k-permuted (an
 * accumulator's two columns a thread are A's k = 2q and 2q + 1, which
 * mma.sync reads as its k = q and q + 4), read its B from a transposed copy
 * whose K columns lie in that order (async_tr_kperm, emit_cuda_async.c's
 * emit_transpose)?  The f32 scan's weights · x_k: the weights come from the
 * scores' accumulator. */
static bool kperm_by_copy(Emitter *E, const IrOp *o) {
    int cd;
    if (E->opt_wgmma_no_kperm_copy || ce_vdt(E, o->args[0]) != DT_TF32) return false;
    int lv = ce_async_operand_load(E, o->args[1], &cd, NULL);
    return lv >= 0 && cd == 1 && ce_vtype(E, o->args[1])->shape[0] % 8 == 0;
}

/* A product whose A the plan reads from registers (emit_cuda_plan.c) with
 * every warp on 16 rows of M: wgmma takes A from registers too, in the same
 * fragments (a warp's 16 rows, mma.sync's m16n8k16 A layout, or m16n8k8's for
 * tf32, unpermuted),
 * and leaves its result in mma.sync's accumulator layout for that split
 * (lay_wgmma with the warp groups over M is lay_mma with the warps over M),
 * so it may meet mma.sync products and element-wise work freely.  B comes
 * from shared memory (cp.async), read once per warp group instead of once
 * per warp. */
static bool plan_reg_a(Emitter *E, const IrOp *o, int *wgm) {
    int wmb, wnb;
    if (!ce_wgmma_may_read_a_registers(E, o) || !ce_plan_reg_a(E, o)) return false;
    if (ce_plan_kperm(E, o) && !kperm_by_copy(E, o)) return false;
    ce_plan_split(E, o, &wmb, &wnb);
    if (wnb != 0 || wmb != E->warpbits) return false;
    *wgm = E->warpbits - 2;
    E->wgmma_kperm[o->result] = ce_plan_kperm(E, o);
    return true;
}

bool ce_wgmma_may_read_a_registers(Emitter *E, const IrOp *o) {
    const Type *at = ce_vtype(E, o->args[0]), *bt = ce_vtype(E, o->args[1]), *t = ce_vtype(E, o->result);
    if (!E->opt_wgmma || E->opt_wgmma_noreg || E->warpbits < 2) return false;
    if (at->rank != 2 || bt->rank != 2 || t->rank != 2 || !ce_mma_on_tensor_cores(at, bt, t)) return false;
    if (!ce_is_half(at->dtype) && at->dtype != DT_TF32) return false;
    int M = at->shape[0], K = at->shape[1], N = bt->shape[1];
    if (M != 16 << E->warpbits || K % ce_mma_kstep(at->dtype)) return false;
    if (N % 8 || N > 256 || N / 2 > WGMMA_MAX_ACC_REGS) return false;
    return operand_load(E, o, 1, !E->opt_wgmma_reg_a_no_transpose) >= 0;
}

bool ce_wgmma_stages_b(Emitter *E, const IrOp *o) {
    int lv = ce_async_operand_load(E, o->args[1], NULL, NULL);
    return lv < 0 || !ce_async_is_load(E, lv);
}

/* Is the wgmma result layout of split (wgm, wgn) the one mma.sync would give
 * `o` by the plan (emit_cuda_plan.c)?  With the warp groups on M alone and
 * one 64-row chunk each, lay_wgmma is lay_mma with the warps on M alone (each
 * warp its 16 rows), so the product may meet other products and element-wise
 * work through one accumulator as an mma.sync product would. */
static bool layout_as_planned(Emitter *E, const IrOp *o, int wgm, int wgn) {
    int wmb, wnb, M = ce_vtype(E, o->args[0])->shape[0];
    ce_plan_split(E, o, &wmb, &wnb);
    return wgn == 0 && M == 64 << wgm && wmb == E->warpbits && wnb == 0;
}

/* Does mma `o` go to wgmma?  If so its split is recorded.  A from shared
 * memory (cp.async), B from there too or, a 16-bit tile computed in the
 * kernel, staged by the product into a swizzled scratch buffer
 * (ce_wgmma_stages_b; ce_emit_mma): one store of B and a barrier either way,
 * as mma.sync's staging, and then the products run asynchronously, B read
 * once per warp group, no ldmatrix. */
static bool plan_mma(Emitter *E, const IrOp *o) {
    const Type *at = ce_vtype(E, o->args[0]), *bt = ce_vtype(E, o->args[1]), *t = ce_vtype(E, o->result);
    if (E->wgmma_barred && E->wgmma_barred[o->result]) return false;
    if (at->rank != 2 || bt->rank != 2 || t->rank != 2 || !ce_mma_on_tensor_cores(at, bt, t)) return false;
    if (!ce_is_half(at->dtype) && at->dtype != DT_TF32) return false;
    int wgm, wgn = 0;
    if (plan_reg_a(E, o, &wgm)) {
        E->wgmma_split[o->result] = (signed char)wgm;
        E->wgmma_reg_a[o->result] = true;
        return true;
    }
    int M = at->shape[0], K = at->shape[1], N = bt->shape[1];
    if (M % 64 || K % ce_mma_kstep(at->dtype) || !choose_split(E, M, N, &wgm, &wgn)) return false;
    bool staged = ce_wgmma_stages_b(E, o);
    if (operand_load(E, o, 0, true) < 0 ||
        (staged ? !(ce_is_half(bt->dtype) || (bt->dtype == DT_TF32 && E->opt_tf32_mixed)) || E->opt_wgmma_nostage
                : operand_load(E, o, 1, true) < 0))
        return false;
    if (!(E->mma_alone && E->mma_alone[o->result]) && !layout_as_planned(E, o, wgm, wgn)) return false;
    E->wgmma_split[o->result] = (signed char)(wgm | wgn << 4);
    return true;
}

bool ce_wgmma_reads_registers(Emitter *E, const IrOp *mma) {
    return E->wgmma_split && E->wgmma_split[mma->result] >= 0 && E->wgmma_reg_a[mma->result];
}

/* The widest swizzle (128, 64 or 32 bytes; 0: none, core matrices) that
 * operand `w` (0: A, 1: B) of wgmma product `o`, stored with dimension `cd`
 * contiguous, may take.  Its rows must split into whole panels of that many
 * bytes and into whole 8-row groups, and an M- or N-major operand's part per
 * warp group (64 rows of A, the group's columns of B) into whole panels,
 * since a descriptor steps from panel to panel at one stride. */
static int swizzle_width(Emitter *E, const IrOp *o, int w, int cd) {
    const Type *t = ce_vtype(E, o->args[w]);
    int size = ce_regsize(t->dtype), row_bytes = t->shape[cd] * size, rows = t->shape[1 - cd];
    bool kmajor = w == 0 ? cd == 1 : cd == 0;
    int group_bytes = kmajor ? row_bytes : w == 0 ? 64 * size : (t->shape[cd] >> (E->wgmma_split[o->result] >> 4)) * size;
    if (rows % 8) return 0;
    for (int width = 128; width >= 32; width /= 2)
        if (row_bytes % width == 0 && group_bytes % width == 0) return width;
    return 0;
}

int ce_wgmma_staged_swizzle(Emitter *E, const IrOp *o, int col_dim) {
    return E->opt_wgmma_noswizzle ? 0 : swizzle_width(E, o, 1, col_dim);
}

/* Mma `o` on wgmma if it qualifies: its shared-memory operands' buffers
 * take wgmma's layouts (a buffer two products read: the narrower swizzle). */
static void plan_operands(Emitter *E, const IrOp *o) {
    if (!plan_mma(E, o)) return;
    for (int w = E->wgmma_reg_a[o->result] ? 1 : 0; w < 2; w++) {
        if (w == 1 && ce_wgmma_stages_b(E, o)) continue;   /* (its layout: ce_wgmma_staged_swizzle) */
        bool round;
        int cd, lv = ce_async_operand_load(E, o->args[w], &cd, &round);
        int width = E->opt_wgmma_noswizzle ? 0 : swizzle_width(E, o, w, cd);
        if (E->async_core[lv] && E->async_swizzle[lv] < width) width = E->async_swizzle[lv];
        E->async_core[lv] = true;
        if (cd == w && ce_vdt(E, o->args[w]) == DT_TF32) {   /* read from its transposed copy */
            E->async_tr_wgmma[lv] = (short)transposed_width(ce_vtype(E, o->args[w])->shape[1 - w]);
            E->async_tr_round[lv] = round && !E->opt_tf32_truncate;
            E->async_tr_kperm[lv] |= w == 1 && E->wgmma_kperm[o->result];
        } else {
            E->async_round[lv] = round && !E->opt_tf32_truncate;
            E->async_read_direct[lv] = true;
        }
        E->async_swizzle[lv] = (short)width;
        /* elements per stored row: wgmma's layouts have no padding */
        E->async_pitch[lv] = ce_vtype(E, o->args[w])->shape[cd];
    }
}

/* Does product `o` read its operand `w` from shared memory on wgmma? */
static bool wgmma_reads_smem(Emitter *E, const IrOp *o, int w) {
    return E->wgmma_split[o->result] >= 0 && !(w == 0 && E->wgmma_reg_a[o->result]);
}

/* The products that read an async buffer, by how (reconcile's tally). */
static void tally_readers(Emitter *E, const IrOp *o) {
    for (int w = 0; w < 2; w++) {
        int lv = ce_async_operand_load(E, o->args[w], NULL, NULL);
        if (lv < 0) continue;
        if (wgmma_reads_smem(E, o, w)) E->wgmma_tally[lv] |= 1;
        else E->wgmma_tally[lv] |= 2;
    }
}

/* Products on wgmma reading a buffer mma.sync reads too (tally 3) that is
 * not in a form both read: barred. */
static void bar_mixed(Emitter *E, const IrOp *o) {
    for (int w = 0; w < 2; w++) {
        int lv = ce_async_operand_load(E, o->args[w], NULL, NULL);
        if (lv < 0 || E->wgmma_tally[lv] != 3 || !wgmma_reads_smem(E, o, w)) continue;   /* (mixed readers only) */
        /* (tf32: mma.sync reads it through the swizzle, element by element or
         * by ldmatrix where it is K-major; but not where wgmma reads a
         * transposed copy: at K = 32 that one is made in place, over what
         * mma.sync would read.  TILEC_TF32_NO_MIXED=1 bars them all) */
        bool tf32_ok = E->opt_tf32_mixed && !E->async_tr_wgmma[lv];
        if (E->async_swizzle[lv] == 0 || (ce_regsize(ce_vdt(E, lv)) != 2 && !tf32_ok)) E->wgmma_barred[o->result] = true;
    }
}

/* Every product reading a k-permuted transposed copy (async_tr_kperm) reads
 * it in that order, or is barred: a reg-A product whose A is k-permuted
 * likewise (wgmma_kperm), or one whose A is the copy and whose B it stages
 * itself, which then stages B's K rows in that order too (the f32 scan's
 * state xᵀ · (B_k ∘ decay), xᵀ read from x_k's copy that weights · x_k
 * reads k-permuted). */
static void bar_kperm(Emitter *E, const IrOp *o) {
    if (E->wgmma_split[o->result] < 0) return;
    for (int w = E->wgmma_reg_a[o->result] ? 1 : 0; w < 2; w++) {
        int cd, lv = ce_async_operand_load(E, o->args[w], &cd, NULL);
        if (lv < 0 || cd != w || !E->async_tr_kperm[lv]) continue;   /* (not its k-permuted copy) */
        if (w == 1 && E->wgmma_reg_a[o->result] && E->wgmma_kperm[o->result]) continue;
        if (w == 0 && ce_wgmma_stages_b(E, o) && !E->opt_no_staged_kperm) {
            E->wgmma_kperm[o->result] = true;
            continue;
        }
        E->wgmma_barred[o->result] = true;
    }
}

/* Is `id` made (element-wise, through views) from a product's result or a
 * local (a carried state: its layout is the accumulator's)? */
static bool from_state(Emitter *E, int id, int depth) {
    const IrOp *d = id >= 0 && depth < 16 ? E->f->values[id].def : NULL;
    if (!d) return false;
    if (d->op == OP_MMA || d->op == OP_LOCAL_GET) return true;
    if (d->op != OP_RESHAPE && d->op != OP_PERMUTE && d->op != OP_BROADCAST && !ir_op_is_elementwise(d->op)) return false;
    for (int a = 0; a < d->nargs; a++)
        if (from_state(E, d->args[a], depth + 1)) return true;
    return false;
}

/* A product staging its B (ce_wgmma_stages_b): the kernel's shared memory
 * aligned for the swizzle; and a tf32 B, which it stores transposed ([N][K],
 * K-major, a float at a time where k-permuted), wanted with the lanes along K
 * (lay_lanes_down): a warp's stores then fill 32 columns of one stored row,
 * where lanes along N put 16 of them in one bank (rows 128 bytes apart; the
 * f32 scan's B ∘ decay with DECAY_ON_B at dstate 128).  Not a B made from a
 * product or a carried local (the scan's state for C·hᵀ): that one is made
 * in the accumulator's layout, and wanting another would convert it. */
static void note_staged(Emitter *E, const IrOp *o) {
    if (E->wgmma_split[o->result] < 0 || E->wgmma_reg_a[o->result] || !ce_wgmma_stages_b(E, o)) return;
    E->swizzled = true;
    const Type *bt = ce_vtype(E, o->args[1]);
    if (bt->dtype == DT_TF32 && bt->shape[0] % 32 == 0 && bt->shape[1] % (4 << E->warpbits) == 0 && !E->opt_no_lanes_down &&
        !from_state(E, o->args[1], 0)) {
        Layout l = lay_lanes_down(bt, E->warpbits, 4);
        ce_plan_want(E, o->args[1], ce_lay_add(E, &l));
    }
}

void ce_wgmma_plan(Emitter *E) {
    int n = E->f->nvalues + 1;
    E->wgmma_split = ARENA_ARRAY(&E->mem, signed char, n);
    E->wgmma_reg_a = ARENA_ARRAY(&E->mem, bool, n);
    E->wgmma_kperm = ARENA_ARRAY(&E->mem, bool, n);
    E->wgmma_barred = ARENA_ARRAY(&E->mem, bool, n);
    E->wgmma_tally = ARENA_ARRAY(&E->mem, unsigned char, n);
    for (int i = 0; i < n; i++) E->wgmma_split[i] = -1, E->wgmma_reg_a[i] = E->wgmma_barred[i] = E->wgmma_kperm[i] = false;
    E->local_wgmma = ARENA_ARRAY(&E->mem, bool, E->f->nlocals + 1);
    for (int i = 0; i <= E->f->nlocals; i++) E->local_wgmma[i] = false;
    if (!E->opt_wgmma) return;
    /* A buffer several products read (emit_cuda_async.c's shared operands)
     * has one form.  wgmma's swizzled form is mma.sync's at the same width
     * (ce_swizzle_offset), so both may read a swizzled buffer (tf32: not
     * one wgmma reads through a transposed copy; bar_mixed); its core
     * matrices no mma.sync reads, so a product on wgmma reading a buffer an
     * mma.sync product reads in such a form is barred from wgmma and the plan
     * made again (each round bars one more product at least, so it ends).
     * Mixed tf32 readers put the f32 scan's scores and C·hᵀ on wgmma: at (8,
     * 4096, 80, 64, 128, 1) 2.18-2.20 -> 1.93-1.96 ms, at dstate 64 with 8
     * groups and 64-token steps 1.77 -> 1.28 (H200, docs/performance.md). */
    bool *core = ARENA_ARRAY(&E->mem, bool, n), *round = ARENA_ARRAY(&E->mem, bool, n);
    short *swizzle = ARENA_ARRAY(&E->mem, short, n);
    int *pitch = ARENA_ARRAY(&E->mem, int, n);
    for (int i = 0; i < n; i++)
        core[i] = E->async_core[i], round[i] = E->async_round[i], swizzle[i] = E->async_swizzle[i], pitch[i] = E->async_pitch[i];
    for (int i = 0; i < n; i++) E->async_tr_wgmma[i] = 0, E->async_read_direct[i] = false, E->async_tr_kperm[i] = false;
    for (int pass = 0; pass < n; pass++) {
        ce_each_mma(E, E->f->body, plan_operands);
        for (int i = 0; i < n; i++) E->wgmma_tally[i] = 0;
        ce_each_mma(E, E->f->body, tally_readers);
        int barred = 0;
        for (int i = 0; i < n; i++) barred += E->wgmma_barred[i];
        ce_each_mma(E, E->f->body, bar_mixed);
        ce_each_mma(E, E->f->body, bar_kperm);
        for (int i = 0; i < n; i++) barred -= E->wgmma_barred[i];
        if (!barred) break;
        for (int i = 0; i < n; i++) {
            E->wgmma_split[i] = -1, E->wgmma_reg_a[i] = false;
            E->async_core[i] = core[i], E->async_round[i] = round[i], E->async_swizzle[i] = swizzle[i];
            E->async_pitch[i] = pitch[i];
            E->async_tr_wgmma[i] = 0, E->async_tr_round[i] = false, E->async_read_direct[i] = false;
            E->async_tr_kperm[i] = false, E->wgmma_kperm[i] = false;
        }
    }
    /* (a staged B lies at the scratch area's start, aligned for the
     * hardware's swizzle; the buffers' own alignment: emit_kernel) */
    ce_each_mma(E, E->f->body, note_staged);
}

int ce_wgmma_layout(Emitter *E, const IrOp *op) {
    if (!E->wgmma_split || E->wgmma_split[op->result] < 0) return -1;
    int s = E->wgmma_split[op->result];
    Layout l = lay_wgmma(ce_vtype(E, op->result), s & 15, s >> 4);
    return ce_lay_add(E, &l);
}

const char *ce_wgmma_inplace(Emitter *E, const IrOp *op, int lay) {
    const IrOp *get = E->f->values[op->args[2]].def;
    if (!get || get->op != OP_LOCAL_GET || E->local_lay[get->local] < 0) return NULL;
    if (!lay_equal(ce_lay(E, E->local_lay[get->local]), ce_lay(E, lay)) || E->nuses[op->result] != 1) return NULL;
    int at, from;
    const IrBlock *blk = ce_block_holding(E->f->body, op, &at);
    if (!blk || ce_block_holding(blk, get, &from) != blk || from > at) return NULL;   /* the read, earlier in this block */
    /* between the read and the product: no write of the local, no control
     * flow; right after the product: the write of it into the local, before
     * anything else touches the local or any control flow */
    for (int i = from + 1; i < blk->nops; i++) {
        const IrOp *o = blk->ops[i];
        bool mine = (o->op == OP_LOCAL_GET || o->op == OP_LOCAL_SET) && o->local == get->local;
        if (i == at) continue;
        if (i > at && o->op == OP_LOCAL_SET && mine && o->args[0] == op->result) {
            E->local_wgmma[get->local] = true;
            return ce_fmt_str(E, "l%d", get->local);
        }
        if (o->body || o->else_body || (mine && (i > at || o->op == OP_LOCAL_SET))) return NULL;
    }
    return NULL;
}

/* How an operand's tile is stored (emit_cuda_async.c's copy_dst): `rows` x
 * `cols` elements of `size` bytes, `cols` contiguous in global memory;
 * kmajor: those are K (A as [M][K], B as [N][K]), else M or N; swizzle: its
 * width in bytes, 0 for core matrices. */
typedef struct {
    int rows, cols, size;
    bool kmajor;
    int swizzle;
} Stored;

/* Byte offset of the 8-row, 16-byte-aligned piece at element (r, c) of a
 * stored tile (r % 8 == 0, c * size % 16 == 0), before any swizzle (the
 * hardware applies that to the addresses it forms). */
static long long stored_offset(const Stored *st, int r, int c) {
    long long cb = (long long)c * st->size, w = st->swizzle;
    if (w) return cb / w * (w * st->rows) + (long long)r * w + cb % w;
    return (long long)(r / 8) * (8LL * st->cols * st->size) + cb / 16 * 128;
}

/* The descriptor's two strides.  No swizzle: lbo between core matrices next
 * to each other along K, sbo along M or N.  Swizzled, K-major: sbo between
 * 8-row groups, lbo unused (an instruction's 32 bytes of K lie in one panel); M- or
 * N-major: lbo between panels along M or N, sbo between 8-row groups along K
 * (PTX ISA, wgmma's canonical layouts). */
static void strides(const Stored *st, long long *lbo, long long *sbo) {
    long long row8 = stored_offset(st, 8, 0), col8 = stored_offset(st, 0, 16 / st->size);
    if (!st->swizzle) {
        *lbo = st->kmajor ? col8 : row8;
        *sbo = st->kmajor ? row8 : col8;
    } else {
        *lbo = st->kmajor ? 16 : (long long)st->swizzle * st->rows;
        *sbo = row8;
    }
}

/* The descriptor's layout field: none, or the swizzle's width. */
static int layout_code(const Stored *st) {
    return st->swizzle == 128 ? 1 : st->swizzle == 64 ? 2 : st->swizzle == 32 ? 3 : 0;
}

/* C expression: the byte offset of a warp group's part of an operand that
 * starts at M or N index `mn` (a multiple of 64 for A, of the group's width
 * for B: whole panels when swizzled, swizzle_width). */
static const char *group_offset(Emitter *E, const Stored *st, const char *mn) {
    if (st->kmajor) return ce_fmt_str(E, "%s / 8 * %lld", mn, stored_offset(st, 8, 0));
    int unit = st->swizzle ? st->swizzle / st->size : 8;
    return ce_fmt_str(E, "%s / %d * %lld", mn, unit, stored_offset(st, 0, unit));
}

/* Offset of the piece at (mn, k) of an operand, in its M or N and K terms. */
static long long operand_offset(const Stored *st, int mn, int k) {
    return st->kmajor ? stored_offset(st, mn, k) : stored_offset(st, k, mn);
}

/* After a wait: the results are in the registers only now, so no read of
 * them may be moved above it. */
static void fence_results(Emitter *E, const char *d, int lay, int nregs) {
    for (int r = 0; r < nregs; r++) ce_out(E, "tile_wgmma_fence_operand(%s);", ce_reg(E, d, lay, r));
}

void ce_wgmma_fence_registers(Emitter *E, const char *d, int lay) { fence_results(E, d, lay, ce_nregs(E, lay)); }

/* A scalar spread over a tile (a product's zeros): filled in registers. */
static bool scalar_broadcast(Emitter *E, const IrOp *o) {
    return o && o->op == OP_BROADCAST && type_numel(ce_vtype(E, o->args[0])) == 1;
}

void ce_emit_wgmma(Emitter *E, const IrOp *op, const SmemOperand *a, const char *areg, int a_lay, const SmemOperand *b,
                   const char *d, int lay, bool inplace) {
    const Type *at = ce_vtype(E, op->args[0]), *bt = ce_vtype(E, op->args[1]);
    int M = at->shape[0], K = at->shape[1], N = bt->shape[1], size = ce_regsize(at->dtype);
    int split = E->wgmma_split[op->result], wgm = split & 15, wgn = split >> 4;
    int cols = N >> wgn, chunks = (M / 64) >> wgm, nb = cols / 8;
    const char *ty = at->dtype == DT_BF16 ? "bf16" : at->dtype == DT_TF32 ? "tf32" : "f16";
    int ks = ce_mma_kstep(at->dtype);
    /* 16-bit operands: either orientation, by the transpose immediates; tf32
     * has none (K-major only, operand_load) */
    const char *trans_ab = at->dtype == DT_TF32 ? "" : ce_fmt_str(E, ", %d, %d", a && !a->kmajor, !b->kmajor);
    const char *trans_b = at->dtype == DT_TF32 ? "" : ce_fmt_str(E, ", %d", !b->kmajor);
    /* stored tiles: A as [M][K] (K-major) or [K][M]; B as [N][K] (K-major) or [K][N] */
    Stored sa = {0};
    if (a) sa = (Stored){a->kmajor ? M : K, a->kmajor ? K : M, size, a->kmajor, a->swizzle};
    Stored sb = {b->kmajor ? N : K, b->kmajor ? K : N, size, b->kmajor, b->swizzle};
    long long a_lbo = 0, a_sbo = 0, b_lbo, b_sbo;
    if (a) strides(&sa, &a_lbo, &a_sbo);
    strides(&sb, &b_lbo, &b_sbo);
    E->used_wgmma = true;
    if (chunks * cols / 2 > E->wgmma_acc_regs) E->wgmma_acc_regs = chunks * cols / 2;
    ce_out(E, "{");
    E->indent++;
    ce_out(E, "/* wgmma: warp group warp >> 2 of %d; its rows from m0, its columns from n0 */", 1 << (wgm + wgn));
    ce_out(E, "const int m0 = ((warp >> 2) >> %d) * %d, n0 = ((warp >> 2) & %d) * %d;", wgn, 64 * chunks, (1 << wgn) - 1, cols);
    ce_out(E, "(void)m0;");
    /* the warp group's part of each operand: rows m0.. of A, columns n0.. of B */
    if (a) {
        ce_out(E, "const unsigned wa = tile_smem_addr(%s), wb = tile_smem_addr(%s);", a->base, b->base);
        ce_out(E, "const unsigned wa0 = wa + %s, wb0 = wb + %s;", group_offset(E, &sa, "m0"), group_offset(E, &sb, "n0"));
        ce_out(E, "const unsigned long long da0 = tile_wgmma_desc(wa0, %lld, %lld, %d);", a_lbo, a_sbo, layout_code(&sa));
    } else {
        ce_out(E, "const unsigned wb0 = tile_smem_addr(%s) + %s;", b->base, group_offset(E, &sb, "n0"));
    }
    /* each piece's descriptor is the base's plus its offset (tile_wgmma_desc_at):
     * one add instead of masks and shifts of a new address per product */
    ce_out(E, "const unsigned long long db0 = tile_wgmma_desc(wb0, %lld, %lld, %d);", b_lbo, b_sbo, layout_code(&sb));
    if (!a) {
        /* A's fragments packed before the fence below, which must order every
         * ordinary write of a register wgmma reads (lay_mma_a, unpermuted:
         * word q of k step s packs registers 8s + 2q and 8s + 2q + 1; tf32:
         * is register 4s + q, already rounded) */
        ce_out(E, "unsigned fa[%d][4];", K / ks);
        for (int s = 0; s < K / ks; s++)
            for (int q = 0; q < 4; q++) {
                if (size == 4) {   /* (k-permuted: the instruction's k = t and t + 4 are A's columns 2t and 2t + 1,
                                    * lay_mma_a's registers 0 and 1 of row g, 2 and 3 of row g + 8) */
                    int r = 4 * s + (E->wgmma_kperm[op->result] ? (q >> 1) + 2 * (q & 1) : q);
                    ce_out(E, "fa[%d][%d] = __float_as_uint(%s);", s, q, ce_reg(E, areg, a_lay, r));
                } else {
                    int lo = s * 8 + 2 * q;
                    ce_out(E, "fa[%d][%d] = (unsigned)%s | ((unsigned)%s << 16);", s, q, ce_reg(E, areg, a_lay, lo),
                           ce_reg(E, areg, a_lay, lo + 1));
                }
                ce_out(E, "tile_wgmma_fence_operand(fa[%d][%d]);", s, q);
            }
    }
    ce_out(E, "tile_wgmma_fence();");
    for (int mc = 0; mc < chunks; mc++)
        for (int k0 = 0; k0 < K; k0 += ks) {
            long long bo = operand_offset(&sb, 0, k0);
            Buf regs = {0};
            for (int j = 0; j < nb; j++)
                for (int c = 0; c < 4; c++)
                    ce_buf_printf(&regs, "%s\"+f\"(%s)", j || c ? ", " : "", ce_reg(E, d, lay, 4 * (mc * nb + j) + c));
            Buf list = {0};
            for (int r = 0; r < cols / 2; r++) ce_buf_printf(&list, "%s%%%d", r ? ", " : "", r);
            const char *bdesc = ce_fmt_str(E, "tile_wgmma_desc_at(db0, %lld)", bo);
            int in = cols / 2;   /* the first input operand's number */
            long long ao = a ? operand_offset(&sa, 64 * mc, k0) : 0;
            if (E->opt.host_entry) {
                /* the emu backend: a call of emu_device.h's, the accumulators by address */
                Buf acc = {0};
                for (int r = 0; r < cols / 2; r++)
                    ce_buf_printf(&acc, "%s&%s", r ? ", " : "", ce_reg(E, d, lay, 4 * mc * nb + r));
                ce_out(E, "{ float *const tile_acc[] = {%s};", acc.p ? acc.p : "");
                if (a)
                    ce_out(E, "  tile_emu_wgmma(\"%s\", %d, tile_acc, (const unsigned *)0, tile_wgmma_desc_at(da0, %lld), %s, %d, %d); }",
                           ty, cols, ao, bdesc, !a->kmajor, !b->kmajor);
                else
                    ce_out(E, "  tile_emu_wgmma(\"%s\", %d, tile_acc, fa[%d], 0ull, %s, 0, %d); }", ty, cols, k0 / ks, bdesc,
                           !b->kmajor);
                free(acc.p);
            } else if (a) {
                /* scale-d is a predicate: true, the product is added to d */
                ce_out(E, "asm volatile(\"{ .reg .pred p; setp.ne.b32 p, %%%d, 0; \"", in + 2);
                ce_out(E, "    \"wgmma.mma_async.sync.aligned.m64n%dk%d.f32.%s.%s {%s}, %%%d, %%%d, p, 1, 1%s; }\"", cols, ks, ty,
                       ty, list.p, in, in + 1, trans_ab);
                ce_out(E, "    : %s", regs.p);
                ce_out(E, "    : \"l\"(tile_wgmma_desc_at(da0, %lld)), \"l\"(%s), \"r\"(1));", ao, bdesc);
            } else {
                ce_out(E, "asm volatile(\"{ .reg .pred p; setp.ne.b32 p, %%%d, 0; \"", in + 5);
                ce_out(E, "    \"wgmma.mma_async.sync.aligned.m64n%dk%d.f32.%s.%s {%s}, {%%%d, %%%d, %%%d, %%%d}, %%%d, p, 1, 1%s; }\"",
                       cols, ks, ty, ty, list.p, in, in + 1, in + 2, in + 3, in + 4, trans_b);
                ce_out(E, "    : %s", regs.p);
                int s = k0 / ks;
                ce_out(E, "    : \"r\"(fa[%d][0]), \"r\"(fa[%d][1]), \"r\"(fa[%d][2]), \"r\"(fa[%d][3]), \"l\"(%s), \"r\"(1));", s, s,
                       s, s, bdesc);
            }
            free(regs.p);
            free(list.p);
        }
    ce_out(E, "tile_wgmma_commit();");
    /* in flight only into the local's own registers, and only directly in
     * the body of the loop whose pipeline allows it (which also makes sure
     * nothing else in the loop touches the local: wgmma_operands_piped) */
    bool top_level = false;
    for (int k = 0; inplace && E->pipe.loop && E->pipe.wgmma_inflight && k < E->pipe.loop->body->nops; k++)
        top_level |= E->pipe.loop->body->ops[k] == op;
    if (top_level) ce_out(E, "tile_wgmma_wait1();   /* the previous iteration's batch is done, this one runs on */");
    else if (a && !inplace && ce_vdt(E, op->result) == DT_F32 && !E->opt_wgmma_nodefer && E->wg_npending < WGMMA_MAX_PENDING) {
        /* both operands in shared memory: waited for by the first op that is
         * not another such product (ce_wgmma_settle), so that products of
         * one step run together.  (An f16 result is converted from the
         * accumulators right after the product: waited for at once.) */
        E->wg_pending[E->wg_npending++] = (WgmmaPending){op->result, d, lay, chunks * cols / 2, ce_wgmma_stages_b(E, op)};
    } else {
        ce_out(E, "tile_wgmma_wait0();");
        fence_results(E, d, lay, chunks * cols / 2);
    }
    E->indent--;
    ce_out(E, "}");
}

/* May op run while the pending products are in flight?  Views of their
 * buffers (nothing emitted), scalars and scalars broadcast, and further
 * products whose operands both lie in cp.async buffers, none reading a
 * pending result: they write no register a pending product writes, and no
 * shared memory one reads (below). */
static bool may_pass(Emitter *E, const IrOp *op) {
    if (!ce_async_in_registers(E, op->result) || op->op == OP_CONST) return true;
    for (int a = 0; a < op->nargs; a++)
        for (int k = 0; k < E->wg_npending; k++)
            if (op->args[a] == E->wg_pending[k].id) return false;
    if (op->op == OP_BROADCAST) return scalar_broadcast(E, op);
    if (op->op != OP_MMA || E->wgmma_split[op->result] < 0 || E->wgmma_reg_a[op->result] || ce_wgmma_stages_b(E, op))
        return false;
    /* its C may be converted to the product's layout through the scratch
     * area, where a pending staged B lies: then only a scalar's broadcast
     * (zeros), which is filled in registers */
    bool scratch_read = false;
    for (int k = 0; k < E->wg_npending; k++) scratch_read |= E->wg_pending[k].staged;
    return !scratch_read || scalar_broadcast(E, E->f->values[op->args[2]].def);
}

void ce_wgmma_settle(Emitter *E, const IrOp *op) {
    if (!E->wg_npending || (op && may_pass(E, op))) return;
    ce_out(E, "tile_wgmma_wait0();   /* the products in flight */");
    for (int k = 0; k < E->wg_npending; k++) fence_results(E, E->wg_pending[k].d, E->wg_pending[k].lay, E->wg_pending[k].nregs);
    E->wg_npending = 0;
}
