/* emit_cuda_async.c: mma operands copied straight from global to shared
 * memory with cp.async, pipelined over the iterations of a loop.
 *
 * A load is *async* when its tile reaches a tensor-core mma operand through
 * nothing but view ops -- reshapes that add or drop unit axes, permutes, a
 * cast to its own storage (bf16 -> bf16; f32 -> tf32, whose rounding moves
 * to the fragment reads, or for wgmma to the buffer: emit_round) -- every
 * value of that chain having that one use, or several, all in the same
 * block (use_kinds: a buffer several products read, each in its own
 * orientation; a 16-bit tile other uses read too is read back into
 * registers for them from that buffer, async_mixed, and on wgmma targets a
 * 32-bit one, mixed32_ok); when the launch says
 * the array is 16-byte aligned with a unit-stride last axis
 * (CUDA_ARRAY_VEC16) and that axis is one of the tile's two non-unit axes;
 * and when out-of-range elements read as zero.  For its products the tile
 * never visits registers: cp.async writes
 * it to shared memory as memory holds it (the contiguous axis innermost;
 * 16-bit tiles swizzled so that both the copies' writes and ldmatrix's
 * reads are free of bank conflicts, mma_swizzle; 32-bit ones in rows padded
 * for the fragment reads) and the mma reads its fragments there, with
 * ldmatrix or ldmatrix.trans depending on which way round the operand is
 * stored, or for tf32 element by element (a tf32 B stored [K][N] that eight
 * warps along M read: from a transposed copy, mark_transposed; one wgmma
 * reads: from a transposed copy in wgmma's layout, made before the stage's
 * barrier when TMA filled it, or in place, ce_async_loop_begin).
 *
 * An async load at the top level of a `for` body is *pipelined* when its
 * indices can be recomputed for a later iteration (pure scalar functions of
 * the induction variable and of values from outside the loop), the loop
 * does not write its array, and the loop holds no loop of its own (one of
 * fewer than 4 iterations known when compiling aside: ce_async_loop_begin
 * says why): STAGES buffers (the load's `latency` + 1,
 * default 3), the copies of the first STAGES - 1 iterations before the loop,
 * and at the top of iteration i: wait for iteration i's copies, one barrier
 * (which also frees the buffer iteration i - 1 read), then issue the copies
 * of iteration i + STAGES - 1.  After the loop every copy is waited for.
 * In a loop that holds a loop, an async load before the inner loop is
 * copied one iteration ahead into its one buffer, at the end of the body
 * (ce_async_prefetch_begin).  Other async loads copy, wait and synchronise
 * where they stand.
 *
 * A loop whose body holds a product on wgmma (emit_cuda_wgmma.c) gets at
 * least 4 stages (unless an operand's load gives its `latency`) within a
 * larger budget (one block per SM keeps the tensor cores busy), and, when
 * every operand of its wgmma products is on its pipeline, copies only
 * STAGES - 2 iterations ahead: each iteration's batch of products stays in
 * flight until the next iteration has issued its own, so the buffer a batch
 * reads is refilled one iteration later.  The operand buffers of wgmma products
 * hold wgmma's layouts (swizzled rows, or core matrices), not padded rows
 * (copy_dst); those of tf32 operands are rounded in place once they land
 * (emit_round).  On sm_90 and newer (CudaEmitOptions.target_tma; on sm_90a
 * with its wgmma products, else with mma.sync's) a pipelined load whose
 * buffer the tensor memory accelerator can fill is copied by it instead: one
 * thread's instruction per box, completing on the stage's mbarrier (plan_tma,
 * issue_tma).
 *
 * The other loads at the top level of such a loop body (one that holds an
 * mma) ride the same pipeline when they qualify the same way (aligned,
 * zero padding, at most two non-unit axes, one of them contiguous), all of
 * them or none: none when one tile is over CE_READBACK_MAX_BYTES (in a short
 * wgmma pipeline the largest leave it where their buffers would hold the
 * kernel to 1 block per SM: drop_costly_readbacks).  Riding it,
 * they are copied with cp.async into their own buffers ahead of time, then,
 * where the load stands, read from this iteration's buffer into registers
 * (16-byte shared-memory loads), so no iteration waits on global memory.
 * Otherwise they load straight into registers.  The rule is measured, on the
 * H200 (Mamba-2 anchor, 2026-12-01): compute_out's 128 x 64 f32 scores (32 KB
 * a step) 1.27 ms straight to registers, 1.87 ms with only its small vectors
 * riding, about 2 ms all riding; its tf32 kernel's 64 x 64 scores (16 KB)
 * 2.03 ms riding, 2.58 / 2.27 ms not; fwd_pass_state's 4 KB tiles 0.47 ms
 * riding, 0.63-0.69 ms not.
 *
 * Shared memory: async buffers sit after the scratch area that conversions
 * and register-staged operands use (`tile_async` in the kernel); they are
 * allocated like a stack: a block's buffers are free again when it ends.
 * Prefix: ce_async_ (the few functions emit_cuda.c and emit_cuda_ops.c call). */
#include "emit_cuda_int.h"

#include <stdlib.h>
#include <string.h>

enum { ASYNC_NONE, ASYNC_LOAD, ASYNC_VIEW };

#define ASYNC_MAX_STAGES 8
/* Pipelines stop growing (fewer stages, then none) at this much shared memory
 * for all async buffers in use: more would cost occupancy than it buys. */
#define ASYNC_BUDGET (100 * 1024)
/* ... and for a loop whose products run on wgmma: one block per SM holds
 * the tensor cores busy, so its pipeline may take most of shared memory */
#define WGMMA_ASYNC_BUDGET (224 * 1024)   /* of the 227 KB a block may opt in to */
#define WGMMA_MIN_STAGES 4

/* ---- analysis (once per kernel) ------------------------------------------------ */

/* Geometry of a load's tile: its contiguous view axis (the array's last
 * axis) and the other non-unit view axis (-1 when there is none: one row).
 * False when the tile has more non-unit axes or the contiguous one is unit. */
static bool load_axes(const IrOp *ld, const Type *t, int *row_axis, int *col_axis) {
    int col = -1, row = -1, nonunit = 0;
    for (int d = 0; d < t->rank; d++) {
        int a = ld->nints == t->rank ? ld->ints[d] : d;
        if (a == t->rank - 1) col = d;
    }
    for (int d = 0; d < t->rank; d++) {
        if (t->shape[d] == 1) continue;
        nonunit++;
        if (d != col) row = d;
    }
    if (nonunit > 2 || col < 0 || t->shape[col] == 1 || (nonunit == 2 && row < 0)) return false;
    *row_axis = row;
    *col_axis = col;
    return true;
}

static int tile_rows(const Type *t, int row) { return row >= 0 ? t->shape[row] : 1; }

/* Can cp.async copy this load's tile (16-byte pieces, zero padding)? */
static bool load_qualifies(Emitter *E, const IrOp *ld) {
    const Type *t = ce_vtype(E, ld->result);
    int s = ce_regsize(t->dtype), row, col;
    if (ld->flag != PAD_ZERO || (s != 2 && s != 4)) return false;
    if (!(ce_array_flags(E, ld->array) & CUDA_ARRAY_VEC16)) return false;
    if (!load_axes(ld, t, &row, &col)) return false;
    return (int64_t)t->shape[col] * s % 16 == 0;
}

bool ce_async_view_op(const IrFunc *f, const IrOp *o) {
    if (o->op == OP_RESHAPE || o->op == OP_PERMUTE) return true;
    if (o->op != OP_CAST) return false;
    DType from = f->values[o->args[0]].type.dtype, to = f->values[o->result].type.dtype;
    return from == to || (from == DT_F32 && to == DT_TF32);
}

static bool is_view_op(Emitter *E, const IrOp *o) { return ce_async_view_op(E->f, o); }

/* Does block `blk` (or one it holds) read value `v`? */
static bool block_reads(const IrBlock *blk, int v) {
    for (int i = 0; blk && i < blk->nops; i++) {
        const IrOp *o = blk->ops[i];
        for (int a = 0; a < o->nargs; a++)
            if (o->args[a] == v) return true;
        if (block_reads(o->body, v) || block_reads(o->else_body, v)) return true;
    }
    return false;
}

/* Is mma `o` a 2-D product on the tensor cores (its operands read from a
 * buffer as they lie), not one of exact FMAs? */
static bool on_tensor_cores(Emitter *E, const IrOp *o) {
    const Type *at = ce_vtype(E, o->args[0]), *bt = ce_vtype(E, o->args[1]), *rt = ce_vtype(E, o->result);
    return rt->rank == 2 && ce_mma_on_tensor_cores(at, bt, rt);
}

/* The uses of `v`, defined in blk: *ok stays true while every one is in blk
 * itself; *mixed is set when one does not go on to A or B of a tensor-core
 * product through views only (it reads registers). */
static void uses_feed_operands(Emitter *E, const IrBlock *blk, int v, bool *ok, bool *mixed, int depth) {
    for (int i = 0; i < blk->nops && *ok; i++) {
        const IrOp *o = blk->ops[i];
        if (block_reads(o->body, v) || block_reads(o->else_body, v)) *ok = false;
        for (int a = 0; a < o->nargs && *ok; a++) {
            if (o->args[a] != v) continue;
            if (o->op == OP_MMA && a < 2) {
                if (!on_tensor_cores(E, o)) *mixed = true;
            } else if (is_view_op(E, o) && depth < 8) {
                uses_feed_operands(E, blk, o->result, ok, mixed, depth + 1);
            } else {
                *mixed = true;
            }
        }
    }
}

/* How the uses of value `v` of an operand's chain go on.  *shared: may it
 * have more than one use?  Yes when they are all in the block that makes
 * `v`: the tile is then copied once and every product reads its fragments
 * (or wgmma its descriptors) from the same buffer, each in its own
 * orientation (Mamba-2's ssd_scan reads B_k as Bᵀ for its scores and as B
 * for its state, at each step).  Not for products in a loop below the load:
 * a loop-invariant A operand is read into registers once instead
 * (emit_cuda_plan.c), as compute_out's C_m is, whose buffer would cost it
 * blocks per SM.  *mixed: do some of them read it in registers (not through
 * views into products)?  Then the chain's values up to it are made in
 * registers too, read back from the buffer (async_mixed: ssd_scan's x_k, B
 * of one product and scaled for another).  One use (the next op of the
 * chain): shared, not mixed. */
static void use_kinds(Emitter *E, int v, bool *shared, bool *mixed) {
    *shared = true, *mixed = false;
    if (E->nuses[v] == 1) return;
    const IrBlock *blk = ce_block_holding(E->f->body, E->f->values[v].def, NULL);
    *shared = blk != NULL;
    if (*shared) uses_feed_operands(E, blk, v, shared, mixed, 0);
}

static bool shared_operand(Emitter *E, int v) {
    bool shared, mixed;
    use_kinds(E, v, &shared, &mixed);
    return shared;
}

static bool read_in_registers(Emitter *E, int v) {
    bool shared, mixed;
    use_kinds(E, v, &shared, &mixed);
    return mixed;
}

/* Does some use of `v` (through views) that is not an operand of a
 * tensor-core product read an f32 value, not a tf32 one (the exact value:
 * such a buffer must not be rounded in place, ce_async_exact_reads)?  An
 * exact f32 product's operand is such a use. */
static bool reads_exact(Emitter *E, const IrBlock *blk, int v, int depth) {
    for (int i = 0; blk && i < blk->nops; i++) {
        const IrOp *o = blk->ops[i];
        for (int a = 0; a < o->nargs; a++) {
            if (o->args[a] != v || (o->op == OP_MMA && a < 2 && on_tensor_cores(E, o))) continue;
            if (is_view_op(E, o) && depth < 8) {
                if (reads_exact(E, blk, o->result, depth + 1)) return true;
            } else if (ce_vdt(E, v) != DT_TF32) {
                return true;
            }
        }
    }
    return false;
}

bool ce_async_mixed32_used(Emitter *E) {
    for (int i = 0; E->async_kind && i <= E->f->nvalues; i++)
        if (E->async_kind[i] == ASYNC_LOAD && E->async_mixed[i] && ce_regsize(ce_vdt(E, i)) == 4) return true;
    return false;
}

bool ce_async_exact_reads(Emitter *E, int lv) {
    if (!E->async_mixed || !E->async_mixed[lv] || ce_regsize(ce_vdt(E, lv)) == 2) return false;
    return reads_exact(E, ce_block_holding(E->f->body, E->f->values[lv].def, NULL), lv, 0);
}

/* May a 32-bit tile that other uses read in registers stay an mma operand's
 * async load (read back for them, async_mixed)?  On wgmma targets: its
 * products there read it through transposed copies, or from a buffer
 * rounded in place that the other uses read through a cast to tf32 too
 * (ce_async_exact_reads keeps the others off wgmma and in-place rounding).
 * On mma.sync alone its fragments would be read a float at a time, or its
 * buffer rounded under the other uses: ssd_scan's tf32 x_k took 2.37 ->
 * 3.08 ms at the anchor so (H200). */
static bool mixed32_ok(Emitter *E) { return E->opt_wgmma && !E->opt_no_mixed32; }

/* The ops from the load to operand `id` (load first); n = 0 when `id` is not
 * the end of a qualifying chain.  Every value of it has one use, or only
 * uses that are the operands of products through views (shared_operand). */
static int chain_of(Emitter *E, int id, const IrOp **ops, int max) {
    int n = 0, v = id;
    for (;;) {
        const IrOp *d = E->f->values[v].def;
        if (!d || !shared_operand(E, v) || n == max) return 0;
        ops[n++] = d;
        if (d->op == OP_LOAD) break;
        if (!is_view_op(E, d)) return 0;
        v = d->args[0];
    }
    if (!load_qualifies(E, ops[n - 1])) return 0;
    /* a 32-bit tile other uses read in registers stays a plain load, but
     * where mixed32_ok */
    for (int i = 0; i < n && ce_regsize(ce_vdt(E, ops[n - 1]->result)) != 2 && !mixed32_ok(E); i++)
        if (read_in_registers(E, ops[i]->result)) return 0;
    for (int i = 0; i < n / 2; i++) {   /* load first */
        const IrOp *x = ops[i];
        ops[i] = ops[n - 1 - i];
        ops[n - 1 - i] = x;
    }
    return n;
}

/* Follows the tile's row and column axes through the chain to the operand:
 * *col_dim is the operand dimension (0 or 1) that is contiguous in shared
 * memory, *round whether a cast to tf32 is on the way.  False when a
 * reshape does more than add or drop unit axes. */
