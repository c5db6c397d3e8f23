/* npy_fill: writes a .npy file of a given dtype and shape filled with one
 * value, to make ill-formed input folders for the mamba2 driver's tests.
 *   npy_fill PATH f32|f64 VALUE D0 [D1 ...] */
#include "npy.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: npy_fill PATH f32|f64 VALUE D0 [D1 ...]\n");
        return 2;
    }
    const tile_dtype dt = strcmp(argv[2], "f64") == 0 ? TILE_F64 : TILE_F32;
    const double value = atof(argv[3]);
    int64_t shape[TILE_MAX_DIMS];
    const int rank = argc - 4;
    if (rank > TILE_MAX_DIMS) return 2;
    size_t n = 1;
    for (int i = 0; i < rank; i++) {
        shape[i] = atoll(argv[4 + i]);
        n *= (size_t)shape[i];
    }
    void *data = malloc(n * 8 + 8);
    if (!data) return 1;
    for (size_t i = 0; i < n; i++) {
        if (dt == TILE_F64) ((double *)data)[i] = value;
        else ((float *)data)[i] = (float)value;
    }
    char err[512];
    const int rc = npy_write(argv[1], dt, rank, shape, data, err, sizeof err);
    free(data);
    if (rc != 0) {
        fprintf(stderr, "npy_fill: %s\n", err);
        return 1;
    }
    return 0;
}
