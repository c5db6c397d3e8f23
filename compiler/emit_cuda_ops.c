/* emit_cuda_ops.c: the CUDA emitter's operations that need more than one
 * register at a time: reductions (in-thread, warp shuffles, then across warps
 * through shared memory), scans, mma (tensor cores or exact FMAs; operands
 * from registers or from emit_cuda_async.c's cp.async buffers), print.  See
 * emit_cuda.c for the model. */
#include "emit_cuda_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- reductions and scans ------------------------------------------------------ */

static DType accum_dtype(OpId op, DType t) {
    if (op == OP_REDUCE_SUM || op == OP_REDUCE_PROD || op == OP_CUMSUM || op == OP_CUMPROD)
        return (ce_is_half(t) || t == DT_TF32) ? DT_F32 : t;
    return t;
}

static const char *combine(Emitter *E, OpId op, DType acc, const char *a, const char *b) {
    switch (op) {
    case OP_REDUCE_SUM: case OP_CUMSUM: return ce_ew_binary(E, OP_ADD, acc, a, b);
    case OP_REDUCE_PROD: case OP_CUMPROD: return ce_ew_binary(E, OP_MUL, acc, a, b);
    case OP_REDUCE_MAX: return ce_ew_binary(E, OP_MAXIMUM, acc, a, b);
    default: return ce_ew_binary(E, OP_MINIMUM, acc, a, b);
    }
}

void ce_emit_reduce(Emitter *E, const IrOp *op) {
    int x = op->args[0];
    ce_make_full(E, x);
    Val *v = ce_val(E, x);
    const Layout *X = ce_lay(E, v->lay);
    const Type *xt = ce_vtype(E, x), *t = ce_vtype(E, op->result);
    DType dt = xt->dtype, rt = t->dtype;
    bool all = op->axis < 0 || op->axis >= xt->rank;
    bool arg = op->op == OP_ARGMAX || op->op == OP_ARGMIN;
    bool red[LAY_MAX_BITS] = {0};
    for (int b = 0; b < X->nbits; b++) {
        int d, j;
        lay_dim_of(xt->rank, xt->shape, b, &d, &j);
        red[b] = all || d == op->axis;
    }
    /* output layout: the kept bits, register bits renumbered */
    Layout O;
    memset(&O, 0, sizeof O);
    O.rank = t->rank;
    for (int d = 0; d < t->rank; d++) O.shape[d] = t->shape[d], O.nbits += lay_log2(t->shape[d]);
    O.kind = LAYK_OTHER;
    int regmap[32], nr = 0;
    for (int i = 0; i < 32; i++) regmap[i] = -1;
    for (int b = 0; b < X->nbits; b++)
        if (!red[b] && X->space[b] == LAY_REG) regmap[X->bit[b]] = 0;
    for (int i = 0; i < X->nregbits; i++)
        if (regmap[i] == 0) regmap[i] = nr++;
    unsigned red_lanes = 0, red_warps = 0;
    for (int b = 0, ob = 0; b < X->nbits; b++) {
        if (red[b]) {
            if (X->space[b] == LAY_LANE) red_lanes |= 1u << X->bit[b];
            if (X->space[b] == LAY_WARP) red_warps |= 1u << X->bit[b];
            continue;
        }
        O.space[ob] = X->space[b];
        O.bit[ob] = X->space[b] == LAY_REG ? (unsigned char)regmap[X->bit[b]] : X->bit[b];
        ob++;
    }
    O.nregbits = nr;
    int o = ce_lay_add(E, &O);
    int no = lay_nregs(&O);
    DType acc = accum_dtype(op->op, dt);
    const char *AT = arg ? ce_comptype(dt) : ce_ctype(acc);
    const char *a = ce_fresh(E, "a"), *ai = arg ? ce_fresh(E, "ai") : NULL;
    if (no == 1) ce_out(E, "%s %s;", AT, a); else ce_out(E, "%s %s[%d];", AT, a, no);
    if (arg) { if (no == 1) ce_out(E, "int %s;", ai); else ce_out(E, "int %s[%d];", ai, no); }
    const char *want_max = op->op == OP_ARGMAX ? "true" : "false";
    /* 1. in-thread */
    bool *seen = ARENA_ARRAY(&E->mem, bool, no);
    for (int i = 0; i < lay_nregs(X); i++) {
        int oi = 0;
        for (int k = 0; k < X->nregbits; k++)
            if (regmap[k] >= 0 && ((i >> k) & 1)) oi |= 1 << regmap[k];
        const char *dst = ce_reg(E, a, o, oi), *src = ce_reg(E, v->name, v->lay, i);
        if (arg) {
            const char *idx = all ? ce_fmt_str(E, "(%s + %lld)", ce_thread_coord(E, v->lay, -1), (long long)lay_reg_elem(X, i))
                                  : ce_coord(E, v->lay, i, op->axis);
            const char *w = ce_widen(E, dt, src), *dsti = ce_reg(E, ai, o, oi);
            if (!seen[oi]) ce_out(E, "%s = %s; %s = %s;", dst, w, dsti, idx);
            else ce_out(E, "if (tile_arg_better(%s, %s, %s, %s, %s)) { %s = %s; %s = %s; }", w, idx, dst, dsti,
                     want_max, dst, w, dsti, idx);
        } else {
            const char *s = ce_ew_cast(E, dt, acc, src);
            if (!seen[oi]) ce_out(E, "%s = %s;", dst, s);
            else ce_out(E, "%s = %s;", dst, combine(E, op->op, acc, dst, s));
        }
        seen[oi] = true;
    }
    /* 2. across lanes */
    for (int k = 0; k < 5; k++) {
        if (!((red_lanes >> k) & 1)) continue;
        for (int i = 0; i < no; i++) {
            const char *dst = ce_reg(E, a, o, i);
            if (arg) {
                const char *dsti = ce_reg(E, ai, o, i);
                ce_out(E, "{ %s w = tile_shfl_xor(%s, %d); int j = tile_shfl_xor(%s, %d); "
                       "if (tile_arg_better(w, j, %s, %s, %s)) { %s = w; %s = j; } }",
                    AT, dst, 1 << k, dsti, 1 << k, dst, dsti, want_max, dst, dsti);
            } else {
                /* the shuffle first: combine() may evaluate an operand conditionally,
                 * and every lane must take part in a shuffle */
                ce_out(E, "{ const %s w = tile_shfl_xor(%s, %d); %s = %s; }", AT, dst, 1 << k, dst,
                    combine(E, op->op, acc, dst, "w"));
            }
        }
    }
    /* 3. across warps, through shared memory */
    if (red_warps) {
        int nw = 1 << __builtin_popcount(red_warps);
        int64_t nout = type_numel(t);
        int asz = arg ? (int)sizeof(double) : ce_regsize(acc);
        if (asz < 4) asz = 4;
        ce_need_smem(E, nout * nw * (asz + (arg ? 4 : 0)) + 16);
        ce_out(E, "{");
        E->indent++;
        ce_out(E, "%s *S = (%s *)tile_smem;", AT, AT);
        if (arg) ce_out(E, "int *SI = (int *)(tile_smem + %lld);", (long long)(nout * nw * asz));
        ce_out(E, "const int wr = %s;", ce_pext_expr(E, "warp", red_warps));
        ce_out(E, "__syncthreads();");
        for (int i = 0; i < no; i++) {
            const char *slot = ce_fmt_str(E, "(%s + %lld) * %d", ce_thread_coord(E, o, -1), (long long)lay_reg_elem(&O, i), nw);
            ce_out(E, "S[%s + wr] = %s;", slot, ce_reg(E, a, o, i));
            if (arg) ce_out(E, "SI[%s + wr] = %s;", slot, ce_reg(E, ai, o, i));
        }
        ce_out(E, "__syncthreads();");
        for (int i = 0; i < no; i++) {
            const char *slot = ce_fmt_str(E, "(%s + %lld) * %d", ce_thread_coord(E, o, -1), (long long)lay_reg_elem(&O, i), nw);
            const char *dst = ce_reg(E, a, o, i);
            ce_out(E, "%s = S[%s];", dst, slot);
            if (arg) ce_out(E, "%s = SI[%s];", ce_reg(E, ai, o, i), slot);
            for (int w = 1; w < nw; w++) {
                if (arg) {
                    const char *dsti = ce_reg(E, ai, o, i);
                    ce_out(E, "if (tile_arg_better(S[%s + %d], SI[%s + %d], %s, %s, %s)) { %s = S[%s + %d]; %s = SI[%s + %d]; }",
                        slot, w, slot, w, dst, dsti, want_max, dst, slot, w, dsti, slot, w);
                } else {
                    ce_out(E, "%s = %s;", dst, combine(E, op->op, acc, dst, ce_fmt_str(E, "S[%s + %d]", slot, w)));
                }
            }
        }
        E->indent--;
        ce_out(E, "}");
    }
    /* 4. the result in its dtype */
    const char *name = ce_fresh(E, "v");
    ce_set_val(E, op->result, name, o);
    ce_decl(E, rt, name, o);
    for (int i = 0; i < no; i++) {
        const char *x2 = arg ? ce_ew_cast(E, DT_I32, rt, ce_reg(E, ai, o, i)) : ce_ew_cast(E, acc, rt, ce_reg(E, a, o, i));
        ce_out(E, "%s = %s;", ce_reg(E, name, o, i), x2);
    }
}

