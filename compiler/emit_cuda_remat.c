/* emit_cuda_remat.c: a value made again in the layout a use needs, instead
 * of moved there through shared memory (a store, two barriers, a load).
 *
 * What can be made again, where the emitter stands:
 *   - a pipelined load's copy in shared memory, read back in any layout
 *     until its loop iteration ends (the buffer is not refilled before);
 *   - arange: its registers are their own coordinates;
 *   - a one-element value: its register, broadcast;
 *   - views (reshape, permute, broadcast) and element-wise ops of those, up
 *     to REMAT_BUDGET ops, so that a mask like `rows >= cols` or a scaled
 *     vector costs a few instructions per use, not a round trip.
 * The registers made are the use's own: the value keeps its first registers
 * (emit_cuda.c restores them after the use), so nothing declared in an inner
 * C scope is referred to outside it. */
#include "emit_cuda_int.h"

#include <string.h>

enum { REMAT_BUDGET = 8 };

static bool one_element(Emitter *E, int id) { return type_numel(ce_vtype(E, id)) == 1; }

/* Ops needed to make `id` again, or -1 when it cannot be (or costs more). */
static int cost(Emitter *E, int id, int budget) {
    if (budget < 0 || id < 0 || ce_val(E, id)->lay < 0) return -1;
    if (one_element(E, id)) return 0;
    const IrOp *d = E->f->values[id].def;
    if (!d) return -1;
    if (d->op == OP_ARANGE) return 1;
    if (d->op == OP_LOAD)
        return E->readback_loop && E->readback_loop[id] && E->readback_loop[id] == E->pipe.loop ? 1 : -1;
    if (d->op == OP_RESHAPE || d->op == OP_PERMUTE || d->op == OP_BROADCAST) return cost(E, d->args[0], budget);
    if (!ir_op_is_elementwise(d->op)) return -1;
    int total = 1;
    for (int a = 0; a < d->nargs; a++) {
        int c = cost(E, d->args[a], budget - total);
        if (c < 0) return -1;
        total += c;
    }
    return total <= budget ? total : -1;
}

bool ce_remat_cheap(Emitter *E, int id) { return !one_element(E, id) && cost(E, id, REMAT_BUDGET) > 0; }

/* Is `id` (through views) a 32-bit tile read back from a pipelined buffer
 * that mma products read too (async_mixed)?  Such a tile is read again at
 * each use, even in the layout it has: its registers read back where the load
 * stands would stay live across the step to a use at its end (the f32 scan's
 * B_k, 64 registers a thread at dstate 128, read by the state's B ∘ decay
 * with DECAY_ON_B; x_k, read by the skip term). */
bool ce_remat_at_use(Emitter *E, int id) {
    const IrOp *d = id >= 0 ? E->f->values[id].def : NULL;
    while (d && (d->op == OP_RESHAPE || d->op == OP_PERMUTE)) d = E->f->values[d->args[0]].def;
    return d && d->op == OP_LOAD && ce_regsize(ce_vdt(E, d->result)) == 4 && E->async_mixed && E->async_mixed[d->result] &&
           cost(E, id, REMAT_BUDGET) > 0 && !E->opt_no_remat_at_use;
}

void ce_view_positions(Emitter *E, const IrOp *op, int *pos_of_src, int *src_of_res) {
    const Type *t = ce_vtype(E, op->result), *xt = ce_vtype(E, op->args[0]);
    for (int b = 0; b < LAY_MAX_BITS; b++) pos_of_src[b] = src_of_res[b] = -1;
    for (int d = 0; d < t->rank; d++) {
        int sd = op->op == OP_PERMUTE ? op->ints[d] : d - (t->rank - xt->rank);
        if (sd < 0 || (op->op == OP_BROADCAST && xt->shape[sd] == 1)) continue;
        for (int j = 0; j < lay_log2(t->shape[d]); j++) {
            int p = lay_pos(t->rank, t->shape, d, j), s = lay_pos(xt->rank, xt->shape, sd, j);
            pos_of_src[s] = p;
            src_of_res[p] = s;
        }
    }
}

bool ce_remat(Emitter *E, int id, int want, const char **name, int *lay) {
    if (cost(E, id, REMAT_BUDGET) < 0) return false;
    const Type *t = ce_vtype(E, id);
    if (one_element(E, id)) {   /* its one register, as a broadcast */
        int none[LAY_MAX_BITS];
        for (int b = 0; b < LAY_MAX_BITS; b++) none[b] = -1;
        *name = ce_val(E, id)->name;
        *lay = ce_relabel(E, ce_lay(E, ce_val(E, id)->lay), t->rank, t->shape, none);
        return true;
    }
    const IrOp *d = E->f->values[id].def;
    if (d->op == OP_ARANGE) {
        *lay = want;
        *name = ce_fresh(E, "m");
        ce_emit_arange(E, t->dtype, want, *name);
        return true;
    }
    if (d->op == OP_LOAD) {
        *lay = want;
        *name = ce_fresh(E, "m");
        ce_out(E, "/* read again from its buffer, in the layout this use needs */");
        ce_async_read(E, id, want, *name);
        return true;
    }
    if (d->op == OP_RESHAPE || d->op == OP_PERMUTE || d->op == OP_BROADCAST) {
        const Type *xt = ce_vtype(E, d->args[0]);
        int xlay;
        if (d->op == OP_RESHAPE) {
            Layout wx = lay_reshape(ce_lay(E, want), xt->rank, xt->shape);
            if (!ce_remat(E, d->args[0], ce_lay_add(E, &wx), name, &xlay)) return false;
            Layout back = lay_reshape(ce_lay(E, xlay), t->rank, t->shape);
            *lay = ce_lay_add(E, &back);
            return true;
        }
        int pos_of_src[LAY_MAX_BITS], src_of_res[LAY_MAX_BITS];
        ce_view_positions(E, d, pos_of_src, src_of_res);
        Layout wx = lay_pick(ce_lay(E, want), xt->rank, xt->shape, pos_of_src);
        if (!ce_remat(E, d->args[0], ce_lay_add(E, &wx), name, &xlay)) return false;
        *lay = ce_relabel(E, ce_lay(E, xlay), t->rank, t->shape, src_of_res);
        return true;
    }
    /* element-wise: every operand made again in `want`, then the op */
    const char *names[3];
    int lays[3];
    if (d->nargs > 3) return false;
    for (int a = 0; a < d->nargs; a++)
        if (!ce_remat(E, d->args[a], want, &names[a], &lays[a])) return false;
    *lay = want;
    *name = ce_fresh(E, "m");
    ce_decl(E, t->dtype, *name, want);
    for (int r = 0; r < ce_nregs(E, want); r++) {
        const char *regs[3];
        for (int a = 0; a < d->nargs; a++)
            regs[a] = ce_reg(E, names[a], lays[a], lay_reg_map(ce_lay(E, lays[a]), ce_lay(E, want), r));
        ce_out(E, "%s = %s;", ce_reg(E, *name, want, r), ce_ew_expr(E, d, regs));
    }
    return true;
}
