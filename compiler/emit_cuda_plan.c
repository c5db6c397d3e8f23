/* emit_cuda_plan.c: what the CUDA emitter decides from the IR before its
 * first pass, where looking ahead pays and emitting in order cannot:
 *
 *   - how each tensor-core mma spreads the block's warps over its M x N
 *     result (the split);
 *   - which mmas read their A operand straight from registers: an operand
 *     computed in the kernel (not a cp.async load) whose warps can split M
 *     alone, each warp 16 rows or more.  Staged, such an operand costs a
 *     store to shared memory, two barriers and ldmatrix per use; read from
 *     registers, nothing (FlashAttention-2 keeps its P the same way);
 *   - the layout each value feeding such an operand should be made in (its
 *     "want"), pushed back from the operand through casts, element-wise ops,
 *     views and down to the loads, aranges and values from before a loop, so
 *     that the operand is born in the fragment layout and never converted;
 *   - mmas whose results meet through one accumulator (one mma's result,
 *     scaled, is another's starting value, or a loop-carried local holds
 *     both) share one split, so the accumulator keeps one layout throughout;
 *   - the product a register A operand is made from splits on M too, so its
 *     accumulator's registers already are the fragments;
 *   - a value two mmas read as A gets one layout (k-permuted only if both can
 *     read it so); where they need different ones, the mma in the innermost
 *     loop has its way and the other converts, once, outside that loop;
 *   - after wgmma's plan (ce_plan_accumulators): a loop-carried accumulator
 *     whose start is loaded before its loop has that load made in the
 *     product's result layout (ssd_scan's entering state, fwd_pass_state's
 *     initial state: no conversion through shared memory).
 *
 * TILEC_NO_REG_A=1 plans every mma the old way (staged operands, the
 * default split; the carried accumulators' wants stay: TILEC_NO_CARRIED_WANT=1
 * turns those off), TILEC_NO_KPERM=1 reads A from registers without permuting
 * its columns (lay_mma_a), to measure what each gives.  Prefix: ce_plan_. */
#include "emit_cuda_int.h"

#include <stdlib.h>
#include <string.h>

/* The default split: halve the larger side, M first, while each warp keeps
 * at least 32 rows or 16 columns. */
static void default_split(int M, int N, int warpbits, int *wmb, int *wnb) {
    *wmb = *wnb = 0;
    while (*wmb + *wnb < warpbits) {
        int rows = M >> *wmb, cols = N >> *wnb;
        bool can_m = rows >= 32, can_n = cols >= 16;
        if (can_m && (rows >= cols || !can_n)) (*wmb)++;
        else if (can_n) (*wnb)++;
        else break;
    }
}

/* ---- accumulator groups: union-find over mma results and locals ---------------- */

typedef struct Plan {
    Emitter *E;
    int *parent;          /* nodes: value ids, then nvalues + local index */
    const IrOp **mmas;
    int *depth;           /* per mma: how many loops hold it */
    int nmmas, capmmas;
    /* per value: acc_node's answer + 2 (0: not known yet), so that shared
     * subexpressions are walked once, not once per path to them */
    int *acc_memo;
    unsigned *seen, stamp;   /* per value: the stamp of the last question that visited it */
    unsigned mark;           /* share_source: the stamp of the first operand's sources */
} Plan;

/* Walks below stop this deep (the IR is a DAG; this only bounds the stack). */
enum { PLAN_MAX_DEPTH = 256 };

static int find(Plan *P, int x) {
    while (P->parent[x] != x) x = P->parent[x] = P->parent[P->parent[x]];
    return x;
}
static void unite(Plan *P, int a, int b) {
    if (a < 0 || b < 0) return;
    a = find(P, a), b = find(P, b);
    if (a != b) P->parent[a] = b;
}

/* The accumulator node value `id` comes from: an mma's result or a local,
 * through casts and element-wise ops (their first operand that has one). */
