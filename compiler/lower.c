/* lower.c: semantic analysis and lowering of a kernel to the tile IR (lower.h).
 *
 * Design.  Sema and lowering are one walk over the AST per specialisation (a
 * kernel plus its constant values), as in Triton's code generator, because
 *   - `fn` helpers are generic over their argument types: each call is
 *     inlined, its body checked with the actual argument types;
 *   - tile shapes depend on constant values (shape=(CHUNK, BLOCK_H));
 *   - `static_range` bodies see a constant loop index, and an `if` on a
 *     constant condition lowers only the branch taken.
 * The walk keeps an environment of names -> Val: a compile-time constant, an
 * IR value, a mutable local, a scalar parameter or array extent (materialised
 * where used), an array parameter, a fn, a dtype, or a tuple of those.  It
 * evaluates constants (with scalar.c, so folding matches the interpreter),
 * asks sema.c for every type rule, and emits IR.  An error yields a poison Val
 * that later rules accept silently, so one mistake gives one message.
 * The builtin functions (load, store, sum, reshape, mma, print, ...) are
 * lowered in lower_builtins.c; lower_internal.h holds what both files share.
 *
 * The IR it makes is simple on purpose: element-wise ops get operands of one
 * shape (BROADCAST inserted) and one dtype (CAST inserted); reductions always
 * have an axis and drop it (keepdims and whole-tile reductions are RESHAPEs);
 * LOAD/STORE/GATHER get one i32 (or i64) scalar or tile index per array axis;
 * LOAD/STORE `ints` hold `order` (nints = 0 when none was given: identity).
 *
 * Choices made where the spec is silent (see also sema.c):
 *  - Literals and file-level constants are loose: they take the other
 *    operand's dtype (`LOG2E * x` keeps x's dtype).  Constant expressions of
 *    loose values fold in i64 / f64 and stay loose.  Kernel `const` parameters
 *    and `static_range` indices: parameters have their declared dtype; the
 *    static_range index is loose, like a literal.
 *  - `let` may shadow any name, even in the same block; a `var` may not reuse
 *    a name of its own block.  Assigning to a `let`, a parameter, a constant or
 *    a fn is an error.
 *  - A `var` keeps its type: an assigned value must have the var's dtype (a
 *    loose literal is converted to it) and a shape that broadcasts to the
 *    var's shape.  `acc += t` is `acc = acc + t` under that rule.
 *  - `range` bounds are integer scalars of their common dtype (i32 when all
 *    are literals).  A constant step may be negative (Python's countdown,
 *    lowered to an up-counting FOR); a runtime step must be positive (the
 *    interpreter and GPU run no iterations otherwise); a zero step is an error.
 *  - A loose integer literal must fit the integer dtype it takes (`i8 + 300`
 *    is an error, as in NumPy 2); astype converts with wrap-around.
 *  - `static_range` unrolls at most 4096 iterations per loop (65536 in all);
 *    break/continue directly inside it are errors; a negative constant step
 *    counts down.  Unrolling stops after the first iteration with an error.
 *    A kernel may hold at most MAX_IR_VALUES values after inlining and
 *    unrolling (so that no program can make the compiler run away).
 *  - `if`/`while` on a compile-time constant lower only the code that runs, so
 *    `if CHUNK > 64 { ... }` may guard code that would not check otherwise.
 *  - `fn` helpers: arguments by position or by parameter name; `return expr;`
 *    may appear anywhere outside runtime loops and runtime ifs (inside
 *    constant ifs and static_range too); a return inside a runtime loop or if
 *    is an error (use a var).  Recursion is an error.  fn values may be tuples.
 *  - Predefined loose constants `inf` and `nan` (any name may shadow them).
 *  - A call resolves to a fn of that name first, then to a builtin; a `let`
 *    name does not hide a builtin function.  `t.f(a)` is `f(t, a)` for
 *    builtins and fns alike.
 *  - `t.shape` of a tile is a tuple of constants; `x.shape` / `x.stride` of an
 *    array a tuple of runtime i32 / i64 scalars; `t.ndim` the rank; `t.dtype`
 *    its dtype (usable wherever a dtype is: astype(u, t.dtype)).
 *  - load/store `order=(p0, p1, ..)`: view axis i is array axis p_i; index and
 *    shape are given in the view's axes.
 *  - Reductions take an optional axis (none: the whole tile, to a scalar) and
 *    keepdims; argmax/argmin too (no axis: the index in row-major order);
 *    cumsum/cumprod need an axis.
 *  - load/store: the index tuple, shape and order have one entry per array
 *    axis; a tile stored must have the array's rank and dtype.  A single
 *    scalar may stand for a one-element index tuple or shape.
 *  - zeros/ones/full need the dtype; arange's dtype defaults to i32.
 *  - num_warps / occupancy hints: from `with (...)`, overridden by a constant
 *    parameter of the same name, overridden by a binding of that name (a
 *    binding named num_warps/occupancy is accepted without such a parameter).
 *  - The check at module load (lower_check_program) lowers each kernel whose
 *    constants all have defaults.  A kernel with constants lacking defaults is
 *    lowered with the values of its tune block when that block names them all:
 *    the first value of each axis, or, when a point fails only static_asserts
 *    (the kernel rejects it and the autotuner skips it), the next point, up to
 *    MAX_TUNE_CHECK_POINTS; if every point tried is rejected, or there is no
 *    such tune block, only the signature is checked.
 */
#include "lower_internal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_UNROLL_PER_LOOP 4096
#define MAX_UNROLL_TOTAL 65536
#define MAX_TUPLE 64
#define MAX_IR_VALUES 500000    /* inlining and unrolling stop here with an error */
#define MAX_TUNE_CHECK_POINTS 32   /* tune points tried when checking a kernel at load */

static void lower_stmts(Lower *L, Stmt *s);
static void lower_stmt(Lower *L, Stmt *s);

/* ---- scopes ----------------------------------------------------------- */

/* The values of the environment (Val) are in lower_internal.h. */
typedef enum EntryKind { ENT_LET, ENT_VAR, ENT_PARAM, ENT_CONST, ENT_FN, ENT_BUILTIN } EntryKind;

typedef struct Entry {
    const char *name;
    EntryKind kind;
    Val val;
    struct Entry *next;
} Entry;

struct Scope {
    Scope *parent;
    Entry *entries;
};

static void push_scope(Lower *L, Scope *parent) {
    Scope *s = ARENA_NEW(L->a, Scope);
    s->parent = parent;
    L->scope = s;
}

static Entry *find_in(Scope *s, const char *name) {
    for (Entry *e = s->entries; e; e = e->next)
        if (strcmp(e->name, name) == 0) return e;
    return NULL;
}

static Entry *lookup(Lower *L, const char *name) {
    for (Scope *s = L->scope; s; s = s->parent) {
        Entry *e = find_in(s, name);
        if (e) return e;
    }
    return NULL;
}

static Entry *bind(Lower *L, const char *name, EntryKind kind, Val v) {
    Entry *e = ARENA_NEW(L->a, Entry);
    e->name = name;
    e->kind = kind;
    e->val = v;
    e->next = L->scope->entries;
    L->scope->entries = e;
    return e;
}

/* ---- emitting --------------------------------------------------------- */

IrOp *lw_emit(Lower *L, OpId op, Loc loc, const Type *rt, int nargs, const int *args) {
    if (L->f->nvalues >= MAX_IR_VALUES && !L->too_big) {
        diag_error(L->d, loc, "kernel too large: more than %d IR values after inlining and unrolling",
                   MAX_IR_VALUES);
        L->too_big = true;
    }
    return ir_append(L->f, L->blk, op, loc, rt, nargs, args);
}

Type lw_mk_type(DType dt, int rank, const int64_t *shape) {
    Type t = type_scalar(dt);
    t.rank = rank;
    for (int i = 0; i < rank; i++) t.shape[i] = (int)shape[i];
    return t;
}

int lw_emit_const(Lower *L, DType dt, Scalar c, Loc loc) {
    Type t = type_scalar(dt);
    IrOp *op = lw_emit(L, OP_CONST, loc, &t, 0, NULL);
    if (dtype_is_float(dt)) op->lit.f = c.f;
    else op->lit.u = c.u;
    return op->result;
}

int lw_cast_to(Lower *L, int v, DType dt, Loc loc) {
    const Type *t = ir_type(L->f, v);
    if (t->dtype == dt) return v;
    Type rt = *t;
    rt.dtype = dt;
    return lw_emit(L, OP_CAST, loc, &rt, 1, &v)->result;
}

int lw_broadcast_to(Lower *L, int v, const Type *shape, Loc loc) {
    const Type *t = ir_type(L->f, v);
    if (type_same_shape(t, shape)) return v;
    Type rt = *shape;
    rt.dtype = t->dtype;
    return lw_emit(L, OP_BROADCAST, loc, &rt, 1, &v)->result;
}

