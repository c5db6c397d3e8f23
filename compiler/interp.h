/* interp.h: the interpreter of the tile IR -- the oracle of every GPU test
 * and the CPU backend of the runtime.  Prefix: interp_.
 *
 * Runs every block of the grid in order (x fastest, then y, then z) on host
 * memory.  Arithmetic follows scalar.c, so f16/bf16/tf32 round exactly as the
 * GPU does.  Nothing a kernel does can crash the host: out-of-range accesses
 * are padded or dropped as the language says, integer division by zero gives 0,
 * and loops that run away are stopped by the step limit.  With check_races,
 * an element one block writes and another writes or reads in the same launch
 * (a race on the GPU, hidden here by the fixed block order) is a located
 * error. */
#ifndef TILEC_INTERP_H
#define TILEC_INTERP_H

#include "ir.h"
#include "scalar.h"
#include <stdio.h>

typedef struct InterpArray {
    void *data;                      /* host memory */
    DType dtype;
    int rank;
    int64_t shape[TILE_MAX_RANK];
    int64_t strides[TILE_MAX_RANK];  /* in elements; may be any sign-free value */
} InterpArray;

/* One argument per IrFunc param, in order: .array for IRP_ARRAY, .scalar
 * (in the param's dtype, canonical form of scalar.h) for IRP_SCALAR. */
typedef struct InterpArg {
    InterpArray array;
    Scalar scalar;
} InterpArg;

typedef struct InterpOptions {
    FILE *print_out;        /* where print() writes; NULL = stdout */
    int64_t max_steps;      /* ops executed per block before giving up; 0 = 1e9 */
    bool check_races;       /* fail when an element one block writes, another writes or reads */
} InterpOptions;

/* Returns 0 on success; otherwise writes a message to err and returns -1. */
int interp_run(const IrFunc *f, const int grid[3], const InterpArg *args, int nargs,
               const InterpOptions *opt, char *err, size_t errlen);

#endif