static int acc_node(Plan *P, int id, int depth) {
    const IrFunc *f = P->E->f;
    if (id < 0 || depth > PLAN_MAX_DEPTH) return -1;
    if (P->acc_memo[id]) return P->acc_memo[id] - 2;
    const IrOp *d = f->values[id].def;
    int n = -1;
    if (!d) n = -1;
    else if (d->op == OP_MMA) n = id;
    else if (d->op == OP_LOCAL_GET) n = f->nvalues + d->local;
    else if (ir_op_is_elementwise(d->op))
        for (int a = 0; a < d->nargs && n < 0; a++)
            if (type_numel(ir_type(f, d->args[a])) == type_numel(ir_type(f, id))) n = acc_node(P, d->args[a], depth + 1);
    P->acc_memo[id] = n + 2;
    return n;
}

static void collect(Plan *P, const IrBlock *blk, int depth) {
    if (!blk) return;
    Emitter *E = P->E;
    for (int i = 0; i < blk->nops; i++) {
        const IrOp *o = blk->ops[i];
        if (o->op == OP_MMA) {
            unite(P, o->result, acc_node(P, o->args[2], 0));
            if (P->nmmas == P->capmmas) {
                int cap = P->capmmas ? 2 * P->capmmas : 16;
                const IrOp **m = realloc(P->mmas, sizeof *m * (size_t)cap);
                if (m) P->mmas = m;
                int *dp = m ? realloc(P->depth, sizeof *dp * (size_t)cap) : NULL;
                if (dp) P->depth = dp;
                if (!m || !dp) continue;   /* out of memory: this mma keeps the default plan */
                P->capmmas = cap;
            }
            P->depth[P->nmmas] = depth;
            P->mmas[P->nmmas++] = o;
        } else if (o->op == OP_LOCAL_SET) {
            unite(P, E->f->nvalues + o->local, acc_node(P, o->args[0], 0));
        }
        collect(P, o->body, depth + (o->else_body ? 0 : 1));   /* an if has an else block, loops not */
        collect(P, o->else_body, depth);
    }
}

/* ---- wants ------------------------------------------------------------------ */

static void push_want(Emitter *E, int id, int lay, int depth);

/* Every value stored into local `l` in block `blk` (and the blocks it holds)
 * is wanted in `lay`. */
static void push_local_stores(Emitter *E, const IrBlock *blk, int l, int lay, int depth) {
    if (!blk) return;
    for (int i = 0; i < blk->nops; i++) {
        const IrOp *o = blk->ops[i];
        if (o->op == OP_LOCAL_SET && o->local == l) push_want(E, o->args[0], lay, depth + 1);
        push_local_stores(E, o->body, l, lay, depth);
        push_local_stores(E, o->else_body, l, lay, depth);
    }
}

/* Value `id` should be made in layout `lay` (same shape); its operands in
 * what that asks of them.  The first want of a value holds.  Through a
 * local (a `var` assigned in branches, say): the local and every value
 * stored into it, so that the local is born in the layout too. */
static void push_want(Emitter *E, int id, int lay, int depth) {
    if (id < 0 || depth > 64 || E->want[id] >= 0) return;
    if (type_numel(ce_vtype(E, id)) == 1) return;   /* a broadcast register */
    E->want[id] = lay;
    const IrOp *d = E->f->values[id].def;
    if (!d) return;
    const Layout W = *ce_lay(E, lay);
    if (d->op == OP_LOCAL_GET) {
        if (E->local_want[d->local] >= 0) return;
        E->local_want[d->local] = lay;
        push_local_stores(E, E->f->body, d->local, lay, depth);
    } else if (ir_op_is_elementwise(d->op)) {
        for (int a = 0; a < d->nargs; a++) push_want(E, d->args[a], lay, depth + 1);
    } else if (d->op == OP_RESHAPE) {
        const Type *xt = ce_vtype(E, d->args[0]);
        Layout x = lay_reshape(&W, xt->rank, xt->shape);
        push_want(E, d->args[0], ce_lay_add(E, &x), depth + 1);
    } else if (d->op == OP_PERMUTE || d->op == OP_BROADCAST) {
        int pos_of_src[LAY_MAX_BITS], src_of_res[LAY_MAX_BITS];
        ce_view_positions(E, d, pos_of_src, src_of_res);
        const Type *xt = ce_vtype(E, d->args[0]);
        Layout x = lay_pick(&W, xt->rank, xt->shape, pos_of_src);
        push_want(E, d->args[0], ce_lay_add(E, &x), depth + 1);
    }
    /* loads, arange and the rest: made in `lay` where they stand */
}

