/* fuzz_frontend.c: the libFuzzer target over the whole front end
 * (built with clang -fsanitize=fuzzer,address,undefined when TILEC_FUZZ=ON). */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_entry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_frontend_run(data, size);
    return 0;
}
