/* runtime.c: the backend-independent half of libtile (see tile.h, backend.h):
 * errors, contexts, module loading, kernel specialisation and its cache, the
 * argument checks of tile_launch, and the thin memory / event wrappers. */
#include "backend.h"
#include "lower.h"
#include "passes.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* tile_dtype must stay in DType's order: values cross the boundary as ints. */
#define X(id, name, size) _Static_assert((int)TILE_##id == (int)DT_##id, "tile_dtype order: " #id);
DTYPE_LIST(X)
#undef X
_Static_assert((int)TILE_DTYPE_COUNT == (int)DT_COUNT, "tile_dtype count");
_Static_assert(TILE_MAX_DIMS == TILE_MAX_RANK, "rank limits agree");

/* Until runtime/cuda_backend.c exists, a weak stand-in keeps the library
 * linkable where the toolkit is present.  (Only when the file is absent: a weak
 * definition here would stop the linker from pulling the real one out of the
 * static library.) */
#ifdef TILE_HAVE_CUDA
#if defined(__has_include)
#if __has_include("cuda_backend.c")
#define TILE_CUDA_SOURCE_PRESENT 1
#endif
#endif
#ifndef TILE_CUDA_SOURCE_PRESENT
__attribute__((weak)) const tile_backend_ops *tile_cuda_backend(void) { return NULL; }
#endif
#endif

/* ---- errors ----------------------------------------------------------- */

tile_status tile_error(tile_ctx *ctx, tile_status status, const char *fmt, ...) {
    if (!ctx) return status;
    va_list ap;
    va_start(ap, fmt);
    char small[512];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    char *msg = malloc(n < 0 ? 1 : (size_t)n + 1);
    if (msg) {
        if (n >= (int)sizeof small) {
            va_start(ap, fmt);
            vsnprintf(msg, (size_t)n + 1, fmt, ap);
            va_end(ap);
        } else {
            memcpy(msg, n < 0 ? "" : small, n < 0 ? 1 : (size_t)n + 1);
        }
    }
    free(ctx->error);
    ctx->error = msg;
    ctx->error_status = status;
    return status;
}

void tile_error_append(tile_ctx *ctx, const char *text) {
    if (!ctx || !text || !*text) return;
    size_t old = ctx->error ? strlen(ctx->error) : 0, add = strlen(text);
    char *msg = realloc(ctx->error, old + add + 1);
    if (!msg) return;
    memcpy(msg + old, text, add + 1);
    ctx->error = msg;
}

const char *tile_status_name(tile_status s) {
    switch (s) {
    case TILE_OK: return "TILE_OK";
    case TILE_ERR_INVALID_ARG: return "TILE_ERR_INVALID_ARG";
    case TILE_ERR_COMPILE: return "TILE_ERR_COMPILE";
    case TILE_ERR_LAUNCH: return "TILE_ERR_LAUNCH";
    case TILE_ERR_NO_DEVICE: return "TILE_ERR_NO_DEVICE";
    case TILE_ERR_UNSUPPORTED: return "TILE_ERR_UNSUPPORTED";
    case TILE_ERR_IO: return "TILE_ERR_IO";
    case TILE_ERR_NO_MEMORY: return "TILE_ERR_NO_MEMORY";
    case TILE_ERR_INTERNAL: return "TILE_ERR_INTERNAL";
    case TILE_ERR_NOT_FOUND: return "TILE_ERR_NOT_FOUND";
    }
    return "TILE_ERR_UNKNOWN";
}

/* ---- dtypes, arrays, arguments ----------------------------------------- */

static int dtype_valid(tile_dtype t) { return (int)t >= 0 && t < TILE_DTYPE_COUNT; }

const char *tile_dtype_name(tile_dtype t) { return dtype_valid(t) ? dtype_name((DType)t) : "?"; }
int tile_dtype_size(tile_dtype t) { return dtype_valid(t) ? dtype_size((DType)t) : 0; }

int tile_dtype_from_name(const char *name, tile_dtype *out) {
    DType d = name ? dtype_from_name(name) : DT_INVALID;
    if (d == DT_INVALID) return 0;
    *out = (tile_dtype)d;
    return 1;
}

tile_array tile_array_contiguous(void *data, tile_dtype dtype, int rank, const int64_t *shape) {
    tile_array a;
    memset(&a, 0, sizeof a);
    a.data = data;
    a.dtype = dtype;
    a.rank = rank < 0 ? 0 : rank > TILE_MAX_DIMS ? TILE_MAX_DIMS : rank;
    int64_t stride = 1;
    for (int i = a.rank - 1; i >= 0; i--) {
        a.shape[i] = shape ? shape[i] : 0;
        a.strides[i] = stride;
        if (__builtin_mul_overflow(stride, a.shape[i] > 0 ? a.shape[i] : 1, &stride)) stride = INT64_MAX;   /* no UB on huge shapes */
    }
    a.rank = rank;   /* an invalid rank is kept so tile_launch can report it */
    return a;
}

int64_t tile_array_numel(const tile_array *a) {
    int64_t n = 1;
    for (int i = 0; i < a->rank && i < TILE_MAX_DIMS; i++)
        if (__builtin_mul_overflow(n, a->shape[i], &n)) return INT64_MAX;   /* saturates */
    return n;
}

tile_arg tile_arg_array(tile_array a) {
    tile_arg g;
    memset(&g, 0, sizeof g);
    g.kind = TILE_ARG_ARRAY;
    g.array = a;
    g.dtype = a.dtype;
    return g;
}