/* Want `lay` if it can hold a tile of type `t` (every element, once), else fallback. */
static int usable_want(Emitter *E, int lay, const Type *t, int fallback) {
    if (lay < 0) return fallback;
    const Layout *w = ce_lay(E, lay);
    return w->nbits == lay_log2(type_numel(t)) && lay_full(w) ? lay : fallback;
}

void ce_plan_want(Emitter *E, int id, int lay) {
    if (E->want) push_want(E, id, lay, 0);
}

int ce_plan_layout(Emitter *E, int id, int fallback) {
    if (!E->want || id < 0) return fallback;
    return usable_want(E, E->want[id], ce_vtype(E, id), fallback);
}

int ce_plan_local_layout(Emitter *E, int l, int fallback) {
    if (!E->local_want) return fallback;
    return usable_want(E, E->local_want[l], &E->f->locals[l].type, fallback);
}

/* ---- the plan ------------------------------------------------------------------ */

/* Does value `id` come from a value `target` accepts, through ops `pass`
 * lets through?  Each value is visited once per question (P->seen holds the
 * question's stamp), so shared subexpressions cost nothing more. */
static bool reaches(Plan *P, int id, bool (*target)(Plan *, int), bool (*pass)(OpId), int depth) {
    if (id < 0 || depth > PLAN_MAX_DEPTH || P->seen[id] == P->stamp) return false;
    if (target(P, id)) return true;
    P->seen[id] = P->stamp;
    const IrOp *d = P->E->f->values[id].def;
    if (!d || !pass(d->op)) return false;
    for (int a = 0; a < d->nargs; a++)
        if (reaches(P, d->args[a], target, pass, depth + 1)) return true;
    return false;
}
static bool elementwise_or_reshape(OpId op) { return op == OP_RESHAPE || ir_op_is_elementwise(op); }
static bool elementwise_or_view(OpId op) {
    return op == OP_RESHAPE || op == OP_PERMUTE || op == OP_BROADCAST || ir_op_is_elementwise(op);
}
static bool is_permute(Plan *P, int id) {
    const IrOp *d = P->E->f->values[id].def;
    return d && d->op == OP_PERMUTE;
}
/* Does the accumulator group of mma or local node `node` hold an mma? */
static bool group_has_mma(Plan *P, int node) {
    int g = find(P, node);
    for (int i = 0; i < P->nmmas; i++)
        if (find(P, P->mmas[i]->result) == g) return true;
    return false;
}
/* An mma's result, or a local holding one (a sum over slices of k)? */
static bool is_product(Plan *P, int id) {
    const IrOp *d = P->E->f->values[id].def;
    return d && (d->op == OP_MMA || (d->op == OP_LOCAL_GET && group_has_mma(P, P->E->f->nvalues + d->local)));
}
/* A transpose on the way (casts, element-wise ops and reshapes looked through)? */
static bool through_permute(Plan *P, int id) {
    P->stamp++;
    return reaches(P, id, is_permute, elementwise_or_reshape, 0);
}
/* From a product (casts, element-wise ops and views looked through)? */
static bool from_mma(Plan *P, int id) {
    P->stamp++;
    return reaches(P, id, is_product, elementwise_or_view, 0);
}

/* Permute A's k-step columns (lay_mma_a)?  When A comes from loads, not from
 * an mma's accumulator (which already lies as the unpermuted fragments), and
 * B's rows can be read in that order: ldmatrix.trans takes any row order, a
 * K-major B read by ldmatrix does not; tf32 fragments are read one by one.
 * Not for A from loads when the product may go to wgmma with A from
 * registers (ce_wgmma_may_read_a_registers): wgmma reads B's rows in order. */
