/* dce.c: dead code elimination (pass_dce, see passes.h).
 *
 * Removes, inside regions too and until nothing changes:
 *   - ops whose result is unused and that have no effect (loads included:
 *     reading memory changes nothing);
 *   - LOCAL_SETs of locals that no LOCAL_GET reads;
 *   - IFs whose two branches are empty.
 * Loops are kept even when empty: a LOOP without BREAK never ends, and the
 * interpreter reports a FOR with a zero step.
 */
#include "passes.h"

typedef struct Dce {
    IrFunc *f;
    int *uses;        /* per value: operand uses */
    int *reads;       /* per local: LOCAL_GETs */
} Dce;

static void count_uses(IrFunc *f, IrOp *op, void *ctx) {
    Dce *D = ctx;
    for (int k = 0; k < op->nargs; k++)
        if (op->args[k] >= 0 && op->args[k] < f->nvalues) D->uses[op->args[k]]++;
    if (op->op == OP_LOCAL_GET && op->local >= 0 && op->local < f->nlocals) D->reads[op->local]++;
}

static bool has_effect(const IrOp *op) {
    switch (op->op) {
    case OP_STORE: case OP_SCATTER: case OP_ATOMIC_ADD: case OP_ATOMIC_MAX: case OP_ATOMIC_MIN:
    case OP_FOR: case OP_LOOP: case OP_IF: case OP_BREAK: case OP_CONTINUE: case OP_RETURN:
    case OP_LOCAL_SET: case OP_PRINT:
        return true;
    default:
        return ir_op_has_side_effects(op);
    }
}

static bool block_empty(const IrBlock *b) { return !b || b->nops == 0; }

static bool removable(const Dce *D, const IrOp *op) {
    if (op->op == OP_LOCAL_SET)
        return op->local >= 0 && op->local < D->f->nlocals && D->reads[op->local] == 0;
    if (op->op == OP_IF) return block_empty(op->body) && block_empty(op->else_body);
    return op->result >= 0 && op->result < D->f->nvalues && D->uses[op->result] == 0 && !has_effect(op);
}

/* Walks backwards so a chain of dead ops goes in one sweep. */
static bool sweep(Dce *D, IrBlock *blk) {
    bool changed = false;
    if (!blk) return false;
    for (int i = blk->nops - 1; i >= 0; i--) {
        IrOp *op = blk->ops[i];
        changed |= sweep(D, op->body);
        changed |= sweep(D, op->else_body);
        if (!removable(D, op)) continue;
        for (int k = 0; k < op->nargs; k++)
            if (op->args[k] >= 0 && op->args[k] < D->f->nvalues) D->uses[op->args[k]]--;
        if (op->op == OP_LOCAL_GET && op->local >= 0 && op->local < D->f->nlocals) D->reads[op->local]--;
        ir_block_remove(blk, i);
        changed = true;
    }
    return changed;
}

void pass_dce(IrFunc *f) {
    if (!f || !f->body) return;
    Dce D = { f, ARENA_ARRAY(f->arena, int, f->nvalues > 0 ? f->nvalues : 1),
              ARENA_ARRAY(f->arena, int, f->nlocals > 0 ? f->nlocals : 1) };
    ir_walk(f, f->body, count_uses, &D);
    while (sweep(&D, f->body)) {}
}