/* Scans: staged in shared memory, one thread per line, in index order. */
void ce_emit_scan(Emitter *E, const IrOp *op) {
    int x = op->args[0];
    ce_make_full(E, x);
    Val *v = ce_val(E, x);
    const Layout *X = ce_lay(E, v->lay);
    const Type *xt = ce_vtype(E, x);
    DType dt = xt->dtype, rt = ce_vtype(E, op->result)->dtype, acc = accum_dtype(op->op, dt);
    int axis = op->axis < 0 || op->axis >= xt->rank ? -1 : op->axis;
    int64_t n = type_numel(xt), len = axis < 0 ? n : xt->shape[axis], inner = 1;
    if (axis >= 0)
        for (int d = axis + 1; d < xt->rank; d++) inner *= xt->shape[d];
    int64_t lines = n / len;
    const char *AT = ce_ctype(acc);
    ce_need_smem(E, n * ce_regsize(acc) + 16);
    const char *name = ce_fresh(E, "v");
    ce_set_val(E, op->result, name, v->lay);
    ce_decl(E, rt, name, v->lay);
    ce_out(E, "{");
    E->indent++;
    ce_out(E, "%s *S = (%s *)tile_smem;", AT, AT);
    ce_out(E, "__syncthreads();");
    const char *own = ce_owner(E, v->lay);
    if (own) ce_out(E, "if (%s) {", own), E->indent++;
    for (int i = 0; i < lay_nregs(X); i++)
        ce_out(E, "S[%s + %lld] = %s;", ce_thread_coord(E, v->lay, -1), (long long)lay_reg_elem(X, i),
            ce_ew_cast(E, dt, acc, ce_reg(E, v->name, v->lay, i)));
    if (own) E->indent--, ce_out(E, "}");
    ce_out(E, "__syncthreads();");
    ce_out(E, "for (int line = threadIdx.x; line < %lld; line += %d) {", (long long)lines, E->threads);
    E->indent++;
    ce_out(E, "%s *p = S + (line / %lld) * %lld + line %% %lld;", AT, (long long)inner, (long long)(len * inner), (long long)inner);
    bool rev = op->flag != 0;
    ce_out(E, "%s run = p[%lld];", AT, rev ? (long long)((len - 1) * inner) : 0LL);
    ce_out(E, "for (int k = 1; k < %lld; ++k) {", (long long)len);
    E->indent++;
    const char *at = rev ? ce_fmt_str(E, "p[(%lld - k) * %lld]", (long long)(len - 1), (long long)inner)
                         : ce_fmt_str(E, "p[k * %lld]", (long long)inner);
    ce_out(E, "run = %s;", combine(E, op->op, acc, "run", at));
    ce_out(E, "%s = run;", at);
    E->indent--;
    ce_out(E, "}");
    E->indent--;
    ce_out(E, "}");
    ce_out(E, "__syncthreads();");
    for (int i = 0; i < lay_nregs(X); i++)
        ce_out(E, "%s = %s;", ce_reg(E, name, v->lay, i),
            ce_ew_cast(E, acc, rt, ce_fmt_str(E, "S[%s + %lld]", ce_thread_coord(E, v->lay, -1), (long long)lay_reg_elem(X, i))));
    E->indent--;
    ce_out(E, "}");
}

/* ---- mma ------------------------------------------------------------------------ */

/* Does operand `id` (rank 2, full layout) vectorise better along its rows
 * than along its columns? */
static bool stage_transposed(Emitter *E, int id) {
    int lay = ce_val(E, id)->lay, max = 16 / ce_regsize(ce_vdt(E, id));
    return ce_vtype(E, id)->rank == 2 && ce_vector_width(E, lay, 0, max) > ce_vector_width(E, lay, 1, max);
}

/* How stage_operand stores a tile: rows `ld` elements apart (padding
 * against bank conflicts), or in a wgmma layout (wgmma: `swizzle` bytes wide,
 * 0: core matrices; `rows` x `ld` elements).  xor8: padded rows whose 16-byte
 * pieces are permuted by the row's 8-row group (xor8_col); kperm: a tf32 A's
 * columns k-permuted in each 8-column step (kperm_col) before that. */
typedef struct {
    int ld;
    bool wgmma, xor8, kperm;
    int swizzle, rows;
} StageForm;

/* The stored column of tf32 A's column `c` (a C expression) such that
 * ldmatrix, reading stored columns q and q + 4 of a k step, returns A's
 * columns 2q and 2q + 1: the fragments of a k-permuted A (lay_mma_a), whose
 * B rows are then read as 2q and 2q + 1 (load_b_fragment).  For a B read a
 * float at a time through the 128-byte swizzle (the f32 scan's B_k in the
 * state's product): rows q and q + 4 of a warp's reads share banks (2 ways),
 * rows 2q and 2q + 1 do not. */