static bool kperm_choice(Plan *P, const IrOp *o) {
    Emitter *E = P->E;
    if (ce_env_flag("TILEC_NO_KPERM")) return false;
    /* from an accumulator: a 16-bit A's fragments are its registers unpermuted, a
     * tf32 A's permuted (the accumulator's two columns per thread are consecutive) */
    if (from_mma(P, o->args[0])) return !ce_is_half(ce_vdt(E, o->args[0]));
    if (ce_wgmma_may_read_a_registers(E, o)) return false;
    bool kmajor = false;
    if (ce_vdt(E, o->args[1]) != DT_TF32 && ce_async_operand_kmajor(E, o->args[1], 1, &kmajor) && kmajor) return false;
    return true;
}

/* Can this mma read A from registers with the warps on M alone?  A
 * transpose's fragments are read element by element (2-byte shared-memory
 * loads for a pipelined load's buffer), where the staged path transposes
 * with ldmatrix for free; that pays only for a 16-bit product that then goes
 * to wgmma (fwd_pass_state's transpose(x * w): 0.386 -> 0.346 ms at (8, 4096,
 * 80, 64, 128, 1, 256) bf16, H200, docs/performance.md), and for a tf32 one
 * whose A, stored MN-major, is read as it landed (the transposed products of
 * emit_cuda_rewrite.c; the async analysis decides).  Other tf32 ones spilled. */
static bool reg_a_candidate(Plan *P, const IrOp *o) {
    Emitter *E = P->E;
    const Type *at = ce_vtype(E, o->args[0]), *bt = ce_vtype(E, o->args[1]), *t = ce_vtype(E, o->result);
    if (!ce_mma_on_tensor_cores(at, bt, t) || at->rank != 2 || t->rank != 2) return false;
    if (ce_async_is_load(E, o->args[0]) || ce_async_is_view(E, o->args[0])) return false;
    if (through_permute(P, o->args[0]) &&
        !((ce_is_half(at->dtype) || ce_async_tf32_a_by_registers(E, o)) && ce_wgmma_may_read_a_registers(E, o)))
        return false;
    int M = at->shape[0];
    return (M >> E->warpbits) >= 16 && M % (16 << E->warpbits) == 0;
}

/* Do values a and b share a source (casts, element-wise ops and views looked
 * through; scalars, which any two operands may share, left out)?  Two mmas
 * reading one value as A must agree on its layout.  The sources of a are
 * marked with one stamp (P->mark), then b's walk looks for one. */
static void mark_sources(Plan *P, int id, int depth) {
    if (id < 0 || depth > PLAN_MAX_DEPTH || P->seen[id] == P->stamp) return;
    if (type_numel(ce_vtype(P->E, id)) == 1) return;
    P->seen[id] = P->stamp;
    const IrOp *d = P->E->f->values[id].def;
    if (d && elementwise_or_view(d->op))
        for (int a = 0; a < d->nargs; a++) mark_sources(P, d->args[a], depth + 1);
}
static bool is_marked(Plan *P, int id) { return P->seen[id] == P->mark; }
static bool share_source(Plan *P, int a, int b) {
    P->mark = ++P->stamp;
    mark_sources(P, a, 0);
    P->stamp++;
    return reaches(P, b, is_marked, elementwise_or_view, 0);
}

