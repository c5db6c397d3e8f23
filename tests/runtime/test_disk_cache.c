/* test_disk_cache.c: the runtime's disk cache (runtime/disk_cache.h): round
 * trips, every kind of damage detected, warned and repaired by the next put,
 * unwritable directories, a failed write, and concurrent writers.
 * Usage: test_disk_cache SCRATCH_DIR */
#include "check.h"
#include "disk_cache.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char scratch[1024];
static char dir[1200];   /* the cache directory of most tests */

/* What the warn callback was told. */
typedef struct Warnings {
    int count;
    char path[4200];
    char why[256];
} Warnings;

static void record_warning(void *user, const char *path, const char *why) {
    Warnings *w = user;
    w->count++;
    snprintf(w->path, sizeof w->path, "%s", path);
    snprintf(w->why, sizeof w->why, "%s", why);
}

static void remove_tree(const char *path) {
    DIR *d = opendir(path);
    if (d) {
        char child[4400];
        for (struct dirent *e; (e = readdir(d));) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            snprintf(child, sizeof child, "%s/%s", path, e->d_name);
            remove_tree(child);
        }
        closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

/* Files in `path` whose name contains `part` (all of them for ""). */
static int count_files(const char *path, const char *part) {
    DIR *d = opendir(path);
    if (!d) return 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 && strstr(e->d_name, part)) n++;
    closedir(d);
    return n;
}

/* A payload with every byte value (NULs included), `n` bytes, varied by `seed`. */
static unsigned char *make_payload(size_t n, unsigned seed) {
    unsigned char *p = malloc(n ? n : 1);
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(i * 31 + seed * 7 + (i >> 8));
    return p;
}

/* get must hit with exactly these bytes and warn nothing. */
static void check_hit(const char *kind, const char *key, const void *want, size_t n) {
    Warnings w = {0};
    void *data = NULL;
    size_t size = 12345;
    CHECK(disk_cache_get(dir, kind, key, &data, &size, record_warning, &w));
    CHECK(data != NULL && size == n);
    if (data && size == n) {
        CHECK(memcmp(data, want, n) == 0);
        CHECK(((char *)data)[n] == '\0');   /* text payloads come back terminated */
    }
    CHECK(w.count == 0);
    free(data);
}

static void test_resolve_dir(void) {
    char out[256];
    CHECK(disk_cache_resolve_dir("/some/where", out, sizeof out) && strcmp(out, "/some/where") == 0);
    CHECK(!disk_cache_resolve_dir("", out, sizeof out) && out[0] == '\0');
    CHECK(!disk_cache_resolve_dir("off", out, sizeof out) && out[0] == '\0');
    setenv("TILE_CACHE_DIR", "/from/env", 1);
    CHECK(disk_cache_resolve_dir(NULL, out, sizeof out) && strcmp(out, "/from/env") == 0);
    CHECK(disk_cache_resolve_dir("/explicit", out, sizeof out) && strcmp(out, "/explicit") == 0);
    setenv("TILE_CACHE_DIR", "off", 1);
    CHECK(!disk_cache_resolve_dir(NULL, out, sizeof out));
    setenv("TILE_CACHE_DIR", "", 1);
    CHECK(!disk_cache_resolve_dir(NULL, out, sizeof out));
    unsetenv("TILE_CACHE_DIR");
    setenv("HOME", "/home/someone", 1);
    CHECK(disk_cache_resolve_dir(NULL, out, sizeof out) && strcmp(out, "/home/someone/.cache/tilec") == 0);
    unsetenv("HOME");
    CHECK(!disk_cache_resolve_dir(NULL, out, sizeof out));
    char tiny[8];   /* a path that does not fit is no cache, not a truncated one */
    CHECK(!disk_cache_resolve_dir("/a/long/path", tiny, sizeof tiny) && tiny[0] == '\0');
}

