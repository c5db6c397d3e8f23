/* cuda_backend.c: the CUDA backend of libtile (backend.h).
 *
 *   IR --cuda_emit--> CUDA C++ --NVRTC--> sm_XX cubin (compute_XX PTX when
 *   NVRTC does not know the device) --driver API--> module, launch.
 *
 * The driver (libcuda.so.1) is opened with dlopen: without it the context
 * fails with an ordinary error ("no CUDA driver found").  <cuda.h> is used for
 * its types only.
 *
 * A kernel is specialised at launch on facts about its arrays (16-byte
 * alignment and unit last stride -> vector accesses; 31-bit offsets -> 32-bit
 * address arithmetic; a layout a tensor map can describe -> TMA copies, their
 * maps encoded at each launch); each combination is a variant, compiled once.
 * Compiled code is cached in memory (per kernel) and on disk in the runtime's
 * disk cache (disk_cache.h; TILE_CACHE_DIR, default ~/.cache/tilec; "off"
 * disables), keyed by the full generated source, device header, NVRTC
 * options, arch and NVRTC version; a damaged entry is warned about on stderr,
 * rebuilt and rewritten.  A variant is compiled at the highest occupancy up
 * to the kernel's that ptxas fits without spills (cuda_compile.h).
 * tile_kernel_prefetch compiles many kernels' likely variants at once, on
 * several threads (cuda_prefetch), and leaves their images in the state for
 * build_variant to take as it would the disk cache's. */
#include "backend.h"
#include "cuda_compile.h"
#include "cuda_nvrtc.h"
#include "disk_cache.h"
#include "emit_cuda.h"
#include "kernel_args.h"
#include "workers.h"

#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the driver, loaded with dlopen -------------------------------------------- */

typedef struct Driver {
    void *lib;
    CUresult (*Init)(unsigned);
    CUresult (*DriverGetVersion)(int *);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetName)(char *, int, CUdevice);
    CUresult (*DeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*DevicePrimaryCtxRelease)(CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*CtxSynchronize)(void);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleUnload)(CUmodule);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*FuncSetAttribute)(CUfunction, CUfunction_attribute, int);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, CUstream, void **, void **);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*MemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
    CUresult (*MemsetD8)(CUdeviceptr, unsigned char, size_t);
    CUresult (*MemGetInfo)(size_t *, size_t *);
    CUresult (*EventCreate)(CUevent *, unsigned);
    CUresult (*EventRecord)(CUevent, CUstream);
    CUresult (*EventSynchronize)(CUevent);
    CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
    CUresult (*EventDestroy)(CUevent);
    CUresult (*GetErrorString)(CUresult, const char **);
    /* optional (CUDA 12 drivers on): without it no kernel copies by TMA */
    CUresult (*TensorMapEncodeTiled)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                                     const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
                                     CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
} Driver;

#define CUDA_CACHE_KIND "cuda"

typedef struct CudaState {
    Driver drv;
    CUdevice dev;
    CUcontext ctx;
    int arch;                 /* e.g. 90 */
    int max_smem_optin;       /* bytes of shared memory a block may opt into */
    int multiprocessors;
    char name[256];
    char cache_dir[4096];     /* "" = no disk cache */
    struct Prefetched *prefetched;   /* images compiled ahead (cuda_prefetch); newest first */
    size_t prefetched_bytes;         /* their entries' and keys' bytes (PREFETCHED_MAX_BYTES) */
} CudaState;

/* The images compiled ahead stay for the context's life (another module of
 * the same file, or a variant whose arrays change nothing the kernel reads,
 * may look the same source up again, also without a disk cache), dropped
 * oldest first beyond this (the newest always kept): a tuner's batch of 64
 * points holds some tens of MB, keys (device header and source) included. */
#define PREFETCHED_MAX_BYTES ((size_t)256 << 20)

/* An image cuda_prefetch compiled, for its kernel's build_variant: a
 * disk-cache entry (CudaCacheHead, then the image) under its disk-cache key. */
typedef struct Prefetched {
    struct Prefetched *next;
    char *key;
    uint64_t key_hash;   /* (keys share the device header's 25 KB: compared by hash first) */
    void *entry;
    size_t size;
} Prefetched;

static void prefetched_free(Prefetched *p) {
    free(p->key);
    free(p->entry);
    free(p);
}

static uint64_t key_hash(const char *key) { return disk_cache_fnv1a(key, strlen(key), DISK_CACHE_FNV_SEED); }

/* The link to the image of `key` compiled ahead (s->prefetched or an
 * image's next), or NULL. */
static Prefetched **prefetched_link(CudaState *s, const char *key) {
    uint64_t h = key_hash(key);
    for (Prefetched **at = &s->prefetched; *at; at = &(*at)->next)
        if ((*at)->key_hash == h && strcmp((*at)->key, key) == 0) return at;
    return NULL;
}

/* The image of `key` compiled ahead, or NULL. */
static const Prefetched *prefetched_find(CudaState *s, const char *key) {
    Prefetched **at = prefetched_link(s, key);
    return at ? *at : NULL;
}

/* Is `key`'s image compiled ahead?  If so it becomes the newest, so that the
 * images a prefetch adds after it do not evict it first (prefetched_add
 * drops the oldest). */
static bool prefetched_touch(CudaState *s, const char *key) {
    Prefetched **at = prefetched_link(s, key);
    if (!at) return false;
    Prefetched *p = *at;
    *at = p->next;
    p->next = s->prefetched;
    s->prefetched = p;
    return true;
}

/* One compiled specialisation of a kernel. */
typedef struct CudaVariant {
    struct CudaVariant *next;
    unsigned char *flags;     /* per param (CUDA_ARRAY_*) */
    CUmodule module;
    CUfunction fn;
    int threads, smem;
    int ntmaps;               /* tensor maps passed after the parameters (emit_cuda.h) */
    CudaTensorMap tmaps[CUDA_MAX_TMAPS];
} CudaVariant;

typedef struct CudaKernel {
    CudaVariant *variants;
} CudaKernel;

static CudaState *state(tile_ctx *ctx) { return (CudaState *)ctx->backend_state; }

static const char *cu_err(CudaState *s, CUresult r) {
    const char *msg = NULL;
    if (s && s->drv.GetErrorString) s->drv.GetErrorString(r, &msg);
    return msg ? msg : "unknown CUDA error";
}

#define CU_CHECK(ctx, call, status, what)                                                        \
    do {                                                                                         \
        CUresult r_ = (call);                                                                    \
        if (r_ != CUDA_SUCCESS)                                                                  \
            return tile_error((ctx), (status), "%s: %s (CUDA error %d)", (what), cu_err(state(ctx), r_), (int)r_); \
    } while (0)

static bool load_driver(Driver *d, char *err, size_t errlen) {
    memset(d, 0, sizeof *d);
    /* never unloaded once opened: after cuInit the driver's own threads run
     * its code, and NVRTC keeps a handle on it too */
    d->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!d->lib) {
        snprintf(err, errlen, "no CUDA driver found (%s)", dlerror());
        return false;
    }
    struct { void **slot; const char *name; } syms[] = {
        {(void **)&d->Init, "cuInit"},
        {(void **)&d->DriverGetVersion, "cuDriverGetVersion"},
        {(void **)&d->DeviceGetCount, "cuDeviceGetCount"},
        {(void **)&d->DeviceGet, "cuDeviceGet"},
        {(void **)&d->DeviceGetName, "cuDeviceGetName"},
        {(void **)&d->DeviceGetAttribute, "cuDeviceGetAttribute"},
        {(void **)&d->DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"},
        {(void **)&d->DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"},
        {(void **)&d->CtxSetCurrent, "cuCtxSetCurrent"},
        {(void **)&d->CtxSynchronize, "cuCtxSynchronize"},
        {(void **)&d->ModuleLoadData, "cuModuleLoadData"},
        {(void **)&d->ModuleUnload, "cuModuleUnload"},
        {(void **)&d->ModuleGetFunction, "cuModuleGetFunction"},
        {(void **)&d->FuncSetAttribute, "cuFuncSetAttribute"},
        {(void **)&d->LaunchKernel, "cuLaunchKernel"},
        {(void **)&d->MemAlloc, "cuMemAlloc_v2"},
        {(void **)&d->MemFree, "cuMemFree_v2"},
        {(void **)&d->MemcpyHtoD, "cuMemcpyHtoD_v2"},
        {(void **)&d->MemcpyDtoH, "cuMemcpyDtoH_v2"},
        {(void **)&d->MemcpyDtoD, "cuMemcpyDtoD_v2"},
        {(void **)&d->MemsetD8, "cuMemsetD8_v2"},
        {(void **)&d->MemGetInfo, "cuMemGetInfo_v2"},
        {(void **)&d->EventCreate, "cuEventCreate"},
        {(void **)&d->EventRecord, "cuEventRecord"},
        {(void **)&d->EventSynchronize, "cuEventSynchronize"},
        {(void **)&d->EventElapsedTime, "cuEventElapsedTime_v2"},
        {(void **)&d->EventDestroy, "cuEventDestroy_v2"},
        {(void **)&d->GetErrorString, "cuGetErrorString"},
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        *syms[i].slot = dlsym(d->lib, syms[i].name);
        if (!*syms[i].slot && strcmp(syms[i].name, "cuEventElapsedTime_v2") == 0)
            *syms[i].slot = dlsym(d->lib, "cuEventElapsedTime");
        if (!*syms[i].slot) {
            snprintf(err, errlen, "the CUDA driver (libcuda.so.1) lacks %s: too old?", syms[i].name);
            dlclose(d->lib);
            d->lib = NULL;
            return false;
        }
    }
    d->TensorMapEncodeTiled = dlsym(d->lib, "cuTensorMapEncodeTiled");
    return true;
}

/* ---- context ------------------------------------------------------------------------ */

static tile_status cuda_init(tile_ctx *ctx, int device) {
    CudaState *s = calloc(1, sizeof *s);
    if (!s) return tile_error(ctx, TILE_ERR_NO_MEMORY, "out of memory");
    char err[512];
    if (!load_driver(&s->drv, err, sizeof err)) {
        free(s);
        return tile_error(ctx, TILE_ERR_NO_DEVICE, "%s", err);
    }
    ctx->backend_state = s;
    Driver *d = &s->drv;
    CUresult r = d->Init(0);
    int count = 0;
    if (r == CUDA_SUCCESS) r = d->DeviceGetCount(&count);
    if (r != CUDA_SUCCESS || count == 0) {
        tile_status st = tile_error(ctx, TILE_ERR_NO_DEVICE, "no CUDA device found (%s)",
                                    r != CUDA_SUCCESS ? cu_err(s, r) : "the driver sees none");
        dlclose(d->lib);
        free(s);
        ctx->backend_state = NULL;
        return st;
    }
    if (device >= count) {
        tile_status st = tile_error(ctx, TILE_ERR_NO_DEVICE, "no CUDA device %d (there are %d)", device, count);
        dlclose(d->lib);
        free(s);
        ctx->backend_state = NULL;
        return st;
    }
    int major = 0, minor = 0;
    if ((r = d->DeviceGet(&s->dev, device)) != CUDA_SUCCESS ||
        (r = d->DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, s->dev)) != CUDA_SUCCESS ||
        (r = d->DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, s->dev)) != CUDA_SUCCESS ||
        (r = d->DeviceGetAttribute(&s->max_smem_optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, s->dev)) != CUDA_SUCCESS ||
        (r = d->DeviceGetAttribute(&s->multiprocessors, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, s->dev)) != CUDA_SUCCESS ||
        (r = d->DeviceGetName(s->name, sizeof s->name, s->dev)) != CUDA_SUCCESS ||
        (r = d->DevicePrimaryCtxRetain(&s->ctx, s->dev)) != CUDA_SUCCESS ||
        (r = d->CtxSetCurrent(s->ctx)) != CUDA_SUCCESS) {
        tile_status st = tile_error(ctx, TILE_ERR_NO_DEVICE, "CUDA device %d: %s", device, cu_err(s, r));
        dlclose(d->lib);
        free(s);
        ctx->backend_state = NULL;
        return st;
    }
    s->arch = major * 10 + minor;
    disk_cache_resolve_dir(NULL, s->cache_dir, sizeof s->cache_dir);   /* "" when off */
    return TILE_OK;
}

