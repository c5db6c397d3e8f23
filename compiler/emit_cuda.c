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
 *   - `mma` with f16 / bf16 / tf32 operands stages them in padded shared
 *     memory and runs mma.sync (m16n8k16 with ldmatrix, m16n8k8 tf32); other
 *     dtypes run exact FMAs in k order (bit-exact with the interpreter);
 *   - locals (`var`) get one layout for life, found by running the emitter
 *     in analysis mode until the layouts of locals stop changing;
 *   - scalar code is uniform over the block, so control flow is plain C and
 *     __syncthreads() may sit anywhere.
 * Next steps: software pipelining of the loads that feed mma (cp.async into
 * a second buffer), swizzled instead of padded staging, and wgmma on sm_90a.
 */
#include "emit_cuda.h"
#include "layout.h"
#include "scalar.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- text buffers --------------------------------------------------------- */

typedef struct Buf {
    char *p;
    size_t len, cap;
} Buf;

static void buf_vprintf(Buf *b, const char *fmt, va_list ap) {
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

static void buf_printf(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void buf_printf(Buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(b, fmt, ap);
    va_end(ap);
}

/* ---- the emitter ------------------------------------------------------------ */

typedef struct Val {
    int lay;              /* index in E->lays, -1 before definition */
    const char *name;     /* C name of its registers */
} Val;

typedef struct Emitter {
    const IrFunc *f;
    Diag *diag;
    CudaEmitOptions opt;
    Arena mem;            /* strings of this emission */
    Buf body;
    int indent;
    int warpbits, threads;
    Layout *lays;
    int nlays, caplays;
    bool *lay_used;       /* thread-part variables needed in the prologue */
    Val *vals;
    int *local_lay;       /* per local: layout index, -1 = not known yet */
    bool local_changed;
    bool analysis;        /* layouts only: the text is thrown away */
    int smem_bytes;
    int ntmp;
    int last_line;
    int errors;
    /* loads of the innermost pipelined loop (see emit_prefetch) */
    const IrOp *pf_loop;
    const IrOp *pf_loads[8];
    const char *pf_bufs[8];
    int pf_lays[8];
    int npf;
    bool *pf_chain;           /* per value: recomputed for the next iteration */
    const char *pf_next_iv;   /* C expression of the next iteration's variable */
} Emitter;

static void out(Emitter *E, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out(Emitter *E, const char *fmt, ...) {
    for (int i = 0; i < E->indent; i++) buf_printf(&E->body, "    ");
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(&E->body, fmt, ap);
    va_end(ap);
    buf_printf(&E->body, "\n");
}

static const char *fmt_str(Emitter *E, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static const char *fmt_str(Emitter *E, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char buf[1024];
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return arena_strdup(&E->mem, buf);
}

static const char *fresh(Emitter *E, const char *prefix) { return fmt_str(E, "%s%d", prefix, E->ntmp++); }

static void fail(Emitter *E, const IrOp *op, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(Emitter *E, const IrOp *op, const char *fmt, ...) {
    E->errors++;
    if (E->analysis && E->errors > 1) return;
    va_list ap;
    va_start(ap, fmt);
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    diag_error(E->diag, op ? op->loc : E->f->loc, "CUDA backend: %s", msg);
}

static void need_smem(Emitter *E, int64_t bytes) {
    if (bytes > E->smem_bytes) E->smem_bytes = (int)bytes;
}

/* ---- dtypes in C ------------------------------------------------------------ */

/* Register type: 16-bit floats travel as their bits. */
static const char *ctype(DType t) {
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
static const char *mtype(DType t) { return t == DT_BOOL ? "unsigned char" : ctype(t); }
static int regsize(DType t) { return t == DT_BOOL ? 1 : dtype_size(t); }
static bool is_half(DType t) { return t == DT_F16 || t == DT_BF16; }
/* The C type arithmetic happens in. */
static const char *comptype(DType t) {
    if (is_half(t) || t == DT_TF32) return "float";
    return ctype(t);
}
/* Register value as a computation value (16-bit floats widened). */
static const char *widen(Emitter *E, DType t, const char *x) {
    if (t == DT_BF16) return fmt_str(E, "tile_bf16_f32(%s)", x);
    if (t == DT_F16) return fmt_str(E, "tile_f16_f32(%s)", x);
    return x;
}
/* A computation value back to the register form (rounded to t). */
static const char *narrow(Emitter *E, DType t, const char *x) {
    if (t == DT_BF16) return fmt_str(E, "tile_f32_bf16(%s)", x);
    if (t == DT_F16) return fmt_str(E, "tile_f32_f16(%s)", x);
    if (t == DT_TF32) return fmt_str(E, "tile_tf32(%s)", x);
    return x;
}
static const char *unsigned_of(DType t) {
    return dtype_size(t) == 8 ? "unsigned long long" : "unsigned";
}

/* A literal of dtype t in register form. */
static const char *lit_str(Emitter *E, DType t, Scalar v) {
    switch (t) {
    case DT_BOOL: return v.i ? "true" : "false";
    case DT_I8: case DT_I16: case DT_I32: return fmt_str(E, "(%s)%lld", ctype(t), (long long)v.i);
    case DT_I64:
        if (v.i == INT64_MIN) return "(long long)0x8000000000000000ULL";
        return fmt_str(E, "%lldLL", (long long)v.i);
    case DT_U8: case DT_U16: case DT_U32: return fmt_str(E, "(%s)%lluu", ctype(t), (unsigned long long)v.u);
    case DT_U64: return fmt_str(E, "%lluULL", (unsigned long long)v.u);
    case DT_F16: return fmt_str(E, "(unsigned short)0x%04x", f64_to_f16_bits(v.f));
    case DT_BF16: return fmt_str(E, "(unsigned short)0x%04x", f32_to_bf16_bits((float)v.f));
    case DT_F32: case DT_TF32: {
        float x = (float)v.f;
        uint32_t bits;
        memcpy(&bits, &x, 4);
        if (isnan(x) || isinf(x)) return fmt_str(E, "__uint_as_float(0x%08xu)", bits);
        const char *s = fmt_str(E, "%.9g", x);
        return fmt_str(E, "%s%sf", s, strpbrk(s, ".e") ? "" : ".0");
    }
    case DT_F64: {
        uint64_t bits;
        memcpy(&bits, &v.f, 8);
        if (isnan(v.f) || isinf(v.f)) return fmt_str(E, "__longlong_as_double(0x%016llxLL)", (unsigned long long)bits);
        const char *s = fmt_str(E, "%.17g", v.f);
        return fmt_str(E, "%s%s", s, strpbrk(s, ".e") ? "" : ".0");
    }
    default: return "0";
    }
}

/* ---- element-wise expressions --------------------------------------------- */

static const char *fmath(Emitter *E, DType t, const char *name32, const char *name64, const char *x) {
    return fmt_str(E, "%s(%s)", t == DT_F64 ? name64 : name32, x);
}

static const char *ew_unary(Emitter *E, OpId op, DType t, const char *a) {
    if (op == OP_NOT) return fmt_str(E, "(!%s)", a);
    if (op == OP_ISNAN) {
        if (!dtype_is_float(t)) return "false";
        const char *w = widen(E, t, a);
        return fmt_str(E, "(%s != %s)", w, w);
    }
    if (dtype_is_float(t)) {
        const char *x = widen(E, t, a), *r;
        switch (op) {
        case OP_NEG: r = fmt_str(E, "(-%s)", x); break;
        case OP_ABS: r = fmath(E, t, "fabsf", "fabs", x); break;
        case OP_EXP: r = fmath(E, t, "expf", "exp", x); break;
        case OP_EXP2: r = fmath(E, t, "tile_exp2f", "exp2", x); break;
        case OP_LOG: r = fmath(E, t, "logf", "log", x); break;
        case OP_LOG2: r = fmath(E, t, "log2f", "log2", x); break;
        case OP_SQRT: r = fmath(E, t, "sqrtf", "sqrt", x); break;
        case OP_RSQRT: r = t == DT_F64 ? fmt_str(E, "(1.0 / sqrt(%s))", x) : fmt_str(E, "rsqrtf(%s)", x); break;
        case OP_FLOOR: r = fmath(E, t, "floorf", "floor", x); break;
        case OP_CEIL: r = fmath(E, t, "ceilf", "ceil", x); break;
        case OP_SIN: r = fmath(E, t, "sinf", "sin", x); break;
        case OP_COS: r = fmath(E, t, "cosf", "cos", x); break;
        case OP_TANH: r = fmath(E, t, "tanhf", "tanh", x); break;
        case OP_SIGMOID: r = fmath(E, t, "tile_sigmoidf", "tile_sigmoid", x); break;
        default: return a;
        }
        return narrow(E, t, r);
    }
    const char *T = ctype(t);
    switch (op) {
    case OP_NEG: return fmt_str(E, "tile_neg<%s>(%s)", T, a);
    case OP_ABS:
        if (dtype_is_unsigned(t) || t == DT_BOOL) return a;
        return fmt_str(E, "(%s < 0 ? tile_neg<%s>(%s) : %s)", a, T, a, a);
    case OP_BITNOT: return t == DT_BOOL ? fmt_str(E, "(!%s)", a) : fmt_str(E, "(%s)(~%s)", T, a);
    default: return a;
    }
}

static const char *ew_binary(Emitter *E, OpId op, DType t, const char *a, const char *b) {
    const char *x = widen(E, t, a), *y = widen(E, t, b);
    switch (op) {
    case OP_LT: return fmt_str(E, "(%s < %s)", x, y);
    case OP_LE: return fmt_str(E, "(%s <= %s)", x, y);
    case OP_GT: return fmt_str(E, "(%s > %s)", x, y);
    case OP_GE: return fmt_str(E, "(%s >= %s)", x, y);
    case OP_EQ: return fmt_str(E, "(%s == %s)", x, y);
    case OP_NE: return fmt_str(E, "(%s != %s)", x, y);
    case OP_LAND: return fmt_str(E, "(%s && %s)", x, y);
    case OP_LOR: return fmt_str(E, "(%s || %s)", x, y);
    default: break;
    }
    if (dtype_is_float(t)) {
        bool d = t == DT_F64;
        const char *r;
        switch (op) {
        case OP_ADD: r = fmt_str(E, "(%s + %s)", x, y); break;
        case OP_SUB: r = fmt_str(E, "(%s - %s)", x, y); break;
        case OP_MUL: r = fmt_str(E, "(%s * %s)", x, y); break;
        case OP_DIV: r = fmt_str(E, "(%s / %s)", x, y); break;
        case OP_MOD: r = fmt_str(E, "%s(%s, %s)", d ? "fmod" : "fmodf", x, y); break;
        case OP_MAXIMUM: r = fmt_str(E, "%s(%s, %s)", d ? "tile_fmax" : "tile_fmaxf", x, y); break;
        case OP_MINIMUM: r = fmt_str(E, "%s(%s, %s)", d ? "tile_fmin" : "tile_fminf", x, y); break;
        case OP_POW: r = fmt_str(E, "%s(%s, %s)", d ? "pow" : "powf", x, y); break;
        default: r = x; break;
        }
        return narrow(E, t, r);
    }
    const char *T = ctype(t);
    if (t == DT_BOOL) {
        switch (op) {
        case OP_BITAND: return fmt_str(E, "(%s && %s)", a, b);
        case OP_BITOR: return fmt_str(E, "(%s || %s)", a, b);
        case OP_BITXOR: return fmt_str(E, "(%s != %s)", a, b);
        case OP_MAXIMUM: return fmt_str(E, "(%s || %s)", a, b);
        case OP_MINIMUM: return fmt_str(E, "(%s && %s)", a, b);
        default: T = "int"; break;
        }
    }
    const char *U = unsigned_of(t);
    switch (op) {
    case OP_ADD: return fmt_str(E, "(%s)((%s)%s + (%s)%s)", T, U, a, U, b);
    case OP_SUB: return fmt_str(E, "(%s)((%s)%s - (%s)%s)", T, U, a, U, b);
    case OP_MUL: return fmt_str(E, "(%s)((%s)%s * (%s)%s)", T, U, a, U, b);
    case OP_DIV: return fmt_str(E, "tile_idiv<%s>(%s, %s)", T, a, b);
    case OP_MOD: return fmt_str(E, "tile_imod<%s>(%s, %s)", T, a, b);
    case OP_CDIV: return fmt_str(E, "tile_icdiv<%s>(%s, %s)", T, a, b);
    case OP_MAXIMUM: return fmt_str(E, "(%s >= %s ? %s : %s)", a, b, a, b);
    case OP_MINIMUM: return fmt_str(E, "(%s <= %s ? %s : %s)", a, b, a, b);
    case OP_POW: return fmt_str(E, "tile_ipow<%s>(%s, %s)", T, a, b);
    case OP_BITAND: return fmt_str(E, "(%s)(%s & %s)", T, a, b);
    case OP_BITOR: return fmt_str(E, "(%s)(%s | %s)", T, a, b);
    case OP_BITXOR: return fmt_str(E, "(%s)(%s ^ %s)", T, a, b);
    case OP_SHL: return fmt_str(E, "tile_shl<%s>(%s, %s)", T, a, b);
    case OP_SHR: return fmt_str(E, "tile_shr<%s>(%s, %s)", T, a, b);
    default: return a;
    }
}

/* astype: scalar_convert's rules. */
static const char *ew_cast(Emitter *E, DType from, DType to, const char *a) {
    if (from == to) return a;
    if (to == DT_BOOL) return fmt_str(E, "(%s != 0)", widen(E, from, a));
    if (dtype_is_float(to)) {
        if (from == DT_BOOL || dtype_is_int(from)) {
            if (to == DT_F16) return fmt_str(E, "tile_f64_f16((double)%s)", a);
            if (to == DT_F64) return fmt_str(E, "(double)%s", a);
            return narrow(E, to, fmt_str(E, "(float)%s", a));
        }
        const char *x = widen(E, from, a);
        if (to == DT_F64) return fmt_str(E, "(double)%s", x);
        if (from == DT_F64) {
            if (to == DT_F16) return fmt_str(E, "tile_f64_f16(%s)", x);
            if (to == DT_BF16) return fmt_str(E, "tile_f64_bf16(%s)", x);
            return narrow(E, to, fmt_str(E, "(float)%s", x));
        }
        if (to == DT_F32) return x;
        return narrow(E, to, x);
    }
    if (dtype_is_float(from)) {
        int bits = dtype_bits(to);
        const char *T = ctype(to);
        double lo, hi;
        const char *tmin, *tmax;
        if (dtype_is_unsigned(to)) {
            lo = 0;
            hi = ldexp(1.0, bits);
            tmin = "0";
            tmax = bits == 64 ? "0xffffffffffffffffULL" : fmt_str(E, "%lluULL", (1ULL << bits) - 1);
        } else {
            lo = -ldexp(1.0, bits - 1);
            hi = ldexp(1.0, bits - 1);
            tmin = bits == 64 ? "(long long)0x8000000000000000ULL" : fmt_str(E, "%lld", -(1LL << (bits - 1)));
            tmax = bits == 64 ? "0x7fffffffffffffffLL" : fmt_str(E, "%lld", (1LL << (bits - 1)) - 1);
        }
        return fmt_str(E, "tile_f2i<%s>((double)%s, %.17g, %.17g, (%s)%s, (%s)%s)", T,
                       widen(E, from, a), lo, hi, T, tmin, T, tmax);
    }
    return fmt_str(E, "(%s)%s", ctype(to), a);   /* integer -> integer: wrap */
}

/* ---- layouts in the table ---------------------------------------------------- */

static int lay_add(Emitter *E, const Layout *l) {
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

static const Layout *L(Emitter *E, int id) { return &E->lays[id]; }
static int nregs(Emitter *E, int id) { return lay_nregs(L(E, id)); }

static int blocked(Emitter *E, const Type *t, int fastest) {
    Layout l = lay_blocked(t, fastest, E->warpbits, 8);
    return lay_add(E, &l);
}

/* Register r of a value named `name` in layout `lay`. */
static const char *reg(Emitter *E, const char *name, int lay, int r) {
    if (nregs(E, lay) == 1) return name;
    return fmt_str(E, "%s[%d]", name, r);
}
static void decl(Emitter *E, DType t, const char *name, int lay) {
    int n = nregs(E, lay);
    if (n == 1) out(E, "%s %s;", ctype(t), name);
    else out(E, "%s %s[%d];", ctype(t), name, n);
}

/* Per-thread part of coordinate d (or of the linear index when d < 0) of
 * layout `lay`: a variable defined in the prologue. */
static const char *thread_coord(Emitter *E, int lay, int d) {
    E->lay_used[lay] = true;
    return d < 0 ? fmt_str(E, "L%d_e", lay) : fmt_str(E, "L%d_%d", lay, d);
}
/* Constant part of coordinate d of register r. */
static int64_t reg_coord(Emitter *E, int lay, int r, int d) {
    const Layout *l = L(E, lay);
    int64_t e = lay_reg_elem(l, r), c = 0;
    for (int j = 0; j < lay_log2(l->shape[d]); j++) {
        int p = lay_pos(l->rank, l->shape, d, j);
        if ((e >> p) & 1) c |= (int64_t)1 << j;
    }
    return c;
}
static const char *coord(Emitter *E, int lay, int r, int d) {
    const char *t = thread_coord(E, lay, d);
    int64_t c = reg_coord(E, lay, r, d);
    return c ? fmt_str(E, "(%s + %lld)", t, (long long)c) : t;
}
/* Expression true in the thread that owns the layout's elements. */
static const char *owner(Emitter *E, int lay) {
    const Layout *l = L(E, lay);
    unsigned lm = ~lay_lane_mask(l) & 31u, wm = ~lay_warp_mask(l) & ((1u << E->warpbits) - 1);
    if (!lm && !wm) return NULL;
    return fmt_str(E, "((lane & %uu) | (warp & %uu)) == 0", lm, wm);
}
/* Expression of the bits of lane / warp selected by mask, packed together. */
static const char *pext_expr(Emitter *E, const char *var, unsigned mask) {
    if (!mask) return "0";
    Buf b = {0};
    int k = 0;
    for (int i = 0; i < 32; i++) {
        if (!((mask >> i) & 1)) continue;
        buf_printf(&b, "%s(((%s >> %d) & 1) << %d)", k ? " | " : "", var, i, k);
        k++;
    }
    const char *s = fmt_str(E, "(%s)", b.p);
    free(b.p);
    return s;
}

/* ---- values ----------------------------------------------------------------- */

static Val *val(Emitter *E, int id) { return &E->vals[id]; }
static const Type *vtype(Emitter *E, int id) { return ir_type(E->f, id); }
static DType vdt(Emitter *E, int id) { return ir_type(E->f, id)->dtype; }
static const char *vreg(Emitter *E, int id, int r) { return reg(E, val(E, id)->name, val(E, id)->lay, r); }

static void set_val(Emitter *E, int id, const char *name, int lay) {
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
static const char *convert(Emitter *E, const char *name, int x, DType t, int r) {
    if (x == r) return name;
    if (lay_compatible(L(E, x), L(E, r))) {
        const char *res = fresh(E, "c");
        decl(E, t, res, r);
        for (int i = 0; i < nregs(E, r); i++)
            out(E, "%s = %s;", reg(E, res, r, i), reg(E, name, x, lay_reg_map(L(E, x), L(E, r), i)));
        return res;
    }
    return convert_smem(E, name, x, t, r);
}

/* Makes value `id` full (no broadcast bits): converts to blocked if needed. */
static void make_full(Emitter *E, int id) {
    Val *v = val(E, id);
    if (lay_full(L(E, v->lay))) return;
    int b = blocked(E, vtype(E, id), -1);
    v->name = convert(E, v->name, v->lay, vdt(E, id), b);
    v->lay = b;
}

/* The layout every operand can be read in: the richest operand's if all are
 * compatible with it, else blocked (and the others get converted). */
static int common_layout(Emitter *E, const int *ids, int n, const Type *t, bool need_full) {
    int best = -1;
    for (int i = 0; i < n; i++) {
        int l = val(E, ids[i])->lay;
        if (best < 0 || lay_mapped_bits(L(E, l)) > lay_mapped_bits(L(E, best))) best = l;
    }
    if (best < 0 || L(E, best)->nbits != lay_log2(type_numel(t))) return blocked(E, t, -1);
    bool ok = !need_full || lay_full(L(E, best));
    for (int i = 0; i < n && ok; i++) ok = lay_compatible(L(E, val(E, ids[i])->lay), L(E, best));
    if (ok) return best;
    int b = lay_full(L(E, best)) ? best : blocked(E, t, -1);
    for (int i = 0; i < n; i++) {
        Val *v = val(E, ids[i]);
        if (!lay_compatible(L(E, v->lay), L(E, b))) {
            v->name = convert(E, v->name, v->lay, vdt(E, ids[i]), b);
            v->lay = b;
        }
    }
    return b;
}

/* Register of operand `id` for register r of layout `lay` (compatible). */
static const char *opreg(Emitter *E, int id, int lay, int r) {
    Val *v = val(E, id);
    return reg(E, v->name, v->lay, lay_reg_map(L(E, v->lay), L(E, lay), r));
}

/* Relabel a value's layout onto another shape (same registers). */
static int relabel(Emitter *E, const Layout *src, int rank, const int *shape, const int *src_bit_of /* per new bit: src bit or -1 */) {
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
    return lay_add(E, &l);
}

/* forward */
static void emit_block(Emitter *E, const IrBlock *blk);
static void emit_op(Emitter *E, const IrOp *op);

/* ---- kernel parameters ------------------------------------------------------ */

static const IrParam *param(Emitter *E, int i) { return &E->f->params[i]; }
static unsigned array_flags(Emitter *E, int i) {
    return E->opt.array_flags ? E->opt.array_flags[i] : 0;
}
static const char *off_type(Emitter *E, int arr) {
    return (array_flags(E, arr) & CUDA_ARRAY_OFF32) ? "int" : "long long";
}

/* ---- memory ----------------------------------------------------------------- */

/* Padding value of a load / gather in register form (integers: 0). */
static const char *pad_value(Emitter *E, DType t, int pad) {
    Scalar s;
    s.u = 0;
    if (!dtype_is_float(t)) return lit_str(E, t, s);
    switch (pad) {
    case PAD_NAN: s.f = NAN; break;
    case PAD_POS_INF: s.f = INFINITY; break;
    case PAD_NEG_INF: s.f = -INFINITY; break;
    default: s.f = 0; break;
    }
    return lit_str(E, t, s);
}

/* Memory element -> register, register -> memory element. */
static const char *from_mem(Emitter *E, DType t, const char *x) {
    return t == DT_BOOL ? fmt_str(E, "(%s != 0)", x) : x;
}
static const char *to_mem(Emitter *E, DType t, const char *x) {
    return t == DT_BOOL ? fmt_str(E, "(unsigned char)%s", x) : x;
}

/* The view axis of a load / store that is the array's last (contiguous) axis. */
static int contiguous_view_axis(const IrOp *op, int rank) {
    for (int d = 0; d < rank; d++) {
        int a = op->nints == rank ? op->ints[d] : d;
        if (a == rank - 1) return d;
    }
    return rank - 1;
}

/* How many consecutive registers of `lay` run along view axis d from
 * register 0 (a vector), capped at max. */
static int vector_width(Emitter *E, int lay, int d, int max) {
    const Layout *l = L(E, lay);
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
} MemView;

static void memview_init(Emitter *E, MemView *mv, const IrOp *op, int lay, int arr, const Type *t) {
    mv->arr = arr;
    mv->rank = t->rank;
    mv->lay = lay;
    for (int d = 0; d < t->rank; d++) {
        mv->axis[d] = op->nints == t->rank ? op->ints[d] : d;
        const char *b = fresh(E, "b");
        out(E, "const long long %s = (long long)%s * %d + %s;", b, vreg(E, op->args[d], 0), t->shape[d],
            thread_coord(E, lay, d));
        mv->base[d] = b;
    }
}

static void memview_elem(Emitter *E, const MemView *mv, int r, const char **inb, const char **off) {
    Buf ib = {0}, ob = {0};
    buf_printf(&ib, "true");
    buf_printf(&ob, "(%s)0", off_type(E, mv->arr));
    for (int d = 0; d < mv->rank; d++) {
        int a = mv->axis[d];
        long long c = (long long)reg_coord(E, mv->lay, r, d);
        const char *i = c ? fmt_str(E, "(%s + %lld)", mv->base[d], c) : mv->base[d];
        buf_printf(&ib, " && (unsigned long long)%s < (unsigned long long)p%d_n%d", i, mv->arr, a);
        buf_printf(&ob, " + (%s)%s * (%s)p%d_s%d", off_type(E, mv->arr), i, off_type(E, mv->arr), mv->arr, a);
    }
    *inb = fmt_str(E, "%s", ib.p);
    *off = fmt_str(E, "%s", ob.p);
    free(ib.p);
    free(ob.p);
}

/* Vector access of n elements of size s at p (16-byte chunks of 32-bit words). */
static void vec_load(Emitter *E, DType t, const char *ptr, const char *name, int lay, int r0, int n) {
    int s = regsize(t), words = n * s / 4;
    const char *vt = words == 4 ? "uint4" : words == 2 ? "uint2" : "unsigned";
    const char *q = fresh(E, "q");
    out(E, "%s %s = *(const %s *)(%s);", vt, q, vt, ptr);
    for (int i = 0; i < n; i++) {
        int w = i * s / 4, sh = (i * s % 4) * 8;
        const char *word = words == 1 ? q : fmt_str(E, "%s.%c", q, "xyzw"[w]);
        const char *x;
        if (t == DT_F32 || t == DT_TF32) x = fmt_str(E, "__uint_as_float(%s)", word);
        else if (s == 4) x = fmt_str(E, "(%s)%s", ctype(t), word);
        else x = fmt_str(E, "(%s)(%s >> %d)", ctype(t), word, sh);
        out(E, "%s = %s;", reg(E, name, lay, r0 + i), x);
    }
}

static void vec_store(Emitter *E, DType t, const char *ptr, const char *name, int lay, int r0, int n) {
    int s = regsize(t), words = n * s / 4;
    const char *vt = words == 4 ? "uint4" : words == 2 ? "uint2" : "unsigned";
    Buf b = {0};
    for (int w = 0; w < words; w++) {
        buf_printf(&b, "%s", w ? ", " : "");
        for (int k = 0; k < 4 / s; k++) {
            const char *x = reg(E, name, lay, r0 + w * 4 / s + k);
            if (t == DT_F32 || t == DT_TF32) buf_printf(&b, "__float_as_uint(%s)", x);
            else if (s == 4) buf_printf(&b, "(unsigned)%s", x);
            else buf_printf(&b, "%s((unsigned)(unsigned short)%s << %d)", k ? " | " : "", x, k * 16);
        }
    }
    if (words == 1) out(E, "*(%s *)(%s) = %s;", vt, ptr, b.p);
    else out(E, "*(%s *)(%s) = make_%s(%s);", vt, ptr, vt, b.p);
    free(b.p);
}

static bool can_vectorise(Emitter *E, int arr, DType t) {
    return (array_flags(E, arr) & CUDA_ARRAY_VEC16) && (regsize(t) == 2 || regsize(t) == 4);
}

static void emit_load(Emitter *E, const IrOp *op) {
    const Type *t = vtype(E, op->result);
    DType dt = t->dtype;
    int arr = op->array;
    int fast = contiguous_view_axis(op, t->rank);
    int lay = blocked(E, t, fast);
    const char *name = fresh(E, "v");
    set_val(E, op->result, name, lay);
    decl(E, dt, name, lay);
    out(E, "{");
    E->indent++;
    MemView mv;
    memview_init(E, &mv, op, lay, arr, t);
    int V = 1;
    if (can_vectorise(E, arr, dt) && mv.axis[fast] == t->rank - 1)
        V = vector_width(E, lay, fast, 16 / regsize(dt));
    const char *pad = pad_value(E, dt, op->flag);
    for (int r = 0; r < nregs(E, lay); r += V) {
        const char *inb, *off;
        memview_elem(E, &mv, r, &inb, &off);
        if (V > 1) {
            const char *inb2, *off2;
            memview_elem(E, &mv, r + V - 1, &inb2, &off2);
            out(E, "if ((%s) && (%s)) {", inb, inb2);
            E->indent++;
            vec_load(E, dt, fmt_str(E, "p%d + (%s)", arr, off), name, lay, r, V);
            E->indent--;
            out(E, "} else {");
            E->indent++;
        }
        for (int i = 0; i < V; i++) {
            if (i) memview_elem(E, &mv, r + i, &inb, &off);
            out(E, "%s = (%s) ? %s : %s;", reg(E, name, lay, r + i), inb,
                from_mem(E, dt, fmt_str(E, "p%d[%s]", arr, off)), pad);
        }
        if (V > 1) E->indent--, out(E, "}");
    }
    E->indent--;
    out(E, "}");
}

static void emit_store(Emitter *E, const IrOp *op) {
    int rank = op->nargs - 1, vid = op->args[rank];
    const Type *t = vtype(E, vid);
    DType dt = t->dtype;
    int arr = op->array;
    if (t->rank != rank) { fail(E, op, "store of a %d-d tile into a %d-d array", t->rank, rank); return; }
    make_full(E, vid);
    Val *v = val(E, vid);
    int lay = v->lay;
    int fast = contiguous_view_axis(op, rank);
    out(E, "{");
    E->indent++;
    MemView mv;
    memview_init(E, &mv, op, lay, arr, t);
    const char *own = owner(E, lay);
    if (own) out(E, "if (%s) {", own), E->indent++;
    int V = 1;
    if (can_vectorise(E, arr, dt) && mv.axis[fast] == rank - 1)
        V = vector_width(E, lay, fast, 16 / regsize(dt));
    for (int r = 0; r < nregs(E, lay); r += V) {
        const char *inb, *off;
        memview_elem(E, &mv, r, &inb, &off);
        if (V > 1) {
            const char *inb2, *off2;
            memview_elem(E, &mv, r + V - 1, &inb2, &off2);
            out(E, "if ((%s) && (%s)) {", inb, inb2);
            E->indent++;
            vec_store(E, dt, fmt_str(E, "p%d + (%s)", arr, off), v->name, lay, r, V);
            E->indent--;
            out(E, "} else {");
            E->indent++;
        }
        for (int i = 0; i < V; i++) {
            if (i) memview_elem(E, &mv, r + i, &inb, &off);
            out(E, "if (%s) p%d[%s] = %s;", inb, arr, off, to_mem(E, dt, reg(E, v->name, lay, r + i)));
        }
        if (V > 1) E->indent--, out(E, "}");
    }
    if (own) E->indent--, out(E, "}");
    E->indent--;
    out(E, "}");
}

/* gather / scatter / atomics: element indices given as tiles. */
static void emit_indexed(Emitter *E, const IrOp *op) {
    const IrParam *p = param(E, op->array);
    int rank = p->rank;
    bool gather = op->op == OP_GATHER;
    if (op->nargs != rank + !gather) { fail(E, op, "wrong number of indices"); return; }
    const Type *t = gather ? vtype(E, op->result) : vtype(E, op->args[rank]);
    DType dt = p->dtype;
    int lay = common_layout(E, op->args, op->nargs, t, !gather);
    const char *name = NULL;
    if (gather) {
        name = fresh(E, "v");
        set_val(E, op->result, name, lay);
        decl(E, dt, name, lay);
    }
    out(E, "{");
    E->indent++;
    const char *own = gather ? NULL : owner(E, lay);
    if (own) out(E, "if (%s) {", own), E->indent++;
    for (int r = 0; r < nregs(E, lay); r++) {
        Buf ib = {0}, ob = {0};
        buf_printf(&ib, "true");
        buf_printf(&ob, "0LL");
        for (int a = 0; a < rank; a++) {
            const char *ix = opreg(E, op->args[a], lay, r);
            buf_printf(&ib, " && (unsigned long long)(long long)%s < (unsigned long long)p%d_n%d", ix, op->array, a);
            buf_printf(&ob, " + (long long)%s * p%d_s%d", ix, op->array, a);
        }
        if (gather) {
            out(E, "%s = (%s) ? %s : %s;", reg(E, name, lay, r), ib.p,
                from_mem(E, dt, fmt_str(E, "p%d[%s]", op->array, ob.p)), pad_value(E, dt, op->flag));
        } else {
            const char *x = opreg(E, op->args[rank], lay, r);
            DType xt = vdt(E, op->args[rank]);
            if (xt != dt) x = ew_cast(E, xt, dt, x);
            const char *ptr = fmt_str(E, "(p%d + (%s))", op->array, ob.p);
            if (op->op == OP_SCATTER) {
                out(E, "if (%s) *%s = %s;", ib.p, ptr, to_mem(E, dt, x));
            } else {
                bool native = false;
                const char *fn = op->op == OP_ATOMIC_ADD ? "atomicAdd" : op->op == OP_ATOMIC_MAX ? "atomicMax" : "atomicMin";
                const char *cast = NULL;
                if (dt == DT_I32) cast = "int", native = true;
                else if (dt == DT_U32) cast = "unsigned", native = true;
                else if (dt == DT_U64) cast = "unsigned long long", native = true;
                else if (dt == DT_I64) cast = op->op == OP_ATOMIC_ADD ? "unsigned long long" : "long long", native = true;
                else if ((dt == DT_F32 || dt == DT_F64) && op->op == OP_ATOMIC_ADD) cast = ctype(dt), native = true;
                if (native) {
                    out(E, "if (%s) %s((%s *)%s, (%s)%s);", ib.p, fn, cast, ptr, cast, x);
                } else {
                    OpId f = op->op == OP_ATOMIC_ADD ? OP_ADD : op->op == OP_ATOMIC_MAX ? OP_MAXIMUM : OP_MINIMUM;
                    const char *xv = fresh(E, "x");
                    out(E, "if (%s) { const %s %s = %s; tile_atomic_rmw(%s, [&](%s o) { return (%s)%s; }); }",
                        ib.p, mtype(dt), xv, to_mem(E, dt, x), ptr, mtype(dt), mtype(dt),
                        to_mem(E, dt, ew_binary(E, f, dt, from_mem(E, dt, "o"), from_mem(E, dt, xv))));
                }
            }
        }
        free(ib.p);
        free(ob.p);
    }
    if (own) E->indent--, out(E, "}");
    E->indent--;
    out(E, "}");
}

/* ---- element-wise ------------------------------------------------------------ */

/* An operand of one element read against a bigger result: a broadcast. */
static void fit_operand(Emitter *E, int id, const Type *t) {
    Val *v = val(E, id);
    if (L(E, v->lay)->nbits == lay_log2(type_numel(t))) return;
    if (type_numel(vtype(E, id)) != 1) return;
    int none[LAY_MAX_BITS];
    for (int b = 0; b < LAY_MAX_BITS; b++) none[b] = -1;
    v->lay = relabel(E, L(E, v->lay), t->rank, t->shape, none);
}

static void emit_elementwise(Emitter *E, const IrOp *op) {
    const Type *t = vtype(E, op->result);
    DType rt = t->dtype;
    for (int i = 0; i < op->nargs; i++) fit_operand(E, op->args[i], t);
    int lay = common_layout(E, op->args, op->nargs, t, false);
    const char *name = fresh(E, "v");
    set_val(E, op->result, name, lay);
    decl(E, rt, name, lay);
    DType at = vdt(E, op->args[0]);
    for (int r = 0; r < nregs(E, lay); r++) {
        const char *a = opreg(E, op->args[0], lay, r), *x;
        if (op->op == OP_CAST) {
            x = ew_cast(E, at, rt, a);
        } else if (op->op == OP_WHERE) {
            const char *p = ew_cast(E, vdt(E, op->args[1]), rt, opreg(E, op->args[1], lay, r));
            const char *q = ew_cast(E, vdt(E, op->args[2]), rt, opreg(E, op->args[2], lay, r));
            x = fmt_str(E, "(%s ? %s : %s)", a, p, q);
        } else if (op->nargs == 1) {
            x = ew_unary(E, op->op, at, a);
            if (op->op != OP_ISNAN && op->op != OP_NOT) x = ew_cast(E, at, rt, x);
        } else {
            const char *b = ew_cast(E, vdt(E, op->args[1]), at, opreg(E, op->args[1], lay, r));
            x = ew_binary(E, op->op, at, a, b);
            bool logical = op->op >= OP_LT && op->op <= OP_LOR;
            if (!logical) x = ew_cast(E, at, rt, x);
        }
        out(E, "%s = %s;", reg(E, name, lay, r), x);
    }
}

/* ---- shape ops: relabelled bits ---------------------------------------------- */

static void emit_alias(Emitter *E, const IrOp *op, int lay) {
    int x = op->args[0];
    DType xt = vdt(E, x), rt = vdt(E, op->result);
    if (xt == rt) {
        set_val(E, op->result, val(E, x)->name, lay);
        return;
    }
    const char *name = fresh(E, "v");
    set_val(E, op->result, name, lay);
    decl(E, rt, name, lay);
    for (int r = 0; r < nregs(E, lay); r++)
        out(E, "%s = %s;", reg(E, name, lay, r), ew_cast(E, xt, rt, reg(E, val(E, x)->name, lay, r)));
}

static void emit_shape(Emitter *E, const IrOp *op) {
    const Type *t = vtype(E, op->result), *xt = vtype(E, op->args[0]);
    const Layout *X = L(E, val(E, op->args[0])->lay);
    int src[LAY_MAX_BITS];
    for (int b = 0; b < LAY_MAX_BITS; b++) src[b] = -1;
    if (op->op == OP_RESHAPE) {
        Layout l = lay_reshape(X, t->rank, t->shape);
        emit_alias(E, op, lay_add(E, &l));
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
    emit_alias(E, op, relabel(E, X, t->rank, t->shape, src));
}

/* Reads into layout r, from x staged in shared memory, the element whose
 * bit b is: spec[b] >= 0: bit spec[b] of r's element; -2: 0; -3: 1. */
static const char *gather_smem(Emitter *E, const char *name, int x, DType t, int r, const int *spec) {
    const Layout *X = L(E, x), *R = L(E, r);
    int cpos[LAY_MAX_BITS], nc = 0;
    for (int b = 0; b < X->nbits; b++) cpos[b] = X->space[b] != LAY_NONE ? nc++ : -1;
    need_smem(E, ((int64_t)1 << nc) * regsize(t));
    const char *res = fresh(E, "c");
    decl(E, t, res, r);
    out(E, "{");
    E->indent++;
    out(E, "%s *S = (%s *)tile_smem;", ctype(t), ctype(t));
    Buf wb = {0}, rb = {0};
    buf_printf(&wb, "0");
    buf_printf(&rb, "0");
    for (int b = 0; b < X->nbits; b++) {
        if (X->space[b] == LAY_LANE || X->space[b] == LAY_WARP)
            buf_printf(&wb, " | (((%s >> %d) & 1) << %d)", X->space[b] == LAY_LANE ? "lane" : "warp", X->bit[b], cpos[b]);
        int s = spec[b];
        if (cpos[b] >= 0 && s >= 0 && (R->space[s] == LAY_LANE || R->space[s] == LAY_WARP))
            buf_printf(&rb, " | (((%s >> %d) & 1) << %d)", R->space[s] == LAY_LANE ? "lane" : "warp", R->bit[s], cpos[b]);
    }
    out(E, "const int cw = %s, cr = %s;", wb.p, rb.p);
    free(wb.p);
    free(rb.p);
    out(E, "__syncthreads();");
    const char *own = owner(E, x);
    if (own) out(E, "if (%s) {", own), E->indent++;
    for (int i = 0; i < lay_nregs(X); i++) {
        int64_t e = lay_reg_elem(X, i), c = 0;
        for (int b = 0; b < X->nbits; b++)
            if (cpos[b] >= 0 && ((e >> b) & 1)) c |= (int64_t)1 << cpos[b];
        out(E, "S[cw + %lld] = %s;", (long long)c, reg(E, name, x, i));
    }
    if (own) E->indent--, out(E, "}");
    out(E, "__syncthreads();");
    for (int i = 0; i < lay_nregs(R); i++) {
        int64_t e = lay_reg_elem(R, i), c = 0;
        for (int b = 0; b < X->nbits; b++) {
            if (cpos[b] < 0) continue;
            int s = spec[b];
            bool one = s == -3 || (s >= 0 && ((e >> s) & 1));
            if (one) c |= (int64_t)1 << cpos[b];
        }
        out(E, "%s = S[cr + %lld];", reg(E, res, r, i), (long long)c);
    }
    E->indent--;
    out(E, "}");
    return res;
}

static void emit_extract(Emitter *E, const IrOp *op) {
    const Type *t = vtype(E, op->result), *xt = vtype(E, op->args[0]);
    Val *v = val(E, op->args[0]);
    const Layout *X = L(E, v->lay);
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
    DType dt = vdt(E, op->args[0]);
    if (!regs_only) {
        int r = blocked(E, t, -1);
        const char *name = gather_smem(E, v->name, v->lay, dt, r, spec);
        set_val(E, op->result, name, r);
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
    int r = lay_add(E, &R);
    const char *name = fresh(E, "v");
    set_val(E, op->result, name, r);
    decl(E, dt, name, r);
    for (int i = 0; i < lay_nregs(&R); i++) {
        int64_t e = lay_reg_elem(&R, i);
        int xr = 0;
        for (int b = 0; b < X->nbits; b++) {
            if (X->space[b] != LAY_REG) continue;
            bool one = spec[b] == -3 || (spec[b] >= 0 && ((e >> spec[b]) & 1));
            if (one) xr |= 1 << X->bit[b];
        }
        out(E, "%s = %s;", reg(E, name, r, i), reg(E, v->name, v->lay, xr));
    }
}

static void emit_cat(Emitter *E, const IrOp *op) {
    const Type *t = vtype(E, op->result), *at = vtype(E, op->args[0]);
    Val *a = val(E, op->args[0]), *b = val(E, op->args[1]);
    DType dt = t->dtype;
    if (a->lay != b->lay) {
        if (lay_compatible(L(E, b->lay), L(E, a->lay))) {
            b->name = convert(E, b->name, b->lay, vdt(E, op->args[1]), a->lay);
            b->lay = a->lay;
        } else {
            int bl = blocked(E, at, -1);
            a->name = convert(E, a->name, a->lay, vdt(E, op->args[0]), bl);
            a->lay = bl;
            b->name = convert(E, b->name, b->lay, vdt(E, op->args[1]), bl);
            b->lay = bl;
        }
    }
    const Layout *A = L(E, a->lay);
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
    int r = lay_add(E, &R);
    const char *name = fresh(E, "v");
    set_val(E, op->result, name, r);
    decl(E, dt, name, r);
    int na = lay_nregs(A);
    for (int i = 0; i < 2 * na; i++) {
        int id = op->args[i < na ? 0 : 1];
        const char *x = reg(E, val(E, id)->name, a->lay, i % na);
        out(E, "%s = %s;", reg(E, name, r, i), ew_cast(E, vdt(E, id), dt, x));
    }
}

/* ---- reductions and scans ------------------------------------------------------ */

static DType accum_dtype(OpId op, DType t) {
    if (op == OP_REDUCE_SUM || op == OP_REDUCE_PROD || op == OP_CUMSUM || op == OP_CUMPROD)
        return (is_half(t) || t == DT_TF32) ? DT_F32 : t;
    return t;
}

static const char *combine(Emitter *E, OpId op, DType acc, const char *a, const char *b) {
    switch (op) {
    case OP_REDUCE_SUM: case OP_CUMSUM: return ew_binary(E, OP_ADD, acc, a, b);
    case OP_REDUCE_PROD: case OP_CUMPROD: return ew_binary(E, OP_MUL, acc, a, b);
    case OP_REDUCE_MAX: return ew_binary(E, OP_MAXIMUM, acc, a, b);
    default: return ew_binary(E, OP_MINIMUM, acc, a, b);
    }
}

static void emit_reduce(Emitter *E, const IrOp *op) {
    int x = op->args[0];
    make_full(E, x);
    Val *v = val(E, x);
    const Layout *X = L(E, v->lay);
    const Type *xt = vtype(E, x), *t = vtype(E, op->result);
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
    int o = lay_add(E, &O);
    int no = lay_nregs(&O);
    DType acc = accum_dtype(op->op, dt);
    const char *AT = arg ? comptype(dt) : ctype(acc);
    const char *a = fresh(E, "a"), *ai = arg ? fresh(E, "ai") : NULL;
    if (no == 1) out(E, "%s %s;", AT, a); else out(E, "%s %s[%d];", AT, a, no);
    if (arg) { if (no == 1) out(E, "int %s;", ai); else out(E, "int %s[%d];", ai, no); }
    const char *want_max = op->op == OP_ARGMAX ? "true" : "false";
    /* 1. in-thread */
    bool *seen = ARENA_ARRAY(&E->mem, bool, no);
    for (int i = 0; i < lay_nregs(X); i++) {
        int oi = 0;
        for (int k = 0; k < X->nregbits; k++)
            if (regmap[k] >= 0 && ((i >> k) & 1)) oi |= 1 << regmap[k];
        const char *dst = reg(E, a, o, oi), *src = reg(E, v->name, v->lay, i);
        if (arg) {
            const char *idx = all ? fmt_str(E, "(%s + %lld)", thread_coord(E, v->lay, -1), (long long)lay_reg_elem(X, i))
                                  : coord(E, v->lay, i, op->axis);
            const char *w = widen(E, dt, src), *dsti = reg(E, ai, o, oi);
            if (!seen[oi]) out(E, "%s = %s; %s = %s;", dst, w, dsti, idx);
            else out(E, "if (tile_arg_better(%s, %s, %s, %s, %s)) { %s = %s; %s = %s; }", w, idx, dst, dsti,
                     want_max, dst, w, dsti, idx);
        } else {
            const char *s = ew_cast(E, dt, acc, src);
            if (!seen[oi]) out(E, "%s = %s;", dst, s);
            else out(E, "%s = %s;", dst, combine(E, op->op, acc, dst, s));
        }
        seen[oi] = true;
    }
    /* 2. across lanes */
    for (int k = 0; k < 5; k++) {
        if (!((red_lanes >> k) & 1)) continue;
        for (int i = 0; i < no; i++) {
            const char *dst = reg(E, a, o, i);
            if (arg) {
                const char *dsti = reg(E, ai, o, i);
                out(E, "{ %s w = tile_shfl_xor(%s, %d); int j = tile_shfl_xor(%s, %d); "
                       "if (tile_arg_better(w, j, %s, %s, %s)) { %s = w; %s = j; } }",
                    AT, dst, 1 << k, dsti, 1 << k, dst, dsti, want_max, dst, dsti);
            } else {
                /* the shuffle first: combine() may evaluate an operand conditionally,
                 * and every lane must take part in a shuffle */
                out(E, "{ const %s w = tile_shfl_xor(%s, %d); %s = %s; }", AT, dst, 1 << k, dst,
                    combine(E, op->op, acc, dst, "w"));
            }
        }
    }
    /* 3. across warps, through shared memory */
    if (red_warps) {
        int nw = 1 << __builtin_popcount(red_warps);
        int64_t nout = type_numel(t);
        int asz = arg ? (int)sizeof(double) : regsize(acc);
        if (asz < 4) asz = 4;
        need_smem(E, nout * nw * (asz + (arg ? 4 : 0)) + 16);
        out(E, "{");
        E->indent++;
        out(E, "%s *S = (%s *)tile_smem;", AT, AT);
        if (arg) out(E, "int *SI = (int *)(tile_smem + %lld);", (long long)(nout * nw * asz));
        out(E, "const int wr = %s;", pext_expr(E, "warp", red_warps));
        out(E, "__syncthreads();");
        for (int i = 0; i < no; i++) {
            const char *slot = fmt_str(E, "(%s + %lld) * %d", thread_coord(E, o, -1), (long long)lay_reg_elem(&O, i), nw);
            out(E, "S[%s + wr] = %s;", slot, reg(E, a, o, i));
            if (arg) out(E, "SI[%s + wr] = %s;", slot, reg(E, ai, o, i));
        }
        out(E, "__syncthreads();");
        for (int i = 0; i < no; i++) {
            const char *slot = fmt_str(E, "(%s + %lld) * %d", thread_coord(E, o, -1), (long long)lay_reg_elem(&O, i), nw);
            const char *dst = reg(E, a, o, i);
            out(E, "%s = S[%s];", dst, slot);
            if (arg) out(E, "%s = SI[%s];", reg(E, ai, o, i), slot);
            for (int w = 1; w < nw; w++) {
                if (arg) {
                    const char *dsti = reg(E, ai, o, i);
                    out(E, "if (tile_arg_better(S[%s + %d], SI[%s + %d], %s, %s, %s)) { %s = S[%s + %d]; %s = SI[%s + %d]; }",
                        slot, w, slot, w, dst, dsti, want_max, dst, slot, w, dsti, slot, w);
                } else {
                    out(E, "%s = %s;", dst, combine(E, op->op, acc, dst, fmt_str(E, "S[%s + %d]", slot, w)));
                }
            }
        }
        E->indent--;
        out(E, "}");
    }
    /* 4. the result in its dtype */
    const char *name = fresh(E, "v");
    set_val(E, op->result, name, o);
    decl(E, rt, name, o);
    for (int i = 0; i < no; i++) {
        const char *x2 = arg ? ew_cast(E, DT_I32, rt, reg(E, ai, o, i)) : ew_cast(E, acc, rt, reg(E, a, o, i));
        out(E, "%s = %s;", reg(E, name, o, i), x2);
    }
}

/* Scans: staged in shared memory, one thread per line, in index order. */
static void emit_scan(Emitter *E, const IrOp *op) {
    int x = op->args[0];
    make_full(E, x);
    Val *v = val(E, x);
    const Layout *X = L(E, v->lay);
    const Type *xt = vtype(E, x);
    DType dt = xt->dtype, rt = vtype(E, op->result)->dtype, acc = accum_dtype(op->op, dt);
    int axis = op->axis < 0 || op->axis >= xt->rank ? -1 : op->axis;
    int64_t n = type_numel(xt), len = axis < 0 ? n : xt->shape[axis], inner = 1;
    if (axis >= 0)
        for (int d = axis + 1; d < xt->rank; d++) inner *= xt->shape[d];
    int64_t lines = n / len;
    const char *AT = ctype(acc);
    need_smem(E, n * regsize(acc) + 16);
    const char *name = fresh(E, "v");
    set_val(E, op->result, name, v->lay);
    decl(E, rt, name, v->lay);
    out(E, "{");
    E->indent++;
    out(E, "%s *S = (%s *)tile_smem;", AT, AT);
    out(E, "__syncthreads();");
    const char *own = owner(E, v->lay);
    if (own) out(E, "if (%s) {", own), E->indent++;
    for (int i = 0; i < lay_nregs(X); i++)
        out(E, "S[%s + %lld] = %s;", thread_coord(E, v->lay, -1), (long long)lay_reg_elem(X, i),
            ew_cast(E, dt, acc, reg(E, v->name, v->lay, i)));
    if (own) E->indent--, out(E, "}");
    out(E, "__syncthreads();");
    out(E, "for (int line = threadIdx.x; line < %lld; line += %d) {", (long long)lines, E->threads);
    E->indent++;
    out(E, "%s *p = S + (line / %lld) * %lld + line %% %lld;", AT, (long long)inner, (long long)(len * inner), (long long)inner);
    bool rev = op->flag != 0;
    out(E, "%s run = p[%lld];", AT, rev ? (long long)((len - 1) * inner) : 0LL);
    out(E, "for (int k = 1; k < %lld; ++k) {", (long long)len);
    E->indent++;
    const char *at = rev ? fmt_str(E, "p[(%lld - k) * %lld]", (long long)(len - 1), (long long)inner)
                         : fmt_str(E, "p[k * %lld]", (long long)inner);
    out(E, "run = %s;", combine(E, op->op, acc, "run", at));
    out(E, "%s = run;", at);
    E->indent--;
    out(E, "}");
    E->indent--;
    out(E, "}");
    out(E, "__syncthreads();");
    for (int i = 0; i < lay_nregs(X); i++)
        out(E, "%s = %s;", reg(E, name, v->lay, i),
            ew_cast(E, acc, rt, fmt_str(E, "S[%s + %lld]", thread_coord(E, v->lay, -1), (long long)lay_reg_elem(X, i))));
    E->indent--;
    out(E, "}");
}

/* ---- mma ------------------------------------------------------------------------ */

/* Writes operand `id` ([batch.., R, C]) row-major into shared memory at
 * element offset `base` with row stride ld (padding against bank conflicts),
 * in vectors where the layout allows. */
static void stage_operand(Emitter *E, int id, int64_t base, int ld) {
    make_full(E, id);
    Val *v = val(E, id);
    const Type *t = vtype(E, id);
    DType dt = t->dtype;
    int rank = t->rank, lay = v->lay;
    const char *own = owner(E, lay);
    if (own) out(E, "if (%s) {", own), E->indent++;
    int V = vector_width(E, lay, rank - 1, 16 / regsize(dt));
    if (regsize(dt) != 2 && regsize(dt) != 4) V = 1;
    int rows = 1;
    for (int d = 0; d < rank - 1; d++) rows *= t->shape[d];
    (void)rows;
    for (int r = 0; r < nregs(E, lay); r += V) {
        /* row = batch * R + row coordinate */
        Buf rb = {0};
        buf_printf(&rb, "0");
        for (int d = 0; d < rank - 1; d++) {
            int64_t stride = 1;
            for (int e = d + 1; e < rank - 1; e++) stride *= t->shape[e];
            buf_printf(&rb, " + %s * %lld", coord(E, lay, r, d), (long long)stride);
        }
        const char *ptr = fmt_str(E, "((%s *)tile_smem + %lld + (%s) * %d + %s)", ctype(dt), (long long)base, rb.p, ld,
                                  coord(E, lay, r, rank - 1));
        free(rb.p);
        if (V > 1) vec_store(E, dt, ptr, v->name, lay, r, V);
        else out(E, "*%s = %s;", ptr, reg(E, v->name, lay, r));
    }
    if (own) E->indent--, out(E, "}");
}

static void emit_mma(Emitter *E, const IrOp *op) {
    int ia = op->args[0], ib = op->args[1], ic = op->args[2];
    const Type *at = vtype(E, ia), *bt = vtype(E, ib), *t = vtype(E, op->result);
    DType adt = at->dtype, bdt = bt->dtype, rt = t->dtype, ct = vdt(E, ic);
    int M = at->shape[at->rank - 2], K = at->shape[at->rank - 1], N = bt->shape[bt->rank - 1];
    int batch = t->rank == 3 ? t->shape[0] : 1;
    bool abatch = at->rank == 3, bbatch = bt->rank == 3;
    int kstep = adt == DT_TF32 ? 8 : 16;
    bool tensor = adt == bdt && (is_half(adt) || adt == DT_TF32) && (rt == DT_F32 || rt == DT_F16) &&
                  M % 16 == 0 && N % 8 == 0 && K % kstep == 0;
    fit_operand(E, ic, t);
    int lay;
    if (tensor) {
        int wmb = 0, wnb = 0;
        while (wmb + wnb < E->warpbits) {
            int rows = M >> wmb, cols = N >> wnb;
            bool can_m = rows >= 32, can_n = cols >= 16;
            if (can_m && (rows >= cols || !can_n)) wmb++;
            else if (can_n) wnb++;
            else break;
        }
        Layout l = lay_mma(t, wmb, wnb);
        lay = lay_add(E, &l);
    } else {
        Val *c = val(E, ic);
        lay = lay_full(L(E, c->lay)) && L(E, c->lay)->nbits == lay_log2(type_numel(t)) ? c->lay : blocked(E, t, -1);
    }
    /* accumulate in f32 (f64 for f64, i32 for integers); round once at the end */
    DType acc = rt == DT_F64 ? DT_F64 : dtype_is_float(rt) ? DT_F32 : DT_I32;
    const char *c = convert(E, val(E, ic)->name, val(E, ic)->lay, ct, lay);
    const char *d = fresh(E, "d");
    decl(E, acc, d, lay);
    for (int r = 0; r < nregs(E, lay); r++) out(E, "%s = %s;", reg(E, d, lay, r), ew_cast(E, ct, acc, reg(E, c, lay, r)));
    int s = regsize(adt);
    int lda = tensor ? K + (s == 2 ? 8 : 4) : K, ldb = tensor ? N + 8 : N;
    int64_t a_elems = (int64_t)(abatch ? batch : 1) * M * lda;
    int64_t b_off = ((a_elems * s + 15) / 16) * 16 / regsize(bdt);
    int64_t b_elems = (int64_t)(bbatch ? batch : 1) * K * ldb;
    need_smem(E, b_off * regsize(bdt) + b_elems * regsize(bdt));
    /* conversions use shared memory too: all of them before the staging */
    make_full(E, ia);
    make_full(E, ib);
    out(E, "__syncthreads();");
    stage_operand(E, ia, 0, lda);
    stage_operand(E, ib, b_off, ldb);
    out(E, "__syncthreads();");
    out(E, "{");
    E->indent++;
    const Layout *R = L(E, lay);
    if (tensor) {
        int wnb = __builtin_popcount(lay_warp_mask(R) & ((1u << E->warpbits) - 1));
        int wnbits = 0, wmbits = 0;
        for (int b = 0; b < R->nbits; b++) {
            if (R->space[b] != LAY_WARP) continue;
            int dd, j;
            lay_dim_of(t->rank, t->shape, b, &dd, &j);
            if (dd == t->rank - 1) wnbits++; else wmbits++;
        }
        (void)wnb;
        int MI = (M / 16) >> wmbits, NI = (N / 8) >> wnbits;
        const char *ET = ctype(adt);
        out(E, "const %s *As = (const %s *)tile_smem;", ET, ET);
        out(E, "const %s *Bs = (const %s *)tile_smem + %lld;", ET, ET, (long long)b_off);
        out(E, "const int m0 = ((warp >> %d) & %d) * %d, n0 = (warp & %d) * %d;", wnbits, (1 << wmbits) - 1,
            M >> wmbits, (1 << wnbits) - 1, N >> wnbits);
        out(E, "const int g = lane >> 2, q = lane & 3;");
        out(E, "(void)g; (void)q;");
        out(E, "unsigned fa[%d][4], fb[%d][2];", MI, NI);
        const char *mma = adt == DT_TF32 ? "tile_mma_m16n8k8_tf32" : adt == DT_BF16 ? "tile_mma_m16n8k16_bf16" : "tile_mma_m16n8k16_f16";
        for (int bb = 0; bb < batch; bb++) {
            int64_t abase = (int64_t)(abatch ? bb : 0) * M * lda, bbase = (int64_t)(bbatch ? bb : 0) * K * ldb;
            out(E, "#pragma unroll");
            out(E, "for (int k0 = 0; k0 < %d; k0 += %d) {", K, kstep);
            E->indent++;
            for (int mi = 0; mi < MI; mi++) {
                if (s == 2) {
                    out(E, "tile_ldsm_x4(fa[%d][0], fa[%d][1], fa[%d][2], fa[%d][3], As + %lld + (m0 + %d + (lane & 15)) * %d + k0 + (lane >> 4) * 8);",
                        mi, mi, mi, mi, (long long)abase, mi * 16, lda);
                } else {
                    const char *row = fmt_str(E, "(As + %lld + (m0 + %d + g) * %d + k0 + q)", (long long)abase, mi * 16, lda);
                    out(E, "fa[%d][0] = __float_as_uint(%s[0]); fa[%d][1] = __float_as_uint(%s[%d]);", mi, row, mi, row, 8 * lda);
                    out(E, "fa[%d][2] = __float_as_uint(%s[4]); fa[%d][3] = __float_as_uint(%s[%d]);", mi, row, mi, row, 8 * lda + 4);
                }
            }
            for (int ni = 0; ni < NI; ni++) {
                if (s == 2) {
                    if (ni + 1 < NI && ni % 2 == 0) {
                        out(E, "tile_ldsm_x4_trans(fb[%d][0], fb[%d][1], fb[%d][0], fb[%d][1], Bs + %lld + (k0 + (lane & 15)) * %d + n0 + %d + (lane >> 4) * 8);",
                            ni, ni, ni + 1, ni + 1, (long long)bbase, ldb, ni * 8);
                        ni++;
                    } else {
                        out(E, "tile_ldsm_x2_trans(fb[%d][0], fb[%d][1], Bs + %lld + (k0 + (lane & 15)) * %d + n0 + %d);",
                            ni, ni, (long long)bbase, ldb, ni * 8);
                    }
                } else {
                    const char *col = fmt_str(E, "(Bs + %lld + (k0 + q) * %d + n0 + %d + g)", (long long)bbase, ldb, ni * 8);
                    out(E, "fb[%d][0] = __float_as_uint(%s[0]); fb[%d][1] = __float_as_uint(%s[%d]);", ni, col, ni, col, 4 * ldb);
                }
            }
            for (int mi = 0; mi < MI; mi++)
                for (int ni = 0; ni < NI; ni++) {
                    int r0 = ((bb * MI + mi) * NI + ni) << 2;
                    out(E, "%s(%s, %s, %s, %s, fa[%d][0], fa[%d][1], fa[%d][2], fa[%d][3], fb[%d][0], fb[%d][1]);", mma,
                        reg(E, d, lay, r0), reg(E, d, lay, r0 + 1), reg(E, d, lay, r0 + 2), reg(E, d, lay, r0 + 3),
                        mi, mi, mi, mi, ni, ni);
                }
            E->indent--;
            out(E, "}");
        }
    } else {
        /* exact products on the FMA units, in k order (as the interpreter) */
        const char *AT = ctype(adt), *BT = ctype(bdt);
        out(E, "const %s *As = (const %s *)tile_smem;", AT, AT);
        out(E, "const %s *Bs = (const %s *)tile_smem + %lld;", BT, BT, (long long)b_off);
        out(E, "for (int k = 0; k < %d; ++k) {", K);
        E->indent++;
        for (int r = 0; r < nregs(E, lay); r++) {
            const char *bbx = t->rank == 3 ? coord(E, lay, r, 0) : "0";
            const char *m = coord(E, lay, r, t->rank - 2), *n = coord(E, lay, r, t->rank - 1);
            const char *av = fmt_str(E, "As[(%s * %d + %s) * %d + k]", abatch ? bbx : "0", M, m, lda);
            const char *bv = fmt_str(E, "Bs[(%s * %d + k) * %d + %s]", bbatch ? bbx : "0", K, ldb, n);
            const char *dst = reg(E, d, lay, r);
            if (acc == DT_I32)
                out(E, "%s = (int)((unsigned)%s + (unsigned)((int)%s * (int)%s));", dst, dst, av, bv);
            else if (acc == DT_F64)
                out(E, "%s = fma((double)%s, (double)%s, %s);", dst, av, bv, dst);
            else
                out(E, "%s = fmaf(%s, %s, %s);", dst, ew_cast(E, adt, DT_F32, av), ew_cast(E, bdt, DT_F32, bv), dst);
        }
        E->indent--;
        out(E, "}");
    }
    E->indent--;
    out(E, "}");
    const char *name = fresh(E, "v");
    set_val(E, op->result, name, lay);
    if (rt == acc) {
        set_val(E, op->result, d, lay);
        return;
    }
    decl(E, rt, name, lay);
    for (int r = 0; r < nregs(E, lay); r++) out(E, "%s = %s;", reg(E, name, lay, r), ew_cast(E, acc, rt, reg(E, d, lay, r)));
}

/* ---- locals ------------------------------------------------------------------- */

static const char *local_name(Emitter *E, int l) { return fmt_str(E, "l%d", l); }

static void emit_local_set(Emitter *E, const IrOp *op) {
    const IrLocal *lc = &E->f->locals[op->local];
    int x = op->args[0];
    fit_operand(E, x, &lc->type);
    Val *v = val(E, x);
    int *ll = &E->local_lay[op->local];
    if (E->analysis) {
        /* grow the local's layout to hold every value stored into it */
        const Layout *X = L(E, v->lay);
        if (*ll < 0) { *ll = v->lay; E->local_changed = true; }
        else if (!lay_compatible(X, L(E, *ll))) {
            if (lay_compatible(L(E, *ll), X)) *ll = v->lay;
            else *ll = blocked(E, &lc->type, -1);
            E->local_changed = true;
        }
    }
    if (*ll < 0) { fail(E, op, "internal: local without a layout"); return; }
    const char *src = convert(E, v->name, v->lay, vdt(E, x), *ll);
    const char *dst = local_name(E, op->local);
    for (int r = 0; r < nregs(E, *ll); r++)
        out(E, "%s = %s;", reg(E, dst, *ll, r), ew_cast(E, vdt(E, x), lc->type.dtype, reg(E, src, *ll, r)));
}

static void emit_local_get(Emitter *E, const IrOp *op) {
    int ll = E->local_lay[op->local];
    const IrLocal *lc = &E->f->locals[op->local];
    if (ll < 0) {
        /* read before any write: any layout will do (the value is undefined) */
        ll = E->local_lay[op->local] = blocked(E, &lc->type, -1);
        E->local_changed = true;
    }
    const char *name = fresh(E, "v");
    set_val(E, op->result, name, ll);
    decl(E, vdt(E, op->result), name, ll);
    for (int r = 0; r < nregs(E, ll); r++)
        out(E, "%s = %s;", reg(E, name, ll, r), ew_cast(E, lc->type.dtype, vdt(E, op->result), reg(E, local_name(E, op->local), ll, r)));
}

/* ---- print ---------------------------------------------------------------------- */

static const char *printf_conv(DType t) {
    if (t == DT_BOOL) return "%s";
    if (dtype_is_float(t)) return "%g";
    if (dtype_is_unsigned(t)) return "%llu";
    return "%lld";
}
static const char *printf_arg(Emitter *E, DType t, const char *x) {
    if (t == DT_BOOL) return fmt_str(E, "(%s ? \"true\" : \"false\")", x);
    if (dtype_is_float(t)) return fmt_str(E, "(double)%s", widen(E, t, x));
    if (dtype_is_unsigned(t)) return fmt_str(E, "(unsigned long long)%s", x);
    return fmt_str(E, "(long long)%s", x);
}

/* print: thread 0 prints; tiles are staged in shared memory first. */
static void emit_print(Emitter *E, const IrOp *op) {
    const char *staged[64];
    int n = op->nargs < 64 ? op->nargs : 64;
    int64_t off = 0;
    for (int i = 0; i < n; i++)   /* conversions (through shared memory) before any staging */
        if (L(E, val(E, op->args[i])->lay)->nbits > 0) make_full(E, op->args[i]);
    for (int i = 0; i < n; i++) {
        int id = op->args[i];
        staged[i] = NULL;
        if (nregs(E, val(E, id)->lay) == 1 && L(E, val(E, id)->lay)->nbits == 0) continue;
        Val *v = val(E, id);
        DType dt = vdt(E, id);
        staged[i] = fmt_str(E, "((%s *)(tile_smem + %lld))", ctype(dt), (long long)off);
        if (i == 0 || off == 0) out(E, "__syncthreads();");
        const char *own = owner(E, v->lay);
        if (own) out(E, "if (%s) {", own), E->indent++;
        for (int r = 0; r < nregs(E, v->lay); r++)
            out(E, "%s[%s + %lld] = %s;", staged[i], thread_coord(E, v->lay, -1),
                (long long)lay_reg_elem(L(E, v->lay), r), reg(E, v->name, v->lay, r));
        if (own) E->indent--, out(E, "}");
        off += ((type_numel(vtype(E, id)) * regsize(dt) + 15) / 16) * 16;
    }
    need_smem(E, off);
    if (off) out(E, "__syncthreads();");
    out(E, "if (threadIdx.x == 0) {");
    E->indent++;
    out(E, "printf(\"[block %%d,%%d,%%d] \", (int)blockIdx.x, (int)blockIdx.y, (int)blockIdx.z);");
    int next = 0;
    Buf lit = {0};
    buf_printf(&lit, "%s", "");
    const char *s = op->str ? op->str : "";
    for (;; s++) {
        bool hole = s[0] == '{' && s[1] == '}' && next < n;
        if (!*s || hole) {
            if (lit.len) out(E, "printf(\"%s\");", lit.p);
            lit.len = 0;
            if (lit.p) lit.p[0] = 0;
        }
        if (!*s) break;
        if ((s[0] == '{' && s[1] == '{') || (s[0] == '}' && s[1] == '}')) {
            buf_printf(&lit, "%c", *s);
            s++;
        } else if (hole) {
            int id = op->args[next];
            DType dt = vdt(E, id);
            const Type *t = vtype(E, id);
            if (!staged[next]) {
                out(E, "printf(\"%s\", %s);", printf_conv(dt), printf_arg(E, dt, vreg(E, id, 0)));
            } else {
                /* nested brackets as the interpreter prints them */
                int64_t numel = type_numel(t);
                out(E, "for (int i = 0; i < %lld; ++i) {", (long long)numel);
                E->indent++;
                Buf open = {0}, close = {0};
                buf_printf(&open, "0");
                buf_printf(&close, "0");
                int64_t span = 1;
                for (int d = t->rank - 1; d >= 0; d--) {
                    span *= t->shape[d];
                    buf_printf(&open, " + (i %% %lld == 0)", (long long)span);
                    buf_printf(&close, " + ((i + 1) %% %lld == 0)", (long long)span);
                }
                out(E, "if (i) printf(\", \");");
                out(E, "for (int o = %s; o > 0; --o) printf(\"[\");", open.p);
                out(E, "printf(\"%s\", %s);", printf_conv(dt), printf_arg(E, dt, fmt_str(E, "%s[i]", staged[next])));
                out(E, "for (int o = %s; o > 0; --o) printf(\"]\");", close.p);
                free(open.p);
                free(close.p);
                E->indent--;
                out(E, "}");
            }
            next++;
            s++;
        } else if (*s == '"' || *s == '\\') {
            buf_printf(&lit, "\\%c", *s);
        } else if (*s == '%') {
            buf_printf(&lit, "%%%%");
        } else if (*s == '\n') {
            buf_printf(&lit, "\\n");
        } else {
            buf_printf(&lit, "%c", *s);
        }
    }
    free(lit.p);
    out(E, "printf(\"\\n\");");
    E->indent--;
    out(E, "}");
}

/* ---- ops and control flow --------------------------------------------------------- */

static void emit_scalar_def(Emitter *E, const IrOp *op, const char *expr) {
    const Type *t = vtype(E, op->result);
    int none[LAY_MAX_BITS];
    for (int b = 0; b < LAY_MAX_BITS; b++) none[b] = -1;
    Layout z;
    memset(&z, 0, sizeof z);
    int lay = relabel(E, &z, t->rank, t->shape, none);
    const char *name = fresh(E, "v");
    set_val(E, op->result, name, lay);
    out(E, "const %s %s = %s;", ctype(t->dtype), name, expr);
}

static void emit_line(Emitter *E, const IrOp *op) {
    if (!E->opt.line_directives || op->loc.line <= 0 || op->loc.line == E->last_line || !op->loc.file) return;
    E->last_line = op->loc.line;
    Buf b = {0};
    for (const char *p = op->loc.file; *p; p++) {
        if (*p == '"' || *p == '\\') buf_printf(&b, "\\%c", *p);
        else buf_printf(&b, "%c", *p);
    }
    buf_printf(&E->body, "#line %d \"%s\"\n", op->loc.line, b.p ? b.p : "");
    free(b.p);
}

/* ---- software pipelining: prefetching the loads of an mma loop ------------------ */

/* In `for k in range(..) { a = load(x, (.., k), latency=2); ...; acc = mma(a, b, acc) }`
 * the loads of iteration k + step are issued right after iteration k has its
 * tiles (into registers), so global memory latency overlaps the mma.  A load
 * qualifies when it asks for it (latency >= 2), its indices are pure scalar
 * functions of the induction variable and of values from outside the loop,
 * and nothing in the loop writes its array.  Loads past the end read padding
 * and are never used.  Opt-in: on the H200 the matmul examples measured no
 * gain from it (the registers it holds cost occupancy); cp.async into a
 * second shared-memory buffer is the better next step. */

static bool writes_array(const IrBlock *blk, int arr) {
    if (!blk) return false;
    for (int i = 0; i < blk->nops; i++) {
        const IrOp *o = blk->ops[i];
        if ((o->op == OP_STORE || o->op == OP_SCATTER || o->op == OP_ATOMIC_ADD || o->op == OP_ATOMIC_MAX ||
             o->op == OP_ATOMIC_MIN) && o->array == arr)
            return true;
        if (writes_array(o->body, arr) || writes_array(o->else_body, arr)) return true;
    }
    return false;
}

static const IrOp *body_def(const IrOp *loop, int v) {
    for (int i = 0; i < loop->body->nops; i++)
        if (loop->body->ops[i]->result == v) return loop->body->ops[i];
    return NULL;
}

/* Can value v be recomputed for the next iteration?  Marks the ops needed. */
static bool pf_recomputable(Emitter *E, const IrOp *loop, int v, bool *chain, int depth) {
    if (v == loop->result) return true;
    const IrOp *d = body_def(loop, v);
    if (!d) return true;                     /* defined outside the loop */
    if (depth > 32 || vtype(E, v)->rank != 0) return false;
    bool pure = d->op == OP_CONST || d->op == OP_PARAM || d->op == OP_ARRAY_DIM || d->op == OP_ARRAY_STRIDE ||
                d->op == OP_BID || d->op == OP_NUM_BLOCKS || (d->op >= OP_NEG && d->op <= OP_WHERE);
    if (!pure) return false;
    for (int i = 0; i < d->nargs; i++)
        if (!pf_recomputable(E, loop, d->args[i], chain, depth + 1)) return false;
    chain[v] = true;
    return true;
}

/* Chooses the loads of `loop` to prefetch; returns how many. */
static int pf_choose(Emitter *E, const IrOp *loop) {
    bool has_mma = false;
    for (int i = 0; i < loop->body->nops; i++) has_mma |= loop->body->ops[i]->op == OP_MMA;
    if (!has_mma) return 0;
    int n = 0;
    int64_t regs = 0;
    for (int i = 0; i < E->f->nvalues; i++) E->pf_chain[i] = false;
    for (int i = 0; i < loop->body->nops && n < 8; i++) {
        const IrOp *o = loop->body->ops[i];
        /* only in the fast variant (32-bit offsets): the general one keeps registers */
        if (o->op != OP_LOAD || o->latency < 2 || writes_array(loop->body, o->array) ||
            !(array_flags(E, o->array) & CUDA_ARRAY_OFF32))
            continue;
        bool ok = true;
        for (int a = 0; a < o->nargs && ok; a++) ok = pf_recomputable(E, loop, o->args[a], E->pf_chain, 0);
        int64_t r = type_numel(vtype(E, o->result)) / E->threads;
        if (!ok || regs + r > 64) continue;
        regs += r;
        E->pf_loads[n++] = o;
    }
    return n;
}

/* Emits the prefetched loads for the iteration whose variable is `iv`
 * (a C expression) into the buffers (declaring them on the first call). */
static void emit_prefetch(Emitter *E, const IrOp *loop, const char *iv, bool declare) {
    size_t n = sizeof(Val) * (size_t)E->f->nvalues;
    Val *saved = malloc(n ? n : 1);
    if (!saved) return;
    memcpy(saved, E->vals, n);
    const char *ivn = fresh(E, "n");
    DType t = vdt(E, loop->result);
    out(E, "const %s %s = (%s)(%s);", ctype(t), ivn, ctype(t), iv);
    Layout scalar;
    memset(&scalar, 0, sizeof scalar);
    set_val(E, loop->result, ivn, lay_add(E, &scalar));
    int last = 0;
    for (int i = 0; i < loop->body->nops; i++)
        for (int k = 0; k < E->npf; k++)
            if (loop->body->ops[i] == E->pf_loads[k]) last = i;
    for (int i = 0; i <= last; i++) {
        const IrOp *o = loop->body->ops[i];
        int k = -1;
        for (int j = 0; j < E->npf; j++)
            if (o == E->pf_loads[j]) k = j;
        if (k < 0) {
            if (o->result >= 0 && E->pf_chain[o->result]) emit_op(E, o);
            continue;
        }
        emit_load(E, o);
        Val *v = val(E, o->result);
        if (declare) {
            E->pf_bufs[k] = v->name;      /* the first prefetch is the buffer */
            E->pf_lays[k] = v->lay;
            saved[o->result] = *v;
        } else {
            for (int r = 0; r < nregs(E, v->lay); r++)
                out(E, "%s = %s;", reg(E, E->pf_bufs[k], E->pf_lays[k], r), reg(E, v->name, v->lay, r));
        }
    }
    memcpy(E->vals, saved, n);
    free(saved);
}

/* A load of the pipelined loop: this iteration's tile is in its buffer. */
static bool emit_prefetched_load(Emitter *E, const IrOp *op) {
    int k = -1;
    for (int j = 0; j < E->npf; j++)
        if (op == E->pf_loads[j]) k = j;
    if (k < 0) return false;
    const char *name = fresh(E, "v");
    DType dt = vdt(E, op->result);
    set_val(E, op->result, name, E->pf_lays[k]);
    decl(E, dt, name, E->pf_lays[k]);
    for (int r = 0; r < nregs(E, E->pf_lays[k]); r++)
        out(E, "%s = %s;", reg(E, name, E->pf_lays[k], r), reg(E, E->pf_bufs[k], E->pf_lays[k], r));
    /* after the last one, the next iteration's loads go out */
    int last = -1;
    for (int i = 0; i < E->pf_loop->body->nops; i++)
        for (int j = 0; j < E->npf; j++)
            if (E->pf_loop->body->ops[i] == E->pf_loads[j]) last = i;
    if (last >= 0 && E->pf_loop->body->ops[last] == op) emit_prefetch(E, E->pf_loop, E->pf_next_iv, false);
    return true;
}

static void emit_op(Emitter *E, const IrOp *op) {
    emit_line(E, op);
    const IrFunc *f = E->f;
    switch (op->op) {
    case OP_CONST: {
        DType t = vdt(E, op->result);
        Scalar v;
        if (dtype_is_float(t)) v.f = op->lit.f;
        else if (dtype_is_unsigned(t)) v.u = op->lit.u;
        else v.i = op->lit.i;
        emit_scalar_def(E, op, lit_str(E, t, scalar_canon(t, v)));
        return;
    }
    case OP_PARAM:
        emit_scalar_def(E, op, fmt_str(E, "s%d", op->index));
        return;
    case OP_ARRAY_DIM:
        emit_scalar_def(E, op, fmt_str(E, "(%s)p%d_n%d", ctype(vdt(E, op->result)), op->array, op->axis));
        return;
    case OP_ARRAY_STRIDE:
        emit_scalar_def(E, op, fmt_str(E, "(%s)p%d_s%d", ctype(vdt(E, op->result)), op->array, op->axis));
        return;
    case OP_BID:
        emit_scalar_def(E, op, fmt_str(E, "(%s)blockIdx.%c", ctype(vdt(E, op->result)), "xyz"[op->axis & 3]));
        return;
    case OP_NUM_BLOCKS:
        emit_scalar_def(E, op, fmt_str(E, "(%s)gridDim.%c", ctype(vdt(E, op->result)), "xyz"[op->axis & 3]));
        return;
    case OP_ARANGE: {
        const Type *t = vtype(E, op->result);
        int lay = blocked(E, t, -1);
        const char *name = fresh(E, "v");
        set_val(E, op->result, name, lay);
        decl(E, t->dtype, name, lay);
        for (int r = 0; r < nregs(E, lay); r++)
            out(E, "%s = %s;", reg(E, name, lay, r), ew_cast(E, DT_I32, t->dtype, coord(E, lay, r, 0)));
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
        emit_reduce(E, op);
        return;
    case OP_CUMSUM: case OP_CUMPROD:
        emit_scan(E, op);
        return;
    case OP_MMA:
        emit_mma(E, op);
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
        if (E->npf && emit_prefetched_load(E, op)) return;
        emit_load(E, op);
        return;
    case OP_STORE:
        emit_store(E, op);
        return;
    case OP_GATHER: case OP_SCATTER: case OP_ATOMIC_ADD: case OP_ATOMIC_MAX: case OP_ATOMIC_MIN:
        emit_indexed(E, op);
        return;
    case OP_FOR: {
        DType t = vdt(E, op->result);
        bool u64 = t == DT_U64;
        const char *IT = u64 ? "unsigned long long" : "long long";
        const char *lo = vreg(E, op->args[0], 0), *hi = vreg(E, op->args[1], 0), *st = vreg(E, op->args[2], 0);
        const char *i = fresh(E, "i");
        out(E, "{");
        E->indent++;
        out(E, "const %s %s_hi = (%s)%s, %s_st = (%s)%s;", IT, i, IT, hi, i, IT, st);
        /* pipelining: the first iteration's loads before the loop */
        const IrOp *outer_loop = E->pf_loop;
        int outer_n = E->npf;
        const IrOp *outer_loads[8];
        const char *outer_bufs[8], *outer_next = E->pf_next_iv;
        int outer_lays[8];
        memcpy(outer_loads, E->pf_loads, sizeof outer_loads);
        memcpy(outer_bufs, E->pf_bufs, sizeof outer_bufs);
        memcpy(outer_lays, E->pf_lays, sizeof outer_lays);
        E->npf = pf_choose(E, op);
        E->pf_loop = op;
        if (E->npf) {
            E->pf_next_iv = fmt_str(E, "%s + %s_st", i, i);
            emit_prefetch(E, op, lo, true);
        }
        if (u64)
            out(E, "for (%s %s = (%s)%s; %s_st != 0 && %s < %s_hi; %s += %s_st) {", IT, i, IT, lo, i, i, i, i, i);
        else
            out(E, "for (%s %s = (%s)%s; %s_st > 0 ? %s < %s_hi : (%s_st < 0 && %s > %s_hi); %s += %s_st) {",
                IT, i, IT, lo, i, i, i, i, i, i, i, i);
        E->indent++;
        emit_scalar_def(E, op, fmt_str(E, "(%s)%s", ctype(t), i));
        emit_block(E, op->body);
        E->indent--;
        out(E, "}");
        E->indent--;
        out(E, "}");
        E->pf_loop = outer_loop;
        E->npf = outer_n;
        E->pf_next_iv = outer_next;
        memcpy(E->pf_loads, outer_loads, sizeof outer_loads);
        memcpy(E->pf_bufs, outer_bufs, sizeof outer_bufs);
        memcpy(E->pf_lays, outer_lays, sizeof outer_lays);
        return;
    }
    case OP_LOOP:
        out(E, "for (;;) {");
        E->indent++;
        emit_block(E, op->body);
        E->indent--;
        out(E, "}");
        return;
    case OP_IF:
        out(E, "if (%s) {", vreg(E, op->args[0], 0));
        E->indent++;
        emit_block(E, op->body);
        E->indent--;
        if (op->else_body && op->else_body->nops) {
            out(E, "} else {");
            E->indent++;
            emit_block(E, op->else_body);
            E->indent--;
        }
        out(E, "}");
        return;
    case OP_BREAK: out(E, "break;"); return;
    case OP_CONTINUE: out(E, "continue;"); return;
    case OP_RETURN: out(E, "return;"); return;
    case OP_LOCAL_GET: emit_local_get(E, op); return;
    case OP_LOCAL_SET: emit_local_set(E, op); return;
    case OP_PRINT: emit_print(E, op); return;
    case OP_COUNT: break;
    }
    (void)f;
    fail(E, op, "operation %d is not supported", (int)op->op);
}

/* Ops may re-home an operand (convert it to another layout) in the C scope
 * they sit in; values of outer scopes get their old homes back on the way
 * out, since the new ones are out of scope there. */
static void emit_block(Emitter *E, const IrBlock *blk) {
    if (!blk) return;
    size_t n = sizeof(Val) * (size_t)E->f->nvalues;
    Val *saved = malloc(n ? n : 1);
    if (saved) memcpy(saved, E->vals, n);
    for (int i = 0; i < blk->nops; i++) {
        emit_op(E, blk->ops[i]);
        if (E->errors && !E->analysis) break;
    }
    if (saved) memcpy(E->vals, saved, n);
    free(saved);
}

/* ---- the kernel ------------------------------------------------------------------- */

static void sanitize(Buf *b, const char *s) {
    for (; *s; s++) {
        char c = *s;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
        buf_printf(b, "%c", ok ? c : '_');
    }
}

static void emit_params(Emitter *E, Buf *o) {
    const IrFunc *f = E->f;
    for (int i = 0; i < f->nparams; i++) {
        const IrParam *p = &f->params[i];
        buf_printf(o, "%s\n    ", i ? "," : "");
        if (p->kind == IRP_SCALAR) {
            buf_printf(o, "const %s s%d", ctype(p->dtype), i);
            continue;
        }
        buf_printf(o, "%s%s *__restrict__ p%d", p->written ? "" : "const ", mtype(p->dtype), i);
        for (int d = 0; d < p->rank; d++) buf_printf(o, ", const int p%d_n%d", i, d);
        for (int d = 0; d < p->rank; d++) buf_printf(o, ", const long long p%d_s%d", i, d);
    }
}

/* Prologue variables of each layout used: thread parts of coordinates. */
static void emit_prologue(Emitter *E, Buf *o) {
    for (int k = 0; k < E->nlays; k++) {
        if (!E->lay_used[k]) continue;
        const Layout *l = &E->lays[k];
        Buf e = {0};
        buf_printf(&e, "0");
        for (int b = 0; b < l->nbits; b++)
            if (l->space[b] == LAY_LANE || l->space[b] == LAY_WARP)
                buf_printf(&e, " | (((%s >> %d) & 1) << %d)", l->space[b] == LAY_LANE ? "lane" : "warp", l->bit[b], b);
        buf_printf(o, "    const int L%d_e = %s;\n", k, e.p);
        free(e.p);
        for (int d = 0; d < l->rank; d++) {
            int shift = lay_pos(l->rank, l->shape, d, 0);
            buf_printf(o, "    const int L%d_%d = (L%d_e >> %d) & %d;\n", k, d, k, shift, l->shape[d] - 1);
        }
        buf_printf(o, "    (void)L%d_e;\n", k);
        for (int d = 0; d < l->rank; d++) buf_printf(o, "    (void)L%d_%d;\n", k, d);
    }
}

static void emitter_reset(Emitter *E) {
    E->body.len = 0;
    if (E->body.p) E->body.p[0] = 0;
    E->indent = 1;
    E->ntmp = 0;
    E->last_line = -1;
    E->smem_bytes = 0;
    for (int i = 0; i < E->f->nvalues; i++) E->vals[i].lay = -1, E->vals[i].name = "undef";
    for (int k = 0; k < E->nlays; k++) E->lay_used[k] = false;
}

int cuda_emit(const IrFunc *f, const CudaEmitOptions *opt, CudaKernelCode *res, Diag *d) {
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
    E.vals = ARENA_ARRAY(&E.mem, Val, f->nvalues + 1);
    E.pf_chain = ARENA_ARRAY(&E.mem, bool, f->nvalues + 1);
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
    /* analysis passes: settle the layouts of locals */
    E.analysis = true;
    for (int pass = 0; pass < 8; pass++) {
        E.local_changed = false;
        E.errors = 0;
        emitter_reset(&E);
        emit_block(&E, f->body);
        if (!E.local_changed) break;
        if (pass == 6)   /* not settling: give every local a blocked layout */
            for (int i = 0; i < f->nlocals; i++) E.local_lay[i] = blocked(&E, &f->locals[i].type, -1);
    }
    E.analysis = false;
    E.errors = 0;
    emitter_reset(&E);
    emit_block(&E, f->body);
    if (E.errors) {
        free(E.body.p);
        arena_free(&E.mem);
        return -1;
    }
    Buf o = {0}, name = {0};
    buf_printf(&name, "tk_");
    sanitize(&name, f->name);
    buf_printf(&o, "// generated by tilec %s from kernel %s", TILEC_VERSION, f->name);
    for (int i = 0; i < f->nconsts; i++) {
        const IrConst *c = &f->consts[i];
        if (dtype_is_float(c->type.dtype)) buf_printf(&o, " %s=%g", c->name, c->v.f);
        else buf_printf(&o, " %s=%lld", c->name, (long long)c->v.i);
    }
    buf_printf(&o, "\n// %d threads, %d bytes of shared memory\n", E.threads, E.smem_bytes);
    buf_printf(&o, "#include \"%s\"\n\n", CUDA_DEVICE_HEADER_NAME);
    int occ = E.opt.num_warps ? 0 : f->occupancy;
    if (occ > 0) buf_printf(&o, "extern \"C\" __global__ void __launch_bounds__(%d, %d) %s(", E.threads, occ, name.p);
    else buf_printf(&o, "extern \"C\" __global__ void __launch_bounds__(%d) %s(", E.threads, name.p);
    emit_params(&E, &o);
    buf_printf(&o, ")\n{\n");
    buf_printf(&o, "    extern __shared__ __align__(16) unsigned char tile_smem[];\n");
    buf_printf(&o, "    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n");
    buf_printf(&o, "    (void)lane; (void)warp; (void)tile_smem;\n");
    emit_prologue(&E, &o);
    for (int i = 0; i < f->nlocals; i++) {
        int ll = E.local_lay[i];
        if (ll < 0) continue;
        int n = lay_nregs(&E.lays[ll]);
        if (n == 1) buf_printf(&o, "    %s l%d = 0;\n", ctype(f->locals[i].type.dtype), i);
        else buf_printf(&o, "    %s l%d[%d];\n", ctype(f->locals[i].type.dtype), i, n);
    }
    buf_printf(&o, "%s}\n", E.body.p ? E.body.p : "");
    free(E.body.p);
    res->source = o.p;
    res->name = name.p;
    res->threads = E.threads;
    res->smem_bytes = E.smem_bytes;
    arena_free(&E.mem);
    return 0;
}

void cuda_code_free(CudaKernelCode *c) {
    if (!c) return;
    free(c->source);
    free(c->name);
    c->source = c->name = NULL;
}