static void test_round_trip(void) {
    remove_tree(dir);
    size_t n = 100000;
    unsigned char *p = make_payload(n, 1);
    const char *key = "kernel add\nsource line 1\nsource line 2\n";   /* keys may span lines */
    Warnings w = {0};
    void *data = NULL;
    size_t size = 0;
    CHECK(!disk_cache_get(dir, "test", key, &data, &size, record_warning, &w));   /* not there: quiet */
    CHECK(data == NULL && w.count == 0);
    char why[512] = "";
    CHECK(disk_cache_put(dir, "test", key, p, n, why, sizeof why));   /* creates the directory */
    check_hit("test", key, p, n);
    /* another key, another kind, an empty payload: separate entries */
    unsigned char *q = make_payload(10, 2);
    CHECK(disk_cache_put(dir, "test", "kernel add\nsource line 1\n", q, 10, NULL, 0));
    CHECK(disk_cache_put(dir, "other", key, q, 10, NULL, 0));
    CHECK(disk_cache_put(dir, "test", "empty", "", 0, NULL, 0));
    check_hit("test", key, p, n);
    check_hit("test", "kernel add\nsource line 1\n", q, 10);
    check_hit("other", key, q, 10);
    check_hit("test", "empty", "", 0);
    CHECK(count_files(dir, "") == 4);
    CHECK(count_files(dir, "test-") == 3 && count_files(dir, "other-") == 1);   /* names start with the kind */
    /* overwriting replaces */
    CHECK(disk_cache_put(dir, "test", key, q, 10, NULL, 0));
    check_hit("test", key, q, 10);
    CHECK(count_files(dir, "") == 4);
    /* kinds are plain names: anything else is no cache */
    char path[4200];
    CHECK(!disk_cache_path(dir, "../x", key, path, sizeof path));
    CHECK(!disk_cache_put(dir, "../x", key, q, 10, why, sizeof why));
    CHECK(!disk_cache_get(dir, "", key, &data, &size, record_warning, &w) && w.count == 0);
    free(p);
    free(q);
}

/* ---- damage ------------------------------------------------------------------ */

static const char *damage_key = "tune saxpy|f32[128]";

static void entry_path(const char *key, char *path, size_t n) { CHECK(disk_cache_path(dir, "test", key, path, n)); }

static long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static void truncate_half(const char *path) { CHECK(truncate(path, file_size(path) / 2) == 0); }
static void truncate_payload(const char *path) { CHECK(truncate(path, file_size(path) - 1) == 0); }
static void truncate_header(const char *path) { CHECK(truncate(path, 20) == 0); }
static void truncate_empty(const char *path) { CHECK(truncate(path, 0) == 0); }

static void patch(const char *path, long offset, const char *bytes, size_t n) {
    FILE *f = fopen(path, "r+b");
    CHECK(f != NULL);
    if (!f) return;
    if (offset < 0) fseek(f, offset, SEEK_END);
    else fseek(f, offset, SEEK_SET);
    CHECK(fwrite(bytes, 1, n, f) == n);
    fclose(f);
}

static void flip_payload_byte(const char *path) {
    FILE *f = fopen(path, "r+b");
    CHECK(f != NULL);
    if (!f) return;
    fseek(f, -3, SEEK_END);
    int c = fgetc(f);
    fseek(f, -3, SEEK_END);
    fputc(c ^ 0x10, f);
    fclose(f);
}

static void wrong_version(const char *path) { patch(path, 0, "tilec-cache 2", 13); }
static void wrong_magic(const char *path) { patch(path, 0, "TILEC-CACHE", 11); }

static void append_byte(const char *path) {
    FILE *f = fopen(path, "ab");
    CHECK(f != NULL);
    if (f) fputc('x', f), fclose(f);
}

/* A simulated hash collision: the file under this key's name holds another key's entry. */
static void other_key(const char *path) {
    char other[4200];
    entry_path("some other key", other, sizeof other);
    CHECK(disk_cache_put(dir, "test", "some other key", "ABCDEFGH", 8, NULL, 0));
    CHECK(rename(other, path) == 0);
}

/* Damages a fresh entry; the next get must be a miss with one warning naming
 * the file and `why_part`; the next put repairs it. */
