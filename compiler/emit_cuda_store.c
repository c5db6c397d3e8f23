/* emit_cuda_store.c: 16-bit tiles stored by the tensor memory accelerator.
 *
 * A tile in an mma accumulator's layout holds, per thread, pairs of
 * neighbouring columns of a few rows: stored where it lies, every warp-wide
 * store writes 4 bytes a lane, eight rows of 16 bytes (Mamba-2's ssd_scan:
 * 16 such stores a thread for each step's 64 x 64 y tile, 7% of its stall
 * samples on the H200, docs/performance.md).  On sm_90a such a tile goes
 * instead through shared memory: each warp writes its own rows into a
 * buffer of its own, in the swizzled layout a TMA box lands in (4-byte
 * stores, free of bank conflicts for an accumulator's layout), and one lane
 * hands the box to the tensor memory accelerator, which writes it to global
 * memory whole, clipping what lies outside the array, while the warp goes on.
 * No barrier: a warp waits only until its previous box has been read out of
 * its buffer before writing the buffer again.
 *
 * Which stores (ce_tma_store): 16-bit tiles, on sm_90a unless TILEC_NO_TMA or
 * TILEC_NO_TMA_STORE, into an array a tensor map can describe
 * (CUDA_ARRAY_TMA) that nothing in the kernel reads (a TMA write completes
 * asynchronously: a later read by another thread would need its wait), the
 * tile's view in the array's axis order, every thread holding distinct
 * elements, register pairs holding neighbouring elements of the last axis,
 * and each warp a box: its warp bits the high bits of each axis.
 * Ordering: before every barrier that orders accesses of an array
 * (ce_mem_access), once the kernel has stores by TMA, every warp waits until
 * they are written (ce_tma_store_drain: such a barrier orders all arrays'
 * earlier accesses); before the kernel ends, or returns, until they have been
 * read from shared memory.  A plain store of an array that also has stores by
 * TMA is followed by a fence of the async proxy, so that a later TMA store
 * lands after it.  The buffers lie after all other shared memory
 * (tile_stage, emit_cuda.c), one stride a warp for all its stores (the
 * largest box); when they would cost the kernel a block per SM, cuda_emit
 * emits it again with only the stores of smaller boxes by TMA (stage_cap),
 * down to none.
 * Prefix: ce_. */
#include "emit_cuda_int.h"

#include <stdlib.h>
#include <string.h>

/* Arrays that only stores access in f (per parameter), which TMA may write. */
static void only_stored(const IrBlock *blk, bool *ok) {
    for (int i = 0; blk && i < blk->nops; i++) {
        const IrOp *o = blk->ops[i];
        if (ir_op_mem_access(o) != IR_MEM_NONE && o->op != OP_STORE && o->array >= 0) ok[o->array] = false;
        only_stored(o->body, ok);
        only_stored(o->else_body, ok);
    }
}

void ce_tma_store_analyse(Emitter *E) {
    const IrFunc *f = E->f;
    E->tma_store_ok = ARENA_ARRAY(&E->mem, bool, f->nparams + 1);
    E->tma_stored = ARENA_ARRAY(&E->mem, bool, f->nparams + 1);
    for (int i = 0; i < f->nparams; i++) E->tma_store_ok[i] = f->params[i].kind == IRP_ARRAY;
    only_stored(f->body, E->tma_store_ok);
}

void ce_tma_store_fence_plain(Emitter *E, int arr) {
    if (E->tma_stored[arr]) ce_out(E, "tile_fence_proxy_async_all();   /* before the copy engine's stores of %s */",
                                   E->f->params[arr].name);
}

void ce_tma_store_drain(Emitter *E, bool written) {
    if (!E->tma_store_any) return;
    ce_out(E, "if (lane == 0) %s();   /* this warp's stores by TMA %s */", written ? "tile_bulk_wait" : "tile_bulk_wait_read",
           written ? "written" : "read out of shared memory");
}

/* The box each warp of layout L (tile shape `shape`, rank dims) holds:
 * box[d] elements along axis d, its coordinate bits below the warp's; false
 * when a warp's elements are not such a box. */
static bool warp_box(const Layout *L, int rank, const int *shape, int *box) {
    for (int d = 0; d < rank; d++) {
        int n = lay_log2(shape[d]), k = n;
        for (int j = 0; j < n; j++) {
            bool warp = L->space[lay_pos(rank, shape, d, j)] == LAY_WARP;
            if (warp && k == n) k = j;
            else if (!warp && k < n) return false;   /* a thread's bit above a warp bit */
        }
        box[d] = 1 << k;
    }
    return true;
}

