/* tilec.c: the command-line tool.
 *
 *   tilec FILE [--emit=MODE] [-D NAME=VALUE]... [--kernel NAME] [-o OUT] [--dump-after=PASS|all]
 *   tilec run FILE --kernel NAME --grid X[,Y[,Z]] [-D NAME=VALUE]... [--backend cpu|cuda|emu] ARG...
 *   tilec --help | --version
 *
 * Without --emit, FILE is only checked.  Each emit mode is one row of
 * `emit_modes` and one function; modes that need the IR get it, specialised
 * and optimised, from lower_selected_kernels.
 *
 * Exit status: 0 success, 1 errors in the program (or a failed launch / write),
 * 2 usage errors and bad arguments. */
#include "ast.h"
#include "base.h"
#include "ir.h"
#include "lower.h"
#include "npy.h"
#include "passes.h"
#include "scalar.h"
#include "tile.h"
#include "emit_cuda.h"
#ifdef TILE_HAVE_CUDA
#include "cuda_compile.h"
#include "cuda_nvrtc.h"
#endif

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { EXIT_COMPILE = 1, EXIT_USAGE = 2 };

typedef struct Options {
    const char *file;
    const char *emit;          /* NULL: check only */
    const char *kernel;        /* --kernel NAME or NULL for all */
    const char *out_path;      /* -o OUT or NULL for stdout */
    const char *dump_after;
    const char *arch;          /* --arch (for the CUDA emit modes) */
    const char *backend;       /* run: cpu | cuda */
    const char *grid;          /* run: X[,Y[,Z]], each an integer expression (see grid_eval) */
    int tune;                  /* run: --tune, autotune the kernel's space first */
    const char **defines;      /* -D texts */
    int ndefines;
    const char **run_args;     /* run: NAME=VALUE */
    int nrun_args;
} Options;

/* One compilation of FILE: source, AST and diagnostics. */
typedef struct Compile {
    Arena arena;
    Diag diag;
    char *source;
    Program *program;
    ConstBinding *consts;      /* parsed -D values */
    int nconsts;
} Compile;

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("tilec: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\n", stderr);
    va_end(ap);
    return EXIT_USAGE;
}

static const char help_text[] =
    "usage: tilec FILE [--emit=MODE] [-D NAME=VALUE]... [--kernel NAME] [-o OUT]\n"
    "                  [--dump-after=PASS|all] [--arch=sm_XX]\n"
    "       tilec run FILE --kernel NAME --grid X[,Y[,Z]] [-D NAME=VALUE]...\n"
    "                  [--backend cpu|cuda|emu] [--tune] ARG...\n"
    "       tilec --help | --version\n"
    "\n"
    "Without --emit, FILE is parsed and checked.\n"
    "  --emit=MODE         what to print:%s\n"
    "  -D NAME=VALUE       value of a `const` kernel parameter (repeatable)\n"
    "  --kernel NAME       only this kernel (default: every kernel)\n"
    "  -o OUT              write the output to OUT instead of stdout\n"
    "  --dump-after=PASS   with --emit=ir, also print the IR after PASS (or all):%s\n"
    "  --arch=sm_XX        the GPU of --emit=cuda|ptx|cubin (default sm_90); sm_90a\n"
    "                      adds Hopper's own instructions (wgmma); ptx and cubin are\n"
    "                      at the occupancy the runtime settles on (lowered while\n"
    "                      ptxas spills; TILEC_SETTLE_OCCUPANCY=0: as asked)\n"
    "\n"
    "tilec run compiles one kernel and launches it; every array the kernel\n"
    "can write is saved back to its .npy path.  ARG is one of\n"
    "  NAME=VALUE                    a scalar parameter (5, -2, 1e-5, true)\n"
    "  NAME=PATH.npy                 an array read from an existing .npy file\n"
    "  NAME=PATH.npy:DTYPE[E0,...]   a new zero-filled array of that dtype and extents\n"
    "Arrays must have the parameter's dtype, except that a bf16 parameter takes\n"
    "float32 or float64 data (rounded to nearest even) and is saved as float32.\n"
    "Each --grid entry is an integer or an expression of integers, constants\n"
    "(-D, defaults, tuned) and array extent names with + - * / %% ( ) and\n"
    "cdiv(a, b): --grid 'cdiv(N, BLOCK),H'.\n"
    "  --tune              first time every point of the kernel's `tune` block on\n"
    "                      these arguments (the -D values are held), print the\n"
    "                      table and the winner on stderr, then run the winner\n"
    "                      (winners are cached in $TILE_CACHE_DIR or ~/.cache/tilec)\n"
    "\n"
    "Exit status: 0 ok, 1 errors in the program or the launch, 2 bad usage or arguments.\n";

/* ---- compilation helpers ------------------------------------------------ */

/* Reads, parses and checks FILE and the -D values.  Returns an exit status. */
static int compile_open(const Options *o, Compile *c) {
    memset(c, 0, sizeof *c);
    arena_init(&c->arena);
    char err[512];
    (void)read_text_file(o->file, &c->source, err, sizeof err);
    diag_init(&c->diag, o->file, c->source ? c->source : "");
    if (!c->source) return usage_error("%s", err);
    c->consts = ARENA_ARRAY(&c->arena, ConstBinding, o->ndefines > 0 ? o->ndefines : 1);
    for (int i = 0; i < o->ndefines; i++) {
        if (!const_binding_parse(&c->arena, o->defines[i], &c->consts[i], err, sizeof err))
            return usage_error("-D %s: %s", o->defines[i], err);
        for (int j = 0; j < i; j++)
            if (strcmp(c->consts[i].name, c->consts[j].name) == 0)
                return usage_error("-D %s given twice", c->consts[i].name);
    }
    c->nconsts = o->ndefines;
    c->program = parse_program(&c->arena, &c->diag, o->file, c->source);
    return c->diag.nerrors || !c->program ? EXIT_COMPILE : 0;
}

