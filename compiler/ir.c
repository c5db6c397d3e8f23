/* ir.c: the tile IR's op table, builders, walker and text printer (ir.h).
 *
 * The printed form is what `tilec --emit=ir` shows and what golden tests pin,
 * so it is deterministic: values print as %N (their id), locals as $name
 * ($name.K when two locals share a name), array parameters as @name. */
#include "ir.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const OpInfo ir_op_info[OP_COUNT] = {
#define OP(id, mnem, builtin, rule, nin, meaning) {mnem, builtin, rule, nin, meaning},
#include "ops.def"
#undef OP
};

bool ir_op_is_elementwise(OpId op) {
    OpRule r = ir_op_info[op].rule;
    return r >= RULE_UNARY_NUM && r <= RULE_WHERE;
}

const char *padding_name(Padding p) {
    switch (p) {
    case PAD_ZERO: return "zero";
    case PAD_NAN: return "nan";
    case PAD_POS_INF: return "pos_inf";
    case PAD_NEG_INF: return "neg_inf";
    }
    return "?";
}

/* ---- building --------------------------------------------------------- */

IrFunc *ir_func_new(Arena *a, const char *name, Loc loc) {
    IrFunc *f = ARENA_NEW(a, IrFunc);
    f->arena = a;
    f->name = name;
    f->loc = loc;
    f->body = ir_block_new(a);
    return f;
}

IrBlock *ir_block_new(Arena *a) { return ARENA_NEW(a, IrBlock); }

static void block_push(Arena *a, IrBlock *blk, IrOp *op) {
    if (blk->nops == blk->cap) {
        int cap = blk->cap ? blk->cap * 2 : 8;
        IrOp **ops = ARENA_ARRAY(a, IrOp *, cap);
        if (blk->nops) memcpy(ops, blk->ops, sizeof(IrOp *) * (size_t)blk->nops);
        blk->ops = ops;
        blk->cap = cap;
    }
    blk->ops[blk->nops++] = op;
}

int ir_new_value(IrFunc *f, Type type, IrOp *def) {
    if (f->nvalues == f->cap_values) {
        int cap = f->cap_values ? f->cap_values * 2 : 64;
        IrValue *v = ARENA_ARRAY(f->arena, IrValue, cap);
        if (f->nvalues) memcpy(v, f->values, sizeof(IrValue) * (size_t)f->nvalues);
        f->values = v;
        f->cap_values = cap;
    }
    IrValue *v = &f->values[f->nvalues];
    v->type = type;
    v->def = def;
    v->name = NULL;
    return f->nvalues++;
}

int ir_new_local(IrFunc *f, Type type, const char *name, Loc loc) {
    if (f->nlocals == f->cap_locals) {
        int cap = f->cap_locals ? f->cap_locals * 2 : 8;
        IrLocal *l = ARENA_ARRAY(f->arena, IrLocal, cap);
        if (f->nlocals) memcpy(l, f->locals, sizeof(IrLocal) * (size_t)f->nlocals);
        f->locals = l;
        f->cap_locals = cap;
    }
    IrLocal *l = &f->locals[f->nlocals];
    l->type = type;
    l->name = name;
    l->loc = loc;
    return f->nlocals++;
}

IrOp *ir_append(IrFunc *f, IrBlock *blk, OpId op, Loc loc, const Type *result_type,
                int nargs, const int *args) {
    IrOp *o = ARENA_NEW(f->arena, IrOp);
    o->op = op;
    o->loc = loc;
    o->result = -1;
    o->nargs = nargs;
    if (nargs > 0) {
        o->args = ARENA_ARRAY(f->arena, int, nargs);
        memcpy(o->args, args, sizeof(int) * (size_t)nargs);
    }
    if (op == OP_FOR || op == OP_LOOP || op == OP_IF) o->body = ir_block_new(f->arena);
    if (op == OP_IF) o->else_body = ir_block_new(f->arena);
    if (result_type) o->result = ir_new_value(f, *result_type, o);
    block_push(f->arena, blk, o);
    return o;
}

void ir_block_remove(IrBlock *blk, int i) {
    if (i < 0 || i >= blk->nops) return;
    memmove(&blk->ops[i], &blk->ops[i + 1], sizeof(IrOp *) * (size_t)(blk->nops - i - 1));
    blk->nops--;
}

/* ---- copying ---------------------------------------------------------- */

static IrBlock *clone_block(IrFunc *to, const IrBlock *blk);

