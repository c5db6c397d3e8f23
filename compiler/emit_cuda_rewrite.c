/* emit_cuda_rewrite.c: rewrites of the tile IR that the CUDA emitter makes
 * for its target before it plans anything.  The kernel's IR is not touched:
 * where a rewrite applies, the emitter works on a copy (ir_clone).
 *
 * The one rewrite so far (TILEC_TRANSPOSED_PRODUCTS=1, opt-in: on an H100
 * no faster than the transposition in place): on sm_90a, a tf32 product
 * whose B tile lies in shared memory N-major (B stored [K][N], as
 * matmul_tf32's) is computed as its
 * transpose, C^T = B^T A^T.  wgmma reads 32-bit operands from shared memory
 * only K-major, so B would otherwise be copied transposed (and rounded) each
 * iteration, which with A's rounding in place and both warp groups' reads
 * makes such a kernel bound by shared memory's bandwidth (docs/performance.md,
 * "Issue 3's matmuls").  Transposed, B^T is wgmma's A, read from B's buffer
 * into registers as it landed and rounded there (B's buffer is not written
 * again), and A, stored [M][K], is a K-major B as it lies (rounded in place
 * as before).  The permutes the rewrite adds relabel layouts (layout.h): no
 * data moves where the accumulator stays in the product's layout, which the
 * rewrite asks of its use (a `var` only this product updates).  Where the
 * emitted kernel did not give the product that form after all (B not on the
 * pipeline, no register A), ce_rewrite_held says so and the kernel is
 * emitted again as written (emit_cuda.c). */
#include "emit_cuda_int.h"

/* The load at the end of `v`'s chain of views (ce_async_view_op: casts to
 * the same storage or f32 to tf32, and permutes; not reshapes, whose axes
 * this does not follow), and the axis of v's tile (0 or 1) that is
 * contiguous in memory; NULL if the chain holds anything else or the tile
 * is not a plain 2-D one. */
static const IrOp *chain_load(const IrFunc *f, int v, int *contiguous) {
    int axis_map[2] = {0, 1};   /* v's axis d is the chain's current axis axis_map[d] */
    for (int depth = 0; depth < 16 && v >= 0; depth++) {
        const IrOp *d = f->values[v].def;
        const Type *t = &f->values[v].type;
        if (!d || t->rank != 2) return NULL;
        if (d->op == OP_LOAD) {
            if (d->flag != PAD_ZERO) return NULL;
            int col = -1;   /* the tile axis that holds the array's last axis */
            for (int a = 0; a < 2; a++)
                if ((d->nints == 2 ? d->ints[a] : a) == 1) col = a;
            if (col < 0) return NULL;
            *contiguous = axis_map[0] == col ? 0 : 1;
            return d;
        }
        if (!ce_async_view_op(f, d) || d->op == OP_RESHAPE) return NULL;
        if (d->op == OP_PERMUTE)
            for (int a = 0; a < 2; a++) axis_map[a] = d->ints[axis_map[a]];
        v = d->args[0];
    }
    return NULL;
}

typedef struct Uses {
    int *count;           /* per value: how many operands read it (ir_count_uses) */
    const IrOp **single;  /* per value: its reader, where it has one */
} Uses;

/* Is every value of v's chain (down to its load) read by its one reader? */
static bool chain_single_use(const IrFunc *f, const Uses *u, int v) {
    for (int depth = 0; depth < 16 && v >= 0; depth++) {
        if (u->count[v] != 1) return false;
        const IrOp *d = f->values[v].def;
        if (!d || d->op == OP_LOAD) return d != NULL;
        v = d->args[0];
    }
    return false;
}

/* Does `reader` (NULL: several readers) lead only to a store: a store, or a
 * chain of casts and element-wise ops, each read once, ending in one (an
 * epilogue such as acc * alpha + bias)? */
static bool read_for_store(const Uses *u, const IrOp *reader) {
    for (int depth = 0; reader && depth < 16; depth++) {
        if (reader->op == OP_STORE) return true;
        if ((reader->op != OP_CAST && !ir_op_is_elementwise(reader->op)) || reader->result < 0 ||
            u->count[reader->result] != 1)
            return false;
        reader = u->single[reader->result];
    }
    return false;
}

