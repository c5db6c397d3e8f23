/* emu_backend.c: the emu backend of libtile (backend.h): the CUDA backend's
 * code, run on the host.
 *
 *   IR --cuda_emit--> CUDA C++ --host C++ compiler, with emu_device.h--> a
 *   shared object --dlopen--> every block run, its threads as fibers.
 *
 * What it is for: the CUDA emitter's kernels checked against the
 * interpreter on a machine without a GPU (tests/gpu/gpu_check with
 * GPU_CHECK_BACKEND=emu, ctest -L emu).  It emits what the CUDA backend
 * emits for an sm_80 device (mma.sync, ldmatrix, cp.async, shuffles), with
 * the same specialisation on the arrays' facts (vector accesses, 32-bit
 * offsets), or with TILEC_EMU_ARCH=sm_90a for an sm_90 device (wgmma, TMA
 * copies and mbarriers too, the tensor maps encoded here for emu_device.h).  Memory and events
 * are the CPU backend's (host memory, host clock).  Slow: a test tool, not
 * a way to run programs.
 *
 * The C++ compiler: $TILEC_EMU_CXX (one program's path or name, no
 * arguments), else c++ (g++ and clang++ both do).  Each kernel variant is
 * compiled once, into a directory of the context's own under $TMPDIR (else
 * /tmp; it must allow running code) that goes with the context; a process
 * that dies leaves its directory behind, for the next context to remove.  A kernel's scheduler state is its
 * shared object's: launches take a process-wide lock, so host threads that
 * launch at once run one after another. */
#define _GNU_SOURCE
#include "backend.h"
#include "emit_cuda.h"
#include "emu_backend.h"
#include "kernel_args.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef int (*EmuLaunchFn)(const int grid[3], int threads, int smem, void *const *args, char *err, int errlen);

typedef struct EmuState {
    char dir[4096];           /* the context's directory: headers, sources, objects */
    char cxx[1024];
    int lock_fd;              /* the directory's lock, held while the context lives (remove_stale_dirs) */
    bool sm90a;               /* TILEC_EMU_ARCH=sm_90a: Hopper's code (wgmma), else sm_80's */
    bool tma;                 /* sm_90 or sm_90a: TMA (an sm_90 device's code without wgmma: TILEC_WGMMA=0's) */
    int nobjects;             /* objects compiled so far (their names) */
} EmuState;

typedef struct EmuVariant {
    struct EmuVariant *next;
    unsigned char *flags;     /* per param (CUDA_ARRAY_*) */
    void *lib;
    EmuLaunchFn launch;
    int threads, smem;
    int ntmaps;               /* tensor maps passed after the parameters (emit_cuda.h) */
    CudaTensorMap tmaps[CUDA_MAX_TMAPS];
} EmuVariant;

typedef struct EmuKernel {
    EmuVariant *variants;
} EmuKernel;

static EmuState *state(tile_ctx *ctx) { return (EmuState *)ctx->backend_state; }

static bool write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return false;
    bool ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok;
}

/* Removes the context's directory and what it holds (no subdirectories). */
static void remove_dir(const char *dir) {
    char cmd[4400];
    if (!dir[0]) return;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "tilec: warning: could not remove %s\n", dir);
}

/* Directories of contexts whose processes died (a crash, a kill) in `tmp`:
 * named tilec-emu-PID-..., this user's, no process PID left here, and their
 * lock file (EMU_LOCK) held by no one: a live context holds its own lock,
 * which also keeps the directory of a process on another host (a shared
 * $TMPDIR) or in another PID namespace. */
#define EMU_LOCK "lock"
static void remove_stale_dirs(const char *tmp) {
    DIR *d = opendir(tmp);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        int pid = 0, end = 0;
        if (sscanf(e->d_name, "tilec-emu-%d-%n", &pid, &end) != 1 || end == 0 || pid <= 0 || strchr(e->d_name, '\''))
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;   /* alive, or not ours to know */
        char path[4200], lock[4300];
        struct stat st;
        if (snprintf(path, sizeof path, "%s/%s", tmp, e->d_name) >= (int)sizeof path) continue;
        if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) continue;
        snprintf(lock, sizeof lock, "%s/" EMU_LOCK, path);
        int fd = open(lock, O_RDWR | O_CLOEXEC);
        if (fd < 0) continue;   /* (no lock yet: a context still being made) */
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) remove_dir(path);
        close(fd);
    }
    closedir(d);
}

