/* lower_internal.h: what the two halves of the lowering walk share.
 *   lower.c          the walk: environment, constants, element-wise ops,
 *                    expressions, statements, fn inlining, kernels;
 *   lower_builtins.c the builtin functions (load/store, creation,
 *                    reductions, shape ops, mma, print, ...).
 * Only those two files include this header; it is not the compiler's
 * interface (that is lower.h).  Functions one file defines and the other
 * calls carry the prefix lw_ (lower_expr keeps its name). */
#ifndef TILEC_LOWER_INTERNAL_H
#define TILEC_LOWER_INTERNAL_H

#include "lower.h"
#include "scalar.h"
#include "sema.h"

#define MAX_INLINE_DEPTH 64
#define MAX_ARGS 16           /* parameters of one builtin or fn */

/* ---- values of the environment ---------------------------------------- */

typedef enum ValKind {
    V_ERROR,   /* poison: an error was reported already */
    V_NONE,    /* the result of a call that returns nothing */
    V_CONST,   /* compile-time scalar: dt, c; loose ones have dt I64/F64 */
    V_VALUE,   /* IR value id */
    V_LOCAL,   /* mutable local id (only in the environment; reads snapshot it) */
    V_PARAM,   /* scalar kernel parameter id (IrFunc.params), dtype dt */
    V_DIM,     /* extent `axis` of array parameter id (i32) */
    V_STRIDE,  /* stride `axis` of array parameter id (i64) */
    V_ARRAY,   /* array parameter id */
    V_FN,      /* fn declaration */
    V_TUPLE,   /* elems[0..n) */
    V_DTYPE,   /* dt */
    V_STRING,  /* str */
} ValKind;

typedef struct Val Val;
struct Val {
    ValKind kind;
    bool loose;
    DType dt;
    Scalar c;
    int id, axis;
    const Decl *fn;
    Val *elems;
    int n;
    const char *str;
    Loc loc;       /* V_CONST: where the literal or constant expression is */
    bool big;      /* loose integer literal of 2^63 or more (only u64 holds it) */
};

typedef struct Scope Scope;   /* names -> Val (lower.c) */

/* The state of one walk (one kernel specialisation, or the whole-program check). */
typedef struct Lower {
    Arena *a;
    Diag *d;
    const Program *prog;
    IrFunc *f;
    IrBlock *blk;            /* where ops are appended */
    Scope *globals;          /* file-level constants and fns */
    Scope *scope;
    int loop_depth;          /* runtime loops around us (in this kernel or fn body) */
    int static_depth;        /* static_range loops inside the innermost runtime loop */
    int region_depth;        /* runtime loops/ifs inside the fn being inlined */
    int unrolled;            /* static_range iterations so far */
    const Decl *fn_stack[MAX_INLINE_DEPTH];
    int nfn;
    bool too_big;            /* MAX_IR_VALUES reached: stop lowering */
    bool returned;           /* a `return` ended the fn being inlined */
    Val ret;
    int failed_asserts;      /* static_asserts that failed */
} Lower;

/* The arguments of one call, bound to parameter slots by position and name. */
typedef struct Args {
    const char *callee;
    Loc loc;
    Expr *slot[MAX_ARGS];
} Args;

static const Val poison = {.kind = V_ERROR};

static inline Val vconst(DType dt, Scalar c, bool loose) {
    Val v = {.kind = V_CONST, .dt = dt, .c = c, .loose = loose};
    return v;
}
static inline Val vloose_int(int64_t x) { Scalar c; c.i = x; return vconst(DT_I64, c, true); }
static inline Val vloose_float(double x) { Scalar c; c.f = x; return vconst(DT_F64, c, true); }
static inline Val vvalue(int id) { Val v = {.kind = V_VALUE, .id = id}; return v; }
static inline Val vkind(ValKind k, int id) { Val v = {.kind = k, .id = id}; return v; }

static inline bool is_scalar_like(const Val *v) {
    return v->kind == V_CONST || v->kind == V_VALUE || v->kind == V_LOCAL || v->kind == V_PARAM ||
           v->kind == V_DIM || v->kind == V_STRIDE;
}
static inline bool is_loose(const Val *v) { return v->kind == V_CONST && v->loose; }

/* ---- lower.c ---------------------------------------------------------- */

/* The value of an expression (poison after an error, and for NULL). */
Val lower_expr(Lower *L, Expr *e);

/* Emitting: appends to L->blk; reports (once) when the kernel grows too large. */
IrOp *lw_emit(Lower *L, OpId op, Loc loc, const Type *rt, int nargs, const int *args);
Type lw_mk_type(DType dt, int rank, const int64_t *shape);
int lw_emit_const(Lower *L, DType dt, Scalar c, Loc loc);
/* These three return `v` itself when nothing changes. */
int lw_cast_to(Lower *L, int v, DType dt, Loc loc);
int lw_broadcast_to(Lower *L, int v, const Type *shape, Loc loc);
int lw_reshape_to(Lower *L, int v, int rank, const int *shape, Loc loc);

/* Describing and typing values. */
const char *lw_val_desc(Lower *L, const Val *v, char *buf, size_t n);
DType lw_val_dtype(Lower *L, const Val *v);      /* loose constants: their default */
Type lw_val_type(Lower *L, const Val *v);
/* Reports that `v` is not a tile or scalar; false for poison too. */
bool lw_need_scalar_like(Lower *L, const Val *v, const char *what, Loc loc);
/* A tile/scalar Val as an IR value of dtype `dt` (DT_INVALID: its own). */
int lw_to_ir_as(Lower *L, const Val *v, DType dt, Loc loc);
int lw_to_ir(Lower *L, const Val *v, Loc loc);

/* Compile-time arguments; each reports its own error and returns false. */
bool lw_const_int(Lower *L, Expr *e, const char *what, int64_t *out);
bool lw_const_bool(Lower *L, Expr *e, const char *what, bool *out);
/* A tuple of integer constants (or one integer for a one-element tuple). */
bool lw_const_int_list(Lower *L, Expr *e, const char *what, int64_t *out, int *n);
bool lw_get_dtype(Lower *L, Expr *e, DType *out);

/* Element-wise operations (constants fold; loose literals resolve). */
Val lw_binary(Lower *L, OpId op, const char *name, Val a, Val b, Loc loc);
Val lw_unary(Lower *L, OpId op, const char *name, Val a, Loc loc);
/* The dtypes two operands take, resolving loose literals against each other. */
void lw_resolve_pair(Lower *L, const Val *a, const Val *b, DType *da, DType *db);

/* Binds `recv` (method receiver, or NULL) and `args` to the named params;
 * the first `nrequired` must be given.  Reports Python-style errors. */
bool lw_bind_args(Lower *L, const char *callee, Loc loc, Expr *recv, Expr *args,
                  const char *const *params, int nparams, int nrequired, Args *out);

/* ---- lower_builtins.c ------------------------------------------------- */

/* Calls builtin `name` (print, load, sum, exp, ...) into *out; false if there
 * is no builtin of that name (nothing is reported then). */
bool lw_call_builtin(Lower *L, const char *name, Expr *call, Expr *recv, Val *out);
/* a @ b: mma(a, b, zeros) with the accumulator dtype of the operands. */
Val lw_matmul(Lower *L, Val a, Val b, Loc loc);

#endif