static const char *kperm_col(Emitter *E, const char *c) {
    return ce_fmt_str(E, "(((%s) & ~7) | (((%s) & 1) << 2) | (((%s) >> 1) & 3))", c, c, c);
}

/* The stored column of element column `c` (C expressions) in row `r` of a
 * tile of `s`-byte elements whose 16-byte pieces are XORed with the row's
 * 8-row group, (r / 8) % 8 (rows a multiple of 8 pieces long).  A warp
 * whose lanes hold rows 8 apart (the staged tf32 A of ssd_scan's state
 * product, (x · decay)ᵀ: a float a store) would put all 8 row groups in
 * one bank at any 16-byte aligned pitch, 8 ways conflicted; permuted, they
 * land in 8 pieces.  ldmatrix reads 8 rows of one group at one piece, which
 * the permutation moves together: still conflict-free at a pitch of 4 mod 32
 * floats. */
static const char *xor8_col(Emitter *E, const char *r, const char *c, int s) {
    int ve = 16 / s;
    return ce_fmt_str(E, "(((%s) & %d) | ((((%s) >> %d) ^ (((%s) >> 3) & 7)) << %d))", c, ve - 1, c, __builtin_ctz(ve), r,
                      __builtin_ctz(ve));
}

/* C expression: the address of element (r, c) of a tile stored from element
 * offset `base` of the scratch area as `form` says. */
static const char *staged_at(Emitter *E, DType dt, int64_t base, const StageForm *form, const char *r, const char *c) {
    int s = ce_regsize(dt);
    if (form->kperm) c = kperm_col(E, c);
    if (form->xor8) c = xor8_col(E, r, c, s);
    if (!form->wgmma) return ce_fmt_str(E, "((%s *)tile_smem + %lld + (%s) * %d + %s)", ce_ctype(dt), (long long)base, r, form->ld, c);
    /* the 16-byte piece, then the element's place in it */
    const char *piece = form->swizzle ? ce_swizzle_offset(E, form->swizzle, r, c, form->rows, s)
                                      : ce_core_offset(E, ce_fmt_str(E, "(%s)", r), c, form->ld, s);
    return ce_fmt_str(E, "((%s *)(tile_smem + %lld + %s + ((%s) * %d & 15)))", ce_ctype(dt), (long long)base * s, piece, c, s);
}

/* Writes operand `id` ([batch.., R, C]) into shared memory at element offset
 * `base` as `form` says, or, `transposed` (rank 2 only), its columns as rows
 * ([C][R]); in vectors where the layout allows. */
static void stage_operand(Emitter *E, int id, int64_t base, const StageForm *form, bool transposed) {
    ce_make_full(E, id);
    Val *v = ce_val(E, id);
    const Type *t = ce_vtype(E, id);
    DType dt = t->dtype;
    int rank = t->rank, lay = v->lay;
    const char *own = ce_owner(E, lay);
    if (own) ce_out(E, "if (%s) {", own), E->indent++;
    int V = ce_vector_width(E, lay, transposed ? rank - 2 : rank - 1, 16 / ce_regsize(dt));
    if ((ce_regsize(dt) != 2 && ce_regsize(dt) != 4) || form->kperm) V = 1;   /* (k-permuted: neighbours apart) */
    for (int r = 0; r < ce_nregs(E, lay); r += V) {
        /* row = batch * R + row coordinate */
        Buf rb = {0};
        ce_buf_printf(&rb, "0");
        for (int d = 0; d < rank - 1; d++) {
            int64_t stride = 1;
            for (int e = d + 1; e < rank - 1; e++) stride *= t->shape[e];
            ce_buf_printf(&rb, " + %s * %lld", ce_coord(E, lay, r, d), (long long)stride);
        }
        const char *col = ce_coord(E, lay, r, rank - 1);
        const char *ptr = transposed ? staged_at(E, dt, base, form, col, rb.p) : staged_at(E, dt, base, form, rb.p, col);
        free(rb.p);
        if (V > 1) ce_vec_store(E, dt, ptr, v->name, lay, r, V);
        else ce_out(E, "*%s = %s;", ptr, ce_reg(E, v->name, lay, r));
    }
    if (own) E->indent--, ce_out(E, "}");
}

/* mma.sync on the tensor cores (else exact FMAs): f16 / bf16 / tf32 operands
 * of one dtype, f32 or f16 result, M, N, K multiples of the instruction's. */
int ce_mma_kstep(DType operand) { return operand == DT_TF32 ? 8 : 16; }

bool ce_mma_on_tensor_cores(const Type *at, const Type *bt, const Type *t) {
    DType adt = at->dtype;
    int M = at->shape[at->rank - 2], K = at->shape[at->rank - 1], N = bt->shape[bt->rank - 1];
    int kstep = ce_mma_kstep(adt);
    return adt == bt->dtype && (ce_is_half(adt) || adt == DT_TF32) && (t->dtype == DT_F32 || t->dtype == DT_F16) &&
           M % 16 == 0 && N % 8 == 0 && K % kstep == 0;
}

/* The address of the 16 bytes at stored row `r`, column `c` (C expressions;
 * c a multiple of 8 elements) of 16-bit operand `o`, for ldmatrix. */
static const char *ldsm_at_sized(Emitter *E, const SmemOperand *o, const char *r, const char *c, int s) {
    if (o->xor8) c = xor8_col(E, r, c, s);
    if (!o->swizzle) return ce_fmt_str(E, "%s + (%s) * %d + %s", o->base, r, o->ld, c);
    return ce_fmt_str(E, "(const unsigned char *)%s + %s", o->base, ce_swizzle_offset(E, o->swizzle, r, c, o->rows, s));
}
/* The same address, rows `rl` + `rc` (rc an expression the emitter knows to
 * be a multiple of 8: a fragment's 16 * mi or 8 * ni, or k0): in a swizzled
 * buffer the XOR reads only a row's index mod 8, so the offset of rows rl
 * plus rc times the row's bytes.  That offset is declared once a k step and
 * shared by the loads whose rows differ by rc alone: each k step of the
 * bf16 matmul at 128 x 128 x 64 on 4 warps computed 8 offsets whole, now 2
 * (A's, for its 4 row blocks; B's 4 column pairs', the same every k step,
 * which the compiler computes once).  Else (padded rows, A's xor8) the
 * address whole (ldsm_at_sized). */
static const char *ldsm_split(Emitter *E, const SmemOperand *o, const char *rl, const char *rc, const char *c, int s) {
    if (!o->swizzle || o->xor8 || E->opt_ldsm_whole)
        return ldsm_at_sized(E, o, ce_fmt_str(E, "%s + %s", rc, rl), c, s);
    const char *off = ce_swizzle_offset(E, o->swizzle, rl, c, o->rows, s), *var = NULL;
    for (int i = 0; i < E->nldsm && !var; i++)
        if (strcmp(E->ldsm_key[i], off) == 0) var = E->ldsm_var[i];
    if (!var) {
        var = ce_fresh(E, "lo");
        ce_out(E, "const int %s = %s;", var, off);
        if (E->nldsm < (int)(sizeof E->ldsm_key / sizeof E->ldsm_key[0]))
            E->ldsm_key[E->nldsm] = off, E->ldsm_var[E->nldsm++] = var;
    }
    return ce_fmt_str(E, "(const unsigned char *)%s + %s + (%s) * %d", o->base, var, rc, o->swizzle);
}