static tile_status emu_init(tile_ctx *ctx, int device) {
    if (device != 0) return tile_error(ctx, TILE_ERR_NO_DEVICE, "the emu backend has one device, 0 (not %d)", device);
    EmuState *s = calloc(1, sizeof *s);
    if (!s) return tile_error(ctx, TILE_ERR_NO_MEMORY, "out of memory");
    s->lock_fd = -1;
    const char *cxx = getenv("TILEC_EMU_CXX");
    snprintf(s->cxx, sizeof s->cxx, "%s", cxx && *cxx ? cxx : "c++");
    if (strchr(s->cxx, '\'')) {
        free(s);
        return tile_error(ctx, TILE_ERR_INVALID_ARG, "TILEC_EMU_CXX may not hold a quote");
    }
    const char *arch = getenv("TILEC_EMU_ARCH");
    if (arch && *arch && strcmp(arch, "sm_80") != 0 && strcmp(arch, "sm_90") != 0 && strcmp(arch, "sm_90a") != 0) {
        free(s);
        return tile_error(ctx, TILE_ERR_INVALID_ARG, "TILEC_EMU_ARCH is '%s'; the emu backend runs sm_80, sm_90 or sm_90a code",
                          arch);
    }
    s->sm90a = arch && strcmp(arch, "sm_90a") == 0;
    s->tma = s->sm90a || (arch && strcmp(arch, "sm_90") == 0);
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp || strchr(tmp, '\'')) tmp = "/tmp";
    remove_stale_dirs(tmp);
    snprintf(s->dir, sizeof s->dir, "%s/tilec-emu-%d-XXXXXX", tmp, (int)getpid());
    if (!mkdtemp(s->dir)) {
        tile_status st = tile_error(ctx, TILE_ERR_NO_DEVICE, "emu backend: cannot make %s: %s", s->dir, strerror(errno));
        free(s);
        return st;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/" EMU_LOCK, s->dir);
    s->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    bool ok = s->lock_fd >= 0 && flock(s->lock_fd, LOCK_EX | LOCK_NB) == 0;
    snprintf(path, sizeof path, "%s/%s", s->dir, CUDA_DEVICE_HEADER_NAME);
    ok = ok && write_file(path, cuda_device_header);
    snprintf(path, sizeof path, "%s/emu_device.h", s->dir);
    ok = ok && write_file(path, emu_device_header);
    /* the compiler runs at all (else the context fails now, not each kernel) */
    char cmd[8400];
    snprintf(cmd, sizeof cmd, "'%s' --version >/dev/null 2>&1", s->cxx);
    if (!ok || system(cmd) != 0) {
        tile_status st = ok ? tile_error(ctx, TILE_ERR_NO_DEVICE, "emu backend: no C++ compiler '%s' (set TILEC_EMU_CXX)", s->cxx)
                            : tile_error(ctx, TILE_ERR_NO_DEVICE, "emu backend: cannot write into %s", s->dir);
        remove_dir(s->dir);
        if (s->lock_fd >= 0) close(s->lock_fd);
        free(s);
        return st;
    }
    ctx->backend_state = s;
    return TILE_OK;
}

static void emu_destroy(tile_ctx *ctx) {
    EmuState *s = state(ctx);
    if (!s) return;
    remove_dir(s->dir);
    if (s->lock_fd >= 0) close(s->lock_fd);
    free(s);
    ctx->backend_state = NULL;
}

static const char *emu_device_name(tile_ctx *ctx) {
    const EmuState *s = state(ctx);
    return s && s->sm90a ? "emulated CUDA device (sm_90a code on the host)"
           : s && s->tma ? "emulated CUDA device (sm_90 code on the host)"
                         : "emulated CUDA device (sm_80 code on the host)";
}
/* (as the CUDA backend's: programs that pick tile shapes by it see the code they get) */
static const char *emu_codegen_tag(tile_ctx *ctx) { return state(ctx) && state(ctx)->sm90a ? "wgmma" : "mma.sync"; }

/* The compiler's messages, at most the first 4 KiB, appended to the error. */
static void append_log(tile_ctx *ctx, const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return;
    char buf[4097];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    tile_error_append(ctx, buf);
}