static IrOp *clone_op(IrFunc *to, const IrOp *o) {
    IrOp *c = ARENA_NEW(to->arena, IrOp);
    *c = *o;
    if (o->nargs > 0) {
        c->args = ARENA_ARRAY(to->arena, int, o->nargs);
        memcpy(c->args, o->args, sizeof(int) * (size_t)o->nargs);
    }
    if (c->result >= 0) to->values[c->result].def = c;
    c->body = o->body ? clone_block(to, o->body) : NULL;
    c->else_body = o->else_body ? clone_block(to, o->else_body) : NULL;
    return c;
}

static IrBlock *clone_block(IrFunc *to, const IrBlock *blk) {
    IrBlock *c = ir_block_new(to->arena);
    for (int i = 0; i < blk->nops; i++) block_push(to->arena, c, clone_op(to, blk->ops[i]));
    return c;
}

IrFunc *ir_clone(Arena *a, const IrFunc *f) {
    IrFunc *c = ARENA_NEW(a, IrFunc);
    *c = *f;
    c->arena = a;
    c->values = ARENA_ARRAY(a, IrValue, f->nvalues + 1);
    c->cap_values = f->nvalues + 1;
    if (f->nvalues) memcpy(c->values, f->values, sizeof(IrValue) * (size_t)f->nvalues);
    c->locals = ARENA_ARRAY(a, IrLocal, f->nlocals + 1);
    c->cap_locals = f->nlocals + 1;
    if (f->nlocals) memcpy(c->locals, f->locals, sizeof(IrLocal) * (size_t)f->nlocals);
    c->body = clone_block(c, f->body);   /* (the defs of values the body defines now point into the copy) */
    return c;
}

void ir_block_insert(Arena *a, IrBlock *blk, int i, IrOp *op) {
    if (i < 0 || i > blk->nops) i = blk->nops;
    block_push(a, blk, op);
    memmove(&blk->ops[i + 1], &blk->ops[i], sizeof(IrOp *) * (size_t)(blk->nops - 1 - i));
    blk->ops[i] = op;
}

/* ---- walking ---------------------------------------------------------- */

void ir_walk(IrFunc *f, IrBlock *blk, IrVisit visit, void *ctx) {
    if (!blk) return;
    for (int i = 0; i < blk->nops; i++) {
        IrOp *op = blk->ops[i];
        visit(f, op, ctx);
        ir_walk(f, op->body, visit, ctx);
        ir_walk(f, op->else_body, visit, ctx);
    }
}

static void count_block_uses(const IrBlock *blk, int *count, const IrOp **reader) {
    for (int i = 0; blk && i < blk->nops; i++) {
        const IrOp *o = blk->ops[i];
        for (int a = 0; a < o->nargs; a++)
            if (o->args[a] >= 0) {
                count[o->args[a]]++;
                if (reader) reader[o->args[a]] = o;
            }
        count_block_uses(o->body, count, reader);
        count_block_uses(o->else_body, count, reader);
    }
}

void ir_count_uses(const IrFunc *f, int *count, const IrOp **reader) {
    for (int v = 0; v <= f->nvalues; v++) {
        count[v] = 0;
        if (reader) reader[v] = NULL;
    }
    count_block_uses(f->body, count, reader);
}

bool ir_const_int(const IrFunc *f, int v, int64_t *out) {
    const IrOp *d = v >= 0 && v < f->nvalues ? f->values[v].def : NULL;
    if (!d || d->op != OP_CONST || !dtype_is_int(f->values[v].type.dtype)) return false;
    *out = d->lit.i;
    return true;
}

bool ir_op_has_side_effects(const IrOp *op) {
    switch (op->op) {
    case OP_STORE: case OP_SCATTER:
    case OP_ATOMIC_ADD: case OP_ATOMIC_MAX: case OP_ATOMIC_MIN:
    case OP_PRINT: case OP_FOR: case OP_LOOP: case OP_IF:
    case OP_BREAK: case OP_CONTINUE: case OP_RETURN: case OP_LOCAL_SET:
        return true;
    default:
        return false;
    }
}

IrMemAccess ir_op_mem_access(const IrOp *op) {
    switch (op->op) {
    case OP_LOAD: case OP_GATHER: return IR_MEM_READ;
    case OP_STORE: case OP_SCATTER: return IR_MEM_WRITE;
    case OP_ATOMIC_ADD: case OP_ATOMIC_MAX: case OP_ATOMIC_MIN: return IR_MEM_ATOMIC;
    default: return IR_MEM_NONE;
    }
}