/* C expression: the float at stored row `r`, column `c` of tf32 operand `o`
 * (rows `ld` apart, or swizzled: wgmma's layout, which a buffer both a wgmma
 * and an mma.sync product read takes; ce_wgmma_plan). */
static const char *tf32_at(Emitter *E, const SmemOperand *o, const char *r, const char *c) {
    if (!o->swizzle) return ce_fmt_str(E, "%s[(%s) * %d + %s]", o->base, r, o->ld, c);
    return ce_fmt_str(E, "*(const float *)((const unsigned char *)%s + %s + ((%s) * 4 & 15))", o->base,
                      ce_swizzle_offset(E, o->swizzle, r, c, o->rows, 4), c);
}

/* Are tf32 fragments stored as `o` says read by ldmatrix (a float is two of
 * its 16-bit elements)?  A: stored [M][K], where a warp holding MI m16 blocks
 * reads two blocks or more: the tf32 matmul 7-9% faster (H200).  Not for one
 * block a warp: 3 loads a k step saved, and compute_out_f32 1.4% slower
 * with it (its product of C_m, one block a warp on 8 warps, B by ldmatrix
 * too) and at the driver's tiles with bf16 states past 128 registers
 * (ptxas, NVRTC 13.0; docs/performance.md).  B: stored [N][K], two n-blocks
 * an x4. */
static bool tf32_by_ldsm(const Emitter *E, const SmemOperand *o) {
    /* K contiguous, rows 16-byte aligned (a swizzled buffer's are) */
    return o->kmajor && (o->swizzle || o->ld % 4 == 0) && !E->opt_tf32_scalar;
}
static bool tf32_a_by_ldsm(const Emitter *E, const SmemOperand *o, int MI) { return MI >= 2 && tf32_by_ldsm(E, o); }

/* A tf32 fragment register from `x` (an expression of a float), rounded if `o` says so. */
static const char *tf32_reg(Emitter *E, const SmemOperand *o, const char *x) {
    return ce_fmt_str(E, "__float_as_uint(%s)", o->round_tf32 ? ce_fmt_str(E, "tile_tf32(%s)", x) : x);
}

/* Fragment registers of the A operand (m16 x k16, or k8 for tf32) of rows
 * m0 + 16 mi of the MI a warp holds, from shared memory as `o` describes. */
static void load_a_fragment(Emitter *E, const SmemOperand *o, int mi, int MI, int s) {
    if (s == 2) {
        if (o->kmajor) {
            const char *at = ldsm_split(E, o, "m0 + (lane & 15)", ce_fmt_str(E, "%d", mi * 16), "k0 + (lane >> 4) * 8", 2);
            ce_out(E, "tile_ldsm_x4(fa[%d][0], fa[%d][1], fa[%d][2], fa[%d][3], %s);", mi, mi, mi, mi, at);
        } else {   /* stored [K][M]: transposed 8x8 blocks */
            const char *at = ldsm_split(E, o, "(lane & 7) + (lane >> 4) * 8", "k0",
                                        ce_fmt_str(E, "m0 + %d + ((lane >> 3) & 1) * 8", mi * 16), 2);
            ce_out(E, "tile_ldsm_x4_trans(fa[%d][0], fa[%d][1], fa[%d][2], fa[%d][3], %s);", mi, mi, mi, mi, at);
        }
        return;
    }
    /* tf32 a0..a3 = (g, q), (g + 8, q), (g, q + 4), (g + 8, q + 4): by
     * ldmatrix, 8 x 4-float matrices (rows 0-7 and 8-15, columns k0 and
     * k0 + 4), four loads in one */
    if (tf32_a_by_ldsm(E, o, MI)) {
        const char *at = ldsm_split(E, o, "m0 + (lane & 15)", ce_fmt_str(E, "%d", mi * 16), "k0 + (lane >> 4) * 4", 4);
        ce_out(E, "tile_ldsm_x4(fa[%d][0], fa[%d][1], fa[%d][2], fa[%d][3], %s);", mi, mi, mi, mi, at);
        if (o->round_tf32)
            for (int r = 0; r < 4; r++)
                ce_out(E, "fa[%d][%d] = %s;", mi, r, tf32_reg(E, o, ce_fmt_str(E, "__uint_as_float(fa[%d][%d])", mi, r)));
        return;
    }
    if (o->swizzle) {   /* element by element through the swizzle */
        for (int r = 0; r < 4; r++) {
            const char *m = ce_fmt_str(E, "m0 + %d + g", mi * 16 + (r & 1) * 8), *k = ce_fmt_str(E, "k0 + q + %d", (r >> 1) * 4);
            ce_out(E, "fa[%d][%d] = %s;", mi, r, tf32_reg(E, o, o->kmajor ? tf32_at(E, o, m, k) : tf32_at(E, o, k, m)));
        }
        return;
    }
    /* else from one row pointer */
    const char *p = o->kmajor ? ce_fmt_str(E, "(%s + (m0 + %d + g) * %d + k0 + q)", o->base, mi * 16, o->ld)
                              : ce_fmt_str(E, "(%s + (k0 + q) * %d + m0 + %d + g)", o->base, o->ld, mi * 16);
    int dm = o->kmajor ? 8 * o->ld : 8, dk = o->kmajor ? 4 : 4 * o->ld;
    const int off[4] = {0, dm, dk, dm + dk};
    for (int r = 0; r < 4; r++) {
        const char *x = ce_fmt_str(E, "%s[%d]", p, off[r]);
        ce_out(E, "fa[%d][%d] = %s;", mi, r, tf32_reg(E, o, x));
    }
}

/* The row pitch (floats) of a tf32 B staged [K][N] whose fragments are read
 * a float at a time, thread (g, q) reading column g of rows q and q + 4, or
 * of rows 2q and 2q + 1 under a k-permuted A: the narrowest past N, rows
 * 16-byte aligned, that puts a warp's 32 reads in 32 banks (rows q apart 8
 * banks apart, or 2q apart).  ssd_scan's tf32 x in W·x (64 wide,
 * k-permuted) took N + 8 = 72 floats, its reads 2 ways conflicted; now 68. */
static int tf32_kn_pitch(int N, bool kperm) {
    int ld = (N + 3) / 4 * 4;
    while (kperm ? ld % 16 != 4 && ld % 16 != 12 : ld % 32 != 8 && ld % 32 != 24) ld += 4;
    return ld;
}

/* Fragment registers of the B operand from n-block ni on, of `left` n-blocks
 * still to read (columns n0 + 8 ni ...); returns how many it read: 16-bit
 * operands and tf32 ones stored [N][K] two at a time where it can (ldmatrix
 * x4), tf32 ones stored [K][N] one float at a time.  kperm: rows in the
 * order of a k-permuted A (lay_mma_a): 16-bit fragment row r is row
 * 4 (r % 8 / 2) + r % 2 + 2 (r / 8) of the step (B stored [K][N] only), tf32
 * row r is row 2 (r % 4) + r / 4. */