int lw_reshape_to(Lower *L, int v, int rank, const int *shape, Loc loc) {
    Type rt = *ir_type(L->f, v);
    rt.rank = rank;
    for (int i = 0; i < TILE_MAX_RANK; i++) rt.shape[i] = i < rank ? shape[i] : 0;
    if (type_same_shape(&rt, ir_type(L->f, v))) return v;
    return lw_emit(L, OP_RESHAPE, loc, &rt, 1, &v)->result;
}

const char *lw_val_desc(Lower *L, const Val *v, char *buf, size_t n) {
    switch (v->kind) {
    case V_NONE: return "nothing (the call returns no value)";
    case V_ARRAY: snprintf(buf, n, "array '%s'", L->f->params[v->id].name); return buf;
    case V_FN: snprintf(buf, n, "fn '%s'", v->fn->name); return buf;
    case V_TUPLE: snprintf(buf, n, "a tuple of %d", v->n); return buf;
    case V_DTYPE: snprintf(buf, n, "the dtype %s", dtype_name(v->dt)); return buf;
    case V_STRING: return "a string";
    default: return "a value";
    }
}

/* The dtype a value has (loose constants: their default). */
DType lw_val_dtype(Lower *L, const Val *v) {
    switch (v->kind) {
    case V_CONST: return v->loose ? sema_default_dtype(v->dt == DT_F64, v->c.i) : v->dt;
    case V_VALUE: return ir_type(L->f, v->id)->dtype;
    case V_LOCAL: return L->f->locals[v->id].type.dtype;
    case V_PARAM: return L->f->params[v->id].dtype;
    case V_DIM: return DT_I32;
    case V_STRIDE: return DT_I64;
    default: return DT_INVALID;
    }
}

Type lw_val_type(Lower *L, const Val *v) {
    if (v->kind == V_VALUE) return *ir_type(L->f, v->id);
    if (v->kind == V_LOCAL) return L->f->locals[v->id].type;
    return type_scalar(lw_val_dtype(L, v));
}

/* Reports that `v` is not a tile or scalar; false for poison too. */
bool lw_need_scalar_like(Lower *L, const Val *v, const char *what, Loc loc) {
    if (is_scalar_like(v)) return true;
    if (v->kind != V_ERROR) {
        char buf[160];
        bool op = !isalpha((unsigned char)what[0]) && what[0] != '\'';
        diag_error(L->d, loc, op ? "'%s' needs a tile or scalar, got %s" : "%s needs a tile or scalar, got %s", what,
                   lw_val_desc(L, v, buf, sizeof buf));
    }
    return false;
}

/* A loose integer meeting a narrower integer dtype must fit in it: `i8 + 300`
 * is an error (as in NumPy 2), not a silent wrap. */
static bool loose_fits(Lower *L, const Val *v, DType dt, Loc loc) {
    if (!is_loose(v) || v->dt != DT_I64 || !(dtype_is_int(dt) || dt == DT_BOOL)) return true;
    if (v->loc.line) loc = v->loc;
    int bits = dtype_bits(dt);
    int64_t x = v->c.i;
    bool ok;
    if (v->big) ok = dt == DT_U64;
    else if (dt == DT_BOOL) ok = x == 0 || x == 1;
    else if (bits == 64) ok = !dtype_is_unsigned(dt) || x >= 0;
    else {
        int64_t lim = (int64_t)1 << (dtype_is_unsigned(dt) ? bits : bits - 1);
        ok = dtype_is_unsigned(dt) ? (x >= 0 && x < lim) : (x >= -lim && x < lim);
    }
    if (ok) return true;
    if (v->big) diag_error(L->d, loc, "integer literal '%llu' does not fit in %s", (unsigned long long)x, dtype_name(dt));
    else diag_error(L->d, loc, "integer literal '%lld' does not fit in %s", (long long)x, dtype_name(dt));
    return false;
}

/* Materialises a tile/scalar Val as an IR value of dtype `dt` (DT_INVALID:
 * its own dtype).  Constants convert at compile time; values get a CAST. */
int lw_to_ir_as(Lower *L, const Val *v, DType dt, Loc loc) {
    if (dt == DT_INVALID) dt = lw_val_dtype(L, v);
    int id;
    switch (v->kind) {
    case V_CONST:
        loose_fits(L, v, dt, loc);
        return lw_emit_const(L, dt, scalar_convert(v->dt, dt, v->c), loc);
    case V_VALUE: id = v->id; break;
    case V_LOCAL: {
        IrOp *op = lw_emit(L, OP_LOCAL_GET, loc, &L->f->locals[v->id].type, 0, NULL);
        op->local = v->id;
        id = op->result;
        break;
    }
    case V_PARAM: {
        Type t = type_scalar(L->f->params[v->id].dtype);
        IrOp *op = lw_emit(L, OP_PARAM, loc, &t, 0, NULL);
        op->index = v->id;
        id = op->result;
        break;
    }
    case V_DIM: case V_STRIDE: {
        Type t = type_scalar(v->kind == V_DIM ? DT_I32 : DT_I64);
        IrOp *op = lw_emit(L, v->kind == V_DIM ? OP_ARRAY_DIM : OP_ARRAY_STRIDE, loc, &t, 0, NULL);
        op->array = v->id;
        op->axis = v->axis;
        id = op->result;
        break;
    }
    default:
        return -1;
    }
    return lw_cast_to(L, id, dt, loc);
}

int lw_to_ir(Lower *L, const Val *v, Loc loc) { return lw_to_ir_as(L, v, DT_INVALID, loc); }

/* ---- compile-time constants ------------------------------------------- */

static bool const_int_val(Lower *L, const Val *v, const char *what, Loc loc, int64_t *out) {
    if (v->kind == V_ERROR) return false;
    if (v->kind == V_CONST && (dtype_is_int(v->dt) || v->dt == DT_BOOL)) {
        *out = dtype_is_unsigned(v->dt) ? (int64_t)v->c.u : v->c.i;
        return true;
    }
    char buf[160];
    if (v->kind == V_CONST)
        diag_error(L->d, loc, "%s must be an integer constant, got a %s", what, dtype_name(v->loose ? DT_F32 : v->dt));
    else if (is_scalar_like(v))
        diag_error(L->d, loc, "%s must be a compile-time constant", what);
    else
        diag_error(L->d, loc, "%s must be an integer constant, got %s", what, lw_val_desc(L, v, buf, sizeof buf));
    return false;
}

bool lw_const_int(Lower *L, Expr *e, const char *what, int64_t *out) {
    Val v = lower_expr(L, e);
    return const_int_val(L, &v, what, e->loc, out);
}

bool lw_const_bool(Lower *L, Expr *e, const char *what, bool *out) {
    Val v = lower_expr(L, e);
    if (v.kind == V_ERROR) return false;
    if (v.kind == V_CONST && (v.dt == DT_BOOL || (v.loose && v.dt == DT_I64))) {
        *out = v.c.i != 0;
        return true;
    }
    diag_error(L->d, e->loc, "%s must be a constant true or false", what);
    return false;
}

/* A tuple of integer constants (or one integer for a one-element tuple). */
bool lw_const_int_list(Lower *L, Expr *e, const char *what, int64_t *out, int *n) {
    Val v = lower_expr(L, e);
    if (v.kind == V_ERROR) return false;
    if (v.kind != V_TUPLE) {
        *n = 1;
        return const_int_val(L, &v, what, e->loc, &out[0]);
    }
    if (v.n > TILE_MAX_RANK) {
        diag_error(L->d, e->loc, "%s has %d entries: at most %d", what, v.n, TILE_MAX_RANK);
        return false;
    }
    *n = v.n;
    for (int i = 0; i < v.n; i++)
        if (!const_int_val(L, &v.elems[i], what, e->loc, &out[i])) return false;
    return true;
}

bool lw_get_dtype(Lower *L, Expr *e, DType *out) {
    Val v = lower_expr(L, e);
    if (v.kind == V_ERROR) return false;
    if (v.kind != V_DTYPE) {
        char buf[160];
        diag_error(L->d, e->loc, "expected a dtype (f32, i32, ...), got %s", lw_val_desc(L, &v, buf, sizeof buf));
        return false;
    }
    *out = v.dt;
    return true;
}

/* ---- element-wise operations ------------------------------------------ */

/* The dtypes two operands take, resolving loose literals against each other. */
void lw_resolve_pair(Lower *L, const Val *a, const Val *b, DType *da, DType *db) {
    *da = lw_val_dtype(L, a);
    *db = lw_val_dtype(L, b);
    if (is_loose(a) && is_loose(b)) { *da = a->dt; *db = b->dt; }
    else if (is_loose(a)) *da = sema_loose_dtype(*db, a->dt == DT_F64);
    else if (is_loose(b)) *db = sema_loose_dtype(*da, b->dt == DT_F64);
}

static Val fold_binary(Lower *L, OpId op, DType operand, DType result, const Val *a, const Val *b,
                       bool loose, Loc loc) {
    bool fault = false;
    if (!loose_fits(L, a, operand, loc) || !loose_fits(L, b, operand, loc)) return poison;
    Scalar x = scalar_convert(a->dt, operand, a->c), y = scalar_convert(b->dt, operand, b->c);
    Scalar r = scalar_binary(op, operand, x, y, &fault);
    if (fault) {
        diag_error(L->d, loc, "integer division by zero in a constant expression");
        return poison;
    }
    return vconst(result, r, loose && result != DT_BOOL);
}

