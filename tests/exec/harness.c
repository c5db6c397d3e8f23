/* harness.c: see harness.h. */
#include "harness.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int h_failures;
const char *h_test_name = "";

/* ---- arrays ------------------------------------------------------------ */

static HArray *alloc_array(DType dt, int rank, const int64_t *shape, int64_t gap) {
    HArray *a = calloc(1, sizeof *a);
    a->dtype = dt;
    a->rank = rank;
    int64_t stride = 1, span = 1;
    for (int d = rank - 1; d >= 0; d--) {
        a->shape[d] = shape[d];
        a->strides[d] = stride;
        stride *= shape[d] + gap;
        span += (shape[d] > 0 ? shape[d] - 1 : 0) * a->strides[d];
    }
    a->nbytes = (size_t)(stride > span ? stride : span) * (size_t)dtype_size(dt);
    a->data = calloc(1, a->nbytes ? a->nbytes : 1);
    return a;
}

HArray *h_array(DType dt, int rank, ...) {
    int64_t shape[TILE_MAX_RANK];
    va_list ap;
    va_start(ap, rank);
    for (int d = 0; d < rank; d++) shape[d] = va_arg(ap, int64_t);
    va_end(ap);
    return alloc_array(dt, rank, shape, 0);
}

HArray *h_array_gapped(DType dt, int rank, const int64_t *shape, int64_t gap) {
    return alloc_array(dt, rank, shape, gap);
}

void h_free(HArray *a) {
    if (!a) return;
    free(a->data);
    free(a);
}

int64_t h_numel(const HArray *a) {
    int64_t n = 1;
    for (int d = 0; d < a->rank; d++) n *= a->shape[d];
    return n;
}

void h_unravel(const HArray *a, int64_t i, int64_t *idx) {
    for (int d = a->rank - 1; d >= 0; d--) {
        idx[d] = i % a->shape[d];
        i /= a->shape[d];
    }
}

int64_t h_gap_changes(const HArray *a, double poison) {
    int sz = dtype_size(a->dtype);
    Scalar want = scalar_from_double(a->dtype, poison);
    unsigned char wbytes[8];
    scalar_store(a->dtype, wbytes, want);
    int64_t changed = 0, total = (int64_t)(a->nbytes / (size_t)sz);
    for (int64_t off = 0; off < total; off++) {
        bool inside = true;
        for (int d = 0; d < a->rank && inside; d++) {
            int64_t span = d == 0 ? INT64_MAX : a->strides[d - 1] / a->strides[d];
            int64_t i = (off / a->strides[d]) % span;
            if (i >= a->shape[d]) inside = false;
        }
        if (!inside && memcmp((char *)a->data + off * sz, wbytes, (size_t)sz) != 0) changed++;
    }
    return changed;
}

static void *elem_ptr(const HArray *a, const int64_t *idx) {
    int64_t off = 0;
    for (int d = 0; d < a->rank; d++) off += idx[d] * a->strides[d];
    return (char *)a->data + off * dtype_size(a->dtype);
}

Scalar h_get_raw(const HArray *a, const int64_t *idx) { return scalar_load(a->dtype, elem_ptr(a, idx)); }
void h_set_raw(HArray *a, const int64_t *idx, Scalar v) { scalar_store(a->dtype, elem_ptr(a, idx), v); }
double h_get(const HArray *a, const int64_t *idx) { return scalar_to_double(a->dtype, h_get_raw(a, idx)); }
void h_set(HArray *a, const int64_t *idx, double v) { h_set_raw(a, idx, scalar_from_double(a->dtype, v)); }

