/* emit_cuda_wgmma.c: tensor-core products on Hopper's warpgroup mma
 * (wgmma.mma_async, sm_90a), for kernels compiled for sm_90a
 * (CudaEmitOptions.target_sm90a).
 *
 * An mma goes to wgmma when (the plan, ce_wgmma_plan):
 *   - its operands are f16 or bf16 (one dtype), its result f32 or f16, all
 *     three 2-D, M % 64 == 0, N % 8 == 0, K % 16 == 0;
 *   - both operands come through cp.async (emit_cuda_async.c): wgmma reads
 *     them from shared memory itself, so registers hold only the accumulator;
 *   - its accumulator meets no other mma (emit_cuda_plan.c's groups), since
 *     its result has a layout of its own (lay_wgmma) that an mma.sync partner
 *     would convert through shared memory;
 *   - the block has 4 warps or a multiple (whole warp groups), and the warp
 *     groups can split the M x N tile into 64-row chunks and at most 256
 *     columns each.
 * Its operand tiles are then copied into *core matrices* (the no-swizzle
 * canonical layout: each 8 rows x 16 bytes of the stored tile is 128
 * contiguous bytes, those of one 8-row group side by side; 8 consecutive
 * threads copy the 8 rows of one) instead of padded rows; a descriptor gives
 * each instruction its 64 x 16 slice of A and 16 x N slice of B, in either
 * orientation (K-major, or M- / N-major with the instruction's transpose
 * bit).  At each use: fence the accumulator, one wgmma per 64-row chunk and
 * 16-deep k step, commit.  When the accumulator is a loop-carried local it is
 * the local's own registers (ce_wgmma_inplace: copies in and out would make
 * ptxas serialize the products), and in a pipelined loop whose copies feed
 * every operand (emit_cuda_async.c) the batch stays in flight until the next
 * iteration's products are issued (wait_group 1): the pipeline refills a
 * buffer one iteration later than it would for mma.sync.  Otherwise the
 * batch is waited for at once.  The copies' writers fence the async proxy
 * before the barrier that publishes a buffer.
 *
 * Correct, but slower than mma.sync so far (docs/performance.md: the copies,
 * not the products, bound the matmul); the runtime compiles for sm_90a only
 * with TILEC_WGMMA=1.
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

/* Does mma `o` go to wgmma?  If so its split is recorded. */
static bool plan_mma(Emitter *E, const IrOp *o) {
    const Type *at = ce_vtype(E, o->args[0]), *bt = ce_vtype(E, o->args[1]), *t = ce_vtype(E, o->result);
    if (at->rank != 2 || bt->rank != 2 || t->rank != 2 || !ce_mma_on_tensor_cores(at, bt, t)) return false;
    if (!ce_is_half(at->dtype) || !E->mma_alone || !E->mma_alone[o->result]) return false;
    int M = at->shape[0], K = at->shape[1], N = bt->shape[1], wgm, wgn;
    if (M % 64 || K % 16 || !choose_split(E, M, N, &wgm, &wgn)) return false;
    int cd;
    int la = ce_async_operand_load(E, o->args[0], &cd), lb = ce_async_operand_load(E, o->args[1], &cd);
    if (la < 0 || lb < 0 || !ce_async_is_load(E, la) || !ce_async_is_load(E, lb)) return false;
    E->wgmma_split[o->result] = (signed char)(wgm | wgn << 4);
    return true;
}

static void plan_block(Emitter *E, const IrBlock *blk) {
    if (!blk) return;
    for (int i = 0; i < blk->nops; i++) {
        const IrOp *o = blk->ops[i];
        plan_block(E, o->body);
        plan_block(E, o->else_body);
        if (o->op != OP_MMA || !plan_mma(E, o)) continue;
        for (int w = 0; w < 2; w++) {
            int cd, lv = ce_async_operand_load(E, o->args[w], &cd);
            E->async_core[lv] = true;
            /* elements per stored row: core matrices have no padding */
            E->async_pitch[lv] = ce_vtype(E, o->args[w])->shape[cd];
        }
    }
}

void ce_wgmma_plan(Emitter *E) {
    int n = E->f->nvalues + 1;
    E->wgmma_split = ARENA_ARRAY(&E->mem, signed char, n);
    for (int i = 0; i < n; i++) E->wgmma_split[i] = -1;
    E->local_wgmma = ARENA_ARRAY(&E->mem, bool, E->f->nlocals + 1);
    for (int i = 0; i <= E->f->nlocals; i++) E->local_wgmma[i] = false;
    if (!E->opt_wgmma) return;
    plan_block(E, E->f->body);
}

int ce_wgmma_layout(Emitter *E, const IrOp *op) {
    if (!E->wgmma_split || E->wgmma_split[op->result] < 0) return -1;
    int s = E->wgmma_split[op->result];
    Layout l = lay_wgmma(ce_vtype(E, op->result), s & 15, s >> 4);
    return ce_lay_add(E, &l);
}

/* The block holding op, searched from blk down. */
static const IrBlock *block_of(const IrBlock *blk, const IrOp *op, int *at) {
    if (!blk) return NULL;
    for (int i = 0; i < blk->nops; i++) {
        if (blk->ops[i] == op) {
            *at = i;
            return blk;
        }
        const IrBlock *b = block_of(blk->ops[i]->body, op, at);
        if (!b) b = block_of(blk->ops[i]->else_body, op, at);
        if (b) return b;
    }
    return NULL;
}