static void cuda_destroy(tile_ctx *ctx) {
    CudaState *s = state(ctx);
    if (!s) return;
    s->drv.CtxSynchronize();
    s->drv.DevicePrimaryCtxRelease(s->dev);
    for (Prefetched *p = s->prefetched, *next; p; p = next) {
        next = p->next;
        prefetched_free(p);
    }
    dlclose(s->drv.lib);
    free(s);
    ctx->backend_state = NULL;
}

static const char *cuda_device_name(tile_ctx *ctx) { return state(ctx) ? state(ctx)->name : "cuda"; }

/* Hopper's own features (wgmma, compiled for sm_90a) on an sm_90 device
 * unless TILEC_WGMMA=0: the bf16 matmul at 8192^3 runs at 637 TFLOP/s on them against
 * 320 on mma.sync (H200, 2026-12-02; docs/performance.md) */
static bool use_wgmma(const CudaState *s) {
    const char *wg = getenv("TILEC_WGMMA");
    return s->arch == 90 && !(wg && strcmp(wg, "0") == 0);
}

static const char *cuda_codegen_tag(tile_ctx *ctx) {
    const CudaState *s = state(ctx);
    return s && use_wgmma(s) ? "wgmma" : "mma.sync";
}

static int cuda_multiprocessors(tile_ctx *ctx) {
    const CudaState *s = state(ctx);
    return s ? s->multiprocessors : 0;
}

/* ---- the disk cache (disk_cache.h, kind "cuda") -------------------------------------- */

static void cuda_cache_warn(void *user, const char *path, const char *why) {
    fprintf(stderr, "tilec: warning: corrupted cache entry %s (%s); rebuilding\n", path, why);
}

/* The key: everything that decides the binary, the generated source and the
 * device header in full (so two kernels can never share an entry), the
 * options cuda_nvrtc_compile passes (for a cubin of sm_<arch>, with its
 * fallback to compute_90 PTX), whether the occupancy rule of
 * cuda_compile_settled applied (the source is its first emission's; change
 * the rule's line when the rule changes, so that old images are not reused),
 * and the variant's array facts where its entry is not the first emission's
 * (build_variant). */
static char *cuda_cache_key(const CudaState *s, const char *source, int sm90a, const unsigned char *flags, int nflags) {
    const char *fmt = "tilec %s cuda kernel\narch sm_%d\nnvrtc %s\n"
                      "options --gpu-architecture=sm_%d%s %s (else compute_90)\n"
                      "occupancy %s\narray facts %s\n"
                      "device header %zu bytes\n%s\nsource %zu bytes\n%s";
    /* the array facts, where given (nflags > 0): the first emission may not
     * show them all (at a lower occupancy another one may store by TMA where
     * this one did not) */
    char facts[2 * 256 + 1] = "any";
    for (int i = 0; i < nflags && i < 256; i++) snprintf(facts + 2 * i, 3, "%02x", flags[i]);
    size_t nheader = strlen(cuda_device_header), nsource = strlen(source);
    const char *opts = cuda_nvrtc_options(), *a = sm90a ? "a" : "";
    const char *rule = cuda_compile_settles()
                           ? "lowered while ptxas spills (fewest spills kept; the entry: its occupancy cap, source hash, image)"
                           : "as asked (the entry: its occupancy cap, source hash, image)";
    int n = snprintf(NULL, 0, fmt, TILEC_VERSION, s->arch, cuda_nvrtc_version(), s->arch, a, opts, rule, facts,
                     nheader, cuda_device_header, nsource, source);
    char *key = n < 0 ? NULL : malloc((size_t)n + 1);
    if (key) snprintf(key, (size_t)n + 1, fmt, TILEC_VERSION, s->arch, cuda_nvrtc_version(), s->arch, a, opts,
                      rule, facts, nheader, cuda_device_header, nsource, source);
    return key;
}

/* ---- compiling a variant --------------------------------------------------------------- */

/* A disk-cache entry: the kept emission's occupancy cap (CudaCompiled.max_occupancy)
 * and the hash of its source, then its image. */
typedef struct CudaCacheHead {
    char magic[4];   /* "occ2" */
    int32_t max_occupancy;
    uint64_t source_hash;   /* FNV-1a 64 */
} CudaCacheHead;
static const char cache_magic[4] = {'o', 'c', 'c', '2'};

static uint64_t source_hash(const char *source) {
    return disk_cache_fnv1a(source, strlen(source), DISK_CACHE_FNV_SEED);
}

/* TILEC_CACHE_LOG=1: a line on stderr for each variant, from the cache or compiled. */
static bool cache_log(void) {
    const char *v = getenv("TILEC_CACHE_LOG");
    return v && *v && strcmp(v, "0") != 0;
}

/* Does kernel `name`'s emission `code` fit the device's shared memory per block? */
static tile_status smem_fits(tile_ctx *ctx, const char *name, const CudaKernelCode *code) {
    CudaState *s = state(ctx);
    if (code->smem_bytes <= s->max_smem_optin) return TILE_OK;
    return tile_error(ctx, TILE_ERR_COMPILE,
                      "kernel '%s' needs %d bytes of shared memory; the device allows %d (use smaller tiles)",
                      name, code->smem_bytes, s->max_smem_optin);
}

typedef enum { CACHE_MISS, CACHE_HIT, CACHE_OTHER } CacheLookup;