Val lw_binary(Lower *L, OpId op, const char *name, Val a, Val b, Loc loc) {
    if (!lw_need_scalar_like(L, &a, name, loc) || !lw_need_scalar_like(L, &b, name, loc)) return poison;
    DType da, db, operand, result;
    lw_resolve_pair(L, &a, &b, &da, &db);
    if (!sema_binary(L->d, loc, op, name, da, db, &operand, &result)) return poison;
    if (a.kind == V_CONST && b.kind == V_CONST)
        return fold_binary(L, op, operand, result, &a, &b, is_loose(&a) && is_loose(&b), loc);
    Type ta = lw_val_type(L, &a), tb = lw_val_type(L, &b), shape;
    ta.dtype = da;
    tb.dtype = db;
    if (!sema_check_broadcast(L->d, loc, &ta, &tb, &shape)) return poison;
    int ia = lw_broadcast_to(L, lw_to_ir_as(L, &a, operand, loc), &shape, loc);
    int ib = lw_broadcast_to(L, lw_to_ir_as(L, &b, operand, loc), &shape, loc);
    Type rt = shape;
    rt.dtype = result;
    int args[2] = {ia, ib};
    return vvalue(lw_emit(L, op, loc, &rt, 2, args)->result);
}

Val lw_unary(Lower *L, OpId op, const char *name, Val a, Loc loc) {
    if (!lw_need_scalar_like(L, &a, name, loc)) return poison;
    DType operand, result;
    if (is_loose(&a)) {
        /* fold in the loose domain (i64 / f64); float functions of an
         * integer literal become float literals */
        DType in = a.dt;
        if (ir_op_info[op].rule == RULE_UNARY_FLOAT && in == DT_I64) {
            a = vloose_float((double)a.c.i);
            in = DT_F64;
        }
        if (!sema_unary(L->d, loc, op, name, in, &operand, &result)) return poison;
        return vconst(result, scalar_unary(op, operand, a.c), result != DT_BOOL);
    }
    if (!sema_unary(L->d, loc, op, name, lw_val_dtype(L, &a), &operand, &result)) return poison;
    if (a.kind == V_CONST)
        return vconst(result, scalar_unary(op, operand, scalar_convert(a.dt, operand, a.c)), false);
    int x = lw_to_ir_as(L, &a, operand, loc);
    Type rt = *ir_type(L->f, x);
    rt.dtype = result;
    return vvalue(lw_emit(L, op, loc, &rt, 1, &x)->result);
}

/* ---- call arguments --------------------------------------------------- */

/* Binds `recv` (method receiver, or NULL) and `args` to the named params;
 * the first `nrequired` must be given.  Reports Python-style errors. */
bool lw_bind_args(Lower *L, const char *callee, Loc loc, Expr *recv, Expr *args,
                  const char *const *params, int nparams, int nrequired, Args *out) {
    memset(out, 0, sizeof *out);
    out->callee = callee;
    out->loc = loc;
    int pos = 0;
    bool ok = true;
    if (recv) out->slot[pos++] = recv;
    for (Expr *e = args; e; e = e->next) {
        if (e->kind != EX_KWARG) {
            if (pos >= nparams) {
                diag_error(L->d, e->loc, "%s() takes %d argument%s", callee, nparams, nparams == 1 ? "" : "s");
                return false;
            }
            out->slot[pos++] = e;
            continue;
        }
        int k = -1;
        for (int i = 0; i < nparams; i++)
            if (strcmp(params[i], e->name) == 0) k = i;
        if (k < 0) {
            diag_error(L->d, e->loc, "%s() got an unexpected keyword argument '%s'", callee, e->name);
            ok = false;
        } else if (out->slot[k]) {
            diag_error(L->d, e->loc, "%s() got multiple values for argument '%s'", callee, e->name);
            ok = false;
        } else {
            out->slot[k] = e->a;
        }
    }
    for (int i = 0; i < nrequired && ok; i++)
        if (!out->slot[i]) {
            diag_error(L->d, loc, "%s() missing required argument '%s'", callee, params[i]);
            ok = false;
        }
    return ok;
}

/* ---- fn helpers (inlined at each call) -------------------------------- */

static Val call_fn(Lower *L, const Decl *fn, Expr *call, Expr *recv) {
    if (L->too_big) return poison;
    for (int i = 0; i < L->nfn; i++)
        if (L->fn_stack[i] == fn) {
            diag_error(L->d, call->loc, "recursive call of fn '%s': fn helpers are inlined and cannot recurse", fn->name);
            return poison;
        }
    if (L->nfn == MAX_INLINE_DEPTH) {
        diag_error(L->d, call->loc, "fn calls nested more than %d deep", MAX_INLINE_DEPTH);
        return poison;
    }
    const char *params[MAX_ARGS] = {0};
    int np = 0;
    for (Name *n = fn->fn_params; n; n = n->next) {
        if (np == MAX_ARGS) {
            diag_error(L->d, fn->loc, "fn '%s' has more than %d parameters", fn->name, MAX_ARGS);
            return poison;
        }
        params[np++] = n->name;
    }
    Args A;
    if (!lw_bind_args(L, fn->name, call->loc, recv, call->args, params, np, np, &A)) return poison;
    Val args[MAX_ARGS];
    bool ok = true;
    for (int i = 0; i < np; i++) {
        args[i] = lower_expr(L, A.slot[i]);
        if (args[i].kind == V_ERROR) ok = false;
        if (args[i].kind == V_NONE) {
            diag_error(L->d, A.slot[i]->loc, "argument '%s' of fn '%s' has no value", params[i], fn->name);
            ok = false;
        }
    }
    if (!ok) return poison;
    /* the body sees only file-level names and its parameters */
    Scope *saved_scope = L->scope;
    int saved_loop = L->loop_depth, saved_static = L->static_depth, saved_region = L->region_depth;
    bool saved_returned = L->returned;
    Val saved_ret = L->ret;
    push_scope(L, L->globals);
    for (int i = 0; i < np; i++) bind(L, params[i], ENT_PARAM, args[i]);
    push_scope(L, L->scope);
    L->fn_stack[L->nfn++] = fn;
    L->loop_depth = L->static_depth = L->region_depth = 0;
    L->returned = false;
    L->ret = vkind(V_NONE, 0);
    lower_stmts(L, fn->body);
    Val result = L->too_big ? poison : L->ret;
    L->nfn--;
    L->scope = saved_scope;
    L->loop_depth = saved_loop;
    L->static_depth = saved_static;
    L->region_depth = saved_region;
    L->returned = saved_returned;
    L->ret = saved_ret;
    return result;
}

static Val call(Lower *L, Expr *e, const char *name, Expr *recv) {
    Entry *ent = lookup(L, name);
    if (ent && ent->val.kind == V_FN) return call_fn(L, ent->val.fn, e, recv);
    Val out;
    if (lw_call_builtin(L, name, e, recv, &out)) return out;
    const Decl *kernel = NULL;
    for (const Decl *d = L->prog->decls; d; d = d->next)
        if (d->kind == DECL_KERNEL && strcmp(d->name, name) == 0) kernel = d;
    if (kernel && !recv)
        diag_error(L->d, e->loc, "cannot call kernel '%s' (only fn helpers can be called)", name);
    else if (ent)
        diag_error(L->d, e->loc, "'%s' is not a function", name);
    else if (recv)
        diag_error(L->d, e->loc, "no method or function named '%s'", name);
    else
        diag_error(L->d, e->loc, "unknown function '%s'", name);
    return poison;
}

/* ---- expressions ------------------------------------------------------ */

static OpId binop_to_op(int op) {
    switch (op) {
    case BIN_ADD: return OP_ADD;
    case BIN_SUB: return OP_SUB;
    case BIN_MUL: return OP_MUL;
    case BIN_DIV: return OP_DIV;
    case BIN_MOD: return OP_MOD;
    case BIN_LT: return OP_LT;
    case BIN_LE: return OP_LE;
    case BIN_GT: return OP_GT;
    case BIN_GE: return OP_GE;
    case BIN_EQ: return OP_EQ;
    case BIN_NE: return OP_NE;
    case BIN_LAND: return OP_LAND;
    case BIN_LOR: return OP_LOR;
    case BIN_AND: return OP_BITAND;
    case BIN_OR: return OP_BITOR;
    case BIN_XOR: return OP_BITXOR;
    case BIN_SHL: return OP_SHL;
    case BIN_SHR: return OP_SHR;
    default: return OP_COUNT;
    }
}