static int load_b_fragment(Emitter *E, const SmemOperand *o, int ni, int left, int s, bool kperm) {
    bool pair = left >= 2 && ni % 2 == 0;
    if (s == 2) {
        const char *row = kperm ? "(((lane & 6) << 1) | (lane & 1) | ((lane >> 2) & 2))" : "(lane & 15)";
        const char *nb = ce_fmt_str(E, "%d", ni * 8);
        if (!o->kmajor && pair)   /* stored [K][N] */
            ce_out(E, "tile_ldsm_x4_trans(fb[%d][0], fb[%d][1], fb[%d][0], fb[%d][1], %s);", ni, ni, ni + 1, ni + 1,
                ldsm_split(E, o, row, "k0", ce_fmt_str(E, "n0 + %d + (lane >> 4) * 8", ni * 8), 2));
        else if (!o->kmajor)
            ce_out(E, "tile_ldsm_x2_trans(fb[%d][0], fb[%d][1], %s);", ni, ni,
                ldsm_split(E, o, row, "k0", ce_fmt_str(E, "n0 + %d", ni * 8), 2));
        else if (pair)            /* stored [N][K] */
            ce_out(E, "tile_ldsm_x4(fb[%d][0], fb[%d][1], fb[%d][0], fb[%d][1], %s);", ni, ni, ni + 1, ni + 1,
                ldsm_split(E, o, "n0 + (lane & 7) + (lane >> 4) * 8", nb, "k0 + ((lane >> 3) & 1) * 8", 2));
        else
            ce_out(E, "tile_ldsm_x2(fb[%d][0], fb[%d][1], %s);", ni, ni,
                ldsm_split(E, o, "n0 + (lane & 7)", nb, "k0 + ((lane >> 3) & 1) * 8", 2));
        return pair ? 2 : 1;
    }
    /* tf32 b0, b1 = (k = q, n = g), (k = q + 4, n = g); k-permuted: k = 2q, 2q + 1 */
    if (!kperm && tf32_by_ldsm(E, o)) {
        /* stored [N][K]: ldmatrix, as A's fragments (columns k0 and k0 + 4) */
        const char *at = ldsm_split(E, o, pair ? "n0 + (lane & 7) + (lane >> 4) * 8" : "n0 + (lane & 7)",
                                    ce_fmt_str(E, "%d", ni * 8), "k0 + ((lane >> 3) & 1) * 4", 4);
        if (pair) ce_out(E, "tile_ldsm_x4(fb[%d][0], fb[%d][1], fb[%d][0], fb[%d][1], %s);", ni, ni, ni + 1, ni + 1, at);
        else ce_out(E, "tile_ldsm_x2(fb[%d][0], fb[%d][1], %s);", ni, ni, at);
        int n = pair ? 2 : 1;
        if (o->round_tf32)
            for (int j = ni; j < ni + n; j++)
                for (int r = 0; r < 2; r++)
                    ce_out(E, "fb[%d][%d] = %s;", j, r, tf32_reg(E, o, ce_fmt_str(E, "__uint_as_float(fb[%d][%d])", j, r)));
        return n;
    }
    if (kperm && o->kmajor && (o->swizzle || o->ld % 2 == 0)) {
        /* k = 2q, 2q + 1 side by side: one 8-byte load (any K-major B under a
         * k-permuted A, the transposed copies of emit_cuda_async.c among them;
         * in a swizzled buffer the pair lies in one 16-byte piece) */
        const char *v = ce_fresh(E, "b");
        const char *n = ce_fmt_str(E, "n0 + %d + g", ni * 8);
        if (o->swizzle) ce_out(E, "const float2 %s = *(const float2 *)&%s;", v, tf32_at(E, o, n, "k0 + 2 * q"));
        else ce_out(E, "const float2 %s = *(const float2 *)(%s + (%s) * %d + k0 + 2 * q);", v, o->base, n, o->ld);
        ce_out(E, "fb[%d][0] = %s;", ni, tf32_reg(E, o, ce_fmt_str(E, "%s.x", v)));
        ce_out(E, "fb[%d][1] = %s;", ni, tf32_reg(E, o, ce_fmt_str(E, "%s.y", v)));
        return 1;
    }
    const char *kq = kperm ? "2 * q" : "q";
    if (o->swizzle) {   /* element by element through the swizzle */
        for (int r = 0; r < 2; r++) {
            const char *n = ce_fmt_str(E, "n0 + %d + g", ni * 8), *k = ce_fmt_str(E, "k0 + %s + %d", kq, r * (kperm ? 1 : 4));
            ce_out(E, "fb[%d][%d] = %s;", ni, r, tf32_reg(E, o, o->kmajor ? tf32_at(E, o, n, k) : tf32_at(E, o, k, n)));
        }
        return 1;
    }
    int dk = (o->kmajor ? 1 : o->ld) * (kperm ? 1 : 4);
    const char *p = o->kmajor ? ce_fmt_str(E, "(%s + (n0 + %d + g) * %d + k0 + %s)", o->base, ni * 8, o->ld, kq)
                              : ce_fmt_str(E, "(%s + (k0 + %s) * %d + n0 + %d + g)", o->base, kq, o->ld, ni * 8);
    for (int r = 0; r < 2; r++) ce_out(E, "fb[%d][%d] = %s;", ni, r, tf32_reg(E, o, ce_fmt_str(E, "%s[%d]", p, r * dk)));
    return 1;
}

/* The warps of result layout R over its rows (M) and its columns (N), log2. */
static void result_warp_bits(const Type *t, const Layout *R, int *wmbits, int *wnbits) {
    *wmbits = *wnbits = 0;
    for (int b = 0; b < R->nbits; b++) {
        if (R->space[b] != LAY_WARP) continue;
        int dd, j;
        lay_dim_of(t->rank, t->shape, b, &dd, &j);
        if (dd == t->rank - 1) (*wnbits)++; else (*wmbits)++;
    }
}

/* One k step: B's fragments from shared memory, then the MI x NI
 * instructions into the accumulator registers `d` (layout `lay`) of batch
 * bb.  A's fragments are in fa[][] already, or with `a` read from shared
 * memory row by row, each just before its products: ldmatrix is volatile
 * asm, which the compiler does not sink to its first use as it does plain
 * loads, and all of A read up front took tf32 kernels at 128 registers
 * into spills (ptxas, NVRTC 13.0). */
static void emit_k_step_products(Emitter *E, DType adt, const SmemOperand *a, const SmemOperand *b, bool kperm,
                                 const char *d, int lay, int bb, int MI, int NI) {
    int s = ce_regsize(adt);
    const char *mma = adt == DT_TF32 ? "tile_mma_m16n8k8_tf32" : adt == DT_BF16 ? "tile_mma_m16n8k16_bf16" : "tile_mma_m16n8k16_f16";
    for (int ni = 0; ni < NI;) ni += load_b_fragment(E, b, ni, NI - ni, s, kperm);
    for (int mi = 0; mi < MI; mi++) {
        if (a) load_a_fragment(E, a, mi, MI, s);
        for (int ni = 0; ni < NI; ni++) {
            int r0 = ((bb * MI + mi) * NI + ni) << 2;
            ce_out(E, "%s(%s, %s, %s, %s, fa[%d][0], fa[%d][1], fa[%d][2], fa[%d][3], fb[%d][0], fb[%d][1]);", mma,
                ce_reg(E, d, lay, r0), ce_reg(E, d, lay, r0 + 1), ce_reg(E, d, lay, r0 + 2), ce_reg(E, d, lay, r0 + 3),
                mi, mi, mi, mi, ni, ni);
        }
    }
}

/* The k steps of a tensor-core mma whose A operand is registers `areg` in
 * fragment layout a_lay (lay_mma_a), written out one by one (fragment
 * registers are named, not indexed): each packs its fragments from them. */
static void emit_mma_reg_a(Emitter *E, const IrOp *op, const char *areg, int a_lay, bool kperm, const SmemOperand *b,
                           const char *d, int lay, int MI, int NI) {
    DType adt = ce_vdt(E, op->args[0]);
    int K = ce_vtype(E, op->args[0])->shape[1], s = ce_regsize(adt);
    int kstep = s == 2 ? 16 : 8, KS = K / kstep, per = s == 2 ? 8 : 4;
    for (int ks = 0; ks < KS; ks++) {
        ce_out(E, "{");
        E->indent++;
        ce_out(E, "const int k0 = %d;", ks * kstep);
        ce_out(E, "(void)k0;");
        E->nldsm = 0;   /* (a block of its own: no offset of ldsm_split's from before) */
        for (int mi = 0; mi < MI; mi++) {
            int base = (mi * KS + ks) * per;
            /* a_i: bit 0 of i is row + 8, bit 1 the second half of the k step;
             * the registers holding them (lay_mma_a) */
            for (int i = 0; i < 4; i++) {
                int row8 = i & 1, khalf = i >> 1;
                if (s == 2) {
                    int lo = base + (kperm ? 2 * khalf + 4 * row8 : 2 * i);
                    ce_out(E, "fa[%d][%d] = (unsigned)%s | ((unsigned)%s << 16);", mi, i, ce_reg(E, areg, a_lay, lo),
                        ce_reg(E, areg, a_lay, lo + 1));
                } else {
                    int r = base + (kperm ? khalf + 2 * row8 : i);
                    ce_out(E, "fa[%d][%d] = __float_as_uint(%s);", mi, i, ce_reg(E, areg, a_lay, r));
                }
            }
        }
        emit_k_step_products(E, adt, NULL, b, kperm, d, lay, 0, MI, NI);
        E->indent--;
        ce_out(E, "}");
    }
}

/* The layout of a tensor-core product's result: wgmma's where the plan put
 * it on wgmma, else mma.sync's fragments for its split. */
int ce_mma_result_layout(Emitter *E, const IrOp *op) {
    int wg_lay = ce_wgmma_layout(E, op);
    if (wg_lay >= 0) return wg_lay;
    int wmb, wnb;
    ce_plan_split(E, op, &wmb, &wnb);
    Layout l = lay_mma(ce_vtype(E, op->result), wmb, wnb);
    return ce_lay_add(E, &l);
}