/* Does some op of blk (or the blocks it holds) other than `self` write local
 * `l` with another product's result, or read it into a product or anything
 * that feeds one (the accumulator must stay this product's alone, so that
 * the permutes stay relabellings)? */
static bool local_shared(const IrFunc *f, const Uses *u, const IrBlock *blk, int l, const IrOp *self) {
    for (int i = 0; blk && i < blk->nops; i++) {
        const IrOp *o = blk->ops[i];
        if (o->op == OP_LOCAL_SET && o->local == l && o->nargs > 0) {
            const IrOp *src = f->values[o->args[0]].def;
            if (src && src->op == OP_MMA && src != self) return true;
        }
        if (o->op == OP_LOCAL_GET && o->local == l && o->result >= 0) {
            const IrOp *reader = u->count[o->result] == 1 ? u->single[o->result] : NULL;
            if (reader != self && !read_for_store(u, reader)) return true;
        }
        if (local_shared(f, u, o->body, l, self) || local_shared(f, u, o->else_body, l, self)) return true;
    }
    return false;
}

/* Does product `o` go better as its transpose (the file's comment)?  Its A
 * must be K-major and its B N-major, each a chain of views read by `o` alone
 * down to a load cp.async can copy (aligned arrays, zero padding, 16-byte
 * rows); transposed, B^T must be an A wgmma reads from registers (every warp
 * 16 of its rows: N = 16 * warps) and B's tile small enough to ride the
 * pipeline when read into registers; and C must be a `var` that only `o`
 * updates, read after it only by stores. */
static bool goes_transposed(Emitter *E, const IrFunc *f, const Uses *u, const IrOp *o, long long readback_max) {
    const Type *at = &f->values[o->args[0]].type, *bt = &f->values[o->args[1]].type, *t = &f->values[o->result].type;
    if (at->rank != 2 || bt->rank != 2 || t->rank != 2) return false;
    if (at->dtype != DT_TF32 || bt->dtype != DT_TF32 || t->dtype != DT_F32) return false;
    int M = at->shape[0], K = at->shape[1], N = bt->shape[1], a_col, b_col;
    if (E->warpbits < 2 || N != 16 << E->warpbits || K % 8 || M % 8 || M > 256) return false;
    if ((long long)K * N * 4 > readback_max) return false;
    const IrOp *la = chain_load(f, o->args[0], &a_col), *lb = chain_load(f, o->args[1], &b_col);
    if (!la || !lb || la == lb || a_col != 1 || b_col != 1) return false;
    if (!(ce_array_flags(E, la->array) & CUDA_ARRAY_VEC16) || !(ce_array_flags(E, lb->array) & CUDA_ARRAY_VEC16)) return false;
    if (!chain_single_use(f, u, o->args[0]) || !chain_single_use(f, u, o->args[1])) return false;
    /* the accumulator: acc = mma(a, b, acc), acc a local of this product's alone */
    const IrOp *c = f->values[o->args[2]].def, *w = u->count[o->result] == 1 ? u->single[o->result] : NULL;
    if (!c || c->op != OP_LOCAL_GET || !w || w->op != OP_LOCAL_SET || w->local != c->local) return false;
    return !local_shared(f, u, f->body, c->local, o);
}

/* A permute of value v's two axes inserted at ops[*at] of blk (*at moves
 * past it); its result is value `result`, or a new one if that is -1. */
static int insert_transpose(IrFunc *f, IrBlock *blk, int *at, int v, int result, Loc loc) {
    IrOp *p = ARENA_NEW(f->arena, IrOp);
    p->op = OP_PERMUTE;
    p->loc = loc;
    p->nargs = 1;
    p->args = ARENA_ARRAY(f->arena, int, 1);
    p->args[0] = v;
    p->nints = 2;
    p->ints[0] = 1;
    p->ints[1] = 0;
    if (result < 0) {
        Type rt = f->values[v].type;
        rt.shape[0] = f->values[v].type.shape[1];
        rt.shape[1] = f->values[v].type.shape[0];
        result = ir_new_value(f, rt, p);
    }
    p->result = result;
    f->values[result].def = p;
    ir_block_insert(f->arena, blk, (*at)++, p);
    return result;
}

