/* read_file.h: a whole file as a NUL-terminated string (free it), or NULL;
 * shared by gpu_check.c and nvrtc_check.c. */
#ifndef TILEC_TEST_READ_FILE_H
#define TILEC_TEST_READ_FILE_H

#include <stdio.h>
#include <stdlib.h>

static char *read_file(const char *path) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s && fread(s, 1, (size_t)n, fp) != (size_t)n) { free(s); s = NULL; }
    if (s) s[n] = 0;
    fclose(fp);
    return s;
}

#endif