/* Compiles kernel `k` for the array facts `flags` into a shared object. */
static tile_status build_variant(tile_ctx *ctx, tile_kernel *k, const unsigned char *flags, EmuVariant **out) {
    EmuState *s = state(ctx);
    const IrFunc *f = k->ir;
    CudaEmitOptions opt = {0};
    opt.array_flags = flags;
    opt.line_directives = 1;
    opt.host_entry = 1;
    opt.target_sm90a = s->sm90a;
    opt.target_tma = s->tma;
    CudaKernelCode code;
    tile_status st = kernel_args_emit(ctx, k, &opt, &code);
    if (st != TILE_OK) return st;
    int id = s->nobjects++;
    char src[4200], obj[4200], log[4200], cmd[32768];
    snprintf(src, sizeof src, "%s/k%d.cu.cpp", s->dir, id);
    snprintf(obj, sizeof obj, "%s/k%d.so", s->dir, id);
    snprintf(log, sizeof log, "%s/k%d.log", s->dir, id);
    bool wrote = write_file(src, code.source);
    int threads = code.threads, smem = code.smem_bytes, ntmaps = code.ntmaps;
    CudaTensorMap tmaps[CUDA_MAX_TMAPS];
    memcpy(tmaps, code.tmaps, sizeof tmaps);
    cuda_code_free(&code);
    if (!wrote) return tile_error(ctx, TILE_ERR_COMPILE, "kernel '%s': cannot write %s", f->name, src);
    /* -fno-strict-aliasing: the kernels read floats through uint4 pointers, as
     * CUDA allows; no _FORTIFY_SOURCE: its longjmp refuses to change stacks */
    snprintf(cmd, sizeof cmd,
             "'%s' -std=c++17 -O1 -fPIC -shared -w -fno-strict-aliasing -U_FORTIFY_SOURCE -I'%s' "
             "-include '%s/emu_device.h' -o '%s' '%s' >'%s' 2>&1",
             s->cxx, s->dir, s->dir, obj, src, log);
    int rc = system(cmd);
    if (rc != 0) {
        st = tile_error(ctx, TILE_ERR_COMPILE, "kernel '%s': the host compiler failed on %s (exit %d):",
                        f->name, src, WIFEXITED(rc) ? WEXITSTATUS(rc) : -1);
        append_log(ctx, log);
        return st;
    }
    void *lib = dlopen(obj, RTLD_NOW | RTLD_LOCAL);
    EmuLaunchFn launch = lib ? (EmuLaunchFn)dlsym(lib, "tile_emu_launch") : NULL;
    if (!launch) {
        st = tile_error(ctx, TILE_ERR_COMPILE, "kernel '%s': loading %s failed (TMPDIR must allow running code): %s",
                        f->name, obj, dlerror());
        if (lib) dlclose(lib);
        return st;
    }
    EmuVariant *v = calloc(1, sizeof *v);
    int np = f->nparams;
    if (v) v->flags = malloc((size_t)(np > 0 ? np : 1));
    if (!v || !v->flags) {
        free(v);
        dlclose(lib);
        return tile_error(ctx, TILE_ERR_NO_MEMORY, "out of memory");
    }
    memcpy(v->flags, flags, (size_t)np);
    v->lib = lib;
    v->launch = launch;
    v->threads = threads;
    v->smem = smem;
    v->ntmaps = ntmaps;
    memcpy(v->tmaps, tmaps, sizeof tmaps);
    *out = v;
    return TILE_OK;
}

static tile_status emu_compile(tile_ctx *ctx, tile_kernel *k) {
    EmuKernel *ek = calloc(1, sizeof *ek);
    if (!ek) return tile_error(ctx, TILE_ERR_NO_MEMORY, "out of memory");
    k->backend_data = ek;   /* variants are compiled at launch, for their arrays' facts */
    return TILE_OK;
}

static void emu_release_kernel(tile_ctx *ctx, tile_kernel *k) {
    EmuKernel *ek = k->backend_data;
    if (!ek) return;
    for (EmuVariant *v = ek->variants; v;) {
        EmuVariant *next = v->next;
        dlclose(v->lib);
        free(v->flags);
        free(v);
        v = next;
    }
    free(ek);
    k->backend_data = NULL;
}

/* Array `a`'s facts; the tensor map's where sm_90 code is emulated and a
 * map can describe the array (as the CUDA backend's, so the same code). */
static unsigned char array_facts(const EmuState *s, const tile_array *a) {
    unsigned char f = kernel_args_array_facts(a);
    uint64_t unused[4];
    if (s->tma && kernel_args_tma_strides(a, unused)) f |= CUDA_ARRAY_TMA;
    return f;
}

/* Tensor map `t` of array `a` as emu_device.h reads it (its TileTensorMap
 * words): 0 the base, 1 rank | element bytes << 8 | swizzle bytes << 16, 2..6
 * the extents, 7..10 the byte strides of axes 1.. (all innermost first, as
 * TMA's coordinates), 11..15 the box.  The driver's rules for a map are
 * checked as cuTensorMapEncodeTiled checks them. */
