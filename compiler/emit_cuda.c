/* emit_cuda.c: tile IR -> CUDA C++, one extern "C" __global__ per kernel.
 *
 * The model (see layout.h for the pictures):
 *   - every IR value has a *layout*: a bit map from its elements to (register,
 *     lane, warp).  Scalars and broadcast tiles are one register that every
 *     thread holds.  A value is a C array of registers (`float v12[8]`, or a
 *     plain variable when one register is enough), always indexed with
 *     constants: the emitter unrolls every per-register loop itself, so the
 *     arrays live in registers and nothing spills for want of an index;
 *   - element-wise ops work register by register (operands are read through
 *     a register map when their layouts are compatible); loads give a
 *     `blocked` layout (a thread owns a vector along the array's contiguous
 *     axis: 16-byte loads when the launch says the array is aligned); mma
 *     gives the mma.sync accumulator layout; reductions combine in-thread,
 *     then with warp shuffles, then across warps through shared memory;
 *     reshape / permute / broadcast / most extracts and cats only relabel
 *     bits; what cannot be relabelled goes through shared memory;
 *   - `mma` with f16 / bf16 / tf32 operands runs mma.sync (m16n8k16 with
 *     ldmatrix, m16n8k8 tf32) from shared memory: operands that come
 *     straight from a load are copied there by cp.async, pipelined over the
 *     iterations of their loop (emit_cuda_async.c); computed operands are
 *     staged from registers into padded buffers; other dtypes run exact FMAs
 *     in k order (bit-exact with the interpreter);
 *   - locals (`var`) get one layout for life, found by running the emitter
 *     in analysis mode until the layouts of locals stop changing;
 *   - scalar code is uniform over the block, so control flow is plain C and
 *     __syncthreads() may sit anywhere.
 * Measured on the H200 (docs/performance.md, the current figures): softmax
 * and layernorm rows at 86-99% of copy bandwidth; bf16 matmul at 81% of
 * cuBLAS on wgmma (sm_90a), 52-53% on mma.sync; tf32 at 36-51%.
 * Next steps: TMA on sm_90a, copies interleaved with the products.
 */
#include "emit_cuda_int.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- text buffers --------------------------------------------------------- */