static tile_arg scalar_arg(tile_dtype dt) {
    tile_arg g;
    memset(&g, 0, sizeof g);
    g.kind = TILE_ARG_SCALAR;
    g.dtype = dt;
    return g;
}
tile_arg tile_arg_bool(int v) { tile_arg g = scalar_arg(TILE_BOOL); g.value.i = v != 0; return g; }
tile_arg tile_arg_i32(int32_t v) { tile_arg g = scalar_arg(TILE_I32); g.value.i = v; return g; }
tile_arg tile_arg_i64(int64_t v) { tile_arg g = scalar_arg(TILE_I64); g.value.i = v; return g; }
tile_arg tile_arg_u32(uint32_t v) { tile_arg g = scalar_arg(TILE_U32); g.value.u = v; return g; }
tile_arg tile_arg_u64(uint64_t v) { tile_arg g = scalar_arg(TILE_U64); g.value.u = v; return g; }
tile_arg tile_arg_f32(float v) { tile_arg g = scalar_arg(TILE_F32); g.value.f = v; return g; }
tile_arg tile_arg_f64(double v) { tile_arg g = scalar_arg(TILE_F64); g.value.f = v; return g; }
tile_const tile_const_dtype(const char *name, tile_dtype t) {
    tile_const c = {name, TILE_CONST_DTYPE, (int64_t)t, 0};
    return c;
}

/* ---- contexts ---------------------------------------------------------- */

static int ctx_live(const tile_ctx *ctx) { return ctx && ctx->magic == TILE_MAGIC_CTX; }

tile_status tile_ctx_create(tile_ctx **out, tile_backend_kind backend, int device) {
    if (!out) return TILE_ERR_INVALID_ARG;
    *out = NULL;
    tile_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return TILE_ERR_NO_MEMORY;
    ctx->magic = TILE_MAGIC_CTX;
    ctx->kind = backend;
    ctx->device = device;
    *out = ctx;
    const tile_backend_ops *ops = NULL;
    if (backend == TILE_BACKEND_CPU) {
        ops = tile_cpu_backend();
    } else if (backend == TILE_BACKEND_EMU) {
        ops = tile_emu_backend();
    } else if (backend == TILE_BACKEND_CUDA) {
#ifdef TILE_HAVE_CUDA
        ops = tile_cuda_backend();
        if (!ops)
            return tile_error(ctx, TILE_ERR_UNSUPPORTED, "CUDA backend not built yet");
#else
        return tile_error(ctx, TILE_ERR_UNSUPPORTED,
                          "CUDA backend not built (no CUDA toolkit at build time)");
#endif
    } else {
        return tile_error(ctx, TILE_ERR_INVALID_ARG, "unknown backend kind %d", (int)backend);
    }
    if (device < 0)
        return tile_error(ctx, TILE_ERR_INVALID_ARG, "device number %d is negative", device);
    tile_status st = ops->init(ctx, device);
    if (st != TILE_OK) return st;   /* init recorded the message */
    ctx->ops = ops;
    return TILE_OK;
}

static void module_free_contents(tile_module *mod);

void tile_ctx_destroy(tile_ctx *ctx) {
    if (!ctx_live(ctx)) return;
    tile_module *m = ctx->modules;
    while (m) {
        tile_module *next = m->next;
        if (m->magic == TILE_MAGIC_MODULE) module_free_contents(m);
        for (tile_kernel *k = m->kernels; k;) {   /* shells of released kernels */
            tile_kernel *kn = k->next;
            free(k);
            k = kn;
        }
        free(m);
        m = next;
    }
    if (ctx->ops) ctx->ops->destroy(ctx);
    free(ctx->error);
    ctx->magic = TILE_MAGIC_DEAD;
    free(ctx);
}

const char *tile_ctx_last_error(const tile_ctx *ctx) {
    if (!ctx) return "no context (tile_ctx_create failed to allocate one)";
    if (ctx->magic != TILE_MAGIC_CTX) return "not a live tile context";
    return ctx->error ? ctx->error : "";
}

tile_backend_kind tile_ctx_backend(const tile_ctx *ctx) { return ctx ? ctx->kind : (tile_backend_kind)0; }

const char *tile_ctx_device_name(const tile_ctx *ctx) {
    if (!ctx_live(ctx) || !ctx->ops) return "none";
    return ctx->ops->device_name((tile_ctx *)ctx);
}

const char *tile_ctx_codegen_tag(const tile_ctx *ctx) {
    if (!ctx_live(ctx) || !ctx->ops || !ctx->ops->codegen_tag) return "";
    const char *tag = ctx->ops->codegen_tag((tile_ctx *)ctx);
    return tag ? tag : "";
}

int tile_ctx_multiprocessors(const tile_ctx *ctx) {
    if (!ctx_live(ctx) || !ctx->ops || !ctx->ops->multiprocessors) return 0;
    return ctx->ops->multiprocessors((tile_ctx *)ctx);
}

tile_status tile_ctx_set_print_file(tile_ctx *ctx, void *file) {
    if (!ctx_live(ctx)) return TILE_ERR_INVALID_ARG;
    ctx->print_out = file;
    return TILE_OK;
}

tile_status tile_ctx_set_step_limit(tile_ctx *ctx, int64_t max_steps) {
    if (!ctx_live(ctx)) return TILE_ERR_INVALID_ARG;
    if (max_steps < 0)
        return tile_error(ctx, TILE_ERR_INVALID_ARG, "step limit %lld is negative", (long long)max_steps);
    ctx->max_steps = max_steps;
    return TILE_OK;
}

/* Checks a context before a call; the message goes into it when it is usable. */
static tile_status ctx_check(tile_ctx *ctx, const char *what) {
    if (!ctx) return TILE_ERR_INVALID_ARG;
    if (ctx->magic != TILE_MAGIC_CTX) return TILE_ERR_INVALID_ARG;
    if (!ctx->ops)
        return tile_error(ctx, TILE_ERR_INVALID_ARG,
                          "%s: the context has no backend (tile_ctx_create failed)", what);
    return TILE_OK;
}

/* ---- modules ----------------------------------------------------------- */

