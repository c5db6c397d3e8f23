/* harness.h: the execution-test harness.  A test writes a .tile source, makes
 * host arrays, runs one kernel through parse -> lower -> passes -> interpreter
 * and compares the arrays against a direct C computation.  Prefix: h_.
 *
 * Every run also executes the kernel *without* the IR passes on copies of the
 * arrays and requires bit-identical arrays and print output: folding and DCE
 * must never change a result. */
#ifndef TILEC_TEST_HARNESS_H
#define TILEC_TEST_HARNESS_H

#include "interp.h"
#include "lower.h"
#include "passes.h"

#include <math.h>
#include <stdio.h>

/* A host array: dtype, extents, strides in elements, and its own storage. */
typedef struct HArray {
    DType dtype;
    int rank;
    int64_t shape[TILE_MAX_RANK];
    int64_t strides[TILE_MAX_RANK];
    void *data;
    size_t nbytes;           /* whole allocation, gaps of strided arrays included */
} HArray;

/* Contiguous row-major array; extents as int64_t varargs. */
HArray *h_array(DType dt, int rank, ...);
/* Non-contiguous: every axis gets `gap` extra elements of stride padding. */
HArray *h_array_gapped(DType dt, int rank, const int64_t *shape, int64_t gap);
void h_free(HArray *a);
/* Fills every element (gaps too) with v, rounded to the dtype: the poison. */
void h_fill(HArray *a, double v);
/* Random values: floats uniform in [lo, hi) rounded to the dtype, integers
 * uniform in [lo, hi]. */
void h_fill_random(HArray *a, double lo, double hi);
double h_get(const HArray *a, const int64_t *idx);
void h_set(HArray *a, const int64_t *idx, double v);
Scalar h_get_raw(const HArray *a, const int64_t *idx);
void h_set_raw(HArray *a, const int64_t *idx, Scalar v);
int64_t h_numel(const HArray *a);
/* Gapped arrays: how many gap elements (not addressable by any index) no
 * longer hold `poison` -- a store wrote where it must not. */
int64_t h_gap_changes(const HArray *a, double poison);
/* Flat row-major element i (convenience for loops over all elements). */
void h_unravel(const HArray *a, int64_t i, int64_t *idx);

#define AT1(a, i) h_get((a), (int64_t[]){(i)})
#define AT2(a, i, j) h_get((a), (int64_t[]){(i), (j)})
#define AT3(a, i, j, k) h_get((a), (int64_t[]){(i), (j), (k)})
#define SET1(a, i, v) h_set((a), (int64_t[]){(i)}, (v))
#define SET2(a, i, j, v) h_set((a), (int64_t[]){(i), (j)}, (v))
#define SET3(a, i, j, k, v) h_set((a), (int64_t[]){(i), (j), (k)}, (v))

/* One kernel argument: an array, or a scalar (converted to the param dtype). */
typedef struct HArg {
    HArray *arr;
    double f;
    int64_t i;
    bool is_float;
} HArg;
#define HA(a) ((HArg){ .arr = (a) })
#define HI(v) ((HArg){ .i = (v), .f = (double)(v) })
#define HF(v) ((HArg){ .f = (v), .i = (int64_t)(v), .is_float = true })

typedef struct HRun {
    const char *src;
    const char *kernel;
    const char *consts;      /* "A=1,B=2" or NULL */
    int grid[3];             /* 0 means 1 */
    int64_t max_steps;       /* 0 = default */
    bool expect_error;       /* the interpreter must fail */
} HRun;

/* Runs; returns 0 when it ran as expected.  printed (when non-NULL) gets the
 * malloc'd print output; err gets the interpreter's message. */
int h_run(const HRun *r, HArg *args, int nargs, char **printed, char *err, size_t errlen);
/* Parses and lowers only (for IR checks); NULL with the diagnostics printed. */
IrFunc *h_lower(Arena *a, const char *src, const char *kernel, const char *consts);
/* Lowering must fail, and its diagnostics must contain `needle`. */
void h_expect_compile_error(const char *src, const char *kernel, const char *consts, const char *needle);

/* ---- checking ---- */
extern int h_failures;
extern const char *h_test_name;
void h_fail(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#define H_CHECK(cond, ...) do { if (!(cond)) h_fail(__FILE__, __LINE__, __VA_ARGS__); } while (0)
/* |got - want| <= atol + rtol*|want|, NaN equals NaN, infinities must match. */
bool h_close(double got, double want, double atol, double rtol);
/* Same-bits comparison of doubles (NaN equals NaN). */
bool h_same(double got, double want);
/* x rounded to dtype dt (uses scalar.c, which test_scalar checks on its own). */
double h_round(DType dt, double x);
/* Runs the named test function with a header line. */
#define H_RUN_TEST(fn) do { h_test_name = #fn; int before_ = h_failures; fn(); \
    printf("%s %s\n", h_failures == before_ ? "ok  " : "FAIL", #fn); } while (0)
int h_finish(void);

#endif