/* ---- printing --------------------------------------------------------- */

/* Shortest decimal that reads back as the same double, so printing is exact
 * and stable ("1.5", not "1.50000000000000000"). */
static void format_double(double x, char *buf, size_t n) {
    if (isnan(x)) { snprintf(buf, n, "nan"); return; }
    if (isinf(x)) { snprintf(buf, n, x < 0 ? "-inf" : "inf"); return; }
    if (x == trunc(x) && fabs(x) < 1e16) {   /* integral: "20.0", not "2e+01" */
        snprintf(buf, n, "%.1f", x);
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, x);
        if (strtod(buf, NULL) == x) break;
    }
    /* Keep floats recognisable as floats: "2" -> "2.0". */
    if (!strpbrk(buf, ".eEn")) {
        size_t k = strlen(buf);
        if (k + 2 < n) memcpy(buf + k, ".0", 3);
    }
}

static void print_scalar_lit(FILE *out, DType dt, const IrOp *op) {
    char buf[64];
    if (dt == DT_BOOL) fputs(op->lit.i ? "true" : "false", out);
    else if (dtype_is_float(dt)) { format_double(op->lit.f, buf, sizeof buf); fputs(buf, out); }
    else if (dtype_is_unsigned(dt)) fprintf(out, "%llu", (unsigned long long)op->lit.u);
    else fprintf(out, "%lld", (long long)op->lit.i);
}

static void print_type(FILE *out, const Type *t) {
    char buf[200];
    fputs(type_str(t, buf, sizeof buf), out);
}

static const char *array_name(const IrFunc *f, int array) {
    return (array >= 0 && array < f->nparams) ? f->params[array].name : "?";
}

/* $name, or $name.K when an earlier local has the same name (shadowed vars). */
static void print_local(FILE *out, const IrFunc *f, int local) {
    if (local < 0 || local >= f->nlocals) { fputs("$?", out); return; }
    const char *name = f->locals[local].name ? f->locals[local].name : "local";
    bool clash = false;
    for (int i = 0; i < f->nlocals; i++)
        if (i != local && f->locals[i].name && strcmp(f->locals[i].name, name) == 0) clash = true;
    if (clash) fprintf(out, "$%s.%d", name, local);
    else fprintf(out, "$%s", name);
}

static void print_ints(FILE *out, const char *key, const IrOp *op) {
    fprintf(out, " %s=(", key);
    for (int i = 0; i < op->nints; i++) fprintf(out, "%s%d", i ? "," : "", op->ints[i]);
    fputs(")", out);
}

static void print_args(FILE *out, const IrOp *op, int from, int to) {
    for (int i = from; i < to; i++) fprintf(out, "%s%%%d", i > from ? ", " : "", op->args[i]);
}

static void print_block(FILE *out, const IrFunc *f, const IrBlock *blk, int depth);

static void indent(FILE *out, int depth) {
    for (int i = 0; i < depth; i++) fputs("  ", out);
}

