/* tile.h: the public C API of libtile, the tilec runtime.  Prefix: tile_.
 *
 * One program runs unchanged on both backends:
 *   cpu  - the IR interpreter (the oracle), host memory;
 *   cuda - NVRTC-compiled kernels launched through the driver API
 *          (libcuda.so.1 opened with dlopen), device memory.
 *
 *   tile_ctx_create(&ctx, TILE_BACKEND_CPU, 0);
 *   tile_module_load_file(ctx, "k.tile", &mod);                  parse + check
 *   tile_const c[] = {{"CHUNK", 0, 64, 0}};
 *   tile_kernel_get(mod, "chunk_cumsum", c, 1, &kern);            specialise (cached)
 *   tile_arg args[] = {tile_arg_array(a), tile_arg_i32(n)};
 *   tile_launch(kern, grid, args, 2, NULL);
 *
 * Every call returns a tile_status; on failure tile_ctx_last_error(ctx) holds
 * a message that explains it (compiler diagnostics included, as
 * "file:line:col: error: ..." with the source line and a caret).  Nothing
 * aborts the host process.  A context is not thread-safe: use one per thread. */
#ifndef TILE_H
#define TILE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tile_status {
    TILE_OK = 0,
    TILE_ERR_INVALID_ARG,   /* bad argument: null, wrong kind/dtype/rank, extent mismatch, grid */
    TILE_ERR_COMPILE,       /* the program or its specialisation has errors */
    TILE_ERR_LAUNCH,        /* the kernel failed while running */
    TILE_ERR_NO_DEVICE,     /* no CUDA driver or no such device */
    TILE_ERR_UNSUPPORTED,   /* backend not built, or feature not available on it */
    TILE_ERR_IO,            /* a file could not be read or written */
    TILE_ERR_NO_MEMORY,
    TILE_ERR_INTERNAL,      /* a bug in tilec: please report it */
    TILE_ERR_NOT_FOUND,     /* no kernel of that name */
} tile_status;

/* Element types; same order as DType in compiler/base.h (checked there). */
typedef enum tile_dtype {
    TILE_BOOL, TILE_I8, TILE_I16, TILE_I32, TILE_I64,
    TILE_U8, TILE_U16, TILE_U32, TILE_U64,
    TILE_F16, TILE_BF16, TILE_F32, TILE_F64, TILE_TF32,
    TILE_DTYPE_COUNT
} tile_dtype;

typedef enum tile_backend_kind {
    TILE_BACKEND_CPU = 1,
    TILE_BACKEND_CUDA = 2,
    /* the CUDA backend's code (sm_80: mma.sync) run on the host, each thread a
     * fiber: checks the CUDA emitter without a GPU; slow (emu_backend.c) */
    TILE_BACKEND_EMU = 3,
} tile_backend_kind;

#define TILE_MAX_DIMS 8

typedef struct tile_ctx tile_ctx;
typedef struct tile_module tile_module;
typedef struct tile_kernel tile_kernel;
typedef struct tile_event tile_event;

/* An array argument.  Strides are in elements.  `data` is a host pointer on
 * the CPU backend, a device pointer (from tile_malloc) on CUDA. */
typedef struct tile_array {
    void *data;
    tile_dtype dtype;
    int rank;
    int64_t shape[TILE_MAX_DIMS];
    int64_t strides[TILE_MAX_DIMS];
} tile_array;

typedef enum tile_arg_kind { TILE_ARG_ARRAY = 1, TILE_ARG_SCALAR = 2 } tile_arg_kind;

/* A launch argument.  A scalar carries its own dtype; tile_launch converts it
 * to the parameter's dtype (integers to floats and back, as astype does). */
typedef struct tile_arg {
    tile_arg_kind kind;
    tile_array array;          /* TILE_ARG_ARRAY */
    tile_dtype dtype;          /* TILE_ARG_SCALAR: dtype of `value` */
    union { int64_t i; uint64_t u; double f; } value;   /* ints in i (u64 in u), floats in f, bool in i */
} tile_arg;

/* A row-major (C order) array over `data`. */
tile_array tile_array_contiguous(void *data, tile_dtype dtype, int rank, const int64_t *shape);
int64_t    tile_array_numel(const tile_array *a);

tile_arg tile_arg_array(tile_array a);
tile_arg tile_arg_bool(int v);
tile_arg tile_arg_i32(int32_t v);
tile_arg tile_arg_i64(int64_t v);
tile_arg tile_arg_u32(uint32_t v);
tile_arg tile_arg_u64(uint64_t v);
tile_arg tile_arg_f32(float v);
tile_arg tile_arg_f64(double v);