/* The entry of `key` (malloc'd): compiled ahead (a copy; *ahead set), else
 * the disk cache's; false when neither has it. */
static bool entry_get(CudaState *s, const char *key, void **entry, size_t *size, bool *ahead) {
    *ahead = false;
    const Prefetched *p = prefetched_find(s, key);
    if (p && (*entry = malloc(p->size)) != NULL) {
        memcpy(*entry, p->entry, p->size);
        *size = p->size;
        *ahead = true;
        return true;
    }
    return s->cache_dir[0] && disk_cache_get(s->cache_dir, CUDA_CACHE_KIND, key, entry, size, cuda_cache_warn, NULL);
}

/* Looks up `key` for kernel `k` whose first emission (options *opt) is
 * *code.  CACHE_HIT: *image (malloc'd, *size bytes) and *head are the
 * entry's, and *code is the emission at the entry's occupancy cap, the one
 * its image was compiled from.  CACHE_OTHER: the entry's image is of another
 * emission at that cap (another variant's, or the emitter's environment set
 * otherwise).  *ahead: the entry was compiled ahead (cuda_prefetch), not
 * read from the disk.  An emission failing is *st, with CACHE_MISS. */
static CacheLookup cache_find(tile_ctx *ctx, tile_kernel *k, const char *key, const CudaEmitOptions *opt,
                              CudaKernelCode *code, void **image, size_t *size, CudaCacheHead *head, bool *ahead,
                              tile_status *st) {
    void *entry = NULL;
    *image = NULL;
    if (!entry_get(state(ctx), key, &entry, size, ahead)) return CACHE_MISS;
    bool ok = *size > sizeof *head && (memcpy(head, entry, sizeof *head), memcmp(head->magic, cache_magic, 4) == 0) &&
              head->max_occupancy >= 0 && (*image = malloc(*size - sizeof *head)) != NULL;
    if (ok) {
        *size -= sizeof *head;
        memcpy(*image, (char *)entry + sizeof *head, *size);
    }
    free(entry);
    if (!ok) return CACHE_MISS;   /* (an entry not written so: compile instead) */
    CudaKernelCode at_cap = {0};
    if (head->max_occupancy != opt->max_occupancy) {   /* the settled emission */
        CudaEmitOptions settled = *opt;
        settled.max_occupancy = head->max_occupancy;
        if ((*st = kernel_args_emit(ctx, k, &settled, &at_cap)) != TILE_OK) {
            free(*image);
            *image = NULL;
            return CACHE_MISS;
        }
    }
    if (source_hash(at_cap.source ? at_cap.source : code->source) != head->source_hash) {
        cuda_code_free(&at_cap);
        free(*image);
        *image = NULL;
        return CACHE_OTHER;
    }
    if (at_cap.source) {
        cuda_code_free(code);
        *code = at_cap;
    }
    return CACHE_HIT;
}

/* Compiles kernel `k` for the array facts `flags` at the highest occupancy
 * up to its own that does not spill (cuda_compile.h).  The disk cache keeps
 * the image under the key of the first emission, with the occupancy cap the
 * rule settled on and the hash of the emission compiled: a cached kernel is
 * emitted once more with that cap where it is not the first's (on sm_90a the
 * cap sets how much shared memory TMA stores may take, so the threads, bytes
 * and tensor maps the launch uses are that emission's), and not compiled.  An
 * emission whose source is not the one compiled (an environment variable of
 * the emitter's set differently) is compiled afresh. */
static tile_status build_variant(tile_ctx *ctx, tile_kernel *k, const unsigned char *flags, CudaVariant **out) {
    CudaState *s = state(ctx);
    const IrFunc *f = k->ir;
    CudaEmitOptions opt = {0, flags, 1, use_wgmma(s), 0, 0, s->arch >= 90};
    CudaKernelCode code;
    tile_status st = kernel_args_emit(ctx, k, &opt, &code);
    if (st != TILE_OK) return st;
    if ((st = smem_fits(ctx, f->name, &code)) != TILE_OK) {
        cuda_code_free(&code);
        return st;
    }
    /* Keyed by the first emission; where that entry's image is another
     * emission's (another variant whose first emission is the same settled
     * otherwise), by the first emission and the variant's array facts.  NULL
     * key (no cache, out of memory): compiled, not cached. */
    char *key = s->cache_dir[0] || s->prefetched ? cuda_cache_key(s, code.source, code.sm90a, NULL, 0) : NULL;
    size_t size = 0;
    void *image = NULL;
    CudaCacheHead head = {{0}, 0, 0};
    bool ahead = false;
    CacheLookup found = key ? cache_find(ctx, k, key, &opt, &code, &image, &size, &head, &ahead, &st) : CACHE_MISS;
    if (found == CACHE_OTHER) {
        free(key);
        key = cuda_cache_key(s, code.source, code.sm90a, flags, f->nparams);
        found = key ? cache_find(ctx, k, key, &opt, &code, &image, &size, &head, &ahead, &st) : CACHE_MISS;
    }
    if (st != TILE_OK) {
        free(key);
        cuda_code_free(&code);
        return st;
    }
    if (image && cache_log())
        fprintf(stderr, "tilec: kernel %s: %s (occupancy cap %d)\n", f->name,
                ahead ? "compiled ahead" : "from the disk cache", head.max_occupancy);
    if (!image) {
        CudaCompiled im;
        char err[16384];
        if (cuda_compile_settled(f, opt, s->arch, &code, &im, err, sizeof err) != 0) {
            free(key);
            cuda_code_free(&code);
            return tile_error(ctx, TILE_ERR_COMPILE, "kernel '%s': %s", f->name, err);
        }
        image = im.image;
        size = im.size;
        im.image = NULL;
        memcpy(head.magic, cache_magic, 4);
        head.max_occupancy = im.max_occupancy;
        head.source_hash = source_hash(code.source);   /* (code: the emission kept) */
        if (cache_log())
            fprintf(stderr, "tilec: kernel %s: compiled (%d NVRTC runs, %.0f ms; occupancy cap %d)\n", f->name,
                    im.compilations, im.compile_ms, im.max_occupancy);
        cuda_compile_free(&im);   /* (its PTX and log; the image is taken) */
        char *entry_out = key && s->cache_dir[0] ? malloc(sizeof head + size) : NULL;
        if (entry_out) {   /* best effort */
            memcpy(entry_out, &head, sizeof head);
            memcpy(entry_out + sizeof head, image, size);
            disk_cache_put(s->cache_dir, CUDA_CACHE_KIND, key, entry_out, sizeof head + size, NULL, 0);
            free(entry_out);
        }
    }
    if ((st = smem_fits(ctx, f->name, &code)) != TILE_OK) {   /* (the settled emission's: a lower occupancy may stage more) */
        free(image);
        free(key);
        cuda_code_free(&code);
        return st;
    }
    free(key);
    CudaVariant *v = calloc(1, sizeof *v);
    int np = f->nparams;
    if (v) v->flags = malloc((size_t)(np > 0 ? np : 1));
    if (!v || !v->flags) {
        free(v);
        free(image);
        cuda_code_free(&code);
        return tile_error(ctx, TILE_ERR_NO_MEMORY, "out of memory");
    }
    memcpy(v->flags, flags, (size_t)np);
    v->threads = code.threads;
    v->smem = code.smem_bytes;
    /* (the image's own emission: compiled now, or emitted again above) */
    v->ntmaps = code.ntmaps;
    memcpy(v->tmaps, code.tmaps, sizeof code.tmaps);
    s->drv.CtxSetCurrent(s->ctx);
    CUresult r = s->drv.ModuleLoadData(&v->module, image);
    free(image);
    if (r == CUDA_SUCCESS) r = s->drv.ModuleGetFunction(&v->fn, v->module, code.name);
    if (r == CUDA_SUCCESS && v->smem > 48 * 1024)
        r = s->drv.FuncSetAttribute(v->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, v->smem);
    cuda_code_free(&code);
    if (r != CUDA_SUCCESS) {
        if (v->module) s->drv.ModuleUnload(v->module);
        free(v->flags);
        free(v);
        return tile_error(ctx, TILE_ERR_COMPILE, "kernel '%s': loading the module failed: %s", f->name, cu_err(s, r));
    }
    *out = v;
    return TILE_OK;
}

