/* ast.c: AST constructors and the printer behind `tilec --emit=ast`.
 *
 * The printed form is an S-expression per declaration, statements one per
 * line indented two spaces per level, expressions on one line:
 *   (kernel chunk_cumsum
 *     (param array a f32 [H])
 *     (param const CHUNK i32 = (int 64))
 *     (hints (kw num_warps (int 4)))
 *     (body
 *       (let (chunk ht b) (tuple (call bid (int 0)) ...))
 *       (expr (call store (name out) (kw index (tuple ...)) (kw tile (name d))))))
 * Golden tests pin it: change it only together with them. */
#include "ast.h"

#include <inttypes.h>
#include <string.h>

/* ---- constructors ------------------------------------------------------- */

Expr *ast_expr(Arena *a, ExprKind kind, Loc loc) {
    Expr *e = ARENA_NEW(a, Expr);
    e->kind = kind;
    e->loc = loc;
    e->depth = 1;
    e->dtype = DT_INVALID;
    return e;
}

Stmt *ast_stmt(Arena *a, StmtKind kind, Loc loc) {
    Stmt *s = ARENA_NEW(a, Stmt);
    s->kind = kind;
    s->loc = loc;
    return s;
}

Decl *ast_decl(Arena *a, DeclKind kind, Loc loc) {
    Decl *d = ARENA_NEW(a, Decl);
    d->kind = kind;
    d->loc = loc;
    return d;
}

Param *ast_param(Arena *a, ParamKind kind, Loc loc) {
    Param *p = ARENA_NEW(a, Param);
    p->kind = kind;
    p->loc = loc;
    p->dtype = DT_INVALID;
    return p;
}

Name *ast_name(Arena *a, const char *name, Loc loc) {
    Name *n = ARENA_NEW(a, Name);
    n->name = name;
    n->loc = loc;
    return n;
}

const char *binop_spelling(BinOp op) {
    static const char *const spelling[BIN_COUNT] = {
        [BIN_ADD] = "+", [BIN_SUB] = "-", [BIN_MUL] = "*", [BIN_DIV] = "/",
        [BIN_MOD] = "%", [BIN_MATMUL] = "@",
        [BIN_LT] = "<", [BIN_LE] = "<=", [BIN_GT] = ">", [BIN_GE] = ">=",
        [BIN_EQ] = "==", [BIN_NE] = "!=",
        [BIN_LAND] = "&&", [BIN_LOR] = "||",
        [BIN_AND] = "&", [BIN_OR] = "|", [BIN_XOR] = "^",
        [BIN_SHL] = "<<", [BIN_SHR] = ">>",
    };
    return (op >= 0 && op < BIN_COUNT) ? spelling[op] : "?";
}

/* ---- printer ------------------------------------------------------------ */

static void print_expr(FILE *out, const Expr *e);
static void print_stmts(FILE *out, const Stmt *s, int indent);

static void print_indent(FILE *out, int indent) {
    for (int i = 0; i < indent; i++) fputs("  ", out);
}

/* A string literal as written in the source (escapes re-encoded). */
static void print_string(FILE *out, const char *s) {
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '\n': fputs("\\n", out); break;
        case '\t': fputs("\\t", out); break;
        case '\\': fputs("\\\\", out); break;
        case '"': fputs("\\\"", out); break;
        default:
            if (*p < 0x20 || *p >= 0x7f) fprintf(out, "\\x%02x", *p);
            else fputc(*p, out);
        }
    }
    fputc('"', out);
}

static void print_list(FILE *out, const Expr *e) {
    for (; e; e = e->next) {
        fputc(' ', out);
        print_expr(out, e);
    }
}