void h_fill(HArray *a, double v) {
    int sz = dtype_size(a->dtype);
    Scalar s = scalar_from_double(a->dtype, v);
    for (size_t off = 0; off + (size_t)sz <= a->nbytes; off += (size_t)sz)
        scalar_store(a->dtype, (char *)a->data + off, s);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng_next(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

void h_fill_random(HArray *a, double lo, double hi) {
    int64_t idx[TILE_MAX_RANK];
    for (int64_t i = 0, n = h_numel(a); i < n; i++) {
        h_unravel(a, i, idx);
        double u = (double)(rng_next() >> 11) / 9007199254740992.0;
        double v = dtype_is_float(a->dtype) ? lo + u * (hi - lo) : floor(lo + u * (hi - lo + 1));
        if (a->dtype == DT_BOOL) v = rng_next() & 1;
        h_set(a, idx, v);
    }
}

/* ---- checking ------------------------------------------------------------ */

void h_fail(const char *file, int line, const char *fmt, ...) {
    h_failures++;
    if (h_failures > 200) return;          /* keep logs readable */
    fprintf(stderr, "%s:%d: [%s] ", file, line, h_test_name);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

bool h_close(double got, double want, double atol, double rtol) {
    if (isnan(want) || isnan(got)) return isnan(want) && isnan(got);
    if (isinf(want) || isinf(got)) return got == want;
    return fabs(got - want) <= atol + rtol * fabs(want);
}

bool h_same(double got, double want) {
    if (isnan(want) || isnan(got)) return isnan(want) && isnan(got);
    return got == want && signbit(got) == signbit(want);
}

double h_round(DType dt, double x) { return scalar_to_double(dt, scalar_from_double(dt, x)); }

int h_finish(void) {
    if (h_failures) fprintf(stderr, "%d check(s) failed\n", h_failures);
    else printf("all passed\n");
    return h_failures ? 1 : 0;
}

/* ---- compiling and running ------------------------------------------------ */

static int parse_consts(Arena *a, const char *consts, ConstBinding *out, int max) {
    int n = 0;
    if (!consts) return 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", consts);
    for (char *tok = strtok(buf, ","); tok && n < max; tok = strtok(NULL, ",")) {
        char err[256];
        if (!const_binding_parse(a, tok, &out[n], err, sizeof err)) {
            h_fail(__FILE__, __LINE__, "bad constant '%s': %s", tok, err);
            return -1;
        }
        n++;
    }
    return n;
}

static IrFunc *lower_with(Arena *a, Diag *d, const char *src, const char *kernel, const char *consts) {
    Program *p = parse_program(a, d, "test.tile", src);
    if (!p || d->nerrors) return NULL;
    ConstBinding cb[16];
    int nc = parse_consts(a, consts, cb, 16);
    if (nc < 0) return NULL;
    return lower_kernel(a, d, p, kernel, cb, nc);
}

IrFunc *h_lower(Arena *a, const char *src, const char *kernel, const char *consts) {
    Diag d;
    diag_init(&d, "test.tile", src);
    IrFunc *f = lower_with(a, &d, src, kernel, consts);
    if (!f || d.nerrors) {
        h_fail(__FILE__, __LINE__, "kernel '%s' did not compile:\n%s", kernel, diag_text(&d));
        f = NULL;
    }
    diag_free(&d);
    return f;
}

void h_expect_compile_error(const char *src, const char *kernel, const char *consts, const char *needle) {
    Arena a;
    arena_init(&a);
    Diag d;
    diag_init(&d, "test.tile", src);
    IrFunc *f = lower_with(&a, &d, src, kernel, consts);
    if (f && d.nerrors == 0) h_fail(__FILE__, __LINE__, "kernel '%s' compiled; expected an error with '%s'", kernel, needle);
    else if (!strstr(diag_text(&d), needle))
        h_fail(__FILE__, __LINE__, "error text lacks '%s':\n%s", needle, diag_text(&d));
    diag_free(&d);
    arena_free(&a);
}

static HArray *clone_array(const HArray *a) {
    HArray *c = malloc(sizeof *c);
    *c = *a;
    c->data = malloc(a->nbytes ? a->nbytes : 1);
    memcpy(c->data, a->data, a->nbytes);
    return c;
}

/* Converts HArgs to InterpArgs for `f`; false on a mismatch. */
static bool make_args(const IrFunc *f, HArg *args, int nargs, InterpArg *out) {
    if (nargs != f->nparams) {
        h_fail(__FILE__, __LINE__, "kernel '%s' has %d runtime params, test gave %d", f->name, f->nparams, nargs);
        return false;
    }
    for (int i = 0; i < nargs; i++) {
        memset(&out[i], 0, sizeof out[i]);
        const IrParam *p = &f->params[i];
        if (p->kind == IRP_ARRAY) {
            if (!args[i].arr) {
                h_fail(__FILE__, __LINE__, "param '%s' is an array, test gave a scalar", p->name);
                return false;
            }
            HArray *a = args[i].arr;
            out[i].array.data = a->data;
            out[i].array.dtype = a->dtype;
            out[i].array.rank = a->rank;
            for (int d = 0; d < a->rank; d++) {
                out[i].array.shape[d] = a->shape[d];
                out[i].array.strides[d] = a->strides[d];
            }
        } else {
            if (args[i].arr) {
                h_fail(__FILE__, __LINE__, "param '%s' is a scalar, test gave an array", p->name);
                return false;
            }
            out[i].scalar = dtype_is_float(p->dtype) ? scalar_from_double(p->dtype, args[i].f)
                                                     : scalar_from_int(p->dtype, args[i].i);
        }
    }
    return true;
}

static int run_one(const IrFunc *f, const HRun *r, InterpArg *iargs, int nargs, char **printed,
                   char *err, size_t errlen) {
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    InterpOptions opt = { out, r->max_steps, true };   /* races between blocks fail */
    int grid[3];
    for (int d = 0; d < 3; d++) grid[d] = r->grid[d] > 0 ? r->grid[d] : 1;
    int rc = interp_run(f, grid, iargs, nargs, &opt, err, errlen);
    fclose(out);
    *printed = buf;
    return rc;
}

int h_run(const HRun *r, HArg *args, int nargs, char **printed, char *err, size_t errlen) {
    char errbuf[1024] = "", ref_err[1024] = "";
    if (!err) { err = errbuf; errlen = sizeof errbuf; }
    if (printed) *printed = NULL;
    Arena a;
    arena_init(&a);
    int status = -1;
    IrFunc *opt_f = h_lower(&a, r->src, r->kernel, r->consts);
    IrFunc *ref_f = opt_f ? h_lower(&a, r->src, r->kernel, r->consts) : NULL;
    InterpArg *iargs = calloc((size_t)nargs + 1, sizeof *iargs);
    HArg *ref_args = calloc((size_t)nargs + 1, sizeof *ref_args);
    char *ref_print = NULL, *opt_print = NULL;
    if (!ref_f) goto done;
    passes_run(opt_f, NULL, NULL);

    /* The reference: no passes, on copies. */
    for (int i = 0; i < nargs; i++) {
        ref_args[i] = args[i];
        if (args[i].arr) ref_args[i].arr = clone_array(args[i].arr);
    }
    if (!make_args(ref_f, ref_args, nargs, iargs)) goto done;
    int ref_rc = run_one(ref_f, r, iargs, nargs, &ref_print, ref_err, sizeof ref_err);

    if (!make_args(opt_f, args, nargs, iargs)) goto done;
    int rc = run_one(opt_f, r, iargs, nargs, &opt_print, err, errlen);

    if (rc != ref_rc)
        h_fail(__FILE__, __LINE__, "passes changed the outcome: %d (%s) vs %d without (%s)", rc, err, ref_rc, ref_err);
    for (int i = 0; i < nargs; i++)
        if (args[i].arr && memcmp(args[i].arr->data, ref_args[i].arr->data, args[i].arr->nbytes) != 0)
            h_fail(__FILE__, __LINE__, "passes changed the contents of argument %d", i);
    if (strcmp(opt_print ? opt_print : "", ref_print ? ref_print : "") != 0)
        h_fail(__FILE__, __LINE__, "passes changed the print output:\n%s---\n%s", opt_print, ref_print);
    if (r->expect_error) {
        if (rc == 0) h_fail(__FILE__, __LINE__, "kernel '%s' ran; an error was expected", r->kernel);
        status = rc == 0 ? -1 : 0;
    } else {
        if (rc != 0) h_fail(__FILE__, __LINE__, "kernel '%s' failed: %s", r->kernel, err);
        status = rc;
    }
done:
    if (status != 0 && !r->expect_error && !ref_f) status = -1;
    for (int i = 0; i < nargs; i++)
        if (ref_args[i].arr && ref_args[i].arr != args[i].arr) h_free(ref_args[i].arr);
    free(ref_args);
    free(iargs);
    free(ref_print);
    if (printed) *printed = opt_print;
    else free(opt_print);
    arena_free(&a);
    return status;
}
