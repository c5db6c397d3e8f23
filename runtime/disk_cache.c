/* disk_cache.c: the on-disk cache shared by the CUDA kernel cache and the
 * autotuner (disk_cache.h describes the file format).  Prefix: disk_cache_.
 *
 * Reads trust nothing in the file: every field is parsed with bounds, the key
 * is compared byte for byte and the payload checked against its checksum.
 * Writes never fsync: a crash can leave a short or empty file under the final
 * name only if the file system reorders the rename before the data, and the
 * reader detects that like any other damage. */
#define _GNU_SOURCE   /* mkostemp */
#include "disk_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DISK_CACHE_MAGIC "tilec-cache "
#define DISK_CACHE_MAX_KIND 32

uint64_t disk_cache_fnv1a(const void *p, size_t n, uint64_t h) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static void set_why(char *why, size_t nwhy, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_why(char *why, size_t nwhy, const char *fmt, ...) {
    if (!why || !nwhy) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, nwhy, fmt, ap);
    va_end(ap);
}

/* ---- the directory ---------------------------------------------------------- */

bool disk_cache_resolve_dir(const char *explicit_dir, char *out, size_t n) {
    if (!out || !n) return false;
    out[0] = '\0';
    const char *dir = explicit_dir ? explicit_dir : getenv("TILE_CACHE_DIR");
    int len;
    if (dir) {
        if (!*dir || strcmp(dir, "off") == 0) return false;
        len = snprintf(out, n, "%s", dir);
    } else {
        const char *home = getenv("HOME");
        if (!home || !*home) return false;
        len = snprintf(out, n, "%s/.cache/tilec", home);
    }
    if (len < 0 || (size_t)len >= n) {   /* a truncated path would be some other directory */
        out[0] = '\0';
        return false;
    }
    return true;
}

int disk_cache_mkdir_p(const char *dir) {
    char buf[4096];
    if (!dir || !*dir) return errno = ENOENT, -1;
    if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf) return errno = ENAMETOOLONG, -1;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
    struct stat st;
    if (stat(buf, &st) != 0) return -1;
    if (!S_ISDIR(st.st_mode)) return errno = ENOTDIR, -1;
    return 0;
}

/* ---- names ------------------------------------------------------------------ */

static bool kind_ok(const char *kind) {
    if (!kind || !*kind || strlen(kind) > DISK_CACHE_MAX_KIND) return false;
    for (const char *p = kind; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_'))
            return false;
    return true;
}

static uint64_t entry_hash(const char *kind, const char *key) {
    uint64_t h = disk_cache_fnv1a(kind, strlen(kind) + 1, DISK_CACHE_FNV_SEED);   /* the NUL separates */
    return disk_cache_fnv1a(key, strlen(key), h);
}

bool disk_cache_path(const char *dir, const char *kind, const char *key, char *out, size_t n) {
    if (!out || !n) return false;
    out[0] = '\0';
    if (!dir || !*dir || !key || !kind_ok(kind)) return false;
    int len = snprintf(out, n, "%s/%s-%016llx.tcache", dir, kind, (unsigned long long)entry_hash(kind, key));
    if (len < 0 || (size_t)len >= n) {
        out[0] = '\0';
        return false;
    }
    return true;
}

/* ---- reading ---------------------------------------------------------------- */

/* A cursor over the file's bytes; every read is bounded by `end`. */
typedef struct Reader {
    const char *p, *end;
} Reader;

static bool rd_word(Reader *r, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n) != 0) return false;
    r->p += n;
    return true;
}

/* A decimal number of at most 18 digits (no overflow possible). */
static bool rd_number(Reader *r, uint64_t *v) {
    int digits = 0;
    *v = 0;
    while (r->p < r->end && *r->p >= '0' && *r->p <= '9' && digits < 19) {
        *v = *v * 10 + (uint64_t)(*r->p++ - '0');
        digits++;
    }
    return digits > 0 && digits <= 18;
}

static bool rd_hex16(Reader *r, uint64_t *v) {
    if (r->end - r->p < 16) return false;
    *v = 0;
    for (int i = 0; i < 16; i++) {
        char c = *r->p++;
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0) return false;
        *v = *v << 4 | (uint64_t)d;
    }
    return true;
}

/* Checks the file's bytes against the expected kind and key.  Returns NULL
 * and sets the payload, or the reason the entry is not usable. */
static const char *parse_entry(const char *buf, size_t len, const char *kind, const char *key,
                               const char **payload, size_t *payload_size, char *reason, size_t nreason) {
    Reader r = {buf, buf + len};
    uint64_t version, key_size, size, sum;
    if (!rd_word(&r, DISK_CACHE_MAGIC)) return len < strlen(DISK_CACHE_MAGIC) ? "truncated" : "not a tilec cache file";
    if (!rd_number(&r, &version) || !rd_word(&r, "\n")) return r.p == r.end ? "truncated" : "bad header";
    if (version != DISK_CACHE_VERSION) {
        snprintf(reason, nreason, "format version %llu, expected %d", (unsigned long long)version, DISK_CACHE_VERSION);
        return reason;
    }
    if (!rd_word(&r, "kind ")) return r.p == r.end ? "truncated" : "bad header";
    const char *kind_start = r.p;
    while (r.p < r.end && *r.p != '\n') r.p++;
    if (r.p == r.end) return "truncated";
    if ((size_t)(r.p - kind_start) != strlen(kind) || memcmp(kind_start, kind, strlen(kind)) != 0) return "kind mismatch";
    r.p++;
    if (!rd_word(&r, "key ") || !rd_number(&r, &key_size) || !rd_word(&r, "\n"))
        return r.p == r.end ? "truncated" : "bad header";
    if ((uint64_t)(r.end - r.p) < key_size + 1) return "truncated";
    if (key_size != strlen(key) || memcmp(r.p, key, key_size) != 0) return "key mismatch (another entry with the same hash)";
    r.p += key_size;
    if (!rd_word(&r, "\npayload ") || !rd_number(&r, &size) || !rd_word(&r, " fnv1a ") || !rd_hex16(&r, &sum) ||
        !rd_word(&r, "\n"))
        return r.p == r.end ? "truncated" : "bad header";
    uint64_t have = (uint64_t)(r.end - r.p);
    if (have < size) return "truncated";
    if (have > size) return "size mismatch (trailing bytes)";
    if (disk_cache_fnv1a(r.p, (size_t)size, DISK_CACHE_FNV_SEED) != sum) return "checksum mismatch";
    *payload = r.p;
    *payload_size = (size_t)size;
    return NULL;
}

