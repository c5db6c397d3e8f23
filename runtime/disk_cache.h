/* disk_cache.h: the one on-disk cache of libtile (compiled kernels, tune
 * winners).  Prefix: disk_cache_.
 *
 * An entry is a (kind, key text) -> payload mapping stored in one file,
 *     <dir>/<kind>-<fnv1a64(kind, key) in hex>.tcache
 * that holds a text header and the payload:
 *     tilec-cache <format version>\n
 *     kind <kind>\n
 *     key <key bytes>\n<key text>\n
 *     payload <payload bytes> fnv1a <fnv1a64 of the payload, 16 hex digits>\n
 *     <payload>
 * The full key is stored and compared, so a hash collision is a miss, never
 * the wrong entry.  Writes go to a temporary file in the same directory and
 * are renamed into place: readers see an old entry or a new one, never half of
 * one, and concurrent writers of the same key all succeed.
 *
 * Nothing here fails its caller: a cache that cannot be read is a miss, one
 * that cannot be written is no caching. */
#ifndef TILE_DISK_CACHE_H
#define TILE_DISK_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DISK_CACHE_VERSION 1
#define DISK_CACHE_MAX_PAYLOAD ((size_t)1 << 30)   /* larger files are damage, not entries */
#define DISK_CACHE_MAX_KEY ((size_t)1 << 26)

/* Told why an entry was ignored (damaged, other version, other key): `path`
 * is the file, `why` a short reason such as "checksum mismatch". */
typedef void (*disk_cache_warn_fn)(void *user, const char *path, const char *why);

/* The cache directory: `explicit_dir` if not NULL, else $TILE_CACHE_DIR, else
 * $HOME/.cache/tilec.  "" or "off" disables the cache.  Returns false (and
 * out = "") when disabled or the path does not fit in `n`. */
bool disk_cache_resolve_dir(const char *explicit_dir, char *out, size_t n);

/* mkdir -p; 0 when `dir` is (now) a directory, else -1 with errno set. */
int disk_cache_mkdir_p(const char *dir);

/* The file of an entry; false if it does not fit or `kind` is not a plain
 * name ([A-Za-z0-9_], at most 32 characters). */
bool disk_cache_path(const char *dir, const char *kind, const char *key, char *out, size_t n);

/* Looks the entry up.  On a hit returns true with *data a malloc'd copy of
 * the payload (NUL-terminated one byte past *size, for text payloads).  A
 * missing file is a quiet miss; a damaged or foreign file is a miss reported
 * through warn(user, path, why) (warn may be NULL), and the caller's next put
 * replaces it. */
bool disk_cache_get(const char *dir, const char *kind, const char *key, void **data, size_t *size,
                    disk_cache_warn_fn warn, void *user);

/* Stores the entry atomically, creating `dir` if needed.  Returns false when
 * it could not (the reason in `why`, which may be NULL); the cache is then
 * simply not updated. */
bool disk_cache_put(const char *dir, const char *kind, const char *key, const void *data, size_t size,
                    char *why, size_t nwhy);

/* FNV-1a 64 of `n` bytes continuing from `h` (start with DISK_CACHE_FNV_SEED). */
#define DISK_CACHE_FNV_SEED 14695981039346656037ull
uint64_t disk_cache_fnv1a(const void *p, size_t n, uint64_t h);

#endif
