/* parser.y: the grammar of the Tile language (spec sections 2-8) -> AST.
 *
 * A pure bison parser over the reentrant scanner of lexer.l.  Semantic values
 * live in the compilation's arena (no destructors).  Choices, also written
 * down in dsl/README.md:
 *   - binary operators get their precedence from the %left table below
 *     (lowest first, as in section 6 of the spec); unary - ! ~ bind tighter
 *     than every binary operator, postfix (call, .name, .method(), [i])
 *     tighter still.
 *   - locations: literals, names, calls, tuples, statements at their first
 *     token; binary operators at the operator, unary ones at the operator
 *     (their first token); .name / .method() at the name; [i] at the '[';
 *     kernels, fns, constants, tune blocks, parameters and tune axes at their
 *     name (the thing their errors talk about).
 *   - `static_assert` is a keyword; `range` and `static_range` are ordinary
 *     identifiers that `for` checks for.
 *   - error recovery: a statement skips to its ';' or to the '}' closing its
 *     block, a declaration to ';' or '}', a parameter list to its ')', so one
 *     run reports several errors.
 *   - nesting is bounded (brackets PARSE_MAX_NESTING, expression height
 *     PARSE_MAX_EXPR_DEPTH, parser stack YYMAXDEPTH) so every later recursive
 *     walk of the AST has a bounded depth. */

%define api.pure full
%locations
%define parse.error custom
%define parse.lac full
%expect 0

%lex-param {yyscan_t scanner}
%parse-param {yyscan_t scanner} {ParseCtx *ctx}

%code requires {
#include "ast.h"

#ifndef YY_TYPEDEF_YY_SCANNER_T
#define YY_TYPEDEF_YY_SCANNER_T
typedef void *yyscan_t;
#endif

/* Most brackets ( [ { open at once. */
#define PARSE_MAX_NESTING 200
/* Greatest height of one expression tree (a + a + ... counts one per +). */
#define PARSE_MAX_EXPR_DEPTH 256

/* State shared by the scanner and the parser for one parse_program call. */
typedef struct ParseCtx {
    Arena *arena;
    Diag *diag;
    const char *file;
    Program *prog;
    Decl **decl_tail;          /* where the next declaration is linked */
    int line, col;             /* scanner position of the next byte */
    int tok_end_line, tok_end_col;     /* just past the last token returned */
    int prev_end_line, prev_end_col;   /* just past the token before it */
    const char *tok_text;      /* the last token returned (for messages) */
    int tok_len;
    int bracket_depth;
    char brackets[PARSE_MAX_NESTING];  /* the open ( [ { in order, for "missing ')'" */
    char closed_bracket;       /* opener matched by the last token, if it was a closer */
    int echo_line_first, echo_line;    /* lines where a syntax error echoes a lexical one */
    bool lex_stopped;          /* the scanner gave up: no further syntax errors */
    bool depth_reported;       /* "nested too deeply" said once per file */
} ParseCtx;

/* Lists built left-recursively with O(1) append. */
typedef struct ExprList { Expr *head, *tail; int n; bool has_kw; } ExprList;
typedef struct StmtList { Stmt *head, *tail; } StmtList;
typedef struct NameList { Name *head, *tail; int n; } NameList;
typedef struct ParamList { Param *head, *tail; int n; } ParamList;
typedef struct AxisList { TuneAxis *head, *tail; } AxisList;
}

%union {
    const char *str;
    DType dtype;
    int op;
    Expr *expr;
    Stmt *stmt;
    Decl *decl;
    Param *param;
    TuneAxis *axis;
    ExprList elist;
    StmtList slist;
    NameList nlist;
    ParamList plist;
    AxisList alist;
}

%code {
#include <stdio.h>
#include <string.h>
#include "lexer.h"

/* The parser's stack grows on the heap up to this many entries; beyond it
 * bison reports "memory exhausted", which yyerror words as nesting. */
#define YYMAXDEPTH 2000

static void yyerror(YYLTYPE *loc, yyscan_t scanner, ParseCtx *ctx, const char *msg);

static Loc loc_at(const ParseCtx *ctx, YYLTYPE l) {
    Loc loc = {ctx->file, l.first_line, l.first_column};
    return loc;
}
#define LOC(l) loc_at(ctx, (l))

static Expr *bound_depth(ParseCtx *ctx, Expr *e);
static Expr *mk_unary(ParseCtx *ctx, Loc loc, int op, Expr *a);
static Expr *mk_binary(ParseCtx *ctx, Loc loc, BinOp op, Expr *a, Expr *b);
static Expr *mk_list_node(ParseCtx *ctx, ExprKind kind, Loc loc, ExprList l, Expr *recv);
static ExprList list_one(Expr *e);
static ExprList list_append(ExprList l, Expr *e);
static ExprList args_append(ParseCtx *ctx, ExprList l, Expr *e);
static StmtList stmts_append(StmtList l, Stmt *s);
static NameList names_append(NameList l, Name *n);
static void add_decl(ParseCtx *ctx, Decl *d);
static Stmt *mk_for(ParseCtx *ctx, Loc loc, Name *var, Expr *range, Stmt *body);
static Stmt *mk_static_assert(ParseCtx *ctx, Loc loc, ExprList args);
static Param *mk_array_param(ParseCtx *ctx, Loc loc, const char *name, DType dt, NameList dims);
static Param *mk_dtype_const(ParseCtx *ctx, Loc loc, const char *name, const char *type, Loc type_loc, Expr *init);
static Expr *check_hints(ParseCtx *ctx, ExprList hints);
}

