/* ast.h: the syntax tree the parser builds (dsl/parser.y) and the lowering walks.
 * Every node has a Loc.  Lists are singly linked through `next` (chibicc style).
 * All nodes live in the compilation's arena.  Prefix: ast_. */
#ifndef TILEC_AST_H
#define TILEC_AST_H

#include "base.h"

/* ---- expressions ------------------------------------------------------ */

typedef enum ExprKind {
    EX_INT,      /* integer literal: ival (decimal or 0x hex) */
    EX_FLOAT,    /* float literal: fval; text keeps the spelling */
    EX_BOOL,     /* true / false: ival = 0 or 1 */
    EX_STRING,   /* "...": sval (escapes \n \t \\ \" already decoded) */
    EX_NAME,     /* identifier: name */
    EX_DTYPE,    /* a dtype keyword used as a value: dtype (zeros((4,), f32)) */
    EX_UNARY,    /* op a: op is one of '-', '!', '~' */
    EX_BINARY,   /* a op b: op is a BinOp */
    EX_TUPLE,    /* (a, b, ...) or (a,): elems list, nelems */
    EX_CALL,     /* callee(args..., kw=..): name = callee; args list incl. keywords */
    EX_METHOD,   /* recv.name(args...): a = receiver; args list incl. keywords */
    EX_MEMBER,   /* a.name (x.shape, x.stride) */
    EX_INDEX,    /* a[b] (x.shape[0]) */
    EX_KWARG,    /* name=a, only inside an argument list */
} ExprKind;

typedef enum BinOp {
    BIN_ADD, BIN_SUB, BIN_MUL, BIN_DIV, BIN_MOD, BIN_MATMUL,
    BIN_LT, BIN_LE, BIN_GT, BIN_GE, BIN_EQ, BIN_NE,
    BIN_LAND, BIN_LOR,                 /* && || */
    BIN_AND, BIN_OR, BIN_XOR,          /* & | ^ */
    BIN_SHL, BIN_SHR,
    BIN_COUNT
} BinOp;

const char *binop_spelling(BinOp op);   /* "+", "&&", ... */

typedef struct Expr Expr;
struct Expr {
    ExprKind kind;
    Loc loc;
    Expr *next;          /* next element of a list (arguments, tuple elements) */
    int op;              /* EX_UNARY: '-', '!', '~'; EX_BINARY: BinOp */
    Expr *a, *b;         /* operands; EX_METHOD receiver in a; EX_KWARG value in a */
    Expr *args;          /* EX_CALL/EX_METHOD: positional then EX_KWARG nodes */
    Expr *elems;         /* EX_TUPLE elements */
    int nelems;          /* EX_TUPLE length; EX_CALL/EX_METHOD: length of args */
    const char *name;    /* EX_NAME, EX_CALL callee, EX_METHOD/EX_MEMBER name, EX_KWARG key */
    const char *sval;    /* EX_STRING */
    const char *text;    /* EX_INT/EX_FLOAT: the literal as written */
    int64_t ival;        /* EX_INT (as unsigned 64-bit wraps), EX_BOOL */
    double fval;         /* EX_FLOAT */
    DType dtype;         /* EX_DTYPE */
    int depth;           /* height of this subtree (1 for a leaf); the parser bounds it
                          * so every recursive walk of an Expr has a bounded depth */
};

/* ---- statements ------------------------------------------------------- */

typedef enum StmtKind {
    ST_LET,          /* let name = init;  or  let (n1, n2, ...) = init; */
    ST_VAR,          /* var name = init; */
    ST_ASSIGN,       /* name op= value: op is 0 for '=', else BIN_ADD/SUB/MUL/DIV */
    ST_EXPR,         /* expr; */
    ST_FOR,          /* for name in range(args) / static_range(args) { body } */
    ST_WHILE,        /* while cond { body } */
    ST_IF,           /* if cond { then } else els (els is ST_BLOCK, ST_IF or NULL) */
    ST_BREAK,
    ST_CONTINUE,
    ST_RETURN,       /* return; / return expr; (value may be NULL) */
    ST_BLOCK,        /* { body } */
    ST_STATIC_ASSERT,/* static_assert(cond, "message") -- message may be NULL */
} StmtKind;

/* A name in a binding list; `let (a, b) = ...` has two. */
typedef struct Name {
    const char *name;
    Loc loc;
    struct Name *next;
} Name;