/* The whole file into a malloc'd buffer with room for a NUL; NULL with a
 * reason (NULL reason: the file is simply absent or unreadable). */
static char *read_file(const char *path, size_t *len, const char **why) {
    *why = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    struct stat st;
    char *buf = NULL;
    if (fstat(fd, &st) != 0) goto out;
    if (!S_ISREG(st.st_mode)) {
        *why = "not a regular file";
        goto out;
    }
    if ((uint64_t)st.st_size > DISK_CACHE_MAX_PAYLOAD + DISK_CACHE_MAX_KEY + 4096) {
        *why = "file too large";
        goto out;
    }
    size_t want = (size_t)st.st_size;
    buf = malloc(want + 1);
    if (!buf) goto out;   /* out of memory: a quiet miss */
    size_t got = 0;
    while (got < want) {
        ssize_t n = read(fd, buf + got, want - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
    }
    if (got < want) {   /* shrank under us, or an I/O error: not an entry we can trust */
        free(buf);
        buf = NULL;
        *why = "read error";
        goto out;
    }
    *len = got;
out:
    close(fd);
    return buf;
}

bool disk_cache_get(const char *dir, const char *kind, const char *key, void **data, size_t *size,
                    disk_cache_warn_fn warn, void *user) {
    if (data) *data = NULL;
    if (size) *size = 0;
    char path[4200];
    if (!data || !size || !disk_cache_path(dir, kind, key, path, sizeof path)) return false;
    size_t len = 0;
    const char *why = NULL;
    char *buf = read_file(path, &len, &why);
    const char *payload = NULL;
    size_t payload_size = 0;
    char reason[96];
    if (buf) why = parse_entry(buf, len, kind, key, &payload, &payload_size, reason, sizeof reason);
    if (why) {
        if (warn) warn(user, path, why);
        free(buf);
        return false;
    }
    if (!buf) return false;
    memmove(buf, payload, payload_size);   /* the caller owns just the payload */
    buf[payload_size] = '\0';
    *data = buf;
    *size = payload_size;
    return true;
}

/* ---- writing ---------------------------------------------------------------- */

static bool write_all(int fd, const void *data, size_t n) {
    const char *p = data;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            if (w == 0) errno = EIO;
            return false;
        }
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* (strerror only where a reason is asked for: the CUDA backend's compile
 * threads put entries with why = NULL, and strerror need not be reentrant) */
bool disk_cache_put(const char *dir, const char *kind, const char *key, const void *data, size_t size,
                    char *why, size_t nwhy) {
    char path[4200], tmp[4300];
    if (!disk_cache_path(dir, kind, key, path, sizeof path)) {
        set_why(why, nwhy, "no cache entry name for kind '%s' in '%s'", kind ? kind : "", dir ? dir : "");
        return false;
    }
    if ((!data && size) || size > DISK_CACHE_MAX_PAYLOAD || strlen(key) > DISK_CACHE_MAX_KEY) {
        set_why(why, nwhy, "entry too large for the cache in %s", dir);
        return false;
    }
    if (disk_cache_mkdir_p(dir) != 0) {
        if (why) set_why(why, nwhy, "cannot create %s: %s", dir, strerror(errno));
        return false;
    }
    /* the temporary file: same directory (rename stays atomic), hidden name */
    const char *base = strrchr(path, '/') + 1;
    snprintf(tmp, sizeof tmp, "%.*s.%s.tmp-XXXXXX", (int)(base - path), path, base);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        if (why) set_why(why, nwhy, "cannot write in %s: %s", dir, strerror(errno));
        return false;
    }
    fchmod(fd, 0644);   /* mkstemp makes it private; the cache is shared like ~/.cache */
    char head[160];
    int hlen = snprintf(head, sizeof head, DISK_CACHE_MAGIC "%d\nkind %s\nkey %zu\n", DISK_CACHE_VERSION, kind,
                        strlen(key));
    char mid[96];
    int mlen = snprintf(mid, sizeof mid, "\npayload %zu fnv1a %016llx\n", size,
                        (unsigned long long)disk_cache_fnv1a(data, size, DISK_CACHE_FNV_SEED));
    bool ok = write_all(fd, head, (size_t)hlen) && write_all(fd, key, strlen(key)) &&
              write_all(fd, mid, (size_t)mlen) && write_all(fd, data, size);
    int err = errno;
    if (close(fd) != 0 && ok) ok = false, err = errno;
    if (ok && rename(tmp, path) != 0) ok = false, err = errno;
    if (!ok) {
        unlink(tmp);
        if (why) set_why(why, nwhy, "cannot write %s: %s", path, strerror(err));
    }
    return ok;
}