bool ce_tma_store(Emitter *E, const IrOp *op, int vid) {
    const Type *t = ce_vtype(E, vid);
    int rank = t->rank, arr = op->array, lay = ce_val(E, vid)->lay, es = ce_regsize(t->dtype);
    /* (16-bit only: 32-bit tiles the same way, tried, put Mamba-2's
     * once-per-block f32 state stores on TMA with 8 KB buffers a warp, but
     * not the tf32 scan's y, whose buffers would cost it a block: not kept,
     * untimed; their stores fill whole sectors anyway) */
    if (!E->opt_wgmma || E->opt_no_tma || E->opt_no_tma_store || !E->tma_store_ok[arr] || es != 2 || rank > 5 ||
        E->f->params[arr].rank != rank || !(ce_array_flags(E, arr) & CUDA_ARRAY_TMA))
        return false;
    for (int d = 0; op->nints == rank && d < rank; d++)
        if (op->ints[d] != d) return false;
    const Layout *L = ce_lay(E, lay);
    int box[TILE_MAX_RANK];
    if (!lay_full(L) || ce_owner(E, lay) || L->space[0] != LAY_REG || L->bit[0] != 0 || !warp_box(L, rank, t->shape, box))
        return false;
    int f = rank - 1, rows = 1, fb = box[f] * es, w = fb >= 128 ? 128 : fb;
    for (int d = 0; d < f; d++) rows *= box[d];
    /* (every box at the swizzle's alignment: 8 rows of w bytes) */
    for (int d = 0; d < f; d++)
        if (box[d] > 256) return false;
    if (w < 32 || fb % w || rows % 8 || rows * fb > E->stage_cap) return false;
    CudaTensorMap m;
    memset(&m, 0, sizeof m);
    m.param = arr;
    m.elem_bytes = es;
    m.swizzle = w;
    for (int d = 0; d < rank; d++) m.box[d] = d == f ? w / es : box[d];
    int map = ce_tma_map_add(E, &m);
    if (map < 0) return false;
    /* every store's buffer a warp at one stride, the largest box of this
     * pass or an earlier one (the final pass follows an analysis pass that
     * saw all its stores): a warp's buffers of two stores must not overlap
     * another warp's */
    int bytes = rows * fb;
    if (bytes > E->stage_stride) E->stage_stride = bytes;
    E->stage_bytes = (int64_t)E->stage_stride * (E->threads / 32);
    E->tma_stored[arr] = E->tma_store_any = true;

    ce_out(E, "{   /* stored by TMA: each warp its %d x %d box through shared memory (emit_cuda_store.c) */", rows, box[f]);
    E->indent++;
    ce_out(E, "unsigned char *S = tile_stage + warp * %d;", E->stage_stride);
    ce_out(E, "if (lane == 0) tile_bulk_wait_read();   /* the warp's last box has left its buffer */");
    ce_out(E, "__syncwarp();");
    /* the thread's coordinates inside its warp's box, then each register pair's */
    const char *in[TILE_MAX_RANK];
    for (int d = 0; d < rank; d++) {
        in[d] = ce_fresh(E, "wb");
        ce_out(E, "const int %s = %s & %d;", in[d], ce_thread_coord(E, lay, d), box[d] - 1);
    }
    const char *name = ce_val(E, vid)->name;
    for (int r = 0; r < ce_nregs(E, lay); r += 2) {
        Buf row = {0};
        ce_buf_printf(&row, "0");
        for (int d = 0, stride = rows; d < f; d++) {
            stride /= box[d];
            ce_buf_printf(&row, " + (%s + %lld) * %d", in[d], (long long)ce_reg_coord(E, lay, r, d), stride);
        }
        const char *col = ce_fmt_str(E, "(%s + %lld)", in[f], (long long)ce_reg_coord(E, lay, r, f));
        const char *at = ce_fmt_str(E, "%s + (%s * %d & 15)", ce_swizzle_offset(E, w, ce_fmt_str(E, "(%s)", row.p), col, rows, es),
                                    col, es);
        const char *x = ce_reg(E, name, lay, r), *y = ce_reg(E, name, lay, r + 1);
        ce_out(E, "*(unsigned *)(S + %s) = (unsigned)(unsigned short)%s | ((unsigned)(unsigned short)%s << 16);", at, x, y);
        free(row.p);
    }
    ce_out(E, "tile_fence_proxy_async();   /* the writes made visible to the copy engine */");
    ce_out(E, "__syncwarp();");
    ce_out(E, "if (lane == 0) {");
    E->indent++;
    for (int h = 0; h < fb / w; h++) {
        Buf c = {0};
        for (int d = rank - 1; d >= 0; d--) {   /* innermost first; the warp's box within the tile */
            ce_buf_printf(&c, ", tile_tma_coord((long long)%s * %d + (%s & ~%d)%s)", ce_vreg(E, op->args[d], 0), t->shape[d],
                          ce_thread_coord(E, lay, d), box[d] - 1, d == f && h ? ce_fmt_str(E, " + %d", h * w / es) : "");
        }
        ce_out(E, "tile_tma_store(S + %d, &tm%d%s);", h * rows * w, map, c.p);
        free(c.p);
    }
    ce_out(E, "tile_bulk_commit();");
    E->indent--;
    ce_out(E, "}");
    E->indent--;
    ce_out(E, "}");
    return true;
}