static uint64_t fnv1a(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static char *xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

/* Takes ownership of `source` (malloc'd). */
static tile_status module_create(tile_ctx *ctx, const char *name, char *source, tile_module **out) {
    tile_module *mod = calloc(1, sizeof *mod);
    char *name_copy = xstrdup(name);
    if (!mod || !name_copy) {
        free(mod);
        free(name_copy);
        free(source);
        return tile_error(ctx, TILE_ERR_NO_MEMORY, "out of memory loading %s", name);
    }
    mod->ctx = ctx;
    mod->name = name_copy;
    mod->source = source;
    mod->source_hash = fnv1a(source);
    arena_init(&mod->arena);

    Diag d;
    diag_init(&d, mod->name, mod->source);
    mod->program = parse_program(&mod->arena, &d, mod->name, mod->source);
    if (d.nerrors == 0 && mod->program) lower_check_program(&mod->arena, &d, mod->program);
    if (d.nerrors > 0 || !mod->program) {
        tile_status st = tile_error(ctx, TILE_ERR_COMPILE, "%s",
                                    *diag_text(&d) ? diag_text(&d) : "the program could not be parsed\n");
        diag_free(&d);
        arena_free(&mod->arena);
        free(mod->name);
        free(mod->source);
        free(mod);
        return st;
    }
    diag_free(&d);
    mod->magic = TILE_MAGIC_MODULE;
    mod->next = ctx->modules;
    ctx->modules = mod;
    *out = mod;
    return TILE_OK;
}

tile_status tile_module_load_string(tile_ctx *ctx, const char *name, const char *source,
                                    tile_module **mod) {
    tile_status st = ctx_check(ctx, "tile_module_load_string");
    if (st != TILE_OK) return st;
    if (!mod) return tile_error(ctx, TILE_ERR_INVALID_ARG, "tile_module_load_string: mod is NULL");
    *mod = NULL;
    if (!source) return tile_error(ctx, TILE_ERR_INVALID_ARG, "tile_module_load_string: source is NULL");
    char *copy = xstrdup(source);
    if (!copy) return tile_error(ctx, TILE_ERR_NO_MEMORY, "out of memory");
    return module_create(ctx, name ? name : "<string>", copy, mod);
}

tile_status tile_module_load_file(tile_ctx *ctx, const char *path, tile_module **mod) {
    tile_status st = ctx_check(ctx, "tile_module_load_file");
    if (st != TILE_OK) return st;
    if (!mod) return tile_error(ctx, TILE_ERR_INVALID_ARG, "tile_module_load_file: mod is NULL");
    *mod = NULL;
    if (!path) return tile_error(ctx, TILE_ERR_INVALID_ARG, "tile_module_load_file: path is NULL");
    char *buf, err[512];
    switch (read_text_file(path, &buf, err, sizeof err)) {
    case READ_OK: return module_create(ctx, path, buf, mod);
    case READ_NO_MEMORY: return tile_error(ctx, TILE_ERR_NO_MEMORY, "%s", err);
    case READ_NUL_BYTE: return tile_error(ctx, TILE_ERR_COMPILE, "%s: error: the file contains a NUL byte", path);
    case READ_IO_ERROR: break;
    }
    return tile_error(ctx, TILE_ERR_IO, "%s", err);
}

static void module_free_contents(tile_module *mod) {
    tile_ctx *ctx = mod->ctx;
    for (tile_kernel *k = mod->kernels; k; k = k->next) {
        if (k->magic != TILE_MAGIC_KERNEL) continue;
        if (ctx->ops && ctx->ops->release_kernel) ctx->ops->release_kernel(ctx, k);
        arena_free(&k->arena);
        free(k->key);
        k->key = NULL;
        k->ir = NULL;
        k->magic = TILE_MAGIC_DEAD;
    }
    for (tile_kernel_alias *a = mod->aliases; a;) {
        tile_kernel_alias *next = a->next;
        free(a->key);
        free(a);
        a = next;
    }
    mod->aliases = NULL;
    arena_free(&mod->arena);
    mod->program = NULL;
    free(mod->name);
    free(mod->source);
    mod->name = mod->source = NULL;
    mod->magic = TILE_MAGIC_DEAD;
}

/* The module's memory goes now; its shell (and its kernels' shells) stay in the
 * context so that a later use is reported instead of touching freed memory. */
void tile_module_release(tile_module *mod) {
    if (!mod || mod->magic != TILE_MAGIC_MODULE) return;
    module_free_contents(mod);
}

static const Decl *find_kernel_decl(const tile_module *mod, const char *name) {
    for (const Decl *d = mod->program->decls; d; d = d->next)
        if (d->kind == DECL_KERNEL && strcmp(d->name, name) == 0) return d;
    return NULL;
}

int tile_module_num_kernels(const tile_module *mod) {
    if (!mod || mod->magic != TILE_MAGIC_MODULE) return 0;
    int n = 0;
    for (const Decl *d = mod->program->decls; d; d = d->next) n += d->kind == DECL_KERNEL;
    return n;
}

const char *tile_module_kernel_name(const tile_module *mod, int i) {
    if (!mod || mod->magic != TILE_MAGIC_MODULE || i < 0) return NULL;
    for (const Decl *d = mod->program->decls; d; d = d->next)
        if (d->kind == DECL_KERNEL && i-- == 0) return d->name;
    return NULL;
}

/* ---- kernels ----------------------------------------------------------- */

/* A growable string for cache keys and messages. */
typedef struct StrBuf {
    char *s;
    size_t len, cap;
    int oom;
} StrBuf;

static void sb_printf(StrBuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(StrBuf *b, const char *fmt, ...) {
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->len;
        int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? room : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = 1;
            return;
        }
        if (b->s && (size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = (b->cap ? b->cap * 2 : 128) + (size_t)n;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->oom = 1;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
}

static int cmp_const_ptr(const void *a, const void *b) {
    const tile_const *x = *(const tile_const *const *)a, *y = *(const tile_const *const *)b;
    return strcmp(x->name, y->name);
}

static int cmp_irconst_ptr(const void *a, const void *b) {
    const IrConst *x = *(const IrConst *const *)a, *y = *(const IrConst *const *)b;
    return strcmp(x->name, y->name);
}

/* "name|A=i64|B=f0x1p-3" over the constants sorted by name. */
static char *request_key(const char *name, const tile_const *consts, int n) {
    StrBuf b = {0};
    const tile_const **sorted = malloc(sizeof *sorted * (size_t)(n > 0 ? n : 1));
    if (!sorted) return NULL;
    for (int i = 0; i < n; i++) sorted[i] = &consts[i];
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_const_ptr);
    sb_printf(&b, "%s", name);
    for (int i = 0; i < n; i++) {
        if (sorted[i]->kind == TILE_CONST_DTYPE) sb_printf(&b, "|%s=t%lld", sorted[i]->name, (long long)sorted[i]->i);
        else if (sorted[i]->kind == TILE_CONST_FLOAT) sb_printf(&b, "|%s=f%a", sorted[i]->name, sorted[i]->f);
        else sb_printf(&b, "|%s=i%lld", sorted[i]->name, (long long)sorted[i]->i);
    }
    free(sorted);
    if (b.oom) {
        free(b.s);
        return NULL;
    }
    return b.s;
}

/* The same form over the constants the kernel was specialised on (defaults
 * included), so requests that differ only in spelling share a kernel. */
static char *canonical_key(const IrFunc *f) {
    StrBuf b = {0};
    const IrConst **sorted = malloc(sizeof *sorted * (size_t)(f->nconsts > 0 ? f->nconsts : 1));
    if (!sorted) return NULL;
    for (int i = 0; i < f->nconsts; i++) sorted[i] = &f->consts[i];
    qsort(sorted, (size_t)f->nconsts, sizeof *sorted, cmp_irconst_ptr);
    sb_printf(&b, "%s#", f->name);
    for (int i = 0; i < f->nconsts; i++) {
        if (sorted[i]->is_dtype) sb_printf(&b, "|%s=t%s", sorted[i]->name, dtype_name(sorted[i]->type.dtype));
        else if (dtype_is_float(sorted[i]->type.dtype)) sb_printf(&b, "|%s=f%a", sorted[i]->name, sorted[i]->v.f);
        else sb_printf(&b, "|%s=i%lld", sorted[i]->name, (long long)sorted[i]->v.i);
    }
    /* Hints set by a binding alone (no constant parameter) change the compiled
     * kernel too, so they belong to the key (the autotuner varies them). */
    sb_printf(&b, "|@num_warps=%d|@occupancy=%d", f->num_warps, f->occupancy);
    free(sorted);
    if (b.oom) {
        free(b.s);
        return NULL;
    }
    return b.s;
}

static tile_status add_alias(tile_module *mod, char *key, tile_kernel *k) {
    tile_kernel_alias *a = malloc(sizeof *a);
    if (!a) {
        free(key);
        return tile_error(mod->ctx, TILE_ERR_NO_MEMORY, "out of memory");
    }
    a->key = key;
    a->kernel = k;
    a->next = mod->aliases;
    mod->aliases = a;
    return TILE_OK;
}

static int64_t double_to_i64_trunc(double f) {
    if (!(f == f)) return 0;
    if (f >= 9.2233720368547758e18) return INT64_MAX;
    if (f <= -9.2233720368547758e18) return INT64_MIN;
    return (int64_t)f;
}

static tile_status kernel_not_found(tile_module *mod, const char *name) {
    StrBuf b = {0};
    int n = 0;
    for (const Decl *d = mod->program->decls; d; d = d->next)
        if (d->kind == DECL_KERNEL) sb_printf(&b, "%s%s", n++ ? ", " : "", d->name);
    tile_status st = tile_error(mod->ctx, TILE_ERR_NOT_FOUND, "no kernel named '%s' in %s (%s%s)", name,
                                mod->name, n ? "kernels: " : "it has no kernels", b.s ? b.s : "");
    free(b.s);
    return st;
}

/* Checks constant list consts[0..n): named, distinct, of a known kind.
 * TILE_ERR_INVALID_ARG where it is not, with tile_kernel_get's message on
 * ctx where `report` (tile_kernel_prefetch skips such a request quietly). */
static tile_status check_consts(tile_ctx *ctx, const tile_const *consts, int n, bool report) {
#define BAD_CONSTS(...) return report ? tile_error(ctx, TILE_ERR_INVALID_ARG, __VA_ARGS__) : TILE_ERR_INVALID_ARG
    if (n < 0 || (n > 0 && !consts)) BAD_CONSTS("tile_kernel_get: bad constant list (%d entries)", n);
    for (int i = 0; i < n; i++) {
        if (!consts[i].name) BAD_CONSTS("tile_kernel_get: constant %d has no name", i);
        for (int j = 0; j < i; j++)
            if (strcmp(consts[i].name, consts[j].name) == 0) BAD_CONSTS("constant '%s' given twice", consts[i].name);
        if (consts[i].kind < TILE_CONST_INT || consts[i].kind > TILE_CONST_DTYPE)
            BAD_CONSTS("constant '%s': kind %d is none of int, float, dtype", consts[i].name, consts[i].kind);
        if (consts[i].kind == TILE_CONST_DTYPE && (consts[i].i < 0 || consts[i].i >= TILE_DTYPE_COUNT))
            BAD_CONSTS("constant '%s': %lld is not a tile_dtype", consts[i].name, (long long)consts[i].i);
    }
    return TILE_OK;
#undef BAD_CONSTS
}

/* Kernel `name` of `mod` specialised on the (checked) constants and
 * optimised, in `arena`; NULL with the diagnostics in *d. */
static IrFunc *specialise(tile_module *mod, const char *name, const tile_const *consts, int nconsts, Arena *arena,
                          Diag *d) {
    ConstBinding *binds = ARENA_ARRAY(arena, ConstBinding, nconsts > 0 ? nconsts : 1);   /* (zeroed below) */
    for (int i = 0; i < nconsts; i++) {
        memset(&binds[i], 0, sizeof binds[i]);
        binds[i].name = consts[i].name;
        const bool fl = consts[i].kind == TILE_CONST_FLOAT;
        binds[i].is_float = fl;
        binds[i].i = fl ? double_to_i64_trunc(consts[i].f) : consts[i].i;
        binds[i].f = fl ? consts[i].f : (double)consts[i].i;
        if (consts[i].kind == TILE_CONST_DTYPE) {
            binds[i].is_dtype = true;
            binds[i].dtype = (DType)consts[i].i;   /* the two enums agree (asserted above) */
        }
    }
    IrFunc *ir = lower_kernel(arena, d, mod->program, name, binds, nconsts);
    if (!ir || d->nerrors > 0) return NULL;
    passes_run(ir, NULL, NULL);
    return ir;
}

/* The module's compiled kernel of canonical key `canon`, or NULL. */
static tile_kernel *kernel_of_key(const tile_module *mod, const char *canon) {
    for (tile_kernel *k = mod->kernels; k; k = k->next)
        if (k->magic == TILE_MAGIC_KERNEL && strcmp(k->key, canon) == 0) return k;
    return NULL;
}

tile_status tile_kernel_get(tile_module *mod, const char *name, const tile_const *consts,
                            int nconsts, tile_kernel **out) {
    if (!mod) return TILE_ERR_INVALID_ARG;
    tile_ctx *ctx = mod->ctx;
    if (mod->magic == TILE_MAGIC_DEAD)
        return tile_error(ctx, TILE_ERR_INVALID_ARG, "tile_kernel_get: the module was released");
    if (mod->magic != TILE_MAGIC_MODULE) return TILE_ERR_INVALID_ARG;
    tile_status st = ctx_check(ctx, "tile_kernel_get");
    if (st != TILE_OK) return st;
    if (!out) return tile_error(ctx, TILE_ERR_INVALID_ARG, "tile_kernel_get: kern is NULL");
    *out = NULL;
    if (!name) return tile_error(ctx, TILE_ERR_INVALID_ARG, "tile_kernel_get: name is NULL");
    if ((st = check_consts(ctx, consts, nconsts, true)) != TILE_OK) return st;
    if (!find_kernel_decl(mod, name)) return kernel_not_found(mod, name);

    char *key = request_key(name, consts, nconsts);
    if (!key) return tile_error(ctx, TILE_ERR_NO_MEMORY, "out of memory");
    for (tile_kernel_alias *a = mod->aliases; a; a = a->next)
        if (strcmp(a->key, key) == 0) {
            free(key);
            *out = a->kernel;
            return TILE_OK;
        }

    tile_kernel *k = calloc(1, sizeof *k);
    if (!k) {
        free(key);
        return tile_error(ctx, TILE_ERR_NO_MEMORY, "out of memory");
    }
    arena_init(&k->arena);
    Diag d;
    diag_init(&d, mod->name, mod->source);
    IrFunc *ir = specialise(mod, name, consts, nconsts, &k->arena, &d);
    if (!ir) {
        st = tile_error(ctx, TILE_ERR_COMPILE, "%s",
                        *diag_text(&d) ? diag_text(&d) : "kernel could not be specialised\n");
        diag_free(&d);
        arena_free(&k->arena);
        free(k);
        free(key);
        return st;
    }
    diag_free(&d);

    char *canon = canonical_key(ir);
    if (!canon) {
        arena_free(&k->arena);
        free(k);
        free(key);
        return tile_error(ctx, TILE_ERR_NO_MEMORY, "out of memory");
    }
    tile_kernel *old = kernel_of_key(mod, canon);
    if (old) {
        free(canon);
        arena_free(&k->arena);
        free(k);
        *out = old;
        return add_alias(mod, key, old);
    }
    k->key = canon;
    k->ir = ir;
    k->module = mod;
    st = ctx->ops->compile(ctx, k);
    if (st != TILE_OK) {
        arena_free(&k->arena);
        free(k->key);
        free(k);
        free(key);
        return st;
    }
    k->magic = TILE_MAGIC_KERNEL;
    k->next = mod->kernels;
    mod->kernels = k;
    *out = k;
    return add_alias(mod, key, k);
}

/* A request of tile_kernel_prefetch that the backend is asked to compile. */
typedef struct Prefetch {
    const tile_module *module;
    Arena arena;   /* holds ir */
    IrFunc *ir;
    char *canon;
    const tile_arg *args;   /* the request's (NULL: none) */
    int nargs;
    bool launch_only;       /* tile_prefetch_item's */
} Prefetch;

tile_status tile_kernel_prefetch(tile_ctx *ctx, const tile_kernel_request *reqs, int n) {
    tile_status st = ctx_check(ctx, "tile_kernel_prefetch");
    if (st != TILE_OK) return st;
    if (n < 0 || (n > 0 && !reqs))
        return tile_error(ctx, TILE_ERR_INVALID_ARG, "tile_kernel_prefetch: bad request list (%d entries)", n);
    for (int r = 0; r < n; r++) {
        const tile_module *mod = reqs[r].module;
        if (!mod || mod->magic != TILE_MAGIC_MODULE || mod->ctx != ctx)
            return tile_error(ctx, TILE_ERR_INVALID_ARG, "tile_kernel_prefetch: request %d: %s", r,
                              !mod ? "no module"
                              : mod->magic == TILE_MAGIC_DEAD ? "the module was released"
                              : mod->magic != TILE_MAGIC_MODULE ? "not a module"
                                                                : "a module of another context");
    }
    if (!ctx->ops->prefetch || n == 0) return TILE_OK;   /* (compiling is quick there, or nothing is asked) */
    Prefetch *todo = calloc((size_t)n, sizeof *todo);
    if (!todo) return tile_error(ctx, TILE_ERR_NO_MEMORY, "out of memory");
    int ntodo = 0;
    /* Each request whose module has no such kernel yet, once; with launch
     * arguments, each (its launch's variant may be new), with the kernel
     * where it is new.  One that cannot be specialised is left to
     * tile_kernel_get, which reports it. */
    for (int r = 0; r < n; r++) {
        const tile_kernel_request *q = &reqs[r];
        tile_module *mod = q->module;
        if (!q->name || !find_kernel_decl(mod, q->name) || check_consts(ctx, q->consts, q->nconsts, false) != TILE_OK)
            continue;
        Prefetch *p = &todo[ntodo];
        arena_init(&p->arena);
        Diag d;
        diag_init(&d, mod->name, mod->source);
        p->ir = specialise(mod, q->name, q->consts, q->nconsts, &p->arena, &d);
        diag_free(&d);
        p->module = mod;
        p->args = q->nargs > 0 ? q->args : NULL;
        p->nargs = p->args ? q->nargs : 0;
        p->canon = p->ir ? canonical_key(p->ir) : NULL;
        p->launch_only = p->canon && kernel_of_key(mod, p->canon);
        bool fresh = p->canon && (p->args || !p->launch_only);
        for (int j = 0; j < ntodo && fresh; j++) {
            if (todo[j].module != mod || strcmp(todo[j].canon, p->canon) != 0) continue;
            if (p->args && !todo[j].args) {   /* the same kernel asked before without arguments: these are its */
                todo[j].args = p->args;
                todo[j].nargs = p->nargs;
                fresh = false;
            } else {
                fresh = p->args != NULL;
                p->launch_only = true;
            }
        }
        if (fresh) {
            ntodo++;
        } else {
            free(p->canon);
            arena_free(&p->arena);
        }
    }
    tile_prefetch_item *items = malloc(sizeof *items * (size_t)(ntodo > 0 ? ntodo : 1));
    if (items) {
        for (int i = 0; i < ntodo; i++)
            items[i] = (tile_prefetch_item){todo[i].ir, todo[i].args, todo[i].nargs, todo[i].launch_only};
        if (ntodo) ctx->ops->prefetch(ctx, items, ntodo);
        free(items);
    }
    for (int i = 0; i < ntodo; i++) {
        free(todo[i].canon);
        arena_free(&todo[i].arena);
    }
    free(todo);
    return items ? TILE_OK : tile_error(ctx, TILE_ERR_NO_MEMORY, "out of memory");
}

static int kernel_live(const tile_kernel *k) { return k && k->magic == TILE_MAGIC_KERNEL; }

int tile_kernel_num_params(const tile_kernel *k) { return kernel_live(k) ? k->ir->nparams : 0; }
const char *tile_kernel_name(const tile_kernel *k) { return kernel_live(k) ? k->ir->name : NULL; }
const void *tile_kernel_ir(const tile_kernel *k) { return kernel_live(k) ? k->ir : NULL; }

tile_status tile_kernel_param(const tile_kernel *k, int i, tile_param_info *info) {
    if (!kernel_live(k) || !info) return TILE_ERR_INVALID_ARG;
    if (i < 0 || i >= k->ir->nparams)
        return tile_error(k->module->ctx, TILE_ERR_INVALID_ARG,
                          "kernel '%s' has %d parameters; there is no parameter %d",
                          k->ir->name, k->ir->nparams, i);
    const IrParam *p = &k->ir->params[i];
    memset(info, 0, sizeof *info);
    info->name = p->name;
    info->is_array = p->kind == IRP_ARRAY;
    info->dtype = (tile_dtype)p->dtype;
    info->rank = p->kind == IRP_ARRAY ? p->rank : 0;
    for (int d = 0; d < info->rank; d++) info->dims[d] = p->dims[d];
    info->written = p->kind == IRP_ARRAY && p->written;
    return TILE_OK;
}

/* ---- launch checks ----------------------------------------------------- */

static const char *kind_word(int is_array) { return is_array ? "an array" : "a scalar"; }

static tile_status check_scalar(tile_ctx *ctx, const IrFunc *f, int i, const tile_arg *a,
                                Scalar *out) {
    const IrParam *p = &f->params[i];
    if (!dtype_valid(a->dtype) || a->dtype == TILE_TF32)
        return tile_error(ctx, TILE_ERR_INVALID_ARG,
                          "kernel '%s', argument %d ('%s'): invalid scalar dtype %d", f->name, i,
                          p->name, (int)a->dtype);
    DType from = (DType)a->dtype;
    Scalar v;
    if (dtype_is_float(from)) v.f = a->value.f;
    else if (dtype_is_unsigned(from)) v.u = a->value.u;
    else v.i = a->value.i;
    v = scalar_canon(from, v);
    if (dtype_is_float(from) && dtype_is_int(p->dtype)) {
        if (!isfinite(v.f) || v.f != floor(v.f))
            return tile_error(ctx, TILE_ERR_INVALID_ARG,
                              "kernel '%s', argument %d ('%s'): %s value %g is not an integer, "
                              "but the parameter is %s", f->name, i, p->name, dtype_name(from), v.f,
                              dtype_name(p->dtype));
    }
    *out = scalar_convert(from, p->dtype, v);
    return TILE_OK;
}

static tile_status check_array(tile_ctx *ctx, const IrFunc *f, int i, const tile_array *a) {
    const IrParam *p = &f->params[i];
    if (!dtype_valid(a->dtype) || (DType)a->dtype != p->dtype)
        return tile_error(ctx, TILE_ERR_INVALID_ARG,
                          "kernel '%s', argument %d ('%s'): dtype %s given, %s expected",
                          f->name, i, p->name, tile_dtype_name(a->dtype), dtype_name(p->dtype));
    if (a->rank != p->rank)
        return tile_error(ctx, TILE_ERR_INVALID_ARG,
                          "kernel '%s', argument %d ('%s'): rank %d given, rank %d expected",
                          f->name, i, p->name, a->rank, p->rank);
    int empty = 0;
    for (int d = 0; d < a->rank; d++) {
        if (a->shape[d] < 0)
            return tile_error(ctx, TILE_ERR_INVALID_ARG,
                              "kernel '%s', argument %d ('%s'): negative extent %lld on axis %d",
                              f->name, i, p->name, (long long)a->shape[d], d);
        if (a->shape[d] > INT32_MAX)
            return tile_error(ctx, TILE_ERR_INVALID_ARG,
                              "kernel '%s', argument %d ('%s'): extent %lld on axis %d exceeds 2^31-1",
                              f->name, i, p->name, (long long)a->shape[d], d);
        if (a->strides[d] < 0)
            return tile_error(ctx, TILE_ERR_INVALID_ARG,
                              "kernel '%s', argument %d ('%s'): negative stride %lld on axis %d",
                              f->name, i, p->name, (long long)a->strides[d], d);
        empty |= a->shape[d] == 0;
    }
    if (!a->data && !empty)
        return tile_error(ctx, TILE_ERR_INVALID_ARG,
                          "kernel '%s', argument %d ('%s'): null data pointer for a non-empty array",
                          f->name, i, p->name);
    /* The last element's byte offset, sum (extent - 1) * stride * size, must fit
     * in int64: no memory is that large, and both backends compute offsets in
     * int64 (an overflow there would be undefined behaviour, not an error). */
    int64_t reach = 0;
    bool overflow = false;
    for (int d = 0; d < a->rank && !empty; d++) {
        int64_t step;
        overflow |= __builtin_mul_overflow(a->shape[d] - 1, a->strides[d], &step);
        overflow |= __builtin_add_overflow(reach, step, &reach);
    }
    if (!empty && !overflow) overflow |= __builtin_mul_overflow(reach, (int64_t)tile_dtype_size(a->dtype), &reach);
    if (overflow)
        return tile_error(ctx, TILE_ERR_INVALID_ARG,
                          "kernel '%s', argument %d ('%s'): its last element lies 2^63 bytes or more past "
                          "its first (extents and strides too large for any memory)",
                          f->name, i, p->name);
    return TILE_OK;
}

/* Dims with the same name must have equal extents across all arrays. */
static tile_status check_named_extents(tile_ctx *ctx, const IrFunc *f, const tile_arg *args) {
    for (int i = 0; i < f->nparams; i++) {
        const IrParam *p = &f->params[i];
        if (p->kind != IRP_ARRAY) continue;
        for (int d = 0; d < p->rank; d++) {
            if (!p->dims[d]) continue;
            /* compare with the first occurrence of this name */
            for (int j = 0; j <= i; j++) {
                const IrParam *q = &f->params[j];
                if (q->kind != IRP_ARRAY) continue;
                int found = 0;
                for (int e = 0; e < q->rank && !(j == i && e >= d); e++) {
                    if (!q->dims[e] || strcmp(q->dims[e], p->dims[d]) != 0) continue;
                    int64_t first = args[j].array.shape[e], here = args[i].array.shape[d];
                    if (first != here)
                        return tile_error(ctx, TILE_ERR_INVALID_ARG,
                                          "kernel '%s': extent mismatch: '%s' is %lld for %s (axis %d) "
                                          "but %lld for %s (axis %d)", f->name, p->dims[d],
                                          (long long)first, q->name, e, (long long)here, p->name, d);
                    found = 1;
                    break;
                }
                if (found) break;
            }
        }
    }
    return TILE_OK;
}

static void param_list(StrBuf *b, const IrFunc *f) {
    for (int i = 0; i < f->nparams; i++) sb_printf(b, "%s%s", i ? ", " : "", f->params[i].name);
}

tile_status tile_launch(tile_kernel *k, const int grid[3], const tile_arg *args, int nargs,
                        void *stream) {
    if (!k) return TILE_ERR_INVALID_ARG;
    if (k->magic == TILE_MAGIC_DEAD)
        return tile_error(k->module->ctx, TILE_ERR_INVALID_ARG,
                          "tile_launch: the kernel's module was released");
    if (k->magic != TILE_MAGIC_KERNEL) return TILE_ERR_INVALID_ARG;
    tile_ctx *ctx = k->module->ctx;
    tile_status st = ctx_check(ctx, "tile_launch");
    if (st != TILE_OK) return st;
    const IrFunc *f = k->ir;
    if (!grid) return tile_error(ctx, TILE_ERR_INVALID_ARG, "kernel '%s': grid is NULL", f->name);
    static const int64_t grid_max[3] = {INT32_MAX, 65535, 65535};
    for (int a = 0; a < 3; a++) {
        if (grid[a] < 1)
            return tile_error(ctx, TILE_ERR_INVALID_ARG,
                              "kernel '%s': grid extent %d on axis %d; each extent must be at least 1",
                              f->name, grid[a], a);
        if (grid[a] > grid_max[a])
            return tile_error(ctx, TILE_ERR_INVALID_ARG,
                              "kernel '%s': grid extent %d on axis %d is too large (at most %lld)",
                              f->name, grid[a], a, (long long)grid_max[a]);
    }
    if (nargs != f->nparams || (nargs > 0 && !args)) {
        StrBuf b = {0};
        param_list(&b, f);
        st = tile_error(ctx, TILE_ERR_INVALID_ARG, "kernel '%s' takes %d argument%s (%s), got %d%s",
                        f->name, f->nparams, f->nparams == 1 ? "" : "s", b.s ? b.s : "", nargs,
                        nargs > 0 && !args ? " in a NULL array" : "");
        free(b.s);
        return st;
    }
    tile_launch_arg *checked = calloc((size_t)(nargs > 0 ? nargs : 1), sizeof *checked);
    if (!checked) return tile_error(ctx, TILE_ERR_NO_MEMORY, "out of memory");
    for (int i = 0; i < nargs && st == TILE_OK; i++) {
        const IrParam *p = &f->params[i];
        int want_array = p->kind == IRP_ARRAY;
        if (args[i].kind != TILE_ARG_ARRAY && args[i].kind != TILE_ARG_SCALAR) {
            st = tile_error(ctx, TILE_ERR_INVALID_ARG, "kernel '%s', argument %d ('%s'): invalid "
                            "argument kind %d", f->name, i, p->name, (int)args[i].kind);
        } else if ((args[i].kind == TILE_ARG_ARRAY) != want_array) {
            st = tile_error(ctx, TILE_ERR_INVALID_ARG, "kernel '%s', argument %d ('%s'): %s given, "
                            "%s expected", f->name, i, p->name,
                            kind_word(args[i].kind == TILE_ARG_ARRAY), kind_word(want_array));
        } else if (want_array) {
            st = check_array(ctx, f, i, &args[i].array);
            checked[i].array = args[i].array;
        } else {
            st = check_scalar(ctx, f, i, &args[i], &checked[i].scalar);
        }
    }
    if (st == TILE_OK) st = check_named_extents(ctx, f, args);
    if (st == TILE_OK) st = ctx->ops->launch(ctx, k, grid, checked, nargs, stream);
    free(checked);
    return st;
}

/* ---- memory and synchronisation ---------------------------------------- */

tile_status tile_malloc(tile_ctx *ctx, size_t bytes, void **ptr) {
    tile_status st = ctx_check(ctx, "tile_malloc");
    if (st != TILE_OK) return st;
    if (!ptr) return tile_error(ctx, TILE_ERR_INVALID_ARG, "tile_malloc: ptr is NULL");
    *ptr = NULL;
    return ctx->ops->malloc_(ctx, bytes, ptr);
}

tile_status tile_mem_info(tile_ctx *ctx, size_t *free_bytes, size_t *total_bytes) {
    tile_status st = ctx_check(ctx, "tile_mem_info");
    if (st != TILE_OK) return st;
    size_t f = 0, t = 0;
    st = ctx->ops->mem_info(ctx, &f, &t);
    if (st != TILE_OK) return st;
    if (free_bytes) *free_bytes = f;
    if (total_bytes) *total_bytes = t;
    return TILE_OK;
}

tile_status tile_free(tile_ctx *ctx, void *ptr) {
    tile_status st = ctx_check(ctx, "tile_free");
    if (st != TILE_OK || !ptr) return st;
    return ctx->ops->free_(ctx, ptr);
}

static tile_status copy(tile_ctx *ctx, void *dst, const void *src, size_t bytes, tile_copy_kind kind,
                        const char *what) {
    tile_status st = ctx_check(ctx, what);
    if (st != TILE_OK || bytes == 0) return st;
    if (!dst || !src) return tile_error(ctx, TILE_ERR_INVALID_ARG, "%s: NULL %s", what, !dst ? "dst" : "src");
    return ctx->ops->memcpy_(ctx, dst, src, bytes, kind);
}

tile_status tile_memcpy_h2d(tile_ctx *ctx, void *dst, const void *src, size_t bytes) {
    return copy(ctx, dst, src, bytes, TILE_COPY_H2D, "tile_memcpy_h2d");
}
tile_status tile_memcpy_d2h(tile_ctx *ctx, void *dst, const void *src, size_t bytes) {
    return copy(ctx, dst, src, bytes, TILE_COPY_D2H, "tile_memcpy_d2h");
}
tile_status tile_memcpy_d2d(tile_ctx *ctx, void *dst, const void *src, size_t bytes) {
    return copy(ctx, dst, src, bytes, TILE_COPY_D2D, "tile_memcpy_d2d");
}

tile_status tile_memset(tile_ctx *ctx, void *dst, int byte, size_t bytes) {
    tile_status st = ctx_check(ctx, "tile_memset");
    if (st != TILE_OK || bytes == 0) return st;
    if (!dst) return tile_error(ctx, TILE_ERR_INVALID_ARG, "tile_memset: NULL dst");
    return ctx->ops->memset_(ctx, dst, byte, bytes);
}

tile_status tile_synchronize(tile_ctx *ctx) {
    tile_status st = ctx_check(ctx, "tile_synchronize");
    if (st != TILE_OK) return st;
    return ctx->ops->synchronize(ctx);
}

/* ---- events ------------------------------------------------------------ */

tile_status tile_event_create(tile_ctx *ctx, tile_event **ev) {
    tile_status st = ctx_check(ctx, "tile_event_create");
    if (st != TILE_OK) return st;
    if (!ev) return tile_error(ctx, TILE_ERR_INVALID_ARG, "tile_event_create: ev is NULL");
    *ev = NULL;
    tile_event *e = calloc(1, sizeof *e);
    if (!e) return tile_error(ctx, TILE_ERR_NO_MEMORY, "out of memory");
    st = ctx->ops->event_create(ctx, &e->backend_event);
    if (st != TILE_OK) {
        free(e);
        return st;
    }
    e->magic = TILE_MAGIC_EVENT;
    e->ctx = ctx;
    *ev = e;
    return TILE_OK;
}

static int event_live(const tile_event *e) { return e && e->magic == TILE_MAGIC_EVENT && ctx_live(e->ctx); }

tile_status tile_event_record(tile_event *ev, void *stream) {
    if (!event_live(ev)) return TILE_ERR_INVALID_ARG;
    return ev->ctx->ops->event_record(ev->ctx, ev->backend_event, stream);
}

tile_status tile_event_elapsed_ms(tile_event *start, tile_event *end, float *ms) {
    if (!event_live(start) || !event_live(end)) return TILE_ERR_INVALID_ARG;
    if (start->ctx != end->ctx)
        return tile_error(start->ctx, TILE_ERR_INVALID_ARG, "tile_event_elapsed_ms: events of two contexts");
    if (!ms) return tile_error(start->ctx, TILE_ERR_INVALID_ARG, "tile_event_elapsed_ms: ms is NULL");
    return start->ctx->ops->event_elapsed_ms(start->ctx, start->backend_event, end->backend_event, ms);
}

void tile_event_destroy(tile_event *ev) {
    if (!event_live(ev)) return;
    ev->ctx->ops->event_destroy(ev->ctx, ev->backend_event);
    ev->magic = TILE_MAGIC_DEAD;
    free(ev);
}