/* The array facts of the variant compiled first (the likely one): every
 * array aligned, with 31-bit offsets, and TMA where the driver has it; NULL
 * when out of memory. */
static unsigned char *likely_flags(const CudaState *s, const IrFunc *f) {
    int np = f->nparams;
    unsigned char *flags = calloc((size_t)(np > 0 ? np : 1), 1);
    for (int i = 0; i < np && flags; i++)
        if (f->params[i].kind == IRP_ARRAY)
            flags[i] = s->drv.TensorMapEncodeTiled ? CUDA_ARRAY_FAST : CUDA_ARRAY_FAST & ~CUDA_ARRAY_TMA;
    return flags;
}

static tile_status cuda_compile(tile_ctx *ctx, tile_kernel *k) {
    CudaKernel *ck = calloc(1, sizeof *ck);
    if (!ck) return tile_error(ctx, TILE_ERR_NO_MEMORY, "out of memory");
    /* the likely variant now, so errors show at tile_kernel_get */
    unsigned char *flags = likely_flags(state(ctx), k->ir);
    if (!flags) { free(ck); return tile_error(ctx, TILE_ERR_NO_MEMORY, "out of memory"); }
    CudaVariant *v = NULL;
    tile_status st = build_variant(ctx, k, flags, &v);
    free(flags);
    if (st != TILE_OK) { free(ck); return st; }
    ck->variants = v;
    k->backend_data = ck;
    return TILE_OK;
}

/* ---- compiling ahead (tile_kernel_prefetch) ------------------------------------------ */

/* Keeps entry (key, entry, size), taking both; drops the oldest beyond
 * PREFETCHED_MAX_BYTES.  False (nothing kept, both freed) when out of memory. */
static bool prefetched_add(CudaState *s, char *key, void *entry, size_t size) {
    Prefetched *p = malloc(sizeof *p);
    if (!p) {
        free(key);
        free(entry);
        return false;
    }
    *p = (Prefetched){s->prefetched, key, key_hash(key), entry, size};
    s->prefetched = p;
    s->prefetched_bytes += size + strlen(key);
    while (s->prefetched_bytes > PREFETCHED_MAX_BYTES && s->prefetched->next) {
        Prefetched **last = &s->prefetched;
        while ((*last)->next) last = &(*last)->next;
        s->prefetched_bytes -= (*last)->size + strlen((*last)->key);
        prefetched_free(*last);
        *last = NULL;
    }
    return true;
}

/* One variant of cuda_prefetch: in, the state (read only), the IR and the
 * variant's array facts; then its first emission and disk-cache key (none
 * where it is not to be compiled); out, the entry build_variant will find
 * under that key, or none. */
typedef struct PrefetchJob {
    const CudaState *s;
    const IrFunc *f;
    unsigned char *flags;   /* per param (CUDA_ARRAY_*), malloc'd */
    CudaEmitOptions opt;
    CudaKernelCode code;
    bool emitted;
    char *key;
    void *entry;
    size_t size;
    double ms;              /* NVRTC's time */
    bool on_disk;           /* the disk cache had the entry already */
} PrefetchJob;

/* Phase 1 of cuda_prefetch, on a worker thread: job i's first emission and
 * key, as build_variant makes them.  Touches only its job and the state
 * read-only.  A failure leaves no key: build_variant meets it again and
 * reports it. */
