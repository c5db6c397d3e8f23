/* gpu_check.c: runs kernels on the GPU and on the interpreter (the oracle)
 * with the same fresh random inputs, and compares every array the kernel
 * writes.  Written arrays start poisoned on both sides, so an element the GPU
 * fails to write differs.  Each launch runs twice: with 16-byte aligned
 * arrays (vector accesses) and with arrays shifted by one element (scalar
 * accesses).  A file's kernels are first compiled ahead, all at once
 * (tile_kernel_prefetch).  Exits 77 (skipped) when there is no CUDA driver or device.
 *
 *   gpu_check FILE.tile|FILE.spec...
 * A .tile file carries its launches in comments; a .spec file has lines
 * `file=PATH ...` (PATH relative to the .spec) with the same fields:
 *   // gpu: kernel=NAME grid=X[,Y[,Z]] [tol=T] [-DCONST=V]... [param=SPEC]...
 * SPEC of an array: [d0,d1,...] with optional :lo:hi value range; of a scalar:
 * a number.  tol is the relative L2 error allowed for floats (default by
 * dtype: 1e-5 f32 / f64, 1e-2 bf16 / f16); integers must match exactly. */
#include "tile.h"
#include "scalar.h"
#include "read_file.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXP 32

static int failures, runs;


/* xorshift: reproducible "fresh" inputs (the seed changes per launch) */
static uint64_t rng = 88172645463325252ull;
static double urand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

typedef struct Spec {
    char file[512], kernel[128];
    int grid[3];
    double tol;
    tile_const consts[16];
    char const_names[16][64];
    int nconsts;
    char names[MAXP][64], values[MAXP][128];
    int nvals;
} Spec;

static bool parse_spec(const char *line, const char *dir, const char *tile_path, Spec *s) {
    memset(s, 0, sizeof *s);
    s->grid[0] = s->grid[1] = s->grid[2] = 1;
    s->tol = -1;
    if (tile_path) snprintf(s->file, sizeof s->file, "%s", tile_path);
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", line);
    char *save = NULL;
    for (char *tok = strtok_r(buf, " \t\r\n", &save); tok; tok = strtok_r(NULL, " \t\r\n", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) return false;
        *eq = 0;
        const char *k = tok, *v = eq + 1;
        if (strcmp(k, "file") == 0) {
            if (strlen(dir) + strlen(v) + 2 > sizeof s->file) return false;
            snprintf(s->file, sizeof s->file, "%.255s/%.255s", dir, v);
        }
        else if (strcmp(k, "kernel") == 0) snprintf(s->kernel, sizeof s->kernel, "%s", v);
        else if (strcmp(k, "grid") == 0) sscanf(v, "%d,%d,%d", &s->grid[0], &s->grid[1], &s->grid[2]);
        else if (strcmp(k, "tol") == 0) s->tol = atof(v);
        else if (strncmp(k, "-D", 2) == 0 && s->nconsts < 16) {
            snprintf(s->const_names[s->nconsts], 64, "%s", k + 2);
            tile_const *c = &s->consts[s->nconsts];
            c->name = s->const_names[s->nconsts];
            c->kind = strpbrk(v, ".e") != NULL ? TILE_CONST_FLOAT : TILE_CONST_INT;
            c->f = atof(v);
            c->i = strtoll(v, NULL, 0);
            s->nconsts++;
        } else if (s->nvals < MAXP) {
            snprintf(s->names[s->nvals], 64, "%s", k);
            snprintf(s->values[s->nvals], 128, "%s", v);
            s->nvals++;
        }
    }
    return s->kernel[0] && s->file[0];
}

static double get_elem(tile_dtype t, const void *p) { return scalar_to_double((DType)t, scalar_load((DType)t, p)); }

static void set_elem(tile_dtype t, void *p, double v) {
    scalar_store((DType)t, p, scalar_from_double((DType)t, v));
}

static double default_tol(tile_dtype t) {
    if (t == TILE_BF16 || t == TILE_F16) return 1e-2;
    return 1e-5;
}

/* Compares two host copies of an array: relative L2 for floats (NaN and
 * infinities must sit at the same places), exact for integers. */
