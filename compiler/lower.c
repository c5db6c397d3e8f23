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
 */
#include "lower.h"
#include "scalar.h"
#include "sema.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_UNROLL_PER_LOOP 4096
#define MAX_UNROLL_TOTAL 65536
#define MAX_INLINE_DEPTH 64
#define MAX_TUPLE 64
#define MAX_IR_VALUES 500000    /* inlining and unrolling stop here with an error */

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

typedef enum EntryKind { ENT_LET, ENT_VAR, ENT_PARAM, ENT_CONST, ENT_FN, ENT_BUILTIN } EntryKind;

typedef struct Entry {
    const char *name;
    EntryKind kind;
    Val val;
    struct Entry *next;
} Entry;

typedef struct Scope {
    struct Scope *parent;
    Entry *entries;
} Scope;

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
} Lower;

static Val lower_expr(Lower *L, Expr *e);
static void lower_stmts(Lower *L, Stmt *s);
static void lower_stmt(Lower *L, Stmt *s);

static const Val poison = {.kind = V_ERROR};

static Val vconst(DType dt, Scalar c, bool loose) {
    Val v = {.kind = V_CONST, .dt = dt, .c = c, .loose = loose};
    return v;
}
static Val vloose_int(int64_t x) { Scalar c; c.i = x; return vconst(DT_I64, c, true); }
static Val vloose_float(double x) { Scalar c; c.f = x; return vconst(DT_F64, c, true); }
static Val vvalue(int id) { Val v = {.kind = V_VALUE, .id = id}; return v; }
static Val vkind(ValKind k, int id) { Val v = {.kind = k, .id = id}; return v; }

static bool is_scalar_like(const Val *v) {
    return v->kind == V_CONST || v->kind == V_VALUE || v->kind == V_LOCAL || v->kind == V_PARAM ||
           v->kind == V_DIM || v->kind == V_STRIDE;
}
static bool is_loose(const Val *v) { return v->kind == V_CONST && v->loose; }

/* ---- scopes ----------------------------------------------------------- */

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

static IrOp *emit(Lower *L, OpId op, Loc loc, const Type *rt, int nargs, const int *args) {
    if (L->f->nvalues >= MAX_IR_VALUES && !L->too_big) {
        diag_error(L->d, loc, "kernel too large: more than %d IR values after inlining and unrolling",
                   MAX_IR_VALUES);
        L->too_big = true;
    }
    return ir_append(L->f, L->blk, op, loc, rt, nargs, args);
}

static Type mk_type(DType dt, int rank, const int64_t *shape) {
    Type t = type_scalar(dt);
    t.rank = rank;
    for (int i = 0; i < rank; i++) t.shape[i] = (int)shape[i];
    return t;
}

static int emit_const(Lower *L, DType dt, Scalar c, Loc loc) {
    Type t = type_scalar(dt);
    IrOp *op = emit(L, OP_CONST, loc, &t, 0, NULL);
    if (dtype_is_float(dt)) op->lit.f = c.f;
    else op->lit.u = c.u;
    return op->result;
}

static int cast_to(Lower *L, int v, DType dt, Loc loc) {
    const Type *t = ir_type(L->f, v);
    if (t->dtype == dt) return v;
    Type rt = *t;
    rt.dtype = dt;
    return emit(L, OP_CAST, loc, &rt, 1, &v)->result;
}

static int broadcast_to(Lower *L, int v, const Type *shape, Loc loc) {
    const Type *t = ir_type(L->f, v);
    if (type_same_shape(t, shape)) return v;
    Type rt = *shape;
    rt.dtype = t->dtype;
    return emit(L, OP_BROADCAST, loc, &rt, 1, &v)->result;
}

static int reshape_to(Lower *L, int v, int rank, const int *shape, Loc loc) {
    Type rt = *ir_type(L->f, v);
    rt.rank = rank;
    for (int i = 0; i < TILE_MAX_RANK; i++) rt.shape[i] = i < rank ? shape[i] : 0;
    if (type_same_shape(&rt, ir_type(L->f, v))) return v;
    return emit(L, OP_RESHAPE, loc, &rt, 1, &v)->result;
}

