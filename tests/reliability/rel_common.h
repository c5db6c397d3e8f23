/* rel_common.h: what the reliability test programs share: checks that count
 * failures, the backend from the command line (exit 77 when it is not here),
 * and the host's resident memory.  Prefix: rel_. */
#ifndef REL_COMMON_H
#define REL_COMMON_H

#include "tile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { REL_EXIT_SKIP = 77 };

static int rel_failures;

#define REL_CHECK(cond, ...)                                                     \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                        \
            fputc('\n', stderr);                                                 \
            rel_failures++;                                                      \
        }                                                                        \
    } while (0)

/* A call that must succeed; on failure prints the runtime's message and
 * returns from the calling function with -1. */
#define REL_TRY(ctx, call)                                                       \
    do {                                                                         \
        tile_status st_ = (call);                                                \
        if (st_ != TILE_OK) {                                                    \
            fprintf(stderr, "%s:%d: %s failed: %s\n%s\n", __FILE__, __LINE__, #call, \
                    tile_status_name(st_), tile_ctx_last_error(ctx));            \
            rel_failures++;                                                      \
            return -1;                                                           \
        }                                                                        \
    } while (0)

/* "--backend cpu|cuda" anywhere in argv (default cpu). */
static inline tile_backend_kind rel_backend_arg(int argc, char **argv) {
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--backend")) return strcmp(argv[i + 1], "cuda") ? TILE_BACKEND_CPU : TILE_BACKEND_CUDA;
    return TILE_BACKEND_CPU;
}

/* The value after `flag` in argv, or `fallback`. */
static inline const char *rel_flag(int argc, char **argv, const char *flag, const char *fallback) {
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], flag)) return argv[i + 1];
    return fallback;
}

/* A context of the asked backend; exits 77 (skipped) when CUDA is not
 * available here, 1 when even the CPU backend fails. */
static inline tile_ctx *rel_ctx_or_skip(tile_backend_kind kind, const char *prog) {
    tile_ctx *ctx = NULL;
    tile_status st = tile_ctx_create(&ctx, kind, 0);
    if (st == TILE_OK) return ctx;
    fprintf(stderr, "%s: no %s backend here (%s: %s)\n", prog, kind == TILE_BACKEND_CUDA ? "CUDA" : "CPU",
            tile_status_name(st), tile_ctx_last_error(ctx));
    tile_ctx_destroy(ctx);
    exit(kind == TILE_BACKEND_CUDA ? REL_EXIT_SKIP : 1);
}

/* Resident set size of this process in KiB (second field of /proc/self/statm). */
static inline long rel_rss_kb(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, resident = -1;
    if (!f) return -1;
    if (fscanf(f, "%ld %ld", &size, &resident) != 2) resident = -1;
    fclose(f);
    return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024);
}

#endif