void ce_plan(Emitter *E) {
    const IrFunc *f = E->f;
    int nodes = f->nvalues + f->nlocals + 1;
    E->mma_split = ARENA_ARRAY(&E->mem, signed char, f->nvalues + 1);
    E->mma_reg_a = ARENA_ARRAY(&E->mem, bool, f->nvalues + 1);
    E->mma_kperm = ARENA_ARRAY(&E->mem, bool, f->nvalues + 1);
    E->want = ARENA_ARRAY(&E->mem, int, f->nvalues + 1);
    E->local_want = ARENA_ARRAY(&E->mem, int, f->nlocals + 1);
    for (int i = 0; i < f->nlocals; i++) E->local_want[i] = -1;
    E->mma_alone = ARENA_ARRAY(&E->mem, bool, f->nvalues + 1);
    for (int i = 0; i < f->nvalues; i++)
        E->mma_split[i] = -1, E->mma_reg_a[i] = E->mma_kperm[i] = E->mma_alone[i] = false, E->want[i] = -1;
    bool enabled = !ce_env_flag("TILEC_NO_REG_A");
    Plan P = {E, calloc((size_t)nodes, sizeof(int)), NULL, NULL, 0, 0, calloc((size_t)f->nvalues + 1, sizeof(int)),
              calloc((size_t)f->nvalues + 1, sizeof(unsigned)), 0, 0};
    if (!P.parent || !P.acc_memo || !P.seen) {
        free(P.parent);
        free(P.acc_memo);
        free(P.seen);
        return;
    }
    for (int i = 0; i < nodes; i++) P.parent[i] = i;
    collect(&P, f->body, 0);
    for (int i = 0; i < P.nmmas; i++) {   /* alone in its accumulator group? */
        int others = 0;
        for (int j = 0; j < P.nmmas; j++)
            others += j != i && find(&P, P.mmas[j]->result) == find(&P, P.mmas[i]->result);
        E->mma_alone[P.mmas[i]->result] = others == 0;
    }
    /* a group goes M-only when one of its mmas reads A from registers and
     * every one of them can */
    bool *group_m = calloc((size_t)nodes, 1), *group_blocked = calloc((size_t)nodes, 1);
    for (int i = 0; enabled && group_m && group_blocked && i < P.nmmas; i++) {
        const IrOp *o = P.mmas[i];
        int g = find(&P, o->result);
        const Type *t = ce_vtype(E, o->result);
        bool tensor = ce_mma_on_tensor_cores(ce_vtype(E, o->args[0]), ce_vtype(E, o->args[1]), t);
        int M = t->shape[t->rank - 2];
        if (!tensor || (M >> E->warpbits) < 16 || M % (16 << E->warpbits) != 0) group_blocked[g] = true;
        E->mma_reg_a[o->result] = reg_a_candidate(&P, o);   /* a candidate, so far */
        if (E->mma_reg_a[o->result]) group_m[g] = true;
    }
    for (int i = 0; enabled && group_m && group_blocked && i < P.nmmas; i++)
        if (E->mma_reg_a[P.mmas[i]->result] && !group_blocked[find(&P, P.mmas[i]->result)]) {
            /* the product the operand is made from: its group goes M-only too, so
             * that its accumulator's registers already are the fragments */
            int n = acc_node(&P, P.mmas[i]->args[0], 0);
            if (n >= 0 && !group_blocked[find(&P, n)]) group_m[find(&P, n)] = true;
        }
    for (int i = 0; i < P.nmmas; i++) {
        const IrOp *o = P.mmas[i];
        const Type *t = ce_vtype(E, o->result);
        int wmb, wnb, g = find(&P, o->result);
        default_split(t->shape[t->rank - 2], t->shape[t->rank - 1], E->warpbits, &wmb, &wnb);
        bool m_only = enabled && group_m && group_blocked && group_m[g] && !group_blocked[g];
        if (m_only) wmb = E->warpbits, wnb = 0;
        E->mma_split[o->result] = (signed char)(wmb | wnb << 4);
        E->mma_reg_a[o->result] = m_only && E->mma_reg_a[o->result];
        if (E->mma_reg_a[o->result]) E->mma_kperm[o->result] = kperm_choice(&P, o);
    }
    /* mmas reading one value as A (a C tile used by two products) read it in
     * one layout: permuted only if every one of them can be */
    for (bool changed = true; changed;) {
        changed = false;
        for (int i = 0; i < P.nmmas; i++)
            for (int j = 0; j < P.nmmas; j++) {
                const IrOp *a = P.mmas[i], *b = P.mmas[j];
                if (!E->mma_reg_a[a->result] || !E->mma_reg_a[b->result] || !E->mma_kperm[a->result] ||
                    E->mma_kperm[b->result] || !share_source(&P, a->args[0], b->args[0]))
                    continue;
                E->mma_kperm[a->result] = false;
                changed = true;
            }
    }
    /* wants pushed from the innermost loops out: the first want of a value holds,
     * so where two mmas want one value in different layouts (a tf32 and a 16-bit
     * product of one C tile), the one outside the loop converts it, once */
    int maxdepth = 0;
    for (int i = 0; i < P.nmmas; i++) maxdepth = P.depth[i] > maxdepth ? P.depth[i] : maxdepth;
    for (int dd = maxdepth; dd >= 0; dd--) {
        for (int i = 0; i < P.nmmas; i++) {
            const IrOp *o = P.mmas[i];
            if (!E->mma_reg_a[o->result] || P.depth[i] != dd) continue;
            int wmb, wnb;
            ce_plan_split(E, o, &wmb, &wnb);
            const Type *at = ce_vtype(E, o->args[0]);
            Layout a = lay_mma_a(at, wmb, wnb, ce_is_half(at->dtype), E->mma_kperm[o->result]);
            push_want(E, o->args[0], ce_lay_add(E, &a), 0);
        }
    }
    free(group_m);
    free(group_blocked);
    free(P.parent);
    free(P.acc_memo);
    free(P.seen);
    free(P.mmas);
    free(P.depth);
}

