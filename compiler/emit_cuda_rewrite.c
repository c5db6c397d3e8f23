/* emit_cuda_rewrite.c: rewrites of the tile IR that the CUDA emitter makes
 * for its target before it plans anything.  The kernel's IR is not touched:
 * where a rewrite applies, the emitter works on a copy (ir_clone).
 *
 * The one rewrite so far: on sm_90a, a tf32 product whose B tile lies in
 * shared memory N-major (B stored [K][N], as matmul_tf32's) is computed as
 * its transpose, C^T = B^T A^T.  wgmma reads 32-bit operands from shared
 * memory only K-major, so B would otherwise be copied transposed (and
 * rounded) each iteration, which with A's rounding in place and both warp
 * groups' reads makes such a kernel bound by shared memory's bandwidth
 * (docs/performance.md, "Issue 3's matmuls").  Transposed, B^T is wgmma's A,
 * read from B's buffer into registers as it landed and rounded there, and A,
 * stored [M][K], is a K-major B as it lies: nothing is written back.  The
 * permutes the rewrite adds cost nothing: a permuted tile's layout is its
 * operand's with the axes renamed (layout.h). */
#include "emit_cuda_int.h"

#include <string.h>

/* The load at the end of `v`'s chain of casts and permutes, and the axis of
 * v's tile (0 or 1) that is contiguous in memory; NULL if the chain holds
 * anything else or the tile is not a plain 2-D one. */
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
        if (d->op == OP_PERMUTE) {
            for (int a = 0; a < 2; a++) axis_map[a] = d->ints[axis_map[a]];
        } else if (d->op != OP_CAST) {
            return NULL;
        }
        v = d->args[0];
    }
    return NULL;
}

/* Does product `o` go better as its transpose (the file's comment)?  Its A
 * must be K-major and its B N-major, both loads (wgmma's operands by
 * cp.async or TMA); transposed, B^T must be an A wgmma reads from registers
 * (every warp 16 of its rows: N = 16 * warps) and B's tile small enough to
 * ride the pipeline when read into registers. */
static bool goes_transposed(const IrFunc *f, const IrOp *o, int warpbits, long long readback_max) {
    const Type *at = &f->values[o->args[0]].type, *bt = &f->values[o->args[1]].type, *t = &f->values[o->result].type;
    if (at->rank != 2 || bt->rank != 2 || t->rank != 2) return false;
    if (at->dtype != DT_TF32 || bt->dtype != DT_TF32 || t->dtype != DT_F32) return false;
    int M = at->shape[0], K = at->shape[1], N = bt->shape[1], a_col, b_col;
    if (warpbits < 2 || N != 16 << warpbits || K % 8 || M % 8 || M > 256) return false;
    if ((long long)K * N * 4 > readback_max) return false;
    const IrOp *la = chain_load(f, o->args[0], &a_col), *lb = chain_load(f, o->args[1], &b_col);
    return la && lb && la != lb && a_col == 1 && b_col == 1;
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
 * r'^T (r's uses read it unchanged).  *at is left at the last op inserted. */
static void transpose_product(IrFunc *f, IrBlock *blk, int *at, IrOp *o) {
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
}

static int rewrite_block(IrFunc *f, IrBlock *blk, int warpbits, long long readback_max) {
    int n = 0;
    for (int i = 0; blk && i < blk->nops; i++) {
        IrOp *o = blk->ops[i];
        if (o->op == OP_MMA && goes_transposed(f, o, warpbits, readback_max)) {
            transpose_product(f, blk, &i, o);
            n++;
            continue;
        }
        n += rewrite_block(f, o->body, warpbits, readback_max);
        n += rewrite_block(f, o->else_body, warpbits, readback_max);
    }
    return n;
}

static int count_block(const IrFunc *f, const IrBlock *blk, int warpbits, long long readback_max) {
    int n = 0;
    for (int i = 0; blk && i < blk->nops; i++) {
        const IrOp *o = blk->ops[i];
        n += o->op == OP_MMA && goes_transposed(f, o, warpbits, readback_max);
        n += count_block(f, o->body, warpbits, readback_max) + count_block(f, o->else_body, warpbits, readback_max);
    }
    return n;
}

const IrFunc *ce_rewrite_for_target(Emitter *E, const IrFunc *f) {
    long long readback_max = E->readback_max_bytes >= 0 ? E->readback_max_bytes : CE_READBACK_MAX_BYTES;
    /* (not where tf32 K x N products stay on mma.sync: TILEC_NO_WGMMA_TRANSPOSE,
     * or the emission again without their copies, emit_kernel) */
    if (!E->opt_transposed_products || !E->opt_wgmma || E->opt_wgmma_noreg || E->opt_no_wgmma_transpose) return f;
    if (!count_block(f, f->body, E->warpbits, readback_max)) return f;
    IrFunc *c = ir_clone(&E->mem, f);
    rewrite_block(c, c->body, E->warpbits, readback_max);
    return c;
}