static bool chain_geometry(Emitter *E, const IrOp *const *ops, int n, int *col_dim, bool *round) {
    const IrOp *ld = ops[0];
    int row, col;
    if (!load_axes(ld, ce_vtype(E, ld->result), &row, &col) || row < 0) return false;
    *round = false;
    for (int i = 1; i < n; i++) {
        const IrOp *o = ops[i];
        const Type *t = ce_vtype(E, o->result), *x = ce_vtype(E, o->args[0]);
        if (o->op == OP_CAST) {
            *round |= t->dtype == DT_TF32 && x->dtype != DT_TF32;
        } else if (o->op == OP_PERMUTE) {
            int nr = -1, nc = -1;
            for (int d = 0; d < t->rank; d++) {
                if (o->ints[d] == row) nr = d;
                if (o->ints[d] == col) nc = d;
            }
            if (nr < 0 || nc < 0) return false;
            row = nr, col = nc;
        } else {   /* RESHAPE: the non-unit extents must stay, in order */
            int lo = row < col ? row : col, hi = row < col ? col : row, q[2], nq = 0;
            for (int d = 0; d < t->rank; d++)
                if (t->shape[d] != 1) {
                    if (nq == 2) return false;
                    q[nq++] = d;
                }
            if (nq != 2 || t->shape[q[0]] != x->shape[lo] || t->shape[q[1]] != x->shape[hi]) return false;
            bool row_first = row < col;
            row = row_first ? q[0] : q[1];
            col = row_first ? q[1] : q[0];
        }
    }
    const Type *ot = ce_vtype(E, ops[n - 1]->result);
    if (ot->rank != 2 || (col != 0 && col != 1)) return false;
    *col_dim = col;
    return true;
}

/* Shared-memory row pitch (elements) of an async tile with `cols` columns,
 * read as operand `which` (0: A, 1: B) with `col_dim` contiguous. */
static int async_pitch(int cols, int size, int which, int col_dim) {
    if (size == 2)   /* ldmatrix: 8 rows of 16 bytes must hit 8 different bank groups */
        return (cols / 8) % 2 == 0 ? cols + 8 : cols;
    /* tf32 fragments: k-major ones by ldmatrix (emit_cuda_ops.c; 8 rows of 16
     * bytes in 8 bank groups) or element by element along rows, which rows 4
     * banks apart keep free of conflicts; the others element by element down
     * columns (rows q and q + 4 of a k step), which want rows 8 banks apart */
    bool kmajor = which == 0 ? col_dim == 1 : col_dim == 0;
    int target = kmajor ? 4 : 8;
    return cols + ((target - cols % 32) % 32 + 32) % 32;
}

/* The swizzle (128, 64 or 32 bytes; 0: padded rows) of a 16-bit mma.sync
 * operand's buffer: the widest its rows split into, in whole 8-row groups.
 * Padded rows keep ldmatrix's reads free of bank conflicts but not
 * cp.async's 16-byte writes: 8 rows of 80 bytes (a 128 x 32 bf16 tile)
 * took 15 shared-memory wavefronts a warp instead of 4, and the shared
 * memory pipe, not the tensor cores, bounded the matmul (Nsight, H200,
 * docs/performance.md).  The swizzle wgmma reads (ce_swizzle_offset) is
 * conflict-free for both. */
static int mma_swizzle(Emitter *E, const Type *t, int row, int col) {
    int s = ce_regsize(t->dtype), row_bytes = t->shape[col] * s;
    if (s != 2 || E->opt_mma_noswizzle || tile_rows(t, row) % 8) return 0;
    for (int w = 128; w >= 32; w /= 2)
        if (row_bytes % w == 0) return w;
    return 0;
}

/* Is `o` a tf32 product whose A, stored MN-major (its tile's contiguous axis
 * is M), is read into registers from its buffer as it landed (rounded there,
 * nothing written back) rather than copied transposed in shared memory each
 * iteration?  Only the products emit_cuda_rewrite.c transposed
 * (TILEC_TRANSPOSED_PRODUCTS=1), until the form is timed; its goes_transposed
 * took only wgmma-sized tf32 products (N = 16 << warpbits, 4+ warps) whose
 * B tile fits the read-back bound.  What is checked here is what depends on
 * the async facts: both chains still reach a shared-memory load, A
 * MN-major and B K-major (chain_of may refuse a chain goes_transposed's
 * chain_load followed: ce_rewrite_held then emits the kernel as written). */
static bool tf32_a_by_registers(Emitter *E, const IrOp *o) {
    if (!E->transposed || !E->transposed[o->result]) return false;
    const IrOp *ops[16];
    int col_a, col_b, n = chain_of(E, o->args[0], ops, 16);
    bool round;
    if (!n || !chain_geometry(E, ops, n, &col_a, &round) || col_a != 0) return false;
    n = chain_of(E, o->args[1], ops, 16);
    return n && chain_geometry(E, ops, n, &col_b, &round) && col_b == 0;   /* B K-major */
}

/* The loads that reach mma `o`'s operands through views and casts: async. */
static void mark_operands(Emitter *E, const IrOp *o) {
    if (!on_tensor_cores(E, o)) return;
    bool a_by_registers = E->mma_tf32_a_regs[o->result] = tf32_a_by_registers(E, o);
    for (int w = 0; w < 2; w++) {
        const IrOp *ops[16];
        int n = chain_of(E, o->args[w], ops, 16), col_dim;
        bool round;
        if (!n || !chain_geometry(E, ops, n, &col_dim, &round)) continue;
        if (w == 0 && a_by_registers) {
            /* read back (the pipeline's rule) one fragment element at a time:
             * lane (g, t) reads row k = t (+ 4), column m = g (+ 8), so rows
             * 8 banks apart keep a warp's 32 reads in 32 banks */
            int row, col, cols;
            load_axes(ops[0], ce_vtype(E, ops[0]->result), &row, &col);
            cols = ce_vtype(E, ops[0]->result)->shape[col];
            E->async_pitch[ops[0]->result] = cols + ((8 - cols % 32) % 32 + 32) % 32;
            continue;
        }
        int lv = ops[0]->result, row, col;
        const Type *lt = ce_vtype(E, lv);
        load_axes(ops[0], lt, &row, &col);
        E->async_kind[lv] = ASYNC_LOAD;
        E->async_pitch[lv] = async_pitch(lt->shape[col], ce_regsize(lt->dtype), w, col_dim);
        int sw = mma_swizzle(E, lt, row, col);
        if (sw) {   /* no padding: the swizzle keeps both sides free of bank conflicts */
            E->async_swizzle[lv] = (short)sw;
            E->async_pitch[lv] = lt->shape[col];
        }
        for (int k = 1; k < n; k++) E->async_kind[ops[k]->result] = ASYNC_VIEW;
        /* values up to the last one read in registers are made in registers */
        int last = -1;
        for (int k = 0; k < n; k++)
            if (read_in_registers(E, ops[k]->result)) last = k;
        for (int k = 0; k <= last; k++) E->async_mixed[ops[k]->result] = true;
    }
}

/* The load at the root of async value v's chain of views. */
static int root_load(Emitter *E, int v) {
    while (E->async_kind[v] == ASYNC_VIEW) v = E->f->values[v].def->args[0];
    return v;
}

/* Does op `o` read async value `a` (its argument `at`) from the buffer: a
 * view marked with it, or a product whose operand chain qualifies? */
static bool reads_buffer(Emitter *E, const IrOp *o, int at) {
    if (E->async_kind[o->result] == ASYNC_VIEW && !E->async_mixed[o->result]) return true;
    return o->op == OP_MMA && at < 2 && ce_async_operand_load(E, o->args[at], NULL, NULL) >= 0;
}

/* Every use of an async value that reads registers must find them: uses_feed_operands
 * counts a product as a reader of the buffer, but that product's own chain
 * may not qualify (a reshape that merges axes, chain_geometry).  Such a
 * value's chain is made in registers too (async_mixed: 16-bit, and 32-bit
 * where mixed32_ok), or its load becomes a plain one (32-bit elsewhere).
 * True when a mark changed (run again). */
static bool settle_readers(Emitter *E, const IrBlock *blk) {
    bool changed = false;
    for (int i = 0; blk && i < blk->nops; i++) {
        const IrOp *o = blk->ops[i];
        for (int a = 0; a < o->nargs; a++) {
            int v = o->args[a];
            if (v < 0 || E->async_kind[v] == ASYNC_NONE || E->async_mixed[v] || reads_buffer(E, o, a)) continue;
            int lv = root_load(E, v);
            if (ce_regsize(ce_vdt(E, lv)) == 2 || mixed32_ok(E)) {
                for (int w = v;; w = E->f->values[w].def->args[0]) {
                    E->async_mixed[w] = true;
                    if (w == lv) break;
                }
            } else {   /* (the views found first: clearing one cuts the chains through it) */
                bool *mine = ARENA_ARRAY(&E->mem, bool, E->f->nvalues + 1);
                for (int w = 0; w < E->f->nvalues; w++) mine[w] = E->async_kind[w] == ASYNC_VIEW && root_load(E, w) == lv;
                for (int w = 0; w < E->f->nvalues; w++)
                    if (mine[w]) E->async_kind[w] = ASYNC_NONE;
                E->async_kind[lv] = ASYNC_NONE;
            }
            changed = true;
        }
        changed |= settle_readers(E, o->body);
        changed |= settle_readers(E, o->else_body);
    }
    return changed;
}

void ce_async_analyse(Emitter *E) {
    int n = E->f->nvalues + 1;
    E->nuses = ARENA_ARRAY(&E->mem, int, n);
    E->async_kind = ARENA_ARRAY(&E->mem, signed char, n);
    E->async_pitch = ARENA_ARRAY(&E->mem, int, n);
    E->async_ptr = ARENA_ARRAY(&E->mem, const char *, n);
    E->async_stages = ARENA_ARRAY(&E->mem, int, n);
    E->async_core = ARENA_ARRAY(&E->mem, bool, n);
    E->async_round = ARENA_ARRAY(&E->mem, bool, n);
    E->async_swizzle = ARENA_ARRAY(&E->mem, short, n);
    E->async_tr_ld = ARENA_ARRAY(&E->mem, int, n);
    E->async_tr_off = ARENA_ARRAY(&E->mem, int64_t, n);
    E->async_tr_round = ARENA_ARRAY(&E->mem, bool, n);
    E->async_tr_kperm = ARENA_ARRAY(&E->mem, bool, n);
    E->async_tr_wgmma = ARENA_ARRAY(&E->mem, short, n);
    E->async_tr_ptr = ARENA_ARRAY(&E->mem, const char *, n);
    E->async_read_direct = ARENA_ARRAY(&E->mem, bool, n);
    E->mma_tf32_a_regs = ARENA_ARRAY(&E->mem, bool, n);
    E->readback_loop = ARENA_ARRAY(&E->mem, const IrOp *, n);
    E->async_mixed = ARENA_ARRAY(&E->mem, bool, n);
    for (int i = 0; i < n; i++) {
        E->async_mixed[i] = false;
        E->async_core[i] = false;
        E->async_round[i] = false;
        E->async_swizzle[i] = 0;
        E->async_tr_ld[i] = 0;
        E->async_tr_off[i] = 0;
        E->async_tr_round[i] = false;
        E->async_tr_kperm[i] = false;
        E->async_tr_wgmma[i] = 0;
        E->async_tr_ptr[i] = NULL;
        E->async_read_direct[i] = false;
        E->mma_tf32_a_regs[i] = false;
        E->readback_loop[i] = NULL;
        E->async_kind[i] = ASYNC_NONE;
        E->async_pitch[i] = 0;
        E->async_ptr[i] = NULL;
        E->async_stages[i] = 0;
    }
    E->swizzled = false;   /* (emit_kernel, once the plans are made: ce_async_swizzle_aligned) */
    ir_count_uses(E->f, E->nuses, NULL);
    ce_each_mma(E, E->f->body, mark_operands);
    while (settle_readers(E, E->f->body)) {}
}

bool ce_async_tf32_a_by_registers(Emitter *E, const IrOp *o) {
    return E->mma_tf32_a_regs && o->result >= 0 && E->mma_tf32_a_regs[o->result];
}
bool ce_async_is_view(Emitter *E, int v) { return v >= 0 && E->async_kind && E->async_kind[v] == ASYNC_VIEW; }
bool ce_async_in_registers(Emitter *E, int v) { return !ce_async_is_view(E, v) || E->async_mixed[v]; }
bool ce_async_is_load(Emitter *E, int v) { return v >= 0 && E->async_kind && E->async_kind[v] == ASYNC_LOAD; }

/* ---- shared memory ----------------------------------------------------------------- */

/* The rows of async load `lv`'s tile, and its columns (the contiguous axis). */
static void tile_extent(Emitter *E, int lv, int *rows, int *cols) {
    const Type *t = ce_vtype(E, lv);
    int row, col;
    load_axes(E->f->values[lv].def, t, &row, &col);
    *rows = tile_rows(t, row);
    *cols = t->shape[col];
}

static int64_t tile_bytes(Emitter *E, int lv) {
    int rows, cols;
    tile_extent(E, lv, &rows, &cols);
    return ((int64_t)rows * E->async_pitch[lv] * ce_regsize(ce_vdt(E, lv)) + 127) / 128 * 128;
}

/* May TMA fill mma.sync's swizzled buffer of load `lv` (opt_mma_tma, its
 * array with a tensor map)?  Then it starts at the swizzle's alignment. */
static bool mma_tma_buffer(const Emitter *E, int lv) {
    const IrOp *ld = E->f->values[lv].def;
    return E->opt_mma_tma && E->async_swizzle[lv] && !E->async_core[lv] && ld && ld->op == OP_LOAD &&
           (ce_array_flags(E, ld->array) & CUDA_ARRAY_TMA);
}

/* Do load `lv`'s buffers start at the swizzle's alignment?  Where the
 * hardware computes the swizzle from the address: wgmma's swizzled buffers,
 * and a transposed copy for wgmma, swizzled whatever its load's buffer is;
 * mma.sync's swizzle is computed from the row, which is the same once its
 * buffer starts so: where TMA may fill it (mma_tma_buffer). */
bool ce_async_swizzle_aligned(const Emitter *E, int lv) {
    return (E->async_swizzle[lv] && E->async_core[lv]) || mma_tma_buffer(E, lv) || E->async_tr_wgmma[lv];
}

/* Where load `lv`'s buffers may start at or after byte `top`: at 128-byte
 * alignment, or the swizzle's (ce_async_swizzle_aligned; tile_async itself
 * is aligned so, emit_cuda.c). */
static int64_t buffer_start(const Emitter *E, int lv, int64_t top) {
    int64_t align = ce_async_swizzle_aligned(E, lv) ? SWIZZLE_ALIGN : 128;
    return (top + align - 1) / align * align;
}

/* Room for load `lv`'s buffers, `bytes` of them. */
static int64_t async_alloc(Emitter *E, int lv, int64_t bytes) {
    int64_t off = buffer_start(E, lv, E->async_top);
    E->async_top = off + bytes;
    if (E->async_top > E->async_peak) E->async_peak = E->async_top;
    return off;
}

