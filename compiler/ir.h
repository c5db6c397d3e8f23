/* ir.h: the tile IR.  Prefix: ir_.
 *
 * A kernel specialised on its constants becomes one IrFunc:
 *   - SSA values (IrValue), each with a Type: a dtype and a compile-time
 *     shape (rank 0 = scalar).  Values are numbered %0, %1, ... in the func.
 *   - ops (IrOp) in blocks (IrBlock); FOR / LOOP / IF own nested blocks:
 *     control flow is structured, there are no gotos.
 *   - mutable `var`s are locals (IrLocal) read and written with LOCAL_GET and
 *     LOCAL_SET; everything else is SSA.  A value defined inside a region is
 *     only visible inside it (values leave regions through locals).
 *   - array parameters are not values: memory ops name them by `array`
 *     (their index in IrFunc.params).
 * Everything is allocated in the IrFunc's arena.
 *
 * Text form (tilec --emit=ir), for example:
 *   kernel chunk_cumsum(%a: f32[H], %dt: f32[B, L, H], %out: f32[B, L, H]) num_warps=4 {
 *     %0 = bid 0 : i32
 *     %3 = load @dt[%2, %0, %1] padding=zero : f32[1, 64, 16]
 *     %7 = cumsum %6 axis=1 : f32[1, 64, 16]
 *     store @out[%2, %0, %1], %9
 *   }
 */
#ifndef TILEC_IR_H
#define TILEC_IR_H

#include "base.h"
#include <stdio.h>

typedef enum OpId {
#define OP(id, mnem, builtin, rule, nin, meaning) OP_##id,
#include "ops.def"
#undef OP
    OP_COUNT
} OpId;

/* Typing rule families named in ops.def (implemented in sema.c). */
typedef enum OpRule {
    RULE_NONE,        /* internal: produced by lowering only */
    RULE_GRID,        /* bid / num_blocks: constant axis 0..2 -> i32 */
    RULE_UNARY_NUM,   /* numeric -> same dtype */
    RULE_UNARY_BOOL,  /* bool -> bool */
    RULE_UNARY_INT,   /* integer -> same */
    RULE_UNARY_FLOAT, /* float -> same float (integers convert to f32 first) */
    RULE_ISNAN,       /* float -> bool */
    RULE_CAST,        /* any -> the named dtype */
    RULE_ARITH,       /* promote both, broadcast -> promoted dtype */
    RULE_INT_ARITH,   /* like ARITH but integers only */
    RULE_COMPARE,     /* promote, broadcast -> bool */
    RULE_LOGICAL,     /* bool, bool -> bool */
    RULE_BITWISE,     /* integers (or bool) -> promoted */
    RULE_SHIFT,       /* integers -> left operand's dtype */
    RULE_WHERE,       /* bool, a, b -> promoted(a, b) */
    RULE_REDUCE,      /* axis / keepdims / whole tile */
    RULE_ARGREDUCE,   /* -> i32 */
    RULE_SCAN,        /* axis, reverse -> same type */
    RULE_MMA,         /* operand / accumulator dtype table of the spec */
    RULE_SPECIAL,     /* an op with its own checker in sema.c */
} OpRule;

typedef struct OpInfo {
    const char *mnemonic;
    const char *builtin;   /* "" when not callable by name */
    OpRule rule;
    int nin;               /* -1 = variable */
    const char *meaning;
} OpInfo;
extern const OpInfo ir_op_info[OP_COUNT];
/* Element-wise: one result element from the same element of each operand
 * (the rule families RULE_UNARY_NUM .. RULE_WHERE). */
bool ir_op_is_elementwise(OpId op);

/* Padding of out-of-range load / gather elements. */
typedef enum Padding { PAD_ZERO, PAD_NAN, PAD_POS_INF, PAD_NEG_INF } Padding;
const char *padding_name(Padding p);

typedef struct IrOp IrOp;
typedef struct IrBlock {
    IrOp **ops;
    int nops, cap;
} IrBlock;

struct IrOp {
    OpId op;
    Loc loc;                /* the .tile source position that produced it */
    int result;             /* value id, or -1 for ops without a result */
    int nargs;
    int *args;              /* operand value ids */
    /* attributes: each op uses the ones its ops.def row names */
    int axis;               /* reductions, scans, cat, bid/num_blocks, array.dim/stride */
    int flag;               /* LOAD/GATHER: Padding; CUMSUM/CUMPROD: reverse */
    int array;              /* memory ops, ARRAY_DIM/STRIDE: array parameter index */
    int index;              /* PARAM: scalar parameter index in IrFunc.params */
    int local;              /* LOCAL_GET / LOCAL_SET: local index */
    int latency;            /* LOAD / STORE hint, 0 = none */
    int nints;
    int ints[TILE_MAX_RANK];/* PERMUTE axes; LOAD/STORE order; EXTRACT index (tile units) */
    union { int64_t i; uint64_t u; double f; } lit;  /* CONST: integers in i (u for u64), floats in f, bool in i */
    const char *str;        /* PRINT format */
    IrBlock *body;          /* FOR / LOOP / IF-then */
    IrBlock *else_body;     /* IF-else (may be empty, never NULL for IF) */
};