%token <str> IDENT "identifier"
%token <expr> INT "integer literal" FLOAT "float literal" STRING "string literal"
%token <expr> KW_TRUE "true" KW_FALSE "false"
%token <dtype> DTYPE "dtype"
%token KERNEL "kernel" FN "fn" CONST "const" LET "let" VAR "var" FOR "for" IN "in"
%token IF "if" ELSE "else" WHILE "while" BREAK "break" CONTINUE "continue"
%token RETURN "return" WITH "with" TUNE "tune" STATIC_ASSERT "static_assert"
%token OROR "||" ANDAND "&&" EQ "==" NE "!=" LE "<=" GE ">=" SHL "<<" SHR ">>"
%token ADD_ASSIGN "+=" SUB_ASSIGN "-=" MUL_ASSIGN "*=" DIV_ASSIGN "/="

/* Section 6, lowest first. */
%left OROR
%left ANDAND
%left '|'
%left '^'
%left '&'
%left EQ NE
%left '<' LE '>' GE
%left SHL SHR
%left '+' '-'
%left '*' '/' '%'
%left '@'
%precedence UNARY

%type <decl> decl
%type <nlist> fn_params names dims
%type <plist> params param_list
%type <param> param
%type <expr> hints expr postfix primary arg
%type <elist> args arg_list exprs
%type <alist> tune_axes
%type <axis> tune_axis
%type <slist> stmts
%type <stmt> block stmt if_stmt
%type <op> assign_op
%type <str> dim

%%

program:
    %empty
  | program decl            { if ($2) add_decl(ctx, $2); }
  ;

decl:
    CONST IDENT '=' expr ';' {
        $$ = ast_decl(ctx->arena, DECL_CONST, LOC(@2));
        $$->name = $2;
        $$->init = $4;
    }
  | FN IDENT '(' fn_params ')' block {
        $$ = ast_decl(ctx->arena, DECL_FN, LOC(@2));
        $$->name = $2;
        $$->fn_params = $4.head;
        $$->nfn_params = $4.n;
        $$->body = $6->body;
    }
  | FN IDENT '(' error ')' block {
        $$ = ast_decl(ctx->arena, DECL_FN, LOC(@2));
        $$->name = $2;
        $$->body = $6->body;
    }
  | KERNEL IDENT '(' params ')' hints block {
        $$ = ast_decl(ctx->arena, DECL_KERNEL, LOC(@2));
        $$->name = $2;
        $$->params = $4.head;
        $$->nparams = $4.n;
        $$->hints = $6;
        $$->body = $7->body;
    }
  | KERNEL IDENT '(' error ')' hints block {
        $$ = ast_decl(ctx->arena, DECL_KERNEL, LOC(@2));
        $$->name = $2;
        $$->hints = $6;
        $$->body = $7->body;
    }
  | TUNE IDENT '{' tune_axes '}' {
        $$ = ast_decl(ctx->arena, DECL_TUNE, LOC(@2));
        $$->name = $2;
        $$->axes = $4.head;
    }
  | TUNE IDENT '{' tune_axes error '}' {
        $$ = ast_decl(ctx->arena, DECL_TUNE, LOC(@2));
        $$->name = $2;
        $$->axes = $4.head;
    }
  | error ';'               { $$ = NULL; }
  | error '}'               { $$ = NULL; }
  ;

fn_params:
    %empty                  { $$ = (NameList){0}; }
  | names                   { $$ = $1; }
  | names ','               { $$ = $1; }
  ;

names:
    IDENT                   { $$ = names_append((NameList){0}, ast_name(ctx->arena, $1, LOC(@1))); }
  | names ',' IDENT         { $$ = names_append($1, ast_name(ctx->arena, $3, LOC(@3))); }
  ;