static void prefetch_emit(void *user, int i) {
    PrefetchJob *j = &((PrefetchJob *)user)[i];
    const CudaState *s = j->s;
    j->opt = (CudaEmitOptions){0, j->flags, 1, use_wgmma(s), 0, 0, s->arch >= 90};
    Diag d;
    diag_init(&d, "", "");
    j->emitted = cuda_emit(j->f, &j->opt, &j->code, &d) == 0;
    diag_free(&d);
    if (j->emitted && j->code.smem_bytes <= s->max_smem_optin)
        j->key = cuda_cache_key(s, j->code.source, j->code.sm90a, NULL, 0);
}

/* Phase 2: job i compiled with the occupancy rule into its entry, written to
 * the disk cache too (atomically: disk_cache.h). */
static void prefetch_compile(void *user, int i) {
    PrefetchJob *j = &((PrefetchJob *)user)[i];
    const CudaState *s = j->s;
    CudaCompiled im;
    char err[512];
    if (!j->key || cuda_compile_settled(j->f, j->opt, s->arch, &j->code, &im, err, sizeof err) != 0) return;
    CudaCacheHead head = {{0}, 0, 0};
    memcpy(head.magic, cache_magic, 4);
    head.max_occupancy = im.max_occupancy;
    head.source_hash = source_hash(j->code.source);
    j->entry = malloc(sizeof head + im.size);
    if (j->entry) {
        memcpy(j->entry, &head, sizeof head);
        memcpy((char *)j->entry + sizeof head, im.image, im.size);
        j->size = sizeof head + im.size;
        j->ms = im.compile_ms;
        if (s->cache_dir[0]) disk_cache_put(s->cache_dir, CUDA_CACHE_KIND, j->key, j->entry, j->size, NULL, 0);
    }
    cuda_compile_free(&im);
}

/* The facts of array `a` that a variant is specialised on (emit_cuda.h: CUDA_ARRAY_*). */
static unsigned char array_facts(const CudaState *s, const tile_array *a) {
    unsigned char f = kernel_args_array_facts(a);
    uint64_t unused[4];
    if (s->drv.TensorMapEncodeTiled && kernel_args_tma_strides(a, unused)) f |= CUDA_ARRAY_TMA;
    return f;
}

/* The array facts the launch with `args` will probably specialise f on
 * (cuda_launch's; it drops TMA where the driver then refuses a map),
 * malloc'd; NULL where the arguments are not one per parameter, an array of
 * the parameter's dtype and rank for each array (tile_launch would refuse
 * them). */
static unsigned char *launch_flags(const CudaState *s, const IrFunc *f, const tile_arg *args, int nargs) {
    if (!args || nargs != f->nparams) return NULL;
    for (int i = 0; i < nargs; i++) {
        const IrParam *p = &f->params[i];
        if ((p->kind == IRP_ARRAY) != (args[i].kind == TILE_ARG_ARRAY)) return NULL;
        if (p->kind == IRP_ARRAY &&
            (args[i].array.rank != p->rank || (int)args[i].array.dtype != (int)p->dtype))
            return NULL;
    }
    unsigned char *flags = calloc((size_t)(nargs > 0 ? nargs : 1), 1);
    for (int i = 0; i < nargs && flags; i++)
        if (f->params[i].kind == IRP_ARRAY) flags[i] = array_facts(s, &args[i].array);
    return flags;
}

/* Compiles the likely variants of items[0..n), and the variants their launch
 * arguments need where those differ, on workers_count threads (emitting,
 * then compiling each source not waiting, on disk or asked twice), and
 * keeps the images in the state for build_variant. */
static void cuda_prefetch(tile_ctx *ctx, const tile_prefetch_item *items, int n) {
    CudaState *s = state(ctx);
    PrefetchJob *jobs = calloc((size_t)(2 * n), sizeof *jobs);
    if (!jobs) return;
    int njobs = 0;
    for (int i = 0; i < n; i++) {
        const IrFunc *f = items[i].ir;
        unsigned char *likely = likely_flags(s, f), *launch = launch_flags(s, f, items[i].args, items[i].nargs);
        if (launch && likely && memcmp(launch, likely, (size_t)(f->nparams > 0 ? f->nparams : 1)) == 0) {
            free(launch);
            launch = NULL;
        }
        if (likely && items[i].launch_only) {   /* (compiled at its tile_kernel_get, or another item's job) */
            free(likely);
            likely = NULL;
        }
        if (likely) jobs[njobs++] = (PrefetchJob){.s = s, .f = f, .flags = likely};
        if (launch) jobs[njobs++] = (PrefetchJob){.s = s, .f = f, .flags = launch};
    }
    n = njobs;
    int threads = workers_count(n);
    double t0 = cuda_nvrtc_now_ms(), nvrtc_ms = 0;
    workers_run(n, threads, prefetch_emit, jobs);
    /* Each source once: one waiting already, one on disk, or one earlier
     * here (two modules of a file; a launch's variant whose arrays change
     * nothing the kernel reads) is not compiled again. */
    int on_disk = 0;
    for (int i = 0; i < n; i++) {
        bool again = jobs[i].key && prefetched_touch(s, jobs[i].key);
        for (int k = 0; k < i && jobs[i].key && !again; k++) again = jobs[k].key && !strcmp(jobs[k].key, jobs[i].key);
        void *old = NULL;
        size_t old_size = 0;
        if (!again && jobs[i].key && s->cache_dir[0] &&
            disk_cache_get(s->cache_dir, CUDA_CACHE_KIND, jobs[i].key, &old, &old_size, cuda_cache_warn, NULL)) {
            free(old);   /* (compiled before: build_variant reads it from the disk) */
            on_disk++;
            again = true;
        }
        if (again) {
            free(jobs[i].key);
            jobs[i].key = NULL;
        }
    }
    workers_run(n, threads, prefetch_compile, jobs);
    int kept = 0;
    for (int i = 0; i < n; i++) {
        nvrtc_ms += jobs[i].ms;
        if (jobs[i].entry) {
            kept += prefetched_add(s, jobs[i].key, jobs[i].entry, jobs[i].size);
        } else {
            free(jobs[i].key);
        }
        if (jobs[i].emitted) cuda_code_free(&jobs[i].code);
        free(jobs[i].flags);
    }
    if (cache_log())
        fprintf(stderr, "tilec: compiled %d of %d kernel variants ahead (%d on disk already) on %d thread%s in %.0f ms "
                "(NVRTC %.0f ms in all)\n", kept, n, on_disk, threads, threads == 1 ? "" : "s", cuda_nvrtc_now_ms() - t0, nvrtc_ms);
    free(jobs);
}

