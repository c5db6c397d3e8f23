/* tune.c: the autotuner (tile_tune in tile.h) and its on-disk result cache.
 * Prefix: tune_ (internal), tile_tune (public).
 *
 * A kernel's `tune` block lists axes `NAME in (v, ...)` over its constant
 * parameters and the hints num_warps / occupancy.  The space is their cross
 * product; the caller's `fixed` constants shrink an axis to one value or add
 * one-value axes.  Every point is compiled through tile_kernel_get (so the
 * module's kernel cache keeps the compiled points; tile_kernel_prefetch
 * compiles 64 points at a time ahead, on several threads), launched `warmup` times,
 * then timed `repeat` times with the backend's events; the median counts.
 *
 * The winner is stored in the runtime's disk cache (disk_cache.h), kind
 * "tune", under the key
 *     <kernel>|<source hash>|<backend>:<device>[:<codegen tag>]|<shape class>|<fixed>
 * with a small text payload:
 *     tilec-tune 2
 *     ms <median time, %a>
 *     const <NAME> i <integer>        (one line per axis, in axis order)
 *     const <NAME> f <%a>
 * The disk cache checks the file (version, full key, size, checksum); an
 * entry it rejects, or a payload that does not parse strictly or names a
 * point outside the current space, is reported as corrupt and replaced. */
#include "backend.h"
#include "disk_cache.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    TUNE_MAX_POINTS = 100000,      /* a bigger space is surely a mistake */
    TUNE_MAX_CACHE_ENTRY = 1 << 16, /* an entry is a few hundred bytes */
    TUNE_MAX_EVAL_DEPTH = 64,      /* file-level constants referring to each other */
    TUNE_MAX_SKIP_LINES = 16,      /* skipped points listed in the final error */
    TUNE_PREFETCH_POINTS = 64,     /* points compiled ahead at a time (tune_prefetch) */
};

#define TUNE_CACHE_KIND "tune"
#define TUNE_ENTRY_HEADER "tilec-tune 2"   /* the payload's own format version */

/* L2 flush buffer on CUDA: larger than the L2 of any current GPU (H200: 60 MiB). */
#define TUNE_L2_SCRATCH_BYTES ((size_t)256 << 20)

/* One axis of the space: a name and its values (each a tile_const). */
typedef struct TuneAxisVals {
    const char *name;
    tile_const *values;
    int nvalues;
} TuneAxisVals;

/* The result of one point of the space. */
typedef struct TunePoint {
    int ok;                 /* compiled, launched and timed */
    float ms;               /* median, when ok */
    char *why;              /* when not ok: the first line of the error (arena) */
} TunePoint;

typedef struct Tuner {
    tile_module *mod;
    tile_ctx *ctx;
    const char *kernel;
    Arena arena;            /* everything of this call */
    TuneAxisVals *axes;
    int naxes;
    int npoints;
    tile_tune_options opt;
    FILE *log;
    char *key;              /* cache key (one line) */
    char *cache_path;       /* NULL: no disk cache */
    char *cache_dir;
} Tuner;

tile_tune_options tile_tune_default_options(void) {
    tile_tune_options o;
    memset(&o, 0, sizeof o);
    o.warmup = 1;
    o.repeat = 5;
    o.flush_l2 = 1;
    return o;
}