params:
    %empty                  { $$ = (ParamList){0}; }
  | param_list              { $$ = $1; }
  | param_list ','          { $$ = $1; }
  ;

param_list:
    param                   { $$ = (ParamList){$1, $1, 1}; }
  | param_list ',' param    { $$ = $1; $$.tail->next = $3; $$.tail = $3; $$.n++; }
  ;

param:
    IDENT ':' DTYPE '[' dims ']' {
        $$ = mk_array_param(ctx, LOC(@1), $1, $3, $5);
    }
  | IDENT ':' DTYPE {
        $$ = ast_param(ctx->arena, PARAM_SCALAR, LOC(@1));
        $$->name = $1;
        $$->dtype = $3;
    }
  | CONST IDENT ':' DTYPE {
        $$ = ast_param(ctx->arena, PARAM_CONST, LOC(@2));
        $$->name = $2;
        $$->dtype = $4;
    }
  | CONST IDENT ':' DTYPE '=' expr {
        $$ = ast_param(ctx->arena, PARAM_CONST, LOC(@2));
        $$->name = $2;
        $$->dtype = $4;
        $$->init = $6;
    }
    /* generic dtypes: `const T: dtype [= f32]`, then `x: T[N]`, `s: T` */
  | IDENT ':' IDENT '[' dims ']' {
        $$ = mk_array_param(ctx, LOC(@1), $1, DT_INVALID, $5);
        $$->type_name = $3;
    }
  | IDENT ':' IDENT {
        $$ = ast_param(ctx->arena, PARAM_SCALAR, LOC(@1));
        $$->name = $1;
        $$->type_name = $3;
    }
  | CONST IDENT ':' IDENT {
        $$ = mk_dtype_const(ctx, LOC(@2), $2, $4, LOC(@4), NULL);
    }
  | CONST IDENT ':' IDENT '=' expr {
        $$ = mk_dtype_const(ctx, LOC(@2), $2, $4, LOC(@4), $6);
    }
  ;

dims:
    dim                     { $$ = names_append((NameList){0}, ast_name(ctx->arena, $1, LOC(@1))); }
  | dims ',' dim            { $$ = names_append($1, ast_name(ctx->arena, $3, LOC(@3))); }
  ;

dim:
    IDENT                   { $$ = $1; }
  | INT {
        diag_error(ctx->diag, LOC(@1), "an array extent is a name or '_', not a number "
                   "(extents are known at launch; use static_assert to constrain them)");
        $$ = "_";
    }
  ;

hints:
    %empty                  { $$ = NULL; }
  | WITH '(' args ')'       { $$ = check_hints(ctx, $3); }
  ;

tune_axes:
    %empty                  { $$ = (AxisList){0}; }
  | tune_axes tune_axis {
        $$ = $1;
        if ($2) {
            if ($$.tail) $$.tail->next = $2; else $$.head = $2;
            $$.tail = $2;
        }
    }
  ;

tune_axis:
    IDENT IN '(' exprs ')' ';' {
        $$ = ARENA_NEW(ctx->arena, TuneAxis);
        $$->name = $1;
        $$->loc = LOC(@1);
        $$->values = $4.head;
        $$->nvalues = $4.n;
    }
  | IDENT IN '(' exprs ',' ')' ';' {
        $$ = ARENA_NEW(ctx->arena, TuneAxis);
        $$->name = $1;
        $$->loc = LOC(@1);
        $$->values = $4.head;
        $$->nvalues = $4.n;
    }
  | error ';'               { $$ = NULL; }
  ;

block:
    '{' stmts '}' {
        $$ = ast_stmt(ctx->arena, ST_BLOCK, LOC(@1));
        $$->body = $2.head;
    }
  | '{' stmts error '}' {
        $$ = ast_stmt(ctx->arena, ST_BLOCK, LOC(@1));
        $$->body = $2.head;
    }
  ;

stmts:
    %empty                  { $$ = (StmtList){0}; }
  | stmts stmt              { $$ = stmts_append($1, $2); }
  ;