static void check_damage(const char *how, void (*damage)(const char *path), const char *why_part) {
    remove_tree(dir);
    size_t n = 5000;
    unsigned char *p = make_payload(n, 3);
    CHECK(disk_cache_put(dir, "test", damage_key, p, n, NULL, 0));
    char path[4200];
    entry_path(damage_key, path, sizeof path);
    damage(path);
    Warnings w = {0};
    void *data = (void *)1;
    size_t size = 99;
    bool hit = disk_cache_get(dir, "test", damage_key, &data, &size, record_warning, &w);
    if (hit || w.count != 1) fprintf(stderr, "damage '%s': hit=%d warnings=%d\n", how, hit, w.count);
    CHECK(!hit && data == NULL && size == 0);
    CHECK(w.count == 1);
    CHECK(strcmp(w.path, path) == 0);
    CHECK_HAS(w.why, why_part);
    /* without a callback: the same miss, silently */
    CHECK(!disk_cache_get(dir, "test", damage_key, &data, &size, NULL, NULL) && data == NULL);
    CHECK(disk_cache_put(dir, "test", damage_key, p, n, NULL, 0));
    check_hit("test", damage_key, p, n);
    free(p);
}

static void make_directory_there(const char *path) { CHECK(unlink(path) == 0 && mkdir(path, 0755) == 0); }

/* A directory where the entry should be: a warned miss, and put cannot replace it. */
static void test_directory_in_the_way(void) {
    remove_tree(dir);
    CHECK(disk_cache_put(dir, "test", damage_key, "abc", 3, NULL, 0));
    char path[4200];
    entry_path(damage_key, path, sizeof path);
    make_directory_there(path);
    Warnings w = {0};
    void *data = NULL;
    size_t size = 0;
    CHECK(!disk_cache_get(dir, "test", damage_key, &data, &size, record_warning, &w));
    CHECK(w.count == 1);
    CHECK_HAS(w.why, "not a regular file");
    char why[512] = "";
    CHECK(!disk_cache_put(dir, "test", damage_key, "abc", 3, why, sizeof why));
    CHECK_HAS(why, "cannot write");
    CHECK(count_files(dir, ".tmp-") == 0);
    rmdir(path);
}

/* Every single-byte change and every truncation of a small entry is caught
 * (FNV-1a changes with any one payload byte; the header is compared field by
 * field), and the parser never reads outside the file. */
static void test_every_byte(void) {
    remove_tree(dir);
    const char *key = "k\n1";
    const char *payload = "payload bytes";
    CHECK(disk_cache_put(dir, "test", key, payload, strlen(payload), NULL, 0));
    char path[4200];
    entry_path(key, path, sizeof path);
    FILE *f = fopen(path, "rb");
    unsigned char good[256];
    size_t n = f ? fread(good, 1, sizeof good, f) : 0;
    if (f) fclose(f);
    CHECK(n > strlen(payload) && n < sizeof good);
    int missed = 0;
    for (size_t len = 0; len <= n; len++) {
        for (int bit = -1; bit < 8; bit++) {   /* -1: truncated to len; else bit flipped at len */
            if (bit >= 0 && len == n) break;
            unsigned char bad[256];
            memcpy(bad, good, n);
            if (bit >= 0) bad[len] ^= (unsigned char)(1 << bit);
            f = fopen(path, "wb");
            if (f) fwrite(bad, 1, bit >= 0 ? n : len, f), fclose(f);
            Warnings w = {0};
            void *data = NULL;
            size_t size = 0;
            bool hit = disk_cache_get(dir, "test", key, &data, &size, record_warning, &w);
            bool intact = bit < 0 && len == n;
            if (hit != intact || w.count != !intact) missed++;
            free(data);
        }
    }
    CHECK(missed == 0);
}

/* ---- directories that cannot be written ------------------------------------- */

static void test_unwritable(void) {
    /* under a regular file no directory can ever exist, even for root */
    char blocker[1300], below[1400];
    snprintf(blocker, sizeof blocker, "%s/a_file", scratch);
    FILE *f = fopen(blocker, "w");
    CHECK(f != NULL);
    if (f) fclose(f);
    snprintf(below, sizeof below, "%s/cache", blocker);
    const char *dirs[] = {"/dev/null/x", blocker, below};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        Warnings w = {0};
        void *data = NULL;
        size_t size = 0;
        CHECK(!disk_cache_get(dirs[i], "test", "k", &data, &size, record_warning, &w));
        CHECK(data == NULL && w.count == 0);
        char why[512] = "";
        CHECK(!disk_cache_put(dirs[i], "test", "k", "payload", 7, why, sizeof why));
        CHECK(why[0] != '\0');
        CHECK(!disk_cache_put(dirs[i], "test", "k", "payload", 7, NULL, 0));   /* no reason wanted */
    }
    /* no directory at all */
    CHECK(!disk_cache_put("", "test", "k", "payload", 7, NULL, 0));
    CHECK(!disk_cache_put(NULL, "test", "k", "payload", 7, NULL, 0));
}