/* ops[*at] of blk, r = mma(A, B, C), becomes r' = mma(B^T, A^T, C^T); r =
 * r'^T (r's uses read it unchanged).  *at is left at the last op inserted;
 * returns r'. */
static int transpose_product(IrFunc *f, IrBlock *blk, int *at, IrOp *o) {
    int bt = insert_transpose(f, blk, at, o->args[1], -1, o->loc);
    int att = insert_transpose(f, blk, at, o->args[0], -1, o->loc);
    int ct = insert_transpose(f, blk, at, o->args[2], -1, o->loc);
    o->args[0] = bt, o->args[1] = att, o->args[2] = ct;
    int r = o->result;
    Type rt = f->values[r].type;
    rt.shape[0] = f->values[r].type.shape[1];
    rt.shape[1] = f->values[r].type.shape[0];
    o->result = ir_new_value(f, rt, o);
    (*at)++;   /* past o */
    insert_transpose(f, blk, at, o->result, r, o->loc);
    (*at)--;
    return o->result;
}

/* Rewrites (or, with `marks` NULL, counts) the products of blk that go
 * transposed; the new products' results are recorded in marks. */
static int rewrite_block(Emitter *E, IrFunc *f, const Uses *u, IrBlock *blk, long long readback_max, int *marks,
                         int nmarks) {
    int n = 0;
    for (int i = 0; blk && i < blk->nops; i++) {
        IrOp *o = blk->ops[i];
        if (o->op == OP_MMA && goes_transposed(E, f, u, o, readback_max)) {
            if (marks && n < nmarks) marks[n] = transpose_product(f, blk, &i, o);
            n++;
            continue;
        }
        n += rewrite_block(E, f, u, o->body, readback_max, marks ? marks + n : NULL, nmarks - n);
        n += rewrite_block(E, f, u, o->else_body, readback_max, marks ? marks + n : NULL, nmarks - n);
    }
    return n;
}

const IrFunc *ce_rewrite_for_target(Emitter *E, const IrFunc *f) {
    long long readback_max = E->readback_max_bytes >= 0 ? E->readback_max_bytes : CE_READBACK_MAX_BYTES;
    /* (not where tf32 K x N products stay on mma.sync: TILEC_NO_WGMMA_TRANSPOSE,
     * or the emission again without their copies, emit_kernel) */
    if (!E->opt_transposed_products || !E->opt_wgmma || E->opt_wgmma_noreg || E->opt_no_wgmma_transpose) return f;
    Uses u = {ARENA_ARRAY(&E->mem, int, f->nvalues + 1), ARENA_ARRAY(&E->mem, const IrOp *, f->nvalues + 1)};
    ir_count_uses(f, u.count, u.single);
    int n = rewrite_block(E, (IrFunc *)f, &u, f->body, readback_max, NULL, 0);   /* (counts: f unchanged) */
    if (!n) return f;
    IrFunc *c = ir_clone(&E->mem, f);
    ir_count_uses(c, u.count, u.single);   /* (the same values, read by the copy's ops) */
    int *marks = ARENA_ARRAY(&E->mem, int, n);
    n = rewrite_block(E, c, &u, c->body, readback_max, marks, n);
    E->transposed = ARENA_ARRAY(&E->mem, bool, c->nvalues + 1);
    for (int i = 0; i <= c->nvalues; i++) E->transposed[i] = false;
    for (int i = 0; i < n; i++) E->transposed[marks[i]] = true;
    return c;
}

bool ce_rewrite_held(Emitter *E) {
    for (int v = 0; E->transposed && v < E->f->nvalues; v++) {
        if (!E->transposed[v]) continue;
        const IrOp *o = E->f->values[v].def;
        int col;
        const IrOp *lb = chain_load(E->f, o->args[0], &col);   /* B's load, now A's */
        if (!ce_wgmma_reads_registers(E, o) || !lb || E->async_stages[lb->result] <= 0) return false;
    }
    return true;
}