stmt:
    ';'                     { $$ = NULL; }
  | LET IDENT '=' expr ';' {
        $$ = ast_stmt(ctx->arena, ST_LET, LOC(@1));
        $$->names = ast_name(ctx->arena, $2, LOC(@2));
        $$->expr = $4;
    }
  | LET '(' names ')' '=' expr ';' {
        $$ = ast_stmt(ctx->arena, ST_LET, LOC(@1));
        $$->names = $3.head;
        $$->tuple_pattern = true;
        $$->expr = $6;
    }
  | LET '(' names ',' ')' '=' expr ';' {
        $$ = ast_stmt(ctx->arena, ST_LET, LOC(@1));
        $$->names = $3.head;
        $$->tuple_pattern = true;
        $$->expr = $7;
    }
  | VAR IDENT '=' expr ';' {
        $$ = ast_stmt(ctx->arena, ST_VAR, LOC(@1));
        $$->names = ast_name(ctx->arena, $2, LOC(@2));
        $$->expr = $4;
    }
  | IDENT assign_op expr ';' {
        $$ = ast_stmt(ctx->arena, ST_ASSIGN, LOC(@1));
        $$->name = $1;
        $$->op = $2 < 0 ? 0 : $2;
        $$->compound = $2 >= 0;
        $$->expr = $3;
    }
  | expr ';' {
        $$ = ast_stmt(ctx->arena, ST_EXPR, LOC(@1));
        $$->expr = $1;
    }
  | FOR IDENT IN expr block {
        $$ = mk_for(ctx, LOC(@1), ast_name(ctx->arena, $2, LOC(@2)), $4, $5);
    }
  | WHILE expr block {
        $$ = ast_stmt(ctx->arena, ST_WHILE, LOC(@1));
        $$->expr = $2;
        $$->body = $3->body;
    }
  | if_stmt                 { $$ = $1; }
  | BREAK ';'               { $$ = ast_stmt(ctx->arena, ST_BREAK, LOC(@1)); }
  | CONTINUE ';'            { $$ = ast_stmt(ctx->arena, ST_CONTINUE, LOC(@1)); }
  | RETURN ';'              { $$ = ast_stmt(ctx->arena, ST_RETURN, LOC(@1)); }
  | RETURN expr ';' {
        $$ = ast_stmt(ctx->arena, ST_RETURN, LOC(@1));
        $$->expr = $2;
    }
  | STATIC_ASSERT '(' args ')' ';' { $$ = mk_static_assert(ctx, LOC(@1), $3); }
  | block                   { $$ = $1; }
  | error ';'               { $$ = NULL; }
  ;

assign_op:
    '='                     { $$ = -1; }
  | ADD_ASSIGN              { $$ = BIN_ADD; }
  | SUB_ASSIGN              { $$ = BIN_SUB; }
  | MUL_ASSIGN              { $$ = BIN_MUL; }
  | DIV_ASSIGN              { $$ = BIN_DIV; }
  ;

if_stmt:
    IF expr block {
        $$ = ast_stmt(ctx->arena, ST_IF, LOC(@1));
        $$->expr = $2;
        $$->body = $3->body;
    }
  | IF expr block ELSE block {
        $$ = ast_stmt(ctx->arena, ST_IF, LOC(@1));
        $$->expr = $2;
        $$->body = $3->body;
        $$->els = $5;
    }
  | IF expr block ELSE if_stmt {
        $$ = ast_stmt(ctx->arena, ST_IF, LOC(@1));
        $$->expr = $2;
        $$->body = $3->body;
        $$->els = $5;
    }
  ;

expr:
    postfix                 { $$ = $1; }
  | expr OROR expr          { $$ = mk_binary(ctx, LOC(@2), BIN_LOR, $1, $3); }
  | expr ANDAND expr        { $$ = mk_binary(ctx, LOC(@2), BIN_LAND, $1, $3); }
  | expr '|' expr           { $$ = mk_binary(ctx, LOC(@2), BIN_OR, $1, $3); }
  | expr '^' expr           { $$ = mk_binary(ctx, LOC(@2), BIN_XOR, $1, $3); }
  | expr '&' expr           { $$ = mk_binary(ctx, LOC(@2), BIN_AND, $1, $3); }
  | expr EQ expr            { $$ = mk_binary(ctx, LOC(@2), BIN_EQ, $1, $3); }
  | expr NE expr            { $$ = mk_binary(ctx, LOC(@2), BIN_NE, $1, $3); }
  | expr '<' expr           { $$ = mk_binary(ctx, LOC(@2), BIN_LT, $1, $3); }
  | expr LE expr            { $$ = mk_binary(ctx, LOC(@2), BIN_LE, $1, $3); }
  | expr '>' expr           { $$ = mk_binary(ctx, LOC(@2), BIN_GT, $1, $3); }
  | expr GE expr            { $$ = mk_binary(ctx, LOC(@2), BIN_GE, $1, $3); }
  | expr SHL expr           { $$ = mk_binary(ctx, LOC(@2), BIN_SHL, $1, $3); }
  | expr SHR expr           { $$ = mk_binary(ctx, LOC(@2), BIN_SHR, $1, $3); }
  | expr '+' expr           { $$ = mk_binary(ctx, LOC(@2), BIN_ADD, $1, $3); }
  | expr '-' expr           { $$ = mk_binary(ctx, LOC(@2), BIN_SUB, $1, $3); }
  | expr '*' expr           { $$ = mk_binary(ctx, LOC(@2), BIN_MUL, $1, $3); }
  | expr '/' expr           { $$ = mk_binary(ctx, LOC(@2), BIN_DIV, $1, $3); }
  | expr '%' expr           { $$ = mk_binary(ctx, LOC(@2), BIN_MOD, $1, $3); }
  | expr '@' expr           { $$ = mk_binary(ctx, LOC(@2), BIN_MATMUL, $1, $3); }
  | '-' expr %prec UNARY    { $$ = mk_unary(ctx, LOC(@1), '-', $2); }
  | '!' expr %prec UNARY    { $$ = mk_unary(ctx, LOC(@1), '!', $2); }
  | '~' expr %prec UNARY    { $$ = mk_unary(ctx, LOC(@1), '~', $2); }
  ;