static const char *val_desc(Lower *L, const Val *v, char *buf, size_t n) {
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
static DType val_dtype(Lower *L, const Val *v) {
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

static Type val_type(Lower *L, const Val *v) {
    if (v->kind == V_VALUE) return *ir_type(L->f, v->id);
    if (v->kind == V_LOCAL) return L->f->locals[v->id].type;
    return type_scalar(val_dtype(L, v));
}

/* Reports that `v` is not a tile or scalar; false for poison too. */
static bool need_scalar_like(Lower *L, const Val *v, const char *what, Loc loc) {
    if (is_scalar_like(v)) return true;
    if (v->kind != V_ERROR) {
        char buf[160];
        bool op = !isalpha((unsigned char)what[0]) && what[0] != '\'';
        diag_error(L->d, loc, op ? "'%s' needs a tile or scalar, got %s" : "%s needs a tile or scalar, got %s", what,
                   val_desc(L, v, buf, sizeof buf));
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
static int to_ir_as(Lower *L, const Val *v, DType dt, Loc loc) {
    if (dt == DT_INVALID) dt = val_dtype(L, v);
    int id;
    switch (v->kind) {
    case V_CONST:
        loose_fits(L, v, dt, loc);
        return emit_const(L, dt, scalar_convert(v->dt, dt, v->c), loc);
    case V_VALUE: id = v->id; break;
    case V_LOCAL: {
        IrOp *op = emit(L, OP_LOCAL_GET, loc, &L->f->locals[v->id].type, 0, NULL);
        op->local = v->id;
        id = op->result;
        break;
    }
    case V_PARAM: {
        Type t = type_scalar(L->f->params[v->id].dtype);
        IrOp *op = emit(L, OP_PARAM, loc, &t, 0, NULL);
        op->index = v->id;
        id = op->result;
        break;
    }
    case V_DIM: case V_STRIDE: {
        Type t = type_scalar(v->kind == V_DIM ? DT_I32 : DT_I64);
        IrOp *op = emit(L, v->kind == V_DIM ? OP_ARRAY_DIM : OP_ARRAY_STRIDE, loc, &t, 0, NULL);
        op->array = v->id;
        op->axis = v->axis;
        id = op->result;
        break;
    }
    default:
        return -1;
    }
    return cast_to(L, id, dt, loc);
}

static int to_ir(Lower *L, const Val *v, Loc loc) { return to_ir_as(L, v, DT_INVALID, loc); }

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
        diag_error(L->d, loc, "%s must be an integer constant, got %s", what, val_desc(L, v, buf, sizeof buf));
    return false;
}

static bool const_int(Lower *L, Expr *e, const char *what, int64_t *out) {
    Val v = lower_expr(L, e);
    return const_int_val(L, &v, what, e->loc, out);
}

static bool const_bool(Lower *L, Expr *e, const char *what, bool *out) {
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
static bool const_int_list(Lower *L, Expr *e, const char *what, int64_t *out, int *n) {
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

static bool get_dtype(Lower *L, Expr *e, DType *out) {
    Val v = lower_expr(L, e);
    if (v.kind == V_ERROR) return false;
    if (v.kind != V_DTYPE) {
        char buf[160];
        diag_error(L->d, e->loc, "expected a dtype (f32, i32, ...), got %s", val_desc(L, &v, buf, sizeof buf));
        return false;
    }
    *out = v.dt;
    return true;
}

/* ---- element-wise operations ------------------------------------------ */

/* The dtypes two operands take, resolving loose literals against each other. */
static void resolve_pair(Lower *L, const Val *a, const Val *b, DType *da, DType *db) {
    *da = val_dtype(L, a);
    *db = val_dtype(L, b);
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

static Val binary(Lower *L, OpId op, const char *name, Val a, Val b, Loc loc) {
    if (!need_scalar_like(L, &a, name, loc) || !need_scalar_like(L, &b, name, loc)) return poison;
    DType da, db, operand, result;
    resolve_pair(L, &a, &b, &da, &db);
    if (!sema_binary(L->d, loc, op, name, da, db, &operand, &result)) return poison;
    if (a.kind == V_CONST && b.kind == V_CONST)
        return fold_binary(L, op, operand, result, &a, &b, is_loose(&a) && is_loose(&b), loc);
    Type ta = val_type(L, &a), tb = val_type(L, &b), shape;
    ta.dtype = da;
    tb.dtype = db;
    if (!sema_check_broadcast(L->d, loc, &ta, &tb, &shape)) return poison;
    int ia = broadcast_to(L, to_ir_as(L, &a, operand, loc), &shape, loc);
    int ib = broadcast_to(L, to_ir_as(L, &b, operand, loc), &shape, loc);
    Type rt = shape;
    rt.dtype = result;
    int args[2] = {ia, ib};
    return vvalue(emit(L, op, loc, &rt, 2, args)->result);
}

static Val unary(Lower *L, OpId op, const char *name, Val a, Loc loc) {
    if (!need_scalar_like(L, &a, name, loc)) return poison;
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
    if (!sema_unary(L->d, loc, op, name, val_dtype(L, &a), &operand, &result)) return poison;
    if (a.kind == V_CONST)
        return vconst(result, scalar_unary(op, operand, scalar_convert(a.dt, operand, a.c)), false);
    int x = to_ir_as(L, &a, operand, loc);
    Type rt = *ir_type(L->f, x);
    rt.dtype = result;
    return vvalue(emit(L, op, loc, &rt, 1, &x)->result);
}

static Val astype(Lower *L, Val x, DType dt, Loc loc) {
    if (!need_scalar_like(L, &x, "astype", loc)) return poison;
    if (x.kind == V_CONST) return vconst(dt, scalar_convert(x.dt, dt, x.c), false);
    return vvalue(to_ir_as(L, &x, dt, loc));
}

static Val where_op(Lower *L, Val c, Val a, Val b, Loc loc) {
    if (!need_scalar_like(L, &c, "where", loc) || !need_scalar_like(L, &a, "where", loc) ||
        !need_scalar_like(L, &b, "where", loc))
        return poison;
    if (val_dtype(L, &c) != DT_BOOL || is_loose(&c)) {
        diag_error(L->d, loc, "where() condition must be bool, got %s", dtype_name(val_dtype(L, &c)));
        return poison;
    }
    DType da, db, dt;
    resolve_pair(L, &a, &b, &da, &db);
    if (!sema_check_promote(L->d, loc, "where()", da, db, &dt)) return poison;
    if (c.kind == V_CONST && a.kind == V_CONST && b.kind == V_CONST) {
        const Val *pick = c.c.i ? &a : &b;
        bool loose = is_loose(&a) && is_loose(&b);
        return vconst(dt, scalar_convert(pick->dt, dt, pick->c), loose);
    }
    if (is_loose(&a) && is_loose(&b)) dt = sema_default_dtype(dt == DT_F64, 0);
    Type tc = val_type(L, &c), ta = val_type(L, &a), tb = val_type(L, &b), s1, shape;
    ta.dtype = da;
    tb.dtype = db;
    if (!sema_check_broadcast(L->d, loc, &ta, &tb, &s1)) return poison;
    s1.dtype = dt;
    if (!sema_check_broadcast(L->d, loc, &tc, &s1, &shape)) return poison;
    int args[3];
    args[0] = broadcast_to(L, to_ir(L, &c, loc), &shape, loc);
    args[1] = broadcast_to(L, to_ir_as(L, &a, dt, loc), &shape, loc);
    args[2] = broadcast_to(L, to_ir_as(L, &b, dt, loc), &shape, loc);
    Type rt = shape;
    rt.dtype = dt;
    return vvalue(emit(L, OP_WHERE, loc, &rt, 3, args)->result);
}

/* ---- builtin calls ---------------------------------------------------- */

/* The arguments of one call, bound to parameter slots by position and name. */
#define MAX_ARGS 8
typedef struct Args {
    const char *callee;
    Loc loc;
    Expr *slot[MAX_ARGS];
} Args;

/* Binds `recv` (method receiver, or NULL) and `args` to the named params;
 * the first `nrequired` must be given.  Reports Python-style errors. */
static bool bind_args(Lower *L, const char *callee, Loc loc, Expr *recv, Expr *args,
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

static bool get_array(Lower *L, Expr *e, const char *callee, int *out) {
    Val v = lower_expr(L, e);
    if (v.kind == V_ERROR) return false;
    if (v.kind != V_ARRAY) {
        char buf[160];
        diag_error(L->d, e->loc, "%s() needs an array parameter, got %s", callee, val_desc(L, &v, buf, sizeof buf));
        return false;
    }
    *out = v.id;
    return true;
}

/* A scalar or tile IR value from an argument (NULL-safe: -1 on error). */
static bool get_tile(Lower *L, Expr *e, const char *callee, Val *out) {
    *out = lower_expr(L, e);
    return need_scalar_like(L, out, callee, e->loc);
}

/* Element-wise named ops of ops.def (exp, maximum, ...). */
static OpId find_elementwise(const char *name, int *nin) {
    for (int i = 0; i < OP_COUNT; i++) {
        const OpInfo *info = &ir_op_info[i];
        if (!info->builtin[0] || strcmp(info->builtin, name) != 0) continue;
        switch (info->rule) {
        case RULE_UNARY_NUM: case RULE_UNARY_BOOL: case RULE_UNARY_INT: case RULE_UNARY_FLOAT: case RULE_ISNAN:
            *nin = 1;
            return (OpId)i;
        case RULE_ARITH: case RULE_INT_ARITH:
            *nin = 2;
            return (OpId)i;
        default:
            break;
        }
    }
    return OP_COUNT;
}

/* sum/max/min/prod/argmax/argmin(x, axis, keepdims) */
static Val reduce_op(Lower *L, OpId op, Args *A) {
    Val x;
    bool keep = false;
    if (!get_tile(L, A->slot[0], A->callee, &x)) return poison;
    if (A->slot[2] && !const_bool(L, A->slot[2], "keepdims", &keep)) return poison;
    DType operand, result;
    if (!sema_reduce(L->d, A->loc, op, val_dtype(L, &x), &operand, &result)) return poison;
    int v = to_ir_as(L, &x, operand, A->loc);
    Type t = *ir_type(L->f, v);
    int axis = 0, rank = t.rank;
    if (A->slot[1]) {
        int64_t ax;
        if (!const_int(L, A->slot[1], "axis", &ax)) return poison;
        if (!sema_check_axis(L->d, A->slot[1]->loc, A->callee, ax, rank, &axis)) return poison;
    } else if (rank == 0) {
        /* a scalar is its own reduction; its argmax is 0 */
        Scalar zero;
        zero.i = 0;
        return (op == OP_ARGMAX || op == OP_ARGMIN) ? vconst(DT_I32, zero, false) : vvalue(v);
    } else if (rank > 1) {
        int flat = (int)type_numel(&t);
        v = reshape_to(L, v, 1, &flat, A->loc);
    }
    const Type *in = ir_type(L->f, v);
    Type rt = type_scalar(result);
    for (int i = 0, k = 0; i < in->rank; i++)
        if (i != axis) rt.shape[k++] = in->shape[i];
    rt.rank = in->rank - 1;
    IrOp *o = emit(L, op, A->loc, &rt, 1, &v);
    o->axis = axis;
    int r = o->result;
    if (keep) {
        int shape[TILE_MAX_RANK];
        for (int i = 0; i < rank; i++) shape[i] = A->slot[1] ? (i == axis ? 1 : t.shape[i]) : 1;
        r = reshape_to(L, r, rank, shape, A->loc);
    }
    return vvalue(r);
}

/* cumsum/cumprod(x, axis, reverse) */
static Val scan_op(Lower *L, OpId op, Args *A) {
    Val x;
    int64_t ax;
    bool reverse = false;
    if (!get_tile(L, A->slot[0], A->callee, &x)) return poison;
    if (!const_int(L, A->slot[1], "axis", &ax)) return poison;
    if (A->slot[2] && !const_bool(L, A->slot[2], "reverse", &reverse)) return poison;
    DType operand, result;
    if (!sema_reduce(L->d, A->loc, op, val_dtype(L, &x), &operand, &result)) return poison;
    int v = to_ir_as(L, &x, operand, A->loc), axis;
    if (!sema_check_axis(L->d, A->slot[1]->loc, A->callee, ax, ir_type(L->f, v)->rank, &axis)) return poison;
    IrOp *o = emit(L, op, A->loc, ir_type(L->f, v), 1, &v);
    o->axis = axis;
    o->flag = reverse;
    return vvalue(o->result);
}

static bool get_matrix(Lower *L, Expr *e, const char *callee, int *out) {
    Val v;
    if (!get_tile(L, e, callee, &v)) return false;
    *out = to_ir(L, &v, e->loc);
    return true;
}

static Val mma_op(Lower *L, Args *A) {
    int a, b, acc;
    if (!get_matrix(L, A->slot[0], "mma", &a) || !get_matrix(L, A->slot[1], "mma", &b) ||
        !get_matrix(L, A->slot[2], "mma", &acc))
        return poison;
    if (!sema_mma(L->d, A->loc, ir_type(L->f, a), ir_type(L->f, b), ir_type(L->f, acc))) return poison;
    int args[3] = {a, b, acc};
    return vvalue(emit(L, OP_MMA, A->loc, ir_type(L->f, acc), 3, args)->result);
}

/* a @ b = mma(a, b, zeros) with the accumulator dtype of the operands. */
static Val matmul(Lower *L, Val va, Val vb, Loc loc) {
    if (!need_scalar_like(L, &va, "'@'", loc) || !need_scalar_like(L, &vb, "'@'", loc)) return poison;
    int a = to_ir(L, &va, loc), b = to_ir(L, &vb, loc);
    DType operand;
    Type rt;
    if (!sema_matmul(L->d, loc, ir_type(L->f, a), ir_type(L->f, b), &operand, &rt)) return poison;
    Scalar zero;
    zero.u = 0;
    int z = broadcast_to(L, emit_const(L, rt.dtype, zero, loc), &rt, loc);
    int args[3] = {cast_to(L, a, operand, loc), cast_to(L, b, operand, loc), z};
    return vvalue(emit(L, OP_MMA, loc, &rt, 3, args)->result);
}

/* zeros/ones/full(shape, [value,] dtype) */
static Val fill_op(Lower *L, Args *A, Expr *shape_e, Val value, Expr *dtype_e) {
    int64_t shape[TILE_MAX_RANK];
    int n = 0;
    DType dt;
    if (!const_int_list(L, shape_e, "shape", shape, &n) || !get_dtype(L, dtype_e, &dt)) return poison;
    if (!sema_check_tile_shape(L->d, shape_e->loc, n, shape)) return poison;
    if (!need_scalar_like(L, &value, A->callee, A->loc)) return poison;
    Type vt = val_type(L, &value);
    if (vt.rank != 0) {
        char buf[200];
        diag_error(L->d, A->loc, "%s() value must be a scalar, got %s", A->callee, type_str(&vt, buf, sizeof buf));
        return poison;
    }
    if (n == 0) return astype(L, value, dt, A->loc);
    Type rt = mk_type(dt, n, shape);
    return vvalue(broadcast_to(L, to_ir_as(L, &value, dt, A->loc), &rt, A->loc));
}

static Val arange_op(Lower *L, Args *A) {
    int64_t n;
    DType dt = DT_I32;
    if (!const_int(L, A->slot[0], "arange() length", &n)) return poison;
    if (A->slot[1] && !get_dtype(L, A->slot[1], &dt)) return poison;
    if (!sema_check_tile_shape(L->d, A->slot[0]->loc, 1, &n)) return poison;
    if (!(dtype_is_int(dt) || (dtype_is_float(dt) && dt != DT_TF32))) {
        diag_error(L->d, A->loc, "arange() dtype must be an integer or float type, got %s", dtype_name(dt));
        return poison;
    }
    Type rt = mk_type(dt, 1, &n);
    return vvalue(emit(L, OP_ARANGE, A->loc, &rt, 0, NULL)->result);
}

/* reshape / permute / transpose / expand_dims / broadcast_to / extract / item */
static Val shape_op(Lower *L, const char *name, Args *A) {
    Val x;
    if (!get_tile(L, A->slot[0], name, &x)) return poison;
    int v = to_ir(L, &x, A->loc);
    Type in = *ir_type(L->f, v), rt;
    int64_t list[TILE_MAX_RANK], list2[TILE_MAX_RANK];
    int n = 0, n2 = 0;
    if (strcmp(name, "reshape") == 0 || strcmp(name, "item") == 0) {
        bool item = name[0] == 'i';
        if (!item && !const_int_list(L, A->slot[1], "shape", list, &n)) return poison;
        if (item && type_numel(&in) != 1) {
            char buf[200];
            diag_error(L->d, A->loc, "item() needs a one-element tile, got %s", type_str(&in, buf, sizeof buf));
            return poison;
        }
        if (!sema_reshape(L->d, A->loc, &in, n, list, &rt)) return poison;
        return vvalue(reshape_to(L, v, rt.rank, rt.shape, A->loc));
    }
    if (strcmp(name, "permute") == 0 || strcmp(name, "transpose") == 0) {
        int perm[TILE_MAX_RANK];
        if (name[0] == 'p') {
            if (!const_int_list(L, A->slot[1], "axes", list, &n)) return poison;
            if (!sema_check_permutation(L->d, A->loc, name, n, list, in.rank, perm)) return poison;
        } else {
            if (in.rank < 2) {
                char buf[200];
                diag_error(L->d, A->loc, "transpose() needs a tile of rank 2 or more, got %s",
                           type_str(&in, buf, sizeof buf));
                return poison;
            }
            n = in.rank;
            for (int i = 0; i < n; i++) perm[i] = i;
            perm[n - 1] = n - 2;
            perm[n - 2] = n - 1;
        }
        bool identity = true;
        rt = in;
        for (int i = 0; i < n; i++) {
            rt.shape[i] = in.shape[perm[i]];
            if (perm[i] != i) identity = false;
        }
        if (identity) return vvalue(v);
        IrOp *o = emit(L, OP_PERMUTE, A->loc, &rt, 1, &v);
        o->nints = n;
        memcpy(o->ints, perm, sizeof(int) * (size_t)n);
        return vvalue(o->result);
    }
    if (strcmp(name, "expand_dims") == 0) {
        int64_t ax;
        int axis;
        if (!const_int(L, A->slot[1], "axis", &ax)) return poison;
        if (!sema_check_axis(L->d, A->slot[1]->loc, name, ax, in.rank + 1, &axis)) return poison;
        if (in.rank + 1 > TILE_MAX_RANK) {
            diag_error(L->d, A->loc, "expand_dims(): rank would exceed %d", TILE_MAX_RANK);
            return poison;
        }
        int shape[TILE_MAX_RANK];
        for (int i = 0, k = 0; i <= in.rank; i++) shape[i] = i == axis ? 1 : in.shape[k++];
        return vvalue(reshape_to(L, v, in.rank + 1, shape, A->loc));
    }
    if (strcmp(name, "broadcast_to") == 0) {
        if (!const_int_list(L, A->slot[1], "shape", list, &n)) return poison;
        if (!sema_broadcast_to(L->d, A->loc, &in, n, list, &rt)) return poison;
        return vvalue(broadcast_to(L, v, &rt, A->loc));
    }
    /* extract */
    if (!const_int_list(L, A->slot[1], "index", list, &n) || !const_int_list(L, A->slot[2], "shape", list2, &n2))
        return poison;
    if (!sema_extract(L->d, A->loc, &in, n, list, n2, list2, &rt)) return poison;
    if (type_same_shape(&rt, &in)) return vvalue(v);
    IrOp *o = emit(L, OP_EXTRACT, A->loc, &rt, 1, &v);
    o->nints = n;
    for (int i = 0; i < n; i++) o->ints[i] = (int)list[i];
    return vvalue(o->result);
}

static Val cat_op(Lower *L, Args *A) {
    Val t = lower_expr(L, A->slot[0]);
    int64_t ax;
    if (t.kind == V_ERROR) return poison;
    if (t.kind != V_TUPLE || t.n < 2) {
        diag_error(L->d, A->slot[0]->loc, "cat() takes a tuple of two or more tiles: cat((a, b), axis)");
        return poison;
    }
    if (!const_int(L, A->slot[1], "axis", &ax)) return poison;
    if (!need_scalar_like(L, &t.elems[0], "cat", A->loc)) return poison;
    int acc = to_ir(L, &t.elems[0], A->loc);
    for (int i = 1; i < t.n; i++) {
        if (!need_scalar_like(L, &t.elems[i], "cat", A->loc)) return poison;
        int b = to_ir(L, &t.elems[i], A->loc), axis;
        Type rt;
        if (!sema_cat(L->d, A->loc, ir_type(L->f, acc), ir_type(L->f, b), ax, &rt, &axis)) return poison;
        int args[2] = {acc, b};
        IrOp *o = emit(L, OP_CAT, A->loc, &rt, 2, args);
        o->axis = axis;
        acc = o->result;
    }
    return vvalue(acc);
}

/* ---- memory operations ------------------------------------------------ */

/* An index operand (tile units for load/store, elements for gather): an
 * integer scalar or tile, converted to i32 (i64 when it is 64-bit). */
static int index_operand(Lower *L, const Val *v, const char *callee, Loc loc, bool tiles_ok) {
    if (!need_scalar_like(L, v, callee, loc)) return -1;
    DType dt = val_dtype(L, v);
    Type t = val_type(L, v);
    if (!dtype_is_int(dt) || (!tiles_ok && t.rank != 0)) {
        char buf[200];
        t.dtype = dt;
        diag_error(L->d, loc, "%s() index must be an integer %s, got %s", callee, tiles_ok ? "scalar or tile" : "scalar",
                   type_str(&t, buf, sizeof buf));
        return -1;
    }
    bool wide = !is_loose(v) && (dt == DT_I64 || dt == DT_U64 || dt == DT_U32);
    return to_ir_as(L, v, wide ? DT_I64 : DT_I32, loc);
}

/* The index tuple of a memory op: one entry per array axis. */
static bool index_tuple(Lower *L, Expr *e, int array, const char *callee, bool tiles_ok, int *out) {
    Val v = lower_expr(L, e);
    if (v.kind == V_ERROR) return false;
    const IrParam *p = &L->f->params[array];
    Val *elems = v.kind == V_TUPLE ? v.elems : &v;
    int n = v.kind == V_TUPLE ? v.n : 1;
    if (n != p->rank) {
        diag_error(L->d, e->loc, "%s() on '%s' (rank %d) needs %d indices, got %d", callee, p->name, p->rank,
                   p->rank, n);
        return false;
    }
    for (int i = 0; i < n; i++)
        if ((out[i] = index_operand(L, &elems[i], callee, e->loc, tiles_ok)) < 0) return false;
    return true;
}

static bool get_padding(Lower *L, Expr *e, DType dt, int *out) {
    *out = PAD_ZERO;
    if (!e) return true;
    const char *s = e->kind == EX_NAME ? e->name : e->kind == EX_STRING ? e->sval : NULL;
    static const char *const names[] = {"zero", "nan", "pos_inf", "neg_inf"};
    for (int i = 0; s && i < 4; i++)
        if (strcmp(s, names[i]) == 0) {
            if (i > 0 && !dtype_is_float(dt)) {
                diag_error(L->d, e->loc, "padding=%s needs a float array, this one is %s", s, dtype_name(dt));
                return false;
            }
            *out = i;
            return true;
        }
    diag_error(L->d, e->loc, "padding must be one of zero, nan, pos_inf, neg_inf");
    return false;
}

static bool get_order_latency(Lower *L, Args *A, int order_slot, int rank, IrOp *o) {
    if (A->slot[order_slot]) {
        int64_t list[TILE_MAX_RANK];
        int n;
        if (!const_int_list(L, A->slot[order_slot], "order", list, &n)) return false;
        if (!sema_check_permutation(L->d, A->slot[order_slot]->loc, "order", n, list, rank, o->ints)) return false;
        o->nints = n;
    }
    if (A->slot[order_slot + 1]) {
        int64_t lat;
        if (!const_int(L, A->slot[order_slot + 1], "latency", &lat)) return false;
        if (lat < 1 || lat > 10) {
            diag_error(L->d, A->slot[order_slot + 1]->loc, "latency must be between 1 and 10, got %lld", (long long)lat);
            return false;
        }
        o->latency = (int)lat;
    }
    return true;
}

/* load(arr, index, shape, padding, order, latency) */
static Val load_op(Lower *L, Args *A) {
    int arr, idx[TILE_MAX_RANK], pad, n;
    int64_t shape[TILE_MAX_RANK];
    if (!get_array(L, A->slot[0], "load", &arr)) return poison;
    const IrParam *p = &L->f->params[arr];
    if (!index_tuple(L, A->slot[1], arr, "load", false, idx)) return poison;
    if (!const_int_list(L, A->slot[2], "shape", shape, &n)) return poison;
    if (n != p->rank) {
        diag_error(L->d, A->slot[2]->loc, "load() from '%s' (rank %d) needs a shape of %d extents, got %d", p->name,
                   p->rank, p->rank, n);
        return poison;
    }
    if (!sema_check_tile_shape(L->d, A->slot[2]->loc, n, shape)) return poison;
    if (!get_padding(L, A->slot[3], p->dtype, &pad)) return poison;
    Type rt = mk_type(p->dtype, n, shape);
    IrOp tmp;
    memset(&tmp, 0, sizeof tmp);
    if (!get_order_latency(L, A, 4, p->rank, &tmp)) return poison;
    IrOp *o = emit(L, OP_LOAD, A->loc, &rt, n, idx);
    o->array = arr;
    o->flag = pad;
    o->nints = tmp.nints;
    memcpy(o->ints, tmp.ints, sizeof o->ints);
    o->latency = tmp.latency;
    return vvalue(o->result);
}

/* store(arr, index, tile, order, latency) */
static Val store_op(Lower *L, Args *A) {
    int arr, args[TILE_MAX_RANK + 1];
    Val t;
    if (!get_array(L, A->slot[0], "store", &arr)) return poison;
    IrParam *p = &L->f->params[arr];
    if (!index_tuple(L, A->slot[1], arr, "store", false, args)) return poison;
    if (!get_tile(L, A->slot[2], "store", &t)) return poison;
    Type tt = val_type(L, &t);
    char buf[200];
    if (is_loose(&t)) tt.dtype = p->dtype;
    if (tt.rank != p->rank) {
        diag_error(L->d, A->slot[2]->loc, "store of %s into '%s' (rank %d): the tile must have the array's rank (use reshape)",
                   type_str(&tt, buf, sizeof buf), p->name, p->rank);
        return poison;
    }
    if (tt.dtype != p->dtype) {
        diag_error(L->d, A->slot[2]->loc, "store of %s into %s array '%s': use astype", type_str(&tt, buf, sizeof buf),
                   dtype_name(p->dtype), p->name);
        return poison;
    }
    IrOp tmp;
    memset(&tmp, 0, sizeof tmp);
    if (!get_order_latency(L, A, 3, p->rank, &tmp)) return poison;
    args[p->rank] = to_ir_as(L, &t, p->dtype, A->loc);
    IrOp *o = emit(L, OP_STORE, A->loc, NULL, p->rank + 1, args);
    o->array = arr;
    o->nints = tmp.nints;
    memcpy(o->ints, tmp.ints, sizeof o->ints);
    o->latency = tmp.latency;
    p->written = true;
    return vkind(V_NONE, 0);
}

/* gather(arr, indices, padding) and scatter/atomic_*(arr, indices, value):
 * indices (and the value) broadcast together. */
static Val gather_scatter_op(Lower *L, OpId op, Args *A) {
    const char *name = A->callee;
    int arr, idx[TILE_MAX_RANK + 1];
    if (!get_array(L, A->slot[0], name, &arr)) return poison;
    IrParam *p = &L->f->params[arr];
    if (!index_tuple(L, A->slot[1], arr, name, true, idx)) return poison;
    int n = p->rank;
    bool wide = false;
    Type shape = type_scalar(DT_I32);
    for (int i = 0; i < n; i++) {
        if (ir_type(L->f, idx[i])->dtype == DT_I64) wide = true;
        if (!sema_check_broadcast(L->d, A->slot[1]->loc, &shape, ir_type(L->f, idx[i]), &shape)) return poison;
    }
    int pad = PAD_ZERO, nargs = n;
    if (op == OP_GATHER) {
        if (!get_padding(L, A->slot[2], p->dtype, &pad)) return poison;
    } else {
        Val v;
        if (!get_tile(L, A->slot[2], name, &v)) return poison;
        Type vt = val_type(L, &v);
        char buf[200];
        if (!is_loose(&v) && vt.dtype != p->dtype) {
            diag_error(L->d, A->slot[2]->loc, "%s of %s into %s array '%s': use astype", name,
                       type_str(&vt, buf, sizeof buf), dtype_name(p->dtype), p->name);
            return poison;
        }
        if (op != OP_SCATTER && p->dtype == DT_BOOL) {
            diag_error(L->d, A->loc, "%s() on bool array '%s' is not supported", name, p->name);
            return poison;
        }
        vt.dtype = p->dtype;
        if (!sema_check_broadcast(L->d, A->slot[2]->loc, &shape, &vt, &shape)) return poison;
        idx[n] = to_ir_as(L, &v, p->dtype, A->loc);
        nargs = n + 1;
        p->written = true;
    }
    int64_t ext[TILE_MAX_RANK];
    for (int i = 0; i < shape.rank; i++) ext[i] = shape.shape[i];
    if (!sema_check_tile_shape(L->d, A->loc, shape.rank, ext)) return poison;
    for (int i = 0; i < nargs; i++) {
        if (i < n) idx[i] = cast_to(L, idx[i], wide ? DT_I64 : DT_I32, A->loc);
        idx[i] = broadcast_to(L, idx[i], &shape, A->loc);
    }
    Type rt = shape;
    rt.dtype = p->dtype;
    IrOp *o = emit(L, op, A->loc, op == OP_GATHER ? &rt : NULL, nargs, idx);
    o->array = arr;
    o->flag = pad;
    return op == OP_GATHER ? vvalue(o->result) : vkind(V_NONE, 0);
}

/* num_tiles(arr, axis, shape) = cdiv(extent, shape[axis]) */
static Val num_tiles_op(Lower *L, Args *A) {
    int arr, n, axis;
    int64_t ax, shape[TILE_MAX_RANK];
    if (!get_array(L, A->slot[0], "num_tiles", &arr)) return poison;
    const IrParam *p = &L->f->params[arr];
    if (!const_int(L, A->slot[1], "axis", &ax)) return poison;
    if (!sema_check_axis(L->d, A->slot[1]->loc, "num_tiles", ax, p->rank, &axis)) return poison;
    if (!const_int_list(L, A->slot[2], "shape", shape, &n)) return poison;
    if (n != p->rank) {
        diag_error(L->d, A->slot[2]->loc, "num_tiles() on '%s' (rank %d) needs a shape of %d extents, got %d", p->name,
                   p->rank, p->rank, n);
        return poison;
    }
    if (!sema_check_tile_shape(L->d, A->slot[2]->loc, n, shape)) return poison;
    Val dim = vkind(V_DIM, arr);
    dim.axis = axis;
    return binary(L, OP_CDIV, "cdiv", dim, vloose_int(shape[axis]), A->loc);
}

static Val print_op(Lower *L, Expr *call, Expr *recv) {
    Expr *first = recv ? recv : call->args;
    if (!first || first->kind != EX_STRING) {
        diag_error(L->d, call->loc, "print() needs a format string first: print(\"x = {}\", x)");
        return poison;
    }
    int holes = 0;
    for (const char *s = first->sval; (s = strstr(s, "{}")); s += 2) holes++;
    int args[64], n = 0;
    bool ok = true;
    for (Expr *e = recv ? call->args : first->next; e; e = e->next) {
        if (e->kind == EX_KWARG) {
            diag_error(L->d, e->loc, "print() got an unexpected keyword argument '%s'", e->name);
            return poison;
        }
        if (n == 64) {
            diag_error(L->d, e->loc, "print() takes at most 64 values");
            return poison;
        }
        Val v = lower_expr(L, e);
        if (!need_scalar_like(L, &v, "print", e->loc)) { ok = false; continue; }
        args[n++] = to_ir(L, &v, e->loc);
    }
    if (!ok) return poison;
    if (n != holes) {
        diag_error(L->d, call->loc, "print() format has %d '{}' but %d value%s given", holes, n, n == 1 ? " is" : "s are");
        return poison;
    }
    IrOp *o = emit(L, OP_PRINT, call->loc, NULL, n, args);
    o->str = first->sval;
    return vkind(V_NONE, 0);
}

/* The builtin functions and their parameters (keyword names). */
typedef enum BuiltinKind {
    B_GRID, B_UNARY, B_BINARY, B_WHERE, B_ASTYPE, B_REDUCE, B_SCAN, B_MMA, B_MATMUL,
    B_SHAPE, B_CAT, B_ZEROS, B_ONES, B_FULL, B_ARANGE, B_LOAD, B_STORE, B_GATHER, B_SCATTER, B_NUM_TILES,
} BuiltinKind;

typedef struct Builtin {
    const char *name;
    BuiltinKind kind;
    OpId op;
    int nrequired;
    const char *params[6];
} Builtin;

static const Builtin builtins[] = {
    {"bid", B_GRID, OP_BID, 1, {"axis"}},
    {"num_blocks", B_GRID, OP_NUM_BLOCKS, 1, {"axis"}},
    {"where", B_WHERE, OP_WHERE, 3, {"cond", "x", "y"}},
    {"astype", B_ASTYPE, OP_CAST, 2, {"x", "dtype"}},
    {"sum", B_REDUCE, OP_REDUCE_SUM, 1, {"x", "axis", "keepdims"}},
    {"max", B_REDUCE, OP_REDUCE_MAX, 1, {"x", "axis", "keepdims"}},
    {"min", B_REDUCE, OP_REDUCE_MIN, 1, {"x", "axis", "keepdims"}},
    {"prod", B_REDUCE, OP_REDUCE_PROD, 1, {"x", "axis", "keepdims"}},
    {"argmax", B_REDUCE, OP_ARGMAX, 1, {"x", "axis", "keepdims"}},
    {"argmin", B_REDUCE, OP_ARGMIN, 1, {"x", "axis", "keepdims"}},
    {"cumsum", B_SCAN, OP_CUMSUM, 2, {"x", "axis", "reverse"}},
    {"cumprod", B_SCAN, OP_CUMPROD, 2, {"x", "axis", "reverse"}},
    {"mma", B_MMA, OP_MMA, 3, {"a", "b", "acc"}},
    {"matmul", B_MATMUL, OP_MMA, 2, {"a", "b"}},
    {"reshape", B_SHAPE, OP_RESHAPE, 2, {"x", "shape"}},
    {"permute", B_SHAPE, OP_PERMUTE, 2, {"x", "axes"}},
    {"transpose", B_SHAPE, OP_PERMUTE, 1, {"x"}},
    {"expand_dims", B_SHAPE, OP_RESHAPE, 2, {"x", "axis"}},
    {"broadcast_to", B_SHAPE, OP_BROADCAST, 2, {"x", "shape"}},
    {"extract", B_SHAPE, OP_EXTRACT, 3, {"x", "index", "shape"}},
    {"item", B_SHAPE, OP_RESHAPE, 1, {"x"}},
    {"cat", B_CAT, OP_CAT, 2, {"tiles", "axis"}},
    {"zeros", B_ZEROS, OP_BROADCAST, 2, {"shape", "dtype"}},
    {"ones", B_ONES, OP_BROADCAST, 2, {"shape", "dtype"}},
    {"full", B_FULL, OP_BROADCAST, 3, {"shape", "value", "dtype"}},
    {"arange", B_ARANGE, OP_ARANGE, 1, {"n", "dtype"}},
    {"load", B_LOAD, OP_LOAD, 3, {"array", "index", "shape", "padding", "order", "latency"}},
    {"store", B_STORE, OP_STORE, 3, {"array", "index", "tile", "order", "latency"}},
    {"gather", B_GATHER, OP_GATHER, 2, {"array", "indices", "padding"}},
    {"scatter", B_SCATTER, OP_SCATTER, 3, {"array", "indices", "value"}},
    {"atomic_add", B_SCATTER, OP_ATOMIC_ADD, 3, {"array", "indices", "value"}},
    {"atomic_max", B_SCATTER, OP_ATOMIC_MAX, 3, {"array", "indices", "value"}},
    {"atomic_min", B_SCATTER, OP_ATOMIC_MIN, 3, {"array", "indices", "value"}},
    {"num_tiles", B_NUM_TILES, OP_CDIV, 3, {"array", "axis", "shape"}},
};

static int count_params(const Builtin *b) {
    int n = 0;
    while (n < 6 && b->params[n]) n++;
    return n;
}

/* Calls builtin `name`; false if there is no builtin of that name. */
static bool call_builtin(Lower *L, const char *name, Expr *call, Expr *recv, Val *out) {
    Loc loc = call->loc;
    if (strcmp(name, "print") == 0) {
        *out = print_op(L, call, recv);
        return true;
    }
    static const char *const unary_params[] = {"x"}, *const binary_params[] = {"a", "b"};
    Builtin elementwise;
    const Builtin *b = NULL;
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
        if (strcmp(builtins[i].name, name) == 0) b = &builtins[i];
    if (!b) {
        int nin;
        OpId op = find_elementwise(name, &nin);
        if (op == OP_COUNT) return false;
        memset(&elementwise, 0, sizeof elementwise);
        elementwise.name = name;
        elementwise.kind = nin == 1 ? B_UNARY : B_BINARY;
        elementwise.op = op;
        elementwise.nrequired = nin;
        for (int i = 0; i < nin; i++) elementwise.params[i] = nin == 1 ? unary_params[i] : binary_params[i];
        b = &elementwise;
    }
    Args A;
    *out = poison;
    if (!bind_args(L, name, loc, recv, call->args, b->params, count_params(b), b->nrequired, &A)) return true;
    Val x, y, z;
    switch (b->kind) {
    case B_GRID: {
        int64_t axis;
        if (!const_int(L, A.slot[0], "axis", &axis)) return true;
        if (axis < 0 || axis > 2) {
            diag_error(L->d, A.slot[0]->loc, "%s() axis must be 0, 1 or 2, got %lld", name, (long long)axis);
            return true;
        }
        Type t = type_scalar(DT_I32);
        IrOp *o = emit(L, b->op, loc, &t, 0, NULL);
        o->axis = (int)axis;
        *out = vvalue(o->result);
        return true;
    }
    case B_UNARY:
        x = lower_expr(L, A.slot[0]);
        *out = unary(L, b->op, name, x, loc);
        return true;
    case B_BINARY:
        x = lower_expr(L, A.slot[0]);
        y = lower_expr(L, A.slot[1]);
        *out = binary(L, b->op, name, x, y, loc);
        return true;
    case B_WHERE:
        x = lower_expr(L, A.slot[0]);
        y = lower_expr(L, A.slot[1]);
        z = lower_expr(L, A.slot[2]);
        *out = where_op(L, x, y, z, loc);
        return true;
    case B_ASTYPE: {
        DType dt;
        x = lower_expr(L, A.slot[0]);
        if (get_dtype(L, A.slot[1], &dt)) *out = astype(L, x, dt, loc);
        return true;
    }
    case B_REDUCE: *out = reduce_op(L, b->op, &A); return true;
    case B_SCAN: *out = scan_op(L, b->op, &A); return true;
    case B_MMA: *out = mma_op(L, &A); return true;
    case B_MATMUL:
        x = lower_expr(L, A.slot[0]);
        y = lower_expr(L, A.slot[1]);
        *out = matmul(L, x, y, loc);
        return true;
    case B_SHAPE: *out = shape_op(L, name, &A); return true;
    case B_CAT: *out = cat_op(L, &A); return true;
    case B_ZEROS: case B_ONES:
        *out = fill_op(L, &A, A.slot[0], vloose_int(b->kind == B_ONES), A.slot[1]);
        return true;
    case B_FULL:
        x = lower_expr(L, A.slot[1]);
        if (x.kind != V_ERROR) *out = fill_op(L, &A, A.slot[0], x, A.slot[2]);
        return true;
    case B_ARANGE: *out = arange_op(L, &A); return true;
    case B_LOAD: *out = load_op(L, &A); return true;
    case B_STORE: *out = store_op(L, &A); return true;
    case B_GATHER: case B_SCATTER: *out = gather_scatter_op(L, b->op, &A); return true;
    case B_NUM_TILES: *out = num_tiles_op(L, &A); return true;
    }
    return true;
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
    if (!bind_args(L, fn->name, call->loc, recv, call->args, params, np, np, &A)) return poison;
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
    if (call_builtin(L, name, e, recv, &out)) return out;
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
        Type t = val_type(L, &base);
        if (strcmp(m, "shape") == 0) {
            Val r = {.kind = V_TUPLE, .n = t.rank, .elems = ARENA_ARRAY(L->a, Val, t.rank > 0 ? t.rank : 1)};
            for (int i = 0; i < t.rank; i++) r.elems[i] = vloose_int(t.shape[i]);
            return r;
        }
        if (strcmp(m, "ndim") == 0) return vloose_int(t.rank);
        if (strcmp(m, "dtype") == 0) { Val r = {.kind = V_DTYPE, .dt = t.dtype}; return r; }
    }
    char buf[160];
    diag_error(L->d, e->loc, "%s has no member '%s'", val_desc(L, &base, buf, sizeof buf), m);
    return poison;
}

static Val index_expr(Lower *L, Expr *e) {
    Val base = lower_expr(L, e->a);
    if (base.kind == V_ERROR) return poison;
    if (base.kind != V_TUPLE) {
        char buf[160];
        diag_error(L->d, e->loc, "cannot index %s (only tuples such as x.shape; use extract() for tiles)",
                   val_desc(L, &base, buf, sizeof buf));
        return poison;
    }
    int64_t i;
    if (!const_int(L, e->b, "a tuple index", &i)) return poison;
    if (i < -base.n || i >= base.n) {
        diag_error(L->d, e->b->loc, "index %lld is out of range for a tuple of %d", (long long)i, base.n);
        return poison;
    }
    return base.elems[i < 0 ? i + base.n : i];
}

static Val lower_expr_kind(Lower *L, Expr *e);

/* Every constant remembers where it was written, for messages about it. */
static Val lower_expr(Lower *L, Expr *e) {
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
            IrOp *op = emit(L, OP_LOCAL_GET, e->loc, &L->f->locals[ent->val.id].type, 0, NULL);
            op->local = ent->val.id;
            return vvalue(op->result);
        }
        return ent->val;
    }
    case EX_UNARY: {
        Val a = lower_expr(L, e->a);
        if (e->op == '-') return unary(L, OP_NEG, "-", a, e->loc);
        if (e->op == '!') return unary(L, OP_NOT, "!", a, e->loc);
        return unary(L, OP_BITNOT, "~", a, e->loc);
    }
    case EX_BINARY: {
        Val a = lower_expr(L, e->a), b = lower_expr(L, e->b);
        if (a.kind == V_ERROR || b.kind == V_ERROR) return poison;
        if (e->op == BIN_MATMUL) return matmul(L, a, b, e->loc);
        OpId op = binop_to_op(e->op);
        if (op == OP_COUNT) {
            diag_error(L->d, e->loc, "unsupported operator");
            return poison;
        }
        return binary(L, op, binop_spelling((BinOp)e->op), a, b, e->loc);
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
    if (!need_scalar_like(L, &v, "assignment", loc)) return;
    Type lt = L->f->locals[local].type;
    Type vt = val_type(L, &v);
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
    int x = broadcast_to(L, to_ir_as(L, &v, lt.dtype, loc), &lt, loc);
    IrOp *o = emit(L, OP_LOCAL_SET, loc, NULL, 1, &x);
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
        IrOp *get = emit(L, OP_LOCAL_GET, s->loc, &L->f->locals[ent->val.id].type, 0, NULL);
        get->local = ent->val.id;
        v = binary(L, binop_to_op(s->op), binop_spelling((BinOp)s->op), vvalue(get->result), v, s->loc);
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
        diag_error(L->d, s->expr->loc, "var '%s' must hold a tile or scalar, got %s", name, val_desc(L, &v, buf, sizeof buf));
        v = poison;
    }
    if (v.kind == V_ERROR) {
        bind(L, name, ENT_VAR, poison);   /* still a var: assignments to it stay quiet */
        return;
    }
    Type t = val_type(L, &v);
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
        if (!need_scalar_like(L, &b[i], "range", loc)) return false;
        Type t = val_type(L, &b[i]);
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
        Val diff = binary(L, OP_SUB, "-", lo, hi, s->loc);
        last = binary(L, OP_CDIV, "cdiv", diff, vconst(step.dt, scalar_canon(step.dt, neg), step.loose), s->loc);
        first = vloose_int(0);
        stride = vloose_int(1);
        if (last.kind == V_ERROR) return;
    }
    int args[3] = {to_ir_as(L, &first, dt, s->loc), to_ir_as(L, &last, dt, s->loc), to_ir_as(L, &stride, dt, s->loc)};
    Type it = type_scalar(dt);
    IrOp *o = emit(L, OP_FOR, s->loc, &it, 3, args);
    L->f->values[o->result].name = var;
    Val iv = vvalue(o->result);
    if (down) {
        IrBlock *saved_blk = L->blk;
        L->blk = o->body;
        iv = binary(L, OP_ADD, "+", lo, binary(L, OP_MUL, "*", iv, step, s->loc), s->loc);
        iv = vvalue(to_ir_as(L, &iv, dt, s->loc));
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
    if (!need_scalar_like(L, &c, what, e->loc)) return false;
    Type t = val_type(L, &c);
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
    else *id = to_ir(L, &c, e->loc);
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
    IrOp *o = emit(L, OP_IF, s->loc, NULL, 1, &id);
    lower_region(L, o->body, s->body, false, NULL);
    if (s->els) lower_region(L, o->else_body, NULL, false, s->els);
}

static void lower_while(Lower *L, Stmt *s) {
    IrOp *loop = emit(L, OP_LOOP, s->loc, NULL, 0, NULL);
    IrBlock *saved_blk = L->blk;
    L->blk = loop->body;
    bool is_const, value = true;
    int id;
    bool ok = condition(L, s->expr, "while", &is_const, &value, &id);
    if (ok && !is_const) {
        Type b = type_scalar(DT_BOOL);
        int neg = emit(L, OP_NOT, s->expr->loc, &b, 1, &id)->result;
        IrOp *exit = emit(L, OP_IF, s->expr->loc, NULL, 1, &neg);
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
            emit(L, s->kind == ST_BREAK ? OP_BREAK : OP_CONTINUE, s->loc, NULL, 0, NULL);
        break;
    }
    case ST_RETURN:
        if (L->nfn == 0) {
            if (s->expr) diag_error(L->d, s->expr->loc, "a kernel returns no value (write 'return;')");
            else emit(L, OP_RETURN, s->loc, NULL, 0, NULL);
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

/* Binds the kernel's parameters into the current scope and IrFunc. */
static void bind_params(Lower *L, const Decl *k, const ConstBinding *consts, int nconsts) {
    IrFunc *f = L->f;
    f->params = ARENA_ARRAY(L->a, IrParam, k->nparams > 0 ? k->nparams : 1);
    f->consts = ARENA_ARRAY(L->a, IrConst, k->nparams > 0 ? k->nparams : 1);
    for (Param *p = k->params; p; p = p->next) {
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
            if (p->dtype == DT_TF32)
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
        ip->dtype = p->dtype;
        if (p->kind == PARAM_SCALAR) {
            if (p->dtype == DT_TF32) diag_error(L->d, p->loc, "scalar parameter '%s' cannot be tf32", p->name);
            Val v = vkind(V_PARAM, idx);
            bind(L, p->name, ENT_PARAM, v);
            continue;
        }
        if (p->dtype == DT_TF32)
            diag_error(L->d, p->loc, "array '%s' cannot be tf32 (use an f32 array and astype(t, tf32))", p->name);
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
        if (const_int(L, h->a, h->name, &v)) set_hint(L, h->name, v, h->a->loc);
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

static IrFunc *lower_kernel_decl(Arena *a, Diag *d, const Program *p, const Decl *k,
                                 const ConstBinding *consts, int nconsts, bool quiet_globals) {
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
    return d->nerrors > before ? NULL : L.f;
}

IrFunc *lower_kernel(Arena *a, Diag *d, const Program *p, const char *kernel,
                     const ConstBinding *consts, int nconsts) {
    if (!p) return NULL;
    for (const Decl *k = p->decls; k; k = k->next)
        if (k->kind == DECL_KERNEL && strcmp(k->name, kernel) == 0)
            return lower_kernel_decl(a, d, p, k, consts, nconsts, false);
    diag_plain(d, "no kernel named '%s'", kernel);
    return NULL;
}

/* ---- whole-program checks --------------------------------------------- */

static const Decl *find_kernel(const Program *p, const char *name) {
    for (const Decl *k = p->decls; k; k = k->next)
        if (k->kind == DECL_KERNEL && strcmp(k->name, name) == 0) return k;
    return NULL;
}

static void check_tune(Lower *L, const Decl *t) {
    const Decl *k = find_kernel(L->prog, t->name);
    if (!k) {
        diag_error(L->d, t->loc, "tune block for unknown kernel '%s'", t->name);
        return;
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
    for (const Decl *t = p->decls; t; t = t->next)
        if (t->kind == DECL_TUNE) check_tune(&L, t);
    for (const Decl *k = p->decls; k; k = k->next) {
        if (k->kind != DECL_KERNEL) continue;
        bool all_defaults = true;
        for (Param *q = k->params; q; q = q->next)
            if (q->kind == PARAM_CONST && !q->init) all_defaults = false;
        if (all_defaults && globals_ok) {
            lower_kernel_decl(a, d, p, k, NULL, 0, true);
            continue;
        }
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
    if (strcmp(v, "true") == 0 || strcmp(v, "false") == 0) {
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