static bool compare(const char *what, tile_dtype t, const unsigned char *gpu, const unsigned char *cpu, int64_t n,
                    double tol, char *msg, size_t msglen) {
    int es = tile_dtype_size(t);
    bool is_float = t == TILE_F16 || t == TILE_BF16 || t == TILE_F32 || t == TILE_F64 || t == TILE_TF32;
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        double g = get_elem(t, gpu + i * es), c = get_elem(t, cpu + i * es);
        if (!is_float) {
            if (g != c) {
                snprintf(msg, msglen, "%s[%lld] = %g on the GPU, %g on the interpreter", what, (long long)i, g, c);
                return false;
            }
            continue;
        }
        if (isnan(c) || isinf(c) || isnan(g) || isinf(g)) {
            if (!(isnan(c) && isnan(g)) && g != c) {
                snprintf(msg, msglen, "%s[%lld] = %g on the GPU, %g on the interpreter", what, (long long)i, g, c);
                return false;
            }
            continue;
        }
        num += (g - c) * (g - c);
        den += c * c;
    }
    double rel = den > 0 ? sqrt(num / den) : sqrt(num);
    if (rel > tol) {
        /* name the worst element to help */
        int64_t worst = 0;
        double wd = -1;
        for (int64_t i = 0; i < n; i++) {
            double d = fabs(get_elem(t, gpu + i * es) - get_elem(t, cpu + i * es));
            if (d > wd) wd = d, worst = i;
        }
        snprintf(msg, msglen, "%s: relative L2 error %.3g > %.3g (worst [%lld]: %g on the GPU, %g on the interpreter)", what,
                 rel, tol, (long long)worst, get_elem(t, gpu + worst * es), get_elem(t, cpu + worst * es));
        return false;
    }
    snprintf(msg, msglen, "%s rel.L2 %.2g", what, rel);
    return true;
}

typedef struct Arr {
    tile_array host_cpu, host_gpu, dev;
    void *cpu_mem, *gpu_mem, *dev_mem;
    size_t bytes;
    int64_t numel;
} Arr;