static void compile_close(Compile *c) {
    fputs(diag_text(&c->diag), stderr);
    diag_free(&c->diag);
    arena_free(&c->arena);
    free(c->source);
}

static const Decl *find_kernel(const Program *p, const char *name) {
    for (const Decl *d = p->decls; d; d = d->next)
        if (d->kind == DECL_KERNEL && strcmp(d->name, name) == 0) return d;
    return NULL;
}

static int kernel_has_const(const Decl *k, const char *name) {
    for (const Param *p = k->params; p; p = p->next)
        if (p->kind == PARAM_CONST && strcmp(p->name, name) == 0) return 1;
    return 0;
}

/* Lowers --kernel NAME (or every kernel) with the -D values and runs the passes
 * (dumping after --dump-after into `dump`).  On success *out holds the IrFuncs
 * (in the Compile's arena) and 0 is returned; otherwise an exit status. */
static int lower_selected_kernels(const Options *o, Compile *c, FILE *dump, IrFunc ***out, int *nout) {
    *out = NULL;
    *nout = 0;
    if (o->kernel && !find_kernel(c->program, o->kernel))
        return usage_error("%s: no kernel named '%s'", o->file, o->kernel);
    if (lower_check_program(&c->arena, &c->diag, c->program) > 0) return EXIT_COMPILE;
    int nkernels = 0;
    for (const Decl *d = c->program->decls; d; d = d->next) nkernels += d->kind == DECL_KERNEL;
    /* Without --kernel, each kernel gets the -D values that name its constants. */
    if (!o->kernel)
        for (int i = 0; i < c->nconsts; i++) {
            int used = 0;
            for (const Decl *d = c->program->decls; d; d = d->next)
                used |= d->kind == DECL_KERNEL && kernel_has_const(d, c->consts[i].name);
            if (!used) return usage_error("-D %s: no kernel has a constant parameter of that name",
                                          c->consts[i].name);
        }
    IrFunc **funcs = ARENA_ARRAY(&c->arena, IrFunc *, nkernels > 0 ? nkernels : 1);
    ConstBinding *mine = ARENA_ARRAY(&c->arena, ConstBinding, c->nconsts > 0 ? c->nconsts : 1);
    int n = 0;
    for (const Decl *d = c->program->decls; d; d = d->next) {
        if (d->kind != DECL_KERNEL || (o->kernel && strcmp(d->name, o->kernel) != 0)) continue;
        int nmine = 0;
        for (int i = 0; i < c->nconsts; i++)
            if (o->kernel || kernel_has_const(d, c->consts[i].name)) mine[nmine++] = c->consts[i];
        IrFunc *f = lower_kernel(&c->arena, &c->diag, c->program, d->name, mine, nmine);
        if (!f || c->diag.nerrors) continue;
        if (dump && o->dump_after) fprintf(dump, "// kernel %s\n", d->name);
        passes_run(f, o->dump_after, dump);
        funcs[n++] = f;
    }
    if (c->diag.nerrors) return EXIT_COMPILE;
    *out = funcs;
    *nout = n;
    return 0;
}

/* ---- emit modes --------------------------------------------------------- */

static int emit_ast(const Options *o, Compile *c, FILE *out) {
    if (!o->kernel) {
        ast_print(out, c->program);
        return 0;
    }
    const Decl *k = find_kernel(c->program, o->kernel);
    if (!k) return usage_error("%s: no kernel named '%s'", o->file, o->kernel);
    ast_print_decl(out, k);
    return 0;
}

static int emit_ir(const Options *o, Compile *c, FILE *out) {
    IrFunc **funcs;
    int n;
    int rc = lower_selected_kernels(o, c, out, &funcs, &n);
    if (rc) return rc;
    for (int i = 0; i < n; i++) {
        if (i) fputc('\n', out);
        ir_print(out, funcs[i]);
    }
    return 0;
}

/* CUDA emit modes (emit_cuda.h; ptx / cubin through NVRTC, cuda_nvrtc.h).
 * Arrays are assumed 16-byte aligned with 32-bit offsets, as the runtime's
 * first variant of a kernel. */
static int arch_number(const Options *o) {
    const char *a = o->arch ? o->arch : "sm_90";
    if (strncmp(a, "sm_", 3) == 0 || strncmp(a, "compute_", 8) == 0) a = strchr(a, '_') + 1;
    return atoi(a);
}

/* --arch=sm_90a: Hopper's arch-specific features (wgmma) may be used */
static bool arch_specific(const Options *o) {
    const char *a = o->arch ? o->arch : "";
    size_t n = strlen(a);
    return arch_number(o) == 90 && n && a[n - 1] == 'a';
}