static Val member(Lower *L, Expr *e) {
    Val base = lower_expr(L, e->a);
    if (base.kind == V_ERROR) return poison;
    const char *m = e->name;
    if (base.kind == V_ARRAY && (strcmp(m, "shape") == 0 || strcmp(m, "stride") == 0)) {
        int rank = L->f->params[base.id].rank;
        Val t = {.kind = V_TUPLE, .n = rank, .elems = ARENA_ARRAY(L->a, Val, rank > 0 ? rank : 1)};
        for (int i = 0; i < rank; i++) {
            t.elems[i] = vkind(m[1] == 'h' ? V_DIM : V_STRIDE, base.id);
            t.elems[i].axis = i;
        }
        return t;
    }
    if (base.kind == V_ARRAY && strcmp(m, "ndim") == 0) return vloose_int(L->f->params[base.id].rank);
    if (is_scalar_like(&base)) {
        Type t = lw_val_type(L, &base);
        if (strcmp(m, "shape") == 0) {
            Val r = {.kind = V_TUPLE, .n = t.rank, .elems = ARENA_ARRAY(L->a, Val, t.rank > 0 ? t.rank : 1)};
            for (int i = 0; i < t.rank; i++) r.elems[i] = vloose_int(t.shape[i]);
            return r;
        }
        if (strcmp(m, "ndim") == 0) return vloose_int(t.rank);
        if (strcmp(m, "dtype") == 0) { Val r = {.kind = V_DTYPE, .dt = t.dtype}; return r; }
    }
    char buf[160];
    diag_error(L->d, e->loc, "%s has no member '%s'", lw_val_desc(L, &base, buf, sizeof buf), m);
    return poison;
}

static Val index_expr(Lower *L, Expr *e) {
    Val base = lower_expr(L, e->a);
    if (base.kind == V_ERROR) return poison;
    if (base.kind != V_TUPLE) {
        char buf[160];
        diag_error(L->d, e->loc, "cannot index %s (only tuples such as x.shape; use extract() for tiles)",
                   lw_val_desc(L, &base, buf, sizeof buf));
        return poison;
    }
    int64_t i;
    if (!lw_const_int(L, e->b, "a tuple index", &i)) return poison;
    if (i < -base.n || i >= base.n) {
        diag_error(L->d, e->b->loc, "index %lld is out of range for a tuple of %d", (long long)i, base.n);
        return poison;
    }
    return base.elems[i < 0 ? i + base.n : i];
}

static Val lower_expr_kind(Lower *L, Expr *e);

/* Every constant remembers where it was written, for messages about it. */
Val lower_expr(Lower *L, Expr *e) {
    if (!e) return poison;
    Val v = lower_expr_kind(L, e);
    if (v.kind == V_CONST && !v.loc.line) v.loc = e->loc;
    return v;
}

static Val lower_expr_kind(Lower *L, Expr *e) {
    switch (e->kind) {
    case EX_INT: {
        Val v = vloose_int(e->ival);
        v.big = e->ival < 0;   /* literals have no sign: this one is >= 2^63 */
        return v;
    }
    case EX_FLOAT: return vloose_float(e->fval);
    case EX_BOOL: { Scalar c; c.i = e->ival != 0; return vconst(DT_BOOL, c, false); }
    case EX_STRING: { Val v = {.kind = V_STRING, .str = e->sval}; return v; }
    case EX_DTYPE: { Val v = {.kind = V_DTYPE, .dt = e->dtype}; return v; }
    case EX_NAME: {
        Entry *ent = lookup(L, e->name);
        if (!ent) {
            diag_error(L->d, e->loc, "unknown name '%s'", e->name);
            return poison;
        }
        if (ent->val.kind == V_LOCAL) {
            /* read the var now: later assignments must not change this value */
            IrOp *op = lw_emit(L, OP_LOCAL_GET, e->loc, &L->f->locals[ent->val.id].type, 0, NULL);
            op->local = ent->val.id;
            return vvalue(op->result);
        }
        return ent->val;
    }
    case EX_UNARY: {
        Val a = lower_expr(L, e->a);
        if (e->op == '-') return lw_unary(L, OP_NEG, "-", a, e->loc);
        if (e->op == '!') return lw_unary(L, OP_NOT, "!", a, e->loc);
        return lw_unary(L, OP_BITNOT, "~", a, e->loc);
    }
    case EX_BINARY: {
        Val a = lower_expr(L, e->a), b = lower_expr(L, e->b);
        if (a.kind == V_ERROR || b.kind == V_ERROR) return poison;
        if (e->op == BIN_MATMUL) return lw_matmul(L, a, b, e->loc);
        OpId op = binop_to_op(e->op);
        if (op == OP_COUNT) {
            diag_error(L->d, e->loc, "unsupported operator");
            return poison;
        }
        return lw_binary(L, op, binop_spelling((BinOp)e->op), a, b, e->loc);
    }
    case EX_TUPLE: {
        if (e->nelems > MAX_TUPLE) {
            diag_error(L->d, e->loc, "tuple of %d elements: at most %d", e->nelems, MAX_TUPLE);
            return poison;
        }
        Val t = {.kind = V_TUPLE, .elems = ARENA_ARRAY(L->a, Val, e->nelems > 0 ? e->nelems : 1)};
        for (Expr *x = e->elems; x && t.n < MAX_TUPLE; x = x->next) {
            Val v = lower_expr(L, x);
            if (v.kind == V_ERROR) return poison;
            t.elems[t.n++] = v;
        }
        return t;
    }
    case EX_CALL: return call(L, e, e->name, NULL);
    case EX_METHOD: return call(L, e, e->name, e->a);
    case EX_MEMBER: return member(L, e);
    case EX_INDEX: return index_expr(L, e);
    case EX_KWARG:
        diag_error(L->d, e->loc, "keyword argument '%s' outside a call", e->name);
        return poison;
    }
    return poison;
}

/* ---- statements ------------------------------------------------------- */

static void lower_block(Lower *L, Stmt *body) {
    Scope *saved = L->scope;
    push_scope(L, saved);
    lower_stmts(L, body);
    L->scope = saved;
}

/* Lowers `body` into region `blk` (a runtime loop or if). */
static void lower_region(Lower *L, IrBlock *blk, Stmt *body, bool is_loop, Stmt *single) {
    IrBlock *saved_blk = L->blk;
    int saved_static = L->static_depth;
    L->blk = blk;
    L->region_depth++;
    if (is_loop) { L->loop_depth++; L->static_depth = 0; }
    if (single) lower_stmt(L, single);
    else lower_block(L, body);
    if (is_loop) { L->loop_depth--; L->static_depth = saved_static; }
    L->region_depth--;
    L->blk = saved_blk;
}

static void set_name_hint(Lower *L, const Val *v, const char *name) {
    if (v->kind == V_VALUE && !L->f->values[v->id].name) L->f->values[v->id].name = name;
}

/* var := value, keeping the var's type. */
static void assign_local(Lower *L, int local, Val v, const char *name, Loc loc) {
    if (v.kind == V_ERROR) return;
    if (!lw_need_scalar_like(L, &v, "assignment", loc)) return;
    Type lt = L->f->locals[local].type;
    Type vt = lw_val_type(L, &v);
    char sa[200], sb[200];
    if (is_loose(&v)) {
        if (v.dt == DT_F64 && !dtype_is_float(lt.dtype)) {
            diag_error(L->d, loc, "cannot assign a float literal to var '%s' of type %s", name, type_str(&lt, sa, sizeof sa));
            return;
        }
        vt.dtype = lt.dtype;
    }
    if (vt.dtype != lt.dtype || !sema_broadcasts_to(&vt, &lt)) {
        diag_error(L->d, loc, "cannot assign %s to var '%s' of type %s%s", type_str(&vt, sa, sizeof sa), name,
                   type_str(&lt, sb, sizeof sb), vt.dtype != lt.dtype ? " (use astype)" : "");
        return;
    }
    int x = lw_broadcast_to(L, lw_to_ir_as(L, &v, lt.dtype, loc), &lt, loc);
    IrOp *o = lw_emit(L, OP_LOCAL_SET, loc, NULL, 1, &x);
    o->local = local;
}

static void lower_assign(Lower *L, Stmt *s) {
    Entry *ent = lookup(L, s->name);
    if (!ent) {
        diag_error(L->d, s->loc, "unknown name '%s'", s->name);
        lower_expr(L, s->expr);
        return;
    }
    if (ent->kind != ENT_VAR) {
        static const char *const why[] = {
            [ENT_LET] = "it was declared with let (declare it with var)",
            [ENT_PARAM] = "it is a parameter (copy it into a var first)",
            [ENT_CONST] = "it is a constant", [ENT_FN] = "it is a fn", [ENT_BUILTIN] = "it is a builtin constant"};
        diag_error(L->d, s->loc, "cannot assign to '%s': %s", s->name, why[ent->kind]);
        lower_expr(L, s->expr);
        return;
    }
    Val v = lower_expr(L, s->expr);
    if (ent->val.kind == V_ERROR) return;
    if (s->compound) {
        IrOp *get = lw_emit(L, OP_LOCAL_GET, s->loc, &L->f->locals[ent->val.id].type, 0, NULL);
        get->local = ent->val.id;
        v = lw_binary(L, binop_to_op(s->op), binop_spelling((BinOp)s->op), vvalue(get->result), v, s->loc);
    }
    assign_local(L, ent->val.id, v, s->name, s->loc);
}

