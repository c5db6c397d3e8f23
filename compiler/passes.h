/* passes.h: transformations of the tile IR, one file each, run in the order
 * of the list in passes.c.  Every pass keeps the IR valid and can be dumped
 * after (`tilec --emit=ir --dump-after=NAME`). */
#ifndef TILEC_PASSES_H
#define TILEC_PASSES_H

#include "ir.h"

typedef struct Pass {
    const char *name;          /* as in --dump-after=NAME */
    const char *why;           /* one line: what it does and why it sits here */
    void (*run)(IrFunc *f);
} Pass;

extern const Pass ir_passes[];  /* terminated by a {NULL} row */

void pass_fold(IrFunc *f);     /* fold.c: constant folding of scalar ops and shape no-ops */
void pass_dce(IrFunc *f);      /* dce.c: removes ops whose results are unused and that have no effect */

/* Runs every pass in order; if dump_after names one (or "all"), prints the IR
 * to `dump` after it. */
void passes_run(IrFunc *f, const char *dump_after, FILE *dump);

#endif