/* What ce_plan_accumulators asks of values and locals, each answered once
 * (the questions recurse through locals' stores, which a function may hold
 * many of): 0 not asked yet, 1 being answered (a cycle through a local: no),
 * 2 no, 3 yes.  Walks stop CARRIED_DEPTH deep, answering no. */
enum { CARRIED_DEPTH = 256 };
typedef struct Carried {
    Emitter *E;
    signed char *from_load, *from_product;   /* per value */
    signed char *local_from_load;            /* per local: a store of it, anywhere, from loads alone */
} Carried;

static bool from_load(Carried *C, int id, int depth);

/* Is value `id` made from an mma's result (element-wise, through reshapes)?
 * Such a start already is in the product's layout, or meets registers that
 * are. */
static bool from_product(Carried *C, int id, int depth) {
    const IrOp *d = id >= 0 && depth < CARRIED_DEPTH ? C->E->f->values[id].def : NULL;
    if (!d) return false;
    if (C->from_product[id]) return C->from_product[id] == 3;
    bool yes = d->op == OP_MMA;
    if (!yes && (d->op == OP_RESHAPE || ir_op_is_elementwise(d->op)))
        for (int a = 0; a < d->nargs && !yes; a++) yes = from_product(C, d->args[a], depth + 1);
    C->from_product[id] = yes ? 3 : 2;
    return yes;
}

/* The stores into local `l` that run before `loop` in program order (in the
 * blocks before the op holding it, and in that op's blocks up to it; with
 * no loop, all of them), made of loads alone and of no product's result:
 * the loop's starting value read from memory.  Wanted in `lay` if lay >= 0.
 * Returns whether there is one; *reached is set at the loop. */
static bool entering_stores(Carried *C, const IrBlock *blk, int l, const IrOp *loop, int lay, bool *reached,
                            int depth) {
    bool found = false;
    for (int i = 0; blk && i < blk->nops && !*reached; i++) {
        const IrOp *o = blk->ops[i];
        if (o == loop) {
            *reached = true;
            break;
        }
        if (o->op == OP_LOCAL_SET && o->local == l && from_load(C, o->args[0], depth + 1) &&
            !from_product(C, o->args[0], depth + 1)) {
            found = true;
            if (lay >= 0) push_want(C->E, o->args[0], lay, 1);
        }
        found |= entering_stores(C, o->body, l, loop, lay, reached, depth);
        found |= entering_stores(C, o->else_body, l, loop, lay, reached, depth);
    }
    return found;
}

/* Is value `id` a load, or made from one element-wise, through reshapes or
 * through locals?  (Zeros, a broadcast scalar, a product's result: made in
 * the layout they need for nothing, so they ask for none.) */
static bool from_load(Carried *C, int id, int depth) {
    const IrOp *d = id >= 0 && depth < CARRIED_DEPTH ? C->E->f->values[id].def : NULL;
    if (!d || type_numel(ce_vtype(C->E, id)) == 1) return false;
    if (C->from_load[id]) return C->from_load[id] == 3;
    C->from_load[id] = 1;
    bool yes = d->op == OP_LOAD;
    if (d->op == OP_LOCAL_GET) {
        signed char *memo = &C->local_from_load[d->local];
        if (!*memo) {
            *memo = 1;
            bool reached = false;
            *memo = entering_stores(C, C->E->f->body, d->local, NULL, -1, &reached, depth + 1) ? 3 : 2;
        }
        yes = *memo == 3;
    } else if (d->op == OP_RESHAPE || ir_op_is_elementwise(d->op)) {
        for (int a = 0; a < d->nargs && !yes; a++) yes = from_load(C, d->args[a], depth + 1);
    }
    C->from_load[id] = yes ? 3 : 2;
    return yes;
}