static bool encode_tmap(const CudaTensorMap *t, const tile_array *a, unsigned long long words[16]) {
    uint64_t stride[4];
    int r = a->rank;
    if (!kernel_args_tma_strides(a, stride)) return false;
    memset(words, 0, 16 * sizeof *words);
    words[0] = (unsigned long long)(uintptr_t)a->data;
    words[1] = (unsigned long long)r | (unsigned long long)t->elem_bytes << 8 | (unsigned long long)t->swizzle << 16;
    for (int k = 0; k < r; k++) {
        int box = t->box[r - 1 - k];
        if (box < 1 || box > 256) return false;
        words[2 + k] = (unsigned long long)a->shape[r - 1 - k];
        words[11 + k] = (unsigned long long)box;
        if (k + 1 < r) words[7 + k] = stride[k];
    }
    int inner = t->box[r - 1] * t->elem_bytes;
    return inner % 16 == 0 && (!t->swizzle || inner <= t->swizzle);
}

static tile_status emu_launch(tile_ctx *ctx, tile_kernel *k, const int grid[3], const tile_launch_arg *args,
                              int nargs, void *stream) {
    EmuKernel *ek = k->backend_data;
    const IrFunc *f = k->ir;
    if (!ek) return tile_error(ctx, TILE_ERR_INTERNAL, "kernel '%s' was not compiled", f->name);
    unsigned char flags[256];
    if (nargs > 256) return tile_error(ctx, TILE_ERR_UNSUPPORTED, "more than 256 kernel parameters");
    memset(flags, 0, sizeof flags);
    for (int i = 0; i < nargs; i++)
        if (f->params[i].kind == IRP_ARRAY) flags[i] = array_facts(state(ctx), &args[i].array);
    /* the variant for these facts and its tensor maps; an array whose map
     * breaks the driver's rules is specialised without (as the CUDA backend does) */
    EmuVariant *v;
    _Alignas(64) unsigned long long maps[CUDA_MAX_TMAPS][16];   /* (TileTensorMap's alignment) */
    for (;;) {
        v = ek->variants;
        while (v && memcmp(v->flags, flags, (size_t)nargs) != 0) v = v->next;
        if (!v) {
            tile_status st = build_variant(ctx, k, flags, &v);
            if (st != TILE_OK) return st;
            v->next = ek->variants;
            ek->variants = v;
        }
        int refused = -1;
        for (int m = 0; m < v->ntmaps && refused < 0; m++)
            if (!encode_tmap(&v->tmaps[m], &args[v->tmaps[m].param].array, maps[m])) refused = v->tmaps[m].param;
        if (refused < 0) break;
        if (!(flags[refused] & CUDA_ARRAY_TMA))   /* (a map for an array without the fact: the emitter's mistake) */
            return tile_error(ctx, TILE_ERR_INTERNAL, "kernel '%s': a tensor map of parameter %d, which has none", f->name,
                              refused);
        flags[refused] &= (unsigned char)~CUDA_ARRAY_TMA;
    }
    KernelArgs ka;
    tile_status st = kernel_args_build(ctx, f, args, v->ntmaps, &ka);
    if (st != TILE_OK) return st;
    for (int m = 0; m < v->ntmaps; m++) ka.params[ka.nslots + m] = maps[m];
    char err[512] = "";
    static pthread_mutex_t one_at_a_time = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&one_at_a_time);
    int rc = v->launch(grid, v->threads, v->smem, ka.params, err, (int)sizeof err);
    pthread_mutex_unlock(&one_at_a_time);
    kernel_args_free(&ka);
    if (rc != 0) return tile_error(ctx, TILE_ERR_LAUNCH, "kernel '%s' (emulated): %s", f->name, err);
    return TILE_OK;
}

/* Host memory and the host's clock: the CPU backend's. */
const tile_backend_ops *tile_emu_backend(void) {
    static tile_backend_ops ops;
    if (!ops.name) {
        ops = *tile_cpu_backend();
        ops.name = "emu";
        ops.init = emu_init;
        ops.destroy = emu_destroy;
        ops.device_name = emu_device_name;
        ops.compile = emu_compile;
        ops.release_kernel = emu_release_kernel;
        ops.launch = emu_launch;
        ops.codegen_tag = emu_codegen_tag;
        ops.multiprocessors = NULL;
    }
    return &ops;
}