static void print_expr(FILE *out, const Expr *e) {
    if (!e) {
        fputs("(null)", out);
        return;
    }
    switch (e->kind) {
    case EX_INT: fprintf(out, "(int %" PRIu64 ")", (uint64_t)e->ival); break;
    case EX_FLOAT: fprintf(out, "(float %s)", e->text ? e->text : "?"); break;
    case EX_BOOL: fputs(e->ival ? "(bool true)" : "(bool false)", out); break;
    case EX_STRING:
        fputs("(string ", out);
        print_string(out, e->sval);
        fputc(')', out);
        break;
    case EX_NAME: fprintf(out, "(name %s)", e->name); break;
    case EX_DTYPE: fprintf(out, "(dtype %s)", dtype_name(e->dtype)); break;
    case EX_UNARY:
        fprintf(out, "(%c ", e->op);
        print_expr(out, e->a);
        fputc(')', out);
        break;
    case EX_BINARY:
        fprintf(out, "(%s ", binop_spelling((BinOp)e->op));
        print_expr(out, e->a);
        fputc(' ', out);
        print_expr(out, e->b);
        fputc(')', out);
        break;
    case EX_TUPLE:
        fputs("(tuple", out);
        print_list(out, e->elems);
        fputc(')', out);
        break;
    case EX_CALL:
        fprintf(out, "(call %s", e->name);
        print_list(out, e->args);
        fputc(')', out);
        break;
    case EX_METHOD:
        fprintf(out, "(method %s ", e->name);
        print_expr(out, e->a);
        print_list(out, e->args);
        fputc(')', out);
        break;
    case EX_MEMBER:
        fprintf(out, "(member %s ", e->name);
        print_expr(out, e->a);
        fputc(')', out);
        break;
    case EX_INDEX:
        fputs("(index ", out);
        print_expr(out, e->a);
        fputc(' ', out);
        print_expr(out, e->b);
        fputc(')', out);
        break;
    case EX_KWARG:
        fprintf(out, "(kw %s ", e->name);
        print_expr(out, e->a);
        fputc(')', out);
        break;
    }
}

static void print_names(FILE *out, const Name *n) {
    for (bool first = true; n; n = n->next, first = false)
        fprintf(out, "%s%s", first ? "" : " ", n->name);
}

/* "(body" then the statements one level deeper, then ")" -- or "(body)". */
static void print_body(FILE *out, const char *tag, const Stmt *body, int indent) {
    print_indent(out, indent);
    fprintf(out, "(%s", tag);
    if (body) {
        fputc('\n', out);
        print_stmts(out, body, indent + 1);
    }
    fputc(')', out);
}

static const char *assign_spelling(const Stmt *s) {
    if (!s->compound) return "=";
    switch (s->op) {
    case BIN_ADD: return "+=";
    case BIN_SUB: return "-=";
    case BIN_MUL: return "*=";
    case BIN_DIV: return "/=";
    default: return "=";
    }
}

static void print_stmt(FILE *out, const Stmt *s, int indent) {
    print_indent(out, indent);
    switch (s->kind) {
    case ST_LET:
        fputs("(let ", out);
        if (s->tuple_pattern) fputc('(', out);
        print_names(out, s->names);
        if (s->tuple_pattern) fputc(')', out);
        fputc(' ', out);
        print_expr(out, s->expr);
        fputc(')', out);
        break;
    case ST_VAR:
        fputs("(var ", out);
        print_names(out, s->names);
        fputc(' ', out);
        print_expr(out, s->expr);
        fputc(')', out);
        break;
    case ST_ASSIGN:
        fprintf(out, "(assign %s %s ", s->name, assign_spelling(s));
        print_expr(out, s->expr);
        fputc(')', out);
        break;
    case ST_EXPR:
        fputs("(expr ", out);
        print_expr(out, s->expr);
        fputc(')', out);
        break;
    case ST_FOR:
        fputs("(for ", out);
        print_names(out, s->names);
        fprintf(out, " (%s", s->is_static ? "static_range" : "range");
        print_list(out, s->range_args);
        fputs(")\n", out);
        print_body(out, "body", s->body, indent + 1);
        fputc(')', out);
        break;
    case ST_WHILE:
        fputs("(while ", out);
        print_expr(out, s->expr);
        fputc('\n', out);
        print_body(out, "body", s->body, indent + 1);
        fputc(')', out);
        break;
    case ST_IF:
        fputs("(if ", out);
        print_expr(out, s->expr);
        fputc('\n', out);
        print_body(out, "then", s->body, indent + 1);
        if (s->els) {
            fputc('\n', out);
            if (s->els->kind == ST_BLOCK) {
                print_body(out, "else", s->els->body, indent + 1);
            } else {
                print_indent(out, indent + 1);
                fputs("(else\n", out);
                print_stmt(out, s->els, indent + 2);
                fputc(')', out);
            }
        }
        fputc(')', out);
        break;
    case ST_BREAK: fputs("(break)", out); break;
    case ST_CONTINUE: fputs("(continue)", out); break;
    case ST_RETURN:
        fputs("(return", out);
        if (s->expr) {
            fputc(' ', out);
            print_expr(out, s->expr);
        }
        fputc(')', out);
        break;
    case ST_BLOCK:
        fputs("(block", out);
        if (s->body) {
            fputc('\n', out);
            print_stmts(out, s->body, indent + 1);
        }
        fputc(')', out);
        break;
    case ST_STATIC_ASSERT:
        fputs("(static_assert ", out);
        print_expr(out, s->expr);
        if (s->msg) {
            fputc(' ', out);
            print_expr(out, s->msg);
        }
        fputc(')', out);
        break;
    }
}