static void tune_warn(Tuner *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tune_warn(Tuner *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("tilec: warning: ", t->log);
    vfprintf(t->log, fmt, ap);
    fputc('\n', t->log);
    va_end(ap);
}

static void tune_verbose(Tuner *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tune_verbose(Tuner *t, const char *fmt, ...) {
    if (!t->opt.verbose) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(t->log, fmt, ap);
    va_end(ap);
}

/* ---- the values of tune axes ------------------------------------------- */

/* Tune values are constants (checked by lower_check_program); the autotuner
 * evaluates the usual forms: literals, file-level constants, unary minus and
 * integer/float arithmetic.  Others are reported where they are written. */
static bool tune_eval(const Program *prog, Diag *d, const Expr *e, int depth, tile_const *out);

static bool tune_eval_name(const Program *prog, Diag *d, const Expr *e, int depth, tile_const *out) {
    for (const Decl *c = prog->decls; c; c = c->next)
        if (c->kind == DECL_CONST && strcmp(c->name, e->name) == 0) return tune_eval(prog, d, c->init, depth + 1, out);
    diag_error(d, e->loc, "tune value '%s' is not a file-level constant", e->name);
    return false;
}

static bool tune_eval_binary(const Program *prog, Diag *d, const Expr *e, int depth, tile_const *out) {
    tile_const a, b;
    if (!tune_eval(prog, d, e->a, depth + 1, &a) || !tune_eval(prog, d, e->b, depth + 1, &b)) return false;
    memset(out, 0, sizeof *out);
    if (a.kind == TILE_CONST_FLOAT || b.kind == TILE_CONST_FLOAT) {
        double x = a.kind == TILE_CONST_FLOAT ? a.f : (double)a.i, y = b.kind == TILE_CONST_FLOAT ? b.f : (double)b.i;
        out->kind = TILE_CONST_FLOAT;
        switch ((BinOp)e->op) {
        case BIN_ADD: out->f = x + y; return true;
        case BIN_SUB: out->f = x - y; return true;
        case BIN_MUL: out->f = x * y; return true;
        case BIN_DIV: out->f = x / y; return true;
        default: break;
        }
    } else {
        uint64_t x = (uint64_t)a.i, y = (uint64_t)b.i;   /* wrapping arithmetic */
        switch ((BinOp)e->op) {
        case BIN_ADD: out->i = (int64_t)(x + y); return true;
        case BIN_SUB: out->i = (int64_t)(x - y); return true;
        case BIN_MUL: out->i = (int64_t)(x * y); return true;
        case BIN_DIV:
        case BIN_MOD:
            /* the language's rule for integer division by zero (scalar.h) */
            if (b.i == 0 || (a.i == INT64_MIN && b.i == -1)) out->i = 0;
            else out->i = e->op == BIN_DIV ? a.i / b.i : a.i % b.i;
            return true;
        case BIN_SHL: out->i = b.i < 0 || b.i > 63 ? 0 : (int64_t)(x << b.i); return true;
        case BIN_SHR: out->i = b.i < 0 || b.i > 63 ? (a.i < 0 ? -1 : 0) : a.i >> b.i; return true;
        case BIN_AND: out->i = a.i & b.i; return true;
        case BIN_OR: out->i = a.i | b.i; return true;
        case BIN_XOR: out->i = a.i ^ b.i; return true;
        default: break;
        }
    }
    diag_error(d, e->loc, "the autotuner cannot evaluate '%s' in a tune value", binop_spelling((BinOp)e->op));
    return false;
}

static bool tune_eval(const Program *prog, Diag *d, const Expr *e, int depth, tile_const *out) {
    memset(out, 0, sizeof *out);
    if (!e) return false;
    if (depth > TUNE_MAX_EVAL_DEPTH) {
        diag_error(d, e->loc, "tune value nests too deeply");
        return false;
    }
    switch (e->kind) {
    case EX_INT:
    case EX_BOOL:
        out->i = e->ival;
        out->f = (double)e->ival;
        return true;
    case EX_FLOAT:
        out->kind = TILE_CONST_FLOAT;
        out->f = e->fval;
        return true;
    case EX_NAME:
        return tune_eval_name(prog, d, e, depth, out);
    case EX_UNARY:
        if (e->op == '-') {
            if (!tune_eval(prog, d, e->a, depth + 1, out)) return false;
            if (out->kind == TILE_CONST_FLOAT) out->f = -out->f;
            else out->i = (int64_t)(0 - (uint64_t)out->i);
            return true;
        }
        break;
    case EX_BINARY:
        return tune_eval_binary(prog, d, e, depth, out);
    default:
        break;
    }
    diag_error(d, e->loc, "the autotuner cannot evaluate this tune value (write a number or a constant)");
    return false;
}

static bool tune_const_equal(const tile_const *a, const tile_const *b) {
    if (a->kind != b->kind) return false;
    return a->kind == TILE_CONST_FLOAT ? a->f == b->f : a->i == b->i;
}

static const char *tune_const_text(const tile_const *c, char *buf, size_t n) {
    if (c->kind == TILE_CONST_FLOAT) snprintf(buf, n, "%g", c->f);
    else if (c->kind == TILE_CONST_DTYPE) snprintf(buf, n, "%s", tile_dtype_name((tile_dtype)c->i));
    else snprintf(buf, n, "%lld", (long long)c->i);
    return buf;
}

/* ---- the space --------------------------------------------------------- */

static const Decl *tune_find_decl(const Program *p, DeclKind kind, const char *name) {
    for (const Decl *d = p->decls; d; d = d->next)
        if (d->kind == kind && strcmp(d->name, name) == 0) return d;
    return NULL;
}

/* The name as the module spells it (so it lives as long as the module). */
static const char *tune_stable_name(const Decl *k, const char *name) {
    for (const Param *p = k->params; p; p = p->next)
        if (p->kind == PARAM_CONST && strcmp(p->name, name) == 0) return p->name;
    if (strcmp(name, "num_warps") == 0) return "num_warps";
    if (strcmp(name, "occupancy") == 0) return "occupancy";
    return NULL;
}

static tile_status tune_build_space(Tuner *t, const tile_const *fixed, int nfixed) {
    const Program *prog = t->mod->program;
    const Decl *k = tune_find_decl(prog, DECL_KERNEL, t->kernel);
    const Decl *block = tune_find_decl(prog, DECL_TUNE, t->kernel);
    int cap = nfixed;
    if (block)
        for (const TuneAxis *ax = block->axes; ax; ax = ax->next) cap++;
    t->axes = ARENA_ARRAY(&t->arena, TuneAxisVals, cap > 0 ? cap : 1);
    t->naxes = 0;

    for (int i = 0; i < nfixed; i++) {
        if (!fixed[i].name)
            return tile_error(t->ctx, TILE_ERR_INVALID_ARG, "tile_tune: fixed constant %d has no name", i);
        for (int j = 0; j < i; j++)
            if (strcmp(fixed[i].name, fixed[j].name) == 0)
                return tile_error(t->ctx, TILE_ERR_INVALID_ARG, "tile_tune: fixed constant '%s' given twice",
                                  fixed[i].name);
        if (!tune_stable_name(k, fixed[i].name))
            return tile_error(t->ctx, TILE_ERR_INVALID_ARG,
                              "tile_tune: '%s' is not a constant parameter of kernel '%s' (nor num_warps/occupancy)",
                              fixed[i].name, t->kernel);
    }

    Diag d;
    diag_init(&d, t->mod->name, t->mod->source);
    for (const TuneAxis *ax = block ? block->axes : NULL; ax; ax = ax->next) {
        TuneAxisVals *a = &t->axes[t->naxes++];
        a->name = ax->name;
        const tile_const *held = NULL;
        for (int i = 0; i < nfixed; i++)
            if (strcmp(fixed[i].name, ax->name) == 0) held = &fixed[i];
        if (held) {   /* the caller holds this axis at one value */
            a->values = ARENA_NEW(&t->arena, tile_const);
            a->values[0] = *held;
            a->values[0].name = ax->name;
            a->nvalues = 1;
            continue;
        }
        a->values = ARENA_ARRAY(&t->arena, tile_const, ax->nvalues > 0 ? ax->nvalues : 1);
        for (const Expr *v = ax->values; v; v = v->next) {
            tile_const c;
            if (!tune_eval(prog, &d, v, 0, &c)) continue;
            c.name = ax->name;
            int dup = 0;   /* a value listed twice is one point */
            for (int j = 0; j < a->nvalues; j++) dup |= tune_const_equal(&a->values[j], &c);
            if (!dup && a->nvalues < ax->nvalues) a->values[a->nvalues++] = c;
        }
    }
    if (d.nerrors) {
        tile_status st = tile_error(t->ctx, TILE_ERR_COMPILE, "%s", diag_text(&d));
        diag_free(&d);
        return st;
    }
    diag_free(&d);
    for (int i = 0; i < nfixed; i++) {   /* fixed constants outside the tune block */
        int in_block = 0;
        for (int j = 0; j < t->naxes; j++) in_block |= strcmp(t->axes[j].name, fixed[i].name) == 0;
        if (in_block) continue;
        TuneAxisVals *a = &t->axes[t->naxes++];
        a->name = tune_stable_name(k, fixed[i].name);
        a->values = ARENA_NEW(&t->arena, tile_const);
        a->values[0] = fixed[i];
        a->values[0].name = a->name;
        a->nvalues = 1;
    }
    int64_t n = 1;
    for (int i = 0; i < t->naxes; i++) {
        if (t->axes[i].nvalues == 0)
            return tile_error(t->ctx, TILE_ERR_COMPILE, "tune block of '%s': axis '%s' has no value",
                              t->kernel, t->axes[i].name);
        n *= t->axes[i].nvalues;
        if (n > TUNE_MAX_POINTS)
            return tile_error(t->ctx, TILE_ERR_INVALID_ARG, "tune space of '%s' has more than %d points",
                              t->kernel, TUNE_MAX_POINTS);
    }
    t->npoints = (int)n;
    return TILE_OK;
}

/* The constants of point `index` (mixed radix, the first axis varying slowest). */
static void tune_point_consts(const Tuner *t, int index, tile_const *out) {
    for (int i = t->naxes - 1; i >= 0; i--) {
        const TuneAxisVals *a = &t->axes[i];
        out[i] = a->values[index % a->nvalues];
        index /= a->nvalues;
    }
}

static char *tune_point_label(Tuner *t, const tile_const *consts) {
    size_t cap = 32;
    for (int i = 0; i < t->naxes; i++) cap += strlen(consts[i].name) + 32;
    char *s = arena_alloc(&t->arena, cap);
    size_t len = 0;
    for (int i = 0; i < t->naxes; i++) {
        char v[40];
        len += (size_t)snprintf(s + len, cap - len, "%s%s=%s", i ? " " : "", consts[i].name,
                                tune_const_text(&consts[i], v, sizeof v));
    }
    if (t->naxes == 0) snprintf(s, cap, "(defaults)");
    return s;
}

/* ---- the cache key ----------------------------------------------------- */

static uint64_t tune_pow2_ceil(int64_t x) {
    if (x <= 0) return 0;
    uint64_t p = 1;
    while (p < (uint64_t)x) p <<= 1;
    return p;
}

/* Appends printf output to an arena string being built (realloc by copying). */
typedef struct TuneStr {
    Arena *arena;
    char *s;
    size_t len, cap;
} TuneStr;

static void ts_printf(TuneStr *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ts_printf(TuneStr *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if (b->len + (size_t)n + 1 > b->cap) {
        size_t cap = (b->cap + (size_t)n + 1) * 2;
        char *s = arena_alloc(b->arena, cap);
        if (b->s) memcpy(s, b->s, b->len + 1);
        b->s = s;
        b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

extern char **environ;

/* The TILEC_ variables of the environment set to something, hashed in any
 * order (0: none): the compiler's knobs (TILEC_MMA_TMA=0,
 * TILEC_STAGE_RELEASE=1, ...) change the code each point runs, so a winner
 * timed under some is not one under others.  Not the ones that change no
 * code: the benchmarks' and tools' own, the emu backend's host compiler,
 * the compile threads, the cache log. */
static uint64_t tune_env_hash(void) {
    static const char *const no_code[] = {"TILEC_BENCH_", "TILEC_FUZZ_", "TILEC_GPU_BUILD=", "TILEC_EMU_CXX=",
                                          "TILEC_COMPILE_THREADS=", "TILEC_CACHE_LOG="};
    uint64_t h = 0;
    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (strncmp(*e, "TILEC_", 6) != 0 || !eq || !eq[1]) continue;
        bool skip = false;
        for (size_t k = 0; k < sizeof no_code / sizeof no_code[0]; k++)
            skip |= strncmp(*e, no_code[k], strlen(no_code[k])) == 0;
        if (!skip) h += disk_cache_fnv1a(*e, strlen(*e), DISK_CACHE_FNV_SEED);
    }
    return h;
}

static void tune_make_key(Tuner *t, const tile_const *fixed, int nfixed, const tile_arg *args, int nargs) {
    TuneStr b = {&t->arena, NULL, 0, 0};
    const char *backend = t->ctx->ops->name ? t->ctx->ops->name : "?";
    const char *tag = tile_ctx_codegen_tag(t->ctx);
    ts_printf(&b, "%s|%016llx|%s:%s%s%s|", t->kernel, (unsigned long long)t->mod->source_hash, backend,
              tile_ctx_device_name(t->ctx), *tag ? ":" : "", tag);
    uint64_t env = tune_env_hash();
    if (env) ts_printf(&b, "env %016llx|", (unsigned long long)env);
    for (int i = 0; i < nargs; i++) {
        const tile_arg *a = &args[i];
        if (i) ts_printf(&b, ",");
        if (a->kind == TILE_ARG_ARRAY) {
            ts_printf(&b, "%s[", tile_dtype_name(a->array.dtype));
            for (int j = 0; j < a->array.rank && j < TILE_MAX_DIMS; j++)
                ts_printf(&b, "%s%llu", j ? "x" : "", (unsigned long long)tune_pow2_ceil(a->array.shape[j]));
            ts_printf(&b, "]");
        } else {
            ts_printf(&b, "%s", tile_dtype_name(a->dtype));
        }
    }
    ts_printf(&b, "|");
    /* fixed constants, sorted by name so their order does not matter */
    const char *last = "";
    for (int n = 0; n < nfixed; n++) {
        const tile_const *next = NULL;
        for (int i = 0; i < nfixed; i++)
            if (strcmp(fixed[i].name, last) > 0 && (!next || strcmp(fixed[i].name, next->name) < 0)) next = &fixed[i];
        if (!next) break;
        if (next->kind == TILE_CONST_FLOAT) ts_printf(&b, "%s%s=%a", n ? "," : "", next->name, next->f);
        else if (next->kind == TILE_CONST_DTYPE)
            ts_printf(&b, "%s%s=%s", n ? "," : "", next->name, tile_dtype_name((tile_dtype)next->i));
        else ts_printf(&b, "%s%s=%lld", n ? "," : "", next->name, (long long)next->i);
        last = next->name;
    }
    for (char *p = b.s; *p; p++)   /* one line in the cache file */
        if (*p == '\n' || *p == '\r') *p = '?';
    t->key = b.s;
}

/* ---- the cache entry --------------------------------------------------- */

static void tune_pick_cache(Tuner *t) {
    char dir[4096], path[4300];
    if (!disk_cache_resolve_dir(t->opt.cache_dir, dir, sizeof dir)) return;
    if (!disk_cache_path(dir, TUNE_CACHE_KIND, t->key, path, sizeof path)) return;
    t->cache_dir = arena_strdup(&t->arena, dir);
    t->cache_path = arena_strdup(&t->arena, path);
}

/* The point of the space the constants name, or -1. */
static int tune_point_index(const Tuner *t, const tile_const *consts) {
    int index = 0;
    for (int i = 0; i < t->naxes; i++) {
        int found = -1;
        for (int v = 0; v < t->axes[i].nvalues && found < 0; v++)
            if (tune_const_equal(&t->axes[i].values[v], &consts[i])) found = v;
        if (found < 0) return -1;
        index = index * t->axes[i].nvalues + found;
    }
    return index;
}

typedef enum TuneLookup { TUNE_MISS, TUNE_HIT, TUNE_CORRUPT } TuneLookup;

/* Where disk_cache_get reports an entry it had to ignore. */
typedef struct TuneDamage {
    bool seen;
    char why[160];
} TuneDamage;

static void tune_note_damage(void *user, const char *path, const char *why) {
    TuneDamage *d = user;
    d->seen = true;
    snprintf(d->why, sizeof d->why, "%s", why);
}

/* Parses the payload (NUL-terminated text); on success sets *point and *ms. */
static TuneLookup tune_parse_entry(Tuner *t, char *buf, size_t len, int *point, float *ms, char *why, size_t nwhy) {
    if (strlen(buf) != len) return snprintf(why, nwhy, "contains a NUL byte"), TUNE_CORRUPT;
    char *line = buf, *next, extra;
    int lineno = 0, nconsts = 0;
    tile_const *consts = ARENA_ARRAY(&t->arena, tile_const, t->naxes > 0 ? t->naxes : 1);
    bool ms_seen = false;
    for (; *line; line = next) {
        next = strchr(line, '\n');
        if (!next) return snprintf(why, nwhy, "unterminated line"), TUNE_CORRUPT;
        *next++ = '\0';
        lineno++;
        if (lineno == 1) {
            if (strcmp(line, TUNE_ENTRY_HEADER) != 0) return snprintf(why, nwhy, "bad header"), TUNE_CORRUPT;
        } else if (strncmp(line, "ms ", 3) == 0 && !ms_seen) {
            char *e;
            double v = strtod(line + 3, &e);
            if (e == line + 3 || *e || !(v >= 0)) return snprintf(why, nwhy, "bad time on line %d", lineno), TUNE_CORRUPT;
            *ms = (float)v;
            ms_seen = true;
        } else if (strncmp(line, "const ", 6) == 0) {
            if (nconsts >= t->naxes) return snprintf(why, nwhy, "too many constants"), TUNE_CORRUPT;
            char name[128], kind[4], value[64];
            if (sscanf(line, "const %127s %3s %63s%c", name, kind, value, &extra) != 3)
                return snprintf(why, nwhy, "bad constant on line %d", lineno), TUNE_CORRUPT;
            tile_const *c = &consts[nconsts];
            memset(c, 0, sizeof *c);
            c->name = t->axes[nconsts].name;
            if (strcmp(name, c->name) != 0) return snprintf(why, nwhy, "unexpected constant '%s'", name), TUNE_CORRUPT;
            char *e;
            errno = 0;
            if (strcmp(kind, "i") == 0) c->i = strtoll(value, &e, 10);
            else if (strcmp(kind, "f") == 0) c->kind = TILE_CONST_FLOAT, c->f = strtod(value, &e);
            else return snprintf(why, nwhy, "bad constant kind on line %d", lineno), TUNE_CORRUPT;
            if (*e || errno) return snprintf(why, nwhy, "bad constant value on line %d", lineno), TUNE_CORRUPT;
            nconsts++;
        } else {
            return snprintf(why, nwhy, "unexpected line %d", lineno), TUNE_CORRUPT;
        }
    }
    if (!ms_seen || nconsts != t->naxes) return snprintf(why, nwhy, "incomplete entry"), TUNE_CORRUPT;
    *point = tune_point_index(t, consts);
    if (*point < 0) return snprintf(why, nwhy, "the stored winner is not a point of the space"), TUNE_CORRUPT;
    return TUNE_HIT;
}

/* Looks the key up; on a hit sets *point and *ms.  `why` explains a corrupt entry. */
static TuneLookup tune_cache_read(Tuner *t, int *point, float *ms, char *why, size_t nwhy) {
    TuneDamage damage = {false, ""};
    void *data = NULL;
    size_t size = 0;
    if (!disk_cache_get(t->cache_dir, TUNE_CACHE_KIND, t->key, &data, &size, tune_note_damage, &damage)) {
        if (!damage.seen) return TUNE_MISS;
        snprintf(why, nwhy, "%s", damage.why);
        return TUNE_CORRUPT;
    }
    TuneLookup found = size > TUNE_MAX_CACHE_ENTRY ? (snprintf(why, nwhy, "too large"), TUNE_CORRUPT)
                                                   : tune_parse_entry(t, data, size, point, ms, why, nwhy);
    free(data);
    return found;
}

/* Stores the winner; false (with the reason in `why`) if it cannot. */
static bool tune_cache_write(Tuner *t, const tile_const *consts, float ms, char *why, size_t nwhy) {
    TuneStr b = {&t->arena, NULL, 0, 0};
    ts_printf(&b, TUNE_ENTRY_HEADER "\nms %a\n", (double)ms);
    for (int i = 0; i < t->naxes; i++) {
        if (consts[i].kind == TILE_CONST_FLOAT) ts_printf(&b, "const %s f %a\n", consts[i].name, consts[i].f);
        else ts_printf(&b, "const %s i %lld\n", consts[i].name, (long long)consts[i].i);
    }
    return disk_cache_put(t->cache_dir, TUNE_CACHE_KIND, t->key, b.s, b.len, why, nwhy);
}

/* ---- timing ------------------------------------------------------------ */

static int tune_cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* The first line of the context's last error, kept in the arena. */
static char *tune_reason(Tuner *t, const char *stage) {
    const char *msg = tile_ctx_last_error(t->ctx);
    size_t n = strcspn(msg, "\n");
    return arena_printf(&t->arena, "%s: %.*s", stage, (int)n, msg);
}

typedef struct TuneTimer {
    tile_event *start, *end;
    void *scratch;            /* L2 flush buffer, or NULL */
    size_t scratch_bytes;
} TuneTimer;

static void tune_time_point(Tuner *t, TuneTimer *tm, const tile_const *consts, tile_grid_fn grid_fn, void *user,
                            const tile_arg *args, int nargs, TunePoint *out) {
    tile_kernel *k = NULL;
    tile_status st = tile_kernel_get(t->mod, t->kernel, consts, t->naxes, &k);
    if (st != TILE_OK) {
        out->why = tune_reason(t, st == TILE_ERR_COMPILE ? "compile" : "specialise");
        return;
    }
    int grid[3] = {1, 1, 1};
    grid_fn(consts, t->naxes, grid, user);
    for (int w = 0; w < t->opt.warmup && st == TILE_OK; w++) st = tile_launch(k, grid, args, nargs, NULL);
    if (st == TILE_OK) st = tile_synchronize(t->ctx);
    float *times = ARENA_ARRAY(&t->arena, float, t->opt.repeat);
    for (int r = 0; r < t->opt.repeat && st == TILE_OK; r++) {
        if (tm->scratch) st = tile_memset(t->ctx, tm->scratch, r & 0xff, tm->scratch_bytes);
        if (st == TILE_OK) st = tile_event_record(tm->start, NULL);
        if (st == TILE_OK) st = tile_launch(k, grid, args, nargs, NULL);
        if (st == TILE_OK) st = tile_event_record(tm->end, NULL);
        if (st == TILE_OK) st = tile_event_elapsed_ms(tm->start, tm->end, &times[r]);
    }
    if (st != TILE_OK) {
        out->why = tune_reason(t, "launch");
        tile_synchronize(t->ctx);   /* leave nothing in flight for the next point */
        return;
    }
    qsort(times, (size_t)t->opt.repeat, sizeof *times, tune_cmp_float);
    out->ok = 1;
    out->ms = times[t->opt.repeat / 2];
}

/* Compiles points first .. first + TUNE_PREFETCH_POINTS - 1 ahead, on
 * several threads where the backend can (tile_kernel_prefetch), for the
 * arrays they will be timed on; each is then timed as it comes, its kernel
 * already compiled. */
static void tune_prefetch(Tuner *t, int first, const tile_arg *args, int nargs) {
    int n = t->npoints - first < TUNE_PREFETCH_POINTS ? t->npoints - first : TUNE_PREFETCH_POINTS;
    int naxes = t->naxes > 0 ? t->naxes : 1;
    tile_kernel_request reqs[TUNE_PREFETCH_POINTS];
    tile_const *consts = ARENA_ARRAY(&t->arena, tile_const, (size_t)n * (size_t)naxes);
    for (int i = 0; i < n; i++) {
        tune_point_consts(t, first + i, consts + (size_t)i * (size_t)naxes);
        reqs[i] = (tile_kernel_request){t->mod, t->kernel, consts + (size_t)i * (size_t)naxes, t->naxes, args, nargs};
    }
    (void)tile_kernel_prefetch(t->ctx, reqs, n);   /* (best effort: each point's own get says what fails) */
}

static tile_status tune_search(Tuner *t, tile_grid_fn grid_fn, void *user, const tile_arg *args, int nargs,
                               tile_tune_stats *stats, int *winner) {
    TuneTimer tm = {0};
    tile_status st = tile_event_create(t->ctx, &tm.start);
    if (st == TILE_OK) st = tile_event_create(t->ctx, &tm.end);
    if (st != TILE_OK) {
        tile_event_destroy(tm.start);
        return st;
    }
    if (t->opt.flush_l2 && t->ctx->kind == TILE_BACKEND_CUDA) {
        if (tile_malloc(t->ctx, TUNE_L2_SCRATCH_BYTES, &tm.scratch) == TILE_OK) tm.scratch_bytes = TUNE_L2_SCRATCH_BYTES;
        else tune_verbose(t, "  (no memory for the L2 flush buffer; timing without flushing)\n");
    }
    tune_verbose(t, "tune '%s' on %s: %d point%s, %d warm-up, median of %d%s\n", t->kernel,
                 tile_ctx_device_name(t->ctx), t->npoints, t->npoints == 1 ? "" : "s", t->opt.warmup,
                 t->opt.repeat, tm.scratch ? ", L2 flushed" : "");

    TunePoint *points = ARENA_ARRAY(&t->arena, TunePoint, t->npoints);
    tile_const *consts = ARENA_ARRAY(&t->arena, tile_const, t->naxes > 0 ? t->naxes : 1);
    *winner = -1;
    for (int p = 0; p < t->npoints; p++) {
        if (p % TUNE_PREFETCH_POINTS == 0) tune_prefetch(t, p, args, nargs);
        tune_point_consts(t, p, consts);
        tune_time_point(t, &tm, consts, grid_fn, user, args, nargs, &points[p]);
        const char *label = tune_point_label(t, consts);
        if (points[p].ok) {
            stats->ntimed++;
            tune_verbose(t, "  %-40s %12.4f ms\n", label, points[p].ms);
            if (*winner < 0 || points[p].ms < points[*winner].ms) *winner = p;
        } else {
            stats->nskipped++;
            tune_verbose(t, "  %-40s skipped (%s)\n", label, points[p].why);
        }
    }
    tile_event_destroy(tm.start);
    tile_event_destroy(tm.end);
    if (tm.scratch) tile_free(t->ctx, tm.scratch);

    if (*winner < 0) {   /* explain every skip (the first few) */
        TuneStr b = {&t->arena, NULL, 0, 0};
        ts_printf(&b, "tile_tune: no point of the tune space of '%s' compiled and ran:", t->kernel);
        for (int p = 0; p < t->npoints && p < TUNE_MAX_SKIP_LINES; p++) {
            tune_point_consts(t, p, consts);
            ts_printf(&b, "\n  %s: %s", tune_point_label(t, consts), points[p].why);
        }
        if (t->npoints > TUNE_MAX_SKIP_LINES) ts_printf(&b, "\n  ... (%d more)", t->npoints - TUNE_MAX_SKIP_LINES);
        return tile_error(t->ctx, TILE_ERR_COMPILE, "%s", b.s);
    }
    stats->best_ms = points[*winner].ms;
    return TILE_OK;
}

/* ---- the entry point --------------------------------------------------- */

static tile_status tune_check_call(tile_module *mod, const char *kernel, const tile_const *fixed, int nfixed,
                                   const tile_arg *args, int nargs,
                                   const tile_tune_options *opt, tile_kernel **best, tile_const *best_consts,
                                   int *nbest) {
    if (!mod) return TILE_ERR_INVALID_ARG;
    tile_ctx *ctx = mod->ctx;
    if (mod->magic == TILE_MAGIC_DEAD)
        return tile_error(ctx, TILE_ERR_INVALID_ARG, "tile_tune: the module was released");
    if (mod->magic != TILE_MAGIC_MODULE || !ctx || ctx->magic != TILE_MAGIC_CTX) return TILE_ERR_INVALID_ARG;
    if (!ctx->ops) return tile_error(ctx, TILE_ERR_INVALID_ARG, "tile_tune: the context has no backend");
    if (!best) return tile_error(ctx, TILE_ERR_INVALID_ARG, "tile_tune: best is NULL");
    *best = NULL;
    if (!kernel) return tile_error(ctx, TILE_ERR_INVALID_ARG, "tile_tune: kernel name is NULL");
    if (nfixed < 0 || (nfixed > 0 && !fixed))
        return tile_error(ctx, TILE_ERR_INVALID_ARG, "tile_tune: bad fixed constant list (%d entries)", nfixed);
    if (nargs < 0 || (nargs > 0 && !args))
        return tile_error(ctx, TILE_ERR_INVALID_ARG, "tile_tune: bad argument list (%d entries)", nargs);
    if (best_consts && !nbest)
        return tile_error(ctx, TILE_ERR_INVALID_ARG, "tile_tune: best_consts given without nbest (its capacity)");
    if (opt && (opt->warmup < 0 || opt->repeat < 1))
        return tile_error(ctx, TILE_ERR_INVALID_ARG, "tile_tune: warmup must be >= 0 and repeat >= 1 (got %d, %d)",
                          opt->warmup, opt->repeat);
    if (!tune_find_decl(mod->program, DECL_KERNEL, kernel)) {
        /* tile_kernel_get words the message (it lists the kernels) */
        tile_kernel *k;
        return tile_kernel_get(mod, kernel, NULL, 0, &k);
    }
    return TILE_OK;
}

tile_status tile_tune(tile_module *mod, const char *kernel, const tile_const *fixed, int nfixed,
                      tile_grid_fn grid_fn, void *user, const tile_arg *args, int nargs,
                      const tile_tune_options *opt, tile_kernel **best, tile_const *best_consts,
                      int *nbest) {
    tile_status st = tune_check_call(mod, kernel, fixed, nfixed, args, nargs, opt, best, best_consts, nbest);
    if (st != TILE_OK) return st;
    if (!grid_fn) return tile_error(mod->ctx, TILE_ERR_INVALID_ARG, "tile_tune: grid_fn is NULL");
    Tuner t;
    memset(&t, 0, sizeof t);
    t.mod = mod;
    t.ctx = mod->ctx;
    t.kernel = kernel;
    t.opt = opt ? *opt : tile_tune_default_options();
    t.log = t.opt.log ? (FILE *)t.opt.log : stderr;
    tile_tune_stats stats;
    memset(&stats, 0, sizeof stats);
    arena_init(&t.arena);

    st = tune_build_space(&t, fixed, nfixed);
    if (st == TILE_OK && best_consts && *nbest < t.naxes)
        st = tile_error(t.ctx, TILE_ERR_INVALID_ARG, "tile_tune: best_consts holds %d constants, %d needed", *nbest,
                        t.naxes);
    if (st != TILE_OK) goto done;
    stats.npoints = t.npoints;
    tune_make_key(&t, fixed, nfixed, args, nargs);
    tune_pick_cache(&t);

    int winner = -1;
    tile_const *consts = ARENA_ARRAY(&t.arena, tile_const, t.naxes > 0 ? t.naxes : 1);
    if (t.cache_path && !t.opt.force) {
        char why[256] = "";
        float ms = 0;
        TuneLookup found = tune_cache_read(&t, &winner, &ms, why, sizeof why);
        if (found == TUNE_CORRUPT) {
            stats.cache_corrupt = 1;
            tune_warn(&t, "tune cache file %s is corrupt (%s); ignoring it", t.cache_path, why);
            winner = -1;
        } else if (found == TUNE_HIT) {
            tune_point_consts(&t, winner, consts);
            if (tile_kernel_get(mod, kernel, consts, t.naxes, best) == TILE_OK) {
                stats.cache_hit = 1;
                stats.best_ms = ms;
                tune_verbose(&t, "tune '%s': cached winner %s (%.4f ms) from %s\n", kernel,
                             tune_point_label(&t, consts), ms, t.cache_path);
            } else {
                tune_warn(&t, "the cached winner of '%s' in %s no longer compiles; tuning again", kernel, t.cache_path);
                winner = -1;
            }
        } else {
            winner = -1;
        }
    }
    if (!stats.cache_hit) {
        st = tune_search(&t, grid_fn, user, args, nargs, &stats, &winner);
        if (st != TILE_OK) goto done;
        tune_point_consts(&t, winner, consts);
        st = tile_kernel_get(mod, kernel, consts, t.naxes, best);   /* compiled already: from the module's cache */
        if (st != TILE_OK) goto done;
        char why[512] = "";
        if (t.cache_path && tune_cache_write(&t, consts, stats.best_ms, why, sizeof why)) stats.cache_stored = 1;
        else if (t.cache_path) tune_verbose(&t, "  (not cached: %s)\n", why);
        tune_verbose(&t, "tune '%s': best %s (%.4f ms)%s%s\n", kernel, tune_point_label(&t, consts), stats.best_ms,
                     stats.cache_stored ? ", cached in " : "", stats.cache_stored ? t.cache_path : "");
    }
    if (best_consts) {
        for (int i = 0; i < t.naxes; i++) best_consts[i] = consts[i];
        *nbest = t.naxes;
    }
done:
    if (st != TILE_OK && best) *best = NULL;
    if (t.opt.stats) *t.opt.stats = stats;
    if (t.opt.verbose || stats.cache_corrupt) fflush(t.log);
    arena_free(&t.arena);
    return st;
}

tile_status tile_tune_space(tile_module *mod, const char *kernel, const tile_const *fixed, int nfixed,
                            int index, int *npoints, tile_const *consts, int *nconsts) {
    tile_kernel *unused;
    tile_status st = tune_check_call(mod, kernel, fixed, nfixed, NULL, 0, NULL, &unused, NULL, NULL);
    if (st != TILE_OK) return st;
    if (!npoints) return tile_error(mod->ctx, TILE_ERR_INVALID_ARG, "tile_tune_space: npoints is NULL");
    if (consts && !nconsts)
        return tile_error(mod->ctx, TILE_ERR_INVALID_ARG, "tile_tune_space: consts given without nconsts");
    Tuner t;
    memset(&t, 0, sizeof t);
    t.mod = mod;
    t.ctx = mod->ctx;
    t.kernel = kernel;
    arena_init(&t.arena);
    st = tune_build_space(&t, fixed, nfixed);
    if (st == TILE_OK) {
        *npoints = t.npoints;
        if (consts && (index < 0 || index >= t.npoints))
            st = tile_error(t.ctx, TILE_ERR_INVALID_ARG, "tile_tune_space: point %d of %d", index, t.npoints);
        else if (consts && *nconsts < t.naxes)
            st = tile_error(t.ctx, TILE_ERR_INVALID_ARG, "tile_tune_space: consts holds %d constants, %d needed",
                            *nconsts, t.naxes);
        else if (consts) {
            tune_point_consts(&t, index, consts);
            *nconsts = t.naxes;
        }
    }
    arena_free(&t.arena);
    return st;
}
