/* fuzz_replay.c: runs the fuzz entry over files and folders, so inputs that
 * once crashed the compiler (tests/fuzz/regress/) and the seed corpus stay
 * tested in every build, with no clang or libFuzzer needed.
 *
 *   fuzz_replay [--nvrtc] [--arch sm_90|sm_90a] [--max-source BYTES] [-v] [-D NAME=V]... PATH...
 * A folder is walked recursively (hidden names skipped); every regular file
 * in it is one input.  Every kernel that lowers cleanly goes through the CUDA
 * emitter; with --nvrtc (builds with NVRTC only) its CUDA is also compiled to
 * PTX (kernels over --max-source bytes of CUDA, default 128 KiB, are left
 * out).  --arch: every kernel emitted for that target (default: half of the
 * inputs each, by their hash; sm_90a is what an H200 runs).  -v prints a line per kernel (and the CUDA NVRTC rejected).  -D gives
 * a value to constants that have none (no default, no FUZZ-D or RUN -D line
 * in the input).
 * Exit status 0 when every input ran and no bug showed: a crash, a sanitizer
 * report, NVRTC rejecting emitted CUDA, cuda_emit failing without an error.
 * Prints each input before running it, so the last line names the culprit
 * of a crash; an input with a bug is named on stderr too. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_entry.h"
#include "lower.h"

static FuzzConfig config = {.emit_cuda = 1};

typedef struct Totals {
    int inputs, kernels, emitted, refused, compiled, too_large, bugs;
} Totals;
static Totals totals;

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
    FuzzResult res;
    int nerrors = fuzz_run(buf, len, &config, &res);
    free(buf);
    printf("  %d error%s, %d kernel%s lowered, %d emitted, %d refused by the backend", nerrors,
           nerrors == 1 ? "" : "s", res.kernels, res.kernels == 1 ? "" : "s", res.emitted, res.refused);
    if (config.nvrtc) printf(", %d compiled, %d too large for NVRTC", res.compiled, res.too_large);
    printf("\n");
    totals.inputs++;
    totals.kernels += res.kernels;
    totals.emitted += res.emitted;
    totals.refused += res.refused;
    totals.compiled += res.compiled;
    totals.too_large += res.too_large;
    if (!res.bugs) return 0;
    totals.bugs += res.bugs;
    printf("  BUG: %s\n", res.bug);
    fprintf(stderr, "fuzz_replay: %s: %s\n", path, res.bug);
    return 1;
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
    static ConstBinding fallbacks[32];
    Arena arena;   /* the fallbacks' names */
    arena_init(&arena);
    int first = 1;
    for (; first < argc && argv[first][0] == '-'; first++) {
        if (strcmp(argv[first], "--nvrtc") == 0) config.nvrtc = 1;
        else if (strcmp(argv[first], "--max-source") == 0 && first + 1 < argc)
            config.nvrtc_max_source = (size_t)strtoul(argv[++first], NULL, 10);
        else if (strcmp(argv[first], "--arch") == 0 && first + 1 < argc) {
            const char *a = argv[++first];
            if (strcmp(a, "sm_90") == 0) config.arch = FUZZ_ARCH_SM90;
            else if (strcmp(a, "sm_90a") == 0) config.arch = FUZZ_ARCH_SM90A;
            else {
                fprintf(stderr, "fuzz_replay: --arch %s: sm_90 or sm_90a\n", a);
                return 2;
            }
        }
        else if (strcmp(argv[first], "-v") == 0) config.log = stdout;
        else if (strcmp(argv[first], "-D") == 0 && first + 1 < argc && config.nfallbacks < 32) {
            char err[256];
            if (!const_binding_parse(&arena, argv[++first], &fallbacks[config.nfallbacks], err, sizeof err)) {
                fprintf(stderr, "fuzz_replay: -D %s: %s\n", argv[first], err);
                return 2;
            }
            config.fallbacks = fallbacks;
            config.nfallbacks++;
        } else break;
    }
    if (first >= argc || argv[first][0] == '-') {
        fprintf(stderr, "usage: fuzz_replay [--nvrtc] [--arch sm_90|sm_90a] [--max-source BYTES] [-v] [-D NAME=V]... FILE_OR_FOLDER...\n");
        return 2;
    }
    if (config.nvrtc && !fuzz_have_nvrtc()) {
        fprintf(stderr, "fuzz_replay: --nvrtc: this build has no NVRTC\n");
        return 2;
    }
    int count = 0, failures = 0;
    for (int i = first; i < argc; i++) failures += replay_path(argv[i], &count);
    printf("fuzz_replay: %d input%s replayed: %d kernels lowered, %d emitted, %d refused by the backend",
           count, count == 1 ? "" : "s", totals.kernels, totals.emitted, totals.refused);
    if (config.nvrtc) printf(", %d compiled by NVRTC, %d too large for it", totals.compiled, totals.too_large);
    printf("; %d bug%s\n", totals.bugs, totals.bugs == 1 ? "" : "s");
    if (count == 0) {
        fprintf(stderr, "fuzz_replay: no inputs found (the corpus is missing?)\n");
        return 1;
    }
    arena_free(&arena);
    return failures ? 1 : 0;
}