static void lower_let(Lower *L, Stmt *s) {
    Val v = lower_expr(L, s->expr);
    if (v.kind == V_NONE) {
        diag_error(L->d, s->expr->loc, "the expression has no value");
        v = poison;
    }
    if (!s->tuple_pattern) {
        set_name_hint(L, &v, s->names->name);
        bind(L, s->names->name, ENT_LET, v);
        return;
    }
    int n = 0;
    for (Name *nm = s->names; nm; nm = nm->next) n++;
    if (v.kind != V_ERROR && (v.kind != V_TUPLE || v.n != n)) {
        if (v.kind == V_TUPLE)
            diag_error(L->d, s->loc, "cannot unpack a tuple of %d into %d names", v.n, n);
        else
            diag_error(L->d, s->loc, "cannot unpack a non-tuple into %d names", n);
        v = poison;
    }
    int i = 0;
    for (Name *nm = s->names; nm; nm = nm->next, i++) {
        Val x = v.kind == V_TUPLE ? v.elems[i] : poison;
        set_name_hint(L, &x, nm->name);
        bind(L, nm->name, ENT_LET, x);
    }
}

static void lower_var(Lower *L, Stmt *s) {
    Val v = lower_expr(L, s->expr);
    const char *name = s->names->name;
    if (find_in(L->scope, name) && find_in(L->scope, name)->kind == ENT_VAR)
        diag_error(L->d, s->names->loc, "'%s' is already declared in this block", name);
    if (v.kind != V_ERROR && !is_scalar_like(&v)) {
        char buf[160];
        diag_error(L->d, s->expr->loc, "var '%s' must hold a tile or scalar, got %s", name,
                   lw_val_desc(L, &v, buf, sizeof buf));
        v = poison;
    }
    if (v.kind == V_ERROR) {
        bind(L, name, ENT_VAR, poison);   /* still a var: assignments to it stay quiet */
        return;
    }
    Type t = lw_val_type(L, &v);
    int local = ir_new_local(L->f, t, name, s->loc);
    assign_local(L, local, v, name, s->loc);
    Val lv = vkind(V_LOCAL, local);
    bind(L, name, ENT_VAR, lv);
}

/* The common integer dtype of range() bounds (i32 if all are literals). */
static bool range_dtype(Lower *L, Val *b, int n, Loc loc, DType *out) {
    DType dt = DT_INVALID;
    for (int i = 0; i < n; i++) {
        if (b[i].kind == V_ERROR) return false;
        if (!lw_need_scalar_like(L, &b[i], "range", loc)) return false;
        Type t = lw_val_type(L, &b[i]);
        if (t.rank != 0 || !dtype_is_int(t.dtype)) {
            char buf[200];
            diag_error(L->d, loc, "range() bounds must be integer scalars, got %s", type_str(&t, buf, sizeof buf));
            return false;
        }
        if (is_loose(&b[i])) continue;
        if (dt == DT_INVALID) dt = t.dtype;
        else if (!sema_check_promote(L->d, loc, "range()", dt, t.dtype, &dt)) return false;
    }
    *out = dt == DT_INVALID ? DT_I32 : dt;
    return true;
}

static void lower_for(Lower *L, Stmt *s) {
    const char *what = s->is_static ? "static_range()" : "range()";
    Val b[3];
    Loc at[3];
    int n = 0;
    for (Expr *e = s->range_args; e && n < 3; e = e->next, n++) {
        b[n] = lower_expr(L, e);
        at[n] = e->loc;
    }
    if (s->nrange_args < 1 || s->nrange_args > 3) {
        diag_error(L->d, s->loc, "%s takes 1 to 3 arguments", what);
        return;
    }
    Val lo = n > 1 ? b[0] : vloose_int(0), hi = n > 1 ? b[1] : b[0], step = n > 2 ? b[2] : vloose_int(1);
    Loc lo_at = at[0], hi_at = n > 1 ? at[1] : at[0], step_at = n > 2 ? at[2] : s->loc;
    const char *var = s->names->name;
    if (s->is_static) {
        int64_t l, h, st;
        if (!const_int_val(L, &lo, "static_range() bound", lo_at, &l) ||
            !const_int_val(L, &hi, "static_range() bound", hi_at, &h) ||
            !const_int_val(L, &step, "static_range() step", step_at, &st))
            return;
        if (st == 0) {
            diag_error(L->d, step_at, "static_range() step must not be zero");
            return;
        }
        int64_t count = st > 0 ? (h > l ? (h - l + st - 1) / st : 0) : (l > h ? (l - h - st - 1) / -st : 0);
        if (count > MAX_UNROLL_PER_LOOP || L->unrolled + count > MAX_UNROLL_TOTAL) {
            diag_error(L->d, s->loc, "static_range of %lld iterations: at most %d per loop and %d in all are unrolled",
                       (long long)count, MAX_UNROLL_PER_LOOP, MAX_UNROLL_TOTAL);
            return;
        }
        L->unrolled += (int)count;
        int errors_before = L->d->nerrors;
        for (int64_t i = 0; i < count && !L->returned && L->d->nerrors == errors_before; i++) {
            Scope *saved = L->scope;
            push_scope(L, saved);
            bind(L, var, ENT_LET, vloose_int(l + i * st));
            L->static_depth++;
            lower_block(L, s->body);
            L->static_depth--;
            L->scope = saved;
        }
        return;
    }
    Val bounds[3] = {lo, hi, step};
    DType dt;
    if (!range_dtype(L, bounds, 3, s->loc, &dt)) return;
    bool down = false;
    if (step.kind == V_CONST) {
        if (step.c.i == 0) {
            diag_error(L->d, step_at, "range() step must not be zero");
            return;
        }
        down = !dtype_is_unsigned(step.dt) && step.c.i < 0;
    }
    /* IR loops count up: a constant negative step runs j in 0..cdiv(lo - hi, -step)
     * with i = lo + j * step (Python's range) */
    Val first = lo, last = hi, stride = step;
    if (down) {
        Scalar neg;
        neg.i = -step.c.i;
        Val diff = lw_binary(L, OP_SUB, "-", lo, hi, s->loc);
        last = lw_binary(L, OP_CDIV, "cdiv", diff, vconst(step.dt, scalar_canon(step.dt, neg), step.loose), s->loc);
        first = vloose_int(0);
        stride = vloose_int(1);
        if (last.kind == V_ERROR) return;
    }
    int args[3] = {lw_to_ir_as(L, &first, dt, s->loc), lw_to_ir_as(L, &last, dt, s->loc),
                   lw_to_ir_as(L, &stride, dt, s->loc)};
    Type it = type_scalar(dt);
    IrOp *o = lw_emit(L, OP_FOR, s->loc, &it, 3, args);
    L->f->values[o->result].name = var;
    Val iv = vvalue(o->result);
    if (down) {
        IrBlock *saved_blk = L->blk;
        L->blk = o->body;
        iv = lw_binary(L, OP_ADD, "+", lo, lw_binary(L, OP_MUL, "*", iv, step, s->loc), s->loc);
        iv = vvalue(lw_to_ir_as(L, &iv, dt, s->loc));
        L->blk = saved_blk;
    }
    Scope *saved = L->scope;
    push_scope(L, saved);
    bind(L, var, ENT_LET, iv);
    lower_region(L, o->body, s->body, true, NULL);
    L->scope = saved;
}

/* A condition: a constant (then *is_const) or a scalar bool IR value. */
static bool condition(Lower *L, Expr *e, const char *what, bool *is_const, bool *value, int *id) {
    Val c = lower_expr(L, e);
    if (c.kind == V_ERROR) return false;
    if (!lw_need_scalar_like(L, &c, what, e->loc)) return false;
    Type t = lw_val_type(L, &c);
    if (is_loose(&c) || t.dtype != DT_BOOL || t.rank != 0) {
        char buf[200];
        if (is_loose(&c)) t.dtype = c.dt == DT_F64 ? DT_F32 : DT_I32;
        if (t.rank != 0)
            diag_error(L->d, e->loc, "%s condition must be a scalar bool, got %s (use where() to choose element-wise)",
                       what, type_str(&t, buf, sizeof buf));
        else
            diag_error(L->d, e->loc, "%s condition must be bool, got %s", what, type_str(&t, buf, sizeof buf));
        return false;
    }
    *is_const = c.kind == V_CONST;
    if (*is_const) *value = c.c.i != 0;
    else *id = lw_to_ir(L, &c, e->loc);
    return true;
}

static void lower_if(Lower *L, Stmt *s) {
    bool is_const, value;
    int id;
    if (!condition(L, s->expr, "if", &is_const, &value, &id)) {
        /* still check both branches */
        lower_block(L, s->body);
        if (s->els) lower_stmt(L, s->els);
        return;
    }
    if (is_const) {
        if (value) lower_block(L, s->body);
        else if (s->els) lower_stmt(L, s->els);
        return;
    }
    IrOp *o = lw_emit(L, OP_IF, s->loc, NULL, 1, &id);
    lower_region(L, o->body, s->body, false, NULL);
    if (s->els) lower_region(L, o->else_body, NULL, false, s->els);
}

static void lower_while(Lower *L, Stmt *s) {
    IrOp *loop = lw_emit(L, OP_LOOP, s->loc, NULL, 0, NULL);
    IrBlock *saved_blk = L->blk;
    L->blk = loop->body;
    bool is_const, value = true;
    int id;
    bool ok = condition(L, s->expr, "while", &is_const, &value, &id);
    if (ok && !is_const) {
        Type b = type_scalar(DT_BOOL);
        int neg = lw_emit(L, OP_NOT, s->expr->loc, &b, 1, &id)->result;
        IrOp *exit = lw_emit(L, OP_IF, s->expr->loc, NULL, 1, &neg);
        ir_append(L->f, exit->body, OP_BREAK, s->expr->loc, NULL, 0, NULL);
    }
    L->blk = saved_blk;
    if (ok && is_const && !value) {
        /* while false: nothing runs; drop the loop */
        ir_block_remove(L->blk, L->blk->nops - 1);
        return;
    }
    lower_region(L, loop->body, s->body, true, NULL);
}

static void lower_stmt(Lower *L, Stmt *s) {
    switch (s->kind) {
    case ST_LET: lower_let(L, s); break;
    case ST_VAR: lower_var(L, s); break;
    case ST_ASSIGN: lower_assign(L, s); break;
    case ST_EXPR: lower_expr(L, s->expr); break;
    case ST_FOR: lower_for(L, s); break;
    case ST_WHILE: lower_while(L, s); break;
    case ST_IF: lower_if(L, s); break;
    case ST_BLOCK: lower_block(L, s->body); break;
    case ST_BREAK: case ST_CONTINUE: {
        const char *w = s->kind == ST_BREAK ? "break" : "continue";
        if (L->static_depth > 0)
            diag_error(L->d, s->loc, "%s inside static_range is not supported (the loop is unrolled)", w);
        else if (L->loop_depth == 0)
            diag_error(L->d, s->loc, "%s outside a loop", w);
        else
            lw_emit(L, s->kind == ST_BREAK ? OP_BREAK : OP_CONTINUE, s->loc, NULL, 0, NULL);
        break;
    }
    case ST_RETURN:
        if (L->nfn == 0) {
            if (s->expr) diag_error(L->d, s->expr->loc, "a kernel returns no value (write 'return;')");
            else lw_emit(L, OP_RETURN, s->loc, NULL, 0, NULL);
            break;
        }
        if (L->region_depth > 0) {
            diag_error(L->d, s->loc, "return inside a runtime loop or if is not supported in fn '%s' "
                       "(it is inlined: assign to a var and return it at the end)", L->fn_stack[L->nfn - 1]->name);
            break;
        }
        L->ret = s->expr ? lower_expr(L, s->expr) : vkind(V_NONE, 0);
        L->returned = true;
        break;
    case ST_STATIC_ASSERT: {
        Val c = lower_expr(L, s->expr);
        if (c.kind == V_ERROR) break;
        if (c.kind != V_CONST) {
            diag_error(L->d, s->expr->loc, "static_assert condition must be a compile-time constant");
            break;
        }
        bool truth = dtype_is_float(c.dt) ? c.c.f != 0 : c.c.i != 0;
        if (!truth) {
            L->failed_asserts++;
            if (s->msg && s->msg->sval) diag_error(L->d, s->loc, "static assertion failed: %s", s->msg->sval);
            else diag_error(L->d, s->loc, "static assertion failed");
        }
        break;
    }
    }
}

static void lower_stmts(Lower *L, Stmt *s) {
    for (; s && !L->returned && !L->too_big; s = s->next) lower_stmt(L, s);
}

/* ---- kernels ---------------------------------------------------------- */

/* File-level constants and fns.  Their IR (none, for true constants) goes
 * into a scratch function that is thrown away. */
static void build_globals(Lower *L) {
    IrFunc *saved_f = L->f;
    IrBlock *saved_blk = L->blk;
    L->f = ir_func_new(L->a, "<file>", (Loc){L->prog->file, 1, 1});
    L->blk = L->f->body;
    push_scope(L, NULL);
    L->globals = L->scope;
    bind(L, "inf", ENT_BUILTIN, vloose_float(INFINITY));
    bind(L, "nan", ENT_BUILTIN, vloose_float(NAN));
    for (Decl *d = L->prog->decls; d; d = d->next)
        if (d->kind == DECL_FN) {
            Val v = {.kind = V_FN, .fn = d};
            bind(L, d->name, ENT_FN, v);
        }
    for (Decl *d = L->prog->decls; d; d = d->next) {
        if (d->kind != DECL_CONST) continue;
        Val v = lower_expr(L, d->init);
        bool ok = v.kind == V_CONST || v.kind == V_DTYPE || v.kind == V_ERROR;
        if (v.kind == V_TUPLE) {
            ok = true;
            for (int i = 0; i < v.n; i++)
                if (v.elems[i].kind != V_CONST) ok = false;
        }
        if (!ok) {
            diag_error(L->d, d->init->loc, "file-level constant '%s' must be a compile-time constant", d->name);
            v = poison;
        }
        bind(L, d->name, ENT_CONST, v);
    }
    L->f = saved_f;
    L->blk = saved_blk;
}

static const ConstBinding *find_binding(const ConstBinding *b, int n, const char *name) {
    const ConstBinding *found = NULL;
    for (int i = 0; i < n; i++)
        if (strcmp(b[i].name, name) == 0) found = &b[i];   /* the last one wins */
    return found;
}

static bool is_hint_name(const char *name) {
    return strcmp(name, "num_warps") == 0 || strcmp(name, "occupancy") == 0;
}

static void set_hint(Lower *L, const char *name, int64_t v, Loc loc) {
    bool warps = name[0] == 'n';
    if (warps ? !(is_pow2(v) && v <= 32) : (v < 1 || v > 32)) {
        diag_error(L->d, loc, "%s must be %s, got %lld", name, warps ? "a power of two from 1 to 32" : "from 1 to 32",
                   (long long)v);
        return;
    }
    if (warps) L->f->num_warps = (int)v;
    else L->f->occupancy = (int)v;
}

/* The value of constant parameter `p`: its binding, else its default. */
static bool const_param_value(Lower *L, const Param *p, const ConstBinding *b, Scalar *out) {
    if (b) {
        if (b->is_float && !dtype_is_float(p->dtype)) {
            diag_error(L->d, p->loc, "constant '%s' is %s but was given %g", p->name, dtype_name(p->dtype), b->f);
            return false;
        }
        if (b->is_bool && p->dtype != DT_BOOL) {
            diag_error(L->d, p->loc, "constant '%s' is %s but was given %s", p->name, dtype_name(p->dtype),
                       b->i ? "true" : "false");
            return false;
        }
        *out = b->is_float ? scalar_from_double(p->dtype, b->f) : scalar_from_int(p->dtype, b->i);
        return true;
    }
    if (!p->init) {
        diag_error(L->d, p->loc, "missing value for constant '%s' (give it with -D %s=...)", p->name, p->name);
        return false;
    }
    Val v = lower_expr(L, p->init);
    if (v.kind == V_ERROR) return false;
    if (v.kind != V_CONST) {
        diag_error(L->d, p->init->loc, "the default of constant '%s' must be a compile-time constant", p->name);
        return false;
    }
    if (dtype_is_float(v.dt) && !dtype_is_float(p->dtype)) {
        diag_error(L->d, p->init->loc, "constant '%s' is %s but its default is a float", p->name, dtype_name(p->dtype));
        return false;
    }
    *out = scalar_convert(v.dt, p->dtype, v.c);
    return true;
}

/* The dtype a `const T: dtype` parameter names: its binding, else its default. */
static bool dtype_param_value(Lower *L, const Param *p, const ConstBinding *b, DType *out) {
    if (b) {
        if (!b->is_dtype) {
            diag_error(L->d, p->loc, "constant '%s' is a dtype (bf16, f32, ...), but was given %s", p->name,
                       b->is_bool ? (b->i ? "true" : "false") : b->is_float ? "a float" : "a number");
            return false;
        }
        *out = b->dtype;
        return true;
    }
    if (!p->init) {
        diag_error(L->d, p->loc, "missing dtype for constant '%s' (give it with -D %s=f32, say)", p->name, p->name);
        return false;
    }
    Val v = lower_expr(L, p->init);
    if (v.kind == V_ERROR) return false;
    if (v.kind != V_DTYPE) {
        diag_error(L->d, p->init->loc, "the default of dtype constant '%s' must be a dtype (bf16, f32, ...)", p->name);
        return false;
    }
    *out = v.dt;
    return true;
}

/* The dtype of a parameter whose type is written as a name: the dtype constant
 * of that name, declared anywhere in the kernel's list. */
static DType param_dtype(Lower *L, const Decl *k, const Param *p) {
    if (!p->type_name) return p->dtype;
    for (const Param *q = k->params; q; q = q->next) {
        if (q->kind != PARAM_CONST || !q->type_name || strcmp(q->name, p->type_name) != 0) continue;
        Entry *e = find_in(L->scope, q->name);
        return e && e->val.kind == V_DTYPE ? e->val.dt : DT_INVALID;   /* invalid: reported already */
    }
    diag_error(L->d, p->loc, "unknown type '%s' of parameter '%s' (a dtype such as f32, or a `const %s: dtype` "
               "parameter of the kernel)", p->type_name, p->name, p->type_name);
    return DT_INVALID;
}