/* Bytes of one transposed copy for wgmma of load `lv`'s tile (async_tr_wgmma):
 * N x K floats, whole swizzle patterns, so that copies side by side keep
 * the alignment the hardware's swizzle is computed from. */
static int64_t tr_bytes(Emitter *E, int lv) {
    int K, N;
    tile_extent(E, lv, &K, &N);
    int64_t bytes = (int64_t)K * N * 4;
    return (bytes + SWIZZLE_ALIGN - 1) / SWIZZLE_ALIGN * SWIZZLE_ALIGN;
}

/* Room for `copies` transposed copies for wgmma of load `lv`'s tile, a
 * pipelined one (none when wgmma reads it as it lands; 0: transposed in
 * its own stage buffer). */
static void tr_alloc(Emitter *E, int lv, int copies) {
    if (!E->async_tr_wgmma[lv]) return;
    int K, N;
    tile_extent(E, lv, &K, &N);
    E->async_tr_ld[lv] = K;   /* (rows of the copy hold K floats) */
    E->async_tr_off[lv] = copies ? async_alloc(E, lv, copies * tr_bytes(E, lv)) : 0;
}

/* May load `lv`'s tile, a tf32 operand stored MN-major ([K][N], or [K][M])
 * that wgmma reads transposed (async_tr_wgmma), be transposed in its own stage
 * buffer (emit_transpose_in_place)?  When K is 32 (a row of the copy is one
 * 128-byte swizzle panel), its buffer is swizzled 128 bytes wide too, no
 * product reads it where it lands, nor is it read back for other uses
 * (async_mixed: they would read the transposed, rounded bytes), and its copy
 * is not k-permuted. */
static bool tr_in_place(Emitter *E, int lv) {
    int K, N;
    tile_extent(E, lv, &K, &N);
    return E->async_tr_wgmma[lv] == 128 && E->async_core[lv] && E->async_swizzle[lv] == 128 && K == 32 &&
           !E->async_read_direct[lv] && !E->async_tr_kperm[lv] && !E->async_mixed[lv] && !E->opt_no_transpose_in_place;
}

/* ---- the copies ---------------------------------------------------------------------- */

/* The forms a buffer's tile takes (copy_dst). */
typedef enum { FORM_ROWS, FORM_CORE, FORM_SWIZZLE } BufForm;

static BufForm buf_form(const Emitter *E, int lv) {
    return E->async_swizzle[lv] ? FORM_SWIZZLE : E->async_core[lv] ? FORM_CORE : FORM_ROWS;
}

const char *ce_swizzle_offset(Emitter *E, int w, const char *r, const char *k, int rows, int s) {
    int wl = w == 128 ? 7 : w == 64 ? 6 : 5;   /* log2 w */
    return ce_fmt_str(E, "(((%s) * %d >> %d) * %d + (%s) * %d + ((((%s) * %d >> 4) ^ ((%s) * %d >> 7)) & %d) * 16)", k, s, wl,
                      rows * w, r, w, k, s, r, w, w / 16 - 1);
}

const char *ce_core_offset(Emitter *E, const char *r, const char *k, int cols, int s) {
    return ce_fmt_str(E, "((%s >> 3) * %d + ((%s) * %d >> 4) * 128 + (%s & 7) * 16)", r, 8 * cols * s, k, s, r);
}

/* Byte offset in a tile's buffer of the 16-byte piece at row `r`, element
 * column `k` (C expressions) of a tile of `rows` x `cols` `s`-byte elements:
 *   FORM_ROWS: padded rows of `pitch` elements;
 *   FORM_CORE: core matrices (wgmma's no-swizzle layout, emit_cuda_wgmma.c):
 *     each 8 rows x 16 bytes stored as 128 contiguous bytes, those of an
 *     8-row group side by side;
 *   FORM_SWIZZLE: the swizzle of width w (32, 64 or 128 bytes) that wgmma
 *     reads (ce_swizzle_offset; for 128: p ^ (r % 8)): the 16-byte writes of
 *     a quarter warp, 8 pieces of a row or the same piece of 8 rows, fall in
 *     8 bank groups, and so do ldmatrix's reads of 8 rows' same piece. */
static const char *copy_dst(Emitter *E, BufForm form, int w, const char *r, const char *k, int rows, int cols, int pitch,
                            int s) {
    switch (form) {
    case FORM_ROWS: return ce_fmt_str(E, "(%s * %d + %s) * %d", r, pitch, k, s);
    case FORM_CORE: return ce_core_offset(E, r, k, cols, s);
    case FORM_SWIZZLE: return ce_swizzle_offset(E, w, r, k, rows, s);
    }
    return "0";
}

/* cp.async of load `ld`'s tile into the buffer at byte offset `dst` (a C
 * expression relative to tile_async), indices from the values' current homes.
 * piped: a pipeline's copy (ahead of the iteration that reads it). */
static void issue_copy(Emitter *E, const IrOp *ld, const char *dst, bool piped) {
    const Type *t = ce_vtype(E, ld->result);
    int s = ce_regsize(t->dtype), row, col;
    load_axes(ld, t, &row, &col);
    int arr = ld->array, ve = 16 / s;
    int cols = t->shape[col], rows = tile_rows(t, row), pitch = E->async_pitch[ld->result];
    int cpr = cols / ve, total = rows * cpr, reps = (total + E->threads - 1) / E->threads;
    BufForm form = buf_form(E, ld->result);
    int w = E->async_swizzle[ld->result];
    const char *OT = ce_off_type(E, arr);
    int axis[TILE_MAX_RANK];   /* view axis -> array axis */
    for (int d = 0; d < t->rank; d++) axis[d] = ld->nints == t->rank ? ld->ints[d] : d;
    ce_out(E, "{");
    E->indent++;
    const char *b[TILE_MAX_RANK];
    for (int d = 0; d < t->rank; d++) {
        b[d] = ce_fresh(E, "b");
        ce_out(E, "const long long %s = (long long)%s * %d;", b[d], ce_vreg(E, ld->args[d], 0), t->shape[d]);
    }
    const char *inb, *off;
    /* Fast path, when the whole tile lies inside the array (the common
     * case): one base pointer per thread, then a constant step per copy. */
    if (E->threads % cpr == 0) {
        Buf fb = {0};
        ce_buf_printf(&fb, "true");
        for (int d = 0; d < t->rank; d++) {
            int ext = d == row ? rows : d == col ? cols : 1;
            ce_buf_printf(&fb, " && %s >= 0 && %s + %d <= (long long)p%d_n%d", b[d], b[d], ext, arr, axis[d]);
        }
        ce_out(E, "if (%s) {", fb.p);
        free(fb.p);
        E->indent++;
        ce_elem_at(E, arr, t->rank, axis, b, &inb, &off);   /* the tile's first element */
        int rows_per_rep = E->threads / cpr;
        /* core matrices: 8 consecutive threads take the 8 rows of one, so that their
         * 16-byte writes fill 128 contiguous bytes (measured 7% faster than core
         * matrices padded to 144 bytes with copies in row order, 2026-12-02).
         * Otherwise consecutive threads take consecutive pieces of a row, so
         * that a warp reads whole 128-byte lines */
        if (form == FORM_CORE && E->threads % (8 * cpr) == 0 && !E->async_round[ld->result])
            ce_out(E, "const int r0 = ((int)threadIdx.x / %d) * 8 + ((int)threadIdx.x & 7), k0 = (((int)threadIdx.x >> 3) %% %d) * %d;",
                8 * cpr, cpr, ve);
        else
            ce_out(E, "const int r0 = (int)threadIdx.x / %d, k0 = ((int)threadIdx.x %% %d) * %d;", cpr, cpr, ve);
        if (row >= 0) {
            ce_out(E, "const %s *src = p%d + (%s + (%s)r0 * (%s)p%d_s%d + k0);", ce_mtype(t->dtype), arr, off, OT, OT, arr,
                axis[row]);
            ce_out(E, "const %s step = %d * (%s)p%d_s%d;", OT, rows_per_rep, OT, arr, axis[row]);
        } else {
            ce_out(E, "const %s *src = p%d + (%s + k0);", ce_mtype(t->dtype), arr, off);
            ce_out(E, "const %s step = 0;", OT);
        }
        /* the rows a copy moves on by: a multiple of 8 keeps a core or swizzled layout's step constant */
        bool linear = form == FORM_ROWS || rows_per_rep % 8 == 0;
        int row_bytes = form == FORM_ROWS ? pitch * s : form == FORM_CORE ? cols * s : w;
        const char *dj = ce_fmt_str(E, "dst + j * %d", rows_per_rep * row_bytes);
        if (linear)
            ce_out(E, "unsigned char *dst = tile_async + %s + %s;", dst, copy_dst(E, form, w, "r0", "k0", rows, cols, pitch, s));
        else
            dj = ce_fmt_str(E, "tile_async + %s + %s", dst,
                            copy_dst(E, form, w, ce_fmt_str(E, "(r0 + j * %d)", rows_per_rep), "k0", rows, cols, pitch, s));
        ce_out(E, "#pragma unroll");
        ce_out(E, "for (int j = 0; j < %d; ++j)", reps);
        E->indent++;
        if (total % E->threads)
            ce_out(E, "if (r0 + j * %d < %d) tile_cp_async16(%s, src + j * step, 16);", rows_per_rep, rows, dj);
        else
            ce_out(E, "tile_cp_async16(%s, src + j * step, 16);", dj);
        E->indent -= 2;
        ce_out(E, "} else {");
        E->indent++;
    }
    /* An edge tile's copies, behind a fast path, one at a time where a thread
     * has many: unrolled, their addresses and byte counts took the registers
     * of the loop they sit in (the bf16 matmul at 128 x 128 x 64 on 4 warps,
     * mma.sync: 255 registers and 56 bytes spilled; rolled, 238 and none; the
     * tf32 one, its copies not pipelined, 255 and 124 bytes -> 168 and none;
     * ptxas, NVRTC 13.0).  When was read off ptxas's reports, no rule behind
     * it: where the kernel asks at most 2 blocks per SM (all the registers a
     * thread may have: under a tighter bound rolled copies spilled, Mamba-2's
     * fused compute_out with D per head at 4 blocks), and a pipeline's copies
     * from 4 a thread (rolled, 1 or 2 made fwd_pass_state_f32 at 128-row
     * tiles spill 8 bytes), others from 16 (rolled, ops.tile's
     * staged_tf32_a, 8 a thread, spilled 4 bytes on sm_80).  Only tiles at an
     * array's edge take this path.  TILEC_EDGE_UNROLLED=1: never rolled. */
    const int asked = E->opt.max_occupancy > 0 ? E->opt.max_occupancy : E->opt.num_warps ? 0 : E->f->occupancy;
    bool roll = E->threads % cpr == 0 && asked <= 2 && reps >= (piped ? 4 : 16) && !E->opt_edge_unrolled;
    ce_out(E, roll ? "#pragma unroll 1" : "#pragma unroll");
    ce_out(E, "for (int j = 0; j < %d; ++j) {", reps);
    E->indent++;
    ce_out(E, "const int c = (int)threadIdx.x + j * %d;", E->threads);
    if (total % E->threads) ce_out(E, "if (c < %d) {", total), E->indent++;
    ce_out(E, "const int r = c / %d, k = (c %% %d) * %d;", cpr, cpr, ve);
    const char *idx[TILE_MAX_RANK];
    for (int d = 0; d < t->rank; d++)
        idx[d] = d == row ? ce_fmt_str(E, "(%s + r)", b[d]) : d == col ? ce_fmt_str(E, "(%s + k)", b[d]) : b[d];
    ce_elem_at(E, arr, t->rank, axis, idx, &inb, &off);
    /* elements of the piece inside the row (0 when the piece is outside the array) */
    ce_out(E, "const long long left = (%s) ? (long long)p%d_n%d - (%s + k) : 0;", inb, arr, axis[col], b[col]);
    ce_out(E, "const int bytes = left >= %d ? 16 : left > 0 ? (int)left * %d : 0;", ve, s);
    /* a piece cut by the array's end is copied by plain loads (cp.async's
     * zero fill would still address 16 bytes) */
    const char *at = copy_dst(E, form, w, "r", "k", rows, cols, pitch, s);
    ce_out(E, "if (bytes == 16) tile_cp_async16(tile_async + %s + %s, p%d + (%s), 16);", dst, at, arr, off);
    ce_out(E, "else tile_copy16_partial(tile_async + %s + %s, bytes ? (const void *)(p%d + (%s)) : (const void *)p%d, bytes);",
        dst, at, arr, off, arr);
    if (total % E->threads) E->indent--, ce_out(E, "}");
    E->indent--;
    ce_out(E, "}");
    if (E->threads % cpr == 0) E->indent--, ce_out(E, "}");
    E->indent--;
    ce_out(E, "}");
}

/* ---- copies by the tensor memory accelerator (TMA) ------------------------------------ */

/* A pipelined copy may instead be one instruction of one thread: a TMA copy
 * of a box of the array described by a tensor map (the runtime encodes it at
 * launch: CudaKernelCode.tmaps), completing on an mbarrier that counts the
 * bytes (ce_async_loop_begin, ce_async_loop_top).  Where cp.async has every
 * thread compute bounds, addresses and 16-byte pieces each iteration -- in
 * Mamba-2's scan 331 of a warp's 1,463 instructions a step (Nsight, H200,
 * docs/performance.md) -- TMA needs a few from one thread, fills elements
 * outside the array with zeros itself, and writes the swizzles wgmma reads.
 * Its box lands as rows of its innermost extent, so the buffers it can fill:
 * a wgmma layout swizzled w bytes wide (one box per w-byte slice of the
 * columns, each slice rows x w bytes, as copy_dst lays them), or rows
 * without padding (one row, or a pitch equal to the columns).  A tile
 * wgmma reads as tf32, rounded in place once it lands (emit_round), comes by
 * TMA too, its rounding after the barrier's wait, each thread a share (the
 * tf32 NT matmul 206 -> 253 TFLOP/s at 8192^3; Mamba-2's tf32 compute_out
 * 2-3% faster although it then settles at 1 block per SM; H200,
 * docs/performance.md); TILEC_NO_TMA_ROUND=1 keeps such tiles on cp.async,
 * each thread rounding the pieces it copied.  The box lies along `inner`
 * elements of the contiguous axis, in `nbox` slices; false when TMA cannot
 * fill load `ld`'s buffer. */