static int run_spec(tile_ctx *cpu, tile_ctx *gpu, const Spec *s, int shift) {
    char msg[1024] = "";
    tile_module *mc = NULL, *mg = NULL;
    tile_kernel *kc = NULL, *kg = NULL;
    runs++;
    printf("run  %s %s\n", s->kernel, shift ? "(unaligned)" : "(aligned)");
    if (tile_module_load_file(cpu, s->file, &mc) != TILE_OK || tile_module_load_file(gpu, s->file, &mg) != TILE_OK ||
        tile_kernel_get(mc, s->kernel, s->consts, s->nconsts, &kc) != TILE_OK) {
        printf("FAIL %s %s: %s\n", s->file, s->kernel, tile_ctx_last_error(kc || !mc ? cpu : cpu));
        failures++;
        return 1;
    }
    if (tile_kernel_get(mg, s->kernel, s->consts, s->nconsts, &kg) != TILE_OK) {
        printf("FAIL %s %s: compiling for the GPU: %s\n", s->file, s->kernel, tile_ctx_last_error(gpu));
        failures++;
        return 1;
    }
    int np = tile_kernel_num_params(kc);
    Arr arrs[MAXP];
    tile_arg argc_[MAXP], argg[MAXP];
    memset(arrs, 0, sizeof arrs);
    bool bad = np > MAXP;
    double tol = s->tol;
    for (int i = 0; i < np && !bad; i++) {
        tile_param_info info;
        tile_kernel_param(kc, i, &info);
        const char *v = NULL;
        for (int j = 0; j < s->nvals; j++)
            if (strcmp(s->names[j], info.name) == 0) v = s->values[j];
        if (!v) { snprintf(msg, sizeof msg, "no value for parameter %s", info.name); bad = true; break; }
        if (!info.is_array) {
            bool f = strpbrk(v, ".e") != NULL;
            tile_arg a = f ? tile_arg_f64(atof(v)) : tile_arg_i64(strtoll(v, NULL, 0));
            argc_[i] = argg[i] = a;
            continue;
        }
        if (tol < 0 && info.written) tol = default_tol(info.dtype);
        int64_t shape[TILE_MAX_DIMS];
        int rank = 0;
        double lo = -2, hi = 2;
        const char *p = v + 1;
        while (*p && *p != ']' && rank < TILE_MAX_DIMS) {
            shape[rank++] = strtoll(p, (char **)&p, 10);
            if (*p == ',') p++;
        }
        if (*p == ']') p++;
        if (*p == ':') { lo = strtod(p + 1, (char **)&p); if (*p == ':') hi = strtod(p + 1, (char **)&p); }
        if (rank != info.rank) { snprintf(msg, sizeof msg, "%s: rank %d, want %d", info.name, rank, info.rank); bad = true; break; }
        Arr *a = &arrs[i];
        int es = tile_dtype_size(info.dtype);
        a->numel = 1;
        for (int d = 0; d < rank; d++) a->numel *= shape[d];
        a->bytes = (size_t)a->numel * (size_t)es;
        a->cpu_mem = malloc(a->bytes + 16);
        a->gpu_mem = malloc(a->bytes + 16);
        if (tile_malloc(gpu, a->bytes + 16, &a->dev_mem) != TILE_OK) { snprintf(msg, sizeof msg, "%s", tile_ctx_last_error(gpu)); bad = true; break; }
        /* inputs: random; written-only arrays: poison */
        bool poison = info.written && strstr(v, ":") == NULL;
        for (int64_t e = 0; e < a->numel; e++) {
            double x;
            if (poison) x = (info.dtype == TILE_BOOL) ? 1 : (info.dtype == TILE_U8 || info.dtype == TILE_I8) ? 77 : -7777;
            else if (info.dtype == TILE_BOOL) x = urand() < 0.5;
            else if (info.dtype == TILE_F16 || info.dtype == TILE_BF16 || info.dtype == TILE_F32 || info.dtype == TILE_F64 ||
                     info.dtype == TILE_TF32)
                x = lo + (hi - lo) * urand();
            else x = floor(lo + (hi - lo + 1) * urand());
            /* a tf32 input gets whole f32 words: their low 13 bits must be
             * dropped alike by the interpreter and the GPU */
            set_elem(info.dtype == TILE_TF32 && !poison ? TILE_F32 : info.dtype, (char *)a->cpu_mem + e * es, x);
        }
        memcpy(a->gpu_mem, a->cpu_mem, a->bytes);
        a->host_cpu = tile_array_contiguous(a->cpu_mem, info.dtype, rank, shape);
        a->dev = tile_array_contiguous((char *)a->dev_mem + shift * es, info.dtype, rank, shape);
        if (tile_memcpy_h2d(gpu, a->dev.data, a->gpu_mem, a->bytes) != TILE_OK) { snprintf(msg, sizeof msg, "%s", tile_ctx_last_error(gpu)); bad = true; break; }
        argc_[i] = tile_arg_array(a->host_cpu);
        argg[i] = tile_arg_array(a->dev);
    }
    if (tol < 0) tol = 1e-5;
    if (!bad && tile_launch(kc, s->grid, argc_, np, NULL) != TILE_OK) {
        snprintf(msg, sizeof msg, "interpreter: %s", tile_ctx_last_error(cpu));
        bad = true;
    }
    if (!bad && (tile_launch(kg, s->grid, argg, np, NULL) != TILE_OK || tile_synchronize(gpu) != TILE_OK)) {
        snprintf(msg, sizeof msg, "GPU: %s", tile_ctx_last_error(gpu));
        bad = true;
    }
    char detail[2048] = "";
    for (int i = 0; i < np && !bad; i++) {
        tile_param_info info;
        tile_kernel_param(kc, i, &info);
        if (!info.is_array || !info.written) continue;
        Arr *a = &arrs[i];
        if (tile_memcpy_d2h(gpu, a->gpu_mem, a->dev.data, a->bytes) != TILE_OK) {
            snprintf(msg, sizeof msg, "GPU: %s", tile_ctx_last_error(gpu));
            bad = true;
            break;
        }
        char m[512];
        if (!compare(info.name, info.dtype, a->gpu_mem, a->cpu_mem, a->numel, tol, m, sizeof m)) {
            snprintf(msg, sizeof msg, "%s", m);
            bad = true;
        } else {
            size_t l = strlen(detail);
            snprintf(detail + l, sizeof detail - l, " %s", m);
        }
    }
    for (int i = 0; i < np; i++) {
        free(arrs[i].cpu_mem);
        free(arrs[i].gpu_mem);
        if (arrs[i].dev_mem) tile_free(gpu, arrs[i].dev_mem);
    }
    tile_module_release(mc);
    tile_module_release(mg);
    printf("%s %s %s%s: %s\n", bad ? "FAIL" : "ok  ", s->kernel, shift ? "(unaligned)" : "(aligned)",
           s->nconsts ? " [consts]" : "", bad ? msg : detail);
    if (bad) failures++;
    return bad;
}

/* Compiles the kernels of specs[0..n) for the GPU ahead, all at once
 * (tile_kernel_prefetch: one NVRTC per CPU; nothing on the emu and CPU
 * backends), into modules of their files loaded for this alone; run_spec's
 * own modules of the same files then find them compiled.  A spec that fails
 * here fails in run_spec, with its message. */
