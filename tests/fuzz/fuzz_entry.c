/* fuzz_entry.c: source bytes -> AST -> checked program -> IR -> passes. */
#include "fuzz_entry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ast.h"
#include "lower.h"
#include "passes.h"

/* The printers run too (into /dev/null): they walk every node. */
static FILE *null_sink(void) {
    static FILE *sink;
    if (!sink) sink = fopen("/dev/null", "w");
    return sink;
}

int fuzz_frontend_run(const uint8_t *data, size_t size) {
    /* parse_program takes a C string: an embedded NUL ends the source there. */
    char *src = malloc(size + 1);
    if (!src) return 0;
    memcpy(src, data, size);
    src[size] = 0;

    Arena arena;
    arena_init(&arena);
    Diag diag;
    diag_init(&diag, "fuzz.tile", src);
    FILE *sink = null_sink();

    Program *prog = parse_program(&arena, &diag, "fuzz.tile", src);
    /* Like tilec: a program with syntax errors goes no further. */
    if (prog && diag.nerrors == 0) {
        if (sink) ast_print(sink, prog);
        if (lower_check_program(&arena, &diag, prog) == 0) {
            for (const Decl *d = prog->decls; d; d = d->next) {
                if (d->kind != DECL_KERNEL) continue;
                IrFunc *f = lower_kernel(&arena, &diag, prog, d->name, NULL, 0);
                if (!f) continue;
                passes_run(f, NULL, NULL);
                if (sink) ir_print(sink, f);
            }
        }
    }
    /* The message text is built for every error: read it all once. */
    int nerrors = diag.nerrors;
    if (sink) fputs(diag_text(&diag), sink);

    diag_free(&diag);
    arena_free(&arena);
    free(src);
    return nerrors;
}