/* A write that fails half-way (file size limit, as a full disk would): put
 * reports it, leaves no temporary file, and the old entry stays valid. */
static void test_failed_write(void) {
    remove_tree(dir);
    unsigned char *old = make_payload(100, 4);
    CHECK(disk_cache_put(dir, "test", "big", old, 100, NULL, 0));
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);   /* write fails with EFBIG instead of killing us */
        struct rlimit rl = {65536, 65536};
        setrlimit(RLIMIT_FSIZE, &rl);
        unsigned char *big = make_payload(1 << 20, 5);
        char why[512] = "";
        bool stored = disk_cache_put(dir, "test", "big", big, 1 << 20, why, sizeof why);
        _exit(!stored && strstr(why, "cannot write") ? 0 : 1);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(count_files(dir, ".tmp-") == 0);
    check_hit("test", "big", old, 100);
    free(old);
}

/* ---- concurrency --------------------------------------------------------------- */

enum { WRITERS = 8, ROUNDS = 50, SHARED_SIZE = 200000 };

static int writer(const unsigned char *payload) {
    for (int r = 0; r < ROUNDS; r++) {
        Warnings w = {0};
        if (!disk_cache_put(dir, "test", "shared key", payload, SHARED_SIZE, NULL, 0)) return 1;
        void *data = NULL;
        size_t size = 0;
        if (!disk_cache_get(dir, "test", "shared key", &data, &size, record_warning, &w)) return 2;
        int bad = w.count != 0 || size != SHARED_SIZE || memcmp(data, payload, SHARED_SIZE) != 0;
        free(data);
        if (bad) return 3;
    }
    return 0;
}

static void test_concurrent_writers(void) {
    remove_tree(dir);
    unsigned char *payload = make_payload(SHARED_SIZE, 6);
    pid_t pids[WRITERS];
    for (int i = 0; i < WRITERS; i++) {
        pids[i] = fork();
        if (pids[i] == 0) _exit(writer(payload));
        CHECK(pids[i] > 0);
    }
    for (int i = 0; i < WRITERS; i++) {
        int status = 0;
        if (pids[i] <= 0) continue;
        CHECK(waitpid(pids[i], &status, 0) == pids[i]);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            fprintf(stderr, "writer %d: status %d\n", i, status);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    check_hit("test", "shared key", payload, SHARED_SIZE);
    CHECK(count_files(dir, "") == 1);   /* the entry, and no temporary file */
    CHECK(count_files(dir, ".tmp-") == 0);
    free(payload);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s SCRATCH_DIR\n", argv[0]);
        return 2;
    }
    snprintf(scratch, sizeof scratch, "%s", argv[1]);
    remove_tree(scratch);
    CHECK(disk_cache_mkdir_p(scratch) == 0);
    snprintf(dir, sizeof dir, "%s/cache/nested", scratch);

    test_resolve_dir();
    test_round_trip();
    check_damage("truncated to half", truncate_half, "truncated");
    check_damage("last payload byte cut", truncate_payload, "truncated");
    check_damage("header cut", truncate_header, "truncated");
    check_damage("empty file", truncate_empty, "truncated");
    check_damage("payload byte flipped", flip_payload_byte, "checksum mismatch");
    check_damage("another key in the header", other_key, "key mismatch");
    check_damage("another format version", wrong_version, "format version 2");
    check_damage("not a cache file", wrong_magic, "not a tilec cache file");
    check_damage("trailing bytes", append_byte, "size mismatch");
    test_directory_in_the_way();
    test_every_byte();
    test_unwritable();
    test_failed_write();
    test_concurrent_writers();

    if (check_failures) fprintf(stderr, "%d check(s) failed\n", check_failures);
    else remove_tree(scratch);
    return check_failures != 0;
}