typedef struct Stmt Stmt;
struct Stmt {
    StmtKind kind;
    Loc loc;
    Stmt *next;
    Name *names;         /* ST_LET (one or more; tuple_pattern says which form), ST_VAR, ST_FOR loop var */
    bool tuple_pattern;  /* ST_LET written as let (a, b) = ... */
    const char *name;    /* ST_ASSIGN target */
    int op;              /* ST_ASSIGN: 0 for '=', else BIN_ADD/BIN_SUB/BIN_MUL/BIN_DIV */
    bool compound;       /* ST_ASSIGN: true for += -= *= /= (then op is the BinOp; note BIN_ADD
                          * is 0 too, so test this flag, not op, to tell '=' from '+=') */
    Expr *expr;          /* init / value / cond / expression / return value */
    Expr *msg;           /* ST_STATIC_ASSERT message (EX_STRING) or NULL */
    bool is_static;      /* ST_FOR: static_range instead of range */
    Expr *range_args;    /* ST_FOR: 1 to 3 expressions, linked */
    int nrange_args;
    Stmt *body;          /* ST_FOR, ST_WHILE, ST_BLOCK, ST_IF then-branch: statement list */
    Stmt *els;           /* ST_IF else branch: ST_BLOCK or ST_IF, or NULL */
};

/* ---- declarations ----------------------------------------------------- */

typedef enum ParamKind {
    PARAM_ARRAY,     /* x: bf16[B, L, _, P] */
    PARAM_SCALAR,    /* n: i32 */
    PARAM_CONST,     /* const CHUNK: i32 [= default] */
} ParamKind;

typedef struct Param Param;
struct Param {
    ParamKind kind;
    Loc loc;
    Param *next;
    const char *name;
    DType dtype;
    /* The type was written as a name, not a dtype: for PARAM_CONST the word
     * `dtype` (a dtype constant: `const T: dtype`), else the name of such a
     * constant (`x: T[N]`); dtype is then DT_INVALID until a kernel is
     * specialised. */
    const char *type_name;
    int rank;                      /* PARAM_ARRAY */
    const char *dims[TILE_MAX_RANK];/* PARAM_ARRAY: extent names, NULL for `_` */
    Loc dim_locs[TILE_MAX_RANK];
    Expr *init;                    /* PARAM_CONST default, or NULL */
};

/* `NAME in (v1, v2, ...)` inside a tune block. */
typedef struct TuneAxis {
    const char *name;
    Loc loc;
    Expr *values;                  /* linked list */
    int nvalues;
    struct TuneAxis *next;
} TuneAxis;

typedef enum DeclKind {
    DECL_CONST,      /* const NAME = expr; */
    DECL_FN,         /* fn name(a, b) { body } */
    DECL_KERNEL,     /* kernel name(params) with (hints) { body } */
    DECL_TUNE,       /* tune name { axes } */
} DeclKind;

typedef struct Decl Decl;
struct Decl {
    DeclKind kind;
    Loc loc;
    Decl *next;
    const char *name;
    Expr *init;          /* DECL_CONST */
    Name *fn_params;     /* DECL_FN parameter names */
    int nfn_params;
    Param *params;       /* DECL_KERNEL */
    int nparams;
    Expr *hints;         /* DECL_KERNEL: EX_KWARG list from `with (...)`, or NULL */
    Stmt *body;          /* DECL_FN, DECL_KERNEL */
    TuneAxis *axes;      /* DECL_TUNE */
};

typedef struct Program {
    const char *file;
    Decl *decls;         /* in source order */
} Program;

/* ---- construction and printing (compiler/ast.c) ----------------------- */

Expr *ast_expr(Arena *a, ExprKind kind, Loc loc);
Stmt *ast_stmt(Arena *a, StmtKind kind, Loc loc);
Decl *ast_decl(Arena *a, DeclKind kind, Loc loc);
Param *ast_param(Arena *a, ParamKind kind, Loc loc);
Name *ast_name(Arena *a, const char *name, Loc loc);

/* Prints the AST as an indented S-expression-like text (tilec --emit=ast).
 * The format is pinned by golden tests: change it only with them. */
#include <stdio.h>
void ast_print(FILE *out, const Program *p);
/* One declaration in the same form (tilec --emit=ast --kernel NAME). */
void ast_print_decl(FILE *out, const Decl *d);

/* Parses `src` (named `file` in messages).  Syntax errors go to `diag`; the
 * returned Program holds what could be parsed (NULL only if nothing could).
 * Implemented in dsl/parser.y. */
Program *parse_program(Arena *a, Diag *diag, const char *file, const char *src);

#endif