static void print_op(FILE *out, const IrFunc *f, const IrOp *op, int depth) {
    indent(out, depth);
    if (op->result >= 0) fprintf(out, "%%%d = ", op->result);
    fputs(ir_op_info[op->op].mnemonic, out);
    bool is_memory = false;
    switch (op->op) {
    case OP_CONST:
        fputc(' ', out);
        print_scalar_lit(out, op->result >= 0 ? f->values[op->result].type.dtype : DT_I32, op);
        break;
    case OP_PARAM:
        fprintf(out, " %%%s", (op->index >= 0 && op->index < f->nparams) ? f->params[op->index].name : "?");
        break;
    case OP_ARRAY_DIM: case OP_ARRAY_STRIDE:
        fprintf(out, " @%s %d", array_name(f, op->array), op->axis);
        break;
    case OP_BID: case OP_NUM_BLOCKS:
        fprintf(out, " %d", op->axis);
        break;
    case OP_LOAD: case OP_GATHER:
        fprintf(out, " @%s[", array_name(f, op->array));
        print_args(out, op, 0, op->nargs);
        fputs("]", out);
        fprintf(out, " padding=%s", padding_name((Padding)op->flag));
        is_memory = true;
        break;
    case OP_STORE: case OP_SCATTER: case OP_ATOMIC_ADD: case OP_ATOMIC_MAX: case OP_ATOMIC_MIN:
        fprintf(out, " @%s[", array_name(f, op->array));
        print_args(out, op, 0, op->nargs - 1);
        fputs("]", out);
        if (op->nargs > 0) fprintf(out, ", %%%d", op->args[op->nargs - 1]);
        is_memory = true;
        break;
    case OP_LOCAL_GET:
        fputc(' ', out);
        print_local(out, f, op->local);
        break;
    case OP_LOCAL_SET:
        fputc(' ', out);
        print_local(out, f, op->local);
        if (op->nargs > 0) fprintf(out, ", %%%d", op->args[0]);
        break;
    case OP_PRINT:
        fputs(" \"", out);
        for (const char *s = op->str ? op->str : ""; *s; s++) {
            if (*s == '\n') fputs("\\n", out);
            else if (*s == '\t') fputs("\\t", out);
            else if (*s == '"' || *s == '\\') { fputc('\\', out); fputc(*s, out); }
            else fputc(*s, out);
        }
        fputs("\"", out);
        if (op->nargs) { fputs(", ", out); print_args(out, op, 0, op->nargs); }
        break;
    default:
        if (op->nargs) { fputc(' ', out); print_args(out, op, 0, op->nargs); }
        break;
    }
    /* attributes */
    switch (op->op) {
    case OP_REDUCE_SUM: case OP_REDUCE_MAX: case OP_REDUCE_MIN: case OP_REDUCE_PROD:
    case OP_ARGMAX: case OP_ARGMIN: case OP_CAT:
        fprintf(out, " axis=%d", op->axis);
        break;
    case OP_CUMSUM: case OP_CUMPROD:
        fprintf(out, " axis=%d", op->axis);
        if (op->flag) fputs(" reverse", out);
        break;
    case OP_PERMUTE: print_ints(out, "axes", op); break;
    case OP_EXTRACT: print_ints(out, "index", op); break;
    default: break;
    }
    if (is_memory) {
        if (op->nints > 0) print_ints(out, "order", op);
        if (op->latency > 0) fprintf(out, " latency=%d", op->latency);
    }
    if (op->result >= 0) {
        fputs(" : ", out);
        print_type(out, &f->values[op->result].type);
    }
    if (op->op == OP_FOR || op->op == OP_LOOP || op->op == OP_IF) {
        fputs(" {\n", out);
        print_block(out, f, op->body, depth + 1);
        indent(out, depth);
        fputs("}", out);
        if (op->op == OP_IF && op->else_body && op->else_body->nops > 0) {
            fputs(" else {\n", out);
            print_block(out, f, op->else_body, depth + 1);
            indent(out, depth);
            fputs("}", out);
        }
    }
    fputc('\n', out);
}

static void print_block(FILE *out, const IrFunc *f, const IrBlock *blk, int depth) {
    if (!blk) return;
    for (int i = 0; i < blk->nops; i++) print_op(out, f, blk->ops[i], depth);
}

void ir_print(FILE *out, const IrFunc *f) {
    if (f->nconsts > 0) {
        fputs("// constants:", out);
        for (int i = 0; i < f->nconsts; i++) {
            const IrConst *c = &f->consts[i];
            fprintf(out, " %s=", c->name);
            if (c->is_dtype) {
                fputs(dtype_name(c->type.dtype), out);
            } else if (dtype_is_float(c->type.dtype)) {
                char buf[64];
                format_double(c->v.f, buf, sizeof buf);
                fputs(buf, out);
            } else if (c->type.dtype == DT_BOOL) {
                fputs(c->v.i ? "true" : "false", out);
            } else {
                fprintf(out, "%lld", (long long)c->v.i);
            }
        }
        fputc('\n', out);
    }
    fprintf(out, "kernel %s(", f->name);
    for (int i = 0; i < f->nparams; i++) {
        const IrParam *p = &f->params[i];
        fprintf(out, "%s%%%s: %s", i ? ", " : "", p->name, dtype_name(p->dtype));
        if (p->kind == IRP_ARRAY) {
            fputc('[', out);
            for (int d = 0; d < p->rank; d++)
                fprintf(out, "%s%s", d ? ", " : "", p->dims[d] ? p->dims[d] : "_");
            fputc(']', out);
        }
    }
    fputc(')', out);
    if (f->num_warps > 0) fprintf(out, " num_warps=%d", f->num_warps);
    if (f->occupancy > 0) fprintf(out, " occupancy=%d", f->occupancy);
    fputs(" {\n", out);
    print_block(out, f, f->body, 1);
    fputs("}\n", out);
}