postfix:
    primary                 { $$ = $1; }
  | postfix '.' IDENT '(' args ')' {
        $$ = mk_list_node(ctx, EX_METHOD, LOC(@3), $5, $1);
        $$->name = $3;
    }
  | postfix '.' IDENT {
        Expr *e = ast_expr(ctx->arena, EX_MEMBER, LOC(@3));
        e->name = $3;
        e->a = $1;
        e->depth = $1->depth + 1;
        $$ = bound_depth(ctx, e);
    }
  | postfix '[' expr ']' {
        Expr *e = ast_expr(ctx->arena, EX_INDEX, LOC(@2));
        e->a = $1;
        e->b = $3;
        e->depth = ($1->depth > $3->depth ? $1->depth : $3->depth) + 1;
        $$ = bound_depth(ctx, e);
    }
  ;

primary:
    INT                     { $$ = $1; }
  | FLOAT                   { $$ = $1; }
  | STRING                  { $$ = $1; }
  | KW_TRUE                 { $$ = $1; }
  | KW_FALSE                { $$ = $1; }
  | DTYPE {
        $$ = ast_expr(ctx->arena, EX_DTYPE, LOC(@1));
        $$->dtype = $1;
    }
  | IDENT {
        $$ = ast_expr(ctx->arena, EX_NAME, LOC(@1));
        $$->name = $1;
    }
  | IDENT '(' args ')' {
        $$ = mk_list_node(ctx, EX_CALL, LOC(@1), $3, NULL);
        $$->name = $1;
    }
  | '(' expr ')'            { $$ = $2; }
  | '(' ')'                 { $$ = mk_list_node(ctx, EX_TUPLE, LOC(@1), (ExprList){0}, NULL); }
  | '(' expr ',' ')'        { $$ = mk_list_node(ctx, EX_TUPLE, LOC(@1), list_one($2), NULL); }
  | '(' expr ',' exprs ')' {
        ExprList l = list_one($2);
        l.tail->next = $4.head;
        l.tail = $4.tail;
        l.n += $4.n;
        $$ = mk_list_node(ctx, EX_TUPLE, LOC(@1), l, NULL);
    }
  | '(' expr ',' exprs ',' ')' {
        ExprList l = list_one($2);
        l.tail->next = $4.head;
        l.tail = $4.tail;
        l.n += $4.n;
        $$ = mk_list_node(ctx, EX_TUPLE, LOC(@1), l, NULL);
    }
  ;

exprs:
    expr                    { $$ = list_one($1); }
  | exprs ',' expr          { $$ = list_append($1, $3); }
  ;

/* Call arguments: positional, then name=value; a trailing ',' is allowed. */
args:
    %empty                  { $$ = (ExprList){0}; }
  | arg_list                { $$ = $1; }
  | arg_list ','            { $$ = $1; }
  ;

arg_list:
    arg                     { $$ = args_append(ctx, (ExprList){0}, $1); }
  | arg_list ',' arg        { $$ = args_append(ctx, $1, $3); }
  ;

arg:
    expr                    { $$ = $1; }
  | IDENT '=' expr {
        $$ = ast_expr(ctx->arena, EX_KWARG, LOC(@1));
        $$->name = $1;
        $$->a = $3;
        $$->depth = $3->depth + 1;
        $$ = bound_depth(ctx, $$);
    }
  ;

%%

/* ---- syntax errors ------------------------------------------------------ */