static void cuda_release_kernel(tile_ctx *ctx, tile_kernel *k) {
    CudaKernel *ck = k->backend_data;
    if (!ck) return;
    CudaState *s = state(ctx);
    for (CudaVariant *v = ck->variants; v;) {
        CudaVariant *next = v->next;
        if (s && v->module) s->drv.ModuleUnload(v->module);
        free(v->flags);
        free(v);
        v = next;
    }
    free(ck);
    k->backend_data = NULL;
}

/* ---- launching ------------------------------------------------------------------------- */

/* The compiled variant of kernel `k` for the array facts `flags`, compiled now if new. */
static tile_status find_variant(tile_ctx *ctx, tile_kernel *k, const unsigned char *flags, int nargs, CudaVariant **out) {
    CudaKernel *ck = k->backend_data;
    for (CudaVariant *v = ck->variants; v; v = v->next)
        if (memcmp(v->flags, flags, (size_t)nargs) == 0) {
            *out = v;
            return TILE_OK;
        }
    tile_status st = build_variant(ctx, k, flags, out);
    if (st != TILE_OK) return st;
    (*out)->next = ck->variants;
    ck->variants = *out;
    return TILE_OK;
}

/* Variant `v`'s tensor maps over the arguments (emit_cuda.h: CudaTensorMap):
 * -1; or the parameter whose map the driver refused as invalid; or -2 after
 * any other failure of the driver's, in *err. */
