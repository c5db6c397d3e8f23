/* lower_builtins.c: the builtin functions of the language, lowered to IR
 * (half of the lowering walk; the other half is lower.c, the shared types
 * are in lower_internal.h).
 *
 * One table, `builtins`, gives each builtin its parameter names (so keyword
 * arguments and Python-style arity errors come for free), the number
 * required and the IR op; element-wise ones (exp, maximum, ...) come from
 * ops.def directly.  Each handler takes its bound Args, evaluates the
 * arguments through lower_expr, asks sema.c for the typing rule and emits.
 * Compile-time arguments (axis, shape, order, keepdims, dtype) must be
 * constants.  Handlers return poison after reporting an error.  The choices
 * made where the spec is silent are listed at the top of lower.c. */
#include "lower_internal.h"

#include <string.h>

static bool get_array(Lower *L, Expr *e, const char *callee, int *out) {
    Val v = lower_expr(L, e);
    if (v.kind == V_ERROR) return false;
    if (v.kind != V_ARRAY) {
        char buf[160];
        diag_error(L->d, e->loc, "%s() needs an array parameter, got %s", callee, lw_val_desc(L, &v, buf, sizeof buf));
        return false;
    }
    *out = v.id;
    return true;
}

/* A scalar or tile IR value from an argument (NULL-safe: -1 on error). */
static bool get_tile(Lower *L, Expr *e, const char *callee, Val *out) {
    *out = lower_expr(L, e);
    return lw_need_scalar_like(L, out, callee, e->loc);
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

/* astype(x, dtype): constants convert at compile time. */
static Val astype(Lower *L, Val x, DType dt, Loc loc) {
    if (!lw_need_scalar_like(L, &x, "astype", loc)) return poison;
    if (x.kind == V_CONST) return vconst(dt, scalar_convert(x.dt, dt, x.c), false);
    return vvalue(lw_to_ir_as(L, &x, dt, loc));
}

/* where(cond, x, y): cond is bool, x and y promote, all three broadcast. */
static Val where_op(Lower *L, Val c, Val a, Val b, Loc loc) {
    if (!lw_need_scalar_like(L, &c, "where", loc) || !lw_need_scalar_like(L, &a, "where", loc) ||
        !lw_need_scalar_like(L, &b, "where", loc))
        return poison;
    if (lw_val_dtype(L, &c) != DT_BOOL || is_loose(&c)) {
        diag_error(L->d, loc, "where() condition must be bool, got %s", dtype_name(lw_val_dtype(L, &c)));
        return poison;
    }
    DType da, db, dt;
    lw_resolve_pair(L, &a, &b, &da, &db);
    if (!sema_check_promote(L->d, loc, "where()", da, db, &dt)) return poison;
    if (c.kind == V_CONST && a.kind == V_CONST && b.kind == V_CONST) {
        const Val *pick = c.c.i ? &a : &b;
        bool loose = is_loose(&a) && is_loose(&b);
        return vconst(dt, scalar_convert(pick->dt, dt, pick->c), loose);
    }
    if (is_loose(&a) && is_loose(&b)) dt = sema_default_dtype(dt == DT_F64, 0);
    Type tc = lw_val_type(L, &c), ta = lw_val_type(L, &a), tb = lw_val_type(L, &b), s1, shape;
    ta.dtype = da;
    tb.dtype = db;
    if (!sema_check_broadcast(L->d, loc, &ta, &tb, &s1)) return poison;
    s1.dtype = dt;
    if (!sema_check_broadcast(L->d, loc, &tc, &s1, &shape)) return poison;
    int args[3];
    args[0] = lw_broadcast_to(L, lw_to_ir(L, &c, loc), &shape, loc);
    args[1] = lw_broadcast_to(L, lw_to_ir_as(L, &a, dt, loc), &shape, loc);
    args[2] = lw_broadcast_to(L, lw_to_ir_as(L, &b, dt, loc), &shape, loc);
    Type rt = shape;
    rt.dtype = dt;
    return vvalue(lw_emit(L, OP_WHERE, loc, &rt, 3, args)->result);
}

/* sum/max/min/prod/argmax/argmin(x, axis, keepdims) */
static Val reduce_op(Lower *L, OpId op, Args *A) {
    Val x;
    bool keep = false;
    if (!get_tile(L, A->slot[0], A->callee, &x)) return poison;
    if (A->slot[2] && !lw_const_bool(L, A->slot[2], "keepdims", &keep)) return poison;
    DType operand, result;
    if (!sema_reduce(L->d, A->loc, op, lw_val_dtype(L, &x), &operand, &result)) return poison;
    int v = lw_to_ir_as(L, &x, operand, A->loc);
    Type t = *ir_type(L->f, v);
    int axis = 0, rank = t.rank;
    if (A->slot[1]) {
        int64_t ax;
        if (!lw_const_int(L, A->slot[1], "axis", &ax)) return poison;
        if (!sema_check_axis(L->d, A->slot[1]->loc, A->callee, ax, rank, &axis)) return poison;
    } else if (rank == 0) {
        /* a scalar is its own reduction; its argmax is 0 */
        Scalar zero;
        zero.i = 0;
        return (op == OP_ARGMAX || op == OP_ARGMIN) ? vconst(DT_I32, zero, false) : vvalue(v);
    } else if (rank > 1) {
        int flat = (int)type_numel(&t);
        v = lw_reshape_to(L, v, 1, &flat, A->loc);
    }
    const Type *in = ir_type(L->f, v);
    Type rt = type_scalar(result);
    for (int i = 0, k = 0; i < in->rank; i++)
        if (i != axis) rt.shape[k++] = in->shape[i];
    rt.rank = in->rank - 1;
    IrOp *o = lw_emit(L, op, A->loc, &rt, 1, &v);
    o->axis = axis;
    int r = o->result;
    if (keep) {
        int shape[TILE_MAX_RANK];
        for (int i = 0; i < rank; i++) shape[i] = A->slot[1] ? (i == axis ? 1 : t.shape[i]) : 1;
        r = lw_reshape_to(L, r, rank, shape, A->loc);
    }
    return vvalue(r);
}

/* cumsum/cumprod(x, axis, reverse) */
static Val scan_op(Lower *L, OpId op, Args *A) {
    Val x;
    int64_t ax;
    bool reverse = false;
    if (!get_tile(L, A->slot[0], A->callee, &x)) return poison;
    if (!lw_const_int(L, A->slot[1], "axis", &ax)) return poison;
    if (A->slot[2] && !lw_const_bool(L, A->slot[2], "reverse", &reverse)) return poison;
    DType operand, result;
    if (!sema_reduce(L->d, A->loc, op, lw_val_dtype(L, &x), &operand, &result)) return poison;
    int v = lw_to_ir_as(L, &x, operand, A->loc), axis;
    if (!sema_check_axis(L->d, A->slot[1]->loc, A->callee, ax, ir_type(L->f, v)->rank, &axis)) return poison;
    IrOp *o = lw_emit(L, op, A->loc, ir_type(L->f, v), 1, &v);
    o->axis = axis;
    o->flag = reverse;
    return vvalue(o->result);
}

static bool get_matrix(Lower *L, Expr *e, const char *callee, int *out) {
    Val v;
    if (!get_tile(L, e, callee, &v)) return false;
    *out = lw_to_ir(L, &v, e->loc);
    return true;
}

static Val mma_op(Lower *L, Args *A) {
    int a, b, acc;
    if (!get_matrix(L, A->slot[0], "mma", &a) || !get_matrix(L, A->slot[1], "mma", &b) ||
        !get_matrix(L, A->slot[2], "mma", &acc))
        return poison;
    if (!sema_mma(L->d, A->loc, ir_type(L->f, a), ir_type(L->f, b), ir_type(L->f, acc))) return poison;
    int args[3] = {a, b, acc};
    return vvalue(lw_emit(L, OP_MMA, A->loc, ir_type(L->f, acc), 3, args)->result);
}

/* a @ b = mma(a, b, zeros) with the accumulator dtype of the operands. */
Val lw_matmul(Lower *L, Val va, Val vb, Loc loc) {
    if (!lw_need_scalar_like(L, &va, "'@'", loc) || !lw_need_scalar_like(L, &vb, "'@'", loc)) return poison;
    int a = lw_to_ir(L, &va, loc), b = lw_to_ir(L, &vb, loc);
    DType operand;
    Type rt;
    if (!sema_matmul(L->d, loc, ir_type(L->f, a), ir_type(L->f, b), &operand, &rt)) return poison;
    Scalar zero;
    zero.u = 0;
    int z = lw_broadcast_to(L, lw_emit_const(L, rt.dtype, zero, loc), &rt, loc);
    int args[3] = {lw_cast_to(L, a, operand, loc), lw_cast_to(L, b, operand, loc), z};
    return vvalue(lw_emit(L, OP_MMA, loc, &rt, 3, args)->result);
}

/* zeros/ones/full(shape, [value,] dtype) */
static Val fill_op(Lower *L, Args *A, Expr *shape_e, Val value, Expr *dtype_e) {
    int64_t shape[TILE_MAX_RANK];
    int n = 0;
    DType dt;
    if (!lw_const_int_list(L, shape_e, "shape", shape, &n) || !lw_get_dtype(L, dtype_e, &dt)) return poison;
    if (!sema_check_tile_shape(L->d, shape_e->loc, n, shape)) return poison;
    if (!lw_need_scalar_like(L, &value, A->callee, A->loc)) return poison;
    Type vt = lw_val_type(L, &value);
    if (vt.rank != 0) {
        char buf[200];
        diag_error(L->d, A->loc, "%s() value must be a scalar, got %s", A->callee, type_str(&vt, buf, sizeof buf));
        return poison;
    }
    if (n == 0) return astype(L, value, dt, A->loc);
    Type rt = lw_mk_type(dt, n, shape);
    return vvalue(lw_broadcast_to(L, lw_to_ir_as(L, &value, dt, A->loc), &rt, A->loc));
}

static Val arange_op(Lower *L, Args *A) {
    int64_t n;
    DType dt = DT_I32;
    if (!lw_const_int(L, A->slot[0], "arange() length", &n)) return poison;
    if (A->slot[1] && !lw_get_dtype(L, A->slot[1], &dt)) return poison;
    if (!sema_check_tile_shape(L->d, A->slot[0]->loc, 1, &n)) return poison;
    if (!(dtype_is_int(dt) || (dtype_is_float(dt) && dt != DT_TF32))) {
        diag_error(L->d, A->loc, "arange() dtype must be an integer or float type, got %s", dtype_name(dt));
        return poison;
    }
    Type rt = lw_mk_type(dt, 1, &n);
    return vvalue(lw_emit(L, OP_ARANGE, A->loc, &rt, 0, NULL)->result);
}

/* reshape / permute / transpose / expand_dims / broadcast_to / extract / item */
static Val shape_op(Lower *L, const char *name, Args *A) {
    Val x;
    if (!get_tile(L, A->slot[0], name, &x)) return poison;
    int v = lw_to_ir(L, &x, A->loc);
    Type in = *ir_type(L->f, v), rt;
    int64_t list[TILE_MAX_RANK], list2[TILE_MAX_RANK];
    int n = 0, n2 = 0;
    if (strcmp(name, "reshape") == 0 || strcmp(name, "item") == 0) {
        bool item = name[0] == 'i';
        if (!item && !lw_const_int_list(L, A->slot[1], "shape", list, &n)) return poison;
        if (item && type_numel(&in) != 1) {
            char buf[200];
            diag_error(L->d, A->loc, "item() needs a one-element tile, got %s", type_str(&in, buf, sizeof buf));
            return poison;
        }
        if (!sema_reshape(L->d, A->loc, &in, n, list, &rt)) return poison;
        return vvalue(lw_reshape_to(L, v, rt.rank, rt.shape, A->loc));
    }
    if (strcmp(name, "permute") == 0 || strcmp(name, "transpose") == 0) {
        int perm[TILE_MAX_RANK];
        if (name[0] == 'p') {
            if (!lw_const_int_list(L, A->slot[1], "axes", list, &n)) return poison;
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
        IrOp *o = lw_emit(L, OP_PERMUTE, A->loc, &rt, 1, &v);
        o->nints = n;
        memcpy(o->ints, perm, sizeof(int) * (size_t)n);
        return vvalue(o->result);
    }
    if (strcmp(name, "expand_dims") == 0) {
        int64_t ax;
        int axis;
        if (!lw_const_int(L, A->slot[1], "axis", &ax)) return poison;
        if (!sema_check_axis(L->d, A->slot[1]->loc, name, ax, in.rank + 1, &axis)) return poison;
        if (in.rank + 1 > TILE_MAX_RANK) {
            diag_error(L->d, A->loc, "expand_dims(): rank would exceed %d", TILE_MAX_RANK);
            return poison;
        }
        int shape[TILE_MAX_RANK];
        for (int i = 0, k = 0; i <= in.rank; i++) shape[i] = i == axis ? 1 : in.shape[k++];
        return vvalue(lw_reshape_to(L, v, in.rank + 1, shape, A->loc));
    }
    if (strcmp(name, "broadcast_to") == 0) {
        if (!lw_const_int_list(L, A->slot[1], "shape", list, &n)) return poison;
        if (!sema_broadcast_to(L->d, A->loc, &in, n, list, &rt)) return poison;
        return vvalue(lw_broadcast_to(L, v, &rt, A->loc));
    }
    /* extract */
    if (!lw_const_int_list(L, A->slot[1], "index", list, &n) || !lw_const_int_list(L, A->slot[2], "shape", list2, &n2))
        return poison;
    if (!sema_extract(L->d, A->loc, &in, n, list, n2, list2, &rt)) return poison;
    if (type_same_shape(&rt, &in)) return vvalue(v);
    IrOp *o = lw_emit(L, OP_EXTRACT, A->loc, &rt, 1, &v);
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
    if (!lw_const_int(L, A->slot[1], "axis", &ax)) return poison;
    if (!lw_need_scalar_like(L, &t.elems[0], "cat", A->loc)) return poison;
    int acc = lw_to_ir(L, &t.elems[0], A->loc);
    for (int i = 1; i < t.n; i++) {
        if (!lw_need_scalar_like(L, &t.elems[i], "cat", A->loc)) return poison;
        int b = lw_to_ir(L, &t.elems[i], A->loc), axis;
        Type rt;
        if (!sema_cat(L->d, A->loc, ir_type(L->f, acc), ir_type(L->f, b), ax, &rt, &axis)) return poison;
        int args[2] = {acc, b};
        IrOp *o = lw_emit(L, OP_CAT, A->loc, &rt, 2, args);
        o->axis = axis;
        acc = o->result;
    }
    return vvalue(acc);
}

/* ---- memory operations ------------------------------------------------ */

/* An index operand (tile units for load/store, elements for gather): an
 * integer scalar or tile, converted to i32 (i64 when it is 64-bit). */
static int index_operand(Lower *L, const Val *v, const char *callee, Loc loc, bool tiles_ok) {
    if (!lw_need_scalar_like(L, v, callee, loc)) return -1;
    DType dt = lw_val_dtype(L, v);
    Type t = lw_val_type(L, v);
    if (!dtype_is_int(dt) || (!tiles_ok && t.rank != 0)) {
        char buf[200];
        t.dtype = dt;
        diag_error(L->d, loc, "%s() index must be an integer %s, got %s", callee, tiles_ok ? "scalar or tile" : "scalar",
                   type_str(&t, buf, sizeof buf));
        return -1;
    }
    bool wide = !is_loose(v) && (dt == DT_I64 || dt == DT_U64 || dt == DT_U32);
    return lw_to_ir_as(L, v, wide ? DT_I64 : DT_I32, loc);
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
        if (!lw_const_int_list(L, A->slot[order_slot], "order", list, &n)) return false;
        if (!sema_check_permutation(L->d, A->slot[order_slot]->loc, "order", n, list, rank, o->ints)) return false;
        o->nints = n;
    }
    if (A->slot[order_slot + 1]) {
        int64_t lat;
        if (!lw_const_int(L, A->slot[order_slot + 1], "latency", &lat)) return false;
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
    if (!lw_const_int_list(L, A->slot[2], "shape", shape, &n)) return poison;
    if (n != p->rank) {
        diag_error(L->d, A->slot[2]->loc, "load() from '%s' (rank %d) needs a shape of %d extents, got %d", p->name,
                   p->rank, p->rank, n);
        return poison;
    }
    if (!sema_check_tile_shape(L->d, A->slot[2]->loc, n, shape)) return poison;
    if (!get_padding(L, A->slot[3], p->dtype, &pad)) return poison;
    Type rt = lw_mk_type(p->dtype, n, shape);
    IrOp tmp;
    memset(&tmp, 0, sizeof tmp);
    if (!get_order_latency(L, A, 4, p->rank, &tmp)) return poison;
    IrOp *o = lw_emit(L, OP_LOAD, A->loc, &rt, n, idx);
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
    Type tt = lw_val_type(L, &t);
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
    args[p->rank] = lw_to_ir_as(L, &t, p->dtype, A->loc);
    IrOp *o = lw_emit(L, OP_STORE, A->loc, NULL, p->rank + 1, args);
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
        Type vt = lw_val_type(L, &v);
        char buf[200];
        if (!is_loose(&v) && vt.dtype != p->dtype) {
            diag_error(L->d, A->slot[2]->loc, "%s of %s into %s array '%s': use astype", name,
                       type_str(&vt, buf, sizeof buf), dtype_name(p->dtype), p->name);
            return poison;
        }
        if (op != OP_SCATTER && (p->dtype == DT_BOOL || p->dtype == DT_TF32)) {
            /* (tf32: no arithmetic on tf32 values) */
            diag_error(L->d, A->loc, "%s() on %s array '%s' is not supported", name, dtype_name(p->dtype), p->name);
            return poison;
        }
        vt.dtype = p->dtype;
        if (!sema_check_broadcast(L->d, A->slot[2]->loc, &shape, &vt, &shape)) return poison;
        idx[n] = lw_to_ir_as(L, &v, p->dtype, A->loc);
        nargs = n + 1;
        p->written = true;
    }
    int64_t ext[TILE_MAX_RANK];
    for (int i = 0; i < shape.rank; i++) ext[i] = shape.shape[i];
    if (!sema_check_tile_shape(L->d, A->loc, shape.rank, ext)) return poison;
    for (int i = 0; i < nargs; i++) {
        if (i < n) idx[i] = lw_cast_to(L, idx[i], wide ? DT_I64 : DT_I32, A->loc);
        idx[i] = lw_broadcast_to(L, idx[i], &shape, A->loc);
    }
    Type rt = shape;
    rt.dtype = p->dtype;
    IrOp *o = lw_emit(L, op, A->loc, op == OP_GATHER ? &rt : NULL, nargs, idx);
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
    if (!lw_const_int(L, A->slot[1], "axis", &ax)) return poison;
    if (!sema_check_axis(L->d, A->slot[1]->loc, "num_tiles", ax, p->rank, &axis)) return poison;
    if (!lw_const_int_list(L, A->slot[2], "shape", shape, &n)) return poison;
    if (n != p->rank) {
        diag_error(L->d, A->slot[2]->loc, "num_tiles() on '%s' (rank %d) needs a shape of %d extents, got %d", p->name,
                   p->rank, p->rank, n);
        return poison;
    }
    if (!sema_check_tile_shape(L->d, A->slot[2]->loc, n, shape)) return poison;
    Val dim = vkind(V_DIM, arr);
    dim.axis = axis;
    return lw_binary(L, OP_CDIV, "cdiv", dim, vloose_int(shape[axis]), A->loc);
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
        if (!lw_need_scalar_like(L, &v, "print", e->loc)) { ok = false; continue; }
        args[n++] = lw_to_ir(L, &v, e->loc);
    }
    if (!ok) return poison;
    if (n != holes) {
        diag_error(L->d, call->loc, "print() format has %d '{}' but %d value%s given", holes, n, n == 1 ? " is" : "s are");
        return poison;
    }
    IrOp *o = lw_emit(L, OP_PRINT, call->loc, NULL, n, args);
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
bool lw_call_builtin(Lower *L, const char *name, Expr *call, Expr *recv, Val *out) {
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
    if (!lw_bind_args(L, name, loc, recv, call->args, b->params, count_params(b), b->nrequired, &A)) return true;
    Val x, y, z;
    switch (b->kind) {
    case B_GRID: {
        int64_t axis;
        if (!lw_const_int(L, A.slot[0], "axis", &axis)) return true;
        if (axis < 0 || axis > 2) {
            diag_error(L->d, A.slot[0]->loc, "%s() axis must be 0, 1 or 2, got %lld", name, (long long)axis);
            return true;
        }
        Type t = type_scalar(DT_I32);
        IrOp *o = lw_emit(L, b->op, loc, &t, 0, NULL);
        o->axis = (int)axis;
        *out = vvalue(o->result);
        return true;
    }
    case B_UNARY:
        x = lower_expr(L, A.slot[0]);
        *out = lw_unary(L, b->op, name, x, loc);
        return true;
    case B_BINARY:
        x = lower_expr(L, A.slot[0]);
        y = lower_expr(L, A.slot[1]);
        *out = lw_binary(L, b->op, name, x, y, loc);
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
        if (lw_get_dtype(L, A.slot[1], &dt)) *out = astype(L, x, dt, loc);
        return true;
    }
    case B_REDUCE: *out = reduce_op(L, b->op, &A); return true;
    case B_SCAN: *out = scan_op(L, b->op, &A); return true;
    case B_MMA: *out = mma_op(L, &A); return true;
    case B_MATMUL:
        x = lower_expr(L, A.slot[0]);
        y = lower_expr(L, A.slot[1]);
        *out = lw_matmul(L, x, y, loc);
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

