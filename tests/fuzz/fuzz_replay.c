/* fuzz_replay.c: runs the fuzz entry over files and folders, so inputs that
 * once crashed the front end (tests/fuzz/regress/) and the seed corpus stay
 * tested in every build, with no clang or libFuzzer needed.
 *
 *   fuzz_replay PATH...      a folder is walked recursively (hidden names
 *                            skipped); every regular file in it is one input.
 * Exit status 0 when every input ran; a crash or a sanitizer report is the
 * failure this is here to catch.  Prints each input before running it, so
 * the last line names the culprit. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_entry.h"

static int replay_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fuzz_replay: cannot open %s\n", path);
        return 1;
    }
    size_t cap = 4096, len = 0;
    unsigned char *buf = malloc(cap);
    size_t n;
    while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0) {
        len += n;
        if (len == cap) {
            unsigned char *grown = realloc(buf, cap * 2);
            if (!grown) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = grown;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "fuzz_replay: out of memory reading %s\n", path);
        return 1;
    }
    printf("%s\n", path);
    fflush(stdout);
    int nerrors = fuzz_frontend_run(buf, len);
    printf("  %d error%s\n", nerrors, nerrors == 1 ? "" : "s");
    free(buf);
    return 0;
}

/* Files of a folder in name order, so runs are reproducible. */
static int compare_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int replay_path(const char *path, int *count) {
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "fuzz_replay: no such file or folder: %s\n", path);
        return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
        (*count)++;
        return replay_file(path);
    }
    DIR *dir = opendir(path);
    if (!dir) {
        fprintf(stderr, "fuzz_replay: cannot read folder %s\n", path);
        return 1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        if (e->d_name[0] == '.') continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **grown = realloc(names, cap * sizeof *names);
            if (!grown) break;
            names = grown;
        }
        names[n] = malloc(strlen(path) + strlen(e->d_name) + 2);
        if (!names[n]) break;
        sprintf(names[n], "%s/%s", path, e->d_name);
        n++;
    }
    closedir(dir);
    if (n) qsort(names, n, sizeof *names, compare_names);
    int failures = 0;
    for (size_t i = 0; i < n; i++) {
        failures += replay_path(names[i], count);
        free(names[i]);
    }
    free(names);
    return failures;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: fuzz_replay FILE_OR_FOLDER...\n");
        return 2;
    }
    int count = 0, failures = 0;
    for (int i = 1; i < argc; i++) failures += replay_path(argv[i], &count);
    printf("fuzz_replay: %d input%s replayed\n", count, count == 1 ? "" : "s");
    if (count == 0) {
        fprintf(stderr, "fuzz_replay: no inputs found (the corpus is missing?)\n");
        return 1;
    }
    return failures ? 1 : 0;
}