static bool tma_geometry(Emitter *E, const IrOp *ld, int *inner, int *nbox) {
    int lv = ld->result, row, col;
    const Type *t = ce_vtype(E, lv);
    int s = ce_regsize(t->dtype);
    /* (a tile mma.sync reads rounded in place keeps cp.async: TMA with that
     * rounding has run on the GPU for wgmma's tiles only) */
    if (!load_axes(ld, t, &row, &col) || (E->async_round[lv] && (!E->async_core[lv] || !E->opt_tma_round))) return false;
    if (!(ce_array_flags(E, ld->array) & CUDA_ARRAY_TMA) || E->f->params[ld->array].rank != t->rank || t->rank > 5)
        return false;
    int rows = tile_rows(t, row), cols = t->shape[col];
    if (rows > 256) return false;
    switch (buf_form(E, lv)) {
    case FORM_SWIZZLE: {
        /* (mma.sync's swizzled buffers swizzle by row, not by address: they
         * start at the swizzle's alignment, as wgmma's do, only where
         * mma_tma_buffer says; their 8-row groups then keep it) */
        int w = E->async_swizzle[lv];
        if ((!E->async_core[lv] && !mma_tma_buffer(E, lv)) || rows % 8 || cols * s % w) return false;
        *inner = w / s;
        *nbox = cols * s / w;
        return true;
    }
    case FORM_ROWS:
        if ((rows > 1 && E->async_pitch[lv] != cols) || cols > 256) return false;
        *inner = cols;
        *nbox = 1;
        return true;
    default:
        return false;
    }
}

/* The index in E->tmaps of the tensor map of load `ld`'s box (added if
 * new); -1 when the kernel has its CUDA_MAX_TMAPS already. */
static int tma_map(Emitter *E, const IrOp *ld, int inner) {
    int lv = ld->result, row, col;
    const Type *t = ce_vtype(E, lv);
    load_axes(ld, t, &row, &col);
    CudaTensorMap m;
    memset(&m, 0, sizeof m);
    m.param = ld->array;
    m.elem_bytes = ce_regsize(t->dtype);
    m.swizzle = buf_form(E, lv) == FORM_SWIZZLE ? E->async_swizzle[lv] : 0;
    for (int d = 0; d < t->rank; d++) {
        int a = ld->nints == t->rank ? ld->ints[d] : d;
        m.box[a] = d == col ? inner : t->shape[d];
    }
    return ce_tma_map_add(E, &m);
}

int ce_tma_map_add(Emitter *E, const CudaTensorMap *m) {
    for (int k = 0; k < E->ntmaps; k++)
        if (memcmp(&E->tmaps[k], m, sizeof *m) == 0) return k;
    if (E->ntmaps == CUDA_MAX_TMAPS) return -1;
    E->tmaps[E->ntmaps] = *m;
    return E->ntmaps++;
}

/* Thread 0's TMA copies of load `ld`'s tile into the buffer at byte offset
 * `dst` (a C expression relative to tile_async), completing on the mbarrier
 * at `bar` (a C expression), indices from the values' current homes. */
static void issue_tma(Emitter *E, const IrOp *ld, const char *dst, const char *bar, int map) {
    const Type *t = ce_vtype(E, ld->result);
    int s = ce_regsize(t->dtype), row, col, inner, nbox;
    load_axes(ld, t, &row, &col);
    tma_geometry(E, ld, &inner, &nbox);
    const char *coord[TILE_MAX_RANK];   /* per array axis: the tile's first element */
    for (int d = 0; d < t->rank; d++)
        coord[ld->nints == t->rank ? ld->ints[d] : d] = ce_fmt_str(E, "(long long)%s * %d", ce_vreg(E, ld->args[d], 0), t->shape[d]);
    int col_axis = ld->nints == t->rank ? ld->ints[col] : col;
    ce_out(E, "if (threadIdx.x == 0) {");
    E->indent++;
    for (int h = 0; h < nbox; h++) {
        Buf c = {0};
        for (int a = t->rank - 1; a >= 0; a--) {   /* innermost first */
            if (a == col_axis && h) ce_buf_printf(&c, ", tile_tma_coord(%s + %d)", coord[a], h * inner);
            else ce_buf_printf(&c, ", tile_tma_coord(%s)", coord[a]);
        }
        ce_out(E, "tile_tma_load(tile_async + %s + %d, &tm%d, %s%s);", dst, h * tile_rows(t, row) * inner * s, map, bar, c.p);
        free(c.p);
    }
    E->indent--;
    ce_out(E, "}");
}

/* Pieces a thread rounds per batch (emit_round): their loads all issued
 * before the first store, so that a batch waits once on shared memory's
 * latency, not once per piece. */
#define ROUND_BATCH 4

/* Load `ld`'s tile in the buffer at byte offset `dst` rounded to tf32 in
 * place (async_round), after this thread's copies into it have landed: each
 * thread rounds the 16-byte pieces it copied itself (issue_copy's piece c =
 * threadIdx.x + j * threads, on either of its paths), so no barrier is needed
 * before (copied by TMA: the same pieces, after every thread's wait on the
 * stage's mbarrier); the one that publishes the buffer follows. */
static void emit_round(Emitter *E, const IrOp *ld, const char *dst) {
    const Type *t = ce_vtype(E, ld->result);
    E->rounds_in_smem = true;
    int s = ce_regsize(t->dtype), row, col;
    load_axes(ld, t, &row, &col);
    int cols = t->shape[col], rows = tile_rows(t, row), ve = 16 / s, cpr = cols / ve, total = rows * cpr;
    int reps = (total + E->threads - 1) / E->threads;
    ce_out(E, "{   /* rounded to tf32 as the language says, once, where it landed */");
    E->indent++;
    ce_out(E, "uint4 rv[%d];", reps < ROUND_BATCH ? reps : ROUND_BATCH);
    ce_out(E, "unsigned char *ra[%d];", reps < ROUND_BATCH ? reps : ROUND_BATCH);
    for (int j0 = 0; j0 < reps; j0 += ROUND_BATCH)
        for (int pass = 0; pass < 2; pass++)   /* the batch's loads, then its stores */
            for (int j = j0; j < reps && j < j0 + ROUND_BATCH; j++) {
                const char *c = ce_fmt_str(E, "((int)threadIdx.x + %d)", j * E->threads);   /* issue_copy's piece */
                const char *piece = copy_dst(E, buf_form(E, ld->result), E->async_swizzle[ld->result],
                                             ce_fmt_str(E, "(%s / %d)", c, cpr), ce_fmt_str(E, "(%s %% %d * %d)", c, cpr, ve),
                                             rows, cols, E->async_pitch[ld->result], s);
                const char *guard = (j + 1) * E->threads > total ? ce_fmt_str(E, "if (%s < %d) ", c, total) : "";
                if (pass == 0) ce_out(E, "%srv[%d] = tile_lds16(ra[%d] = tile_async + %s + %s);", guard, j - j0, j - j0, dst, piece);
                else ce_out(E, "%stile_tf32_sts16(ra[%d], rv[%d]);", guard, j - j0, j - j0);
            }
    E->indent--;
    ce_out(E, "}");
}

/* Load `ld`'s copies into the buffer at byte offset `off` waited for (`why`
 * said beside the wait), rounded where wgmma reads tf32, and made visible
 * to every thread: its tile is read from there. */
static void publish(Emitter *E, const IrOp *ld, int64_t off, const char *why) {
    const char *at = ce_fmt_str(E, "%lld", (long long)off);
    ce_out(E, "tile_cp_async_wait_all();%s", why);
    if (E->async_round[ld->result]) emit_round(E, ld, at);
    if (E->async_core[ld->result]) ce_out(E, "tile_fence_proxy_async();   /* wgmma reads it */");
    ce_out(E, "__syncthreads();");
    E->scratch_clean = true;
    E->async_ptr[ld->result] = ce_fmt_str(E, "(tile_async + %s)", at);
    /* (a tf32 B that wgmma reads transposed is copied so in a pipeline only:
     * cuda_emit emits the kernel again with such products on mma.sync) */
    if (E->async_tr_wgmma[ld->result]) E->tr_unpiped = true;
}

/* A load of the current block that is not pipelined: one buffer, copied,
 * waited for and made visible where the load stands. */
static void emit_single(Emitter *E, const IrOp *ld) {
    int64_t off = async_alloc(E, ld->result, tile_bytes(E, ld->result));
    ce_out(E, "__syncthreads();   /* the buffer's last readers are done */");
    issue_copy(E, ld, ce_fmt_str(E, "%lld", (long long)off), false);
    ce_out(E, "tile_cp_async_commit();");
    publish(E, ld, off, "");
}

/* Does `lay` hold a 16-bit tile stored with axis `col` contiguous the way
 * ldmatrix.trans reads its 8 x 8 pieces: a row's bit 0 in register bit 0,
 * its bits 1 and 2 in lane bits 0 and 1, the column's bits 0-2 in lane bits
 * 2-4 (an mma A fragment of the tile's transpose: the state's xᵀ in
 * ssd_scan)?  Then register bits 1 and 2 pick the x4's four pieces: each
 * must be a coordinate bit of 3 or more (whole pieces), returned as axis and
 * bit. */
static bool ldsm_trans_form(const Layout *l, int row, int col, int ax[2], int bit[2]) {
    if (row < 0 || l->nregbits < 3 || l->shape[row] < 8 || l->shape[col] < 8) return false;
    int d, j;
    for (int k = 0; k < 3; k++) {
        int pr = lay_pos(l->rank, l->shape, row, k), pc = lay_pos(l->rank, l->shape, col, k);
        bool row_ok = k == 0 ? l->space[pr] == LAY_REG && l->bit[pr] == 0 : l->space[pr] == LAY_LANE && l->bit[pr] == k - 1;
        if (!row_ok || l->space[pc] != LAY_LANE || l->bit[pc] != k + 2) return false;
    }
    for (int rb = 1; rb <= 2; rb++) {
        int found = -1;
        for (int p = 0; p < l->nbits; p++)
            if (l->space[p] == LAY_REG && l->bit[p] == rb) found = p;
        if (found < 0) return false;
        lay_dim_of(l->rank, l->shape, found, &d, &j);
        if ((d != row && d != col) || j < 3) return false;
        ax[rb - 1] = d, bit[rb - 1] = j;
    }
    return true;
}

/* C expression: coordinate `axis` of the first element of the 8 x 8 piece
 * this lane addresses for ldmatrix.trans (ldsm_trans_form), row `lane & 7`
 * of piece `lane >> 3`, whose first piece holds register r0. */
static const char *ldsm_trans_coord(Emitter *E, int lay, int r0, int axis, int row, const int ax[2], const int bit[2]) {
    Buf b = {0};
    ce_buf_printf(&b, "%s + %lld", ce_thread_coord(E, lay, axis), (long long)ce_reg_coord(E, lay, r0, axis));
    /* back to the piece's first row or column, then this lane's row */
    if (axis == row) ce_buf_printf(&b, " - ((lane & 3) << 1) + (lane & 7)");
    else ce_buf_printf(&b, " - (lane >> 2)");
    for (int k = 0; k < 2; k++)
        if (ax[k] == axis) ce_buf_printf(&b, " + (((lane >> %d) & 1) << %d)", 3 + k, bit[k]);
    const char *c = ce_fmt_str(E, "(%s)", b.p);
    free(b.p);
    return c;
}

/* A pipelined load read into registers: the blocked layout a plain load
 * gives, from this iteration's buffer (zero-filled where the array ends). */
void ce_async_read(Emitter *E, int lv, int lay, const char *name) {
    const Type *t = ce_vtype(E, lv);
    DType dt = t->dtype;
    int row, col;
    load_axes(E->f->values[lv].def, t, &row, &col);
    int pitch = E->async_pitch[lv], s = ce_regsize(dt);
    BufForm form = buf_form(E, lv);
    ce_decl(E, dt, name, lay);
    int ax[2], bit[2];
    if (s == 2 && (form != FORM_ROWS || pitch % 8 == 0) && !E->opt_no_ldsm_readback &&
        ldsm_trans_form(ce_lay(E, lay), row, col, ax, bit)) {
        /* four pieces a ldmatrix.x4.trans; eight registers per thread */
        for (int r0 = 0; r0 < ce_nregs(E, lay); r0 += 8) {
            const char *rr = ldsm_trans_coord(E, lay, r0, row, row, ax, bit);
            const char *kk = ldsm_trans_coord(E, lay, r0, col, row, ax, bit);
            const char *off = copy_dst(E, form, E->async_swizzle[lv], rr, kk, tile_rows(t, row), t->shape[col], pitch, s);
            const char *q = ce_fresh(E, "q");
            ce_out(E, "unsigned %s[4];", q);
            ce_out(E, "tile_ldsm_x4_trans(%s[0], %s[1], %s[2], %s[3], (const unsigned char *)%s + %s);", q, q, q, q, E->async_ptr[lv], off);
            for (int j = 0; j < 4; j++) {
                ce_out(E, "%s = (%s)(%s[%d] & 0xffffu);", ce_reg(E, name, lay, r0 + 2 * j), ce_ctype(dt), q, j);
                ce_out(E, "%s = (%s)(%s[%d] >> 16);", ce_reg(E, name, lay, r0 + 2 * j + 1), ce_ctype(dt), q, j);
            }
        }
        return;
    }
    int V = ce_vector_width(E, lay, col, 16 / s);
    for (int r = 0; r < ce_nregs(E, lay); r += V) {
        const char *rr = row >= 0 ? ce_coord(E, lay, r, row) : "0", *kk = ce_coord(E, lay, r, col), *ptr;
        if (form == FORM_ROWS) {
            const char *at = row >= 0 ? ce_fmt_str(E, "%s * %d + %s", rr, pitch, kk) : kk;
            ptr = ce_fmt_str(E, "((const %s *)%s + %s)", ce_ctype(dt), E->async_ptr[lv], at);
        } else {   /* (a buffer products read too: V elements never cross a 16-byte piece) */
            const char *piece = copy_dst(E, form, E->async_swizzle[lv], rr, kk, tile_rows(t, row), t->shape[col], pitch, s);
            ptr = ce_fmt_str(E, "((const %s *)((const unsigned char *)%s + %s + ((%s) * %d & 15)))", ce_ctype(dt),
                             E->async_ptr[lv], piece, kk, s);
        }
        if (V > 1) ce_vec_load(E, dt, ptr, name, lay, r, V);
        else ce_out(E, "%s = *%s;", ce_reg(E, name, lay, r), ptr);
    }
}

static void emit_readback(Emitter *E, const IrOp *ld, const char *buf) {
    const Type *t = ce_vtype(E, ld->result);
    int row, col;
    load_axes(ld, t, &row, &col);
    int lay = ce_plan_layout(E, ld->result, ce_blocked(E, t, col));
    const char *name = ce_fresh(E, "v");
    /* a use that wants another layout reads the buffer again (emit_cuda_remat.c);
     * registers nobody reads cost nothing (ptxas drops them) */
    E->async_ptr[ld->result] = buf;
    E->readback_loop[ld->result] = E->pipe.loop;
    ce_set_val(E, ld->result, name, lay);
    ce_async_read(E, ld->result, lay, name);
}