/* The value of one `const` kernel parameter, for tile_kernel_get. */
typedef enum tile_const_kind {
    TILE_CONST_INT = 0,    /* the value is i */
    TILE_CONST_FLOAT = 1,  /* the value is f (written as a float) */
    TILE_CONST_DTYPE = 2   /* the value is a dtype, i holds its tile_dtype: for a
                              `const T: dtype` parameter (tile_const_dtype makes one) */
} tile_const_kind;

typedef struct tile_const {
    const char *name;
    int kind;         /* tile_const_kind */
    int64_t i;
    double f;
} tile_const;

/* A dtype constant: tile_const_dtype("T", TILE_BF16) binds `const T: dtype`. */
tile_const tile_const_dtype(const char *name, tile_dtype t);

/* ---- dtypes and statuses ---------------------------------------------- */
const char *tile_status_name(tile_status s);    /* "TILE_ERR_INVALID_ARG" */
const char *tile_dtype_name(tile_dtype t);      /* "f32"; "?" if out of range */
int         tile_dtype_size(tile_dtype t);      /* bytes per element; 0 if out of range */
int         tile_dtype_from_name(const char *name, tile_dtype *out);   /* 1 if known */

/* ---- contexts ----------------------------------------------------------- */
/* CUDA without a driver gives TILE_ERR_NO_DEVICE ("no CUDA driver found
 * (libcuda.so.1: ...)"); a library built without the CUDA toolkit gives
 * TILE_ERR_UNSUPPORTED.  On failure *ctx is still set to a context that only
 * holds the message (read it with tile_ctx_last_error, then destroy it), or
 * to NULL if even that could not be allocated. */
tile_status tile_ctx_create(tile_ctx **ctx, tile_backend_kind backend, int device);
void        tile_ctx_destroy(tile_ctx *ctx);        /* releases its modules and memory maps */
const char *tile_ctx_last_error(const tile_ctx *ctx);  /* "" when none; never NULL */
tile_backend_kind tile_ctx_backend(const tile_ctx *ctx);
const char *tile_ctx_device_name(const tile_ctx *ctx); /* "cpu (interpreter)", "NVIDIA H200" */
/* What the generated code targets besides the device: "wgmma" (CUDA, an sm_90
 * device, Hopper's warpgroup mma), "mma.sync" (other CUDA devices, or
 * TILEC_WGMMA=0), "" (the CPU backend).  A program's driver may size its
 * tiles by it: registers per thread differ between the two. */
const char *tile_ctx_codegen_tag(const tile_ctx *ctx);
/* The device's streaming multiprocessors (CUDA: 132 on an H200); 0 for the
 * CPU backend.  A driver may size its grids by it (how many waves of blocks
 * a grid makes at a given number of blocks per SM). */
int tile_ctx_multiprocessors(const tile_ctx *ctx);

/* ---- modules and kernels ------------------------------------------------ */
/* Parse and check a program.  Errors: TILE_ERR_IO (file), TILE_ERR_COMPILE
 * (the diagnostics are the message). */
tile_status tile_module_load_file(tile_ctx *ctx, const char *path, tile_module **mod);
tile_status tile_module_load_string(tile_ctx *ctx, const char *name, const char *source,
                                    tile_module **mod);
/* Releases a module and all its kernels; later use of them is an error, not a crash. */
void        tile_module_release(tile_module *mod);
/* Number of kernels in the module and the name of kernel i (for the CLI). */
int         tile_module_num_kernels(const tile_module *mod);
const char *tile_module_kernel_name(const tile_module *mod, int i);

/* Specialises kernel `name` on the constants and compiles it for the
 * context's backend.  Cached in the module per (name, constant values): the
 * same values give the same tile_kernel.  Unknown kernel: TILE_ERR_NOT_FOUND.
 * The kernel lives as long as its module. */
tile_status tile_kernel_get(tile_module *mod, const char *name, const tile_const *consts,
                            int nconsts, tile_kernel **kern);

/* One request of tile_kernel_prefetch: tile_kernel_get's arguments, and
 * optionally the arguments the kernel will be launched with (args NULL:
 * none).  tile_launch specialises a kernel on its arrays (16-byte aligned
 * rows or not, 31-bit offsets or not, a layout TMA can copy or not),
 * compiling a variant at the first launch whose arrays are not of the kind
 * tile_kernel_get compiles for (all three); with args, the variant they
 * need is compiled ahead too.  Only the arguments' kinds and the arrays'
 * dtypes, ranks, shapes, strides and data alignment are read, nothing
 * dereferenced; arguments that do not fit the kernel's parameters are
 * ignored (tile_launch would refuse them). */
typedef struct tile_kernel_request {
    tile_module *module;
    const char *name;
    const tile_const *consts;
    int nconsts;
    const tile_arg *args;
    int nargs;
} tile_kernel_request;

/* Compiles the kernels that tile_kernel_get would give for requests
 * reqs[0..n) (modules of `ctx`) ahead of those calls, all at once: the CUDA
 * backend runs NVRTC on one thread per CPU the process may use, at most 32
 * ($TILEC_COMPILE_THREADS sets how many; 1 = one at a time), where
 * tile_kernel_get compiles one kernel at a time.  The tile_kernel_get calls
 * (and launches on the requests' arrays) that follow then load what was
 * compiled.  A request that cannot be specialised or compiled is skipped:
 * its tile_kernel_get reports why.  Errors: a bad context or list (a request
 * of another context's, or of a released module, included), or no memory.
 * The CPU and emu backends do nothing here. */
tile_status tile_kernel_prefetch(tile_ctx *ctx, const tile_kernel_request *reqs, int n);

/* Introspection of the specialised kernel's runtime parameters (constants
 * excluded), in launch order. */
typedef struct tile_param_info {
    const char *name;
    int is_array;
    tile_dtype dtype;
    int rank;                              /* arrays */
    const char *dims[TILE_MAX_DIMS];       /* arrays: extent names, NULL for `_` */
    int written;                           /* arrays: the kernel may store into it */
} tile_param_info;
int         tile_kernel_num_params(const tile_kernel *k);
tile_status tile_kernel_param(const tile_kernel *k, int i, tile_param_info *info);
const char *tile_kernel_name(const tile_kernel *k);
/* The compiler's IR (ir.h IrFunc) of the specialised kernel, for tools. */
const void *tile_kernel_ir(const tile_kernel *k);

/* Runs the kernel on a grid of grid[0] x grid[1] x grid[2] blocks.  args are in
 * the kernel's runtime-parameter order.  Checked first: the argument count,
 * each argument's kind, dtype and rank, non-null data (unless the array is
 * empty), non-negative extents and strides, equal extents for dims with the
 * same name, and grid extents in 1..(2^31-1, 65535, 65535).  `stream` is a
 * CUstream on CUDA (NULL = default stream), ignored on CPU.  CPU launches are
 * synchronous; CUDA launches are asynchronous (tile_synchronize). */
tile_status tile_launch(tile_kernel *k, const int grid[3], const tile_arg *args, int nargs,
                        void *stream);

/* ---- memory: host memory on CPU, device memory on CUDA ------------------ */
tile_status tile_malloc(tile_ctx *ctx, size_t bytes, void **ptr);
tile_status tile_free(tile_ctx *ctx, void *ptr);       /* NULL is fine */
tile_status tile_memcpy_h2d(tile_ctx *ctx, void *dst, const void *src, size_t bytes);
tile_status tile_memcpy_d2h(tile_ctx *ctx, void *dst, const void *src, size_t bytes);
tile_status tile_memcpy_d2d(tile_ctx *ctx, void *dst, const void *src, size_t bytes);
tile_status tile_memset(tile_ctx *ctx, void *dst, int byte, size_t bytes);
tile_status tile_synchronize(tile_ctx *ctx);
/* Free and total memory of the context's device (CUDA: the GPU's, from the
 * driver; CPU: the host's available and physical memory).  Either pointer may
 * be NULL.  For leak checks and for sizing work before allocating it. */
tile_status tile_mem_info(tile_ctx *ctx, size_t *free_bytes, size_t *total_bytes);

/* ---- timing: CUDA events on GPU, the monotonic clock on CPU -------------- */
tile_status tile_event_create(tile_ctx *ctx, tile_event **ev);
tile_status tile_event_record(tile_event *ev, void *stream);
/* Milliseconds from `start` to `end`; waits for `end` to complete. */
tile_status tile_event_elapsed_ms(tile_event *start, tile_event *end, float *ms);
void        tile_event_destroy(tile_event *ev);

/* ---- CPU backend options ------------------------------------------------ */
/* Where the interpreter's print() writes (default stdout). */
tile_status tile_ctx_set_print_file(tile_ctx *ctx, void *file /* FILE* */);
/* Ops the interpreter may execute per block before it stops the launch with
 * TILE_ERR_LAUNCH ("step limit exceeded"); 0 = the default (1e9). */
tile_status tile_ctx_set_step_limit(tile_ctx *ctx, int64_t max_steps);

/* ---- autotuning (runtime/tune.c) ---------------------------------------- */
/* What one tile_tune call did (optional output, see tile_tune_options.stats). */
typedef struct tile_tune_stats {
    int npoints;        /* points in the space (after `fixed` shrank it) */
    int ntimed;         /* points compiled, launched and timed (0 on a cache hit) */
    int nskipped;       /* points that failed to compile or launch */
    int cache_hit;      /* 1: the winner came from the disk cache, nothing was timed */
    int cache_stored;   /* 1: the winner was written to the disk cache */
    int cache_corrupt;  /* 1: a cache file existed but was unreadable/corrupt (ignored) */
    float best_ms;      /* median time of the winner (the cached time on a hit) */
} tile_tune_stats;

typedef struct tile_tune_options {
    int warmup;              /* untimed launches per point before timing (>= 0) */
    int repeat;              /* timed launches per point; the median counts (>= 1) */
    int verbose;             /* the table of points and times, skips and the winner on `log` */
    const char *cache_dir;   /* NULL: $TILE_CACHE_DIR, else ~/.cache/tilec; "" or "off": no disk cache */
    int flush_l2;            /* CUDA: overwrite a scratch buffer larger than L2 before each timed launch */
    int force;               /* re-time even when the cache holds a winner (and overwrite it) */
    void *log;               /* FILE* for verbose output and warnings; NULL = stderr */
    tile_tune_stats *stats;  /* filled when not NULL */
} tile_tune_options;

/* warmup 1, repeat 5, flush_l2 1, everything else 0/NULL. */
tile_tune_options tile_tune_default_options(void);

/* Computes the grid of a launch from the constants of one point of the space
 * (block sizes change the grid).  consts holds every tuned and fixed constant. */
typedef void (*tile_grid_fn)(const tile_const *consts, int nconsts, int grid[3], void *user);

/* Searches the space of kernel `kernel` -- the cross product of the axes of its
 * `tune` block (one point if it has none) -- and returns the fastest point.
 * `fixed` constants are held: one naming an axis shrinks it to that value, the
 * others are added to every point (e.g. a constant with no default).  Each point
 * is compiled (tile_kernel_get), launched `warmup` times, then timed `repeat`
 * times with the backend's events on the default stream (CUDA: L2 flushed
 * before each timed launch when flush_l2); points that fail to compile (e.g. a
 * static_assert) or launch are skipped (listed when verbose).  The launches
 * run on `args` for real: a kernel that reads what it writes (in place,
 * atomics) leaves them changed -- tune on scratch copies then.
 *
 * The winner is cached on disk by (kernel, module source hash, shape class,
 * fixed constants, backend and device name); the shape class is each array's
 * dtype and extents rounded up to powers of two, and each scalar's dtype, so
 * nearby shapes share a winner.  A later call with the same key returns the
 * cached winner without timing.  A corrupt cache file is ignored with a warning
 * on `log` and rewritten; an unusable cache directory only disables caching.
 *
 * On success *best is the winner's kernel (owned by the module) and, when
 * best_consts is not NULL, best_consts[0..*nbest) its constants (tuned and
 * fixed; names live as long as the module): on entry *nbest is the capacity of
 * best_consts.  TILE_ERR_COMPILE when no point compiled and ran (the message
 * lists why).  opt NULL = tile_tune_default_options(). */
tile_status tile_tune(tile_module *mod, const char *kernel, const tile_const *fixed, int nfixed,
                      tile_grid_fn grid_fn, void *user, const tile_arg *args, int nargs,
                      const tile_tune_options *opt, tile_kernel **best, tile_const *best_consts,
                      int *nbest);

/* The tune space of `kernel` with `fixed` held, as tile_tune sees it: *npoints
 * is its size and, when consts is not NULL, consts[0..*nconsts) the constants
 * of point `index` (0 <= index < *npoints; on entry *nconsts is the capacity).
 * E.g. to specialise some point for tile_kernel_param before arrays exist. */
tile_status tile_tune_space(tile_module *mod, const char *kernel, const tile_const *fixed, int nfixed,
                            int index, int *npoints, tile_const *consts, int *nconsts);

#ifdef __cplusplus
}
#endif
#endif
