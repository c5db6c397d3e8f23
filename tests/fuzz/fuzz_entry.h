/* fuzz_entry.h: the one function both fuzz drivers run on each input. */
#ifndef TILEC_FUZZ_ENTRY_H
#define TILEC_FUZZ_ENTRY_H

#include <stddef.h>
#include <stdint.h>

/* Runs the front end on `data` as a source file: parse_program, then (if it
 * parsed) lower_check_program, and for each kernel lower_kernel with no
 * bindings (the defaults) and passes_run.  Returns the number of errors
 * reported; a bug shows up as a crash or a sanitizer report, never as a
 * return value. */
int fuzz_frontend_run(const uint8_t *data, size_t size);

#endif