/* Binds the kernel's parameters into the current scope and IrFunc. */
static void bind_params(Lower *L, const Decl *k, const ConstBinding *consts, int nconsts) {
    IrFunc *f = L->f;
    f->params = ARENA_ARRAY(L->a, IrParam, k->nparams > 0 ? k->nparams : 1);
    f->consts = ARENA_ARRAY(L->a, IrConst, k->nparams > 0 ? k->nparams : 1);
    /* dtype constants first: the other parameters' types may name them */
    for (Param *p = k->params; p; p = p->next) {
        if (p->kind != PARAM_CONST || !p->type_name || find_in(L->scope, p->name)) continue;
        DType dt;
        Val v = poison;
        if (dtype_param_value(L, p, find_binding(consts, nconsts, p->name), &dt)) {
            v = (Val){.kind = V_DTYPE, .dt = dt};
            IrConst *c = &f->consts[f->nconsts++];
            c->name = p->name;
            c->type = type_scalar(dt);
            c->is_dtype = true;
        }
        bind(L, p->name, ENT_CONST, v);
    }
    for (Param *p = k->params; p; p = p->next) {
        if (p->kind == PARAM_CONST && p->type_name) continue;   /* bound above */
        Entry *prev = find_in(L->scope, p->name);
        if (prev) {
            if (prev->val.kind == V_DIM)
                diag_error(L->d, p->loc, "'%s' is already an array extent of kernel '%s'", p->name, k->name);
            else
                diag_error(L->d, p->loc, "duplicate parameter '%s'", p->name);
            continue;
        }
        if (p->kind == PARAM_CONST) {
            Scalar v;
            Val cv = poison;
            const ConstBinding *given = find_binding(consts, nconsts, p->name);
            if (given && given->is_dtype)
                diag_error(L->d, p->loc, "constant '%s' is %s, but was given the dtype %s", p->name,
                           dtype_name(p->dtype), dtype_name(given->dtype));
            else if (p->dtype == DT_TF32)
                diag_error(L->d, p->loc, "constant '%s' cannot be tf32", p->name);
            else if (const_param_value(L, p, find_binding(consts, nconsts, p->name), &v)) {
                cv = vconst(p->dtype, v, false);
                IrConst *c = &f->consts[f->nconsts++];
                c->name = p->name;
                c->type = type_scalar(p->dtype);
                if (dtype_is_float(p->dtype)) c->v.f = v.f;
                else c->v.i = v.i;
            }
            bind(L, p->name, ENT_CONST, cv);
            continue;
        }
        int idx = f->nparams++;
        IrParam *ip = &f->params[idx];
        ip->kind = p->kind == PARAM_ARRAY ? IRP_ARRAY : IRP_SCALAR;
        ip->name = p->name;
        ip->loc = p->loc;
        ip->dtype = param_dtype(L, k, p);
        if (ip->dtype == DT_INVALID) ip->dtype = DT_F32;   /* reported: go on so that the rest is checked */
        const DType pdt = ip->dtype;
        if (p->kind == PARAM_SCALAR) {
            if (pdt == DT_TF32) diag_error(L->d, p->loc, "scalar parameter '%s' cannot be tf32", p->name);
            Val v = vkind(V_PARAM, idx);
            bind(L, p->name, ENT_PARAM, v);
            continue;
        }
        if (p->rank < 1 || p->rank > TILE_MAX_RANK)
            diag_error(L->d, p->loc, "array '%s' must have 1 to %d dimensions", p->name, TILE_MAX_RANK);
        ip->rank = p->rank < 0 ? 0 : p->rank > TILE_MAX_RANK ? TILE_MAX_RANK : p->rank;
        bind(L, p->name, ENT_PARAM, vkind(V_ARRAY, idx));
        for (int d = 0; d < ip->rank; d++) {
            ip->dims[d] = p->dims[d];
            if (!p->dims[d]) continue;
            Entry *e = find_in(L->scope, p->dims[d]);
            if (e && e->val.kind == V_DIM) continue;   /* shared extent: checked at launch */
            if (e) {
                diag_error(L->d, p->dim_locs[d], "extent name '%s' is already a parameter", p->dims[d]);
                continue;
            }
            Val v = vkind(V_DIM, idx);
            v.axis = d;
            bind(L, p->dims[d], ENT_PARAM, v);
        }
    }
    for (int i = 0; i < nconsts; i++) {
        bool known = is_hint_name(consts[i].name);
        for (Param *p = k->params; p; p = p->next)
            if (p->kind == PARAM_CONST && strcmp(p->name, consts[i].name) == 0) known = true;
        if (!known) diag_plain(L->d, "kernel '%s' has no constant parameter '%s'", k->name, consts[i].name);
    }
}

static void lower_hints(Lower *L, const Decl *k, const ConstBinding *consts, int nconsts) {
    for (Expr *h = k->hints; h; h = h->next) {
        if (h->kind != EX_KWARG || !is_hint_name(h->name)) {
            diag_error(L->d, h->loc, "unknown kernel hint '%s' (use num_warps or occupancy)",
                       h->kind == EX_KWARG ? h->name : "?");
            continue;
        }
        int64_t v;
        if (lw_const_int(L, h->a, h->name, &v)) set_hint(L, h->name, v, h->a->loc);
    }
    /* constant parameters named like a hint win over `with (...)` */
    for (Param *p = k->params; p; p = p->next) {
        Entry *e = (p->kind == PARAM_CONST && is_hint_name(p->name)) ? find_in(L->scope, p->name) : NULL;
        if (e && e->val.kind == V_CONST) set_hint(L, p->name, e->val.c.i, p->loc);
    }
    for (int i = 0; i < nconsts; i++)
        if (is_hint_name(consts[i].name)) set_hint(L, consts[i].name, consts[i].i, k->loc);
}

static void lower_init(Lower *L, Arena *a, Diag *d, const Program *p) {
    memset(L, 0, sizeof *L);
    L->a = a;
    L->d = d;
    L->prog = p;
}

/* `failed_asserts` (may be NULL) receives the number of static_asserts that
 * failed. */
static IrFunc *lower_kernel_decl(Arena *a, Diag *d, const Program *p, const Decl *k,
                                 const ConstBinding *consts, int nconsts, bool quiet_globals,
                                 int *failed_asserts) {
    int before = d->nerrors;
    Lower L;
    lower_init(&L, a, d, p);
    if (quiet_globals) {
        /* the caller reported the file-level constants' errors already */
        Diag quiet;
        diag_init(&quiet, d->file, d->src);
        L.d = &quiet;
        build_globals(&L);
        diag_free(&quiet);
        L.d = d;
    } else {
        build_globals(&L);
    }
    L.f = ir_func_new(a, k->name, k->loc);
    L.blk = L.f->body;
    push_scope(&L, L.globals);
    bind_params(&L, k, consts, nconsts);
    lower_hints(&L, k, consts, nconsts);
    push_scope(&L, L.scope);
    lower_stmts(&L, k->body);
    if (failed_asserts) *failed_asserts = L.failed_asserts;
    return d->nerrors > before ? NULL : L.f;
}

IrFunc *lower_kernel(Arena *a, Diag *d, const Program *p, const char *kernel,
                     const ConstBinding *consts, int nconsts) {
    if (!p) return NULL;
    for (const Decl *k = p->decls; k; k = k->next)
        if (k->kind == DECL_KERNEL && strcmp(k->name, kernel) == 0)
            return lower_kernel_decl(a, d, p, k, consts, nconsts, false, NULL);
    diag_plain(d, "no kernel named '%s'", kernel);
    return NULL;
}

/* ---- whole-program checks --------------------------------------------- */

static const Decl *find_kernel(const Program *p, const char *name) {
    for (const Decl *k = p->decls; k; k = k->next)
        if (k->kind == DECL_KERNEL && strcmp(k->name, name) == 0) return k;
    return NULL;
}

/* Checks tune block `t`; true if it has no error. */
static bool check_tune(Lower *L, const Decl *t) {
    int before = L->d->nerrors;
    const Decl *k = find_kernel(L->prog, t->name);
    if (!k) {
        diag_error(L->d, t->loc, "tune block for unknown kernel '%s'", t->name);
        return false;
    }
    for (TuneAxis *ax = t->axes; ax; ax = ax->next) {
        const Param *param = NULL;
        for (Param *p = k->params; p; p = p->next)
            if (strcmp(p->name, ax->name) == 0) param = p;
        if (!is_hint_name(ax->name) && (!param || param->kind != PARAM_CONST))
            diag_error(L->d, ax->loc, "'%s' is not a constant parameter of kernel '%s' (nor num_warps/occupancy)",
                       ax->name, k->name);
        for (TuneAxis *b = t->axes; b != ax; b = b->next)
            if (strcmp(b->name, ax->name) == 0) diag_error(L->d, ax->loc, "'%s' appears twice in this tune block", ax->name);
        if (!ax->values) diag_error(L->d, ax->loc, "'%s' has no values", ax->name);
        for (Expr *v = ax->values; v; v = v->next) {
            Val c = lower_expr(L, v);
            if (c.kind != V_ERROR && c.kind != V_CONST)
                diag_error(L->d, v->loc, "tune values must be constants");
        }
    }
    return L->d->nerrors == before;
}

