/* passes.c: the ordered list of IR passes (see passes.h). */
#include "passes.h"

#include <string.h>

const Pass ir_passes[] = {
    { "fold", "folds constant scalar math and exact no-ops first, so later passes see fewer ops", pass_fold },
    { "dce",  "removes what folding (and lowering) left unused, before anything costs time on it", pass_dce },
    { NULL, NULL, NULL },
};

void passes_run(IrFunc *f, const char *dump_after, FILE *dump) {
    if (!f) return;
    bool all = dump_after && strcmp(dump_after, "all") == 0;
    for (const Pass *p = ir_passes; p->name; p++) {
        p->run(f);
        if (dump && dump_after && (all || strcmp(dump_after, p->name) == 0)) {
            fprintf(dump, "// after %s\n", p->name);
            ir_print(dump, f);
        }
    }
}
