/* dce.c: dead code elimination (pass_dce, see passes.h).
 *
 * Removes, inside regions too and until nothing changes:
 *   - ops whose result is unused and that have no effect (loads included:
 *     reading memory changes nothing);
 *   - LOCAL_SETs of locals whose value reaches nothing with an effect: none
 *     read, or read only to compute their own (or other such locals') next
 *     values -- a `var` carried through a loop that nothing else uses, such
 *     as one only read under an `if` on a constant that folded away;
 *   - IFs whose two branches are empty.
 * Loops are kept even when empty: a LOOP without BREAK never ends, and the
 * interpreter reports a FOR with a zero step.
 */
#include "passes.h"

typedef struct Dce {
    IrFunc *f;
    int *uses;        /* per value: operand uses */
    int *reads;       /* per local: LOCAL_GETs */
    bool *live;       /* per local: its value reaches an op with an effect */
} Dce;

static void count_uses(IrFunc *f, IrOp *op, void *ctx) {
    Dce *D = ctx;
    for (int k = 0; k < op->nargs; k++)
        if (op->args[k] >= 0 && op->args[k] < f->nvalues) D->uses[op->args[k]]++;
    if (op->op == OP_LOCAL_GET && op->local >= 0 && op->local < f->nlocals) D->reads[op->local]++;
}

static bool block_empty(const IrBlock *b) { return !b || b->nops == 0; }

static bool removable(const Dce *D, const IrOp *op) {
    if (op->op == OP_LOCAL_SET)
        return op->local >= 0 && op->local < D->f->nlocals && (D->reads[op->local] == 0 || !D->live[op->local]);
    if (op->op == OP_IF) return block_empty(op->body) && block_empty(op->else_body);
    return op->result >= 0 && op->result < D->f->nvalues && D->uses[op->result] == 0 && !ir_op_has_side_effects(op);
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

/* ---- live locals: marked from the operands of ops with an effect --------------- */

typedef struct Liveness {
    IrFunc *f;
    bool *value;        /* per value: reaches an op with an effect */
    bool *local;        /* per local: the same */
    IrOp **sets;        /* every LOCAL_SET, to follow a newly live local to its writers */
    int nsets;
    int *stack, top;
} Liveness;

static void mark(Liveness *L, int v) {
    if (v < 0 || v >= L->f->nvalues || L->value[v]) return;
    L->value[v] = true;
    L->stack[L->top++] = v;
}

static void collect(IrFunc *f, IrOp *op, void *ctx) {
    Liveness *L = ctx;
    (void)f;
    if (op->op == OP_LOCAL_SET) L->sets[L->nsets++] = op;
    else if (ir_op_has_side_effects(op))   /* a local.set's operand matters only if its local does */
        for (int k = 0; k < op->nargs; k++) mark(L, op->args[k]);
}

static void count_sets(IrFunc *f, IrOp *op, void *ctx) {
    (void)f;
    if (op->op == OP_LOCAL_SET) (*(int *)ctx)++;
}

static void find_live_locals(Dce *D) {
    IrFunc *f = D->f;
    int nsets = 0;
    ir_walk(f, f->body, count_sets, &nsets);
    Liveness L = { f, ARENA_ARRAY(f->arena, bool, f->nvalues > 0 ? f->nvalues : 1), D->live,
                   ARENA_ARRAY(f->arena, IrOp *, nsets > 0 ? nsets : 1), 0,
                   ARENA_ARRAY(f->arena, int, f->nvalues > 0 ? f->nvalues : 1), 0 };
    for (int v = 0; v < f->nvalues; v++) L.value[v] = false;
    for (int l = 0; l < f->nlocals; l++) L.local[l] = false;
    ir_walk(f, f->body, collect, &L);
    while (L.top > 0) {
        const IrOp *def = f->values[L.stack[--L.top]].def;
        if (!def) continue;
        for (int k = 0; k < def->nargs; k++) mark(&L, def->args[k]);
        if (def->op != OP_LOCAL_GET || def->local < 0 || def->local >= f->nlocals || L.local[def->local]) continue;
        L.local[def->local] = true;
        for (int i = 0; i < L.nsets; i++)
            if (L.sets[i]->local == def->local)
                for (int k = 0; k < L.sets[i]->nargs; k++) mark(&L, L.sets[i]->args[k]);
    }
}

void pass_dce(IrFunc *f) {
    if (!f || !f->body) return;
    Dce D = { f, ARENA_ARRAY(f->arena, int, f->nvalues > 0 ? f->nvalues : 1),
              ARENA_ARRAY(f->arena, int, f->nlocals > 0 ? f->nlocals : 1),
              ARENA_ARRAY(f->arena, bool, f->nlocals > 0 ? f->nlocals : 1) };
    ir_walk(f, f->body, count_uses, &D);
    find_live_locals(&D);
    while (sweep(&D, f->body)) {}
}