void ce_emit_mma(Emitter *E, const IrOp *op) {
    int ia = op->args[0], ib = op->args[1], ic = op->args[2];
    const Type *at = ce_vtype(E, ia), *bt = ce_vtype(E, ib), *t = ce_vtype(E, op->result);
    DType adt = at->dtype, bdt = bt->dtype, rt = t->dtype, ct = ce_vdt(E, ic);
    int M = at->shape[at->rank - 2], K = at->shape[at->rank - 1], N = bt->shape[bt->rank - 1];
    int batch = t->rank == 3 ? t->shape[0] : 1;
    bool abatch = at->rank == 3, bbatch = bt->rank == 3;
    int kstep = ce_mma_kstep(adt);
    bool tensor = ce_mma_on_tensor_cores(at, bt, t);
    /* operands already in shared memory (cp.async) are read where they are */
    SmemOperand oa = {0}, ob = {0};
    bool a_async = tensor && ce_async_operand(E, ia, 0, &oa);
    bool b_async = tensor && ce_async_operand(E, ib, 1, &ob);
    ce_fit_operand(E, ic, t);
    int lay;
    /* A straight from registers in fragment layout (emit_cuda_plan.c) */
    bool reg_a = tensor && !a_async && ce_plan_reg_a(E, op);
    int a_lay = -1;
    /* Hopper's warpgroup mma when the plan chose it (emit_cuda_wgmma.c): its
     * shared-memory operands are in wgmma's layouts, which nothing else can
     * read; an A from registers is in mma.sync's fragments */
    int wg_lay = ce_wgmma_layout(E, op);
    bool wg_reg_a = wg_lay >= 0 && ce_wgmma_reads_registers(E, op);
    /* B staged by the product itself into a wgmma layout (ce_wgmma_stages_b) */
    bool wg_stage_b = wg_lay >= 0 && !wg_reg_a && !b_async && ce_wgmma_stages_b(E, op);
    if (wg_lay >= 0 && !(wg_reg_a ? reg_a && b_async && ce_plan_kperm(E, op) == E->wgmma_kperm[op->result]
                                  : a_async && (b_async || wg_stage_b))) {
        ce_fail(E, op, "internal: a wgmma product without its operands where the plan put them");
        return;
    }
    if (tensor) {
        int wmb, wnb;
        ce_plan_split(E, op, &wmb, &wnb);
        lay = ce_mma_result_layout(E, op);
        /* (on wgmma too: unpermuted, the check above) */
        if (reg_a) {
            Layout fl = lay_mma_a(at, wmb, wnb, ce_is_half(adt), ce_plan_kperm(E, op));
            a_lay = ce_lay_add(E, &fl);
        }
    } else {
        Val *c = ce_val(E, ic);
        lay = lay_full(ce_lay(E, c->lay)) && ce_lay(E, c->lay)->nbits == lay_log2(type_numel(t)) ? c->lay : ce_blocked(E, t, -1);
    }
    /* accumulate in f32 (f64 for f64, i32 for integers); round once at the end */
    DType acc = rt == DT_F64 ? DT_F64 : dtype_is_float(rt) ? DT_F32 : DT_I32;
    /* wgmma into a loop-carried accumulator works on the local's own
     * registers: copies in and out would serialize the products (ptxas) */
    const char *d = wg_lay >= 0 && acc == ct && acc == rt ? ce_wgmma_inplace(E, op, lay) : NULL;
    bool inplace = d != NULL;
    if (!d) {
        const char *c = ce_convert(E, ce_val(E, ic)->name, ce_val(E, ic)->lay, ct, lay);
        d = ce_fresh(E, "d");
        ce_decl(E, acc, d, lay);
        for (int r = 0; r < ce_nregs(E, lay); r++)
            ce_out(E, "%s = %s;", ce_reg(E, d, lay, r), ce_ew_cast(E, ct, acc, ce_reg(E, c, lay, r)));
    }
    int s = ce_regsize(adt);
    bool stage_a = !a_async && !reg_a;
    /* conversions use shared memory too: all of them before the staging */
    const char *areg = reg_a ? ce_convert(E, ce_val(E, ia)->name, ce_val(E, ia)->lay, adt, a_lay) : NULL;
    if (stage_a) ce_make_full(E, ia);
    if (!b_async) ce_make_full(E, ib);
    /* A 16-bit operand whose registers run along its rows is staged transposed
     * (A as [K][M], B as [N][K]): 16-byte stores instead of one per element,
     * and ldmatrix reads it the other way round for free */
    bool a_tr = stage_a && tensor && s == 2 && !abatch && stage_transposed(E, ia);
    bool b_tr = !b_async && tensor && s == 2 && !bbatch && stage_transposed(E, ib) &&
                !(reg_a && ce_plan_kperm(E, op));   /* a k-permuted A needs B as [K][N] */
    int pad = s == 2 ? 8 : 4;
    int lda = !tensor ? K : a_tr ? M + pad : K + pad;
    int ldb = !tensor ? N : b_tr ? K + pad : s == 2 ? N + 8 : tf32_kn_pitch(N, reg_a && ce_plan_kperm(E, op));
    StageForm a_form = {.ld = lda}, b_form = {.ld = ldb};
    if (stage_a && tensor && s == 4 && !abatch && !a_tr && wg_lay < 0 && K % 32 == 0 && !E->opt_no_xor8) {
        /* a tf32 A that ldmatrix will read (tf32_a_by_ldsm): its pieces
         * permuted by row group against the stores' conflicts (xor8_col) */
        int wmbits, wnbits;
        result_warp_bits(t, ce_lay(E, lay), &wmbits, &wnbits);
        SmemOperand probe = {.ld = lda, .kmajor = true};
        a_form.xor8 = tf32_a_by_ldsm(E, &probe, (M / 16) >> wmbits);
        /* and k-permuted where B lies swizzled [K][N], read a float at a time */
        a_form.kperm = a_form.xor8 && b_async && !ob.kmajor && ob.swizzle && !E->opt_no_staged_kperm;
    }
    if (wg_stage_b) {   /* wgmma's layouts have no padding; tf32 K-major only */
        if (bdt == DT_TF32) b_tr = true;
        ldb = b_tr ? K : N;
        b_form = (StageForm){.ld = ldb, .wgmma = true, .swizzle = ce_wgmma_staged_swizzle(E, op, b_tr ? 0 : 1), .rows = b_tr ? N : K};
        /* (A read from a k-permuted transposed copy: B's K rows in its order, bar_kperm) */
        b_form.kperm = E->wgmma_kperm[op->result] && b_tr;
    }
    int64_t a_elems = stage_a ? (int64_t)(abatch ? batch : 1) * (a_tr ? K : M) * lda : 0;
    int64_t b_off = ((a_elems * s + 15) / 16) * 16 / ce_regsize(bdt);
    int64_t b_elems = b_async ? 0 : (int64_t)(bbatch ? batch : 1) * (b_tr ? N : K) * ldb;
    ce_need_smem(E, b_off * ce_regsize(bdt) + b_elems * ce_regsize(bdt));
    if (stage_a || !b_async) {
        if (!E->scratch_clean) ce_out(E, "__syncthreads();");
        if (stage_a) stage_operand(E, ia, 0, &a_form, a_tr);
        if (!b_async) stage_operand(E, ib, b_off, &b_form, b_tr);
        /* (wgmma reads shared memory through the async proxy) */
        if (wg_stage_b) ce_out(E, "tile_fence_proxy_async();");
        ce_out(E, "__syncthreads();");
    }
    if (stage_a)
        oa = (SmemOperand){.base = ce_fmt_str(E, "((const %s *)tile_smem)", ce_ctype(adt)), .ld = lda, .kmajor = !a_tr, .xor8 = a_form.xor8};
    if (!b_async)
        ob = (SmemOperand){.base = ce_fmt_str(E, "((const %s *)tile_smem + %lld)", ce_ctype(bdt), (long long)b_off), .ld = ldb,
                           .kmajor = b_tr, .swizzle = b_form.swizzle, .rows = b_form.rows};
    ce_out(E, "{");
    E->indent++;
    const Layout *R = ce_lay(E, lay);
    if (wg_lay >= 0) {
        ce_emit_wgmma(E, op, wg_reg_a ? NULL : &oa, areg, a_lay, &ob, d, lay, inplace);
    } else if (tensor) {
        int wmbits, wnbits;
        result_warp_bits(t, R, &wmbits, &wnbits);
        int MI = (M / 16) >> wmbits, NI = (N / 8) >> wnbits;
        ce_out(E, "const int m0 = ((warp >> %d) & %d) * %d, n0 = (warp & %d) * %d;", wnbits, (1 << wmbits) - 1,
            M >> wmbits, (1 << wnbits) - 1, N >> wnbits);
        ce_out(E, "const int g = lane >> 2, q = lane & 3;");
        ce_out(E, "(void)g; (void)q;");
        ce_out(E, "unsigned fa[%d][4], fb[%d][2];", MI, NI);
        for (int bb = 0; bb < batch; bb++) {
            SmemOperand a = oa, b = ob;   /* batch bb: whole operands further on */
            if (abatch && bb) a.base = ce_fmt_str(E, "(%s + %lld)", oa.base, (long long)bb * M * lda);
            if (bbatch && bb) b.base = ce_fmt_str(E, "(%s + %lld)", ob.base, (long long)bb * K * ldb);
            if (reg_a) {   /* k steps written out: fragment registers are named, not indexed */
                emit_mma_reg_a(E, op, areg, a_lay, ce_plan_kperm(E, op), &b, d, lay, MI, NI);
                continue;
            }
            ce_out(E, "#pragma unroll");
            ce_out(E, "for (int k0 = 0; k0 < %d; k0 += %d) {", K, kstep);
            E->indent++;
            E->nldsm = 0;
            /* A's fragments first (16-bit: measured fastest; tf32 read a float at
             * a time: the compiler moves those loads as it likes), or by
             * ldmatrix in tf32 row by row (emit_k_step_products) */
            bool a_late = s == 4 && tf32_a_by_ldsm(E, &a, MI);
            if (!a_late)
                for (int mi = 0; mi < MI; mi++) load_a_fragment(E, &a, mi, MI, s);
            emit_k_step_products(E, adt, a_late ? &a : NULL, &b, a_form.kperm, d, lay, bb, MI, NI);
            E->indent--;
            ce_out(E, "}");
        }
    } else {
        /* exact products on the FMA units, in k order (as the interpreter) */
        const char *AT = ce_ctype(adt), *BT = ce_ctype(bdt);
        ce_out(E, "const %s *As = (const %s *)tile_smem;", AT, AT);
        ce_out(E, "const %s *Bs = (const %s *)tile_smem + %lld;", BT, BT, (long long)b_off);
        ce_out(E, "for (int k = 0; k < %d; ++k) {", K);
        E->indent++;
        for (int r = 0; r < ce_nregs(E, lay); r++) {
            const char *bbx = t->rank == 3 ? ce_coord(E, lay, r, 0) : "0";
            const char *m = ce_coord(E, lay, r, t->rank - 2), *n = ce_coord(E, lay, r, t->rank - 1);
            const char *av = ce_fmt_str(E, "As[(%s * %d + %s) * %d + k]", abatch ? bbx : "0", M, m, lda);
            const char *bv = ce_fmt_str(E, "Bs[(%s * %d + k) * %d + %s]", bbatch ? bbx : "0", K, ldb, n);
            const char *dst = ce_reg(E, d, lay, r);
            if (acc == DT_I32)
                ce_out(E, "%s = (int)((unsigned)%s + (unsigned)((int)%s * (int)%s));", dst, dst, av, bv);
            else if (acc == DT_F64)
                ce_out(E, "%s = fma((double)%s, (double)%s, %s);", dst, av, bv, dst);
            else {
                /* (a tf32 operand may be a tf32 array's word: its low bits dropped, as the tensor cores do) */
                av = ce_tf32_value(E, ia, av);
                bv = ce_tf32_value(E, ib, bv);
                ce_out(E, "%s = fmaf(%s, %s, %s);", dst, ce_ew_cast(E, adt, DT_F32, av), ce_ew_cast(E, bdt, DT_F32, bv), dst);
            }
        }
        E->indent--;
        ce_out(E, "}");
    }
    E->indent--;
    ce_out(E, "}");
    const char *name = ce_fresh(E, "v");
    ce_set_val(E, op->result, name, lay);
    if (rt == acc) {
        ce_set_val(E, op->result, d, lay);
        return;
    }
    ce_decl(E, rt, name, lay);
    for (int r = 0; r < ce_nregs(E, lay); r++) ce_out(E, "%s = %s;", ce_reg(E, name, lay, r), ce_ew_cast(E, acc, rt, ce_reg(E, d, lay, r)));
}

