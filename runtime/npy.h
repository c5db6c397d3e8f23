/* npy.h: reading and writing NumPy .npy files.  Prefix: npy_.
 *
 * Versions 1.0, 2.0 and 3.0 of the format; C order only (Fortran order is
 * rejected with a message).  dtypes: <f2 <f4 <f8 <i1 <i2 <i4 <i8 <u1 <u2 <u4
 * <u8 |b1 |i1 |u1 (big-endian '>' forms are read too and swapped).
 * NumPy has no bfloat16: npy_write stores TILE_BF16 (and TILE_TF32) data as
 * float32.  Every failure is a message naming the file; nothing crashes on a
 * truncated or malformed file. */
#ifndef TILE_NPY_H
#define TILE_NPY_H

#include "tile.h"
#include <stddef.h>
#include <stdint.h>

typedef struct NpyArray {
    tile_dtype dtype;
    int rank;                          /* 0 for a 0-d array (one element) */
    int64_t shape[TILE_MAX_DIMS];
    int64_t numel;
    void *data;                        /* malloc'd, C order, native byte order */
    size_t nbytes;
} NpyArray;

/* Reads `path`.  Returns 0, or -1 with a message in err ("PATH: ..."). */
int  npy_read(const char *path, NpyArray *out, char *err, size_t errlen);
/* Writes a C-order array to `path` (through a temporary file renamed into
 * place, so a failure leaves no half-written file).  Returns 0 or -1. */
int  npy_write(const char *path, tile_dtype dtype, int rank, const int64_t *shape,
               const void *data, char *err, size_t errlen);
void npy_free(NpyArray *a);

/* The NumPy descr of a dtype ("<f4"), or NULL if NumPy has none (bf16, tf32). */
const char *npy_descr(tile_dtype dtype);

#endif
