/* cpu_backend.c: the CPU backend of libtile.  Kernels run in the IR
 * interpreter (compiler/interp.c), block after block, on host memory; memory
 * is malloc, events are the monotonic clock.  Launches are synchronous. */
#include "backend.h"
#include "interp.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static tile_status cpu_init(tile_ctx *ctx, int device) {
    if (device != 0)
        return tile_error(ctx, TILE_ERR_NO_DEVICE, "the CPU backend has only device 0 (asked for %d)", device);
    ctx->backend_state = NULL;
    return TILE_OK;
}

static void cpu_destroy(tile_ctx *ctx) { (void)ctx; }

static const char *cpu_device_name(tile_ctx *ctx) { return "cpu (interpreter)"; }

/* Nothing to compile: the interpreter runs the IR as it is. */
static tile_status cpu_compile(tile_ctx *ctx, tile_kernel *k) {
    k->backend_data = NULL;
    return TILE_OK;
}

static void cpu_release_kernel(tile_ctx *ctx, tile_kernel *k) { k->backend_data = NULL; }

static tile_status cpu_launch(tile_ctx *ctx, tile_kernel *k, const int grid[3],
                              const tile_launch_arg *args, int nargs, void *stream) {
    InterpArg *iargs = calloc((size_t)(nargs > 0 ? nargs : 1), sizeof *iargs);
    if (!iargs) return tile_error(ctx, TILE_ERR_NO_MEMORY, "out of memory");
    for (int i = 0; i < nargs; i++) {
        if (k->ir->params[i].kind == IRP_ARRAY) {
            const tile_array *a = &args[i].array;
            iargs[i].array.data = a->data;
            iargs[i].array.dtype = (DType)a->dtype;
            iargs[i].array.rank = a->rank;
            for (int d = 0; d < a->rank; d++) {
                iargs[i].array.shape[d] = a->shape[d];
                iargs[i].array.strides[d] = a->strides[d];
            }
        } else {
            iargs[i].scalar = args[i].scalar;
        }
    }
    /* An element one block writes and another writes or reads: an error (a
     * race on the GPU), unless TILE_CHECK_RACES=0 */
    const char *races = getenv("TILE_CHECK_RACES");
    InterpOptions opt = {ctx->print_out, ctx->max_steps, !(races && !strcmp(races, "0"))};
    char err[1024] = "";
    int rc = interp_run(k->ir, grid, iargs, nargs, &opt, err, sizeof err);
    free(iargs);
    if (rc != 0) {
        if (strncmp(err, "kernel '", 8) == 0)   /* the interpreter named the kernel already */
            return tile_error(ctx, TILE_ERR_LAUNCH, "%s", err);
        return tile_error(ctx, TILE_ERR_LAUNCH, "kernel '%s': %s", k->ir->name,
                          *err ? err : "the interpreter failed");
    }
    return TILE_OK;
}

static tile_status cpu_malloc(tile_ctx *ctx, size_t bytes, void **ptr) {
    *ptr = malloc(bytes ? bytes : 1);
    if (!*ptr) return tile_error(ctx, TILE_ERR_NO_MEMORY, "cannot allocate %zu bytes", bytes);
    return TILE_OK;
}

static tile_status cpu_free(tile_ctx *ctx, void *ptr) {
    free(ptr);
    return TILE_OK;
}

static tile_status cpu_memcpy(tile_ctx *ctx, void *dst, const void *src, size_t bytes,
                              tile_copy_kind kind) {
    memmove(dst, src, bytes);
    return TILE_OK;
}

static tile_status cpu_memset(tile_ctx *ctx, void *dst, int byte, size_t bytes) {
    memset(dst, byte, bytes);
    return TILE_OK;
}

static tile_status cpu_synchronize(tile_ctx *ctx) { return TILE_OK; }

static tile_status cpu_mem_info(tile_ctx *ctx, size_t *free_bytes, size_t *total_bytes) {
    long page = sysconf(_SC_PAGESIZE), avail = sysconf(_SC_AVPHYS_PAGES), phys = sysconf(_SC_PHYS_PAGES);
    if (page <= 0 || avail < 0 || phys <= 0)
        return tile_error(ctx, TILE_ERR_UNSUPPORTED, "tile_mem_info: the host's memory size is unknown");
    *free_bytes = (size_t)avail * (size_t)page;
    *total_bytes = (size_t)phys * (size_t)page;
    return TILE_OK;
}

static tile_status cpu_event_create(tile_ctx *ctx, void **ev) {
    struct timespec *t = calloc(1, sizeof *t);
    if (!t) return tile_error(ctx, TILE_ERR_NO_MEMORY, "out of memory");
    *ev = t;
    return TILE_OK;
}

static tile_status cpu_event_record(tile_ctx *ctx, void *ev, void *stream) {
    clock_gettime(CLOCK_MONOTONIC, ev);
    return TILE_OK;
}

static tile_status cpu_event_elapsed_ms(tile_ctx *ctx, void *start, void *end, float *ms) {
    const struct timespec *a = start, *b = end;
    *ms = (float)((double)(b->tv_sec - a->tv_sec) * 1e3 + (double)(b->tv_nsec - a->tv_nsec) * 1e-6);
    return TILE_OK;
}

static void cpu_event_destroy(tile_ctx *ctx, void *ev) { free(ev); }

static const tile_backend_ops cpu_ops = {
    .name = "cpu",
    .init = cpu_init,
    .destroy = cpu_destroy,
    .device_name = cpu_device_name,
    .compile = cpu_compile,
    .release_kernel = cpu_release_kernel,
    .launch = cpu_launch,
    .malloc_ = cpu_malloc,
    .free_ = cpu_free,
    .memcpy_ = cpu_memcpy,
    .memset_ = cpu_memset,
    .synchronize = cpu_synchronize,
    .mem_info = cpu_mem_info,
    .event_create = cpu_event_create,
    .event_record = cpu_event_record,
    .event_elapsed_ms = cpu_event_elapsed_ms,
    .event_destroy = cpu_event_destroy,
};

const tile_backend_ops *tile_cpu_backend(void) { return &cpu_ops; }
