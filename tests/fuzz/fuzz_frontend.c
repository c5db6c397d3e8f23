/* fuzz_frontend.c: the libFuzzer target over the whole compiler: front end,
 * passes and the CUDA emitter on every input; NVRTC on a deterministic sample
 * (built with clang -fsanitize=fuzzer,address,undefined when TILEC_FUZZ=ON).
 *
 * TILEC_FUZZ_NVRTC_EVERY=N (default 64): inputs whose hash is 0 mod N also go
 * through NVRTC, one kernel each (picked by the hash), up to 64 KiB of CUDA;
 * 1 = every input (to replay a finding), 0 = never.
 * NVRTC rejecting emitted CUDA, or cuda_emit breaking its contract, is
 * reported with __builtin_trap(), so libFuzzer keeps the input. */
#include <stdio.h>
#include <stdlib.h>

#include "fuzz_entry.h"
#include "lower.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned long nvrtc_every(void) {
    static long every = -1;
    if (every < 0) {
        const char *s = getenv("TILEC_FUZZ_NVRTC_EVERY");
        every = s ? strtol(s, NULL, 10) : 64;
        if (every < 0) every = 0;
    }
    return (unsigned long)every;
}

/* CHUNK, for the Mamba-2 seeds, whose CHUNK has no default */
static const ConstBinding *fallbacks(void) {
    static ConstBinding chunk = {.name = "CHUNK", .i = 64, .f = 64.0};
    return &chunk;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    unsigned long every = nvrtc_every();
    /* high bits: the low ones pick the emitter's options */
    FuzzConfig cfg = {.emit_cuda = 1, .nvrtc = every && (fuzz_hash(data, size) >> 32) % every == 0,
                      .nvrtc_one_kernel = 1, .fallbacks = fallbacks(), .nfallbacks = 1};
    FuzzResult res;
    fuzz_run(data, size, &cfg, &res);
    if (res.bugs) {
        fprintf(stderr, "fuzz_frontend: %s\n", res.bug);
        __builtin_trap();
    }
    return 0;
}