static int emit_cuda_like(const Options *o, Compile *c, FILE *out, int what) {
    IrFunc **funcs;
    int n;
    int rc = lower_selected_kernels(o, c, NULL, &funcs, &n);
    if (rc) return rc;
    if (what && arch_number(o) < 70) return usage_error("--arch %s: want sm_70 or newer (e.g. sm_90)", o->arch);
    if (o->arch && o->arch[0] && o->arch[strlen(o->arch) - 1] == 'a' && !arch_specific(o))
        return usage_error("--arch %s: only sm_90a has architecture-specific code here; say sm_%d", o->arch, arch_number(o));
    for (int i = 0; i < n; i++) {
        unsigned char flags[256];
        memset(flags, CUDA_ARRAY_FAST, sizeof flags);
        CudaEmitOptions opt = {0, funcs[i]->nparams <= 256 ? flags : NULL, 1, arch_specific(o), 0, 0, arch_number(o) >= 90};
        CudaKernelCode code;
        if (cuda_emit(funcs[i], &opt, &code, &c->diag) != 0) return EXIT_COMPILE;
        if (what == 0) {
            if (i) fputc('\n', out);
            fputs(code.source, out);
            cuda_code_free(&code);
            continue;
        }
#ifdef TILE_HAVE_CUDA
        char err[16384];
        /* the emission the runtime would load: occupancy lowered while ptxas spills */
        CudaCompiled settled;
        if (cuda_compile_settled(funcs[i], opt, arch_number(o), &code, &settled, err, sizeof err) != 0) {
            cuda_code_free(&code);
            fprintf(stderr, "%s\n", err);
            return EXIT_COMPILE;
        }
        if (settled.ptx) {   /* a cubin for sm_<arch> and its PTX: what was asked for, made already */
            if (what == 1) fputs(settled.ptx, out);
            else fwrite(settled.image, 1, settled.size, out);
            cuda_compile_free(&settled);
            cuda_code_free(&code);
            continue;
        }
        cuda_compile_free(&settled);   /* (PTX only: NVRTC does not know sm_<arch>; say so below) */
        CudaBinary bin;
        int ok = cuda_nvrtc_compile(code.source, code.name, arch_number(o), code.sm90a, what == 2, &bin, err, sizeof err) == 0;
        cuda_code_free(&code);
        if (!ok) {
            fprintf(stderr, "%s\n", err);
            return EXIT_COMPILE;
        }
        if (what == 1) fputs(bin.ptx, out);
        else fwrite(bin.cubin, 1, bin.cubin_size, out);
        cuda_binary_free(&bin);
#else
        cuda_code_free(&code);
        fprintf(stderr, "tilec: built without the CUDA toolkit: no --emit=ptx or cubin\n");
        return EXIT_COMPILE;
#endif
    }
    return 0;
}
static int emit_cuda_src(const Options *o, Compile *c, FILE *out) { return emit_cuda_like(o, c, out, 0); }
static int emit_ptx(const Options *o, Compile *c, FILE *out) { return emit_cuda_like(o, c, out, 1); }
static int emit_cubin(const Options *o, Compile *c, FILE *out) { return emit_cuda_like(o, c, out, 2); }

typedef struct EmitMode {
    const char *name;
    int (*run)(const Options *o, Compile *c, FILE *out);   /* returns an exit status */
} EmitMode;

static const EmitMode emit_modes[] = {
    {"ast", emit_ast},
    {"ir", emit_ir},
    {"cuda", emit_cuda_src},
    {"ptx", emit_ptx},
    {"cubin", emit_cubin},
    {NULL, NULL},
};

/* Copies everything written to `scratch` into the file `path`.  Returns an exit status. */
static int copy_to_path(FILE *scratch, const char *path) {
    if (fflush(scratch) != 0 || ferror(scratch)) return usage_error("%s: write failed", path);
    rewind(scratch);
    FILE *out = fopen(path, "wb");
    if (!out) return usage_error("%s: cannot write: %s", path, strerror(errno));
    char buf[65536];
    size_t n;
    int ok = 1;
    while ((n = fread(buf, 1, sizeof buf, scratch)) > 0) ok &= fwrite(buf, 1, n, out) == n;
    ok &= !ferror(scratch);
    if (fclose(out) != 0) ok = 0;
    if (!ok) {
        remove(path);
        return usage_error("%s: write failed", path);
    }
    return 0;
}

static int run_compile(const Options *o) {
    const EmitMode *mode = NULL;
    if (o->emit) {
        for (const EmitMode *m = emit_modes; m->name; m++)
            if (strcmp(m->name, o->emit) == 0) mode = m;
        if (!mode) {
            char names[256] = "";
            for (const EmitMode *m = emit_modes; m->name; m++)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                         m == emit_modes ? "" : ", ", m->name);
            return usage_error("unknown --emit mode '%s' (modes: %s)", o->emit, names);
        }
    }
    if (o->dump_after && strcmp(o->dump_after, "all") != 0) {
        int known = 0;
        for (const Pass *p = ir_passes; p->name; p++) known |= strcmp(p->name, o->dump_after) == 0;
        if (!known) {
            char names[512] = "";
            for (const Pass *p = ir_passes; p->name; p++)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s, ", p->name);
            return usage_error("unknown pass '%s' in --dump-after (passes: %sall)", o->dump_after, names);
        }
    }
    Compile c;
    int rc = compile_open(o, &c);
    if (rc == 0 && !mode) {   /* check only */
        if (o->kernel && !find_kernel(c.program, o->kernel))
            rc = usage_error("%s: no kernel named '%s'", o->file, o->kernel);
        else if (lower_check_program(&c.arena, &c.diag, c.program) > 0)
            rc = EXIT_COMPILE;
    } else if (rc == 0 && !o->out_path) {
        rc = mode->run(o, &c, stdout);
        fflush(stdout);
    } else if (rc == 0) {
        /* -o OUT: the output goes to a scratch file first and reaches OUT only on
         * success, so a failed compile neither truncates nor half-writes OUT. */
        FILE *scratch = tmpfile();
        if (!scratch) {
            rc = usage_error("cannot create a temporary file: %s", strerror(errno));
        } else {
            rc = mode->run(o, &c, scratch);
            if (rc == 0) rc = copy_to_path(scratch, o->out_path);
            fclose(scratch);
        }
    }
    compile_close(&c);
    return rc;
}

/* ---- tilec run ---------------------------------------------------------- */

typedef struct RunArray {
    const char *path;
    tile_array host;           /* C-order host copy (dtype = the param's) */
    void *device;              /* backend memory */
    size_t bytes;
} RunArray;

static int parse_grid(const char *text, int grid[3]) {
    grid[0] = grid[1] = grid[2] = 1;
    const char *p = text;
    for (int i = 0; i < 3; i++) {
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno || v < 1 || v > INT_MAX) return 0;
        grid[i] = (int)v;
        if (*end == '\0') return 1;
        if (*end != ',') return 0;
        p = end + 1;
    }
    return 0;
}

/* ---- --grid expressions ---------------------------------------------------
 * Each entry is an integer expression: numbers, names, + - * / %, parentheses
 * and cdiv(a, b).  A name is looked up in the point's constants (with --tune),
 * then the kernel's constants (-D and defaults), then the array extents bound
 * by the arguments (N of x: f32[N]). */