static int pipe_index(Emitter *E, const IrOp *ld) {
    if (!E->pipe.loop) return -1;
    for (int j = 0; j < E->pipe.n; j++)
        if (E->pipe.loads[j] == ld) return j;
    return -1;
}

bool ce_async_pipelined(Emitter *E, const IrOp *ld) { return pipe_index(E, ld) >= 0; }

static int prefetch_index(const Emitter *E, const IrOp *ld);
static void emit_prefetched(Emitter *E, const IrOp *ld, int j);

void ce_async_emit_load(Emitter *E, const IrOp *ld) {
    int lv = ld->result, k = pipe_index(E, ld), pf = prefetch_index(E, ld);
    if (pf >= 0 || k < 0) {
        if (pf >= 0) emit_prefetched(E, ld, pf);
        else emit_single(E, ld);
        if (E->async_mixed[lv]) {
            emit_readback(E, ld, E->async_ptr[lv]);
            E->readback_loop[lv] = NULL;   /* (not read again: a pipeline's buffers only) */
        }
        return;
    }
    /* pipelined: this iteration's buffer */
    const char *buf = ce_fmt_str(E, "(tile_async + %lld + %s * %lld)", (long long)E->pipe.off[k], E->pipe.stage,
                                 (long long)tile_bytes(E, lv));
    if (E->pipe.readback[k] || E->async_mixed[lv]) emit_readback(E, ld, buf);
    else E->async_ptr[lv] = buf;
}

/* ---- pipelined loops ---------------------------------------------------------------- */

static bool writes_array(const IrBlock *blk, int arr) {
    if (!blk) return false;
    for (int i = 0; i < blk->nops; i++) {
        const IrOp *o = blk->ops[i];
        IrMemAccess k = ir_op_mem_access(o);
        if ((k == IR_MEM_WRITE || k == IR_MEM_ATOMIC) && o->array == arr) return true;
        if (writes_array(o->body, arr) || writes_array(o->else_body, arr)) return true;
    }
    return false;
}

static const IrOp *body_def(const IrOp *loop, int v) {
    for (int i = 0; i < loop->body->nops; i++)
        if (loop->body->ops[i]->result == v) return loop->body->ops[i];
    return NULL;
}

/* Can scalar v be recomputed for another iteration?  Marks the ops needed. */
static bool recomputable(Emitter *E, const IrOp *loop, int v, bool *chain, int depth) {
    if (v == loop->result) return true;
    const IrOp *d = body_def(loop, v);
    if (!d) return true;                     /* defined outside the loop */
    if (depth > 32 || ce_vtype(E, v)->rank != 0) return false;
    bool pure = d->op == OP_CONST || d->op == OP_PARAM || d->op == OP_ARRAY_DIM || d->op == OP_ARRAY_STRIDE ||
                d->op == OP_BID || d->op == OP_NUM_BLOCKS || (d->op >= OP_NEG && d->op <= OP_WHERE);
    if (!pure) return false;
    for (int i = 0; i < d->nargs; i++)
        if (!recomputable(E, loop, d->args[i], chain, depth + 1)) return false;
    chain[v] = true;
    return true;
}

/* Byte offset (C expression, from tile_async) of pipelined load j's buffer
 * of stage `stage` (a C expression). */
static const char *stage_offset(Emitter *E, int j, const char *stage) {
    return ce_fmt_str(E, "%lld + (%s) * %lld", (long long)E->pipe.off[j], stage,
                      (long long)tile_bytes(E, E->pipe.loads[j]->result));
}

/* The copies of loads[0..n) for the iteration whose induction variable is
 * `iv` (a C expression), load j into the buffer at byte offset dst[j], if
 * that iteration exists: the ops `chain` marks recompute their indices. */
static void issue_ahead(Emitter *E, const IrOp *loop, const char *i, const char *iv, int n, const IrOp *const *loads,
                        const char *const *dst, const bool *chain, const char *bar, const char *free_wait) {
    size_t bytes = sizeof(Val) * (size_t)E->f->nvalues;
    Val *saved = malloc(bytes ? bytes : 1);
    if (!saved) return;
    memcpy(saved, E->vals, bytes);
    DType t = ce_vdt(E, loop->result);
    const char *ivn = ce_fresh(E, "n");
    ce_out(E, "{");
    E->indent++;
    ce_out(E, "const long long %s_ = %s;", ivn, iv);
    ce_out(E, "if (%s_st > 0 ? %s_ < %s_hi : (%s_st < 0 && %s_ > %s_hi)) {", i, ivn, i, i, ivn, i);
    E->indent++;
    ce_out(E, "const %s %s = (%s)%s_;", ce_ctype(t), ivn, ce_ctype(t), ivn);
    Layout scalar;
    memset(&scalar, 0, sizeof scalar);
    ce_set_val(E, loop->result, ivn, ce_lay_add(E, &scalar));
    /* (TMA copies, bar given: the pipeline's own, E->pipe.tma; free_wait: a
     * statement thread 0 runs first, waiting for the buffers' last readers) */
    if (free_wait) ce_out(E, "if (threadIdx.x == 0) %s", free_wait);
    if (bar) ce_out(E, "if (threadIdx.x == 0) tile_mbar_expect(%s, %d);   /* the bytes of this iteration's TMA copies */", bar,
                    E->pipe.tma_bytes);
    bool cp_async = false;
    int last = 0;
    for (int k = 0; k < loop->body->nops; k++)
        for (int j = 0; j < n; j++)
            if (loop->body->ops[k] == loads[j]) last = k;
    for (int k = 0; k <= last; k++) {
        const IrOp *o = loop->body->ops[k];
        int j = -1;
        for (int q = 0; q < n; q++)
            if (o == loads[q]) j = q;
        if (j >= 0 && bar && E->pipe.tma[j]) {
            issue_tma(E, o, dst[j], bar, E->pipe.tma_map[j]);
        } else if (j >= 0) {
            issue_copy(E, o, dst[j], true);
            cp_async = true;
        } else if (o->result >= 0 && chain[o->result]) {
            ce_emit_op(E, o);
        }
    }
    E->indent--;
    ce_out(E, "}");
    if (cp_async || !bar) ce_out(E, "tile_cp_async_commit();");
    E->indent--;
    ce_out(E, "}");
    memcpy(E->vals, saved, bytes);
    free(saved);
}

/* The mbarrier the TMA copies into stage `stage` (a C expression) complete on. */
static const char *stage_barrier(Emitter *E, const char *stage) {
    return ce_fmt_str(E, "tile_async + %lld + (%s) * 8", (long long)E->pipe.bar_off, stage);
}

/* The mbarrier the warps release stage `stage` on (Pipe.release). */
static const char *release_barrier(Emitter *E, const char *stage) {
    return ce_fmt_str(E, "tile_async + %lld + (%d + %s) * 8", (long long)E->pipe.bar_off, E->pipe.stages, stage);
}

/* The pipeline's copies of the iteration whose induction variable is `iv`
 * into stage `stage` (C expressions); free_wait as issue_ahead's. */
static void issue_iteration(Emitter *E, const IrOp *loop, const char *i, const char *iv, const char *stage,
                            const char *free_wait) {
    const char *dst[ASYNC_MAX_PIPE];
    for (int j = 0; j < E->pipe.n; j++) dst[j] = stage_offset(E, j, stage);
    issue_ahead(E, loop, i, iv, E->pipe.n, E->pipe.loads, dst, E->pipe_chain,
                E->pipe.tma_bytes ? stage_barrier(E, stage) : NULL, free_wait);
}

/* Does blk hold a loop that is not known to be short (fewer than 4
 * iterations, its bounds constants)? */
static bool contains_long_loop(const Emitter *E, const IrBlock *blk) {
    if (!blk) return false;
    for (int i = 0; i < blk->nops; i++) {
        const IrOp *o = blk->ops[i];
        if (o->op == OP_FOR) {
            int64_t lo, hi, st;
            if (!ir_const_int(E->f, o->args[0], &lo) || !ir_const_int(E->f, o->args[1], &hi) ||
                !ir_const_int(E->f, o->args[2], &st) ||
                st <= 0 || (hi - lo + st - 1) / st >= 4)
                return true;
        }
        if (contains_long_loop(E, o->body) || contains_long_loop(E, o->else_body)) return true;
    }
    return false;
}

static bool contains_mma(const IrBlock *blk) {
    if (!blk) return false;
    for (int i = 0; i < blk->nops; i++)
        if (blk->ops[i]->op == OP_MMA || contains_mma(blk->ops[i]->body) || contains_mma(blk->ops[i]->else_body))
            return true;
    return false;
}

/* Can an iteration of the loop whose body (or a block nested in it, `inner`
 * once inside a nested loop) is blk end before its products: a `continue` of
 * this loop, or a `return`?  It would skip the wait that frees the buffer the
 * next refill overwrites, or leave the kernel with products in flight. */
static bool may_skip_products(const IrBlock *blk, bool inner) {
    if (!blk) return false;
    for (int i = 0; i < blk->nops; i++) {
        const IrOp *o = blk->ops[i];
        if (o->op == OP_RETURN || (o->op == OP_CONTINUE && !inner)) return true;
        bool nested = inner || o->op == OP_FOR || o->op == OP_LOOP;
        if (may_skip_products(o->body, nested) || may_skip_products(o->else_body, nested)) return true;
    }
    return false;
}

/* Where the async buffers would end with the pipeline's loads at `stages`
 * stages each and `copies` transposed copies for wgmma of those that take
 * them (ce_async_loop_begin), allocated as async_alloc does. */
static int64_t pipe_top(Emitter *E, int stages, int copies) {
    int64_t top = E->async_top;
    for (int j = 0; j < E->pipe.n; j++) {
        int lv = E->pipe.loads[j]->result;
        top = buffer_start(E, lv, top) + stages * tile_bytes(E, lv);
    }
    bool barriers = false;   /* (TMA's mbarriers, plan_tma, if any, lie before the copies) */
    for (int j = 0; j < E->pipe.n; j++) {
        int lv = E->pipe.loads[j]->result;
        if (!E->async_tr_wgmma[lv] || tr_in_place(E, lv)) continue;
        if (!barriers) top += 8 * stages, barriers = true;
        top = buffer_start(E, lv, top) + copies * tr_bytes(E, lv);
    }
    return top;
}

/* How many reads and writes of local `l` block `blk` holds, nested blocks included. */
static int local_accesses(const IrBlock *blk, int l) {
    int n = 0;
    for (int i = 0; blk && i < blk->nops; i++) {
        const IrOp *o = blk->ops[i];
        n += (o->op == OP_LOCAL_GET || o->op == OP_LOCAL_SET) && o->local == l;
        n += local_accesses(o->body, l) + local_accesses(o->else_body, l);
    }
    return n;
}

/* May the loop's wgmma batches stay in flight into the next iteration?
 * Every product of its body must read both operands from this pipeline's
 * buffers (a buffer copied where its load stands would be overwritten under
 * it), none with A from registers (those must be waited for before they
 * change), and an accumulator local must be touched by nothing else in the
 * loop than its product's read and write (a read of registers a product may
 * still write is undefined: ptxas injected a wait, C7517). */
static bool wgmma_operands_piped(Emitter *E, const IrOp *loop) {
    for (int k = 0; k < loop->body->nops; k++) {
        const IrOp *o = loop->body->ops[k];
        if (o->op != OP_MMA || E->wgmma_split[o->result] < 0) continue;
        if (ce_wgmma_reads_registers(E, o)) return false;
        const IrOp *c = E->f->values[o->args[2]].def;
        if (c && c->op == OP_LOCAL_GET && local_accesses(loop->body, c->local) != 2) return false;
        for (int w = 0; w < 2; w++) {
            int cd, lv = ce_async_operand_load(E, o->args[w], &cd, NULL);
            bool piped = false;
            for (int j = 0; j < E->pipe.n; j++) piped |= E->pipe.loads[j]->result == lv;
            if (!piped) return false;
        }
    }
    return true;
}

/* ---- tf32 B operands stored [K][N], copied transposed ------------------------------ */

/* A tf32 B operand lands as memory holds it, [K][N] for a row-major K x N
 * tile, where mma.sync's fragments must be read a float at a time (k = q and
 * q + 4, or 2q and 2q + 1 for a k-permuted A, of column g), and every warp
 * along M reads all of it.  With eight warps or more there (compute_out_f32's
 * x_k: 8 warps on rows, which Nsight found stalled on the shared-memory
 * queue, 2026-12-03), the block copies the tile transposed, [N][K] and
 * rounded, into a buffer of its own once per iteration, right after the
 * pipeline's barrier (so before the products' inputs are made: a copy next
 * to the product took compute_out_f32 past 128 registers), one more barrier
 * after it; the products read it by ldmatrix, or in 8-byte pairs for a
 * k-permuted A (emit_cuda_ops.c).  Measured on the H200: compute_out_f32
 * 1.896 -> 1.783 ms at the tf32 Mamba-2 anchor; with four warps along M (the
 * tf32 matmul's 128 x 128 x 32 tile on 8 warps) 115 -> 95 TFLOP/s, so not
 * there; fewer read less of it again and the buffer would cost fwd_pass_state
 * a block per SM.  Pitch: K + 4 for ldmatrix ((K + 4) / 4 odd: 8 rows fall in
 * 8 different 16-byte bank groups), or 32 or 96 bytes apart modulo 128 for
 * the pairs (a half warp's four rows fill 128 bytes).  The buffer is
 * allocated after the pipeline's depth was chosen, so the async area may
 * pass ASYNC_BUDGET by its size (18 KB for compute_out_f32's x_k; the
 * kernel's total is what the launch checks). */
static void mark_transposed(Emitter *E, const IrOp *o) {
    const Type *at = ce_vtype(E, o->args[0]), *bt = ce_vtype(E, o->args[1]), *rt = ce_vtype(E, o->result);
    if (E->opt_tf32_no_transpose || E->opt_tf32_scalar || rt->rank != 2 || at->dtype != DT_TF32 ||
        !ce_mma_on_tensor_cores(at, bt, rt) || ce_wgmma_layout(E, o) >= 0)
        return;
    int col_dim, wmb, wnb;
    bool round;
    int lv = ce_async_operand_load(E, o->args[1], &col_dim, &round);
    bool piped = false;
    for (int j = 0; j < E->pipe.n; j++) piped |= E->pipe.loads[j]->result == lv && !E->pipe.readback[j];
    ce_plan_split(E, o, &wmb, &wnb);
    int K = bt->shape[0], N = bt->shape[1];
    if (!piped || col_dim != 1 || wmb < 3 || E->async_swizzle[lv] || E->async_core[lv] || E->async_pitch[lv] % 4 ||
        K % 8 || N % 4)
        return;
    bool kperm = ce_plan_reg_a(E, o) && ce_plan_kperm(E, o);
    int ld = kperm ? K + (K % 16 ? 16 : 8) : K + 4;
    E->async_tr_ld[lv] = ld;
    /* (rounded by the transposed copy, not in place as well: no wgmma reads
     * it, and its other readers then round at the read) */
    E->async_round[lv] = false;
    E->async_tr_round[lv] = round;
    E->async_tr_off[lv] = async_alloc(E, lv, ((int64_t)N * ld * 4 + 127) / 128 * 128);
}