/* The starting value of a tensor-core product's accumulator carried by a
 * loop (`state = mma(a, b, state * decay)`) is wanted in the product's own
 * result layout, once wgmma's plan is made and after the A operands' wants
 * (the first want holds): a state loaded before the loop (ssd_scan's
 * initial or entering state, fwd_pass_state's initial state) is then loaded
 * in the accumulator's registers, not converted through shared memory, and
 * the local keeps the product's layout.  Only the local's stores before the
 * loop, and only those made of loads alone: what the loop computes, or a
 * start that meets a product's result (compute_out's carried part plus a
 * skip term), keeps the layouts it had. */
static void push_carried_wants(Carried *C, const IrOp *mma, int id, const IrOp *loop, int depth) {
    Emitter *E = C->E;
    const IrOp *d = id >= 0 && depth < 16 ? E->f->values[id].def : NULL;
    if (!d) return;
    if (d->op == OP_LOCAL_GET) {
        bool reached = false;
        if (!entering_stores(C, E->f->body, d->local, loop, -1, &reached, 0)) return;
        int lay = ce_mma_result_layout(E, mma);
        if (E->local_want[d->local] < 0) E->local_want[d->local] = lay;
        reached = false;
        entering_stores(C, E->f->body, d->local, loop, lay, &reached, 0);
    } else if (ir_op_is_elementwise(d->op)) {
        for (int a = 0; a < d->nargs; a++) push_carried_wants(C, mma, d->args[a], loop, depth + 1);
    }
}

/* Each tensor-core product in `blk`, with `loop` the innermost loop holding it. */
static void plan_carried(Carried *C, const IrBlock *blk, const IrOp *loop) {
    Emitter *E = C->E;
    for (int i = 0; blk && i < blk->nops; i++) {
        const IrOp *o = blk->ops[i];
        if (o->op == OP_MMA && loop &&
            ce_mma_on_tensor_cores(ce_vtype(E, o->args[0]), ce_vtype(E, o->args[1]), ce_vtype(E, o->result)))
            push_carried_wants(C, o, o->args[2], loop, 0);
        plan_carried(C, o->body, o->op == OP_FOR || o->op == OP_LOOP ? o : loop);
        plan_carried(C, o->else_body, loop);
    }
}

void ce_plan_accumulators(Emitter *E) {
    if (!E->want || ce_env_flag("TILEC_NO_CARRIED_WANT")) return;
    const IrFunc *f = E->f;
    Carried C = {E, calloc((size_t)f->nvalues + 1, 1), calloc((size_t)f->nvalues + 1, 1),
                 calloc((size_t)f->nlocals + 1, 1)};
    if (C.from_load && C.from_product && C.local_from_load) plan_carried(&C, f->body, NULL);
    free(C.from_load);
    free(C.from_product);
    free(C.local_from_load);
    for (int i = 0; i < f->nlocals; i++)
        if (E->local_lay[i] < 0) E->local_lay[i] = ce_plan_local_layout(E, i, -1);
}

void ce_plan_split(Emitter *E, const IrOp *mma, int *wmb, int *wnb) {
    const Type *t = ce_vtype(E, mma->result);
    if (E->mma_split && E->mma_split[mma->result] >= 0) {
        *wmb = E->mma_split[mma->result] & 15;
        *wnb = E->mma_split[mma->result] >> 4;
        return;
    }
    default_split(t->shape[t->rank - 2], t->shape[t->rank - 1], E->warpbits, wmb, wnb);
}

bool ce_plan_reg_a(Emitter *E, const IrOp *mma) { return E->mma_reg_a && E->mma_reg_a[mma->result]; }
bool ce_plan_kperm(Emitter *E, const IrOp *mma) { return E->mma_kperm && E->mma_kperm[mma->result]; }
