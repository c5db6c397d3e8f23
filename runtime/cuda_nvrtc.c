/* cuda_nvrtc.c: generated CUDA C++ -> PTX and cubin with NVRTC (cuda_nvrtc.h). */
#include "cuda_nvrtc.h"
#include "emit_cuda.h"

#include <nvrtc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double cuda_nvrtc_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* (made once, under pthread_once: contexts on several threads and the
 * compile threads of cuda_prefetch read it; so is cuda_nvrtc_options's) */
static char version_text[32];
static void make_version_text(void) {
    int major = 0, minor = 0;
    if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) snprintf(version_text, sizeof version_text, "?");
    else snprintf(version_text, sizeof version_text, "%d.%d", major, minor);
}

const char *cuda_nvrtc_version(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, make_version_text);
    return version_text;
}

void cuda_binary_free(CudaBinary *b) {
    if (!b) return;
    free(b->ptx);
    free(b->cubin);
    free(b->log);
    memset(b, 0, sizeof *b);
}

static char *get_log(nvrtcProgram prog) {
    size_t n = 0;
    if (nvrtcGetProgramLogSize(prog, &n) != NVRTC_SUCCESS) n = 0;
    char *log = malloc(n + 1);
    if (!log) return NULL;
    log[0] = 0;
    if (n && nvrtcGetProgramLog(prog, log) != NVRTC_SUCCESS) log[0] = 0;
    log[n] = 0;
    return log;
}

/* The options of every compilation besides the architecture; the last one
 * (ptxas -v) only when a cubin is wanted.  cuda_nvrtc_options() spells them
 * for cache keys, so a change here changes every key. */
static const char *const fixed_opts[] = {"--std=c++17", "-default-device", "--ptxas-options=-v"};
enum { NFIXED_OPTS = sizeof fixed_opts / sizeof fixed_opts[0] };

static char options_text[256];
static void make_options_text(void) {
    size_t k = 0;
    for (int i = 0; i < NFIXED_OPTS; i++)
        k += (size_t)snprintf(options_text + k, sizeof options_text - k, "%s%s", i ? " " : "", fixed_opts[i]);
}

const char *cuda_nvrtc_options(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, make_options_text);
    return options_text;
}

/* One NVRTC compilation for `arch` as compute_XX (PTX) or sm_XX (cubin). */
static int compile_once(const char *source, const char *name, const char *gpu_arch, int verbose,
                        nvrtcProgram *prog, char **log, char *err, size_t errlen) {
    const char *hdrs[] = {cuda_device_header};
    const char *hdr_names[] = {CUDA_DEVICE_HEADER_NAME};
    nvrtcResult r = nvrtcCreateProgram(prog, source, name, 1, hdrs, hdr_names);
    if (r != NVRTC_SUCCESS) {
        snprintf(err, errlen, "NVRTC: %s", nvrtcGetErrorString(r));
        return -1;
    }
    char arch_opt[64];
    snprintf(arch_opt, sizeof arch_opt, "--gpu-architecture=%s", gpu_arch);
    const char *opts[1 + NFIXED_OPTS] = {arch_opt};
    for (int i = 0; i < NFIXED_OPTS; i++) opts[1 + i] = fixed_opts[i];
    int nopts = verbose ? 1 + NFIXED_OPTS : NFIXED_OPTS;
    r = nvrtcCompileProgram(*prog, nopts, opts);
    *log = get_log(*prog);
    if (r != NVRTC_SUCCESS) {
        snprintf(err, errlen, "NVRTC failed to compile the generated kernel %s (%s):\n%s", name,
                 nvrtcGetErrorString(r), *log ? *log : "");
        nvrtcDestroyProgram(prog);
        return -1;
    }
    return 0;
}

int cuda_nvrtc_compile(const char *source, const char *name, int arch, int arch_specific, int want_cubin,
                       CudaBinary *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    double t0 = cuda_nvrtc_now_ms();
    char gpu_arch[32];
    snprintf(gpu_arch, sizeof gpu_arch, "%s_%d%s", want_cubin ? "sm" : "compute", arch, arch_specific ? "a" : "");
    nvrtcProgram prog;
    char *log = NULL;
    if (compile_once(source, name, gpu_arch, want_cubin, &prog, &log, err, errlen) != 0) {
        free(log);
        return -1;
    }
    size_t n = 0;
    if (nvrtcGetPTXSize(prog, &n) == NVRTC_SUCCESS && n) {
        out->ptx = malloc(n + 1);
        if (out->ptx && nvrtcGetPTX(prog, out->ptx) == NVRTC_SUCCESS) {
            out->ptx[n] = 0;
            out->ptx_size = n;
        } else {   /* (not half a PTX text without its end: none) */
            free(out->ptx);
            out->ptx = NULL;
        }
    }
    if (want_cubin && nvrtcGetCUBINSize(prog, &n) == NVRTC_SUCCESS && n) {
        out->cubin = malloc(n);
        if (out->cubin && nvrtcGetCUBIN(prog, out->cubin) == NVRTC_SUCCESS) out->cubin_size = n;
        else {
            free(out->cubin);
            out->cubin = NULL;
        }
    }
    nvrtcDestroyProgram(&prog);
    out->log = log ? log : calloc(1, 1);
    out->compile_ms = cuda_nvrtc_now_ms() - t0;
    if (!out->ptx) {   /* (callers read the PTX: no success without it) */
        snprintf(err, errlen, "NVRTC produced no PTX for %s", name);
        cuda_binary_free(out);
        return -1;
    }
    return 0;
}

int cuda_nvrtc_compile_fresh(const char *source, const char *name, int arch, int arch_specific, int want_cubin,
                             CudaBinary *out, char *err, size_t errlen) {
    static unsigned long count;   /* contexts may compile on several threads */
    unsigned long mine = __atomic_fetch_add(&count, 1, __ATOMIC_RELAXED);
    size_t n = strlen(source) + 128;
    char *unique = malloc(n);
    if (!unique) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    snprintf(unique, n, "%s\n__device__ int tilec_nonce_%ld_%ld_%lu;\n", source, (long)getpid(), (long)time(NULL),
             mine);
    int rc = cuda_nvrtc_compile(unique, name, arch, arch_specific, want_cubin, out, err, errlen);
    free(unique);
    return rc;
}

static int number_before(const char *s, const char *word) {
    const char *p = strstr(s, word);
    if (!p) return 0;
    while (p > s && (p[-1] == ' ')) p--;
    while (p > s && p[-1] >= '0' && p[-1] <= '9') p--;
    return atoi(p);
}

void cuda_nvrtc_resources(const char *log, CudaResources *r) {
    memset(r, 0, sizeof *r);
    if (!log) return;
    const char *p = strstr(log, "Used ");
    if (p) {
        r->registers = atoi(p + 5);
        r->found = 1;
    }
    const char *q = strstr(log, "bytes stack frame");
    if (q) {
        const char *line = q;
        while (line > log && line[-1] != '\n') line--;
        r->stack_frame = number_before(line, "bytes stack frame");
        r->spill_stores = number_before(line, "bytes spill stores");
        r->spill_loads = number_before(line, "bytes spill loads");
    }
}