/* A tune value (a constant, checked by check_tune) as a -D style binding. */
static ConstBinding tune_binding(const char *name, const Val *v) {
    ConstBinding b = {.name = name};
    if (dtype_is_float(v->dt)) {
        b.is_float = true;
        b.f = scalar_convert(v->dt, DT_F64, v->c).f;
        b.i = (int64_t)(isfinite(b.f) && fabs(b.f) < 9e18 ? b.f : 0);
    } else {
        b.i = scalar_convert(v->dt, DT_I64, v->c).i;
        b.f = (double)b.i;
    }
    return b;
}

/* Kernel `k` has a constant without a default; `t` is its tune block (free of
 * errors).  If the block gives a value to every such constant, the kernel is
 * lowered with its points in the autotuner's order (the first axis varies
 * fastest), starting with the first value of each axis, so that its errors
 * show when the module loads.  A point that fails only static_asserts is one
 * the kernel rejects (the autotuner skips it): the next is tried, up to
 * MAX_TUNE_CHECK_POINTS.  The first point with another error is lowered again
 * into L->d, with a note naming its values.  Returns false (nothing reported)
 * when no point could be checked, so the caller checks the signature alone. */
static bool check_with_tune_points(Lower *L, const Decl *k, const Decl *t) {
    int naxes = 0;
    for (TuneAxis *ax = t->axes; ax; ax = ax->next) naxes++;
    ConstBinding *b = ARENA_ARRAY(L->a, ConstBinding, naxes > 0 ? naxes : 1);
    ConstBinding **vals = ARENA_ARRAY(L->a, ConstBinding *, naxes > 0 ? naxes : 1);
    int *nvals = ARENA_ARRAY(L->a, int, naxes > 0 ? naxes : 1);
    int64_t npoints = 1;
    int i = 0;
    for (TuneAxis *ax = t->axes; ax; ax = ax->next, i++) {
        vals[i] = ARENA_ARRAY(L->a, ConstBinding, ax->nvalues > 0 ? ax->nvalues : 1);
        nvals[i] = 0;
        for (Expr *e = ax->values; e && nvals[i] < ax->nvalues; e = e->next) {
            Val v = lower_expr(L, e);
            if (v.kind != V_CONST) return false;
            vals[i][nvals[i]++] = tune_binding(ax->name, &v);
        }
        if (nvals[i] == 0) return false;
        b[i] = vals[i][0];
        if (npoints < MAX_TUNE_CHECK_POINTS) npoints *= nvals[i];
    }
    for (Param *q = k->params; q; q = q->next)
        if (q->kind == PARAM_CONST && !q->init && !find_binding(b, naxes, q->name)) return false;
    for (int64_t point = 0; point < npoints && point < MAX_TUNE_CHECK_POINTS; point++) {
        int64_t rest = point;
        for (i = 0; i < naxes; i++) {
            b[i] = vals[i][rest % nvals[i]];
            rest /= nvals[i];
        }
        /* a trial in a scratch arena and Diag: only the verdict is kept */
        Arena scratch;
        Diag quiet;
        arena_init(&scratch);
        diag_init(&quiet, L->d->file, L->d->src);
        int failed_asserts = 0;
        bool ok = lower_kernel_decl(&scratch, &quiet, L->prog, k, b, naxes, true, &failed_asserts) != NULL;
        bool rejected = !ok && quiet.nerrors == failed_asserts;
        diag_free(&quiet);
        if (!ok && !rejected) lower_kernel_decl(&scratch, L->d, L->prog, k, b, naxes, true, NULL);   /* report */
        arena_free(&scratch);
        if (ok) return true;
        if (rejected) continue;
        char list[512];
        size_t len = 0;
        list[0] = 0;
        for (i = 0; i < naxes && len < sizeof list; i++) {
            const char *sep = i ? ", " : "";
            int w = b[i].is_float
                        ? snprintf(list + len, sizeof list - len, "%s%s=%g", sep, b[i].name, b[i].f)
                        : snprintf(list + len, sizeof list - len, "%s%s=%lld", sep, b[i].name, (long long)b[i].i);
            if (w > 0) len += (size_t)w;
        }
        diag_note(L->d, t->loc, "kernel '%s' was checked with %s from its tune block", k->name, list);
        return true;
    }
    return false;
}

int lower_check_program(Arena *a, Diag *d, const Program *p) {
    if (!p) return 0;
    int before = d->nerrors;
    Lower L;
    lower_init(&L, a, d, p);
    for (const Decl *x = p->decls; x; x = x->next) {
        for (const Decl *y = p->decls; y != x; y = y->next) {
            bool both_tune = x->kind == DECL_TUNE && y->kind == DECL_TUNE;
            bool one_tune = x->kind == DECL_TUNE || y->kind == DECL_TUNE;
            if (strcmp(x->name, y->name) == 0 && (both_tune || !one_tune)) {
                diag_error(d, x->loc, "'%s' is already defined (line %d)", x->name, y->loc.line);
                break;
            }
        }
        if (x->kind == DECL_FN)
            for (Name *n = x->fn_params; n; n = n->next)
                for (Name *m = x->fn_params; m != n; m = m->next)
                    if (strcmp(n->name, m->name) == 0) diag_error(d, n->loc, "duplicate parameter '%s'", n->name);
    }
    int before_globals = d->nerrors;
    build_globals(&L);
    bool globals_ok = d->nerrors == before_globals;
    L.f = ir_func_new(a, "<tune>", (Loc){p->file, 1, 1});
    L.blk = L.f->body;
    PtrVec clean_tunes = {0};
    for (const Decl *t = p->decls; t; t = t->next)
        if (t->kind == DECL_TUNE && check_tune(&L, t)) ptrvec_push(a, &clean_tunes, (void *)t);
    for (const Decl *k = p->decls; k; k = k->next) {
        if (k->kind != DECL_KERNEL) continue;
        bool all_defaults = true;
        for (Param *q = k->params; q; q = q->next)
            if (q->kind == PARAM_CONST && !q->init) all_defaults = false;
        if (all_defaults && globals_ok) {
            lower_kernel_decl(a, d, p, k, NULL, 0, true, NULL);
            continue;
        }
        const Decl *tune = NULL;
        for (int i = 0; i < clean_tunes.len && !tune; i++)
            if (strcmp(((const Decl *)clean_tunes.items[i])->name, k->name) == 0) tune = clean_tunes.items[i];
        if (tune && globals_ok && check_with_tune_points(&L, k, tune)) continue;
        /* not lowerable without values: check the signature alone */
        for (Param *q = k->params; q; q = q->next)
            for (Param *r = k->params; r != q; r = r->next)
                if (strcmp(q->name, r->name) == 0) diag_error(d, q->loc, "duplicate parameter '%s'", q->name);
    }
    return d->nerrors - before;
}

/* ---- -D NAME=VALUE ---------------------------------------------------- */

bool const_binding_parse(Arena *a, const char *text, ConstBinding *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    const char *eq = strchr(text, '=');
    if (!eq || eq == text) {
        snprintf(err, errlen, "expected NAME=VALUE, got '%s'", text);
        return false;
    }
    for (const char *c = text; c < eq; c++)
        if (!(isalpha((unsigned char)*c) || *c == '_' || (c > text && isdigit((unsigned char)*c)))) {
            snprintf(err, errlen, "'%.*s' is not a valid constant name", (int)(eq - text), text);
            return false;
        }
    out->name = arena_strndup(a, text, (size_t)(eq - text));
    const char *v = eq + 1;
    DType named = dtype_from_name(v);
    if (named != DT_INVALID) {   /* a dtype, for a `const T: dtype` parameter */
        out->is_dtype = true;
        out->dtype = named;
        return true;
    }
    if (strcmp(v, "true") == 0 || strcmp(v, "false") == 0) {
        out->is_bool = true;
        out->i = v[0] == 't';
        out->f = (double)out->i;
        return true;
    }
    char *end;
    errno = 0;
    const char *digits = (v[0] == '-' || v[0] == '+') ? v + 1 : v;
    bool hex = digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X');
    long long i = strtoll(v, &end, hex ? 16 : 10);
    if (*v && !*end && errno == 0 && end != v) {
        out->i = i;
        out->f = (double)i;
        return true;
    }
    errno = 0;
    double f = strtod(v, &end);
    if (*v && !*end && end != v && !hex) {
        out->is_float = true;
        out->f = f;
        out->i = (int64_t)(isfinite(f) && fabs(f) < 9e18 ? f : 0);
        return true;
    }
    snprintf(err, errlen, "value of %s is not a number: '%s'", out->name, v);
    return false;
}
