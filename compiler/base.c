/* base.c: arena, diagnostics, dtypes and tile types (see base.h). */
#include "base.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- arena ------------------------------------------------------------ */

struct ArenaChunk {
    ArenaChunk *next;
    size_t size, used;
    _Alignas(16) unsigned char data[];
};

void arena_init(Arena *a) { a->head = NULL; a->used_total = 0; }

void arena_free(Arena *a) {
    ArenaChunk *c = a->head;
    while (c) {
        ArenaChunk *n = c->next;
        free(c);
        c = n;
    }
    a->head = NULL;
    a->used_total = 0;
}

void *arena_alloc(Arena *a, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (n == 0) n = 16;
    ArenaChunk *c = a->head;
    if (!c || c->size - c->used < n) {
        size_t size = n > 64 * 1024 ? n : 64 * 1024;
        c = malloc(sizeof(ArenaChunk) + size);
        if (!c) {
            /* Out of memory in the compiler: nothing sensible to return to. */
            fputs("tilec: out of memory\n", stderr);
            abort();
        }
        c->size = size;
        c->used = 0;
        c->next = a->head;
        a->head = c;
    }
    void *p = c->data + c->used;
    c->used += n;
    a->used_total += n;
    memset(p, 0, n);
    return p;
}

char *arena_strndup(Arena *a, const char *s, size_t n) {
    char *p = arena_alloc(a, n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

char *arena_strdup(Arena *a, const char *s) { return arena_strndup(a, s, strlen(s)); }

char *arena_printf(Arena *a, const char *fmt, ...) {
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *p = arena_alloc(a, (size_t)n + 1);
    vsnprintf(p, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    return p;
}

void ptrvec_push(Arena *a, PtrVec *v, void *item) {
    if (v->len == v->cap) {
        int cap = v->cap ? v->cap * 2 : 8;
        void **items = ARENA_ARRAY(a, void *, cap);
        if (v->len) memcpy(items, v->items, sizeof(void *) * (size_t)v->len);
        v->items = items;
        v->cap = cap;
    }
    v->items[v->len++] = item;
}

/* ---- source files ----------------------------------------------------- */

ReadStatus read_text_file(const char *path, char **text, char *err, size_t errlen) {
    *text = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return READ_IO_ERROR;
    }
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        len += fread(buf + len, 1, cap - 1 - len, f);
        if (len < cap - 1) break;
        cap *= 2;
        char *bigger = realloc(buf, cap);
        if (!bigger) free(buf);
        buf = bigger;
    }
    ReadStatus st = !buf ? READ_NO_MEMORY : ferror(f) ? READ_IO_ERROR : READ_OK;
    fclose(f);
    if (st == READ_OK) {
        buf[len] = '\0';
        if (strlen(buf) != len) st = READ_NUL_BYTE;
    }
    if (st != READ_OK) {
        free(buf);
        snprintf(err, errlen, "%s: %s", path,
                 st == READ_NO_MEMORY ? "out of memory" : st == READ_IO_ERROR ? "read error" : "the file contains a NUL byte");
        return st;
    }
    *text = buf;
    return READ_OK;
}

/* ---- diagnostics ------------------------------------------------------ */

void diag_init(Diag *d, const char *file, const char *src) {
    memset(d, 0, sizeof *d);
    d->file = file;
    d->src = src;
    d->max_errors = 50;
}

void diag_free(Diag *d) {
    free(d->text);
    d->text = NULL;
    d->len = d->cap = 0;
    free(d->seen);
    d->seen = NULL;
    d->nseen = d->seen_cap = 0;
}

static void diag_append(Diag *d, const char *s, size_t n) {
    if (d->len + n + 1 > d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 1024;
        while (cap < d->len + n + 1) cap *= 2;
        char *t = realloc(d->text, cap);
        if (!t) return;            /* drop the message rather than crash */
        d->text = t;
        d->cap = cap;
    }
    memcpy(d->text + d->len, s, n);
    d->len += n;
    d->text[d->len] = 0;
}

static void diag_appendf(Diag *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void diag_appendf(Diag *d, const char *fmt, ...) {
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n >= sizeof buf) n = sizeof buf - 1;
    diag_append(d, buf, (size_t)n);
}

/* The source line `line` (1-based) of d->src, without its newline. */
static const char *source_line(const Diag *d, int line, size_t *len) {
    if (!d->src || line < 1) return NULL;
    const char *p = d->src;
    for (int l = 1; l < line; l++) {
        p = strchr(p, '\n');
        if (!p) return NULL;
        p++;
    }
    const char *e = strchr(p, '\n');
    *len = e ? (size_t)(e - p) : strlen(p);
    return p;
}

static const char *diag_file(const Diag *d, Loc loc) {
    return loc.file ? loc.file : (d->file ? d->file : "<input>");
}

static void diag_emit(Diag *d, const char *kind, Loc loc, const char *msg) {
    const char *file = diag_file(d, loc);
    if (loc.line > 0)
        diag_appendf(d, "%s:%d:%d: %s: %s\n", file, loc.line, loc.col, kind, msg);
    else
        diag_appendf(d, "%s: %s: %s\n", file, kind, msg);
    size_t n;
    const char *line = loc.line > 0 ? source_line(d, loc.line, &n) : NULL;
    if (line) {
        diag_append(d, "    ", 4);
        diag_append(d, line, n);
        diag_append(d, "\n    ", 5);
        /* Tabs in the source stay tabs under the caret so it lines up. */
        for (int i = 1; i < loc.col && (size_t)(i - 1) < n; i++)
            diag_append(d, line[i - 1] == '\t' ? "\t" : " ", 1);
        diag_append(d, "^\n", 2);
    }
}

/* FNV-1a, 64 bits. */
static uint64_t hash_bytes(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* Adds the error (loc, msg) to d->seen; false if it was there already.  The
 * set keeps 64-bit hashes only: two different errors colliding is a 2^-64
 * chance.  Out of memory, every error counts as new. */
static bool diag_first_time(Diag *d, Loc loc, const char *msg) {
    const char *file = diag_file(d, loc);
    uint64_t h = 0xcbf29ce484222325ull;
    h = hash_bytes(h, file, strlen(file) + 1);
    h = hash_bytes(h, &loc.line, sizeof loc.line);
    h = hash_bytes(h, &loc.col, sizeof loc.col);
    h = hash_bytes(h, msg, strlen(msg));
    if (h == 0) h = 1;                      /* 0 marks an empty slot */
    if (2 * (d->nseen + 1) > d->seen_cap) {  /* keep the load at most 1/2 */
        int cap = d->seen_cap ? d->seen_cap * 2 : 64;
        uint64_t *t = calloc((size_t)cap, sizeof *t);
        if (!t) return true;
        for (int i = 0; i < d->seen_cap; i++) {
            if (!d->seen[i]) continue;
            size_t j = (size_t)(d->seen[i] & (uint64_t)(cap - 1));
            while (t[j]) j = (j + 1) & (size_t)(cap - 1);
            t[j] = d->seen[i];
        }
        free(d->seen);
        d->seen = t;
        d->seen_cap = cap;
    }
    size_t mask = (size_t)d->seen_cap - 1, j = (size_t)h & mask;
    for (; d->seen[j]; j = (j + 1) & mask)
        if (d->seen[j] == h) return false;
    d->seen[j] = h;
    d->nseen++;
    return true;
}

void diag_verror(Diag *d, Loc loc, const char *fmt, va_list ap) {
    d->nerrors++;
    char msg[2048];
    vsnprintf(msg, sizeof msg, fmt, ap);
    d->quiet_notes = !diag_first_time(d, loc, msg);
    if (d->quiet_notes) return;
    d->nrecorded++;
    if (d->nrecorded > d->max_errors) {
        if (d->nrecorded == d->max_errors + 1)
            diag_appendf(d, "%s: error: too many errors, stopping\n", d->file ? d->file : "<input>");
        return;
    }
    diag_emit(d, "error", loc, msg);
}

void diag_error(Diag *d, Loc loc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    diag_verror(d, loc, fmt, ap);
    va_end(ap);
}

void diag_note(Diag *d, Loc loc, const char *fmt, ...) {
    if (d->nrecorded > d->max_errors || d->quiet_notes) return;
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    diag_emit(d, "note", loc, msg);
}

void diag_plain(Diag *d, const char *fmt, ...) {
    Loc none = {d->file, 0, 0};
    va_list ap;
    va_start(ap, fmt);
    diag_verror(d, none, fmt, ap);
    va_end(ap);
}

const char *diag_text(const Diag *d) { return d->text ? d->text : ""; }

/* ---- dtypes ----------------------------------------------------------- */

static const char *const dtype_names[] = {
#define X(id, name, size) name,
    DTYPE_LIST(X)
#undef X
};
static const int dtype_sizes[] = {
#define X(id, name, size) size,
    DTYPE_LIST(X)
#undef X
};

const char *dtype_name(DType t) {
    return (t >= 0 && t < DT_COUNT) ? dtype_names[t] : "<invalid>";
}

DType dtype_from_name(const char *name) {
    for (int i = 0; i < DT_COUNT; i++)
        if (strcmp(dtype_names[i], name) == 0) return (DType)i;
    return DT_INVALID;
}

int dtype_size(DType t) { return (t >= 0 && t < DT_COUNT) ? dtype_sizes[t] : 0; }
int dtype_bits(DType t) { return t == DT_BOOL ? 1 : dtype_size(t) * 8; }

bool dtype_is_float(DType t) {
    return t == DT_F16 || t == DT_BF16 || t == DT_F32 || t == DT_F64 || t == DT_TF32;
}
bool dtype_is_unsigned(DType t) { return t == DT_U8 || t == DT_U16 || t == DT_U32 || t == DT_U64; }
bool dtype_is_int(DType t) {
    return t == DT_I8 || t == DT_I16 || t == DT_I32 || t == DT_I64 || dtype_is_unsigned(t);
}
bool dtype_is_signed(DType t) {
    return t == DT_I8 || t == DT_I16 || t == DT_I32 || t == DT_I64 || dtype_is_float(t);
}

/* ---- tile types ------------------------------------------------------- */

Type type_scalar(DType dt) {
    Type t;
    memset(&t, 0, sizeof t);
    t.dtype = dt;
    return t;
}

Type type_tile(DType dt, int rank, const int *shape) {
    Type t = type_scalar(dt);
    t.rank = rank;
    for (int i = 0; i < rank; i++) t.shape[i] = shape[i];
    return t;
}

bool type_same_shape(const Type *a, const Type *b) {
    if (a->rank != b->rank) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->shape[i] != b->shape[i]) return false;
    return true;
}

bool type_equal(const Type *a, const Type *b) {
    return a->dtype == b->dtype && type_same_shape(a, b);
}

int64_t type_numel(const Type *t) {
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) n *= t->shape[i];
    return n;
}

char *shape_str(int rank, const int *shape, char *buf, size_t n) {
    size_t k = 0;
    k += (size_t)snprintf(buf + k, k < n ? n - k : 0, "[");
    for (int i = 0; i < rank; i++)
        k += (size_t)snprintf(buf + k, k < n ? n - k : 0, "%s%d", i ? ", " : "", shape[i]);
    snprintf(buf + k, k < n ? n - k : 0, "]");
    return buf;
}

char *type_str(const Type *t, char *buf, size_t n) {
    if (t->rank == 0) {
        snprintf(buf, n, "%s", dtype_name(t->dtype));
        return buf;
    }
    char s[160];
    shape_str(t->rank, t->shape, s, sizeof s);
    snprintf(buf, n, "%s%s", dtype_name(t->dtype), s);
    return buf;
}

bool is_pow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }
