/* bench_frontend.c: times the front end on one file: parse, check
 * (lower_check_program) and lowering of every kernel with its defaults
 * (lower_kernel), each phase and the total, as the median of RUNS runs of
 * wall-clock time.  Not a test: it prints numbers.
 *
 *   bench_frontend FILE.tile [RUNS]        (RUNS defaults to 20)
 * The input must compile: a benchmark of error paths would mislead, so any
 * error is printed and the exit status is 1. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ast.h"
#include "lower.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, len = 0, n;
    char *buf = malloc(cap + 1);
    while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0) {
        len += n;
        if (len == cap) {
            char *grown = realloc(buf, cap * 2 + 1);
            if (!grown) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = grown;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf) buf[len] = 0;
    return buf;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, compare_doubles);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

typedef struct Timing { double parse, check, lower, total; int kernels; } Timing;

/* One full run in a fresh arena; false (errors printed) if the file has errors. */
static bool run_once(const char *path, const char *src, Timing *t) {
    Arena arena;
    arena_init(&arena);
    Diag diag;
    diag_init(&diag, path, src);
    bool ok = false;

    double t0 = now_ms();
    Program *prog = parse_program(&arena, &diag, path, src);
    double t1 = now_ms();
    if (!prog || diag.nerrors) goto done;
    lower_check_program(&arena, &diag, prog);
    double t2 = now_ms();
    if (diag.nerrors) goto done;
    t->kernels = 0;
    for (const Decl *d = prog->decls; d; d = d->next) {
        if (d->kind != DECL_KERNEL) continue;
        if (!lower_kernel(&arena, &diag, prog, d->name, NULL, 0)) goto done;
        t->kernels++;
    }
    double t3 = now_ms();
    if (diag.nerrors) goto done;
    t->parse = t1 - t0;
    t->check = t2 - t1;
    t->lower = t3 - t2;
    t->total = t3 - t0;
    ok = true;
done:
    if (!ok) fputs(diag_text(&diag), stderr);
    diag_free(&diag);
    arena_free(&arena);
    return ok;
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: bench_frontend FILE.tile [RUNS]\n");
        return 2;
    }
    int runs = argc == 3 ? atoi(argv[2]) : 20;
    if (runs < 1) runs = 1;
    char *src = read_file(argv[1]);
    if (!src) {
        perror(argv[1]);
        return 1;
    }
    int lines = 0;
    for (const char *p = src; *p; p++) lines += *p == '\n';

    double *parse = calloc((size_t)runs, sizeof(double)), *check = calloc((size_t)runs, sizeof(double));
    double *lower = calloc((size_t)runs, sizeof(double)), *total = calloc((size_t)runs, sizeof(double));
    int kernels = 0, status = 0;
    if (!parse || !check || !lower || !total) {
        fputs("bench_frontend: out of memory\n", stderr);
        status = 1;
        goto out;
    }
    Timing warm;
    if (!run_once(argv[1], src, &warm)) {       /* warm-up, and the error check */
        status = 1;
        goto out;
    }
    for (int r = 0; r < runs; r++) {
        Timing t;
        if (!run_once(argv[1], src, &t)) {
            status = 1;
            goto out;
        }
        parse[r] = t.parse;
        check[r] = t.check;
        lower[r] = t.lower;
        total[r] = t.total;
        kernels = t.kernels;
    }
    printf("bench_frontend: %s, %d lines, %d kernels, median of %d runs\n", argv[1], lines, kernels, runs);
    printf("  parse          %8.3f ms\n", median(parse, runs));
    printf("  check          %8.3f ms   (lower_check_program)\n", median(check, runs));
    printf("  lower kernels  %8.3f ms   (lower_kernel, defaults)\n", median(lower, runs));
    printf("  total          %8.3f ms\n", median(total, runs));
out:
    free(parse);
    free(check);
    free(lower);
    free(total);
    free(src);
    return status;
}