/* How a token is named in messages: 'kernel', ';', a name. */
static const char *token_spelling(yysymbol_kind_t sym, char *buf, size_t n) {
    switch (sym) {
    case YYSYMBOL_YYEOF: return "end of file";
    case YYSYMBOL_IDENT: return "a name";
    case YYSYMBOL_INT: return "integer literal";
    case YYSYMBOL_FLOAT: return "float literal";
    case YYSYMBOL_STRING: return "string literal";
    case YYSYMBOL_DTYPE: return "dtype";
    default: break;
    }
    /* Bison spells keywords and operators bare (kernel, ||), characters quoted ('('). */
    const char *name = yysymbol_name(sym);
    if (name[0] == '\'')
        snprintf(buf, n, "%s", name);
    else
        snprintf(buf, n, "'%s'", name);
    return buf;
}

/* What was found, as the user wrote it: 'let', ';', 'x', '12', a string. */
static void describe_found(const ParseCtx *ctx, yysymbol_kind_t sym, char *buf, size_t n) {
    switch (sym) {
    case YYSYMBOL_YYEOF:
        snprintf(buf, n, "end of file");
        return;
    case YYSYMBOL_STRING:
        snprintf(buf, n, "a string");
        return;
    default:
        if (ctx->tok_len > 32)
            snprintf(buf, n, "'%.32s...'", ctx->tok_text);
        else
            snprintf(buf, n, "'%.*s'", ctx->tok_len, ctx->tok_text);
        return;
    }
}

static bool is_reserved_word(yysymbol_kind_t sym) {
    return sym == YYSYMBOL_DTYPE || sym == YYSYMBOL_KW_TRUE || sym == YYSYMBOL_KW_FALSE ||
           (sym >= YYSYMBOL_KERNEL && sym <= YYSYMBOL_STATIC_ASSERT);
}

static const char *closer_of(char open) {
    return open == '(' ? "')'" : open == '[' ? "']'" : "'}'";
}

/* Messages in the words of the golden tests:
 *   unexpected end of file: missing '}'
 *   expected ';' after the statement, found 'let'
 *   expected ')', found ';'
 *   expected a name, found 'for'
 *   unexpected 'else', expected a statement / an expression / A or B
 *   unexpected '}' */
static int yyreport_syntax_error(const yypcontext_t *yyctx, yyscan_t scanner, ParseCtx *ctx) {
    (void)scanner;
    if (ctx->lex_stopped) return 0;     /* the scanner already said why */
    const YYLTYPE *at = yypcontext_location(yyctx);
    Loc loc = loc_at(ctx, *at);
    /* A syntax error just after a lexical one is its echo: a stray character
     * on the same line, an unterminated string on that line or the next. */
    if (ctx->echo_line && at->first_line >= ctx->echo_line_first && at->first_line <= ctx->echo_line) {
        ctx->echo_line = 0;
        return 0;
    }
    yysymbol_kind_t found = yypcontext_token(yyctx);
    yysymbol_kind_t expected[YYNTOKENS];
    int nexp = yypcontext_expected_tokens(yyctx, expected, YYNTOKENS);
    if (nexp < 0) nexp = 0;

    bool want_semi = false, want_expr = false, want_stmt = false, want_name = false;
    bool want_closer = false;
    /* The innermost open bracket, as it was before `found` if that closed one. */
    char open = ctx->closed_bracket ? ctx->closed_bracket
              : ctx->bracket_depth > 0 ? ctx->brackets[ctx->bracket_depth - 1] : 0;
    const char *closer = open ? closer_of(open) : NULL;
    for (int i = 0; i < nexp; i++) {
        const char *name = yysymbol_name(expected[i]);
        if (strcmp(name, "';'") == 0) want_semi = true;
        if (closer && strcmp(name, closer) == 0) want_closer = true;
        if (expected[i] == YYSYMBOL_INT) want_expr = true;
        if (expected[i] == YYSYMBOL_LET) want_stmt = true;
        if (expected[i] == YYSYMBOL_IDENT) want_name = true;
    }
    char what[64];
    describe_found(ctx, found, what, sizeof what);

    if (found == YYSYMBOL_YYEOF) {
        if (closer)
            diag_error(ctx->diag, loc, "unexpected end of file: missing %s", closer);
        else if (want_semi && !want_stmt)
            diag_error(ctx->diag, loc, "unexpected end of file: missing ';'");
        else
            diag_error(ctx->diag, loc, "unexpected end of file");
    } else if (want_semi && !want_stmt) {
        diag_error(ctx->diag, loc, "expected ';' after the statement, found %s", what);
    } else if (want_closer && (strcmp(yysymbol_name(found), "';'") == 0 || !want_expr)) {
        diag_error(ctx->diag, loc, "expected %s, found %s", closer, what);
    } else if (want_name && !want_expr && is_reserved_word(found)) {
        diag_error(ctx->diag, loc, "expected a name, found %s (a reserved word)", what);
    } else if (want_stmt) {
        diag_error(ctx->diag, loc, "unexpected %s, expected a statement", what);
    } else if (want_expr) {
        diag_error(ctx->diag, loc, "unexpected %s, expected an expression", what);
    } else if (nexp >= 1 && nexp <= 4) {
        char list[256];
        size_t k = 0;
        list[0] = 0;
        for (int i = 0; i < nexp && k < sizeof list; i++) {
            char name[64];
            const char *sep = i == 0 ? "" : (i == nexp - 1 ? " or " : ", ");
            k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", sep,
                                  token_spelling(expected[i], name, sizeof name));
        }
        diag_error(ctx->diag, loc, "unexpected %s, expected %s", what, list);
    } else {
        diag_error(ctx->diag, loc, "unexpected %s", what);
    }
    return 0;
}

