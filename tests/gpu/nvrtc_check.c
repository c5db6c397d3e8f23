/* nvrtc_check.c: compiles every kernel of the given .tile files through the
 * CUDA emitter and NVRTC to PTX and an sm_XX cubin, and checks the result:
 * no local-memory spills, and mma kernels with f16 / bf16 / tf32 operands
 * contain mma.sync (or wgmma, with --arch 90a).  Needs no GPU.  Prints one
 * line per kernel.
 *
 *   nvrtc_check [--arch 90|90a] [--emit DIR] [--aligned-only] [--settle] [--kernel SUBSTR] [-D NAME=V]... FILE.tile...
 * -D applies to the kernels declaring that constant; num_warps and occupancy
 * (the hints) to every kernel.  --kernel: only kernels whose name contains SUBSTR.
 * Each kernel is compiled twice: as the runtime specialises it for aligned
 * arrays with 31-bit offsets (vec16), and for arbitrary arrays (plain);
 * --aligned-only checks the first alone.
 * Kernels whose constants have no default are skipped unless -D gives them.
 * --settle: the occupancy the runtime would settle on (cuda_compile_settled:
 * lowered while ptxas spills) is checked, and printed as occ=N (from the
 * first emission's M), from that compile's cubin, PTX and ptxas report (its
 * time, "ms", is all the settling's NVRTC runs); else the occupancy asked
 * for, compiled once. */
#include "ast.h"
#include "cuda_compile.h"
#include "cuda_nvrtc.h"
#include "emit_cuda.h"
#include "lower.h"
#include "passes.h"
#include "read_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


typedef struct Walk { bool tensor_mma; } Walk;
static void visit(IrFunc *f, IrOp *op, void *ctx) {
    Walk *w = ctx;
    if (op->op != OP_MMA) return;
    DType t = ir_type(f, op->args[0])->dtype;
    const Type *at = ir_type(f, op->args[0]), *bt = ir_type(f, op->args[1]);
    int M = at->shape[at->rank - 2], K = at->shape[at->rank - 1], N = bt->shape[bt->rank - 1];
    int kstep = t == DT_TF32 ? 8 : 16;
    if ((t == DT_F16 || t == DT_BF16 || t == DT_TF32) && M % 16 == 0 && N % 8 == 0 && K % kstep == 0)
        w->tensor_mma = true;
}

static bool has_const_without_default(const Decl *k, const ConstBinding *defs, int ndefs) {
    for (const Param *p = k->params; p; p = p->next) {
        if (p->kind != PARAM_CONST || p->init) continue;
        bool given = false;
        for (int i = 0; i < ndefs; i++) given |= strcmp(defs[i].name, p->name) == 0;
        if (!given) return true;
    }
    return false;
}