typedef struct GridEnv {
    const char *text;          /* the --grid text */
    const tile_const *point;   /* the tuned point's constants, or NULL */
    int npoint;
    const IrFunc *ir;          /* a specialisation: its constants (defaults included) */
    const char **dims;         /* extent names of the array arguments ... */
    const int64_t *extents;    /* ... and their values */
    int ndims;
    char err[256];             /* the first error */
} GridEnv;

typedef struct GridParser {
    const char *p;
    GridEnv *env;
    int depth;
    int bad;
} GridParser;

static int64_t grid_fail(GridParser *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int64_t grid_fail(GridParser *g, const char *fmt, ...) {
    if (!g->bad) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(g->env->err, sizeof g->env->err, fmt, ap);
        va_end(ap);
    }
    g->bad = 1;
    return 1;
}

static void grid_skip(GridParser *g) {
    while (*g->p == ' ' || *g->p == '\t') g->p++;
}

static int grid_name_value(GridParser *g, const char *name, int64_t *out) {
    const GridEnv *e = g->env;
    for (int i = 0; i < e->npoint; i++)
        if (strcmp(e->point[i].name, name) == 0) {
            if (e->point[i].kind != TILE_CONST_INT) return grid_fail(g, "constant '%s' is not an integer", name), 1;
            *out = e->point[i].i;
            return 1;
        }
    for (int i = 0; e->ir && i < e->ir->nconsts; i++)
        if (strcmp(e->ir->consts[i].name, name) == 0) {
            if (e->ir->consts[i].is_dtype || dtype_is_float(e->ir->consts[i].type.dtype))
                return grid_fail(g, "constant '%s' is not an integer", name), 1;
            *out = e->ir->consts[i].v.i;
            return 1;
        }
    for (int i = 0; i < e->ndims; i++)
        if (strcmp(e->dims[i], name) == 0) {
            *out = e->extents[i];
            return 1;
        }
    return 0;
}

static int64_t grid_sum(GridParser *g);

static int grid_is_name_char(char c, int first) {
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (!first && c >= '0' && c <= '9');
}

static int64_t grid_atom(GridParser *g) {
    grid_skip(g);
    if (++g->depth > 64) return grid_fail(g, "expression nests too deeply");
    int64_t v = 1;
    const char *start = g->p;
    if (*g->p >= '0' && *g->p <= '9') {
        char *end;
        errno = 0;
        long long x = strtoll(g->p, &end, 0);
        if (errno) return grid_fail(g, "number out of range");
        g->p = end;
        v = x;
    } else if (*g->p == '-') {
        g->p++;
        v = -grid_atom(g);
    } else if (*g->p == '(') {
        g->p++;
        v = grid_sum(g);
        grid_skip(g);
        if (*g->p != ')') return grid_fail(g, "')' expected at '%s'", g->p);
        g->p++;
    } else if (grid_is_name_char(*g->p, 1)) {
        while (grid_is_name_char(*g->p, 0)) g->p++;
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(g->p - start), start);
        grid_skip(g);
        if (strcmp(name, "cdiv") == 0 && *g->p == '(') {
            g->p++;
            int64_t a = grid_sum(g);
            grid_skip(g);
            if (*g->p != ',') return grid_fail(g, "cdiv takes two arguments: cdiv(a, b)");
            g->p++;
            int64_t b = grid_sum(g);
            grid_skip(g);
            if (*g->p != ')') return grid_fail(g, "')' expected at '%s'", g->p);
            g->p++;
            if (b <= 0) return grid_fail(g, "cdiv by %lld", (long long)b);
            v = a / b + (a % b > 0);
        } else if (!grid_name_value(g, name, &v)) {
            return grid_fail(g, "unknown name '%s' (neither a constant of the kernel nor an array extent)", name);
        }
    } else {
        return grid_fail(g, "unexpected '%s'", *g->p ? g->p : "end");
    }
    g->depth--;
    return v;
}

static int64_t grid_product(GridParser *g) {
    int64_t v = grid_atom(g);
    for (;;) {
        grid_skip(g);
        char op = *g->p;
        if (op != '*' && op != '/' && op != '%') return v;
        g->p++;
        int64_t w = grid_atom(g);
        if (op != '*' && w == 0) return grid_fail(g, "division by zero");
        v = op == '*' ? (int64_t)((uint64_t)v * (uint64_t)w) : op == '/' ? v / w : v % w;
    }
}

static int64_t grid_sum(GridParser *g) {
    int64_t v = grid_product(g);
    for (;;) {
        grid_skip(g);
        char op = *g->p;
        if (op != '+' && op != '-') return v;
        g->p++;
        int64_t w = grid_product(g);
        v = (int64_t)(op == '+' ? (uint64_t)v + (uint64_t)w : (uint64_t)v - (uint64_t)w);
    }
}

/* Evaluates the whole --grid text; 0 with env->err set on error. */
static int grid_eval(const char *text, GridEnv *env, int grid[3]) {
    GridParser g = {text, env, 0, 0};
    env->err[0] = '\0';
    grid[0] = grid[1] = grid[2] = 1;
    for (int i = 0; i < 3; i++) {
        int64_t v = grid_sum(&g);
        if (g.bad) return 0;
        if (v < 1 || v > INT_MAX) {
            snprintf(env->err, sizeof env->err, "entry %d is %lld; it must be from 1 to %d", i, (long long)v, INT_MAX);
            return 0;
        }
        grid[i] = (int)v;
        grid_skip(&g);
        if (*g.p == '\0') return 1;
        if (*g.p != ',' || i == 2) break;
        g.p++;
    }
    snprintf(env->err, sizeof env->err, "expected 1 to 3 entries separated by commas, found '%s'", g.p);
    return 0;
}

/* tile_tune's grid_fn: a failed evaluation gives grid 0, which the launch rejects. */
static void grid_of_point(const tile_const *consts, int nconsts, int grid[3], void *user) {
    GridEnv *env = user;
    env->point = consts;
    env->npoint = nconsts;
    if (!grid_eval(env->text, env, grid)) grid[0] = 0;
}