/* Bison's own messages: only stack exhaustion reaches here. */
static void yyerror(YYLTYPE *loc, yyscan_t scanner, ParseCtx *ctx, const char *msg) {
    (void)scanner;
    if (ctx->lex_stopped) return;
    if (strcmp(msg, "memory exhausted") == 0)
        diag_error(ctx->diag, loc_at(ctx, *loc), "program nested too deeply (parser stack of %d exhausted)",
                   YYMAXDEPTH);
    else
        diag_error(ctx->diag, loc_at(ctx, *loc), "%s", msg);
}

/* ---- building the tree -------------------------------------------------- */

/* Expressions taller than PARSE_MAX_EXPR_DEPTH are replaced by a leaf after
 * one error, so nothing downstream ever recurses deeper than that. */
static Expr *bound_depth(ParseCtx *ctx, Expr *e) {
    if (e->depth <= PARSE_MAX_EXPR_DEPTH) return e;
    if (!ctx->depth_reported) {
        diag_error(ctx->diag, e->loc, "expression nested too deeply (more than %d levels)",
                   PARSE_MAX_EXPR_DEPTH);
        ctx->depth_reported = true;   /* one message is enough: the result is unusable */
    }
    Expr *leaf = ast_expr(ctx->arena, EX_INT, e->loc);
    leaf->text = "0";
    return leaf;
}

static Expr *mk_unary(ParseCtx *ctx, Loc loc, int op, Expr *a) {
    Expr *e = ast_expr(ctx->arena, EX_UNARY, loc);
    e->op = op;
    e->a = a;
    e->depth = a->depth + 1;
    return bound_depth(ctx, e);
}

static Expr *mk_binary(ParseCtx *ctx, Loc loc, BinOp op, Expr *a, Expr *b) {
    Expr *e = ast_expr(ctx->arena, EX_BINARY, loc);
    e->op = (int)op;
    e->a = a;
    e->b = b;
    e->depth = (a->depth > b->depth ? a->depth : b->depth) + 1;
    return bound_depth(ctx, e);
}

/* EX_TUPLE (elements), EX_CALL and EX_METHOD (arguments; recv for methods). */
static Expr *mk_list_node(ParseCtx *ctx, ExprKind kind, Loc loc, ExprList l, Expr *recv) {
    Expr *e = ast_expr(ctx->arena, kind, loc);
    int depth = recv ? recv->depth : 0;
    for (Expr *x = l.head; x; x = x->next)
        if (x->depth > depth) depth = x->depth;
    if (kind == EX_TUPLE)
        e->elems = l.head;
    else
        e->args = l.head;
    e->nelems = l.n;
    e->a = recv;
    e->depth = depth + 1;
    return bound_depth(ctx, e);
}

static ExprList list_one(Expr *e) {
    ExprList l = {e, e, 1, e->kind == EX_KWARG};
    return l;
}

static ExprList list_append(ExprList l, Expr *e) {
    if (l.tail) l.tail->next = e; else l.head = e;
    l.tail = e;
    l.n++;
    return l;
}

/* Positional arguments come first (duplicate keywords are lowering's to report:
 * it names the callee). */
static ExprList args_append(ParseCtx *ctx, ExprList l, Expr *e) {
    if (e->kind == EX_KWARG) {
        l.has_kw = true;
    } else if (l.has_kw) {
        diag_error(ctx->diag, e->loc, "positional argument after keyword argument");
        return l;
    }
    return list_append(l, e);
}

static StmtList stmts_append(StmtList l, Stmt *s) {
    if (!s) return l;
    if (l.tail) l.tail->next = s; else l.head = s;
    l.tail = s;
    return l;
}

static NameList names_append(NameList l, Name *n) {
    if (l.tail) l.tail->next = n; else l.head = n;
    l.tail = n;
    l.n++;
    return l;
}

static void add_decl(ParseCtx *ctx, Decl *d) {
    *ctx->decl_tail = d;
    ctx->decl_tail = &d->next;
}