int main(int argc, char **argv) {
    int arch = 90, failures = 0, checked = 0, nvariants = 2;
    bool sm90a = false, settle = false;
    const char *emit_dir = NULL;
    const char *only = NULL;   /* --kernel: only kernels whose name contains this */
    ConstBinding defs[64];
    int ndefs = 0;
    Arena scratch;
    arena_init(&scratch);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--arch") == 0 && i + 1 < argc) {   /* 90, or 90a: Hopper's own features (wgmma) */
            arch = atoi(argv[++i]);
            sm90a = strchr(argv[i], 'a') != NULL;
            continue;
        }
        if (strcmp(argv[i], "--emit") == 0 && i + 1 < argc) { emit_dir = argv[++i]; continue; }
        if (strcmp(argv[i], "--aligned-only") == 0) { nvariants = 1; continue; }
        if (strcmp(argv[i], "--settle") == 0) { settle = true; continue; }
        if (strcmp(argv[i], "--kernel") == 0 && i + 1 < argc) { only = argv[++i]; continue; }
        if (strcmp(argv[i], "-D") == 0 && i + 1 < argc && ndefs < 64) {
            char err[256];
            if (!const_binding_parse(&scratch, argv[++i], &defs[ndefs], err, sizeof err)) {
                fprintf(stderr, "-D %s: %s\n", argv[i], err);
                return 2;
            }
            ndefs++;
            continue;
        }
        const char *path = argv[i];
        char *src = read_file(path);
        if (!src) { fprintf(stderr, "%s: cannot read\n", path); failures++; continue; }
        Arena a;
        arena_init(&a);
        Diag d;
        diag_init(&d, path, src);
        Program *prog = parse_program(&a, &d, path, src);
        if (!prog || d.nerrors) {
            fprintf(stderr, "%s", diag_text(&d));
            failures++;
            goto next;
        }
        for (const Decl *k = prog->decls; k; k = k->next) {
            if (k->kind != DECL_KERNEL || (only && !strstr(k->name, only))) continue;
            if (has_const_without_default(k, defs, ndefs)) {
                printf("%-28s %-22s skipped (constants without defaults)\n", path, k->name);
                continue;
            }
            ConstBinding mine[64];
            int nmine = 0;
            for (int j = 0; j < ndefs; j++) {
                /* the hints apply to every kernel; other names to those declaring them */
                bool hint = !strcmp(defs[j].name, "num_warps") || !strcmp(defs[j].name, "occupancy");
                for (const Param *p = k->params; p && !hint; p = p->next)
                    if (p->kind == PARAM_CONST && strcmp(p->name, defs[j].name) == 0) hint = true;
                if (hint) mine[nmine++] = defs[j];
            }
            IrFunc *f = lower_kernel(&a, &d, prog, k->name, mine, nmine);
            if (!f || d.nerrors) {
                fprintf(stderr, "%s", diag_text(&d));
                failures++;
                continue;
            }
            passes_run(f, NULL, NULL);
            Walk w = {false};
            ir_walk(f, f->body, visit, &w);
            for (int variant = 0; variant < nvariants; variant++) {
                unsigned char flags[64];
                memset(flags, variant ? 0 : CUDA_ARRAY_FAST, sizeof flags);
                CudaEmitOptions opt = {0, f->nparams <= 64 ? flags : NULL, 1, sm90a && arch == 90, 0, 0, arch >= 90};
                CudaKernelCode code;
                if (cuda_emit(f, &opt, &code, &d) != 0) {
                    fprintf(stderr, "%s", diag_text(&d));
                    failures++;
                    break;
                }
                int asked = code.occupancy, settle_runs = 0;
                CudaCompiled im = {0};   /* --settle: the checks below on the emission it settled on, its compile's */
                if (settle) {
                    char err[8192];
                    if (cuda_compile_settled(f, opt, arch, &code, &im, err, sizeof err) != 0) {
                        printf("%-28s %-22s FAIL: %s\n", path, k->name, err);
                        failures++;
                        cuda_code_free(&code);
                        continue;
                    }
                    settle_runs = im.compilations;
                }
                if (emit_dir && variant == 0) {
                    char out[1024];
                    snprintf(out, sizeof out, "%s/%s.cu", emit_dir, k->name);
                    FILE *fp = fopen(out, "w");
                    if (fp) { fputs(code.source, fp); fclose(fp); }
                }
                CudaBinary bin = {0};
                char err[8192];
                checked++;
                if (settle && im.ptx) {   /* the settled compile's cubin, PTX and log (ptxas ran for its report) */
                    bin.cubin = im.image, bin.cubin_size = im.size, bin.ptx = im.ptx, bin.log = im.log;
                    bin.ptx_size = strlen(im.ptx);
                    bin.compile_ms = im.compile_ms;
                    memset(&im, 0, sizeof im);
                } else {
                    cuda_compile_free(&im);
                    /* fresh: the resource report below needs ptxas to run */
                    if (cuda_nvrtc_compile_fresh(code.source, code.name, arch, code.sm90a, 1, &bin, err, sizeof err) != 0) {
                        printf("%-28s %-22s FAIL: %s\n", path, k->name, err);
                        failures++;
                        cuda_code_free(&code);
                        continue;
                    }
                }
                CudaResources res;
                cuda_nvrtc_resources(bin.log, &res);
                bool has_mma = strstr(bin.ptx, "mma.sync") != NULL || strstr(bin.ptx, "wgmma.mma_async") != NULL;
                const char *problem = NULL;
                if (!bin.cubin) problem = "no cubin";
                else if (!res.found) problem = "no ptxas resource report";
                else if (res.spill_stores || res.spill_loads) problem = "local-memory spills";
                else if (w.tensor_mma && !has_mma) problem = "mma kernel without mma.sync or wgmma";
                /* ptxas's "(C7514) ... wgmma.mma_async instructions are serialized due
                 * to ...": slow, not wrong; said on the line (tests that need it
                 * absent grep for it), NVRTC_CHECK_LOG=1 prints the whole log */
                bool serialized = bin.log && strstr(bin.log, "serialized");
                /* "(C7517) warpgroup.wait is injected ... to allow use of registers
                 * defined by GMMA": the code read a product's registers before
                 * waiting for it, and ptxas made it wait; the emitter should not
                 * leave that to ptxas */
                bool injected = bin.log && strstr(bin.log, "warpgroup.wait is injected");
                if (getenv("NVRTC_CHECK_LOG") && bin.log) printf("%s\n", bin.log);
                char occ[48] = "";
                if (settle) snprintf(occ, sizeof occ, " occ=%d (from %d, %d compiles)", code.occupancy, asked, settle_runs);
                printf("%-28s %-22s %s regs=%-3d spills=%d/%d stack=%d smem=%d threads=%d%s mma=%s %.0f ms%s%s%s%s\n", path,
                       k->name, variant ? "plain" : "vec16", res.registers, res.spill_stores, res.spill_loads,
                       res.stack_frame, code.smem_bytes, code.threads, occ,
                       !has_mma ? "no" : code.sm90a ? "wgmma" : "yes", bin.compile_ms,
                       serialized ? "  (wgmma serialized by ptxas)" : "",
                       injected ? "  (wgmma wait injected by ptxas)" : "", problem ? "  FAIL: " : "",
                       problem ? problem : "");
                if (problem) failures++;
                cuda_binary_free(&bin);
                cuda_code_free(&code);
            }
        }
    next:
        diag_free(&d);
        arena_free(&a);
        free(src);
    }
    arena_free(&scratch);
    printf("%d compilations, %d failures (NVRTC %s, sm_%d%s)\n", checked, failures, cuda_nvrtc_version(), arch,
           sm90a && arch == 90 ? "a" : "");
    return failures ? 1 : 0;
}