static int ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* "f32[4,8]" after the ':' of a new-array argument. */
static int parse_new_array(const char *spec, tile_dtype *dt, int *rank, int64_t *shape) {
    const char *br = strchr(spec, '[');
    if (!br || !ends_with(spec, "]")) return 0;
    char name[16];
    size_t n = (size_t)(br - spec);
    if (n == 0 || n >= sizeof name) return 0;
    memcpy(name, spec, n);
    name[n] = '\0';
    if (!tile_dtype_from_name(name, dt)) return 0;
    const char *p = br + 1;
    *rank = 0;
    if (*p == ']') return p[1] == '\0';
    for (;;) {
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno || v < 0 || v > INT32_MAX || *rank == TILE_MAX_DIMS) return 0;
        shape[(*rank)++] = v;
        while (*end == ' ') end++;
        if (*end == ']') return end[1] == '\0';
        if (*end != ',') return 0;
        p = end + 1;
    }
}

/* A host array for parameter `info` from ARG value `value`.  Returns an exit status. */
static int load_array_arg(const tile_param_info *info, const char *value, RunArray *ra) {
    char err[512];
    const char *colon = strstr(value, ".npy:");
    if (colon) {   /* a new zero-filled array */
        size_t plen = (size_t)(colon - value) + 4;
        char *path = malloc(plen + 1);
        if (!path) return usage_error("out of memory");
        memcpy(path, value, plen);
        path[plen] = '\0';
        ra->path = path;
        tile_dtype dt;
        int rank;
        int64_t shape[TILE_MAX_DIMS];
        if (!parse_new_array(colon + 5, &dt, &rank, shape))
            return usage_error("argument '%s': bad new-array spec '%s' (expected DTYPE[E0,...], e.g. f32[4,8])",
                               info->name, colon + 5);
        if (dt != info->dtype)
            return usage_error("argument '%s': new array of dtype %s, but the parameter is %s",
                               info->name, tile_dtype_name(dt), tile_dtype_name(info->dtype));
        if (rank != info->rank)
            return usage_error("argument '%s': new array of rank %d, but the parameter has rank %d",
                               info->name, rank, info->rank);
        int64_t numel = 1;
        for (int i = 0; i < rank; i++) {
            if (shape[i] && numel > (INT64_MAX / 16) / shape[i])
                return usage_error("argument '%s': array too large", info->name);
            numel *= shape[i];
        }
        ra->bytes = (size_t)numel * (size_t)tile_dtype_size(dt);
        void *data = calloc(ra->bytes ? ra->bytes : 1, 1);
        if (!data) return usage_error("argument '%s': cannot allocate %zu bytes", info->name, ra->bytes);
        ra->host = tile_array_contiguous(data, dt, rank, shape);
        return 0;
    }
    if (!ends_with(value, ".npy"))
        return usage_error("argument '%s' is an array: give PATH.npy or PATH.npy:DTYPE[E0,...], not '%s'",
                           info->name, value);
    ra->path = strdup(value);
    NpyArray npy;
    if (npy_read(value, &npy, err, sizeof err) != 0) return usage_error("argument '%s': %s", info->name, err);
    if (npy.rank != info->rank) {
        int file_rank = npy.rank;   /* npy_free clears it */
        npy_free(&npy);
        return usage_error("argument '%s': %s has rank %d, but the parameter has rank %d", info->name,
                           value, file_rank, info->rank);
    }
    if (info->dtype == TILE_BF16 && (npy.dtype == TILE_F32 || npy.dtype == TILE_F64)) {
        uint16_t *bits = malloc((size_t)(npy.numel > 0 ? npy.numel : 1) * 2);
        if (!bits) {
            npy_free(&npy);
            return usage_error("out of memory");
        }
        for (int64_t i = 0; i < npy.numel; i++) {
            double x;
            if (npy.dtype == TILE_F32) {
                float f;
                memcpy(&f, (char *)npy.data + 4 * i, 4);
                x = f;
            } else {
                memcpy(&x, (char *)npy.data + 8 * i, 8);
            }
            Scalar s = scalar_from_double(DT_BF16, x);   /* one rounding, to nearest even */
            scalar_store(DT_BF16, &bits[i], s);
        }
        ra->bytes = (size_t)npy.numel * 2;
        ra->host = tile_array_contiguous(bits, TILE_BF16, npy.rank, npy.shape);
        npy_free(&npy);
        return 0;
    }
    if (npy.dtype != info->dtype) {
        tile_dtype fd = npy.dtype;
        npy_free(&npy);
        return usage_error("argument '%s': %s has dtype %s, but the parameter is %s%s", info->name, value,
                           tile_dtype_name(fd), tile_dtype_name(info->dtype),
                           info->dtype == TILE_BF16 ? " (give float32 or float64 data)" : "");
    }
    ra->bytes = npy.nbytes;
    ra->host = tile_array_contiguous(npy.data, npy.dtype, npy.rank, npy.shape);
    npy.data = NULL;   /* now owned by ra->host */
    return 0;
}