const char *ce_wgmma_inplace(Emitter *E, const IrOp *op, int lay) {
    const IrOp *get = E->f->values[op->args[2]].def;
    if (!get || get->op != OP_LOCAL_GET || E->local_lay[get->local] < 0) return NULL;
    if (!lay_equal(ce_lay(E, E->local_lay[get->local]), ce_lay(E, lay)) || E->nuses[op->result] != 1) return NULL;
    int at, from;
    const IrBlock *blk = block_of(E->f->body, op, &at);
    if (!blk || block_of(blk, get, &from) != blk || from > at) return NULL;   /* the read, earlier in this block */
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

/* Byte offset of the core matrix holding element (r, c) of a stored tile of
 * `cols` contiguous `size`-byte elements (r % 8 == 0, c * size % 16 == 0),
 * laid out as emit_cuda_async.c's copy_dst does. */
static long long core_offset(int r, int c, int cols, int size) {
    return (long long)(r / 8) * (8LL * cols * size) + (long long)(c * size / 16) * 128;
}

void ce_emit_wgmma(Emitter *E, const IrOp *op, const SmemOperand *a, const SmemOperand *b, const char *d, int lay,
                   bool inplace) {
    const Type *at = ce_vtype(E, op->args[0]), *bt = ce_vtype(E, op->args[1]);
    int M = at->shape[0], K = at->shape[1], N = bt->shape[1], size = ce_regsize(at->dtype);
    int split = E->wgmma_split[op->result], wgm = split & 15, wgn = split >> 4;
    int cols = N >> wgn, chunks = (M / 64) >> wgm, nb = cols / 8;
    const char *ty = at->dtype == DT_BF16 ? "bf16" : "f16";
    /* stored tiles: A as [M][K] (K-major) or [K][M]; B as [N][K] (K-major) or [K][N] */
    int acols = a->kmajor ? K : M, bcols = b->kmajor ? K : N;
    /* between core matrices next to each other along K (lbo) and along M / N (sbo) */
    long long a_row8 = core_offset(8, 0, acols, size), a_col8 = core_offset(0, 16 / size, acols, size);
    long long b_row8 = core_offset(8, 0, bcols, size), b_col8 = core_offset(0, 16 / size, bcols, size);
    long long a_lbo = a->kmajor ? a_col8 : a_row8, a_sbo = a->kmajor ? a_row8 : a_col8;
    long long b_lbo = b->kmajor ? b_col8 : b_row8, b_sbo = b->kmajor ? b_row8 : b_col8;
    E->used_wgmma = true;
    if (chunks * cols / 2 > E->wgmma_acc_regs) E->wgmma_acc_regs = chunks * cols / 2;
    ce_out(E, "{");
    E->indent++;
    ce_out(E, "/* wgmma: warp group warp >> 2 of %d; its rows from m0, its columns from n0 */", 1 << (wgm + wgn));
    ce_out(E, "const int m0 = ((warp >> 2) >> %d) * %d, n0 = ((warp >> 2) & %d) * %d;", wgn, 64 * chunks, (1 << wgn) - 1, cols);
    ce_out(E, "const unsigned wa = tile_smem_addr(%s), wb = tile_smem_addr(%s);", a->base, b->base);
    /* the warp group's part of each operand: rows m0.. of A, columns n0.. of B */
    ce_out(E, "const unsigned wa0 = wa + m0 / 8 * %lld, wb0 = wb + n0 / 8 * %lld;", a->kmajor ? a_row8 : a_col8,
           b->kmajor ? b_row8 : b_col8);
    ce_out(E, "tile_wgmma_fence();");
    for (int mc = 0; mc < chunks; mc++)
        for (int k0 = 0; k0 < K; k0 += 16) {
            long long ao = a->kmajor ? core_offset(64 * mc, k0, acols, size) : core_offset(k0, 64 * mc, acols, size);
            long long bo = b->kmajor ? core_offset(0, k0, bcols, size) : core_offset(k0, 0, bcols, size);
            Buf regs = {0};
            for (int j = 0; j < nb; j++)
                for (int c = 0; c < 4; c++)
                    ce_buf_printf(&regs, "%s\"+f\"(%s)", j || c ? ", " : "", ce_reg(E, d, lay, 4 * (mc * nb + j) + c));
            Buf list = {0};
            for (int r = 0; r < cols / 2; r++) ce_buf_printf(&list, "%s%%%d", r ? ", " : "", r);
            /* scale-d is a predicate: true, the product is added to d */
            ce_out(E, "asm volatile(\"{ .reg .pred p; setp.ne.b32 p, %%%d, 0; \"", cols / 2 + 2);
            ce_out(E, "    \"wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s {%s}, %%%d, %%%d, p, 1, 1, %d, %d; }\"", cols, ty, ty,
                   list.p, cols / 2, cols / 2 + 1, a->kmajor ? 0 : 1, b->kmajor ? 0 : 1);
            ce_out(E, "    : %s", regs.p);
            ce_out(E, "    : \"l\"(tile_wgmma_desc(wa0 + %lld, %lld, %lld)), \"l\"(tile_wgmma_desc(wb0 + %lld, %lld, %lld)), \"r\"(1));",
                   ao, a_lbo, a_sbo, bo, b_lbo, b_sbo);
            free(regs.p);
            free(list.p);
        }
    ce_out(E, "tile_wgmma_commit();");
    /* in flight only into the local's own registers, which nothing reads
     * before the next products, and only directly in the body of the loop
     * whose pipeline allows it */
    bool top_level = false;
    for (int k = 0; inplace && E->pipe.loop && E->pipe.wgmma_inflight && k < E->pipe.loop->body->nops; k++)
        top_level |= E->pipe.loop->body->ops[k] == op;
    if (top_level) ce_out(E, "tile_wgmma_wait1();   /* the previous iteration's batch is done, this one runs on */");
    else ce_out(E, "tile_wgmma_wait0();");
    E->indent--;
    ce_out(E, "}");
}
