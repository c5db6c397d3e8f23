/* cli_run.h: running the built tilec from a runtime test.  The test's main
 * sets `tilec` (the binary) and `dir` (a scratch directory); run_tilec runs a
 * command line there and keeps its stdout and stderr in out_text / err_text. */
#ifndef TILE_TEST_CLI_RUN_H
#define TILE_TEST_CLI_RUN_H

#include "check.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

static const char *tilec;
static char dir[1024];
static char out_text[65536], err_text[65536];

/* dir/name, in one of four rotating buffers (so a call may use a few). */
static const char *path_of(const char *name) {
    static char bufs[4][2048];
    static int next;
    char *b = bufs[next++ % 4];
    snprintf(b, sizeof bufs[0], "%s/%s", dir, name);
    return b;
}

static void slurp(const char *path, char *buf, size_t n) {
    buf[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (!f) return;
    size_t k = fread(buf, 1, n - 1, f);
    buf[k] = '\0';
    fclose(f);
}

/* Runs tilec with the arguments (a shell word list) in the scratch directory;
 * returns its exit status and leaves its stdout and stderr in out_text/err_text. */
static int run_tilec(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run_tilec(const char *fmt, ...) {
    char args[4096], cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s >cli.out 2>cli.err", dir, tilec, args);
    int st = system(cmd);
    slurp(path_of("cli.out"), out_text, sizeof out_text);
    slurp(path_of("cli.err"), err_text, sizeof err_text);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#define CHECK_RC(got, want)                                                                  \
    do {                                                                                     \
        int g_ = (got);                                                                      \
        if (g_ != (want)) {                                                                  \
            fprintf(stderr, "%s:%d: exit status %d, expected %d\n  stderr: %s\n", __FILE__,   \
                    __LINE__, g_, (want), err_text);                                         \
            check_failures++;                                                                \
        }                                                                                    \
    } while (0)

#endif
