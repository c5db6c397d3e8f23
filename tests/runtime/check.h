/* check.h: the few assertions of the runtime tests.  A failed check prints
 * where and why and counts; main returns check_failures != 0. */
#ifndef TILE_TEST_CHECK_H
#define TILE_TEST_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_failures;

#define CHECK(cond)                                                              \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            check_failures++;                                                    \
        }                                                                        \
    } while (0)

/* `text` contains `needle`; prints both when not. */
#define CHECK_HAS(text, needle)                                                  \
    do {                                                                         \
        const char *t_ = (text), *n_ = (needle);                                 \
        if (!t_ || !strstr(t_, n_)) {                                            \
            fprintf(stderr, "%s:%d: expected \"%s\" in:\n  %s\n", __FILE__, __LINE__, \
                    n_, t_ ? t_ : "(null)");                                     \
            check_failures++;                                                    \
        }                                                                        \
    } while (0)

#endif
