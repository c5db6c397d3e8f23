/* fuzz_entry.h: the one function both fuzz drivers run on each input. */
#ifndef TILEC_FUZZ_ENTRY_H
#define TILEC_FUZZ_ENTRY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* What to do with each kernel that lowers with no errors. */
typedef struct FuzzConfig {
    int emit_cuda;     /* run cuda_emit on it (cheap) */
    int nvrtc;         /* also compile the CUDA to PTX with NVRTC (slow: ~100 ms
                        * and more); ignored in builds without NVRTC */
    size_t nvrtc_max_source;   /* longer CUDA is not compiled; 0: FUZZ_NVRTC_MAX_SOURCE */
    int nvrtc_one_kernel;      /* compile one kernel of the input (picked by its
                                * hash), not all: bounds the time per input */
    FILE *log;         /* NULL: quiet; else one line per kernel emitted */
    /* values for constants that have no default and that the input does not
     * bind itself (ConstBinding, lower.h) */
    const struct ConstBinding *fallbacks;
    int nfallbacks;
    int arch;          /* FUZZ_ARCH_*: the emitter's target */
} FuzzConfig;

/* The emitter's target: picked from the input's hash (half of the inputs
 * each), or always one.  sm_90a is what the runtime compiles for on an H200
 * (wgmma, TMA copies and stores, mbarriers: emit_cuda_wgmma.c), the other
 * what it compiles for on GPUs before Hopper (mma.sync, cp.async). */
enum { FUZZ_ARCH_HASH = 0, FUZZ_ARCH_SM90 = 1, FUZZ_ARCH_SM90A = 2 };

/* What happened to one input. */
typedef struct FuzzResult {
    int errors;           /* errors reported (front end and CUDA emitter) */
    int kernels;          /* kernels that lowered with no errors */
    int emitted;          /* ... and that cuda_emit turned into CUDA */
    int refused;          /* ... that cuda_emit refused with a located error */
    int compiled;         /* emitted kernels NVRTC compiled */
    int too_large;        /* emitted kernels not given to NVRTC: source too large */
    int bugs;             /* NVRTC rejected emitted CUDA, or cuda_emit broke its
                           * contract (failed with no error, or no source) */
    char bug[2048];       /* the first of those: kernel, what, the log's start */
} FuzzResult;

/* By default, emitted kernels longer than this are not compiled: NVRTC takes
 * ~6 s on 300 KB of unrolled code, which would stall the fuzzer. */
#define FUZZ_NVRTC_MAX_SOURCE (64 * 1024)

/* Runs the compiler on `data` as a source file: parse_program, then (if it
 * parsed) lower_check_program, and for each kernel lower_kernel and
 * passes_run; then, as `cfg` asks, cuda_emit and NVRTC.  Constants of a
 * kernel come from the input's lines `// FUZZ-D: NAME=V ...` and the `-D
 * NAME=V` words of its `// RUN:` lines (golden tests) and of its `// gpu:`
 * lines (gpu_check's launches) that name the kernel (the first such launch's
 * value), then its defaults,
 * then cfg->fallbacks (each kernel gets only those naming its constants).  The CUDA
 * emitter's options (array flags, num_warps, #line, target, occupancy cap, emu form) are picked from a hash of
 * the input, so each input always runs the same way and the fuzzer explores
 * all of them.  A crash or a sanitizer report is a bug; so is res->bugs > 0.
 * `res` may be NULL.  Returns the number of errors reported. */
int fuzz_run(const uint8_t *data, size_t size, const FuzzConfig *cfg, FuzzResult *res);

/* fuzz_run with the emitter on and no NVRTC. */
int fuzz_frontend_run(const uint8_t *data, size_t size);

/* 1 in builds that can call NVRTC. */
int fuzz_have_nvrtc(void);

/* 64-bit FNV-1a of the input: the fuzzer samples inputs for NVRTC by it. */
uint64_t fuzz_hash(const uint8_t *data, size_t size);

#endif