typedef struct IrValue {
    Type type;
    IrOp *def;              /* defining op */
    const char *name;       /* source name hint for printing/emission, or NULL */
} IrValue;

typedef struct IrLocal {
    Type type;
    const char *name;       /* the `var` name */
    Loc loc;
} IrLocal;

typedef enum IrParamKind { IRP_ARRAY, IRP_SCALAR } IrParamKind;

/* A runtime parameter of the specialised kernel, in declaration order
 * (constant parameters are gone: they were folded in). */
typedef struct IrParam {
    IrParamKind kind;
    const char *name;
    Loc loc;
    DType dtype;            /* element dtype (array) or scalar dtype */
    int rank;                       /* IRP_ARRAY */
    const char *dims[TILE_MAX_RANK];/* IRP_ARRAY: extent names, NULL for `_` */
    bool written;           /* IRP_ARRAY: some store / scatter / atomic targets it */
} IrParam;

/* One constant the kernel was specialised on (for messages and cache keys). */
typedef struct IrConst {
    const char *name;
    Type type;              /* scalar; for a dtype constant, the dtype it names */
    bool is_dtype;          /* `const T: dtype`: type.dtype is its value, v unused */
    union { int64_t i; double f; } v;
} IrConst;

typedef struct IrFunc {
    Arena *arena;
    const char *name;
    Loc loc;
    IrParam *params;  int nparams;
    IrConst *consts;  int nconsts;
    IrValue *values;  int nvalues, cap_values;
    IrLocal *locals;  int nlocals, cap_locals;
    IrBlock *body;
    int num_warps;          /* hint, 0 = compiler's choice */
    int occupancy;          /* hint, 0 = compiler's choice */
} IrFunc;

/* ---- building (compiler/ir.c) ---- */
IrFunc  *ir_func_new(Arena *a, const char *name, Loc loc);
IrBlock *ir_block_new(Arena *a);
/* Appends an op to `blk`; a non-NULL `result_type` gives it a fresh result value. */
IrOp    *ir_append(IrFunc *f, IrBlock *blk, OpId op, Loc loc, const Type *result_type,
                   int nargs, const int *args);
int      ir_new_value(IrFunc *f, Type type, IrOp *def);
int      ir_new_local(IrFunc *f, Type type, const char *name, Loc loc);
void     ir_block_remove(IrBlock *blk, int i);     /* removes ops[i] (keeps order) */
void     ir_block_insert(Arena *a, IrBlock *blk, int i, IrOp *op);   /* op becomes ops[i] (appended if i is out of range) */
/* A copy of `f` in arena `a` that may be changed without touching `f`: its
 * values, locals, blocks and ops are new (params, consts and names shared). */
IrFunc  *ir_clone(Arena *a, const IrFunc *f);
static inline const Type *ir_type(const IrFunc *f, int value) { return &f->values[value].type; }

/* ---- printing (compiler/ir.c) ---- */
void ir_print(FILE *out, const IrFunc *f);
/* Walks every op, nested regions included, in program order. */
typedef void (*IrVisit)(IrFunc *f, IrOp *op, void *ctx);
void ir_walk(IrFunc *f, IrBlock *blk, IrVisit visit, void *ctx);
bool ir_op_has_side_effects(const IrOp *op);   /* stores, atomics, print, control, local.set */
/* Operand reads of each value over the whole of f, nested regions included:
 * count[v] (nvalues + 1 entries, set here) and, where `reader` is not NULL,
 * reader[v], the op that read v last in program order (its one reader where
 * count[v] == 1). */
void ir_count_uses(const IrFunc *f, int *count, const IrOp **reader);
/* Is value v an integer CONST?  Its value in *out. */
bool ir_const_int(const IrFunc *f, int v, int64_t *out);
/* How an op touches its array parameter (`array`): load and gather read,
 * store and scatter write, the atomics update; NONE for every other op. */
typedef enum IrMemAccess { IR_MEM_NONE, IR_MEM_READ, IR_MEM_WRITE, IR_MEM_ATOMIC } IrMemAccess;
IrMemAccess ir_op_mem_access(const IrOp *op);

#endif