/* ---- print ---------------------------------------------------------------------- */

static const char *printf_conv(DType t) {
    if (t == DT_BOOL) return "%s";
    if (dtype_is_float(t)) return "%g";
    if (dtype_is_unsigned(t)) return "%llu";
    return "%lld";
}
static const char *printf_arg(Emitter *E, int id, const char *x) {
    DType t = ce_vdt(E, id);
    if (t == DT_BOOL) return ce_fmt_str(E, "(%s ? \"true\" : \"false\")", x);
    if (dtype_is_float(t)) return ce_fmt_str(E, "(double)%s", ce_widen(E, t, ce_tf32_value(E, id, x)));
    if (dtype_is_unsigned(t)) return ce_fmt_str(E, "(unsigned long long)%s", x);
    return ce_fmt_str(E, "(long long)%s", x);
}

/* print: thread 0 prints; tiles are staged in shared memory first. */
void ce_emit_print(Emitter *E, const IrOp *op) {
    const char *staged[64];
    int n = op->nargs < 64 ? op->nargs : 64;
    int64_t off = 0;
    for (int i = 0; i < n; i++)   /* conversions (through shared memory) before any staging */
        if (ce_lay(E, ce_val(E, op->args[i])->lay)->nbits > 0) ce_make_full(E, op->args[i]);
    for (int i = 0; i < n; i++) {
        int id = op->args[i];
        staged[i] = NULL;
        if (ce_nregs(E, ce_val(E, id)->lay) == 1 && ce_lay(E, ce_val(E, id)->lay)->nbits == 0) continue;
        Val *v = ce_val(E, id);
        DType dt = ce_vdt(E, id);
        staged[i] = ce_fmt_str(E, "((%s *)(tile_smem + %lld))", ce_ctype(dt), (long long)off);
        if (i == 0 || off == 0) ce_out(E, "__syncthreads();");
        const char *own = ce_owner(E, v->lay);
        if (own) ce_out(E, "if (%s) {", own), E->indent++;
        for (int r = 0; r < ce_nregs(E, v->lay); r++)
            ce_out(E, "%s[%s + %lld] = %s;", staged[i], ce_thread_coord(E, v->lay, -1),
                (long long)lay_reg_elem(ce_lay(E, v->lay), r), ce_reg(E, v->name, v->lay, r));
        if (own) E->indent--, ce_out(E, "}");
        off += ((type_numel(ce_vtype(E, id)) * ce_regsize(dt) + 15) / 16) * 16;
    }
    ce_need_smem(E, off);
    if (off) ce_out(E, "__syncthreads();");
    ce_out(E, "if (threadIdx.x == 0) {");
    E->indent++;
    ce_out(E, "printf(\"[block %%d,%%d,%%d] \", (int)blockIdx.x, (int)blockIdx.y, (int)blockIdx.z);");
    int next = 0;
    Buf lit = {0};
    ce_buf_printf(&lit, "%s", "");
    const char *s = op->str ? op->str : "";
    for (;; s++) {
        bool hole = s[0] == '{' && s[1] == '}' && next < n;
        if (!*s || hole) {
            if (lit.len) ce_out(E, "printf(\"%s\");", lit.p);
            lit.len = 0;
            if (lit.p) lit.p[0] = 0;
        }
        if (!*s) break;
        if ((s[0] == '{' && s[1] == '{') || (s[0] == '}' && s[1] == '}')) {
            ce_buf_printf(&lit, "%c", *s);
            s++;
        } else if (hole) {
            int id = op->args[next];
            DType dt = ce_vdt(E, id);
            const Type *t = ce_vtype(E, id);
            if (!staged[next]) {
                ce_out(E, "printf(\"%s\", %s);", printf_conv(dt), printf_arg(E, id, ce_vreg(E, id, 0)));
            } else {
                /* nested brackets as the interpreter prints them */
                int64_t numel = type_numel(t);
                ce_out(E, "for (int i = 0; i < %lld; ++i) {", (long long)numel);
                E->indent++;
                Buf open = {0}, close = {0};
                ce_buf_printf(&open, "0");
                ce_buf_printf(&close, "0");
                int64_t span = 1;
                for (int d = t->rank - 1; d >= 0; d--) {
                    span *= t->shape[d];
                    ce_buf_printf(&open, " + (i %% %lld == 0)", (long long)span);
                    ce_buf_printf(&close, " + ((i + 1) %% %lld == 0)", (long long)span);
                }
                ce_out(E, "if (i) printf(\", \");");
                ce_out(E, "for (int o = %s; o > 0; --o) printf(\"[\");", open.p);
                ce_out(E, "printf(\"%s\", %s);", printf_conv(dt), printf_arg(E, id, ce_fmt_str(E, "%s[i]", staged[next])));
                ce_out(E, "for (int o = %s; o > 0; --o) printf(\"]\");", close.p);
                free(open.p);
                free(close.p);
                E->indent--;
                ce_out(E, "}");
            }
            next++;
            s++;
        } else if (*s == '"' || *s == '\\') {
            ce_buf_printf(&lit, "\\%c", *s);
        } else if (*s == '%') {
            ce_buf_printf(&lit, "%%%%");
        } else if (*s == '\n') {
            ce_buf_printf(&lit, "\\n");
        } else {
            ce_buf_printf(&lit, "%c", *s);
        }
    }
    free(lit.p);
    ce_out(E, "printf(\"\\n\");");
    E->indent--;
    ce_out(E, "}");
}
