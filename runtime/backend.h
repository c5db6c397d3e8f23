/* backend.h: what a backend of libtile implements, and the runtime's internal
 * structures it may read.  Not installed; tile.h is the public header.
 *
 * runtime.c does everything that does not depend on the device: loading and
 * checking modules, specialising kernels (lower_kernel + passes_run), the
 * kernel cache, and every argument check of tile_launch.  A backend receives
 * only checked, normalised launches:
 *   - one tile_launch_arg per IrParam, in order; arrays have the param's
 *     dtype and rank, non-negative extents (each <= INT32_MAX) and strides,
 *     and a non-NULL pointer unless they hold no element;
 *   - scalars already converted to the param's dtype (scalar.h canonical form);
 *   - grid extents in range.
 *
 * Errors: a backend function reports a failure with
 *     return tile_error(ctx, TILE_ERR_..., "fmt", ...);
 * which records the message in the context and returns the status.
 *
 * Backends: cpu_backend.c (tile_cpu_backend, the interpreter),
 * cuda_backend.c (tile_cuda_backend, NVRTC + driver API; only built with the
 * CUDA toolkit, TILE_HAVE_CUDA defined) and emu_backend.c (tile_emu_backend:
 * the CUDA emitter's kernels compiled for the host and run there). */
#ifndef TILE_BACKEND_H
#define TILE_BACKEND_H

#include "tile.h"
#include "ir.h"
#include "scalar.h"
#include "ast.h"
#include <stdio.h>

#define TILE_MAGIC_CTX      0x54435458u  /* live objects */
#define TILE_MAGIC_MODULE   0x544d4f44u
#define TILE_MAGIC_KERNEL   0x544b524eu
#define TILE_MAGIC_EVENT    0x54455654u
#define TILE_MAGIC_DEAD     0xdeadbeefu  /* released: the shell stays until the ctx goes */

typedef struct tile_backend_ops tile_backend_ops;

struct tile_ctx {
    uint32_t magic;
    tile_backend_kind kind;
    const tile_backend_ops *ops;
    void *backend_state;          /* the backend's own context (from init) */
    int device;
    char *error;                  /* malloc'd last error message, or NULL */
    tile_status error_status;
    FILE *print_out;              /* CPU backend: where print() goes; NULL = stdout */
    int64_t max_steps;            /* CPU backend: interpreter step limit per block; 0 = default */
    tile_module *modules;         /* every module, released ones included (shells) */
};

struct tile_kernel {
    uint32_t magic;
    tile_module *module;
    tile_kernel *next;            /* in the module's list */
    char *key;                    /* "name|C1=v1|C2=v2" over all constants, sorted */
    Arena arena;                  /* holds ir */
    IrFunc *ir;                   /* the specialised, optimised IR */
    void *backend_data;           /* the backend's compiled kernel (from compile) */
};

/* A request key of tile_kernel_get that maps to a kernel (several requests
 * may name one kernel, e.g. with and without a defaulted constant). */
typedef struct tile_kernel_alias {
    char *key;
    tile_kernel *kernel;
    struct tile_kernel_alias *next;
} tile_kernel_alias;

struct tile_module {
    uint32_t magic;
    tile_ctx *ctx;
    tile_module *next;            /* in the context's list */
    char *name;                   /* file name used in diagnostics */
    char *source;                 /* whole text (diagnostics point into it) */
    Arena arena;                  /* holds the AST */
    Program *program;
    uint64_t source_hash;         /* FNV-1a of the source, for on-disk caches */
    tile_kernel *kernels;
    tile_kernel_alias *aliases;
};

struct tile_event {
    uint32_t magic;
    tile_ctx *ctx;
    void *backend_event;          /* from event_create */
};

/* A checked argument, one per IrParam (see the top of this file). */
typedef struct tile_launch_arg {
    tile_array array;             /* IRP_ARRAY */
    Scalar scalar;                /* IRP_SCALAR, in the param's dtype */
} tile_launch_arg;

typedef enum tile_copy_kind { TILE_COPY_H2D, TILE_COPY_D2H, TILE_COPY_D2D } tile_copy_kind;

/* A kernel tile_kernel_prefetch asks the backend to compile ahead: its
 * specialised IR and the request's launch arguments (args NULL: none; not
 * checked against the kernel's parameters).  launch_only: the kernel itself
 * (its likely variant) is compiled, or another item's; only its launch's
 * variant may be new. */
typedef struct tile_prefetch_item {
    const IrFunc *ir;
    const tile_arg *args;
    int nargs;
    bool launch_only;
} tile_prefetch_item;

struct tile_backend_ops {
    const char *name;             /* "cpu", "cuda" */
    /* Sets ctx->backend_state.  NO_DEVICE / UNSUPPORTED with a message when
     * the device cannot be used. */
    tile_status (*init)(tile_ctx *ctx, int device);
    void        (*destroy)(tile_ctx *ctx);
    const char *(*device_name)(tile_ctx *ctx);
    /* Compiles k->ir; sets k->backend_data.  Called once per kernel. */
    tile_status (*compile)(tile_ctx *ctx, tile_kernel *k);
    void        (*release_kernel)(tile_ctx *ctx, tile_kernel *k);   /* frees backend_data */
    /* Optional (NULL: tile_kernel_prefetch does nothing): compiles the
     * specialised kernels items[0..n) ahead, on several threads, so that
     * their compile (and, where an item has the launch's arguments, the
     * launch's variant) later finds them done.  Best effort: what fails here
     * is left for compile and launch to report.  The items are the caller's
     * and go after the call. */
    void        (*prefetch)(tile_ctx *ctx, const tile_prefetch_item *items, int n);
    tile_status (*launch)(tile_ctx *ctx, tile_kernel *k, const int grid[3],
                          const tile_launch_arg *args, int nargs, void *stream);
    tile_status (*malloc_)(tile_ctx *ctx, size_t bytes, void **ptr);
    tile_status (*free_)(tile_ctx *ctx, void *ptr);
    tile_status (*memcpy_)(tile_ctx *ctx, void *dst, const void *src, size_t bytes,
                           tile_copy_kind kind);
    tile_status (*memset_)(tile_ctx *ctx, void *dst, int byte, size_t bytes);
    tile_status (*synchronize)(tile_ctx *ctx);
    tile_status (*mem_info)(tile_ctx *ctx, size_t *free_bytes, size_t *total_bytes);
    tile_status (*event_create)(tile_ctx *ctx, void **ev);
    tile_status (*event_record)(tile_ctx *ctx, void *ev, void *stream);
    tile_status (*event_elapsed_ms)(tile_ctx *ctx, void *start, void *end, float *ms);
    void        (*event_destroy)(tile_ctx *ctx, void *ev);
    /* What the generated code depends on besides the device (the CUDA
     * backend: the target, sm_90a with wgmma or not), so that a tuner's
     * winner is reused only for the same; NULL when nothing. */
    const char *(*codegen_tag)(tile_ctx *ctx);
    /* The device's multiprocessors (SMs); NULL when it has none to speak of. */
    int (*multiprocessors)(tile_ctx *ctx);
};

const tile_backend_ops *tile_cpu_backend(void);
/* The CUDA emitter's kernels compiled for the host and run there (emu_backend.c). */
const tile_backend_ops *tile_emu_backend(void);
/* Implemented in runtime/cuda_backend.c -- that exact file name: runtime.c
 * checks for it with __has_include and otherwise defines a weak stand-in
 * returning NULL ("CUDA backend not built yet").  May return NULL. */
const tile_backend_ops *tile_cuda_backend(void);

/* Records a message as the context's last error and returns `status`. */
tile_status tile_error(tile_ctx *ctx, tile_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Appends to the last error (e.g. a compiler log after the headline). */
void tile_error_append(tile_ctx *ctx, const char *text);

#endif