/* Declares nb<sfx>, kb<sfx>: the n- and k-block (4 x 4 floats each) that
 * block index `e` (a C expression) moves between two buffers swizzled 128
 * bytes wide, `groups_n` groups of 4 n-blocks to a row of groups: a quarter
 * warp's 8 blocks of a 4 x 4 group, each n-block with an even and an odd
 * k-block, each k-block with an even and an odd n-block, fall in 8 bank
 * groups when read and when written (checked by enumeration). */
static void emit_swizzled_block(Emitter *E, const char *e, const char *sfx, int groups_n) {
    ce_out(E, "const int t%s = %s & 7, nl%s = t%s >> 1, g%s = %s >> 4;", sfx, e, sfx, sfx, sfx, e);
    ce_out(E, "const int nb%s = nl%s + 4 * (g%s %% %d), kb%s = (t%s & 1) + 2 * (((nl%s ^ (nl%s >> 1)) & 1) ^ ((%s >> 3) & 1)) + "
              "4 * (g%s / %d);",
           sfx, sfx, sfx, groups_n, sfx, sfx, sfx, sfx, e, sfx, groups_n);
}

/* Load `ld`'s tile (K x N f32 at byte offset `src` of the async area, in its
 * buffer's form) copied transposed, [N][K], to byte offset `dst`: into rows
 * async_tr_ld floats apart (mark_transposed), or into wgmma's K-major layout
 * swizzled async_tr_wgmma bytes wide.  Each thread moves 4 x 4 blocks, four
 * 16-byte loads along N and four 16-byte stores along K; a quarter warp
 * takes 2 k-blocks x 4 n-blocks (at most 4-way bank conflicts on either side
 * at mark_transposed's pitches, where n-blocks alone put 8 stores in one
 * bank group), or between swizzled buffers blocks that no two of its
 * accesses share a bank group. */
static void emit_transpose(Emitter *E, const IrOp *ld, const char *src, const char *dst) {
    int lv = ld->result, row, col;
    const Type *t = ce_vtype(E, lv);
    load_axes(ld, t, &row, &col);
    int K = tile_rows(t, row), N = t->shape[col], KB = K / 4, NB = N / 4;
    int tld = E->async_tr_ld[lv], tw = E->async_tr_wgmma[lv];
    const char *tf = E->async_tr_round[lv] ? "tile_tf32" : "";
    ce_out(E, "{   /* copied transposed for the products, [N][K]%s */", tw ? ", in wgmma's layout" : "");
    E->indent++;
    ce_out(E, "const unsigned char *S = tile_async + %s;", src);
    ce_out(E, "unsigned char *T = tile_async + %s;", dst);
    ce_out(E, "for (int e = (int)threadIdx.x; e < %d; e += %d) {", KB * NB, E->threads);
    E->indent++;
    if (tw == 128 && E->async_swizzle[lv] == 128 && E->async_core[lv] && NB % 4 == 0 && KB % 4 == 0) {
        /* both sides swizzled 128 bytes wide: no bank conflicts either way */
        emit_swizzled_block(E, "e", "", NB / 4);
    } else if (NB % 4 == 0)
        ce_out(E, "const int nb = (e & 3) + 4 * ((e >> 3) %% %d), kb = ((e >> 2) & 1) + 2 * ((e >> 3) / %d);", NB / 4, NB / 4);
    else
        ce_out(E, "const int nb = e %% %d, kb = e / %d;", NB, NB);
    /* (k-permuted, async_tr_kperm: the copy's columns 4kb .. 4kb + 3 hold K
     * indices 8 (kb / 2) + 2i + kb % 2, i = 0 .. 3) */
    for (int i = 0; i < 4; i++)
        ce_out(E, "const float4 r%d = *(const float4 *)(S + %s);", i,
               copy_dst(E, buf_form(E, lv), E->async_swizzle[lv],
                        E->async_tr_kperm[lv] ? ce_fmt_str(E, "(8 * (kb >> 1) + %d + (kb & 1))", 2 * i)
                                              : ce_fmt_str(E, "(4 * kb + %d)", i),
                        "(4 * nb)", K, N, E->async_pitch[lv], 4));
    static const char *const part[4] = {"x", "y", "z", "w"};
    for (int j = 0; j < 4; j++) {
        const char *r = ce_fmt_str(E, "(4 * nb + %d)", j);
        const char *at = tw ? ce_swizzle_offset(E, tw, r, "(4 * kb)", N, 4) : ce_fmt_str(E, "(%s * %d + 4 * kb) * 4", r, tld);
        ce_out(E, "*(float4 *)(T + %s) = make_float4(%s(r0.%s), %s(r1.%s), %s(r2.%s), %s(r3.%s));", at, tf, part[j], tf, part[j],
               tf, part[j], tf, part[j]);
    }
    E->indent--;
    ce_out(E, "}");
    E->indent--;
    ce_out(E, "}");
}

/* A lane's byte offsets in a panel for emit_transpose_in_place, as C
 * expressions of `lane`: read i of its half h (rows 4 kb + i, columns 4 nb),
 * and write j (rows 4 nb + j of the transposed panel, columns 4 kb).
 * Declares the half's block indices (emit_swizzled_block) with suffix `sfx`. */
static void tr_lane_offsets(Emitter *E, int h, const char *sfx, const char **rd, const char **wr) {
    emit_swizzled_block(E, ce_fmt_str(E, "(lane + %d)", 32 * h), sfx, 2);   /* (8 n-blocks a panel) */
    for (int i = 0; i < 4; i++) {
        rd[i] = ce_swizzle_offset(E, 128, ce_fmt_str(E, "(4 * kb%s + %d)", sfx, i), ce_fmt_str(E, "(4 * nb%s)", sfx), 32, 4);
        wr[i] = ce_swizzle_offset(E, 128, ce_fmt_str(E, "(4 * nb%s + %d)", sfx, i), ce_fmt_str(E, "(4 * kb%s)", sfx), 32, 4);
    }
}

/* Before the loop: pipeline load j's in-place transposition offsets, the
 * same every iteration, kept in registers (tile_opaque: NVVM computed them
 * again inside the loop otherwise).  In the loop they cost about 110 of a
 * thread's instructions an iteration (the tf32 K x N matmul at 128 x 256 x
 * 32, Nsight, H200), just before the barrier every warp waits at; hoisted,
 * that matmul ran 231 -> 242 TFLOP/s at 8192^3 for 15 more registers
 * (docs/performance.md; TILEC_TR_NO_HOIST=1 for the old code). */
static void tr_offsets(Emitter *E, int j) {
    if (E->opt_tr_no_hoist) return;
    const char *pre = ce_fmt_str(E, "tro_v%d_", E->pipe.loads[j]->result);   /* (no fresh number: the other names stay) */
    ce_out(E, "int %srd[8], %swr[8];   /* the in-place transposition's offsets, lane by lane */", pre, pre);
    ce_out(E, "{");
    E->indent++;
    for (int h = 0; h < 2; h++) {
        const char *rd[4], *wr[4];
        tr_lane_offsets(E, h, ce_fmt_str(E, "%d", h), rd, wr);
        for (int i = 0; i < 4; i++)
            ce_out(E, "%srd[%d] = tile_opaque(%s); %swr[%d] = tile_opaque(%s);", pre, 4 * h + i, rd[i], pre, 4 * h + i, wr[i]);
    }
    E->indent--;
    ce_out(E, "}");
    E->pipe.tr_offs[j] = pre;
}

/* Load `ld`'s tile, 32 x N floats at byte offset `buf` of the async area
 * swizzled in 128-byte panels of 32 columns, transposed in place into
 * wgmma's K-major layout, [N][32] swizzled 128 bytes wide (tr_in_place):
 * panel p of the stored tile (its 32 columns, all 32 rows: the 4 KB at p *
 * 4096) holds the same bytes as rows 32p .. 32p + 31 of the transposed one,
 * so each warp takes whole panels, reads one into registers (two 4 x 4
 * blocks a lane, placed as emit_transpose's between swizzled buffers: no
 * bank conflicts) and writes it back transposed and rounded after a
 * __syncwarp.  No barrier and no buffer of its own: the pipeline keeps its
 * stages (tf32 K x N matmul at 128 x 256 x 32: 4, where three copies of
 * their own left 2).  `offs`: the prefix of the lane's offsets made before
 * the loop (tr_offsets), or NULL to compute them here. */
static void emit_transpose_in_place(Emitter *E, const IrOp *ld, const char *buf, const char *offs) {
    int lv = ld->result, row, col;
    const Type *t = ce_vtype(E, lv);
    load_axes(ld, t, &row, &col);
    const char *tf = E->async_tr_round[lv] ? "tile_tf32" : "";
    static const char *const part[4] = {"x", "y", "z", "w"};
    ce_out(E, "{   /* transposed in place for the products, [N][K], in wgmma's layout: each warp whole panels */");
    E->indent++;
    ce_out(E, "for (int p = warp; p < %d; p += %d) {", t->shape[col] / 32, E->threads / 32);
    E->indent++;
    ce_out(E, "unsigned char *P = tile_async + %s + p * 4096;", buf);
    const char *wr[2][4];
    for (int h = 0; h < 2; h++) {
        const char *rd[4];
        if (offs)
            for (int i = 0; i < 4; i++) rd[i] = ce_fmt_str(E, "%srd[%d]", offs, 4 * h + i), wr[h][i] = ce_fmt_str(E, "%swr[%d]", offs, 4 * h + i);
        else
            tr_lane_offsets(E, h, ce_fmt_str(E, "%d", h), rd, wr[h]);
        for (int i = 0; i < 4; i++) ce_out(E, "const float4 r%d%d = *(const float4 *)(P + %s);", h, i, rd[i]);
    }
    ce_out(E, "__syncwarp();   /* the panel read whole before any of it is written */");
    for (int h = 0; h < 2; h++)
        for (int j = 0; j < 4; j++)
            ce_out(E, "*(float4 *)(P + %s) = make_float4(%s(r%d0.%s), %s(r%d1.%s), %s(r%d2.%s), %s(r%d3.%s));", wr[h][j], tf, h,
                   part[j], tf, h, part[j], tf, h, part[j], tf, h, part[j]);
    E->indent--;
    ce_out(E, "}");
    E->indent--;
    ce_out(E, "}");
}

static bool may_leave(const IrBlock *blk);

/* Does blk (nested blocks included) hold a product on wgmma? */
static bool holds_wgmma(const Emitter *E, const IrBlock *blk) {
    for (int i = 0; blk && i < blk->nops; i++) {
        const IrOp *o = blk->ops[i];
        if (o->op == OP_MMA && E->wgmma_split && E->wgmma_split[o->result] >= 0) return true;
        if (holds_wgmma(E, o->body) || holds_wgmma(E, o->else_body)) return true;
    }
    return false;
}

/* May the warps release the loop's stages by mbarrier (Pipe.release), no
 * block barrier at the loop's top?  Where TMA fills every stage (thread 0
 * then refills a stage once the warps have released it; each thread waits
 * for the copies itself), nothing rounds or transposes a stage in place or
 * copies it elsewhere between the wait and a barrier (those need every
 * thread's share done), and no product on wgmma reads it (wgmma reads after
 * its instruction has issued).  What else the body does in shared memory
 * (scratch) has barriers of its own, scratch_clean being false at the top.
 * Opt-in (TILEC_STAGE_RELEASE=1): predicted +2-5% for the mma.sync matmul
 * (the barrier at the loop's top held 12% of its stall samples on an H100),
 * it measured 1% slower (480.7 / 482.6 against 485.2 / 485.5 TFLOP/s at
 * 8192^3; docs/performance.md, the fourteenth session). */
static bool plan_release(Emitter *E, const IrOp *loop) {
    if (!E->opt_stage_release) return false;
    for (int j = 0; j < E->pipe.n; j++) {
        int lv = E->pipe.loads[j]->result;
        if (!E->pipe.tma[j] || E->async_round[lv] || E->async_tr_wgmma[lv] || E->async_tr_ld[lv]) return false;
    }
    return !holds_wgmma(E, loop->body);
}

/* Which of the pipeline's loads TMA copies (tma_geometry): on sm_90a, and on
 * sm_90 code without wgmma (opt_mma_tma: mma.sync's swizzled operands, and
 * any other pipelined tile a box can copy), unless TILEC_NO_TMA, in a loop
 * that cannot leave an iteration early (every copy issued is then waited for
 * before the loop ends, and the barriers can be invalidated there); their
 * stages' mbarriers after the buffers. */
static void plan_tma(Emitter *E, const IrOp *loop) {
    E->pipe.tma_bytes = 0;
    if (!(E->opt_wgmma || E->opt_mma_tma) || E->opt_no_tma || may_leave(loop->body)) return;
    for (int j = 0; j < E->pipe.n; j++) {
        const IrOp *ld = E->pipe.loads[j];
        int inner, nbox, row, col;
        if (!tma_geometry(E, ld, &inner, &nbox)) continue;
        int map = tma_map(E, ld, inner);
        if (map < 0) continue;
        const Type *t = ce_vtype(E, ld->result);
        load_axes(ld, t, &row, &col);
        E->pipe.tma[j] = true;
        E->pipe.tma_map[j] = map;
        E->pipe.tma_bytes += tile_rows(t, row) * t->shape[col] * ce_regsize(t->dtype);
    }
    if (!E->pipe.tma_bytes) return;
    E->pipe.release = plan_release(E, loop);
    E->pipe.bar_off = (E->async_top + 7) / 8 * 8;
    E->async_top = E->pipe.bar_off + (E->pipe.release ? 16 : 8) * E->pipe.stages;
    if (E->async_top > E->async_peak) E->async_peak = E->async_top;
}

/* Is pipeline load j one read into registers alone (no product reads its buffer)? */
static bool register_read(Emitter *E, int j) {
    return E->pipe.readback[j] && !ce_async_is_load(E, E->pipe.loads[j]->result);
}

/* In a wgmma loop whose loads ask for their depth (`latency`: the program
 * keeps the pipeline short so that blocks share an SM), loads read into
 * registers alone leave the pipeline, the largest first, while their
 * buffers leave the kernel 1 block per SM where without them it would run
 * 2; they are then loaded where they stand.  (Only then: where shared
 * memory would allow 3 blocks instead of 4, registers or the buffers of
 * stores by TMA, counted later, decide, and such loads would wait on
 * memory every iteration for nothing.)  Mamba-2's ssd_scan with z: the gate's
 * z tile (2 x 8 KB) took it from 2 blocks per SM to 1; off the pipeline
 * (H200, 2026-12-04, bf16 with z, ms): the anchor 1.48 -> 1.19, (2, 16384)
 * 1.73 -> 1.20, (1, 4096) 0.261 -> 0.194, (8, 2048, 24) 0.316 -> 0.23. */
static void drop_costly_readbacks(Emitter *E, int stages, int copies) {
    for (;;) {
        /* the kernel's shared memory: the scratch area an earlier pass used,
         * then the buffers; without these loads' (their alignment left out) */
        int64_t with = E->scratch_hint + pipe_top(E, stages, copies), theirs = 0;
        int big = -1;
        for (int j = 0; j < E->pipe.n; j++) {
            if (!register_read(E, j)) continue;
            theirs += stages * tile_bytes(E, E->pipe.loads[j]->result);
            if (big < 0 || tile_bytes(E, E->pipe.loads[j]->result) > tile_bytes(E, E->pipe.loads[big]->result)) big = j;
        }
        if (big < 0 || ce_smem_blocks(with) >= 2 || ce_smem_blocks(with - theirs) < 2) return;
        E->async_pitch[E->pipe.loads[big]->result] = 0;
        for (int j = big; j + 1 < E->pipe.n; j++) {
            E->pipe.loads[j] = E->pipe.loads[j + 1];
            E->pipe.readback[j] = E->pipe.readback[j + 1];
        }
        E->pipe.n--;
    }
}

bool ce_async_loop_begin(Emitter *E, const IrOp *loop, const char *i, const char *lo, AsyncLoopState *save) {
    save->pipe = E->pipe;
    save->top = E->async_top;
    memset(&E->pipe, 0, sizeof E->pipe);
    if (ce_vdt(E, loop->result) == DT_U64) return false;
    for (int v = 0; v < E->f->nvalues; v++) E->pipe_chain[v] = false;
    int stages = 0;
    bool mma_loop = contains_mma(loop->body);
    /* register-read loads ride the pipeline all together or not at all */
    int64_t rb_max = E->readback_max_bytes >= 0 ? E->readback_max_bytes : CE_READBACK_MAX_BYTES;
    /* A loop that holds a loop (compute_out's heads walked one after another;
     * not one of fewer than 4 iterations known when compiling) gets no
     * pipeline: an iteration running a whole inner loop outlasts a
     * memory latency anyway, and copies one iteration ahead cost registers
     * and shared memory.  Measured on the H200 (Mamba-2, 2026-12-01, with
     * TILEC_OUTER_PIPE=1, an experiment knob that builds them, 2 stages):
     * compute_out fused on 4 heads per block 1.287 ms with, 1.211 without
     * (96 KB of shared memory: 2 blocks per SM instead of 3); with dstate 64
     * on 5 heads 0.981 with, 1.006 without, but 16 bytes of spills. */
    bool outer = contains_long_loop(E, loop->body);
    if (outer && !E->opt_outer_pipe) return false;
    bool readback = mma_loop;
    for (int k = 0; k < loop->body->nops; k++) {
        const IrOp *o = loop->body->ops[k];
        if (o->op == OP_LOAD && !ce_async_is_load(E, o->result) && load_qualifies(E, o) &&
            !writes_array(loop->body, o->array) &&
            type_numel(ce_vtype(E, o->result)) * ce_regsize(ce_vdt(E, o->result)) > rb_max)
            readback = false;
    }
    for (int k = 0; k < loop->body->nops && E->pipe.n < ASYNC_MAX_PIPE; k++) {
        const IrOp *o = loop->body->ops[k];
        if (o->op != OP_LOAD || writes_array(loop->body, o->array)) continue;
        bool direct = ce_async_is_load(E, o->result);
        if (!direct && !(readback && load_qualifies(E, o))) continue;
        bool ok = true;
        for (int a = 0; a < o->nargs && ok; a++) ok = recomputable(E, loop, o->args[a], E->pipe_chain, 0);
        if (!ok) continue;
        if (!direct) {   /* read back: rows 16 bytes apart more than they need, so
                            that a layout reading down columns meets no bank conflicts */
            int row, col;
            load_axes(o, ce_vtype(E, o->result), &row, &col);
            if (!E->async_pitch[o->result])   /* (unless mark_operands chose one) */
                E->async_pitch[o->result] = ce_vtype(E, o->result)->shape[col] + 16 / ce_regsize(ce_vdt(E, o->result));
        }
        int want = o->latency > 0 ? o->latency + 1 : 3;
        if (want > stages) stages = want;
        E->pipe.readback[E->pipe.n] = !direct;
        E->pipe.loads[E->pipe.n++] = o;
    }
    /* a product on wgmma from shared memory alone directly in the loop body:
     * deeper, and its batch may stay in flight across the next iteration's
     * barrier (one with A from registers keeps the usual pipeline: such
     * kernels run several blocks per SM) */
    bool wg = false;
    for (int k = 0; k < loop->body->nops; k++) {
        const IrOp *o = loop->body->ops[k];
        wg |= o->op == OP_MMA && E->wgmma_split && E->wgmma_split[o->result] >= 0 && !ce_wgmma_reads_registers(E, o);
    }
    /* (the scratch area an earlier pass used shares the block's shared memory) */
    int64_t budget = wg ? WGMMA_ASYNC_BUDGET - E->scratch_hint : ASYNC_BUDGET;
    /* (unless a load of a wgmma operand asks for its own depth: `latency`) */
    bool hinted = false;
    for (int j = 0; j < E->pipe.n; j++) hinted |= E->async_core[E->pipe.loads[j]->result] && E->pipe.loads[j]->latency > 0;
    if (wg && !hinted && stages < WGMMA_MIN_STAGES) stages = WGMMA_MIN_STAGES;
    if (stages > ASYNC_MAX_STAGES) stages = ASYNC_MAX_STAGES;
    if (outer) stages = 2;   /* one iteration ahead is enough (above) */
    /* (transposed copies for wgmma made before the barrier take a third
     * copy and delay the next copies' issue, below: not where that costs a
     * stage, nor where those copies run less than two iterations ahead) */
    bool inflight_ok = wg && !E->opt_wgmma_wait0 && wgmma_operands_piped(E, loop) && !may_skip_products(loop->body, false);
    int late_stages = stages;
    while (stages > 2 && pipe_top(E, stages, 3) > budget) stages--;
    while (late_stages > 2 && pipe_top(E, late_stages, 2) > budget) late_stages--;
    bool tr_late = late_stages > stages || (inflight_ok && stages >= 3 ? stages - 2 : stages - 1) < 2;
    if (tr_late) stages = late_stages;
    /* (the copies it will take, tr_copies below: one, one more while a batch
     * stays in flight, one more made before the barrier) */
    if (!E->pipe.n || pipe_top(E, stages, 1 + (inflight_ok && stages >= 3) + !tr_late) > budget) {
        E->pipe.n = 0;
        return false;
    }
    if (wg && hinted) drop_costly_readbacks(E, stages, tr_late ? 2 : 3);
    for (int j = 0; j < E->pipe.n; j++) {
        E->pipe.off[j] = async_alloc(E, E->pipe.loads[j]->result, stages * tile_bytes(E, E->pipe.loads[j]->result));
        E->async_stages[E->pipe.loads[j]->result] = stages;
    }
    for (int j = 0; j < E->pipe.n; j++) E->async_tr_ld[E->pipe.loads[j]->result] = 0;   /* (a loop emitted again) */
    ce_each_mma(E, loop->body, mark_transposed);
    E->pipe.loop = loop;
    E->pipe.stages = stages;
    plan_tma(E, loop);
    E->pipe.wgmma_inflight = inflight_ok && stages >= 3;
    E->pipe.lookahead = E->pipe.wgmma_inflight ? stages - 2 : stages - 1;
    /* Transposed copies for wgmma: made right after the stage's copies are
     * waited for, before its barrier, when TMA made them all (every thread
     * has waited for all of the stage then); else after the barrier, since a
     * thread's cp.async wait covers its own copies alone.  One copy a stage
     * of products reads, and one more for each iteration a batch of them may
     * still run while a thread writes the next: when the batch stays in
     * flight into the next iteration (wgmma_inflight), and when copies are
     * made before the barrier (another warp group may not have passed the
     * last one yet).  Not where that third copy would cost the pipeline a
     * stage, nor where copies run less than two iterations ahead: made
     * before the barrier, the copies delay the next iteration's copies,
     * issued after it (tr_late).  Measured on the H200 (tf32 K x N matmul,
     * 8192^3): 128 x 128 x 32 tiles, 4 stages, 7.19 ms after the barrier,
     * 6.43 before it; 128 x 128 x 64, 2 stages, 6.59 after, 8.27 before. */
    bool tr_tma = true, tr_any = false;
    for (int j = 0; j < E->pipe.n; j++) {   /* (one rounded in place too, by each thread its share, waits for
                                                 * the barrier: the copy reads every thread's share) */
        int lv = E->pipe.loads[j]->result;
        if (E->async_tr_wgmma[lv]) tr_any = true, tr_tma &= E->pipe.tma[j] && !E->async_round[lv];
    }
    E->pipe.tr_early = tr_any && tr_tma && !tr_late && !E->opt_transpose_late;
    E->pipe.tr_copies = 1 + E->pipe.wgmma_inflight + E->pipe.tr_early;
    for (int j = 0; j < E->pipe.n; j++) {
        int lv = E->pipe.loads[j]->result;
        E->pipe.tr_inplace[j] = E->async_tr_wgmma[lv] && tr_in_place(E, lv);
        tr_alloc(E, lv, E->pipe.tr_inplace[j] ? 0 : E->pipe.tr_copies);
        if (E->pipe.tr_inplace[j]) tr_offsets(E, j);
    }
    for (int j = 0; j < E->pipe.n; j++) ce_mem_access(E, E->pipe.loads[j]->array, IR_MEM_READ);
    ce_out(E, "/* cp.async pipeline, %d stages: iterations ahead are in flight */", stages);
    if (E->pipe.wgmma_inflight) ce_out(E, "/* ... %d of them: a buffer is refilled an iteration after its wgmma's wait */", E->pipe.lookahead);
    /* the buffers may be an earlier block's, which other warps may still read */
    /* (shared memory's last writes, and the block's writes to the arrays TMA
     * reads, before the copy engine's accesses) */
    if (E->pipe.tma_bytes) ce_out(E, "tile_fence_proxy_async_all();");
    ce_out(E, "__syncthreads();");
    if (E->pipe.tma_bytes) {
        ce_out(E, "if (threadIdx.x == 0) {   /* one mbarrier a stage: thread 0's arrival and the TMA copies' bytes%s */",
               E->pipe.release ? "; one more: each warp's release of it" : "");
        E->indent++;
        for (int st = 0; st < stages; st++) ce_out(E, "tile_mbar_init(%s, 1);", stage_barrier(E, ce_fmt_str(E, "%d", st)));
        if (E->pipe.release)   /* (each warp's lane 0 arrives when it is done with the stage) */
            for (int st = 0; st < stages; st++)
                ce_out(E, "tile_mbar_init(%s, %d);", release_barrier(E, ce_fmt_str(E, "%d", st)), E->threads / 32);
        ce_out(E, "tile_mbar_init_fence();");
        E->indent--;
        ce_out(E, "}");
        ce_out(E, "__syncthreads();");
    }
    for (int s = 0; s < E->pipe.lookahead; s++)
        issue_iteration(E, loop, i, ce_fmt_str(E, "(long long)%s + %d * %s_st", lo, s, i), ce_fmt_str(E, "%d", s), NULL);
    ce_out(E, "int %s_it = 0;", i);
    return true;
}

/* This iteration's transposed copies (mark_transposed's, and wgmma's:
 * `early`, those made before the stage's barrier, else the others), into
 * the copy this iteration reads (tr_alloc); *made: some were; true when
 * wgmma reads some. */
static bool emit_transposes(Emitter *E, const char *i, bool early, bool *made) {
    bool for_wgmma = false;
    for (int j = 0; j < E->pipe.n; j++) {
        int lv = E->pipe.loads[j]->result;
        bool wg = E->async_tr_wgmma[lv] != 0;
        if (!E->async_tr_ld[lv] || early != (wg && E->pipe.tr_early)) continue;
        const char *src = stage_offset(E, j, ce_fmt_str(E, "%s_it %% %d", i, E->pipe.stages));
        const char *tr = ce_fmt_str(E, "%lld", (long long)E->async_tr_off[lv]);
        if (wg && E->pipe.tr_copies > 1)
            tr = ce_fmt_str(E, "%s + (%s_it %% %d) * %lld", tr, i, E->pipe.tr_copies, (long long)tr_bytes(E, lv));
        if (E->pipe.tr_inplace[j]) {
            tr = src;   /* (in its own stage buffer) */
            emit_transpose_in_place(E, E->pipe.loads[j], tr, E->pipe.tr_offs[j]);
        } else {
            emit_transpose(E, E->pipe.loads[j], src, tr);
        }
        E->async_tr_ptr[lv] = ce_fmt_str(E, "(tile_async + %s)", tr);
        *made = true;
        for_wgmma |= wg;
    }
    return for_wgmma;
}

