/* fuzz_entry.c: source bytes -> AST -> checked program -> IR -> passes ->
 * CUDA C (cuda_emit) -> PTX (NVRTC, where built with it). */
#include "fuzz_entry.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ast.h"
#include "emit_cuda.h"
#include "lower.h"
#include "passes.h"
#ifdef TILE_HAVE_CUDA
#include "cuda_nvrtc.h"
#endif

/* The printers run too (into /dev/null): they walk every node. */
static FILE *null_sink(void) {
    static FILE *sink;
    if (!sink) sink = fopen("/dev/null", "w");
    return sink;
}

int fuzz_have_nvrtc(void) {
#ifdef TILE_HAVE_CUDA
    return 1;
#else
    return 0;
#endif
}

uint64_t fuzz_hash(const uint8_t *data, size_t size) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < size; i++) h = (h ^ data[i]) * 0x100000001b3ull;
    return h;
}

static void note_bug(FuzzResult *res, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note_bug(FuzzResult *res, const char *fmt, ...) {
    if (res->bugs++) return;   /* keep the first */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(res->bug, sizeof res->bug, fmt, ap);
    va_end(ap);
}

/* ---- constants: `// FUZZ-D: NAME=V ...`, `-D NAME=V` on `// RUN:` and `// gpu:` lines ---- */

#define FUZZ_MAX_DEFINES 64

/* A constant's value from the input: for every kernel, or (a `// gpu:` line's)
 * for the kernel that line launches. */
typedef struct FuzzDefine {
    ConstBinding b;
    const char *kernel;   /* NULL: any kernel */
} FuzzDefine;

static bool has_binding(const ConstBinding *b, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (strcmp(b[i].name, name) == 0) return true;
    return false;
}

static bool same_owner(const char *a, const char *b) { return a == b || (a && b && strcmp(a, b) == 0); }

/* Adds NAME=V from [start, end) for `kernel` unless that kernel (or every
 * kernel) has a value for NAME already: the first one counts. */
static int add_define(Arena *a, const char *start, const char *end, const char *kernel, FuzzDefine *out, int n) {
    char word[256], err[256];
    if (n >= FUZZ_MAX_DEFINES || end <= start || end - start >= (long)sizeof word) return n;
    memcpy(word, start, (size_t)(end - start));
    word[end - start] = 0;
    if (!const_binding_parse(a, word, &out[n].b, err, sizeof err)) return n;   /* bad ones: ignored */
    for (int i = 0; i < n; i++)
        if (same_owner(out[i].kernel, kernel) && strcmp(out[i].b.name, out[n].b.name) == 0) return n;
    out[n].kernel = kernel;
    return n + 1;
}

/* The kernel a `// gpu:` line launches (its kernel=NAME word), in the arena. */
static const char *gpu_line_kernel(Arena *a, const char *line, const char *eol) {
    for (const char *p = line; p + 7 < eol; p++)
        if (strncmp(p, "kernel=", 7) == 0 && (p == line || p[-1] == ' ' || p[-1] == '\t')) {
            const char *q = p + 7, *e = q;
            while (e < eol && *e != ' ' && *e != '\t' && *e != '\r') e++;
            char *name = ARENA_ARRAY(a, char, (size_t)(e - q) + 1);
            memcpy(name, q, (size_t)(e - q));
            name[e - q] = 0;
            return name;
        }
    return NULL;
}

static int parse_defines(Arena *a, const char *src, FuzzDefine *out) {
    int n = 0;
    for (const char *line = src; *line; ) {
        const char *eol = strchr(line, '\n');
        if (!eol) eol = line + strlen(line);
        while (line < eol && (*line == ' ' || *line == '\t')) line++;
        bool fuzz_d = strncmp(line, "// FUZZ-D:", 10) == 0, run = strncmp(line, "// RUN:", 7) == 0;
        /* gpu_check's launches: -DNAME=V words, for the kernel the line names */
        bool gpu = strncmp(line, "// gpu:", 7) == 0;
        const char *kernel = gpu ? gpu_line_kernel(a, line, eol) : NULL;
        run |= gpu && kernel;
        bool after_dash_d = false;   /* RUN lines: the word after a lone -D */
        for (const char *p = line + (fuzz_d ? 10 : 7); (fuzz_d || run) && p < eol;) {
            while (p < eol && (*p == ' ' || *p == '\t')) p++;
            const char *start = p;
            while (p < eol && *p != ' ' && *p != '\t') p++;
            if (p == start) break;
            if (fuzz_d || after_dash_d) n = add_define(a, start, p, kernel, out, n);
            else if (p - start > 2 && strncmp(start, "-D", 2) == 0) n = add_define(a, start + 2, p, kernel, out, n);
            after_dash_d = run && p - start == 2 && strncmp(start, "-D", 2) == 0;
        }
        line = *eol ? eol + 1 : eol;
    }
    return n;
}

/* The bindings for kernel k (lower_kernel rejects the ones naming none of its
 * constants): the input's own (its launches' first, then those for every
 * kernel), then the caller's fallbacks for constants that have no default. */
static int bindings_for(const Decl *k, const FuzzDefine *own, int nown, const FuzzConfig *cfg,
                        ConstBinding *mine) {
    int n = 0;
    for (const Param *p = k->params; p && n < FUZZ_MAX_DEFINES; p = p->next) {
        if (p->kind != PARAM_CONST || has_binding(mine, n, p->name)) continue;
        for (int pass = 0; pass < 2 && !has_binding(mine, n, p->name); pass++)
            for (int i = 0; i < nown; i++)
                if ((pass == 0 ? own[i].kernel && strcmp(own[i].kernel, k->name) == 0 : !own[i].kernel) &&
                    strcmp(p->name, own[i].b.name) == 0) {
                    mine[n++] = own[i].b;
                    break;
                }
        if (p->init || has_binding(mine, n, p->name)) continue;
        for (int i = 0; i < cfg->nfallbacks; i++)
            if (strcmp(p->name, cfg->fallbacks[i].name) == 0) {
                mine[n++] = cfg->fallbacks[i];
                break;
            }
    }
    return n;
}

/* ---- the CUDA backend --------------------------------------------------------- */

/* Emitter options from the input's hash: per-array facts as the runtime may
 * find them at launch, a num_warps override as the tuner may give, #line,
 * the target (cfg->arch), a cap on blocks per SM as the runtime lowers it
 * while ptxas spills, and, for 1 in 8 kernels not going to NVRTC, the emu
 * backend's form (host_entry: wgmma as calls, host C++ that NVRTC cannot
 * compile). */
static void pick_emit_options(uint64_t h, const IrFunc *f, const FuzzConfig *cfg, bool nvrtc, unsigned char *flags,
                              int nflags, CudaEmitOptions *opt) {
    static const int warps[8] = {0, 0, 0, 0, 1, 2, 8, 0};
    memset(opt, 0, sizeof *opt);
    opt->num_warps = warps[h & 7];
    opt->line_directives = (int)((h >> 3) & 1);
    /* mostly the runtime's first variant (aligned, 32-bit offsets, TMA), else per array */
    bool all_fast = ((h >> 4) & 3) != 0;
    for (int i = 0; i < nflags; i++)
        flags[i] = all_fast ? CUDA_ARRAY_FAST : (unsigned char)((h >> (8 + 2 * (i % 24))) & 7);
    opt->array_flags = f->nparams <= nflags ? flags : NULL;
    opt->target_sm90a = cfg->arch == FUZZ_ARCH_SM90A || (cfg->arch == FUZZ_ARCH_HASH && ((h >> 6) & 1));
    opt->target_tma = opt->target_sm90a || ((h >> 61) & 1);   /* sm_90 code without wgmma: TMA, or sm_80's */
    opt->max_occupancy = ((h >> 7) & 1) ? 1 + (int)((h >> 56) & 3) : 0;
    opt->host_entry = !nvrtc && ((h >> 58) & 7) == 0;
}

static void run_backend(const IrFunc *f, Diag *diag, uint64_t h, bool nvrtc, const FuzzConfig *cfg,
                        FuzzResult *res) {
    unsigned char flags[64];
    CudaEmitOptions opt;
    pick_emit_options(h, f, cfg, nvrtc, flags, (int)sizeof flags, &opt);
    CudaKernelCode code;
    int before = diag->nerrors;
    if (cuda_emit(f, &opt, &code, diag) != 0) {
        /* an operation the backend cannot do yet: fine, when it says where */
        if (diag->nerrors == before) note_bug(res, "kernel %s: cuda_emit failed without reporting an error", f->name);
        else res->refused++;
        return;
    }
    if (!code.source || !code.name || diag->nerrors != before) {
        note_bug(res, "kernel %s: cuda_emit succeeded but %s", f->name,
                 diag->nerrors != before ? "reported an error" : "gave no source or name");
        cuda_code_free(&code);
        return;
    }
    res->emitted++;
    size_t len = strlen(code.source);
    if (cfg->log)
        fprintf(cfg->log, "  kernel %s: %zu bytes of CUDA, %d threads, %d B smem (num_warps=%d, flags=%s, %s%s%s)\n",
                f->name, len, code.threads, code.smem_bytes, opt.num_warps,
                opt.array_flags && f->nparams && (opt.array_flags[0] & 1) ? "vec16.." : "mixed",
                opt.target_sm90a ? "sm_90a" : "sm_90", code.sm90a ? ", wgmma" : "", opt.host_entry ? ", emu" : "");
    if (code.sm90a && !opt.target_sm90a) {   /* wgmma in code for a GPU without it */
        note_bug(res, "kernel %s: cuda_emit used sm_90a's instructions in code for sm_90", f->name);
        cuda_code_free(&code);
        return;
    }
#ifdef TILE_HAVE_CUDA
    if (nvrtc) {
        if (len > (cfg->nvrtc_max_source ? cfg->nvrtc_max_source : FUZZ_NVRTC_MAX_SOURCE)) {
            res->too_large++;
        } else {
            CudaBinary bin;
            char err[8192];
            /* for compute_90a where the code uses wgmma, as the runtime compiles it */
            if (cuda_nvrtc_compile(code.source, code.name, 90, code.sm90a, 0, &bin, err, sizeof err) != 0) {
                note_bug(res, "kernel %s: NVRTC rejected the emitted CUDA (num_warps=%d, #line=%d, %s, occupancy cap %d):\n%.1500s",
                         f->name, opt.num_warps, opt.line_directives, opt.target_sm90a ? "sm_90a" : "sm_90",
                         opt.max_occupancy, err);
                if (cfg->log) fprintf(cfg->log, "----- emitted CUDA -----\n%s------------------------\n", code.source);
            } else {
                res->compiled++;
                if (cfg->log) fprintf(cfg->log, "  kernel %s: PTX %zu bytes in %.0f ms\n", f->name, bin.ptx_size, bin.compile_ms);
                cuda_binary_free(&bin);
            }
        }
    }
#endif
    cuda_code_free(&code);
}

/* ---- one input ------------------------------------------------------------------ */

int fuzz_run(const uint8_t *data, size_t size, const FuzzConfig *cfg, FuzzResult *res) {
    FuzzConfig none = {0};
    FuzzResult scratch;
    if (!cfg) cfg = &none;
    if (!res) res = &scratch;
    memset(res, 0, sizeof *res);
    /* parse_program takes a C string: an embedded NUL ends the source there. */
    char *src = malloc(size + 1);
    if (!src) return 0;
    memcpy(src, data, size);
    src[size] = 0;
    uint64_t h = fuzz_hash(data, size);

    Arena arena;
    arena_init(&arena);
    Diag diag;
    diag_init(&diag, "fuzz.tile", src);
    FILE *sink = null_sink();

    Program *prog = parse_program(&arena, &diag, "fuzz.tile", src);
    /* Like tilec: a program with syntax errors goes no further. */
    if (prog && diag.nerrors == 0) {
        if (sink) ast_print(sink, prog);
        FuzzDefine defines[FUZZ_MAX_DEFINES];
        ConstBinding mine[FUZZ_MAX_DEFINES];
        int ndefines = parse_defines(&arena, src, defines);
        int nkernels = 0;
        for (const Decl *d = prog->decls; d; d = d->next) nkernels += d->kind == DECL_KERNEL;
        int nvrtc_kernel = nkernels ? (int)((h >> 40) % (uint64_t)nkernels) : 0;
        if (lower_check_program(&arena, &diag, prog) == 0) {
            int index = -1;
            for (const Decl *d = prog->decls; d; d = d->next) {
                if (d->kind != DECL_KERNEL) continue;
                index++;
                int before = diag.nerrors;
                int nmine = bindings_for(d, defines, ndefines, cfg, mine);
                IrFunc *f = lower_kernel(&arena, &diag, prog, d->name, mine, nmine);
                if (!f || diag.nerrors != before) continue;
                passes_run(f, NULL, NULL);
                if (sink) ir_print(sink, f);
                res->kernels++;
                bool nvrtc = cfg->nvrtc && (!cfg->nvrtc_one_kernel || index == nvrtc_kernel);
                if (cfg->emit_cuda) run_backend(f, &diag, h, nvrtc, cfg, res);
            }
        }
    }
    /* The message text is built for every error: read it all once. */
    res->errors = diag.nerrors;
    if (sink) fputs(diag_text(&diag), sink);

    diag_free(&diag);
    arena_free(&arena);
    free(src);
    return res->errors;
}

int fuzz_frontend_run(const uint8_t *data, size_t size) {
    FuzzConfig cfg = {.emit_cuda = 1};
    return fuzz_run(data, size, &cfg, NULL);
}