static void prefetch_specs(tile_ctx *gpu, const Spec *specs, int n) {
    tile_kernel_request *reqs = calloc((size_t)(n > 0 ? n : 1), sizeof *reqs);
    tile_module **mods = calloc((size_t)(n > 0 ? n : 1), sizeof *mods);   /* specs[i]'s, one a file */
    int nreqs = 0;
    for (int i = 0; reqs && mods && i < n; i++) {
        for (int j = 0; j < i && !mods[i]; j++)
            if (strcmp(specs[i].file, specs[j].file) == 0) mods[i] = mods[j];
        if (!mods[i] && tile_module_load_file(gpu, specs[i].file, &mods[i]) != TILE_OK) mods[i] = NULL;
        if (mods[i]) reqs[nreqs++] = (tile_kernel_request){mods[i], specs[i].kernel, specs[i].consts, specs[i].nconsts, NULL, 0};
    }
    if (nreqs) tile_kernel_prefetch(gpu, reqs, nreqs);
    for (int i = 0; mods && i < n; i++) {   /* (the images stay in the context) */
        bool first = mods[i] != NULL;
        for (int j = 0; j < i && first; j++) first = mods[j] != mods[i];
        if (first) tile_module_release(mods[i]);
    }
    free(mods);
    free(reqs);
}

static void run_file(tile_ctx *cpu, tile_ctx *gpu, const char *path) {
    char *text = read_file(path);
    if (!text) { printf("FAIL cannot read %s\n", path); failures++; return; }
    char dir[512];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0; else snprintf(dir, sizeof dir, ".");
    bool is_spec = strlen(path) > 5 && strcmp(path + strlen(path) - 5, ".spec") == 0;
    Spec *specs = NULL;
    int nspecs = 0, cap = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        const char *body = NULL;
        if (is_spec) { if (line[0] && line[0] != '#') body = line; }
        else {
            if (strncmp(line, "// gpu:", 7) == 0) body = line + 7;
        }
        if (!body) continue;
        Spec s;
        char *copy = strdup(body);
        bool ok = parse_spec(copy, dir, is_spec ? NULL : path, &s);
        free(copy);
        if (!ok) { printf("FAIL bad spec line: %s\n", body); failures++; continue; }
        const char *only = getenv("GPU_CHECK_ONLY");   /* one kernel, for debugging */
        if (only && *only && strcmp(only, s.kernel) != 0) continue;
        if (nspecs == cap) {
            cap = cap ? 2 * cap : 16;
            Spec *more = realloc(specs, sizeof *specs * (size_t)cap);
            if (!more) { printf("FAIL out of memory\n"); failures++; break; }
            specs = more;
        }
        specs[nspecs++] = s;
    }
    for (int i = 0; i < nspecs; i++)   /* (the names point into each Spec: copied, and moved by realloc) */
        for (int c = 0; c < specs[i].nconsts; c++) specs[i].consts[c].name = specs[i].const_names[c];
    prefetch_specs(gpu, specs, nspecs);
    for (int i = 0; i < nspecs; i++) {
        rng ^= (uint64_t)runs * 0x9E3779B97F4A7C15ull;
        run_spec(cpu, gpu, &specs[i], 0);
        run_spec(cpu, gpu, &specs[i], 1);
    }
    free(specs);
    free(text);
}

int main(int argc, char **argv) {
    tile_ctx *cpu = NULL, *gpu = NULL;
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* GPU_CHECK_CPU_ONLY=1: both sides on the interpreter (checks the specs);
     * GPU_CHECK_BACKEND=emu: the GPU's side emulated on the host (emu_backend.c) */
    const char *cpu_only = getenv("GPU_CHECK_CPU_ONLY"), *backend = getenv("GPU_CHECK_BACKEND");
    tile_backend_kind kind = backend && strcmp(backend, "emu") == 0 ? TILE_BACKEND_EMU : TILE_BACKEND_CUDA;
    tile_status st = tile_ctx_create(&gpu, cpu_only && *cpu_only == '1' ? TILE_BACKEND_CPU : kind, 0);
    if (st != TILE_OK) {
        printf("skipped: %s\n", gpu ? tile_ctx_last_error(gpu) : "no context");
        tile_ctx_destroy(gpu);
        return (st == TILE_ERR_NO_DEVICE || st == TILE_ERR_UNSUPPORTED) ? 77 : 1;
    }
    if (tile_ctx_create(&cpu, TILE_BACKEND_CPU, 0) != TILE_OK) return 1;
    printf("device: %s\n", tile_ctx_device_name(gpu));
    for (int i = 1; i < argc; i++) run_file(cpu, gpu, argv[i]);
    tile_ctx_destroy(cpu);
    tile_ctx_destroy(gpu);
    printf("%d runs, %d failures\n", runs, failures);
    return failures ? 1 : 0;
}