void ce_async_loop_top(Emitter *E, const IrOp *loop, const char *i) {
    int S = E->pipe.stages, L = E->pipe.lookahead;
    bool cp_async = false;
    for (int j = 0; j < E->pipe.n; j++) cp_async |= !E->pipe.tma[j];
    if (cp_async) ce_out(E, "tile_cp_async_wait<%d>();   /* this iteration's copies have landed */", L - 1);
    if (E->pipe.tma_bytes)
        ce_out(E, "tile_mbar_wait(%s, (unsigned)(%s_it / %d) & 1);   /* ... and its TMA copies */",
               stage_barrier(E, ce_fmt_str(E, "%s_it %% %d", i, S)), i, S);
    bool fence = false;
    for (int j = 0; j < E->pipe.n; j++) {
        int lv = E->pipe.loads[j]->result;
        /* (the copies and the rounding write through the generic proxy, TMA
         * through the async one: a fence where wgmma reads what the generic
         * proxy wrote, and where a TMA buffer was rounded, so that the
         * rounding's stores are ordered before TMA fills the stage again) */
        fence |= (E->async_core[lv] && !E->pipe.tma[j]) || (E->pipe.tma[j] && E->async_round[lv]);
        if (E->async_round[lv])
            emit_round(E, E->pipe.loads[j], stage_offset(E, j, ce_fmt_str(E, "%s_it %% %d", i, S)));
    }
    bool made_early = false;
    if (E->pipe.tr_early) fence |= emit_transposes(E, i, true, &made_early);
    if (fence) ce_out(E, "tile_fence_proxy_async();   /* ... visible to wgmma and TMA */");
    const char *free_wait = NULL;
    if (E->pipe.release) {   /* (iteration it + L - S read the stage last, if there was one) */
        free_wait = ce_fmt_str(E, "{ if (%s_it >= %d) tile_mbar_wait(%s, (unsigned)((%s_it + %d) / %d - 1) & 1); }   "
                                  "/* the warps have released the stage */",
                               i, S - L, release_barrier(E, ce_fmt_str(E, "(%s_it + %d) %% %d", i, L, S)), i, L, S);
    } else if (E->pipe.wgmma_inflight) {
        ce_out(E, "__syncthreads();             /* ... for every thread; the buffer of two iterations ago is free */");
        E->scratch_clean = true;
    } else {
        ce_out(E, "__syncthreads();             /* ... for every thread; the last iteration's buffer is free */");
        E->scratch_clean = true;
    }
    issue_iteration(E, loop, i, ce_fmt_str(E, "%s + %d * %s_st", i, L, i), ce_fmt_str(E, "(%s_it + %d) %% %d", i, L, S),
                    free_wait);
    bool transposed = false;
    if (emit_transposes(E, i, false, &transposed)) ce_out(E, "tile_fence_proxy_async();   /* ... visible to wgmma */");
    if (transposed) ce_out(E, "__syncthreads();             /* ... the transposed copies too */");
    E->pipe.stage = ce_fmt_str(E, "%s_st%d", i, S);
    ce_out(E, "const int %s = %s_it %% %d;", E->pipe.stage, i, S);
}

void ce_async_loop_bottom(Emitter *E) {
    if (!E->pipe.release) return;
    /* (__syncwarp orders the other lanes' reads of the stage before lane 0's arrival) */
    ce_out(E, "__syncwarp();");
    ce_out(E, "if (lane == 0) tile_mbar_arrive(%s);   /* this warp is done with the stage */",
           release_barrier(E, E->pipe.stage));
}

void ce_async_loop_end(Emitter *E, bool pipelined, AsyncLoopState *save) {
    /* the transposed copies' buffers end with the loop (a later pass may not
     * pipeline it: mark_transposed's loads are then read where they land,
     * wgmma's send the kernel to be emitted again, publish) */
    for (int j = 0; j < E->pipe.n; j++) E->async_tr_ld[E->pipe.loads[j]->result] = 0;
    if (pipelined && E->pipe.wgmma_inflight) {
        ce_out(E, "tile_wgmma_wait0();   /* the last batch of products */");
        /* their accumulators hold the results only now: no read of them may
         * move above the wait (ptxas would serialize every product, C7514) */
        for (int l = 0; l < E->f->nlocals; l++)
            if (E->local_wgmma[l] && E->local_lay[l] >= 0)
                ce_wgmma_fence_registers(E, ce_fmt_str(E, "l%d", l), E->local_lay[l]);
    }
    if (pipelined) {
        ce_out(E, "tile_cp_async_wait_all();");
        ce_out(E, "__syncthreads();");
    }
    if (pipelined && E->pipe.tma_bytes) {
        /* every copy issued has been waited for (the loop cannot leave early:
         * plan_tma): the barriers' memory may serve other uses again */
        ce_out(E, "if (threadIdx.x == 0) {");
        E->indent++;
        for (int st = 0; st < E->pipe.stages; st++) ce_out(E, "tile_mbar_inval(%s);", stage_barrier(E, ce_fmt_str(E, "%d", st)));
        for (int st = 0; E->pipe.release && st < E->pipe.stages; st++)
            ce_out(E, "tile_mbar_inval(%s);", release_barrier(E, ce_fmt_str(E, "%d", st)));
        E->indent--;
        ce_out(E, "}");
    }
    E->pipe = save->pipe;
    E->async_top = save->top;
}

/* ---- loads copied an iteration ahead in a loop without a pipeline -------------------- */

/* Can blk leave an iteration early (break, continue, return)? */
static bool may_leave(const IrBlock *blk) {
    if (!blk) return false;
    for (int i = 0; i < blk->nops; i++) {
        const IrOp *o = blk->ops[i];
        if (o->op == OP_BREAK || o->op == OP_CONTINUE || o->op == OP_RETURN) return true;
        if (may_leave(o->body) || may_leave(o->else_body)) return true;
    }
    return false;
}

/* The prefetched loads' copies for the iteration whose induction variable
 * is `iv` (a C expression). */
static void issue_prefetch(Emitter *E, const char *iv) {
    const char *dst[ASYNC_MAX_PIPE];
    for (int j = 0; j < E->pipe.pf_n; j++) dst[j] = ce_fmt_str(E, "%lld", (long long)E->pipe.pf_off[j]);
    issue_ahead(E, E->pipe.pf_loop, E->pipe.pf_i, iv, E->pipe.pf_n, E->pipe.pf_loads, dst, E->pipe.pf_chain, NULL, NULL);
}

/* A loop that holds a loop gets no pipeline (ce_async_loop_begin), so each
 * of its single async loads -- an mma operand copied, waited for and made
 * visible where it stands -- costs the block a whole memory latency every
 * iteration: Mamba-2's compute_out waits so for each head's 16 KB state.
 * Such a load at the top level of the body, before any nested loop or
 * branch, its indices recomputable for the next iteration and its array not
 * written in the loop, gets a buffer for the loop's duration; the first
 * iteration's copies are issued before the loop, and the next iteration's at the end of the body (ce_async_prefetch_next),
 * so that they land while the next iteration starts, in the same shared
 * memory.  Not right after the product that reads the buffer: there, with
 * that product's result and the inner loop's operands live, the copies'
 * addresses cost compute_out the registers of its fourth block per SM (H200,
 * anchor: 0.809 ms without the prefetch, 0.878 issued after the product,
 * 0.782 at the body's end; docs/performance.md). */
void ce_async_prefetch_begin(Emitter *E, const IrOp *loop, const char *i, const char *lo) {
    if (E->opt_no_prefetch || ce_vdt(E, loop->result) == DT_U64 || !contains_long_loop(E, loop->body) ||
        may_leave(loop->body))
        return;
    bool *chain = ARENA_ARRAY(&E->mem, bool, E->f->nvalues + 1);
    for (int v = 0; v <= E->f->nvalues; v++) chain[v] = false;
    const IrBlock *body = loop->body;
    /* (a load after the inner loop would keep its buffer under that loop's
     * pipeline, and gain nothing: the pipeline's first wait waits for it) */
    for (int k = 0; k < body->nops && !body->ops[k]->body && E->pipe.pf_n < ASYNC_MAX_PIPE; k++) {
        const IrOp *ld = body->ops[k];
        if (ld->op != OP_LOAD || !ce_async_is_load(E, ld->result) || writes_array(body, ld->array)) continue;
        bool ok = true;
        for (int a = 0; a < ld->nargs && ok; a++) ok = recomputable(E, loop, ld->args[a], chain, 0);
        if (!ok) continue;
        int j = E->pipe.pf_n++;
        E->pipe.pf_loads[j] = ld;
        E->pipe.pf_off[j] = async_alloc(E, ld->result, tile_bytes(E, ld->result));
        ce_mem_access(E, ld->array, IR_MEM_READ);
    }
    if (!E->pipe.pf_n) return;
    E->pipe.pf_loop = loop;
    E->pipe.pf_i = i;
    E->pipe.pf_chain = chain;
    ce_out(E, "/* copied an iteration ahead: %d load%s */", E->pipe.pf_n, E->pipe.pf_n > 1 ? "s" : "");
    ce_out(E, "__syncthreads();   /* the buffers' last readers (an earlier block's) are done */");
    issue_prefetch(E, ce_fmt_str(E, "(long long)%s", lo));
}

static int prefetch_index(const Emitter *E, const IrOp *ld) {
    for (int j = 0; j < E->pipe.pf_n; j++)
        if (E->pipe.pf_loads[j] == ld) return j;
    return -1;
}

/* Where a prefetched load stands: its copies (issued an iteration ago, or
 * before the loop) waited for and made visible. */
static void emit_prefetched(Emitter *E, const IrOp *ld, int j) {
    publish(E, ld, E->pipe.pf_off[j], "   /* copied an iteration ahead */");
}

void ce_async_prefetch_next(Emitter *E) {
    if (!E->pipe.pf_n) return;
    ce_out(E, "__syncthreads();   /* the buffers' readers are done: the next iteration's copies */");
    issue_prefetch(E, ce_fmt_str(E, "%s + %s_st", E->pipe.pf_i, E->pipe.pf_i));
}

/* ---- the mma side ------------------------------------------------------------------- */

/* The chain of async operand `id` and the operand dim its rows are contiguous
 * in; false when `id` is not an async operand. */
static bool operand_chain(Emitter *E, int id, const IrOp **ops, int *n, int *col_dim, bool *round) {
    if (!ce_async_is_view(E, id) && !ce_async_is_load(E, id)) return false;
    *n = chain_of(E, id, ops, 16);
    return *n && chain_geometry(E, ops, *n, col_dim, round);
}

int ce_async_operand_load(Emitter *E, int id, int *col_dim, bool *round) {
    const IrOp *ops[16];
    int n, cd;
    bool rounds;
    if (!operand_chain(E, id, ops, &n, &cd, &rounds)) return -1;
    if (col_dim) *col_dim = cd;
    if (round) *round = rounds;
    return ops[0]->result;
}

/* ---- tf32 operands rounded once in shared memory ---------------------------------- */

/* The least warp reads per element (summed over the products reading a
 * buffer) at which a tf32 buffer mma.sync reads is rounded in shared memory
 * (ce_async_plan_rounding). */
#define ROUND_IN_SMEM_READS 4

/* Product o's part of the tally (ce_each_mma): for each async load lv it
 * reads, round_how[lv] bit 1, an operand cast to tf32 on its way, bit 2, one
 * that is not; round_reads[lv] += the warps reading each element (A's rows
 * are read by the warps along N, B's columns by those along M: the plan's
 * split). */
static void tally_rounding(Emitter *E, const IrOp *o) {
    int wmb, wnb;
    if (E->wgmma_split && E->wgmma_split[o->result] >= 0) return;   /* (ce_wgmma_plan rounds what wgmma reads) */
    ce_plan_split(E, o, &wmb, &wnb);
    for (int w = 0; w < 2; w++) {
        bool round = false;
        int lv = ce_async_operand_load(E, o->args[w], NULL, &round);
        if (lv < 0 || !ce_async_is_load(E, lv)) continue;
        E->round_how[lv] |= round ? 1 : 2;
        E->round_reads[lv] += 1 << (w == 0 ? wnb : wmb);
    }
}

/* An f32 tile that mma.sync products read as tf32 is rounded at each
 * fragment read (then cvt.rna: a compare and a predicated add a register,
 * ptxas; cvt.rn since, one instruction), by every warp that reads it;
 * rounded in place once it lands instead, as wgmma's buffers are (emit_round: each thread the pieces it
 * copied, between the wait and the barrier), its fragments are read as they
 * lie.  The pass costs a shared-memory round trip and sits before the
 * barrier, so it pays only where many warps read each element.  Measured
 * on the H200 (2026-12-03, every such buffer rounded in place against
 * none): the tf32 Mamba-2 scan, each element of whose B_k 8 warps read (4
 * for its scores, 4 for the state), 2.352 -> 2.280 ms at (8, 4096, 80, 64,
 * 128) (Nsight had FSETP at 16.5% of its instructions); fwd_pass_state_f32
 * (2 warps) 0.778 -> 0.884, the K x N tf32 matmul (2 warps an operand)
 * 157 -> 143 TFLOP/s at 8192^3.  Hence from ROUND_IN_SMEM_READS reads on
 * (the scan 2.353 -> 2.201 ms, its C_k, read by one warp per product,
 * rounded at the read; the other two unchanged), when every product
 * reading the buffer casts it to tf32 (an async load is read by products
 * alone).  Not under TILEC_TF32_TRUNCATE (its wgmma
 * buffers stay unrounded) nor TILEC_TF32_ROUND_AT_READ. */
void ce_async_plan_rounding(Emitter *E) {
    if (E->opt_tf32_truncate || E->opt_tf32_round_at_read) return;
    int n = E->f->nvalues + 1;
    E->round_how = ARENA_ARRAY(&E->mem, unsigned char, n);
    E->round_reads = ARENA_ARRAY(&E->mem, int, n);
    for (int i = 0; i < n; i++) E->round_how[i] = 0, E->round_reads[i] = 0;
    ce_each_mma(E, E->f->body, tally_rounding);
    for (int i = 0; i < n; i++)
        if (E->round_how[i] == 1 && E->round_reads[i] >= ROUND_IN_SMEM_READS && !ce_async_exact_reads(E, i))
            E->async_round[i] = true;
}

bool ce_async_operand_kmajor(Emitter *E, int id, int which, bool *kmajor) {
    const IrOp *ops[16];
    int n, col_dim;
    bool round;
    if (!operand_chain(E, id, ops, &n, &col_dim, &round)) return false;
    *kmajor = which == 0 ? col_dim == 1 : col_dim == 0;
    return true;
}

bool ce_async_operand(Emitter *E, int id, int which, SmemOperand *out) {
    const IrOp *ops[16];
    int n, col_dim;
    bool round;
    if (!operand_chain(E, id, ops, &n, &col_dim, &round)) return false;
    int lv = ops[0]->result;
    if (!E->async_ptr[lv]) return false;
    DType dt = ce_vdt(E, lv);
    int row, col;
    load_axes(ops[0], ce_vtype(E, lv), &row, &col);
    if (col_dim == which && E->async_tr_ld[lv]) {   /* its transposed copy (mark_transposed, tr_alloc) */
        *out = (SmemOperand){.base = ce_fmt_str(E, "((const float *)%s)", E->async_tr_ptr[lv]), .ld = E->async_tr_ld[lv],
                             .kmajor = true, .swizzle = E->async_tr_wgmma[lv], .rows = ce_vtype(E, lv)->shape[col]};
        return true;
    }
    *out = (SmemOperand){0};
    out->base = ce_fmt_str(E, "((const %s *)%s)", ce_ctype(dt), E->async_ptr[lv]);
    out->ld = E->async_pitch[lv];
    out->kmajor = which == 0 ? col_dim == 1 : col_dim == 0;
    out->round_tf32 = round && !E->async_round[lv];   /* (else rounded once it landed) */
    /* (wgmma's swizzled buffers are mma.sync's at the same width: a buffer
     * both read is swizzled, ce_wgmma_plan sees to it) */
    out->swizzle = E->async_swizzle[lv];
    out->rows = tile_rows(ce_vtype(E, lv), row);
    return true;
}