/* A scalar for parameter `info` from text.  Returns an exit status. */
static int parse_scalar_arg(const tile_param_info *info, const char *text, tile_arg *out) {
    DType dt = (DType)info->dtype;
    char *end;
    errno = 0;
    if (dt == DT_BOOL) {
        if (!strcmp(text, "true") || !strcmp(text, "1")) *out = tile_arg_bool(1);
        else if (!strcmp(text, "false") || !strcmp(text, "0")) *out = tile_arg_bool(0);
        else return usage_error("argument '%s' is bool: give true or false, not '%s'", info->name, text);
        return 0;
    }
    if (dtype_is_float(dt)) {
        double v = strtod(text, &end);
        if (end == text || *end)
            return usage_error("argument '%s' is %s: '%s' is not a number", info->name, dtype_name(dt), text);
        *out = tile_arg_f64(v);
        return 0;
    }
    int bits = dtype_bits(dt);
    if (dtype_is_unsigned(dt)) {
        if (text[0] == '-')
            return usage_error("argument '%s' is %s: '%s' is negative", info->name, dtype_name(dt), text);
        unsigned long long v = strtoull(text, &end, 0);
        if (end == text || *end || errno)
            return usage_error("argument '%s' is %s: '%s' is not an integer", info->name, dtype_name(dt), text);
        if (bits < 64 && v > (1ull << bits) - 1)
            return usage_error("argument '%s' is %s: %s is out of range", info->name, dtype_name(dt), text);
        *out = tile_arg_u64(v);
        return 0;
    }
    long long v = strtoll(text, &end, 0);
    if (end == text || *end || errno)
        return usage_error("argument '%s' is %s: '%s' is not an integer", info->name, dtype_name(dt), text);
    if (bits < 64 && (v < -(1ll << (bits - 1)) || v > (1ll << (bits - 1)) - 1))
        return usage_error("argument '%s' is %s: %s is out of range", info->name, dtype_name(dt), text);
    *out = tile_arg_i64(v);
    return 0;
}

/* ---- tilec run --tune ---------------------------------------------------- */

enum { TUNE_MAX_CONSTS = 64 };

/* Some point of the tune space (with the -D values held) that compiles: the
 * arrays are loaded from its parameter list before tuning. */
static tile_status first_tune_point(tile_module *mod, const char *kernel, const tile_const *fixed, int nfixed,
                                    tile_const *point, int *npoint, tile_kernel **kern) {
    int npoints = 0;
    tile_status st = tile_tune_space(mod, kernel, fixed, nfixed, 0, &npoints, NULL, NULL);
    for (int i = 0; st == TILE_OK && i < npoints; i++) {
        *npoint = TUNE_MAX_CONSTS;
        st = tile_tune_space(mod, kernel, fixed, nfixed, i, &npoints, point, npoint);
        if (st != TILE_OK) break;
        st = tile_kernel_get(mod, kernel, point, *npoint, kern);
        if (st == TILE_OK || i + 1 == npoints) break;
        st = TILE_OK;   /* try the next point */
    }
    return st;
}

/* Times the space on the arguments (the table and the winner go to stderr),
 * then puts the inputs back: the timing runs may have written the arrays.
 * On success *kern is the winner and genv->point its constants.  Returns an
 * exit status. */
static int tune_before_run(const Options *o, tile_ctx *ctx, tile_module *mod, const tile_const *fixed,
                           RunArray *arrays, int nparams, const tile_arg *args, GridEnv *genv, tile_kernel **kern) {
    static tile_const best[TUNE_MAX_CONSTS];
    int nbest = TUNE_MAX_CONSTS;
    tile_tune_options opt = tile_tune_default_options();
    opt.verbose = 1;
    tile_status st = tile_tune(mod, o->kernel, fixed, o->ndefines, grid_of_point, genv, args, nparams, &opt, kern,
                               best, &nbest);
    if (st != TILE_OK) {
        if (genv->err[0]) fprintf(stderr, "tilec: error: --grid %s: %s\n", o->grid, genv->err);
        fprintf(stderr, "tilec: error: %s\n", tile_ctx_last_error(ctx));
        return st == TILE_ERR_COMPILE ? EXIT_COMPILE : EXIT_USAGE;
    }
    genv->point = best;
    genv->npoint = nbest;
    genv->ir = tile_kernel_ir(*kern);
    fprintf(stderr, "tilec: tuned %s:", o->kernel);
    for (int i = 0; i < nbest; i++) {
        if (best[i].kind == TILE_CONST_FLOAT) fprintf(stderr, " -D %s=%g", best[i].name, best[i].f);
        else fprintf(stderr, " -D %s=%lld", best[i].name, (long long)best[i].i);
    }
    fputc('\n', stderr);
    for (int p = 0; p < nparams; p++) {
        if (!arrays[p].device) continue;
        st = tile_memcpy_h2d(ctx, arrays[p].device, arrays[p].host.data, arrays[p].bytes);
        if (st != TILE_OK) {
            fprintf(stderr, "tilec: error: %s\n", tile_ctx_last_error(ctx));
            return EXIT_COMPILE;
        }
    }
    return 0;
}

static int run_launch(const Options *o) {
    if (!o->kernel) return usage_error("tilec run: --kernel NAME is required");
    if (!o->grid) return usage_error("tilec run: --grid X[,Y[,Z]] is required");
    int grid[3];
    /* plain numbers are checked now; expressions once the arrays are known */
    int grid_is_expr = strpbrk(o->grid, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_()+*/%") != NULL;
    if (!grid_is_expr && !parse_grid(o->grid, grid))
        return usage_error("--grid %s: expected 1 to 3 positive integers separated by commas", o->grid);
    tile_backend_kind kind = TILE_BACKEND_CPU;
    if (o->backend && strcmp(o->backend, "cuda") == 0) kind = TILE_BACKEND_CUDA;
    else if (o->backend && strcmp(o->backend, "emu") == 0) kind = TILE_BACKEND_EMU;
    else if (o->backend && strcmp(o->backend, "cpu") != 0)
        return usage_error("unknown backend '%s' (cpu, cuda or emu)", o->backend);
    for (int i = 0; i < o->nrun_args; i++) {
        const char *eq = strchr(o->run_args[i], '=');
        if (!eq || eq == o->run_args[i])
            return usage_error("argument '%s': expected NAME=VALUE", o->run_args[i]);
        for (int j = 0; j < i; j++)
            if (strncmp(o->run_args[i], o->run_args[j], (size_t)(eq - o->run_args[i]) + 1) == 0)
                return usage_error("argument '%.*s' given twice", (int)(eq - o->run_args[i]), o->run_args[i]);
    }

    /* Constants from -D. */
    Arena arena;
    arena_init(&arena);
    tile_const *consts = ARENA_ARRAY(&arena, tile_const, o->ndefines > 0 ? o->ndefines : 1);
    for (int i = 0; i < o->ndefines; i++) {
        ConstBinding b;
        char err[256];
        if (!const_binding_parse(&arena, o->defines[i], &b, err, sizeof err)) {
            arena_free(&arena);
            return usage_error("-D %s: %s", o->defines[i], err);
        }
        consts[i] = b.is_dtype ? tile_const_dtype(b.name, (tile_dtype)b.dtype)
                               : (tile_const){b.name, b.is_float ? TILE_CONST_FLOAT : TILE_CONST_INT, b.i, b.f};
    }

    tile_ctx *ctx = NULL;
    tile_module *mod = NULL;
    tile_kernel *kern = NULL;
    RunArray *arrays = NULL;
    tile_arg *args = NULL;
    int nparams = 0, rc = 0;
    tile_status st = tile_ctx_create(&ctx, kind, 0);
    if (st != TILE_OK) {
        const char *msg = tile_ctx_last_error(ctx);
        const char *which = kind == TILE_BACKEND_CUDA ? "CUDA backend" : kind == TILE_BACKEND_EMU ? "emu backend" : "CPU backend";
        if (strncmp(msg, which, strlen(which)) == 0) fprintf(stderr, "tilec: error: %s\n", msg);
        else fprintf(stderr, "tilec: error: %s: %s\n", which, msg);
        rc = EXIT_USAGE;
        goto done;
    }
    tile_const point[TUNE_MAX_CONSTS];   /* --tune: the point kern was specialised on */
    int npoint = 0;
    st = tile_module_load_file(ctx, o->file, &mod);
    if (st == TILE_OK && o->tune) st = first_tune_point(mod, o->kernel, consts, o->ndefines, point, &npoint, &kern);
    else if (st == TILE_OK) st = tile_kernel_get(mod, o->kernel, consts, o->ndefines, &kern);
    if (st != TILE_OK) {
        const char *msg = tile_ctx_last_error(ctx);
        if (st == TILE_ERR_COMPILE) fputs(msg, stderr);
        else fprintf(stderr, "tilec: error: %s\n", msg);
        rc = st == TILE_ERR_COMPILE ? EXIT_COMPILE : EXIT_USAGE;
        goto done;
    }

    nparams = tile_kernel_num_params(kern);
    arrays = calloc((size_t)(nparams > 0 ? nparams : 1), sizeof *arrays);
    args = calloc((size_t)(nparams > 0 ? nparams : 1), sizeof *args);
    if (!arrays || !args) {
        rc = usage_error("out of memory");
        goto done;
    }
    /* Every ARG must name a parameter. */
    for (int i = 0; i < o->nrun_args; i++) {
        size_t len = (size_t)(strchr(o->run_args[i], '=') - o->run_args[i]);
        int known = 0;
        for (int p = 0; p < nparams && !known; p++) {
            tile_param_info info;
            tile_kernel_param(kern, p, &info);
            known = strlen(info.name) == len && strncmp(info.name, o->run_args[i], len) == 0;
        }
        if (!known) {
            rc = usage_error("argument '%.*s': kernel '%s' has no runtime parameter of that name",
                             (int)len, o->run_args[i], o->kernel);
            goto done;
        }
    }
    for (int p = 0; p < nparams && rc == 0; p++) {
        tile_param_info info;
        tile_kernel_param(kern, p, &info);
        const char *value = NULL;
        for (int i = 0; i < o->nrun_args; i++) {
            size_t len = strlen(info.name);
            if (strncmp(o->run_args[i], info.name, len) == 0 && o->run_args[i][len] == '=')
                value = o->run_args[i] + len + 1;
        }
        if (!value) {
            rc = usage_error("missing argument '%s' (%s) of kernel '%s'", info.name,
                             info.is_array ? "an array: NAME=PATH.npy" : "a scalar: NAME=VALUE", o->kernel);
            break;
        }
        if (!info.is_array) {
            rc = parse_scalar_arg(&info, value, &args[p]);
            continue;
        }
        RunArray *ra = &arrays[p];
        rc = load_array_arg(&info, value, ra);
        if (rc) break;
        st = tile_malloc(ctx, ra->bytes, &ra->device);
        if (st == TILE_OK) st = tile_memcpy_h2d(ctx, ra->device, ra->host.data, ra->bytes);
        if (st != TILE_OK) {
            fprintf(stderr, "tilec: error: %s\n", tile_ctx_last_error(ctx));
            rc = EXIT_COMPILE;
            break;
        }
        tile_array dev = ra->host;
        dev.data = ra->device;
        args[p] = tile_arg_array(dev);
    }
    if (rc) goto done;

    GridEnv genv;
    memset(&genv, 0, sizeof genv);
    genv.text = o->grid;
    genv.point = point;
    genv.npoint = npoint;
    genv.ir = tile_kernel_ir(kern);
    genv.dims = ARENA_ARRAY(&arena, const char *, nparams * TILE_MAX_DIMS + 1);
    int64_t *extents = ARENA_ARRAY(&arena, int64_t, nparams * TILE_MAX_DIMS + 1);
    genv.extents = extents;
    for (int p = 0; p < nparams; p++) {
        tile_param_info info;
        tile_kernel_param(kern, p, &info);
        for (int d = 0; info.is_array && d < info.rank; d++)
            if (info.dims[d]) {
                genv.dims[genv.ndims] = info.dims[d];
                extents[genv.ndims++] = arrays[p].host.shape[d];
            }
    }
    if ((grid_is_expr || o->tune) && !grid_eval(o->grid, &genv, grid)) {
        rc = usage_error("--grid %s: %s", o->grid, genv.err);
        goto done;
    }
    if (o->tune) {
        rc = tune_before_run(o, ctx, mod, consts, arrays, nparams, args, &genv, &kern);
        if (rc == 0 && !grid_eval(o->grid, &genv, grid)) rc = usage_error("--grid %s: %s", o->grid, genv.err);
        if (rc) goto done;
    }

    st = tile_launch(kern, grid, args, nparams, NULL);
    if (st == TILE_OK) st = tile_synchronize(ctx);
    if (st != TILE_OK) {
        fprintf(stderr, "tilec: error: %s\n", tile_ctx_last_error(ctx));
        rc = st == TILE_ERR_INVALID_ARG ? EXIT_USAGE : EXIT_COMPILE;
        goto done;
    }
    fflush(stdout);
    /* Save what the kernel may have written; nothing is written if the launch failed. */
    for (int p = 0; p < nparams; p++) {
        tile_param_info info;
        tile_kernel_param(kern, p, &info);
        if (!info.is_array || !info.written) continue;
        RunArray *ra = &arrays[p];
        char err[512];
        st = tile_memcpy_d2h(ctx, ra->host.data, ra->device, ra->bytes);
        if (st != TILE_OK) {
            fprintf(stderr, "tilec: error: %s\n", tile_ctx_last_error(ctx));
            rc = EXIT_COMPILE;
            continue;
        }
        if (npy_write(ra->path, ra->host.dtype, ra->host.rank, ra->host.shape, ra->host.data, err,
                      sizeof err) != 0) {
            fprintf(stderr, "tilec: error: %s\n", err);
            rc = EXIT_COMPILE;
            continue;
        }
    }
done:
    for (int p = 0; arrays && p < nparams; p++) {
        if (arrays[p].device) tile_free(ctx, arrays[p].device);
        free(arrays[p].host.data);
        free((void *)arrays[p].path);
    }
    free(arrays);
    free(args);
    tile_ctx_destroy(ctx);   /* releases the module */
    arena_free(&arena);
    return rc;
}

/* ---- command line ------------------------------------------------------- */

/* Matches "--name VALUE" or "--name=VALUE" (or "-D VALUE" / "-DVALUE" for a
 * one-letter option); advances *i past what it used. */
static int option_value(int argc, char **argv, int *i, const char *name, const char **value, int *bad) {
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0) return 0;
    if (a[n] == '\0') {
        if (*i + 1 >= argc) {
            usage_error("%s needs a value", name);
            *bad = 1;
            return 1;
        }
        *value = argv[++*i];
        return 1;
    }
    if (a[n] == '=' && name[1] == '-') {
        *value = a + n + 1;
        return 1;
    }
    if (name[1] != '-') {   /* -DNAME=V */
        *value = a + n;
        return 1;
    }
    return 0;
}

/* An option that takes one value: given twice is a mistake, not "the last wins". */
static int set_once(const char **slot, const char *name, const char *value) {
    if (*slot) return usage_error("%s given twice ('%s', then '%s')", name, *slot, value);
    *slot = value;
    return -1;
}

int main(int argc, char **argv) {
    Options o;
    memset(&o, 0, sizeof o);
    o.defines = calloc((size_t)argc, sizeof *o.defines);
    o.run_args = calloc((size_t)argc, sizeof *o.run_args);
    if (!o.defines || !o.run_args) return usage_error("out of memory");
    int is_run = argc > 1 && strcmp(argv[1], "run") == 0;
    int rc = -1, bad = 0;
    for (int i = 1 + is_run; i < argc && !bad && rc < 0; i++) {
        const char *a = argv[i], *v = NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            char modes[256] = "", passes[256] = "";
            for (const EmitMode *m = emit_modes; m->name; m++)
                snprintf(modes + strlen(modes), sizeof modes - strlen(modes), " %s", m->name);
            for (const Pass *p = ir_passes; p->name; p++)
                snprintf(passes + strlen(passes), sizeof passes - strlen(passes), " %s", p->name);
            printf(help_text, modes, passes);
            rc = 0;
        } else if (!strcmp(a, "--version")) {
            printf("tilec %s\n", TILEC_VERSION);
            rc = 0;
        } else if (!strcmp(a, "--tune")) {
            o.tune = 1;
        } else if (option_value(argc, argv, &i, "--emit", &v, &bad)) {
            rc = set_once(&o.emit, "--emit", v);
        } else if (option_value(argc, argv, &i, "--kernel", &v, &bad)) {
            rc = set_once(&o.kernel, "--kernel", v);
        } else if (option_value(argc, argv, &i, "--dump-after", &v, &bad)) {
            rc = set_once(&o.dump_after, "--dump-after", v);
        } else if (option_value(argc, argv, &i, "--arch", &v, &bad)) {
            rc = set_once(&o.arch, "--arch", v);
        } else if (option_value(argc, argv, &i, "--backend", &v, &bad)) {
            rc = set_once(&o.backend, "--backend", v);
        } else if (option_value(argc, argv, &i, "--grid", &v, &bad)) {
            rc = set_once(&o.grid, "--grid", v);
        } else if (option_value(argc, argv, &i, "-D", &v, &bad)) {
            o.defines[o.ndefines++] = v;
        } else if (option_value(argc, argv, &i, "-o", &v, &bad)) {
            rc = set_once(&o.out_path, "-o", v);
        } else if (a[0] == '-' && a[1] != '\0') {
            rc = usage_error("unknown option '%s' (see tilec --help)", a);
        } else if (!o.file) {
            o.file = a;
        } else if (is_run) {
            o.run_args[o.nrun_args++] = a;
        } else {
            rc = usage_error("unexpected argument '%s' (one FILE at a time)", a);
        }
    }
    if (bad) rc = EXIT_USAGE;
    if (rc < 0) {
        if (!o.file) rc = usage_error("no input file (see tilec --help)");
        else if (is_run && (o.emit || o.out_path || o.dump_after))
            rc = usage_error("tilec run takes no --emit, -o or --dump-after");
        else if (!is_run && (o.backend || o.grid || o.tune))
            rc = usage_error("--backend, --grid and --tune belong to 'tilec run'");
        else if (!is_run && o.dump_after && (!o.emit || strcmp(o.emit, "ast") == 0))
            rc = usage_error("--dump-after needs an --emit mode that lowers to the IR (ir)");
        else rc = is_run ? run_launch(&o) : run_compile(&o);
    }
    free(o.defines);
    free(o.run_args);
    return rc;
}
