/* lower.h: semantic analysis and lowering of one kernel to the tile IR.
 * Prefix: lower_ (the walk, lower.c) and sema_ (the type rules, sema.c).
 *
 * A kernel is elaborated once per set of constant values: constants are
 * evaluated, `fn` helpers inlined at each call (they are generic over their
 * argument types), `static_range` loops unrolled, and every expression typed
 * (dtype promotion, loose literals, broadcasting, the rule of each op) while
 * its IR is built.  Errors go to the Diag with their location; lowering goes on
 * after an error to report more, and returns NULL if there was any. */
#ifndef TILEC_LOWER_H
#define TILEC_LOWER_H

#include "ast.h"
#include "ir.h"

/* One value for a `const` kernel parameter, from -D NAME=V or the runtime. */
typedef struct ConstBinding {
    const char *name;
    bool is_float;       /* value was written as a float (1.5, 1e-3) */
    bool is_bool;        /* value was written true / false (only a bool constant takes it) */
    int64_t i;           /* integer value (also set, truncated, for floats) */
    double f;            /* float value (also set for integers) */
    bool is_dtype;       /* the value is a dtype (for a `const T: dtype` parameter) */
    DType dtype;
} ConstBinding;

/* Checks the whole program without specialising: duplicate names, fn/kernel
 * signatures, tune blocks naming unknown kernels or parameters, file-level
 * constants.  Kernels whose constants all have defaults are also lowered with
 * those defaults so their errors show; a kernel missing constants that its
 * `tune` block covers is lowered at the first point of the space that its
 * static_asserts accept.  Returns the number of errors. */
int lower_check_program(Arena *a, Diag *d, const Program *p);

/* Elaborates kernel `kernel` of `p` with the given constants into an IrFunc
 * allocated in `a`.  A constant parameter with no default and no binding is an
 * error that names it; a binding naming no constant parameter is an error too. */
IrFunc *lower_kernel(Arena *a, Diag *d, const Program *p, const char *kernel,
                     const ConstBinding *consts, int nconsts);

/* Parses "NAME=VALUE" (for -D) into a binding; false with a message on error. */
bool const_binding_parse(Arena *a, const char *text, ConstBinding *out, char *err, size_t errlen);

#endif