/* `for i in range(a[, b[, c]])` or static_range(...): the iterable must be
 * one of those two calls with 1 to 3 positional arguments. */
static Stmt *mk_for(ParseCtx *ctx, Loc loc, Name *var, Expr *range, Stmt *body) {
    Stmt *s = ast_stmt(ctx->arena, ST_FOR, loc);
    s->names = var;
    s->body = body->body;
    if (range->kind != EX_CALL ||
        (strcmp(range->name, "range") != 0 && strcmp(range->name, "static_range") != 0)) {
        diag_error(ctx->diag, range->loc, "a for loop iterates over range(...) or static_range(...)");
        return s;
    }
    s->is_static = strcmp(range->name, "static_range") == 0;
    for (Expr *x = range->args; x; x = x->next)
        if (x->kind == EX_KWARG) {
            diag_error(ctx->diag, x->loc, "%s() takes no keyword arguments", range->name);
            return s;
        }
    if (range->nelems < 1 || range->nelems > 3) {
        diag_error(ctx->diag, range->loc, "%s() takes 1 to 3 arguments (stop, start/stop, start/stop/step), not %d",
                   range->name, range->nelems);
        return s;
    }
    s->range_args = range->args;
    s->nrange_args = range->nelems;
    return s;
}

static Stmt *mk_static_assert(ParseCtx *ctx, Loc loc, ExprList args) {
    Stmt *s = ast_stmt(ctx->arena, ST_STATIC_ASSERT, loc);
    if (args.has_kw || args.n < 1 || args.n > 2) {
        diag_error(ctx->diag, loc, "static_assert takes a condition and an optional message string");
        return s;
    }
    s->expr = args.head;
    if (args.n == 2) {
        if (args.head->next->kind != EX_STRING) {
            diag_error(ctx->diag, args.head->next->loc, "the message of static_assert must be a string literal");
            return s;
        }
        s->msg = args.head->next;
    }
    return s;
}

static Param *mk_array_param(ParseCtx *ctx, Loc loc, const char *name, DType dt, NameList dims) {
    Param *p = ast_param(ctx->arena, PARAM_ARRAY, loc);
    p->name = name;
    p->dtype = dt;
    int rank = 0;
    for (Name *d = dims.head; d; d = d->next) {
        if (rank == TILE_MAX_RANK) {
            diag_error(ctx->diag, d->loc, "array '%s' has more than %d dimensions", name, TILE_MAX_RANK);
            break;
        }
        p->dims[rank] = strcmp(d->name, "_") == 0 ? NULL : d->name;
        p->dim_locs[rank] = d->loc;
        rank++;
    }
    p->rank = rank;
    return p;
}

/* `const NAME: dtype [= DEFAULT]`: the only constant whose type is a word. */
static Param *mk_dtype_const(ParseCtx *ctx, Loc loc, const char *name, const char *type, Loc type_loc, Expr *init) {
    if (strcmp(type, "dtype") != 0)
        diag_error(ctx->diag, type_loc, "unknown type '%s' for constant '%s' (a dtype such as i32 or f32, "
                   "or `dtype` for a constant that names one)", type, name);
    Param *p = ast_param(ctx->arena, PARAM_CONST, loc);
    p->name = name;
    p->type_name = "dtype";
    p->init = init;
    return p;
}

static Expr *check_hints(ParseCtx *ctx, ExprList hints) {
    for (Expr *x = hints.head; x; x = x->next)
        if (x->kind != EX_KWARG) {
            diag_error(ctx->diag, x->loc, "kernel hints are written NAME = VALUE (num_warps = 4, occupancy = 2)");
            return NULL;
        }
    return hints.head;
}

/* ---- entry point -------------------------------------------------------- */

Program *parse_program(Arena *a, Diag *diag, const char *file, const char *src) {
    Program *prog = ARENA_NEW(a, Program);
    prog->file = file;
    ParseCtx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.arena = a;
    ctx.diag = diag;
    ctx.file = file;
    ctx.prog = prog;
    ctx.decl_tail = &prog->decls;
    ctx.line = 1;
    ctx.col = 1;

    yyscan_t scanner;
    if (yylex_init_extra(&ctx, &scanner) != 0) {
        diag_plain(diag, "cannot start the scanner (out of memory)");
        return NULL;
    }
    if (!src) src = "";
    size_t len = strlen(src);
    if (len > (size_t)INT32_MAX / 2) {
        diag_plain(diag, "source file too large");
        yylex_destroy(scanner);
        return prog;
    }
    yy_scan_bytes(src, (int)len, scanner);
    yyparse(scanner, &ctx);
    yylex_destroy(scanner);
    return prog;
}