static int encode_tmaps(CudaState *s, const CudaVariant *v, const tile_launch_arg *args, CUtensorMap *maps,
                        CUresult *err) {
    for (int m = 0; m < v->ntmaps; m++) {
        const CudaTensorMap *t = &v->tmaps[m];
        const tile_array *a = &args[t->param].array;
        cuuint64_t dim[5], stride[4];
        cuuint32_t box[5], one[5] = {1, 1, 1, 1, 1};
        uint64_t bytes[4];
        if (!kernel_args_tma_strides(a, bytes)) return t->param;   /* (the variant was chosen for these facts) */
        for (int k = 0; k + 1 < a->rank; k++) stride[k] = (cuuint64_t)bytes[k];
        for (int k = 0; k < a->rank; k++) {   /* TMA's order: innermost first */
            dim[k] = (cuuint64_t)a->shape[a->rank - 1 - k];
            box[k] = (cuuint32_t)t->box[a->rank - 1 - k];
        }
        CUtensorMapSwizzle sw = t->swizzle == 128 ? CU_TENSOR_MAP_SWIZZLE_128B
                                : t->swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                                : t->swizzle == 32 ? CU_TENSOR_MAP_SWIZZLE_32B : CU_TENSOR_MAP_SWIZZLE_NONE;
        CUtensorMapDataType dt = t->elem_bytes == 2 ? CU_TENSOR_MAP_DATA_TYPE_UINT16 : CU_TENSOR_MAP_DATA_TYPE_UINT32;
        /* elements outside the array read as zero (OOB_FILL_NONE), as the loads' padding says */
        CUresult r = s->drv.TensorMapEncodeTiled(&maps[m], dt, (cuuint32_t)a->rank, a->data, dim, stride, box, one,
                                                 CU_TENSOR_MAP_INTERLEAVE_NONE, sw, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                                                 CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
        if (r == CUDA_ERROR_INVALID_VALUE) return t->param;
        if (r != CUDA_SUCCESS) {
            *err = r;
            return -2;
        }
    }
    return -1;
}

static tile_status cuda_launch(tile_ctx *ctx, tile_kernel *k, const int grid[3], const tile_launch_arg *args,
                               int nargs, void *stream) {
    CudaState *s = state(ctx);
    CudaKernel *ck = k->backend_data;
    const IrFunc *f = k->ir;
    if (!ck) return tile_error(ctx, TILE_ERR_INTERNAL, "kernel '%s' was not compiled", f->name);
    unsigned char flags[256];
    if (nargs > 256) return tile_error(ctx, TILE_ERR_UNSUPPORTED, "more than 256 kernel parameters");
    memset(flags, 0, sizeof flags);
    for (int i = 0; i < nargs; i++)
        if (f->params[i].kind == IRP_ARRAY) flags[i] = array_facts(s, &args[i].array);
    /* the variant for these facts and its tensor maps; should the driver
     * refuse an array's map after all, that array is specialised without */
    CudaVariant *v;
    CUtensorMap maps[CUDA_MAX_TMAPS];
    for (;;) {
        tile_status st = find_variant(ctx, k, flags, nargs, &v);
        if (st != TILE_OK) return st;
        CUresult err = CUDA_SUCCESS;
        int refused = encode_tmaps(s, v, args, maps, &err);
        if (refused == -2)
            return tile_error(ctx, TILE_ERR_LAUNCH, "kernel '%s': encoding a tensor map failed: %s", f->name, cu_err(s, err));
        if (refused < 0) break;
        flags[refused] &= (unsigned char)~CUDA_ARRAY_TMA;
    }
    /* every argument in an 8-byte slot (a tensor map in its own); kernelParams points at them */
    KernelArgs ka;
    tile_status st = kernel_args_build(ctx, f, args, v->ntmaps, &ka);
    if (st != TILE_OK) return st;
    for (int m = 0; m < v->ntmaps; m++) ka.params[ka.nslots + m] = &maps[m];
    s->drv.CtxSetCurrent(s->ctx);
    CUresult r = s->drv.LaunchKernel(v->fn, (unsigned)grid[0], (unsigned)grid[1], (unsigned)grid[2],
                                     (unsigned)v->threads, 1, 1, (unsigned)v->smem, (CUstream)stream, ka.params, NULL);
    kernel_args_free(&ka);
    if (r != CUDA_SUCCESS)
        return tile_error(ctx, TILE_ERR_LAUNCH, "kernel '%s': launch failed: %s", f->name, cu_err(s, r));
    return TILE_OK;
}

/* ---- memory, synchronisation, events --------------------------------------------------- */

static tile_status cuda_malloc(tile_ctx *ctx, size_t bytes, void **ptr) {
    CudaState *s = state(ctx);
    CUdeviceptr p = 0;
    s->drv.CtxSetCurrent(s->ctx);
    CUresult r = s->drv.MemAlloc(&p, bytes ? bytes : 1);
    if (r != CUDA_SUCCESS)
        return tile_error(ctx, r == CUDA_ERROR_OUT_OF_MEMORY ? TILE_ERR_NO_MEMORY : TILE_ERR_LAUNCH,
                          "cannot allocate %zu bytes on the GPU: %s", bytes, cu_err(s, r));
    *ptr = (void *)(uintptr_t)p;
    return TILE_OK;
}

static tile_status cuda_free(tile_ctx *ctx, void *ptr) {
    CudaState *s = state(ctx);
    if (!ptr) return TILE_OK;
    CU_CHECK(ctx, s->drv.MemFree((CUdeviceptr)(uintptr_t)ptr), TILE_ERR_INVALID_ARG, "freeing GPU memory");
    return TILE_OK;
}

static tile_status cuda_memcpy(tile_ctx *ctx, void *dst, const void *src, size_t bytes, tile_copy_kind kind) {
    CudaState *s = state(ctx);
    CUresult r;
    s->drv.CtxSetCurrent(s->ctx);
    switch (kind) {
    case TILE_COPY_H2D: r = s->drv.MemcpyHtoD((CUdeviceptr)(uintptr_t)dst, src, bytes); break;
    case TILE_COPY_D2H: r = s->drv.MemcpyDtoH(dst, (CUdeviceptr)(uintptr_t)src, bytes); break;
    default: r = s->drv.MemcpyDtoD((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, bytes); break;
    }
    if (r != CUDA_SUCCESS)
        return tile_error(ctx, TILE_ERR_LAUNCH, "copying %zu bytes: %s (an earlier kernel may have failed)", bytes, cu_err(s, r));
    return TILE_OK;
}

static tile_status cuda_memset(tile_ctx *ctx, void *dst, int byte, size_t bytes) {
    CudaState *s = state(ctx);
    CU_CHECK(ctx, s->drv.MemsetD8((CUdeviceptr)(uintptr_t)dst, (unsigned char)byte, bytes), TILE_ERR_LAUNCH, "memset");
    return TILE_OK;
}

static tile_status cuda_synchronize(tile_ctx *ctx) {
    CudaState *s = state(ctx);
    s->drv.CtxSetCurrent(s->ctx);
    CU_CHECK(ctx, s->drv.CtxSynchronize(), TILE_ERR_LAUNCH, "a kernel failed");
    return TILE_OK;
}

static tile_status cuda_mem_info(tile_ctx *ctx, size_t *free_bytes, size_t *total_bytes) {
    CudaState *s = state(ctx);
    s->drv.CtxSetCurrent(s->ctx);
    CU_CHECK(ctx, s->drv.MemGetInfo(free_bytes, total_bytes), TILE_ERR_LAUNCH, "querying GPU memory");
    return TILE_OK;
}

static tile_status cuda_event_create(tile_ctx *ctx, void **ev) {
    CudaState *s = state(ctx);
    CUevent e;
    CU_CHECK(ctx, s->drv.EventCreate(&e, CU_EVENT_DEFAULT), TILE_ERR_LAUNCH, "creating an event");
    *ev = e;
    return TILE_OK;
}

static tile_status cuda_event_record(tile_ctx *ctx, void *ev, void *stream) {
    CU_CHECK(ctx, state(ctx)->drv.EventRecord((CUevent)ev, (CUstream)stream), TILE_ERR_LAUNCH, "recording an event");
    return TILE_OK;
}

static tile_status cuda_event_elapsed_ms(tile_ctx *ctx, void *start, void *end, float *ms) {
    CudaState *s = state(ctx);
    CU_CHECK(ctx, s->drv.EventSynchronize((CUevent)end), TILE_ERR_LAUNCH, "waiting for an event");
    CU_CHECK(ctx, s->drv.EventElapsedTime(ms, (CUevent)start, (CUevent)end), TILE_ERR_LAUNCH, "timing events");
    return TILE_OK;
}

static void cuda_event_destroy(tile_ctx *ctx, void *ev) {
    if (state(ctx) && ev) state(ctx)->drv.EventDestroy((CUevent)ev);
}

static const tile_backend_ops cuda_ops = {
    .name = "cuda",
    .init = cuda_init,
    .destroy = cuda_destroy,
    .device_name = cuda_device_name,
    .compile = cuda_compile,
    .release_kernel = cuda_release_kernel,
    .prefetch = cuda_prefetch,
    .launch = cuda_launch,
    .malloc_ = cuda_malloc,
    .free_ = cuda_free,
    .memcpy_ = cuda_memcpy,
    .memset_ = cuda_memset,
    .synchronize = cuda_synchronize,
    .mem_info = cuda_mem_info,
    .event_create = cuda_event_create,
    .event_record = cuda_event_record,
    .event_elapsed_ms = cuda_event_elapsed_ms,
    .event_destroy = cuda_event_destroy,
    .codegen_tag = cuda_codegen_tag,
    .multiprocessors = cuda_multiprocessors,
};

const tile_backend_ops *tile_cuda_backend(void) { return &cuda_ops; }
