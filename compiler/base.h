/* base.h: what every stage of tilec shares: source locations, the arena,
 * diagnostics, dtypes and tile types.  Prefixes: arena_, diag_, dtype_, type_. */
#ifndef TILEC_BASE_H
#define TILEC_BASE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#define TILEC_VERSION "0.1.0"

/* ---- source locations ------------------------------------------------- */

/* A position in a source file: 1-based line and column (columns count bytes).
 * Every token, AST node and IR op carries one. */
typedef struct Loc {
    const char *file;   /* file name as given by the user; owned by the Source */
    int line, col;
} Loc;

/* ---- arena ------------------------------------------------------------ */

/* One arena per compilation: AST, IR and strings live in it and are freed at
 * once (no destructors anywhere in the compiler). */
typedef struct ArenaChunk ArenaChunk;
typedef struct Arena {
    ArenaChunk *head;
    size_t used_total;
} Arena;

void  arena_init(Arena *a);
void  arena_free(Arena *a);
void *arena_alloc(Arena *a, size_t n);              /* zeroed, 16-byte aligned */
char *arena_strdup(Arena *a, const char *s);
char *arena_strndup(Arena *a, const char *s, size_t n);
char *arena_printf(Arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define ARENA_NEW(a, T) ((T *)arena_alloc((a), sizeof(T)))
#define ARENA_ARRAY(a, T, n) ((T *)arena_alloc((a), sizeof(T) * (size_t)(n)))

/* A growable array of pointers kept in an arena (old storage is abandoned). */
typedef struct PtrVec {
    void **items;
    int len, cap;
} PtrVec;
void ptrvec_push(Arena *a, PtrVec *v, void *item);

/* ---- source files ----------------------------------------------------- */

typedef enum { READ_OK, READ_IO_ERROR, READ_NO_MEMORY, READ_NUL_BYTE } ReadStatus;

/* The whole of file `path` into *text (malloc'd, NUL-terminated); else
 * *text is NULL and err holds "PATH: why".  A NUL byte inside is an error:
 * every stage reads a source as a C string, and would stop there. */
ReadStatus read_text_file(const char *path, char **text, char *err, size_t errlen);

/* ---- diagnostics ------------------------------------------------------ */

/* Errors are collected into text, formatted as
 *     file:line:col: error: message
 *         <the source line>
 *         <spaces>^
 * so the CLI prints them and the runtime hands them back as a message.
 * Compilation goes on after an error to report more; `nerrors` says whether
 * the result may be used.
 * An error identical to one recorded already (same file, line, column and
 * message: an error inside a fn helper, met again at each call and in each
 * kernel) is counted in `nerrors` but not recorded again, nor are its notes. */
typedef struct Diag {
    const char *file;      /* source file name */
    const char *src;       /* whole source text (NUL-terminated), for caret lines */
    char *text;            /* malloc'd, NUL-terminated accumulated messages */
    size_t len, cap;
    int nerrors;           /* every error reported, repeats included */
    int nrecorded;         /* errors in `text` (repeats are not) */
    int max_errors;        /* stop recording after this many (default 50) */
    uint64_t *seen;        /* malloc'd hash set of the recorded errors (0 = empty slot) */
    int nseen, seen_cap;
    bool quiet_notes;      /* the last error was a repeat: drop the notes that follow */
} Diag;

void diag_init(Diag *d, const char *file, const char *src);
void diag_free(Diag *d);
void diag_error(Diag *d, Loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void diag_verror(Diag *d, Loc loc, const char *fmt, va_list ap);
void diag_note(Diag *d, Loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* An error with no location (e.g. "missing value for constant CHUNK"). */
void diag_plain(Diag *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *diag_text(const Diag *d);   /* "" when empty */

/* ---- dtypes ----------------------------------------------------------- */

/* Order matters: it is the order of the public tile_dtype enum too. */
#define DTYPE_LIST(X)  \
    X(BOOL, "bool", 1) \
    X(I8,   "i8",   1) \
    X(I16,  "i16",  2) \
    X(I32,  "i32",  4) \
    X(I64,  "i64",  8) \
    X(U8,   "u8",   1) \
    X(U16,  "u16",  2) \
    X(U32,  "u32",  4) \
    X(U64,  "u64",  8) \
    X(F16,  "f16",  2) \
    X(BF16, "bf16", 2) \
    X(F32,  "f32",  4) \
    X(F64,  "f64",  8) \
    X(TF32, "tf32", 4)

typedef enum DType {
#define X(id, name, size) DT_##id,
    DTYPE_LIST(X)
#undef X
    DT_COUNT,
    DT_INVALID = -1
} DType;

const char *dtype_name(DType t);
DType dtype_from_name(const char *name);       /* DT_INVALID if unknown */
int  dtype_size(DType t);                      /* bytes in memory; tf32 is stored as f32 */
int  dtype_bits(DType t);                      /* width in bits; bool is 1 */
bool dtype_is_float(DType t);                  /* f16 bf16 f32 f64 tf32 */
bool dtype_is_int(DType t);                    /* signed or unsigned integer, not bool */
bool dtype_is_signed(DType t);                 /* signed integers and floats */
bool dtype_is_unsigned(DType t);

/* ---- tile types ------------------------------------------------------- */

#define TILE_MAX_RANK 8

/* The type of an IR value: a dtype and a compile-time shape.  rank 0 is a
 * scalar.  Extents of tiles are powers of two (checked by sema). */
typedef struct Type {
    DType dtype;
    int rank;
    int shape[TILE_MAX_RANK];
} Type;

Type type_scalar(DType dt);
Type type_tile(DType dt, int rank, const int *shape);
bool type_equal(const Type *a, const Type *b);
bool type_same_shape(const Type *a, const Type *b);
int64_t type_numel(const Type *t);             /* product of extents; 1 for scalars */
/* "f32[64, 64]" or "i32" into buf; returns buf. */
char *type_str(const Type *t, char *buf, size_t n);
/* "[64, 64]" (or "[]" for a scalar) into buf; returns buf. */
char *shape_str(int rank, const int *shape, char *buf, size_t n);
bool is_pow2(int64_t v);

#endif