/* Statements one per line; the last one leaves its line open for the ')'. */
static void print_stmts(FILE *out, const Stmt *s, int indent) {
    for (; s; s = s->next) {
        print_stmt(out, s, indent);
        if (s->next) fputc('\n', out);
    }
}

static void print_param(FILE *out, const Param *p) {
    const char *type = p->type_name ? p->type_name : dtype_name(p->dtype);
    switch (p->kind) {
    case PARAM_ARRAY:
        fprintf(out, "(param array %s %s [", p->name, type);
        for (int i = 0; i < p->rank; i++)
            fprintf(out, "%s%s", i ? ", " : "", p->dims[i] ? p->dims[i] : "_");
        fputs("])", out);
        break;
    case PARAM_SCALAR:
        fprintf(out, "(param scalar %s %s)", p->name, type);
        break;
    case PARAM_CONST:
        fprintf(out, "(param const %s %s", p->name, type);
        if (p->init) {
            fputs(" = ", out);
            print_expr(out, p->init);
        }
        fputc(')', out);
        break;
    }
}

static void print_decl(FILE *out, const Decl *d) {
    switch (d->kind) {
    case DECL_CONST:
        fprintf(out, "(const %s ", d->name);
        print_expr(out, d->init);
        fputs(")\n", out);
        break;
    case DECL_FN:
        fprintf(out, "(fn %s (", d->name);
        print_names(out, d->fn_params);
        fputs(")\n", out);
        print_body(out, "body", d->body, 1);
        fputs(")\n", out);
        break;
    case DECL_KERNEL:
        fprintf(out, "(kernel %s\n", d->name);
        for (const Param *p = d->params; p; p = p->next) {
            print_indent(out, 1);
            print_param(out, p);
            fputc('\n', out);
        }
        if (d->hints) {
            print_indent(out, 1);
            fputs("(hints", out);
            print_list(out, d->hints);
            fputs(")\n", out);
        }
        print_body(out, "body", d->body, 1);
        fputs(")\n", out);
        break;
    case DECL_TUNE:
        fprintf(out, "(tune %s", d->name);
        for (const TuneAxis *ax = d->axes; ax; ax = ax->next) {
            fputc('\n', out);
            print_indent(out, 1);
            fprintf(out, "(axis %s", ax->name);
            print_list(out, ax->values);
            fputc(')', out);
        }
        fputs(")\n", out);
        break;
    }
}

void ast_print_decl(FILE *out, const Decl *d) {
    if (d) print_decl(out, d);
}

void ast_print(FILE *out, const Program *p) {
    if (!p) return;
    for (const Decl *d = p->decls; d; d = d->next) print_decl(out, d);
}