void ce_buf_vprintf(Buf *b, const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0) return;
    if (b->len + (size_t)n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + (size_t)n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) return;
        b->p = p;
        b->cap = cap;
    }
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void ce_buf_printf(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ce_buf_printf(Buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ce_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

void ce_out(Emitter *E, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ce_out(Emitter *E, const char *fmt, ...) {
    for (int i = 0; i < E->indent; i++) ce_buf_printf(&E->body, "    ");
    va_list ap;
    va_start(ap, fmt);
    ce_buf_vprintf(&E->body, fmt, ap);
    va_end(ap);
    ce_buf_printf(&E->body, "\n");
}

const char *ce_fmt_str(Emitter *E, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *ce_fmt_str(Emitter *E, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char buf[1024];
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return arena_strdup(&E->mem, buf);
}

const char *ce_fresh(Emitter *E, const char *prefix) { return ce_fmt_str(E, "%s%d", prefix, E->ntmp++); }

void ce_fail(Emitter *E, const IrOp *op, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void ce_fail(Emitter *E, const IrOp *op, const char *fmt, ...) {
    E->errors++;
    if (E->analysis && E->errors > 1) return;
    va_list ap;
    va_start(ap, fmt);
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    diag_error(E->diag, op ? op->loc : E->f->loc, "CUDA backend: %s", msg);
}

bool ce_env_flag(const char *name) {
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

bool ce_env_default(const char *name, bool dflt) {
    const char *v = getenv(name);
    return v && *v ? strcmp(v, "0") != 0 : dflt;
}

const IrBlock *ce_block_holding(const IrBlock *blk, const IrOp *op, int *at) {
    for (int i = 0; blk && i < blk->nops; i++) {
        if (blk->ops[i] == op) {
            if (at) *at = i;
            return blk;
        }
        const IrBlock *b = ce_block_holding(blk->ops[i]->body, op, at);
        if (!b) b = ce_block_holding(blk->ops[i]->else_body, op, at);
        if (b) return b;
    }
    return NULL;
}

void ce_each_mma(Emitter *E, const IrBlock *blk, void (*visit)(Emitter *E, const IrOp *mma)) {
    if (!blk) return;
    for (int i = 0; i < blk->nops; i++) {
        const IrOp *o = blk->ops[i];
        ce_each_mma(E, o->body, visit);
        ce_each_mma(E, o->else_body, visit);
        if (o->op == OP_MMA) visit(E, o);
    }
}

void ce_need_smem(Emitter *E, int64_t bytes) {
    if (bytes > E->smem_bytes) E->smem_bytes = (int)bytes;
}

/* ---- dtypes in C ------------------------------------------------------------ */

/* Register type: 16-bit floats travel as their bits. */
const char *ce_ctype(DType t) {
    switch (t) {
    case DT_BOOL: return "bool";
    case DT_I8: return "signed char";
    case DT_I16: return "short";
    case DT_I32: return "int";
    case DT_I64: return "long long";
    case DT_U8: return "unsigned char";
    case DT_U16: return "unsigned short";
    case DT_U32: return "unsigned";
    case DT_U64: return "unsigned long long";
    case DT_F16: case DT_BF16: return "unsigned short";
    case DT_F32: case DT_TF32: return "float";
    case DT_F64: return "double";
    default: return "int";
    }
}
const char *ce_mtype(DType t) { return t == DT_BOOL ? "unsigned char" : ce_ctype(t); }
int ce_regsize(DType t) { return t == DT_BOOL ? 1 : dtype_size(t); }
bool ce_is_half(DType t) { return t == DT_F16 || t == DT_BF16; }
/* The C type arithmetic happens in. */
const char *ce_comptype(DType t) {
    if (ce_is_half(t) || t == DT_TF32) return "float";
    return ce_ctype(t);
}
/* Register value as a computation value (16-bit floats widened). */
const char *ce_widen(Emitter *E, DType t, const char *x) {
    if (t == DT_BF16) return ce_fmt_str(E, "tile_bf16_f32(%s)", x);
    if (t == DT_F16) return ce_fmt_str(E, "tile_f16_f32(%s)", x);
    return x;
}
/* A computation value back to the register form (rounded to t). */
const char *ce_narrow(Emitter *E, DType t, const char *x) {
    if (t == DT_BF16) return ce_fmt_str(E, "tile_f32_bf16(%s)", x);
    if (t == DT_F16) return ce_fmt_str(E, "tile_f32_f16(%s)", x);
    if (t == DT_TF32) return ce_fmt_str(E, "tile_tf32(%s)", x);
    return x;
}
static const char *unsigned_of(DType t) {
    return dtype_size(t) == 8 ? "unsigned long long" : "unsigned";
}

/* A literal of dtype t in register form. */
const char *ce_lit_str(Emitter *E, DType t, Scalar v) {
    switch (t) {
    case DT_BOOL: return v.i ? "true" : "false";
    case DT_I8: case DT_I16: case DT_I32: return ce_fmt_str(E, "(%s)%lld", ce_ctype(t), (long long)v.i);
    case DT_I64:
        if (v.i == INT64_MIN) return "(long long)0x8000000000000000ULL";
        return ce_fmt_str(E, "%lldLL", (long long)v.i);
    case DT_U8: case DT_U16: case DT_U32: return ce_fmt_str(E, "(%s)%lluu", ce_ctype(t), (unsigned long long)v.u);
    case DT_U64: return ce_fmt_str(E, "%lluULL", (unsigned long long)v.u);
    case DT_F16: return ce_fmt_str(E, "(unsigned short)0x%04x", f64_to_f16_bits(v.f));
    case DT_BF16: return ce_fmt_str(E, "(unsigned short)0x%04x", f32_to_bf16_bits((float)v.f));
    case DT_F32: case DT_TF32: {
        float x = (float)v.f;
        uint32_t bits;
        memcpy(&bits, &x, 4);
        if (isnan(x) || isinf(x)) return ce_fmt_str(E, "__uint_as_float(0x%08xu)", bits);
        const char *s = ce_fmt_str(E, "%.9g", x);
        return ce_fmt_str(E, "%s%sf", s, strpbrk(s, ".e") ? "" : ".0");
    }
    case DT_F64: {
        uint64_t bits;
        memcpy(&bits, &v.f, 8);
        if (isnan(v.f) || isinf(v.f)) return ce_fmt_str(E, "__longlong_as_double(0x%016llxLL)", (unsigned long long)bits);
        const char *s = ce_fmt_str(E, "%.17g", v.f);
        return ce_fmt_str(E, "%s%s", s, strpbrk(s, ".e") ? "" : ".0");
    }
    default: return "0";
    }
}

/* ---- element-wise expressions --------------------------------------------- */

static const char *fmath(Emitter *E, DType t, const char *name32, const char *name64, const char *x) {
    return ce_fmt_str(E, "%s(%s)", t == DT_F64 ? name64 : name32, x);
}

const char *ce_ew_unary(Emitter *E, OpId op, DType t, const char *a) {
    if (op == OP_NOT) return ce_fmt_str(E, "(!%s)", a);
    if (op == OP_ISNAN) {
        if (!dtype_is_float(t)) return "false";
        const char *w = ce_widen(E, t, a);
        return ce_fmt_str(E, "(%s != %s)", w, w);
    }
    if (dtype_is_float(t)) {
        const char *x = ce_widen(E, t, a), *r;
        switch (op) {
        case OP_NEG: r = ce_fmt_str(E, "(-%s)", x); break;
        case OP_ABS: r = fmath(E, t, "fabsf", "fabs", x); break;
        case OP_EXP: r = fmath(E, t, "expf", "exp", x); break;
        case OP_EXP2: r = fmath(E, t, "tile_exp2f", "exp2", x); break;
        case OP_LOG: r = fmath(E, t, "logf", "log", x); break;
        case OP_LOG2: r = fmath(E, t, "log2f", "log2", x); break;
        case OP_SQRT: r = fmath(E, t, "sqrtf", "sqrt", x); break;
        case OP_RSQRT: r = t == DT_F64 ? ce_fmt_str(E, "(1.0 / sqrt(%s))", x) : ce_fmt_str(E, "rsqrtf(%s)", x); break;
        case OP_FLOOR: r = fmath(E, t, "floorf", "floor", x); break;
        case OP_CEIL: r = fmath(E, t, "ceilf", "ceil", x); break;
        case OP_SIN: r = fmath(E, t, "sinf", "sin", x); break;
        case OP_COS: r = fmath(E, t, "cosf", "cos", x); break;
        case OP_TANH: r = fmath(E, t, "tanhf", "tanh", x); break;
        case OP_SIGMOID: r = fmath(E, t, "tile_sigmoidf", "tile_sigmoid", x); break;
        default: return a;
        }
        return ce_narrow(E, t, r);
    }
    const char *T = ce_ctype(t);
    switch (op) {
    case OP_NEG: return ce_fmt_str(E, "tile_neg<%s>(%s)", T, a);
    case OP_ABS:
        if (dtype_is_unsigned(t) || t == DT_BOOL) return a;
        return ce_fmt_str(E, "(%s < 0 ? tile_neg<%s>(%s) : %s)", a, T, a, a);
    case OP_BITNOT: return t == DT_BOOL ? ce_fmt_str(E, "(!%s)", a) : ce_fmt_str(E, "(%s)(~%s)", T, a);
    default: return a;
    }
}

const char *ce_ew_binary(Emitter *E, OpId op, DType t, const char *a, const char *b) {
    const char *x = ce_widen(E, t, a), *y = ce_widen(E, t, b);
    switch (op) {
    case OP_LT: return ce_fmt_str(E, "(%s < %s)", x, y);
    case OP_LE: return ce_fmt_str(E, "(%s <= %s)", x, y);
    case OP_GT: return ce_fmt_str(E, "(%s > %s)", x, y);
    case OP_GE: return ce_fmt_str(E, "(%s >= %s)", x, y);
    case OP_EQ: return ce_fmt_str(E, "(%s == %s)", x, y);
    case OP_NE: return ce_fmt_str(E, "(%s != %s)", x, y);
    case OP_LAND: return ce_fmt_str(E, "(%s && %s)", x, y);
    case OP_LOR: return ce_fmt_str(E, "(%s || %s)", x, y);
    default: break;
    }
    if (dtype_is_float(t)) {
        bool d = t == DT_F64;
        const char *r;
        switch (op) {
        case OP_ADD: r = ce_fmt_str(E, "(%s + %s)", x, y); break;
        case OP_SUB: r = ce_fmt_str(E, "(%s - %s)", x, y); break;
        case OP_MUL: r = ce_fmt_str(E, "(%s * %s)", x, y); break;
        case OP_DIV: r = ce_fmt_str(E, "(%s / %s)", x, y); break;
        case OP_MOD: r = ce_fmt_str(E, "%s(%s, %s)", d ? "fmod" : "fmodf", x, y); break;
        case OP_MAXIMUM: r = ce_fmt_str(E, "%s(%s, %s)", d ? "tile_fmax" : "tile_fmaxf", x, y); break;
        case OP_MINIMUM: r = ce_fmt_str(E, "%s(%s, %s)", d ? "tile_fmin" : "tile_fminf", x, y); break;
        case OP_POW: r = ce_fmt_str(E, "%s(%s, %s)", d ? "pow" : "powf", x, y); break;
        default: r = x; break;
        }
        return ce_narrow(E, t, r);
    }
    const char *T = ce_ctype(t);
    if (t == DT_BOOL) {
        switch (op) {
        case OP_BITAND: return ce_fmt_str(E, "(%s && %s)", a, b);
        case OP_BITOR: return ce_fmt_str(E, "(%s || %s)", a, b);
        case OP_BITXOR: return ce_fmt_str(E, "(%s != %s)", a, b);
        case OP_MAXIMUM: return ce_fmt_str(E, "(%s || %s)", a, b);
        case OP_MINIMUM: return ce_fmt_str(E, "(%s && %s)", a, b);
        default: T = "int"; break;
        }
    }
    const char *U = unsigned_of(t);
    switch (op) {
    case OP_ADD: return ce_fmt_str(E, "(%s)((%s)%s + (%s)%s)", T, U, a, U, b);
    case OP_SUB: return ce_fmt_str(E, "(%s)((%s)%s - (%s)%s)", T, U, a, U, b);
    case OP_MUL: return ce_fmt_str(E, "(%s)((%s)%s * (%s)%s)", T, U, a, U, b);
    case OP_DIV: return ce_fmt_str(E, "tile_idiv<%s>(%s, %s)", T, a, b);
    case OP_MOD: return ce_fmt_str(E, "tile_imod<%s>(%s, %s)", T, a, b);
    case OP_CDIV: return ce_fmt_str(E, "tile_icdiv<%s>(%s, %s)", T, a, b);
    case OP_MAXIMUM: return ce_fmt_str(E, "(%s >= %s ? %s : %s)", a, b, a, b);
    case OP_MINIMUM: return ce_fmt_str(E, "(%s <= %s ? %s : %s)", a, b, a, b);
    case OP_POW: return ce_fmt_str(E, "tile_ipow<%s>(%s, %s)", T, a, b);
    case OP_BITAND: return ce_fmt_str(E, "(%s)(%s & %s)", T, a, b);
    case OP_BITOR: return ce_fmt_str(E, "(%s)(%s | %s)", T, a, b);
    case OP_BITXOR: return ce_fmt_str(E, "(%s)(%s ^ %s)", T, a, b);
    case OP_SHL: return ce_fmt_str(E, "tile_shl<%s>(%s, %s)", T, a, b);
    case OP_SHR: return ce_fmt_str(E, "tile_shr<%s>(%s, %s)", T, a, b);
    default: return a;
    }
}

/* astype: scalar_convert's rules. */
const char *ce_ew_cast(Emitter *E, DType from, DType to, const char *a) {
    if (from == to) return a;
    if (to == DT_BOOL) return ce_fmt_str(E, "(%s != 0)", ce_widen(E, from, a));
    if (dtype_is_float(to)) {
        if (from == DT_BOOL || dtype_is_int(from)) {
            if (to == DT_F16) return ce_fmt_str(E, "tile_f64_f16((double)%s)", a);
            if (to == DT_F64) return ce_fmt_str(E, "(double)%s", a);
            return ce_narrow(E, to, ce_fmt_str(E, "(float)%s", a));
        }
        const char *x = ce_widen(E, from, a);
        if (to == DT_F64) return ce_fmt_str(E, "(double)%s", x);
        if (from == DT_F64) {
            if (to == DT_F16) return ce_fmt_str(E, "tile_f64_f16(%s)", x);
            if (to == DT_BF16) return ce_fmt_str(E, "tile_f64_bf16(%s)", x);
            return ce_narrow(E, to, ce_fmt_str(E, "(float)%s", x));
        }
        if (to == DT_F32) return x;
        return ce_narrow(E, to, x);
    }
    if (dtype_is_float(from)) {
        int bits = dtype_bits(to);
        const char *T = ce_ctype(to);
        double lo, hi;
        const char *tmin, *tmax;
        if (dtype_is_unsigned(to)) {
            lo = 0;
            hi = ldexp(1.0, bits);
            tmin = "0";
            tmax = bits == 64 ? "0xffffffffffffffffULL" : ce_fmt_str(E, "%lluULL", (1ULL << bits) - 1);
        } else {
            lo = -ldexp(1.0, bits - 1);
            hi = ldexp(1.0, bits - 1);
            tmin = bits == 64 ? "(long long)0x8000000000000000ULL" : ce_fmt_str(E, "%lld", -(1LL << (bits - 1)));
            tmax = bits == 64 ? "0x7fffffffffffffffLL" : ce_fmt_str(E, "%lld", (1LL << (bits - 1)) - 1);
        }
        return ce_fmt_str(E, "tile_f2i<%s>((double)%s, %.17g, %.17g, (%s)%s, (%s)%s)", T,
                       ce_widen(E, from, a), lo, hi, T, tmin, T, tmax);
    }
    return ce_fmt_str(E, "(%s)%s", ce_ctype(to), a);   /* integer -> integer: wrap */
}

/* ---- layouts in the table ---------------------------------------------------- */

int ce_lay_add(Emitter *E, const Layout *l) {
    for (int i = 0; i < E->nlays; i++)
        if (lay_equal(&E->lays[i], l)) return i;
    if (E->nlays == E->caplays) {
        int cap = E->caplays ? E->caplays * 2 : 32;
        Layout *nl = ARENA_ARRAY(&E->mem, Layout, cap);
        bool *nu = ARENA_ARRAY(&E->mem, bool, cap);
        if (E->nlays) {
            memcpy(nl, E->lays, sizeof(Layout) * (size_t)E->nlays);
            memcpy(nu, E->lay_used, sizeof(bool) * (size_t)E->nlays);
        }
        E->lays = nl;
        E->lay_used = nu;
        E->caplays = cap;
    }
    E->lays[E->nlays] = *l;
    E->lay_used[E->nlays] = false;
    return E->nlays++;
}

const Layout *ce_lay(Emitter *E, int id) { return &E->lays[id]; }
int ce_nregs(Emitter *E, int id) { return lay_nregs(ce_lay(E, id)); }

int ce_blocked(Emitter *E, const Type *t, int fastest) {
    Layout l = lay_blocked(t, fastest, E->warpbits, 8);
    return ce_lay_add(E, &l);
}

/* Register r of a value named `name` in layout `lay`. */
const char *ce_reg(Emitter *E, const char *name, int lay, int r) {
    if (ce_nregs(E, lay) == 1) return name;
    return ce_fmt_str(E, "%s[%d]", name, r);
}
void ce_decl(Emitter *E, DType t, const char *name, int lay) {
    int n = ce_nregs(E, lay);
    if (n == 1) ce_out(E, "%s %s;", ce_ctype(t), name);
    else ce_out(E, "%s %s[%d];", ce_ctype(t), name, n);
}

/* Per-thread part of coordinate d (or of the linear index when d < 0) of
 * layout `lay`: a variable defined in the prologue. */
const char *ce_thread_coord(Emitter *E, int lay, int d) {
    E->lay_used[lay] = true;
    return d < 0 ? ce_fmt_str(E, "L%d_e", lay) : ce_fmt_str(E, "L%d_%d", lay, d);
}
/* Constant part of coordinate d of register r. */
int64_t ce_reg_coord(Emitter *E, int lay, int r, int d) {
    const Layout *l = ce_lay(E, lay);
    int64_t e = lay_reg_elem(l, r), c = 0;
    for (int j = 0; j < lay_log2(l->shape[d]); j++) {
        int p = lay_pos(l->rank, l->shape, d, j);
        if ((e >> p) & 1) c |= (int64_t)1 << j;
    }
    return c;
}
const char *ce_coord(Emitter *E, int lay, int r, int d) {
    const char *t = ce_thread_coord(E, lay, d);
    int64_t c = ce_reg_coord(E, lay, r, d);
    return c ? ce_fmt_str(E, "(%s + %lld)", t, (long long)c) : t;
}
/* Expression true in the thread that owns the layout's elements. */
const char *ce_owner(Emitter *E, int lay) {
    const Layout *l = ce_lay(E, lay);
    unsigned lm = ~lay_lane_mask(l) & 31u, wm = ~lay_warp_mask(l) & ((1u << E->warpbits) - 1);
    if (!lm && !wm) return NULL;
    return ce_fmt_str(E, "((lane & %uu) | (warp & %uu)) == 0", lm, wm);
}
/* Expression of the bits of lane / warp selected by mask, packed together. */
const char *ce_pext_expr(Emitter *E, const char *var, unsigned mask) {
    if (!mask) return "0";
    Buf b = {0};
    int k = 0;
    for (int i = 0; i < 32; i++) {
        if (!((mask >> i) & 1)) continue;
        ce_buf_printf(&b, "%s(((%s >> %d) & 1) << %d)", k ? " | " : "", var, i, k);
        k++;
    }
    const char *s = ce_fmt_str(E, "(%s)", b.p);
    free(b.p);
    return s;
}

/* ---- values ----------------------------------------------------------------- */

Val *ce_val(Emitter *E, int id) { return &E->vals[id]; }
const Type *ce_vtype(Emitter *E, int id) { return ir_type(E->f, id); }
DType ce_vdt(Emitter *E, int id) { return ir_type(E->f, id)->dtype; }
const char *ce_vreg(Emitter *E, int id, int r) { return ce_reg(E, ce_val(E, id)->name, ce_val(E, id)->lay, r); }

void ce_set_val(Emitter *E, int id, const char *name, int lay) {
    E->vals[id].name = name;
    E->vals[id].lay = lay;
}

static const char *gather_smem(Emitter *E, const char *name, int x, DType t, int r, const int *spec);

/* Copies `name` (layout x, dtype t) into layout r through shared memory;
 * returns the new registers' name.  r must map every bit x maps. */
static const char *convert_smem(Emitter *E, const char *name, int x, DType t, int r) {
    int spec[LAY_MAX_BITS];
    for (int b = 0; b < LAY_MAX_BITS; b++) spec[b] = b;
    return gather_smem(E, name, x, t, r, spec);
}

/* Registers of `name` (layout x) in layout r: a register copy when
 * compatible, else through shared memory. */
const char *ce_convert(Emitter *E, const char *name, int x, DType t, int r) {
    if (x == r) return name;
    if (lay_compatible(ce_lay(E, x), ce_lay(E, r))) {
        const char *res = ce_fresh(E, "c");
        ce_decl(E, t, res, r);
        for (int i = 0; i < ce_nregs(E, r); i++)
            ce_out(E, "%s = %s;", ce_reg(E, res, r, i), ce_reg(E, name, x, lay_reg_map(ce_lay(E, x), ce_lay(E, r), i)));
        return res;
    }
    return convert_smem(E, name, x, t, r);
}

/* Makes value `id` full (no broadcast bits): converts to blocked if needed. */
void ce_make_full(Emitter *E, int id) {
    Val *v = ce_val(E, id);
    if (lay_full(ce_lay(E, v->lay))) return;
    int b = ce_blocked(E, ce_vtype(E, id), -1);
    v->name = ce_convert(E, v->name, v->lay, ce_vdt(E, id), b);
    v->lay = b;
}

/* The layout every operand can be read in.  Operands that are cheap to make
 * again in any layout (emit_cuda_remat.c) do not choose it: the richest of
 * the others does, completed to a full layout if one of those must be made
 * in it; the rest are converted.  An operand made again gets registers for
 * this use alone: its old ones are kept in saved[i] (restore_operands). */
enum { REMAT_OPERANDS = 8 };   /* operands of one op that may be made again (element-wise: 3) */

static int common_layout(Emitter *E, const int *ids, int n, const Type *t, bool need_full, Val *saved, int want) {
    bool cheap[REMAT_OPERANDS] = {false}, any_cheap = false;
    for (int i = 0; i < n && i < REMAT_OPERANDS; i++) any_cheap |= cheap[i] = saved && ce_remat_cheap(E, ids[i]);
    int best = want;   /* the plan's, when it has one: operands that do not fit it are converted */
    for (int pass = 0; pass < 2 && best < 0; pass++)
        for (int i = 0; i < n; i++) {
            if (pass == 0 && i < REMAT_OPERANDS && cheap[i]) continue;
            int l = ce_val(E, ids[i])->lay;
            if (best < 0 || lay_mapped_bits(ce_lay(E, l)) > lay_mapped_bits(ce_lay(E, best))) best = l;
        }
    int nbits = lay_log2(type_numel(t));
    if (best < 0 || ce_lay(E, best)->nbits != nbits) best = ce_blocked(E, t, -1);
    bool ok = !need_full || lay_full(ce_lay(E, best));
    bool remat_needed = false;
    for (int i = 0; i < n && ok; i++) {
        bool fits = lay_compatible(ce_lay(E, ce_val(E, ids[i])->lay), ce_lay(E, best));
        if (!fits && i < REMAT_OPERANDS && cheap[i]) remat_needed = true;
        else ok = fits;
    }
    int b = best;
    if (!ok || remat_needed) {
        if (!lay_full(ce_lay(E, best))) {
            /* completed, when that keeps the operands that fit it in place */
            Layout c = lay_complete(ce_lay(E, best), E->warpbits);
            b = any_cheap && c.nregbits <= lay_blocked(t, -1, E->warpbits, 8).nregbits ? ce_lay_add(E, &c)
                                                                                        : ce_blocked(E, t, -1);
        }
    }
    for (int i = 0; i < n; i++) {
        Val *v = ce_val(E, ids[i]);
        bool at_use = saved && i < REMAT_OPERANDS && cheap[i] && ce_remat_at_use(E, ids[i]);
        if (lay_compatible(ce_lay(E, v->lay), ce_lay(E, b)) && !at_use) continue;
        const char *name;
        int lay;
        if (i < REMAT_OPERANDS && cheap[i] && ce_remat(E, ids[i], b, &name, &lay)) {
            saved[i] = *v;
            v->name = name;
            v->lay = lay;
            continue;
        }
        /* a value made in the layout an mma wants (the plan's) keeps that home:
         * this use gets a converted copy, so later uses (an mma in a loop) do
         * not convert it back each time */
        bool keep = saved && i < REMAT_OPERANDS && E->want && E->want[ids[i]] >= 0 &&
                    lay_compatible(ce_lay(E, v->lay), ce_lay(E, E->want[ids[i]]));
        if (keep) saved[i] = *v;
        v->name = ce_convert(E, v->name, v->lay, ce_vdt(E, ids[i]), b);
        v->lay = b;
    }
    return b;
}

/* Gives operands made again by common_layout their first registers back. */
static void restore_operands(Emitter *E, const int *ids, int n, const Val *saved) {
    for (int i = 0; i < n && i < REMAT_OPERANDS; i++)
        if (saved[i].name) *ce_val(E, ids[i]) = saved[i];
}

/* Register of operand `id` for register r of layout `lay` (compatible). */
static const char *opreg(Emitter *E, int id, int lay, int r) {
    Val *v = ce_val(E, id);
    return ce_reg(E, v->name, v->lay, lay_reg_map(ce_lay(E, v->lay), ce_lay(E, lay), r));
}

/* Relabel a value's layout onto another shape (same registers). */
int ce_relabel(Emitter *E, const Layout *src, int rank, const int *shape, const int *src_bit_of /* per new bit: src bit or -1 */) {
    Layout l;
    memset(&l, 0, sizeof l);
    l.rank = rank;
    for (int d = 0; d < rank; d++) l.shape[d] = shape[d], l.nbits += lay_log2(shape[d]);
    l.kind = LAYK_OTHER;
    l.nregbits = src->nregbits;
    for (int b = 0; b < l.nbits; b++) {
        int s = src_bit_of[b];
        if (s >= 0) { l.space[b] = src->space[s]; l.bit[b] = src->bit[s]; }
    }
    return ce_lay_add(E, &l);
}


/* ---- kernel parameters ------------------------------------------------------ */

static const IrParam *param(Emitter *E, int i) { return &E->f->params[i]; }
unsigned ce_array_flags(const Emitter *E, int i) {
    return E->opt.array_flags ? E->opt.array_flags[i] : 0;
}
const char *ce_off_type(Emitter *E, int arr) {
    return (ce_array_flags(E, arr) & CUDA_ARRAY_OFF32) ? "int" : "long long";
}

/* ---- memory ----------------------------------------------------------------- */

/* Padding value of a load / gather in register form (integers: 0). */
static const char *pad_value(Emitter *E, DType t, int pad) {
    Scalar s;
    s.u = 0;
    if (!dtype_is_float(t)) return ce_lit_str(E, t, s);
    switch (pad) {
    case PAD_NAN: s.f = NAN; break;
    case PAD_POS_INF: s.f = INFINITY; break;
    case PAD_NEG_INF: s.f = -INFINITY; break;
    default: s.f = 0; break;
    }
    return ce_lit_str(E, t, s);
}

/* Memory element -> register, register -> memory element. */
static const char *from_mem(Emitter *E, DType t, const char *x) {
    return t == DT_BOOL ? ce_fmt_str(E, "(%s != 0)", x) : x;
}
static const char *to_mem(Emitter *E, DType t, const char *x) {
    return t == DT_BOOL ? ce_fmt_str(E, "(unsigned char)%s", x) : x;
}

/* The view axis of a load / store that is the array's last (contiguous) axis. */
int ce_contiguous_view_axis(const IrOp *op, int rank) {
    for (int d = 0; d < rank; d++) {
        int a = op->nints == rank ? op->ints[d] : d;
        if (a == rank - 1) return d;
    }
    return rank - 1;
}

/* How many consecutive registers of `lay` run along view axis d from
 * register 0 (a vector), capped at max. */
int ce_vector_width(Emitter *E, int lay, int d, int max) {
    const Layout *l = ce_lay(E, lay);
    int v = 0;
    while ((1 << (v + 1)) <= max && v < lay_log2(l->shape[d])) {
        int p = lay_pos(l->rank, l->shape, d, v);
        if (l->space[p] != LAY_REG || l->bit[p] != v) break;
        v++;
    }
    return 1 << v;
}

/* Emits the bounds check and offset of register r into `inb` / `off`. */
typedef struct MemView {
    int arr, rank, lay;
    const char *base[TILE_MAX_RANK];   /* per view axis: first index of the tile (+ thread part) */
    int axis[TILE_MAX_RANK];           /* view axis -> array axis */
    const char *inside;                /* the whole tile lies inside the array (block-uniform) */
} MemView;

static void memview_init(Emitter *E, MemView *mv, const IrOp *op, int lay, int arr, const Type *t) {
    mv->arr = arr;
    mv->rank = t->rank;
    mv->lay = lay;
    Buf in = {0};
    ce_buf_printf(&in, "true");
    for (int d = 0; d < t->rank; d++) {
        mv->axis[d] = op->nints == t->rank ? op->ints[d] : d;
        const char *o = ce_fresh(E, "o"), *b = ce_fresh(E, "b");
        ce_out(E, "const long long %s = (long long)%s * %d;", o, ce_vreg(E, op->args[d], 0), t->shape[d]);
        ce_out(E, "const long long %s = %s + %s;", b, o, ce_thread_coord(E, lay, d));
        ce_buf_printf(&in, " && %s >= 0 && %s + %d <= (long long)p%d_n%d", o, o, t->shape[d], arr, mv->axis[d]);
        mv->base[d] = b;
    }
    mv->inside = ce_fmt_str(E, "%s", in.p);
    free(in.p);
}

/* The in-bounds test and the element offset (in the array's offset type) of
 * the element at view indices idx[d] (C expressions) of array `arr`, view
 * axis d being array axis axis[d]. */
void ce_elem_at(Emitter *E, int arr, int rank, const int *axis, const char *const *idx, const char **inb, const char **off) {
    Buf ib = {0}, ob = {0};
    const char *OT = ce_off_type(E, arr);
    ce_buf_printf(&ib, "true");
    ce_buf_printf(&ob, "(%s)0", OT);
    for (int d = 0; d < rank; d++) {
        ce_buf_printf(&ib, " && (unsigned long long)%s < (unsigned long long)p%d_n%d", idx[d], arr, axis[d]);
        ce_buf_printf(&ob, " + (%s)%s * (%s)p%d_s%d", OT, idx[d], OT, arr, axis[d]);
    }
    *inb = ce_fmt_str(E, "%s", ib.p);
    *off = ce_fmt_str(E, "%s", ob.p);
    free(ib.p);
    free(ob.p);
}

static void memview_elem(Emitter *E, const MemView *mv, int r, const char **inb, const char **off) {
    const char *idx[TILE_MAX_RANK];
    for (int d = 0; d < mv->rank; d++) {
        long long c = (long long)ce_reg_coord(E, mv->lay, r, d);
        idx[d] = c ? ce_fmt_str(E, "(%s + %lld)", mv->base[d], c) : mv->base[d];
    }
    ce_elem_at(E, mv->arr, mv->rank, mv->axis, idx, inb, off);
}

/* Vector access of n elements of size s at p (16-byte chunks of 32-bit words). */
void ce_vec_load(Emitter *E, DType t, const char *ptr, const char *name, int lay, int r0, int n) {
    int s = ce_regsize(t), words = n * s / 4;
    const char *vt = words == 4 ? "uint4" : words == 2 ? "uint2" : "unsigned";
    const char *q = ce_fresh(E, "q");
    ce_out(E, "%s %s = *(const %s *)(%s);", vt, q, vt, ptr);
    for (int i = 0; i < n; i++) {
        int w = i * s / 4, sh = (i * s % 4) * 8;
        const char *word = words == 1 ? q : ce_fmt_str(E, "%s.%c", q, "xyzw"[w]);
        const char *x;
        if (t == DT_F32 || t == DT_TF32) x = ce_fmt_str(E, "__uint_as_float(%s)", word);
        else if (s == 4) x = ce_fmt_str(E, "(%s)%s", ce_ctype(t), word);
        else x = ce_fmt_str(E, "(%s)(%s >> %d)", ce_ctype(t), word, sh);
        ce_out(E, "%s = %s;", ce_reg(E, name, lay, r0 + i), x);
    }
}

void ce_vec_store(Emitter *E, DType t, const char *ptr, const char *name, int lay, int r0, int n) {
    int s = ce_regsize(t), words = n * s / 4;
    const char *vt = words == 4 ? "uint4" : words == 2 ? "uint2" : "unsigned";
    Buf b = {0};
    for (int w = 0; w < words; w++) {
        ce_buf_printf(&b, "%s", w ? ", " : "");
        for (int k = 0; k < 4 / s; k++) {
            const char *x = ce_reg(E, name, lay, r0 + w * 4 / s + k);
            if (t == DT_F32 || t == DT_TF32) ce_buf_printf(&b, "__float_as_uint(%s)", x);
            else if (s == 4) ce_buf_printf(&b, "(unsigned)%s", x);
            else ce_buf_printf(&b, "%s((unsigned)(unsigned short)%s << %d)", k ? " | " : "", x, k * 16);
        }
    }
    if (words == 1) ce_out(E, "*(%s *)(%s) = %s;", vt, ptr, b.p);
    else ce_out(E, "*(%s *)(%s) = make_%s(%s);", vt, ptr, vt, b.p);
    free(b.p);
}

static bool can_vectorise(Emitter *E, int arr, DType t) {
    return (ce_array_flags(E, arr) & CUDA_ARRAY_VEC16) && (ce_regsize(t) == 2 || ce_regsize(t) == 4);
}

/* One tile's loads or stores between registers `name` (layout `lay`) and
 * array `arr`: what emit_access asks of it, element by element or as vectors
 * of V. */
typedef struct Access {
    bool store;
    DType dt;
    int arr, lay;
    const char *name;
    const char *pad;   /* loads: the value of elements outside the array */
} Access;

static void access_vector(Emitter *E, const Access *A, const char *off, int r, int V) {
    const char *ptr = ce_fmt_str(E, "p%d + (%s)", A->arr, off);
    if (A->store) ce_vec_store(E, A->dt, ptr, A->name, A->lay, r, V);
    else ce_vec_load(E, A->dt, ptr, A->name, A->lay, r, V);
}

/* Element r; inb NULL when it is known to lie inside the array. */
static void access_element(Emitter *E, const Access *A, const char *inb, const char *off, int r) {
    const char *reg = ce_reg(E, A->name, A->lay, r);
    const char *mem = ce_fmt_str(E, "p%d[%s]", A->arr, off);
    if (A->store && inb) ce_out(E, "if (%s) %s = %s;", inb, mem, to_mem(E, A->dt, reg));
    else if (A->store) ce_out(E, "%s = %s;", mem, to_mem(E, A->dt, reg));
    else if (inb) ce_out(E, "%s = (%s) ? %s : %s;", reg, inb, from_mem(E, A->dt, mem), A->pad);
    else ce_out(E, "%s = %s;", reg, from_mem(E, A->dt, mem));
}

/* The stride of view axis d's array axis as a C expression: 1 for the last
 * axis of an array the launch found contiguous there (CUDA_ARRAY_VEC16), so
 * that register offsets along it are constants the accesses take as
 * immediates. */
static const char *view_stride(Emitter *E, const MemView *mv, int d) {
    if ((ce_array_flags(E, mv->arr) & CUDA_ARRAY_VEC16) && mv->axis[d] == param(E, mv->arr)->rank - 1) return NULL;
    return ce_fmt_str(E, "(%s)p%d_s%d", ce_off_type(E, mv->arr), mv->arr, mv->axis[d]);
}

/* Inside the array: the offset of the thread's first element, once (in
 * `base`, a C variable), and register r's as that plus its constant
 * coordinates times the strides (ptxas shares the products among
 * registers; one product and sum per register and axis before, as still
 * with TILEC_NO_ACCESS_BASE=1, for measurements).  Stores only: loads
 * keep their sums, since with a base compute_out_bf16_sbf16 spilled 4
 * bytes at 128 registers (ptxas, NVRTC 13.0). */
static const char *memview_base(Emitter *E, const MemView *mv) {
    const char *OT = ce_off_type(E, mv->arr), *base = ce_fresh(E, "at");
    Buf b = {0};
    ce_buf_printf(&b, "(%s)0", OT);
    for (int d = 0; d < mv->rank; d++) {
        const char *st = view_stride(E, mv, d);
        if (st) ce_buf_printf(&b, " + (%s)%s * %s", OT, mv->base[d], st);
        else ce_buf_printf(&b, " + (%s)%s", OT, mv->base[d]);
    }
    ce_out(E, "const %s %s = %s;", OT, base, b.p);
    free(b.p);
    return base;
}
static const char *memview_fast_off(Emitter *E, const MemView *mv, const char *base, int r) {
    Buf b = {0};
    ce_buf_printf(&b, "%s", base);
    for (int d = 0; d < mv->rank; d++) {
        long long c = (long long)ce_reg_coord(E, mv->lay, r, d);
        const char *st = view_stride(E, mv, d);
        if (!c) continue;
        if (st) ce_buf_printf(&b, " + %lld * %s", c, st);
        else ce_buf_printf(&b, " + %lld", c);
    }
    const char *off = ce_fmt_str(E, "%s", b.p);
    free(b.p);
    return off;
}

/* Most tiles lie wholly inside their array: one block-uniform test, then
 * accesses without per-element checks; the checked path handles edges (a
 * vector there when both its ends are inside, else element by element). */
static void emit_access(Emitter *E, const MemView *mv, const Access *A, int V) {
    ce_out(E, "if (%s) {", mv->inside);
    E->indent++;
    const char *base = E->opt_no_access_base || !A->store ? NULL : memview_base(E, mv);
    for (int r = 0; r < ce_nregs(E, A->lay); r += V) {
        const char *off, *inb;
        if (base) off = memview_fast_off(E, mv, base, r);
        else memview_elem(E, mv, r, &inb, &off);
        if (V > 1) access_vector(E, A, off, r, V);
        else access_element(E, A, NULL, off, r);
    }
    E->indent--;
    ce_out(E, "} else {");
    E->indent++;
    for (int r = 0; r < ce_nregs(E, A->lay); r += V) {
        const char *inb, *off;
        memview_elem(E, mv, r, &inb, &off);
        if (V > 1) {
            const char *inb2, *off2;
            memview_elem(E, mv, r + V - 1, &inb2, &off2);
            ce_out(E, "if ((%s) && (%s)) {", inb, inb2);
            E->indent++;
            access_vector(E, A, off, r, V);
            E->indent--;
            ce_out(E, "} else {");
            E->indent++;
        }
        for (int i = 0; i < V; i++) {
            if (i) memview_elem(E, mv, r + i, &inb, &off);
            access_element(E, A, inb, off, r + i);
        }
        if (V > 1) E->indent--, ce_out(E, "}");
    }
    E->indent--;
    ce_out(E, "}");
}

/* The vector width of a tile's accesses: 16 bytes along the array's last
 * axis where the array allows (aligned, 2- or 4-byte elements). */
static int access_width(Emitter *E, const MemView *mv, int arr, DType dt, int lay, int fast, int rank) {
    if (can_vectorise(E, arr, dt) && mv->axis[fast] == rank - 1) return ce_vector_width(E, lay, fast, 16 / ce_regsize(dt));
    return 1;
}

void ce_emit_load(Emitter *E, const IrOp *op) {
    const Type *t = ce_vtype(E, op->result);
    DType dt = t->dtype;
    int arr = op->array;
    int fast = ce_contiguous_view_axis(op, t->rank);
    int lay = ce_plan_layout(E, op->result, ce_blocked(E, t, fast));
    const char *name = ce_fresh(E, "v");
    ce_set_val(E, op->result, name, lay);
    ce_decl(E, dt, name, lay);
    ce_out(E, "{");
    E->indent++;
    MemView mv;
    memview_init(E, &mv, op, lay, arr, t);
    int V = access_width(E, &mv, arr, dt, lay, fast, t->rank);
    Access A = {false, dt, arr, lay, name, pad_value(E, dt, op->flag)};
    emit_access(E, &mv, &A, V);
    E->indent--;
    ce_out(E, "}");
}

static void emit_store(Emitter *E, const IrOp *op) {
    int rank = op->nargs - 1, vid = op->args[rank];
    const Type *t = ce_vtype(E, vid);
    DType dt = t->dtype;
    int arr = op->array;
    if (t->rank != rank) { ce_fail(E, op, "store of a %d-d tile into a %d-d array", t->rank, rank); return; }
    ce_make_full(E, vid);
    if (ce_tma_store(E, op, vid)) return;
    Val *v = ce_val(E, vid);
    int lay = v->lay;
    int fast = ce_contiguous_view_axis(op, rank);
    ce_out(E, "{");
    E->indent++;
    MemView mv;
    memview_init(E, &mv, op, lay, arr, t);
    const char *own = ce_owner(E, lay);
    if (own) ce_out(E, "if (%s) {", own), E->indent++;
    int V = access_width(E, &mv, arr, dt, lay, fast, rank);
    Access A = {true, dt, arr, lay, v->name, NULL};
    emit_access(E, &mv, &A, V);
    if (own) E->indent--, ce_out(E, "}");
    ce_tma_store_fence_plain(E, arr);
    E->indent--;
    ce_out(E, "}");
}

/* gather / scatter / atomics: element indices given as tiles. */
static void emit_indexed(Emitter *E, const IrOp *op) {
    const IrParam *p = param(E, op->array);
    int rank = p->rank;
    bool gather = op->op == OP_GATHER;
    if (op->nargs != rank + !gather) { ce_fail(E, op, "wrong number of indices"); return; }
    const Type *t = gather ? ce_vtype(E, op->result) : ce_vtype(E, op->args[rank]);
    DType dt = p->dtype;
    int lay = common_layout(E, op->args, op->nargs, t, !gather, NULL, -1);
    const char *name = NULL;
    if (gather) {
        name = ce_fresh(E, "v");
        ce_set_val(E, op->result, name, lay);
        ce_decl(E, dt, name, lay);
    }
    ce_out(E, "{");
    E->indent++;
    const char *own = gather ? NULL : ce_owner(E, lay);
    if (own) ce_out(E, "if (%s) {", own), E->indent++;
    for (int r = 0; r < ce_nregs(E, lay); r++) {
        Buf ib = {0}, ob = {0};
        ce_buf_printf(&ib, "true");
        ce_buf_printf(&ob, "0LL");
        for (int a = 0; a < rank; a++) {
            const char *ix = opreg(E, op->args[a], lay, r);
            ce_buf_printf(&ib, " && (unsigned long long)(long long)%s < (unsigned long long)p%d_n%d", ix, op->array, a);
            ce_buf_printf(&ob, " + (long long)%s * p%d_s%d", ix, op->array, a);
        }
        if (gather) {
            ce_out(E, "%s = (%s) ? %s : %s;", ce_reg(E, name, lay, r), ib.p,
                from_mem(E, dt, ce_fmt_str(E, "p%d[%s]", op->array, ob.p)), pad_value(E, dt, op->flag));
        } else {
            const char *x = opreg(E, op->args[rank], lay, r);
            DType xt = ce_vdt(E, op->args[rank]);
            if (xt != dt) x = ce_ew_cast(E, xt, dt, x);
            const char *ptr = ce_fmt_str(E, "(p%d + (%s))", op->array, ob.p);
            if (op->op == OP_SCATTER) {
                ce_out(E, "if (%s) *%s = %s;", ib.p, ptr, to_mem(E, dt, x));
            } else {
                bool native = false;
                const char *fn = op->op == OP_ATOMIC_ADD ? "atomicAdd" : op->op == OP_ATOMIC_MAX ? "atomicMax" : "atomicMin";
                const char *cast = NULL;
                if (dt == DT_I32) cast = "int", native = true;
                else if (dt == DT_U32) cast = "unsigned", native = true;
                else if (dt == DT_U64) cast = "unsigned long long", native = true;
                else if (dt == DT_I64) cast = op->op == OP_ATOMIC_ADD ? "unsigned long long" : "long long", native = true;
                else if ((dt == DT_F32 || dt == DT_F64) && op->op == OP_ATOMIC_ADD) cast = ce_ctype(dt), native = true;
                if (native) {
                    ce_out(E, "if (%s) %s((%s *)%s, (%s)%s);", ib.p, fn, cast, ptr, cast, x);
                } else {
                    OpId f = op->op == OP_ATOMIC_ADD ? OP_ADD : op->op == OP_ATOMIC_MAX ? OP_MAXIMUM : OP_MINIMUM;
                    const char *xv = ce_fresh(E, "x");
                    ce_out(E, "if (%s) { const %s %s = %s; tile_atomic_rmw(%s, [&](%s o) { return (%s)%s; }); }",
                        ib.p, ce_mtype(dt), xv, to_mem(E, dt, x), ptr, ce_mtype(dt), ce_mtype(dt),
                        to_mem(E, dt, ce_ew_binary(E, f, dt, from_mem(E, dt, "o"), from_mem(E, dt, xv))));
                }
            }
        }
        free(ib.p);
        free(ob.p);
    }
    if (own) E->indent--, ce_out(E, "}");
    E->indent--;
    ce_out(E, "}");
}

/* ---- element-wise ------------------------------------------------------------ */

/* An operand of one element read against a bigger result: a broadcast. */
void ce_fit_operand(Emitter *E, int id, const Type *t) {
    Val *v = ce_val(E, id);
    if (ce_lay(E, v->lay)->nbits == lay_log2(type_numel(t))) return;
    if (type_numel(ce_vtype(E, id)) != 1) return;
    int none[LAY_MAX_BITS];
    for (int b = 0; b < LAY_MAX_BITS; b++) none[b] = -1;
    v->lay = ce_relabel(E, ce_lay(E, v->lay), t->rank, t->shape, none);
}

/* Registers `name` (declared here) of arange in layout `lay`: each its coordinate. */
void ce_emit_arange(Emitter *E, DType t, int lay, const char *name) {
    ce_decl(E, t, name, lay);
    for (int r = 0; r < ce_nregs(E, lay); r++)
        ce_out(E, "%s = %s;", ce_reg(E, name, lay, r), ce_ew_cast(E, DT_I32, t, ce_coord(E, lay, r, 0)));
}

/* Whether integer value `id` is known to be >= 0: block indices, grid and
 * array extents, non-negative constants, loop counters counting up from a
 * value >= 0, and quotients, remainders, minima and maxima of those.  Sums
 * and products are left out: they could wrap. */
static bool known_nonneg(Emitter *E, int id, int depth) {
    if (id < 0 || depth > 12) return false;
    const IrOp *d = E->f->values[id].def;
    if (!d || !dtype_is_int(ce_vdt(E, id))) return false;
    switch (d->op) {
    case OP_BID: case OP_NUM_BLOCKS: case OP_ARRAY_DIM: return true;
    case OP_CONST: return d->lit.i >= 0;
    case OP_DIV: case OP_MOD: case OP_CDIV: case OP_MINIMUM:
        return known_nonneg(E, d->args[0], depth + 1) && known_nonneg(E, d->args[1], depth + 1);
    case OP_MAXIMUM: return known_nonneg(E, d->args[0], depth + 1) || known_nonneg(E, d->args[1], depth + 1);
    case OP_FOR: {   /* lo, hi, step: counting up from lo >= 0 */
        int64_t st;
        return known_nonneg(E, d->args[0], depth + 1) && ir_const_int(E->f, d->args[2], &st) && st > 0;
    }
    default: return false;
    }
}

/* Is tf32 value v rounded by construction (an astype to tf32, through shape
 * operations)?  Else it may be a word read from a tf32 array, whose low 13
 * bits other arithmetic must not see (tile_tf32_word); the tensor cores drop
 * them themselves. */
static bool tf32_rounded(Emitter *E, int v) {
    if (ce_vdt(E, v) != DT_TF32) return true;
    for (int depth = 0; depth < 16; depth++) {
        const IrOp *d = E->f->values[v].def;
        if (!d) return false;
        bool view = d->op == OP_RESHAPE || d->op == OP_PERMUTE || d->op == OP_BROADCAST || d->op == OP_EXTRACT;
        if (d->op == OP_CAST && ce_vdt(E, d->args[0]) != DT_TF32) return true;
        if (!view && d->op != OP_CAST) return false;
        v = d->args[0];
    }
    return false;
}

/* Register expression x of tf32 value v as arithmetic may read it: a tf32
 * array's word without its low 13 bits, where v may be one. */
const char *ce_tf32_value(Emitter *E, int v, const char *x) {
    return tf32_rounded(E, v) ? x : ce_fmt_str(E, "tile_tf32_word(%s)", x);
}

/* The C expression of element-wise `op` on one register of each operand. */
const char *ce_ew_expr(Emitter *E, const IrOp *op, const char *const *regs) {
    DType rt = ce_vdt(E, op->result), at = ce_vdt(E, op->args[0]);
    const char *a = regs[0];
    if (op->op == OP_CAST) {
        if (rt != DT_TF32) a = ce_tf32_value(E, op->args[0], a);
        return ce_ew_cast(E, at, rt, a);
    }
    if (op->op == OP_WHERE) {
        const char *p = ce_ew_cast(E, ce_vdt(E, op->args[1]), rt, regs[1]);
        const char *q = ce_ew_cast(E, ce_vdt(E, op->args[2]), rt, regs[2]);
        return ce_fmt_str(E, "(%s ? %s : %s)", a, p, q);
    }
    if (op->nargs == 1) {
        const char *x = ce_ew_unary(E, op->op, at, a);
        return op->op != OP_ISNAN && op->op != OP_NOT ? ce_ew_cast(E, at, rt, x) : x;
    }
    const char *b = ce_ew_cast(E, ce_vdt(E, op->args[1]), at, regs[1]);
    if ((op->op == OP_DIV || op->op == OP_MOD || op->op == OP_CDIV) && dtype_is_int(at) && rt == at &&
        known_nonneg(E, op->args[0], 0) && known_nonneg(E, op->args[1], 0)) {
        const char *fn = op->op == OP_DIV ? "tile_udiv" : op->op == OP_MOD ? "tile_umod" : "tile_ucdiv";
        return ce_fmt_str(E, "%s<%s, %s>(%s, %s)", fn, ce_ctype(at), unsigned_of(at), a, b);
    }
    const char *x = ce_ew_binary(E, op->op, at, a, b);
    bool logical = op->op >= OP_LT && op->op <= OP_LOR;
    return logical ? x : ce_ew_cast(E, at, rt, x);
}

static void emit_elementwise(Emitter *E, const IrOp *op) {
    const Type *t = ce_vtype(E, op->result);
    for (int i = 0; i < op->nargs; i++) ce_fit_operand(E, op->args[i], t);
    Val saved[REMAT_OPERANDS];
    memset(saved, 0, sizeof saved);
    int lay = common_layout(E, op->args, op->nargs, t, false, E->opt_remat ? saved : NULL, ce_plan_layout(E, op->result, -1));
    const char *name = ce_fresh(E, "v");
    ce_set_val(E, op->result, name, lay);
    ce_decl(E, t->dtype, name, lay);
    int n = ce_nregs(E, lay);
    bool pairs = op->op == OP_CAST && E->opt_packed_cvt && n % 2 == 0 && ce_vdt(E, op->args[0]) == DT_F32 &&
                 (t->dtype == DT_BF16 || t->dtype == DT_F16);
    for (int r = 0; r < n; r += pairs ? 2 : 1) {
        if (pairs) {
            ce_out(E, "tile_f32x2_%s(%s, %s, %s, %s);", t->dtype == DT_BF16 ? "bf16" : "f16", opreg(E, op->args[0], lay, r),
                   opreg(E, op->args[0], lay, r + 1), ce_reg(E, name, lay, r), ce_reg(E, name, lay, r + 1));
            continue;
        }
        const char *regs[3];
        for (int a = 0; a < op->nargs && a < 3; a++) regs[a] = opreg(E, op->args[a], lay, r);
        ce_out(E, "%s = %s;", ce_reg(E, name, lay, r), ce_ew_expr(E, op, regs));
    }
    restore_operands(E, op->args, op->nargs, saved);
}

/* ---- shape ops: relabelled bits ---------------------------------------------- */

static void emit_alias(Emitter *E, const IrOp *op, int lay) {
    int x = op->args[0];
    DType xt = ce_vdt(E, x), rt = ce_vdt(E, op->result);
    if (xt == rt) {
        ce_set_val(E, op->result, ce_val(E, x)->name, lay);
        return;
    }
    const char *name = ce_fresh(E, "v");
    ce_set_val(E, op->result, name, lay);
    ce_decl(E, rt, name, lay);
    for (int r = 0; r < ce_nregs(E, lay); r++)
        ce_out(E, "%s = %s;", ce_reg(E, name, lay, r), ce_ew_cast(E, xt, rt, ce_reg(E, ce_val(E, x)->name, lay, r)));
}

static void emit_shape(Emitter *E, const IrOp *op) {
    const Type *t = ce_vtype(E, op->result), *xt = ce_vtype(E, op->args[0]);
    const Layout *X = ce_lay(E, ce_val(E, op->args[0])->lay);
    int src[LAY_MAX_BITS];
    for (int b = 0; b < LAY_MAX_BITS; b++) src[b] = -1;
    if (op->op == OP_RESHAPE) {
        Layout l = lay_reshape(X, t->rank, t->shape);
        emit_alias(E, op, ce_lay_add(E, &l));
        return;
    }
    if (op->op == OP_PERMUTE) {
        for (int d = 0; d < t->rank; d++)
            for (int j = 0; j < lay_log2(t->shape[d]); j++)
                src[lay_pos(t->rank, t->shape, d, j)] = lay_pos(xt->rank, xt->shape, op->ints[d], j);
    } else {   /* BROADCAST */
        int lead = t->rank - xt->rank;
        for (int d = lead; d < t->rank; d++) {
            if (xt->shape[d - lead] == 1) continue;
            for (int j = 0; j < lay_log2(t->shape[d]); j++)
                src[lay_pos(t->rank, t->shape, d, j)] = lay_pos(xt->rank, xt->shape, d - lead, j);
        }
    }
    emit_alias(E, op, ce_relabel(E, X, t->rank, t->shape, src));
}

/* Value (C expression, or "0" / "1") of bit s of register `reg`'s element in
 * layout R for the thread running it; spec -2 / -3 are the constants. */
static const char *elem_bit(Emitter *E, const Layout *R, int reg, int s) {
    if (s == -2) return "0";
    if (s == -3) return "1";
    if (s < 0 || R->space[s] == LAY_NONE) return "0";
    if (R->space[s] == LAY_REG) return ((lay_reg_elem(R, reg) >> s) & 1) ? "1" : "0";
    return ce_fmt_str(E, "((%s >> %d) & 1)", R->space[s] == LAY_LANE ? "lane" : "warp", R->bit[s]);
}

/* gather_smem without shared memory when every warp holds all of x (no warp
 * bits) in a few registers: one shuffle per target register (per candidate
 * source register when the source register depends on the thread).  Small
 * vectors broadcast against tiles (a row's decay, a column's δ) come this
 * way: no barrier.  NULL when x does not qualify. */
static const char *gather_shfl(Emitter *E, const char *name, int x, DType t, int r, const int *spec) {
    const Layout *X = ce_lay(E, x), *R = ce_lay(E, r);
    int xr = lay_nregs(X);
    if (lay_warp_mask(X) || xr > 4 || ce_regsize(t) > 8) return NULL;
    bool runtime_reg = false;
    for (int i = 0; i < lay_nregs(R) && !runtime_reg; i++)
        for (int b = 0; b < X->nbits; b++)
            if (X->space[b] == LAY_REG && strlen(elem_bit(E, R, i, spec[b])) > 1) runtime_reg = true;
    if (lay_nregs(R) * (runtime_reg ? xr : 1) > 64) return NULL;
    const char *res = ce_fresh(E, "c");
    ce_decl(E, t, res, r);
    /* target registers that read the same source (a broadcast) share one shuffle */
    const char **seen_src = calloc((size_t)lay_nregs(R), sizeof *seen_src);
    for (int i = 0; i < lay_nregs(R); i++) {
        Buf lb = {0}, rb = {0};
        ce_buf_printf(&lb, "0");
        ce_buf_printf(&rb, "0");
        for (int b = 0; b < X->nbits; b++) {
            if (X->space[b] != LAY_LANE && X->space[b] != LAY_REG) continue;
            const char *v = elem_bit(E, R, i, spec[b]);
            if (!strcmp(v, "0")) continue;
            ce_buf_printf(X->space[b] == LAY_LANE ? &lb : &rb, " | (%s << %d)", v, X->bit[b]);
        }
        const char *dst = ce_reg(E, res, r, i);
        const char *key = ce_fmt_str(E, "%s|%s", lb.p, rb.p);   /* source lane | source register */
        int same = -1;
        for (int k = 0; k < i && same < 0; k++)
            if (seen_src && !strcmp(seen_src[k], key)) same = k;
        if (seen_src) seen_src[i] = key;
        if (same >= 0) {
            ce_out(E, "%s = %s;", dst, ce_reg(E, res, r, same));
        } else if (!runtime_reg) {
            int reg = 0;   /* constant: evaluate the " | (1 << k)" terms */
            for (int b = 0; b < X->nbits; b++)
                if (X->space[b] == LAY_REG && !strcmp(elem_bit(E, R, i, spec[b]), "1")) reg |= 1 << X->bit[b];
            ce_out(E, "%s = tile_shfl(%s, %s);", dst, ce_reg(E, name, x, reg), lb.p);
        } else {
            ce_out(E, "{");
            E->indent++;
            ce_out(E, "const int sl = %s, sr = %s;", lb.p, rb.p);
            ce_out(E, "%s = tile_shfl(%s, sl);", dst, ce_reg(E, name, x, 0));
            for (int k = 1; k < xr; k++) {
                const char *sk = ce_fresh(E, "s");
                ce_out(E, "const %s %s = tile_shfl(%s, sl);", ce_ctype(t), sk, ce_reg(E, name, x, k));
                ce_out(E, "if (sr == %d) %s = %s;", k, dst, sk);
            }
            E->indent--;
            ce_out(E, "}");
        }
        free(lb.p);
        free(rb.p);
    }
    free(seen_src);
    return res;
}

/* Reads into layout r, from x staged in shared memory, the element whose
 * bit b is: spec[b] >= 0: bit spec[b] of r's element; -2: 0; -3: 1. */
static const char *gather_smem(Emitter *E, const char *name, int x, DType t, int r, const int *spec) {
    const char *viashfl = gather_shfl(E, name, x, t, r, spec);
    if (viashfl) return viashfl;
    const Layout *X = ce_lay(E, x), *R = ce_lay(E, r);
    int cpos[LAY_MAX_BITS], nc = 0;
    for (int b = 0; b < X->nbits; b++) cpos[b] = X->space[b] != LAY_NONE ? nc++ : -1;
    ce_need_smem(E, ((int64_t)1 << nc) * ce_regsize(t));
    const char *res = ce_fresh(E, "c");
    ce_decl(E, t, res, r);
    ce_out(E, "{");
    E->indent++;
    ce_out(E, "%s *S = (%s *)tile_smem;", ce_ctype(t), ce_ctype(t));
    Buf wb = {0}, rb = {0};
    ce_buf_printf(&wb, "0");
    ce_buf_printf(&rb, "0");
    for (int b = 0; b < X->nbits; b++) {
        if (X->space[b] == LAY_LANE || X->space[b] == LAY_WARP)
            ce_buf_printf(&wb, " | (((%s >> %d) & 1) << %d)", X->space[b] == LAY_LANE ? "lane" : "warp", X->bit[b], cpos[b]);
        int s = spec[b];
        if (cpos[b] >= 0 && s >= 0 && (R->space[s] == LAY_LANE || R->space[s] == LAY_WARP))
            ce_buf_printf(&rb, " | (((%s >> %d) & 1) << %d)", R->space[s] == LAY_LANE ? "lane" : "warp", R->bit[s], cpos[b]);
    }
    ce_out(E, "const int cw = %s, cr = %s;", wb.p, rb.p);
    free(wb.p);
    free(rb.p);
    if (!E->scratch_clean) ce_out(E, "__syncthreads();");
    const char *own = ce_owner(E, x);
    if (own) ce_out(E, "if (%s) {", own), E->indent++;
    for (int i = 0; i < lay_nregs(X); i++) {
        int64_t e = lay_reg_elem(X, i), c = 0;
        for (int b = 0; b < X->nbits; b++)
            if (cpos[b] >= 0 && ((e >> b) & 1)) c |= (int64_t)1 << cpos[b];
        ce_out(E, "S[cw + %lld] = %s;", (long long)c, ce_reg(E, name, x, i));
    }
    if (own) E->indent--, ce_out(E, "}");
    ce_out(E, "__syncthreads();");
    for (int i = 0; i < lay_nregs(R); i++) {
        int64_t e = lay_reg_elem(R, i), c = 0;
        for (int b = 0; b < X->nbits; b++) {
            if (cpos[b] < 0) continue;
            int s = spec[b];
            bool one = s == -3 || (s >= 0 && ((e >> s) & 1));
            if (one) c |= (int64_t)1 << cpos[b];
        }
        ce_out(E, "%s = S[cr + %lld];", ce_reg(E, res, r, i), (long long)c);
    }
    E->indent--;
    ce_out(E, "}");
    E->scratch_clean = false;
    return res;
}

static void emit_extract(Emitter *E, const IrOp *op) {
    const Type *t = ce_vtype(E, op->result), *xt = ce_vtype(E, op->args[0]);
    Val *v = ce_val(E, op->args[0]);
    const Layout *X = ce_lay(E, v->lay);
    /* spec: per source bit, the result bit it comes from or the fixed value */
    int spec[LAY_MAX_BITS];
    bool regs_only = true;
    for (int d = 0; d < xt->rank; d++) {
        int rb = lay_log2(t->shape[d]);
        int64_t offset = (int64_t)op->ints[d] * t->shape[d];
        for (int j = 0; j < lay_log2(xt->shape[d]); j++) {
            int p = lay_pos(xt->rank, xt->shape, d, j);
            if (j < rb) spec[p] = lay_pos(t->rank, t->shape, d, j);
            else {
                spec[p] = ((offset >> j) & 1) ? -3 : -2;
                if (X->space[p] == LAY_LANE || X->space[p] == LAY_WARP) regs_only = false;
            }
        }
    }
    DType dt = ce_vdt(E, op->args[0]);
    if (!regs_only) {
        int r = ce_blocked(E, t, -1);
        const char *name = gather_smem(E, v->name, v->lay, dt, r, spec);
        ce_set_val(E, op->result, name, r);
        return;
    }
    /* every fixed bit is a register bit (or broadcast): pick registers */
    Layout R;
    memset(&R, 0, sizeof R);
    R.rank = t->rank;
    for (int d = 0; d < t->rank; d++) R.shape[d] = t->shape[d], R.nbits += lay_log2(t->shape[d]);
    R.kind = LAYK_OTHER;
    int newbit[32];
    for (int i = 0; i < 32; i++) newbit[i] = -1;
    for (int b = 0; b < X->nbits; b++)
        if (spec[b] >= 0 && X->space[b] == LAY_REG) newbit[X->bit[b]] = 0;
    int nr = 0;
    for (int i = 0; i < X->nregbits; i++)
        if (newbit[i] == 0) newbit[i] = nr++;
    for (int b = 0; b < X->nbits; b++) {
        if (spec[b] < 0) continue;
        R.space[spec[b]] = X->space[b];
        R.bit[spec[b]] = X->space[b] == LAY_REG ? (unsigned char)newbit[X->bit[b]] : X->bit[b];
    }
    R.nregbits = nr;
    int r = ce_lay_add(E, &R);
    const char *name = ce_fresh(E, "v");
    ce_set_val(E, op->result, name, r);
    ce_decl(E, dt, name, r);
    for (int i = 0; i < lay_nregs(&R); i++) {
        int64_t e = lay_reg_elem(&R, i);
        int xr = 0;
        for (int b = 0; b < X->nbits; b++) {
            if (X->space[b] != LAY_REG) continue;
            bool one = spec[b] == -3 || (spec[b] >= 0 && ((e >> spec[b]) & 1));
            if (one) xr |= 1 << X->bit[b];
        }
        ce_out(E, "%s = %s;", ce_reg(E, name, r, i), ce_reg(E, v->name, v->lay, xr));
    }
}

static void emit_cat(Emitter *E, const IrOp *op) {
    const Type *t = ce_vtype(E, op->result), *at = ce_vtype(E, op->args[0]);
    Val *a = ce_val(E, op->args[0]), *b = ce_val(E, op->args[1]);
    DType dt = t->dtype;
    if (a->lay != b->lay) {
        if (lay_compatible(ce_lay(E, b->lay), ce_lay(E, a->lay))) {
            b->name = ce_convert(E, b->name, b->lay, ce_vdt(E, op->args[1]), a->lay);
            b->lay = a->lay;
        } else {
            int bl = ce_blocked(E, at, -1);
            a->name = ce_convert(E, a->name, a->lay, ce_vdt(E, op->args[0]), bl);
            a->lay = bl;
            b->name = ce_convert(E, b->name, b->lay, ce_vdt(E, op->args[1]), bl);
            b->lay = bl;
        }
    }
    const Layout *A = ce_lay(E, a->lay);
    int src[LAY_MAX_BITS];
    int top = lay_log2(at->shape[op->axis]);
    for (int d = 0; d < t->rank; d++)
        for (int j = 0; j < lay_log2(t->shape[d]); j++) {
            int p = lay_pos(t->rank, t->shape, d, j);
            src[p] = (d == op->axis && j == top) ? -1 : lay_pos(at->rank, at->shape, d, j);
        }
    Layout R;
    memset(&R, 0, sizeof R);
    R.rank = t->rank;
    for (int d = 0; d < t->rank; d++) R.shape[d] = t->shape[d], R.nbits += lay_log2(t->shape[d]);
    R.kind = LAYK_OTHER;
    for (int p = 0; p < R.nbits; p++) {
        if (src[p] < 0) { R.space[p] = LAY_REG; R.bit[p] = (unsigned char)A->nregbits; }
        else { R.space[p] = A->space[src[p]]; R.bit[p] = A->bit[src[p]]; }
    }
    R.nregbits = A->nregbits + 1;
    int r = ce_lay_add(E, &R);
    const char *name = ce_fresh(E, "v");
    ce_set_val(E, op->result, name, r);
    ce_decl(E, dt, name, r);
    int na = lay_nregs(A);
    for (int i = 0; i < 2 * na; i++) {
        int id = op->args[i < na ? 0 : 1];
        const char *x = ce_reg(E, ce_val(E, id)->name, a->lay, i % na);
        ce_out(E, "%s = %s;", ce_reg(E, name, r, i), ce_ew_cast(E, ce_vdt(E, id), dt, x));
    }
}

/* ---- locals ------------------------------------------------------------------- */

static const char *local_name(Emitter *E, int l) { return ce_fmt_str(E, "l%d", l); }

static void emit_local_set(Emitter *E, const IrOp *op) {
    const IrLocal *lc = &E->f->locals[op->local];
    int x = op->args[0];
    ce_fit_operand(E, x, &lc->type);
    Val *v = ce_val(E, x);
    int *ll = &E->local_lay[op->local];
    if (E->analysis) {
        /* grow the local's layout to hold every value stored into it */
        const Layout *X = ce_lay(E, v->lay);
        if (*ll < 0) { *ll = v->lay; E->local_changed = true; }
        else if (!lay_compatible(X, ce_lay(E, *ll))) {
            if (lay_compatible(ce_lay(E, *ll), X)) *ll = v->lay;
            else *ll = ce_blocked(E, &lc->type, -1);
            E->local_changed = true;
        }
    }
    if (*ll < 0) { ce_fail(E, op, "internal: local without a layout"); return; }
    const char *src = ce_convert(E, v->name, v->lay, ce_vdt(E, x), *ll);
    const char *dst = local_name(E, op->local);
    if (strcmp(src, dst) == 0) return;   /* a wgmma accumulated into the local's own registers */
    for (int r = 0; r < ce_nregs(E, *ll); r++)
        ce_out(E, "%s = %s;", ce_reg(E, dst, *ll, r), ce_ew_cast(E, ce_vdt(E, x), lc->type.dtype, ce_reg(E, src, *ll, r)));
    /* a wgmma's in-place accumulator: its value made opaque, so that the
     * compiler neither folds it (a zero start materialized again on a path
     * that skips the loop counts, for ptxas, as an instruction defining a
     * wgmma's registers while it runs, and serializes every product) nor
     * moves it between registers */
    if (E->local_wgmma && E->local_wgmma[op->local]) ce_wgmma_fence_registers(E, dst, *ll);
}

static void emit_local_get(Emitter *E, const IrOp *op) {
    int ll = E->local_lay[op->local];
    const IrLocal *lc = &E->f->locals[op->local];
    if (ll < 0) {
        /* read before any write: any layout will do (the value is undefined) */
        ll = E->local_lay[op->local] = ce_blocked(E, &lc->type, -1);
        E->local_changed = true;
    }
    const char *name = ce_fresh(E, "v");
    ce_set_val(E, op->result, name, ll);
    ce_decl(E, ce_vdt(E, op->result), name, ll);
    for (int r = 0; r < ce_nregs(E, ll); r++)
        ce_out(E, "%s = %s;", ce_reg(E, name, ll, r), ce_ew_cast(E, lc->type.dtype, ce_vdt(E, op->result), ce_reg(E, local_name(E, op->local), ll, r)));
}

/* ---- ops and control flow --------------------------------------------------------- */

static void emit_scalar_def(Emitter *E, const IrOp *op, const char *expr) {
    const Type *t = ce_vtype(E, op->result);
    int none[LAY_MAX_BITS];
    for (int b = 0; b < LAY_MAX_BITS; b++) none[b] = -1;
    Layout z;
    memset(&z, 0, sizeof z);
    int lay = ce_relabel(E, &z, t->rank, t->shape, none);
    const char *name = ce_fresh(E, "v");
    ce_set_val(E, op->result, name, lay);
    ce_out(E, "const %s %s = %s;", ce_ctype(t->dtype), name, expr);
}

void ce_emit_line(Emitter *E, const IrOp *op) {
    if (!E->opt.line_directives || op->loc.line <= 0 || op->loc.line == E->last_line || !op->loc.file) return;
    E->last_line = op->loc.line;
    Buf b = {0};
    for (const char *p = op->loc.file; *p; p++) {
        if (*p == '"' || *p == '\\') ce_buf_printf(&b, "\\%c", *p);
        else ce_buf_printf(&b, "%c", *p);
    }
    ce_buf_printf(&E->body, "#line %d \"%s\"\n", op->loc.line, b.p ? b.p : "");
    free(b.p);
}

/* ---- memory hazards between the threads of a block ------------------------------ */

/* Each thread touches its own elements, but which elements a thread touches
 * depends on the op's layout: a load may read what another thread stored a
 * moment ago.  Program order is the language's order, so a read after a write
 * (or a write after a read or write) of one array waits at a barrier; reads
 * after reads and atomics after atomics do not.  Arrays only read -- the
 * common case -- never cost a barrier. */
#define MEM_BIT(k) (1u << (k))
void ce_mem_access(Emitter *E, int arr, IrMemAccess kind) {
    if (!E->mem_state || kind == IR_MEM_NONE || arr < 0 || arr >= E->f->nparams) return;
    unsigned all = MEM_BIT(IR_MEM_READ) | MEM_BIT(IR_MEM_WRITE) | MEM_BIT(IR_MEM_ATOMIC);
    unsigned clash = kind == IR_MEM_WRITE ? all : all & ~MEM_BIT(kind);   /* same-kind reads or atomics commute */
    if (E->mem_state[arr] & clash) {
        ce_tma_store_drain(E, true);
        ce_out(E, "__syncthreads();   /* %s of %s after other threads' accesses */",
               kind == IR_MEM_READ ? "read" : "write", E->f->params[arr].name);
        memset(E->mem_state, 0, (size_t)E->f->nparams);
        E->scratch_clean = true;
    }
    E->mem_state[arr] |= (unsigned char)MEM_BIT(kind);
}

/* Is the one access of array `arr` in blk (and the blocks it holds) a
 * store of a tile whose index has `iv` as one of its entries?  *only is
 * cleared otherwise, *seen counts the accesses.  (Two stores of one array
 * could overlap across iterations: a tile of another extent, iv on another
 * axis.) */
static void stores_by_index(const IrBlock *blk, int arr, int iv, bool *only, int *seen) {
    for (int i = 0; blk && i < blk->nops && *only; i++) {
        const IrOp *o = blk->ops[i];
        if (ir_op_mem_access(o) != IR_MEM_NONE && o->array == arr) {
            bool indexed = false;
            for (int a = 0; o->op == OP_STORE && a < o->nargs - 1; a++) indexed |= o->args[a] == iv;
            *only = indexed && ++*seen == 1;
        }
        stores_by_index(o->body, arr, iv, only, seen);
        stores_by_index(o->else_body, arr, iv, only, seen);
    }
}

/* The accesses a loop body makes, as if already made (they come round
 * again); for a `for` loop (iv its induction variable, else -1), not an
 * array the body only writes, by one store of one tile at an index holding iv:
 * distinct iterations write disjoint tiles, and nothing in the loop reads
 * them (Mamba-2's ssd_scan stores y at each step without a barrier).
 * TILEC_LOOP_STORE_BARRIER=1: the barrier all the same (for measurements). */
static void loop_mem_access_iv(Emitter *E, const IrBlock *blk, const IrBlock *body, int iv) {
    if (!blk || !E->mem_state) return;
    for (int i = 0; i < blk->nops; i++) {
        const IrOp *o = blk->ops[i];
        IrMemAccess k = ir_op_mem_access(o);
        bool disjoint = iv >= 0 && k == IR_MEM_WRITE && !E->opt_loop_store_barrier;
        int seen = 0;
        if (disjoint) stores_by_index(body, o->array, iv, &disjoint, &seen);
        if (k != IR_MEM_NONE && !disjoint) E->mem_state[o->array] |= (unsigned char)MEM_BIT(k);
        loop_mem_access_iv(E, o->body, body, iv);
        loop_mem_access_iv(E, o->else_body, body, iv);
    }
}

static void loop_mem_access(Emitter *E, const IrBlock *blk) { loop_mem_access_iv(E, blk, blk, -1); }

void ce_emit_op(Emitter *E, const IrOp *op) {
    ce_wgmma_settle(E, op);
    /* views of a cp.async operand have no registers: the mma reads the buffer
     * (unless other uses read them in registers too) */
    if (!ce_async_in_registers(E, op->result)) return;
    ce_emit_line(E, op);
    const IrFunc *f = E->f;
    switch (op->op) {
    case OP_CONST: {
        DType t = ce_vdt(E, op->result);
        Scalar v;
        if (dtype_is_float(t)) v.f = op->lit.f;
        else if (dtype_is_unsigned(t)) v.u = op->lit.u;
        else v.i = op->lit.i;
        emit_scalar_def(E, op, ce_lit_str(E, t, scalar_canon(t, v)));
        return;
    }
    case OP_PARAM:
        emit_scalar_def(E, op, ce_fmt_str(E, "s%d", op->index));
        return;
    case OP_ARRAY_DIM:
        emit_scalar_def(E, op, ce_fmt_str(E, "(%s)p%d_n%d", ce_ctype(ce_vdt(E, op->result)), op->array, op->axis));
        return;
    case OP_ARRAY_STRIDE:
        emit_scalar_def(E, op, ce_fmt_str(E, "(%s)p%d_s%d", ce_ctype(ce_vdt(E, op->result)), op->array, op->axis));
        return;
    case OP_BID:
        emit_scalar_def(E, op, ce_fmt_str(E, "(%s)blockIdx.%c", ce_ctype(ce_vdt(E, op->result)), "xyz"[op->axis & 3]));
        return;
    case OP_NUM_BLOCKS:
        emit_scalar_def(E, op, ce_fmt_str(E, "(%s)gridDim.%c", ce_ctype(ce_vdt(E, op->result)), "xyz"[op->axis & 3]));
        return;
    case OP_ARANGE: {
        int lay = ce_plan_layout(E, op->result, ce_blocked(E, ce_vtype(E, op->result), -1));
        const char *name = ce_fresh(E, "v");
        ce_set_val(E, op->result, name, lay);
        ce_emit_arange(E, ce_vdt(E, op->result), lay, name);
        return;
    }
    case OP_NEG: case OP_NOT: case OP_BITNOT: case OP_ABS: case OP_EXP: case OP_EXP2: case OP_LOG:
    case OP_LOG2: case OP_SQRT: case OP_RSQRT: case OP_FLOOR: case OP_CEIL: case OP_SIN: case OP_COS:
    case OP_TANH: case OP_SIGMOID: case OP_ISNAN: case OP_CAST:
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_MOD: case OP_MAXIMUM: case OP_MINIMUM:
    case OP_POW: case OP_CDIV: case OP_LT: case OP_LE: case OP_GT: case OP_GE: case OP_EQ: case OP_NE:
    case OP_LAND: case OP_LOR: case OP_BITAND: case OP_BITOR: case OP_BITXOR: case OP_SHL: case OP_SHR:
    case OP_WHERE:
        emit_elementwise(E, op);
        return;
    case OP_REDUCE_SUM: case OP_REDUCE_MAX: case OP_REDUCE_MIN: case OP_REDUCE_PROD:
    case OP_ARGMAX: case OP_ARGMIN:
        ce_emit_reduce(E, op);
        E->scratch_clean = false;
        return;
    case OP_CUMSUM: case OP_CUMPROD:
        ce_emit_scan(E, op);
        E->scratch_clean = false;
        return;
    case OP_MMA:
        ce_emit_mma(E, op);
        E->scratch_clean = false;
        return;
    case OP_RESHAPE: case OP_PERMUTE: case OP_BROADCAST:
        emit_shape(E, op);
        return;
    case OP_EXTRACT:
        emit_extract(E, op);
        return;
    case OP_CAT:
        emit_cat(E, op);
        return;
    case OP_LOAD:
        /* a pipelined load's copies were issued (and checked) ahead */
        if (!ce_async_pipelined(E, op)) ce_mem_access(E, op->array, IR_MEM_READ);
        if (ce_async_is_load(E, op->result) || ce_async_pipelined(E, op)) ce_async_emit_load(E, op);
        else ce_emit_load(E, op);
        return;
    case OP_STORE:
        ce_mem_access(E, op->array, IR_MEM_WRITE);
        emit_store(E, op);
        return;
    case OP_GATHER: case OP_SCATTER: case OP_ATOMIC_ADD: case OP_ATOMIC_MAX: case OP_ATOMIC_MIN:
        ce_mem_access(E, op->array, ir_op_mem_access(op));
        emit_indexed(E, op);
        return;
    case OP_FOR: {
        DType t = ce_vdt(E, op->result);
        bool u64 = t == DT_U64;
        const char *IT = u64 ? "unsigned long long" : "long long";
        const char *lo = ce_vreg(E, op->args[0], 0), *hi = ce_vreg(E, op->args[1], 0), *st = ce_vreg(E, op->args[2], 0);
        const char *i = ce_fresh(E, "i");
        ce_out(E, "{");
        E->indent++;
        ce_out(E, "const %s %s_hi = (%s)%s, %s_st = (%s)%s;", IT, i, IT, hi, i, IT, st);
        loop_mem_access_iv(E, op->body, op->body, op->result);   /* what the body did reaches its start again */
        AsyncLoopState outer;
        bool piped = ce_async_loop_begin(E, op, i, lo, &outer);
        if (!piped) ce_async_prefetch_begin(E, op, i, lo);
        if (u64)
            ce_out(E, "for (%s %s = (%s)%s; %s_st != 0 && %s < %s_hi; %s += %s_st) {", IT, i, IT, lo, i, i, i, i, i);
        else if (piped)   /* the iteration count picks the buffers */
            ce_out(E, "for (%s %s = (%s)%s; %s_st > 0 ? %s < %s_hi : (%s_st < 0 && %s > %s_hi); %s += %s_st, ++%s_it) {",
                IT, i, IT, lo, i, i, i, i, i, i, i, i, i);
        else
            ce_out(E, "for (%s %s = (%s)%s; %s_st > 0 ? %s < %s_hi : (%s_st < 0 && %s > %s_hi); %s += %s_st) {",
                IT, i, IT, lo, i, i, i, i, i, i, i, i);
        E->indent++;
        E->scratch_clean = false;   /* the back edge comes from the body's end */
        if (piped) ce_async_loop_top(E, op, i);
        emit_scalar_def(E, op, ce_fmt_str(E, "(%s)%s", ce_ctype(t), i));
        ce_emit_block(E, op->body);
        if (piped) ce_async_loop_bottom(E);
        if (!piped) ce_async_prefetch_next(E);
        E->indent--;
        ce_out(E, "}");
        E->scratch_clean = piped;   /* the drain ends in a barrier */
        if (!piped) loop_mem_access(E, op->body);   /* a break may leave from anywhere in the body */
        ce_async_loop_end(E, piped, &outer);
        E->indent--;
        ce_out(E, "}");
        return;
    }
    case OP_LOOP:
        loop_mem_access(E, op->body);
        ce_out(E, "for (;;) {");
        E->indent++;
        E->scratch_clean = false;
        ce_emit_block(E, op->body);
        E->indent--;
        ce_out(E, "}");
        /* a break may leave from anywhere in the body */
        E->scratch_clean = false;
        loop_mem_access(E, op->body);
        return;
    case OP_IF: {
        bool clean = E->scratch_clean;
        int na = E->f->nparams;
        unsigned char *before = malloc((size_t)na + 1), *after_then = malloc((size_t)na + 1);
        if (before) memcpy(before, E->mem_state, (size_t)na);
        ce_out(E, "if (%s) {", ce_vreg(E, op->args[0], 0));
        E->indent++;
        ce_emit_block(E, op->body);
        bool then_clean = E->scratch_clean;
        E->scratch_clean = clean;
        if (after_then) memcpy(after_then, E->mem_state, (size_t)na);
        if (before) memcpy(E->mem_state, before, (size_t)na);
        E->indent--;
        if (op->else_body && op->else_body->nops) {
            ce_out(E, "} else {");
            E->indent++;
            ce_emit_block(E, op->else_body);
            E->indent--;
        }
        ce_out(E, "}");
        E->scratch_clean = E->scratch_clean && then_clean;
        for (int a = 0; after_then && a < na; a++) E->mem_state[a] |= after_then[a];   /* either branch */
        free(before);
        free(after_then);
        return;
    }
    case OP_BREAK: ce_out(E, "break;"); return;
    case OP_CONTINUE: ce_out(E, "continue;"); return;
    case OP_RETURN:
        ce_tma_store_drain(E, false);
        ce_out(E, "return;");
        return;
    case OP_LOCAL_GET: emit_local_get(E, op); return;
    case OP_LOCAL_SET: emit_local_set(E, op); return;
    case OP_PRINT: ce_emit_print(E, op); E->scratch_clean = false; return;
    case OP_COUNT: break;
    }
    (void)f;
    ce_fail(E, op, "operation %d is not supported", (int)op->op);
}

/* Ops may re-home an operand (convert it to another layout) in the C scope
 * they sit in; values of outer scopes get their old homes back on the way
 * out, since the new ones are out of scope there. */
void ce_emit_block(Emitter *E, const IrBlock *blk) {
    if (!blk) return;
    size_t n = sizeof(Val) * (size_t)E->f->nvalues;
    Val *saved = malloc(n ? n : 1);
    if (saved) memcpy(saved, E->vals, n);
    int64_t async_top = E->async_top;   /* cp.async buffers of this block's loads */
    for (int i = 0; i < blk->nops; i++) {
        ce_emit_op(E, blk->ops[i]);
        if (E->errors && !E->analysis) break;
    }
    ce_wgmma_settle(E, NULL);
    E->async_top = async_top;
    if (saved) memcpy(E->vals, saved, n);
    free(saved);
}

/* ---- the kernel ------------------------------------------------------------------- */

static void sanitize(Buf *b, const char *s) {
    for (; *s; s++) {
        char c = *s;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
        ce_buf_printf(b, "%c", ok ? c : '_');
    }
}

static void emit_params(Emitter *E, Buf *o) {
    const IrFunc *f = E->f;
    for (int i = 0; i < f->nparams; i++) {
        const IrParam *p = &f->params[i];
        ce_buf_printf(o, "%s\n    ", i ? "," : "");
        if (p->kind == IRP_SCALAR) {
            ce_buf_printf(o, "const %s s%d", ce_ctype(p->dtype), i);
            continue;
        }
        ce_buf_printf(o, "%s%s *__restrict__ p%d", p->written ? "" : "const ", ce_mtype(p->dtype), i);
        for (int d = 0; d < p->rank; d++) ce_buf_printf(o, ", const int p%d_n%d", i, d);
        for (int d = 0; d < p->rank; d++) ce_buf_printf(o, ", const long long p%d_s%d", i, d);
    }
    for (int k = 0; k < E->ntmaps; k++)
        ce_buf_printf(o, "%s\n    const __grid_constant__ TileTensorMap tm%d", f->nparams + k ? "," : "", k);
}

/* The host's way in (CudaEmitOptions.host_entry): the kernel called with
 * the arguments as the runtime packs them, each in a slot of its own, then
 * the tensor maps. */
static void emit_host_entry(Emitter *E, Buf *o, const char *kernel) {
    const IrFunc *f = E->f;
    ce_buf_printf(o, "\nextern \"C\" void tile_host_entry(void *const *a)\n{\n    %s(", kernel);
    int slot = 0;
    for (int i = 0; i < f->nparams; i++) {
        const IrParam *p = &f->params[i];
        ce_buf_printf(o, "%s\n        ", i ? "," : "");
        if (p->kind == IRP_SCALAR) {
            ce_buf_printf(o, "*(const %s *)a[%d]", ce_ctype(p->dtype), slot++);
            continue;
        }
        ce_buf_printf(o, "*(%s%s *const *)a[%d]", p->written ? "" : "const ", ce_mtype(p->dtype), slot++);
        for (int d = 0; d < p->rank; d++) ce_buf_printf(o, ", *(const int *)a[%d]", slot++);
        for (int d = 0; d < p->rank; d++) ce_buf_printf(o, ", *(const long long *)a[%d]", slot++);
    }
    for (int k = 0; k < E->ntmaps; k++) ce_buf_printf(o, ",\n        *(const TileTensorMap *)a[%d]", slot++);
    ce_buf_printf(o, ");\n}\n");
}

/* Prologue variables of each layout used: thread parts of coordinates. */
static void emit_prologue(Emitter *E, Buf *o) {
    for (int k = 0; k < E->nlays; k++) {
        if (!E->lay_used[k]) continue;
        const Layout *l = &E->lays[k];
        Buf e = {0};
        ce_buf_printf(&e, "0");
        for (int b = 0; b < l->nbits; b++)
            if (l->space[b] == LAY_LANE || l->space[b] == LAY_WARP)
                ce_buf_printf(&e, " | (((%s >> %d) & 1) << %d)", l->space[b] == LAY_LANE ? "lane" : "warp", l->bit[b], b);
        ce_buf_printf(o, "    const int L%d_e = %s;\n", k, e.p);
        free(e.p);
        for (int d = 0; d < l->rank; d++) {
            int shift = lay_pos(l->rank, l->shape, d, 0);
            ce_buf_printf(o, "    const int L%d_%d = (L%d_e >> %d) & %d;\n", k, d, k, shift, l->shape[d] - 1);
        }
        ce_buf_printf(o, "    (void)L%d_e;\n", k);
        for (int d = 0; d < l->rank; d++) ce_buf_printf(o, "    (void)L%d_%d;\n", k, d);
    }
}

/* The scratch area's size, rounded so that the cp.async buffers after it
 * start aligned. */
static int scratch_bytes(const Emitter *E) {
    int align = E->swizzled ? SWIZZLE_ALIGN : 128;
    return (E->smem_bytes + align - 1) / align * align;
}

static void emitter_reset(Emitter *E) {
    E->body.len = 0;
    if (E->body.p) E->body.p[0] = 0;
    E->indent = 1;
    E->ntmp = 0;
    E->last_line = -1;
    /* the scratch area an earlier pass needed: a wgmma pipeline leaves it room */
    if (scratch_bytes(E) > E->scratch_hint) E->scratch_hint = scratch_bytes(E);
    E->smem_bytes = 0;
    E->stage_bytes = 0;
    E->async_top = E->async_peak = 0;
    E->scratch_clean = true;
    E->wg_npending = 0;
    E->ntmaps = 0;
    E->tr_unpiped = false;   /* (the last pass's loops are the kernel's) */
    if (E->mem_state) memset(E->mem_state, 0, (size_t)E->f->nparams);
    /* Which loads a pipeline reads back is each pass's own plan: a stale entry
     * once let a load read a buffer the pass never made. */
    if (E->readback_loop) memset(E->readback_loop, 0, sizeof *E->readback_loop * (size_t)E->f->nvalues);
    for (int i = 0; i < E->f->nvalues; i++) E->vals[i].lay = -1, E->vals[i].name = "undef";
    for (int k = 0; k < E->nlays; k++) E->lay_used[k] = false;
}


/* The analysis passes, which settle the layouts of locals, then the pass
 * that writes the body. */
static void emit_passes(Emitter *E) {
    const IrFunc *f = E->f;
    E->analysis = true;
    for (int pass = 0; pass < 8; pass++) {
        E->local_changed = false;
        E->errors = 0;
        emitter_reset(E);
        ce_emit_block(E, f->body);
        if (!E->local_changed) break;
        if (pass == 6)   /* not settling: give every local a blocked layout */
            for (int i = 0; i < f->nlocals; i++) E->local_lay[i] = ce_blocked(E, &f->locals[i].type, -1);
    }
    E->analysis = false;
    E->errors = 0;
    emitter_reset(E);
    ce_emit_block(E, f->body);
    ce_tma_store_drain(E, false);
}

/* The kernel's shared memory: the scratch area, then the cp.async buffers,
 * then (at stage_offset) the buffers of stores by TMA. */
static int smem_below_stage(const Emitter *E) {
    return E->async_peak ? scratch_bytes(E) + (int)E->async_peak : E->smem_bytes;
}
static int stage_offset(const Emitter *E) {
    int below = smem_below_stage(E);
    return E->stage_bytes ? (below + SWIZZLE_ALIGN - 1) / SWIZZLE_ALIGN * SWIZZLE_ALIGN : below;
}
static int kernel_smem(const Emitter *E) { return stage_offset(E) + (int)E->stage_bytes; }
int ce_smem_blocks(int64_t smem) { return smem > 0 ? (int)(SMEM_PER_SM / (smem + SMEM_PER_BLOCK_RESERVED)) : 0; }

/* cuda_emit's work; returns 1 (nothing made) when the load of a tf32 B that a
 * wgmma product reads through a transposed copy was not pipelined (its
 * loop's buffers over the budget, no loop, a loop holding a loop): the copy
 * needs a pipeline, so the kernel is emitted again with all such products
 * on mma.sync (mma_sync_tf32_kn), whose buffers are smaller. */
static int emit_kernel(const IrFunc *f, const CudaEmitOptions *opt, CudaKernelCode *res, Diag *d, bool mma_sync_tf32_kn,
                       bool as_written, int *store_cap, bool no_mixed32, bool *mixed32);

/* ... 2 when the buffers of stores by TMA would cost the kernel a block
 * per SM (emit_cuda_store.c): emitted again with only the stores of smaller
 * boxes by TMA (*store_cap lowered below the largest), until none are; and 3
 * when a product emit_cuda_rewrite.c transposed did not get the form it was
 * transposed for: emitted again as written (as_written). */
static int emit_settled(const IrFunc *f, const CudaEmitOptions *opt, CudaKernelCode *res, Diag *d, bool no_mixed32,
                        bool *mixed32) {
    bool kn = false, as_written = false;
    int store_cap = INT_MAX;
    for (;;) {
        int rc = emit_kernel(f, opt, res, d, kn, as_written, &store_cap, no_mixed32, mixed32);
        if (rc == 1 && !kn) kn = true;
        else if (rc == 3 && !as_written) as_written = true;
        else if (rc != 2) return rc;
    }
}

/* A kernel with 32-bit async loads other uses read back (emit_cuda_async.c's
 * mixed32_ok) that runs one block per SM is emitted again without them, and
 * that one kept where it runs more: the f32 scan at (8, 4096, 80, 64, 64, 8),
 * x_k's buffers and copy 134 KB (1 block per SM), 1.26 ms, against 84 KB
 * and 1.196 without (H200, docs/performance.md). */
int cuda_emit(const IrFunc *f, const CudaEmitOptions *opt, CudaKernelCode *res, Diag *d) {
    bool mixed32 = false, unused;
    int rc = emit_settled(f, opt, res, d, false, &mixed32);
    if (rc != 0 || !mixed32 || ce_smem_blocks(res->smem_bytes) > 1) return rc;
    CudaKernelCode plain = {0};
    Diag quiet;   /* (an alternative: its failure is no error of the kernel's, which is made already) */
    diag_init(&quiet, d ? d->file : NULL, d ? d->src : NULL);
    int alt = emit_settled(f, opt, &plain, &quiet, true, &unused);
    diag_free(&quiet);
    if (alt == 0 && ce_smem_blocks(plain.smem_bytes) > 1) {
        cuda_code_free(res);
        *res = plain;
    } else {
        cuda_code_free(&plain);
    }
    return 0;
}

static int emit_kernel(const IrFunc *f, const CudaEmitOptions *opt, CudaKernelCode *res, Diag *d, bool mma_sync_tf32_kn,
                       bool as_written, int *store_cap, bool no_mixed32, bool *mixed32) {
    memset(res, 0, sizeof *res);
    Emitter E;
    memset(&E, 0, sizeof E);
    E.f = f;
    E.diag = d;
    if (opt) E.opt = *opt;
    arena_init(&E.mem);
    int warps = E.opt.num_warps > 0 ? E.opt.num_warps : f->num_warps > 0 ? f->num_warps : 4;
    if (!is_pow2(warps) || warps > 32) {
        diag_error(d, f->loc, "CUDA backend: num_warps must be a power of two up to 32, not %d", warps);
        arena_free(&E.mem);
        return -1;
    }
    E.warpbits = lay_log2(warps);
    E.threads = warps * 32;
    /* TILEC_NO_REMAT=1: convert through shared memory as before remat existed
     * (to measure what it gives; docs/performance.md) */
    E.opt_remat = !ce_env_flag("TILEC_NO_REMAT");
    /* TILEC_PACKED_CVT=1: f32 -> 16-bit casts in pairs (cvt.rn.bf16x2.f32).
     * With it, ptxas compiles a 16-bit-result wgmma matmul without serializing
     * its products (C7514), which the scalar cvt causes (nvcc 13.0).  Opt-in:
     * on the H200 every GPU test passes with it, and Mamba-2 did not change
     * (docs/performance.md); matmul_f16 has not been timed. */
    E.opt_packed_cvt = ce_env_flag("TILEC_PACKED_CVT");
    /* TILEC_OUTER_PIPE=1: loops that hold loops get a pipeline too (to
     * measure what the rule in ce_async_loop_begin saves) */
    E.opt_outer_pipe = ce_env_flag("TILEC_OUTER_PIPE");
    /* TILEC_READBACK_MAX_BYTES=N: the largest tile read into registers that
     * rides a cp.async pipeline (default READBACK_MAX_BYTES; 0: none do); an
     * experiment knob */
    const char *rb = getenv("TILEC_READBACK_MAX_BYTES");
    E.readback_max_bytes = rb && *rb ? atoll(rb) : -1;
    E.opt_wgmma = E.opt.target_sm90a != 0;
    /* TILEC_WGMMA_WAIT0=1: each use's products waited for at once (to measure
     * what keeping them in flight gives) */
    E.opt_wgmma_wait0 = ce_env_flag("TILEC_WGMMA_WAIT0");
    E.opt_wgmma_noswizzle = ce_env_flag("TILEC_WGMMA_NOSWIZZLE");
    E.opt_mma_noswizzle = ce_env_flag("TILEC_MMA_NOSWIZZLE");
    E.opt_tf32_scalar = ce_env_flag("TILEC_TF32_SCALAR_FRAGMENTS");
    E.opt_tf32_mixed = !ce_env_flag("TILEC_TF32_NO_MIXED");
    E.opt_no_xor8 = ce_env_flag("TILEC_NO_XOR8");
    E.opt_no_staged_kperm = ce_env_flag("TILEC_NO_STAGED_KPERM");
    E.opt_tf32_no_transpose = ce_env_flag("TILEC_TF32_NO_TRANSPOSE");
    E.opt_no_wgmma_transpose = mma_sync_tf32_kn || ce_env_flag("TILEC_NO_WGMMA_TRANSPOSE");
    E.opt_wgmma_reg_a_no_transpose = ce_env_flag("TILEC_WGMMA_REG_A_NO_TRANSPOSE");
    E.opt_wgmma_no_kperm_copy = ce_env_flag("TILEC_WGMMA_NO_KPERM_COPY");
    E.opt_no_mixed32 = no_mixed32 || ce_env_flag("TILEC_NO_MIXED32");
    E.opt_no_remat_at_use = ce_env_flag("TILEC_NO_REMAT_AT_USE");
    E.opt_no_lanes_down = ce_env_flag("TILEC_NO_LANES_DOWN");
    E.opt_transpose_late = ce_env_flag("TILEC_TRANSPOSE_LATE");
    E.opt_no_transpose_in_place = ce_env_flag("TILEC_NO_TRANSPOSE_IN_PLACE");
    E.opt_loop_store_barrier = ce_env_flag("TILEC_LOOP_STORE_BARRIER");
    E.opt_no_access_base = ce_env_flag("TILEC_NO_ACCESS_BASE");
    E.opt_no_ldsm_readback = ce_env_flag("TILEC_NO_LDSM_READBACK");
    E.opt_wgmma_nodefer = ce_env_flag("TILEC_WGMMA_NODEFER");
    E.opt_no_prefetch = ce_env_flag("TILEC_NO_PREFETCH");
    E.opt_tf32_truncate = ce_env_flag("TILEC_TF32_TRUNCATE");
    E.opt_tf32_round_at_read = ce_env_flag("TILEC_TF32_ROUND_AT_READ");
    E.opt_wgmma_noreg = ce_env_flag("TILEC_WGMMA_NOREG");
    E.opt_wgmma_nostage = ce_env_flag("TILEC_WGMMA_NOSTAGE");
    E.opt_no_tma = ce_env_flag("TILEC_NO_TMA");
    E.opt_tr_no_hoist = ce_env_flag("TILEC_TR_NO_HOIST");
    E.opt_ldsm_whole = ce_env_flag("TILEC_LDSM_WHOLE");
    E.opt_edge_unrolled = ce_env_flag("TILEC_EDGE_UNROLLED");
    E.opt_tma_round = !ce_env_flag("TILEC_NO_TMA_ROUND");
    /* mma.sync's swizzled operand buffers filled by TMA where the device has
     * it (an H100 with TILEC_WGMMA=0): the cp.async copies' issue took a
     * fifth of that kernel's stall samples, and TMA made it 5.6% faster at
     * 8192^3, 15% at 4096^3 (docs/performance.md, the thirteenth session);
     * TILEC_MMA_TMA=0: cp.async as before.  On sm_90a, where the products
     * that stay on mma.sync sit beside wgmma's, only with TILEC_MMA_TMA=1
     * (untimed there) */
    E.opt_mma_tma = ce_env_default("TILEC_MMA_TMA", !E.opt.target_sm90a) && (E.opt.target_sm90a || E.opt.target_tma);
    /* TILEC_STAGE_RELEASE=1: stages released by mbarrier, no block barrier
     * at a loop's top, where plan_release allows; opt-in: on an H100 the
     * bf16 mma.sync matmul ran 1% slower so (docs/performance.md, the
     * fourteenth session) */
    E.opt_stage_release = ce_env_flag("TILEC_STAGE_RELEASE");
    /* TILEC_NO_TMA_STORE=1: 16-bit tiles stored from registers as they lie
     * (for measurements; emit_cuda_store.c) */
    E.opt_no_tma_store = ce_env_flag("TILEC_NO_TMA_STORE");
    /* TILEC_TRANSPOSED_PRODUCTS=1: tf32 products with a B stored [K][N] computed
     * as their transpose on sm_90a (emit_cuda_rewrite.c, on a copy of the IR),
     * their A read into registers as it landed; opt-in: on an H100 it was no
     * faster than the transposition in place (docs/performance.md, "the
     * thirteenth session") */
    E.opt_transposed_products = !as_written && ce_env_flag("TILEC_TRANSPOSED_PRODUCTS");
    E.f = f = ce_rewrite_for_target(&E, f);
    E.stage_cap = *store_cap;
    E.vals = ARENA_ARRAY(&E.mem, Val, f->nvalues + 1);
    E.pipe_chain = ARENA_ARRAY(&E.mem, bool, f->nvalues + 1);
    E.mem_state = ARENA_ARRAY(&E.mem, unsigned char, f->nparams + 1);
    E.local_lay = ARENA_ARRAY(&E.mem, int, f->nlocals + 1);
    for (int i = 0; i < f->nlocals; i++) E.local_lay[i] = -1;
    for (int i = 0; i < f->nvalues; i++) {
        const Type *t = &f->values[i].type;
        if (type_numel(t) > ((int64_t)1 << 24)) {
            diag_error(d, f->values[i].def ? f->values[i].def->loc : f->loc,
                       "CUDA backend: a tile of %lld elements is too large", (long long)type_numel(t));
            arena_free(&E.mem);
            return -1;
        }
    }
    ce_async_analyse(&E);
    ce_tma_store_analyse(&E);
    ce_plan(&E);
    /* a local read as a register operand starts in the layout it is wanted in
     * (its stores were wanted in it too); emit_local_set still widens it if
     * a stored value is made otherwise */
    for (int i = 0; i < f->nlocals; i++) E.local_lay[i] = ce_plan_local_layout(&E, i, E.local_lay[i]);
    ce_wgmma_plan(&E);
    /* shared memory aligned for the hardware's swizzle where a buffer needs it
     * (the forms are final now: ce_wgmma_plan may have changed them) */
    for (int i = 0; i < E.f->nvalues; i++) E.swizzled |= ce_async_swizzle_aligned(&E, i);
    ce_plan_accumulators(&E);
    ce_async_plan_rounding(&E);
    emit_passes(&E);
    if (E.errors || (E.tr_unpiped && !E.opt_no_wgmma_transpose)) {
        bool again = !E.errors;
        free(E.body.p);
        arena_free(&E.mem);
        return again ? 1 : -1;
    }
    if (!ce_rewrite_held(&E)) {
        free(E.body.p);
        arena_free(&E.mem);
        return 3;
    }
    /* (the blocks per SM the kernel could run without them: the shared
     * memory's, the occupancy asked for, the threads') */
    int asked = E.opt.num_warps ? 0 : f->occupancy;
    if (E.opt.max_occupancy > 0 && (asked <= 0 || asked > E.opt.max_occupancy)) asked = E.opt.max_occupancy;
    int could = 2048 / E.threads, below = smem_below_stage(&E);
    if (below > 0 && ce_smem_blocks(below) < could) could = ce_smem_blocks(below);
    if (asked > 0 && asked < could) could = asked;
    if (E.stage_bytes && ce_smem_blocks(kernel_smem(&E)) < could) {
        *store_cap = E.stage_stride - 1;   /* (strictly lower each time: this ends) */
        free(E.body.p);
        arena_free(&E.mem);
        return 2;
    }
    Buf o = {0}, name = {0};
    ce_buf_printf(&name, "tk_");
    sanitize(&name, f->name);
    ce_buf_printf(&o, "// generated by tilec %s from kernel %s", TILEC_VERSION, f->name);
    for (int i = 0; i < f->nconsts; i++) {
        const IrConst *c = &f->consts[i];
        if (c->is_dtype) ce_buf_printf(&o, " %s=%s", c->name, dtype_name(c->type.dtype));
        else if (dtype_is_float(c->type.dtype)) ce_buf_printf(&o, " %s=%g", c->name, c->v.f);
        else ce_buf_printf(&o, " %s=%lld", c->name, (long long)c->v.i);
    }
    int scratch = scratch_bytes(&E);
    int smem = kernel_smem(&E);
    ce_buf_printf(&o, "\n// %d threads, %d bytes of shared memory\n", E.threads, smem);
    /* tf32 rounded in place in shared memory (emit_cuda_async.c's emit_round)
     * by cvt.rn where the kernel runs one block per SM, in integer
     * instructions where it runs two or more: the f32 scan, ssd_scan ms
     * (H200, 2026-12-04, third session; cvt.rna, ties away, before): at (8,
     * 4096, 80, 64, 128), 200 KB, cvt.rn 1.77, integer 1.96, cvt.rna 1.91;
     * at dstate 64 with 8 groups, 84 KB, 1.36, 1.235, 1.22; but at dstate 32
     * (32-token steps, 52 KB, little rounded a step) 1.082, 1.103, 1.096:
     * by blocks alone the rule costs 2% there (docs/performance.md). */
    if (E.rounds_in_smem && ce_smem_blocks(smem) >= 2) ce_buf_printf(&o, "#define TILE_TF32_ROUND_INT 1\n");
    ce_buf_printf(&o, "#include \"%s\"\n\n", CUDA_DEVICE_HEADER_NAME);
    int occ = E.opt.num_warps ? 0 : f->occupancy;
    /* Shared memory that leaves room for at most two blocks per SM (Hopper:
     * 228 KiB, 1 KiB reserved per block) caps occupancy anyway: saying so lets
     * ptxas use the registers it wants instead of spilling to reach a third
     * block that could not run. */
    const int smem_blocks = ce_smem_blocks(smem);
    if (occ <= 0 && smem > 0 && smem_blocks <= 2) occ = smem_blocks > 0 ? smem_blocks : 1;
    /* ... but never fewer registers than a wgmma's accumulator needs, with
     * room for addresses and descriptors (else ptxas refuses the instruction,
     * or serializes the products and spills) */
    if (E.opt.max_occupancy > 0 && (occ <= 0 || occ > E.opt.max_occupancy)) occ = E.opt.max_occupancy;
    const int wgmma_blocks = E.wgmma_acc_regs ? 65536 / (E.threads * (E.wgmma_acc_regs + 48)) : 0;
    if (E.wgmma_acc_regs && occ > wgmma_blocks) occ = wgmma_blocks > 0 ? wgmma_blocks : 1;
    if (occ > 0) ce_buf_printf(&o, "extern \"C\" __global__ void __launch_bounds__(%d, %d) %s(", E.threads, occ, name.p);
    else ce_buf_printf(&o, "extern \"C\" __global__ void __launch_bounds__(%d) %s(", E.threads, name.p);
    emit_params(&E, &o);
    ce_buf_printf(&o, ")\n{\n");
    /* (TMA writes shared memory at 128-byte aligned addresses at least) */
    ce_buf_printf(&o, "    extern __shared__ __align__(%d) unsigned char tile_smem[];\n",
                  E.swizzled || E.stage_bytes ? SWIZZLE_ALIGN : E.ntmaps ? 128 : 16);
    ce_buf_printf(&o, "    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n");
    ce_buf_printf(&o, "    (void)lane; (void)warp; (void)tile_smem;\n");
    if (E.async_peak) ce_buf_printf(&o, "    unsigned char *const tile_async = tile_smem + %d;\n", scratch);
    if (E.stage_bytes) ce_buf_printf(&o, "    unsigned char *const tile_stage = tile_smem + %d;\n", stage_offset(&E));
    emit_prologue(&E, &o);
    for (int i = 0; i < f->nlocals; i++) {
        int ll = E.local_lay[i];
        if (ll < 0) continue;
        int n = lay_nregs(&E.lays[ll]);
        if (n == 1) ce_buf_printf(&o, "    %s l%d = 0;\n", ce_ctype(f->locals[i].type.dtype), i);
        else ce_buf_printf(&o, "    %s l%d[%d];\n", ce_ctype(f->locals[i].type.dtype), i, n);
    }
    ce_buf_printf(&o, "%s}\n", E.body.p ? E.body.p : "");
    if (E.opt.host_entry) emit_host_entry(&E, &o, name.p);
    free(E.body.p);
    res->source = o.p;
    res->name = name.p;
    res->threads = E.threads;
    res->smem_bytes = smem;
    res->sm90a = E.used_wgmma;
    res->occupancy = occ > 0 ? occ : 0;
    res->ntmaps = E.ntmaps;
    memcpy(res->tmaps, E.tmaps, sizeof E.tmaps);
    *mixed32 = ce_async_mixed32_used(&E);
    arena_free(&E.mem);
    return 0;
}

void cuda_code_free(CudaKernelCode *c) {
    if (!c) return;
    free(c->source);
    free(c->name);
    c->source = c->name = NULL;
}
