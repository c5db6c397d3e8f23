/* npy.c: the NumPy .npy format (see npy.h).
 *
 * Layout: "\x93NUMPY", major, minor, header length (2 bytes little-endian in
 * v1, 4 bytes in v2/v3), then a Python dict literal such as
 *     {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
 * padded with spaces and a '\n' so the data starts 64-byte aligned. */
#include "npy.h"
#include "scalar.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int fail(char *err, size_t n, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t n, const char *path, const char *fmt, ...) {
    if (err && n) {
        int k = snprintf(err, n, "%s: ", path);
        if (k < 0) k = 0;
        if ((size_t)k < n) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(err + k, n - (size_t)k, fmt, ap);
            va_end(ap);
        }
    }
    return -1;
}

/* descr without its byte-order character -> dtype. */
static const struct { const char *code; tile_dtype dtype; } npy_codes[] = {
    {"b1", TILE_BOOL}, {"i1", TILE_I8}, {"i2", TILE_I16}, {"i4", TILE_I32}, {"i8", TILE_I64},
    {"u1", TILE_U8}, {"u2", TILE_U16}, {"u4", TILE_U32}, {"u8", TILE_U64},
    {"f2", TILE_F16}, {"f4", TILE_F32}, {"f8", TILE_F64},
};

const char *npy_descr(tile_dtype dtype) {
    switch (dtype) {
    case TILE_BOOL: return "|b1";
    case TILE_I8: return "|i1";
    case TILE_U8: return "|u1";
    case TILE_I16: return "<i2";
    case TILE_I32: return "<i4";
    case TILE_I64: return "<i8";
    case TILE_U16: return "<u2";
    case TILE_U32: return "<u4";
    case TILE_U64: return "<u8";
    case TILE_F16: return "<f2";
    case TILE_F32: return "<f4";
    case TILE_F64: return "<f8";
    default: return NULL;
    }
}

static int host_is_little_endian(void) {
    uint16_t x = 1;
    unsigned char c;
    memcpy(&c, &x, 1);
    return c == 1;
}

static void byteswap(void *data, int64_t numel, int size) {
    unsigned char *p = data;
    for (int64_t e = 0; e < numel; e++, p += size)
        for (int i = 0; i < size / 2; i++) {
            unsigned char t = p[i];
            p[i] = p[size - 1 - i];
            p[size - 1 - i] = t;
        }
}

/* ---- the header dict ---------------------------------------------------- */

typedef struct HeaderParser {
    const char *p, *end;
} HeaderParser;

static void skip_space(HeaderParser *h) {
    while (h->p < h->end && (*h->p == ' ' || *h->p == '\t' || *h->p == '\n' || *h->p == '\r'))
        h->p++;
}

static int accept(HeaderParser *h, char c) {
    skip_space(h);
    if (h->p < h->end && *h->p == c) {
        h->p++;
        return 1;
    }
    return 0;
}

/* A quoted Python string into buf; 0 if there is none or it is too long. */
static int parse_string(HeaderParser *h, char *buf, size_t n) {
    skip_space(h);
    if (h->p >= h->end || (*h->p != '\'' && *h->p != '"')) return 0;
    char quote = *h->p++;
    size_t k = 0;
    while (h->p < h->end && *h->p != quote) {
        if (k + 1 >= n) return 0;
        buf[k++] = *h->p++;
    }
    if (h->p >= h->end) return 0;
    h->p++;
    buf[k] = '\0';
    return 1;
}

static int parse_word(HeaderParser *h, const char *word) {
    skip_space(h);
    size_t len = strlen(word);
    if ((size_t)(h->end - h->p) >= len && memcmp(h->p, word, len) == 0) {
        h->p += len;
        return 1;
    }
    return 0;
}

/* "(3, 4)", "(5,)" or "()"; returns 0 on malformed text, -2 if rank > 8. */
static int parse_shape(HeaderParser *h, NpyArray *a) {
    if (!accept(h, '(')) return 0;
    a->rank = 0;
    for (;;) {
        if (accept(h, ')')) return 1;
        skip_space(h);
        if (h->p >= h->end || *h->p < '0' || *h->p > '9') return 0;
        int64_t v = 0;
        while (h->p < h->end && *h->p >= '0' && *h->p <= '9') {
            if (v > (INT64_MAX - 9) / 10) return 0;
            v = v * 10 + (*h->p++ - '0');
        }
        if (h->p < h->end && *h->p == 'L') h->p++;   /* Python 2 longs */
        if (a->rank == TILE_MAX_DIMS) return -2;
        a->shape[a->rank++] = v;
        if (accept(h, ')')) return 1;
        if (!accept(h, ',')) return 0;
    }
}

static int parse_header(const char *path, const char *text, size_t len, NpyArray *a,
                        int *swap, char *err, size_t errlen) {
    HeaderParser h = {text, text + len};
    char descr[32] = "";
    int have_descr = 0, have_order = 0, have_shape = 0, fortran = 0;
    if (!accept(&h, '{')) return fail(err, errlen, path, "malformed .npy header (no '{')");
    for (;;) {
        if (accept(&h, '}')) break;
        char key[32];
        if (!parse_string(&h, key, sizeof key) || !accept(&h, ':'))
            return fail(err, errlen, path, "malformed .npy header (expected 'key': value)");
        if (strcmp(key, "descr") == 0) {
            if (!parse_string(&h, descr, sizeof descr))
                return fail(err, errlen, path, "unsupported dtype in .npy header "
                            "(structured or malformed descr)");
            have_descr = 1;
        } else if (strcmp(key, "fortran_order") == 0) {
            if (parse_word(&h, "True")) fortran = 1;
            else if (parse_word(&h, "False")) fortran = 0;
            else return fail(err, errlen, path, "malformed .npy header (fortran_order)");
            have_order = 1;
        } else if (strcmp(key, "shape") == 0) {
            int r = parse_shape(&h, a);
            if (r == -2)
                return fail(err, errlen, path, "array has more than %d dimensions", TILE_MAX_DIMS);
            if (r == 0) return fail(err, errlen, path, "malformed .npy header (shape)");
            have_shape = 1;
        } else {
            return fail(err, errlen, path, "malformed .npy header (unknown key '%s')", key);
        }
        if (accept(&h, '}')) break;
        if (!accept(&h, ','))
            return fail(err, errlen, path, "malformed .npy header (expected ',' or '}')");
    }
    if (!have_descr || !have_order || !have_shape)
        return fail(err, errlen, path, "malformed .npy header (missing %s)",
                    !have_descr ? "descr" : !have_order ? "fortran_order" : "shape");
    if (fortran)
        return fail(err, errlen, path, "Fortran-order arrays are not supported; save a C-order "
                    "array (numpy.ascontiguousarray)");
    char order = descr[0];
    const char *code = descr + 1;
    if (order != '<' && order != '>' && order != '|' && order != '=')
        return fail(err, errlen, path, "unsupported dtype '%s'", descr);
    for (size_t i = 0; i < sizeof npy_codes / sizeof npy_codes[0]; i++) {
        if (strcmp(code, npy_codes[i].code) == 0) {
            a->dtype = npy_codes[i].dtype;
            int little = host_is_little_endian();
            *swap = (order == '<' && !little) || (order == '>' && little);
            return 0;
        }
    }
    return fail(err, errlen, path, "unsupported dtype '%s' (supported: bool, int8..int64, "
                "uint8..uint64, float16, float32, float64)", descr);
}

/* ---- reading ------------------------------------------------------------ */

int npy_read(const char *path, NpyArray *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) return fail(err, errlen, path, "cannot open: %s", strerror(errno));
    unsigned char pre[12];
    char *header = NULL;
    void *data = NULL;
    int rc = -1;
    if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0) {
        fail(err, errlen, path, "not a .npy file (bad magic)");
        goto done;
    }
    int major = pre[6];
    size_t header_len;
    if (major == 1) {
        header_len = (size_t)pre[8] | (size_t)pre[9] << 8;
    } else if (major == 2 || major == 3) {
        if (fread(pre + 10, 1, 2, f) != 2) {
            fail(err, errlen, path, "truncated .npy header");
            goto done;
        }
        header_len = (size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 |
                     (size_t)pre[11] << 24;
    } else {
        fail(err, errlen, path, "unsupported .npy format version %d.%d", major, pre[7]);
        goto done;
    }
    if (header_len > (1u << 24)) {
        fail(err, errlen, path, "malformed .npy header (length %zu)", header_len);
        goto done;
    }
    header = malloc(header_len + 1);
    if (!header) {
        fail(err, errlen, path, "out of memory");
        goto done;
    }
    if (fread(header, 1, header_len, f) != header_len) {
        fail(err, errlen, path, "truncated .npy header");
        goto done;
    }
    header[header_len] = '\0';
    int swap = 0;
    if (parse_header(path, header, header_len, out, &swap, err, errlen) != 0) goto done;

    int size = tile_dtype_size(out->dtype);
    int64_t numel = 1;
    for (int i = 0; i < out->rank; i++) {
        if (out->shape[i] != 0 && numel > INT64_MAX / 16 / out->shape[i]) {
            fail(err, errlen, path, "array too large");
            goto done;
        }
        numel *= out->shape[i];
    }
    size_t nbytes = (size_t)numel * (size_t)size;
    /* Compare with what the file holds before allocating, so a header that claims
     * terabytes is a short-file error, not an attempt to allocate them. */
    long here = ftell(f);
    if (here >= 0 && fseek(f, 0, SEEK_END) == 0) {
        long end = ftell(f);
        if (end >= here && (unsigned long)(end - here) < nbytes) {
            fail(err, errlen, path, "truncated data: expected %zu bytes, found %ld", nbytes, end - here);
            goto done;
        }
        if (fseek(f, here, SEEK_SET) != 0) {
            fail(err, errlen, path, "cannot seek: %s", strerror(errno));
            goto done;
        }
    }
    data = malloc(nbytes ? nbytes : 1);
    if (!data) {
        fail(err, errlen, path, "out of memory (%zu bytes)", nbytes);
        goto done;
    }
    size_t got = fread(data, 1, nbytes, f);
    if (got != nbytes) {
        fail(err, errlen, path, "truncated data: expected %zu bytes, found %zu", nbytes, got);
        goto done;
    }
    if (fgetc(f) != EOF) {
        fail(err, errlen, path, "%s bytes after the data (shape in header does not match file size)",
             "unexpected");
        goto done;
    }
    if (swap && size > 1) byteswap(data, numel, size);
    if (out->dtype == TILE_BOOL) {   /* any nonzero byte is true; keep 0/1 */
        unsigned char *b = data;
        for (int64_t i = 0; i < numel; i++) b[i] = b[i] != 0;
    }
    out->numel = numel;
    out->nbytes = nbytes;
    out->data = data;
    data = NULL;
    rc = 0;
done:
    free(header);
    free(data);
    fclose(f);
    if (rc != 0) memset(out, 0, sizeof *out);
    return rc;
}

void npy_free(NpyArray *a) {
    if (!a) return;
    free(a->data);
    memset(a, 0, sizeof *a);
}

/* ---- writing ------------------------------------------------------------ */

static int write_all(FILE *f, const void *p, size_t n) {
    return fwrite(p, 1, n, f) == n;
}

int npy_write(const char *path, tile_dtype dtype, int rank, const int64_t *shape,
              const void *data, char *err, size_t errlen) {
    if (rank < 0 || rank > TILE_MAX_DIMS)
        return fail(err, errlen, path, "cannot write an array of rank %d", rank);
    if ((int)dtype < 0 || dtype >= TILE_DTYPE_COUNT)
        return fail(err, errlen, path, "cannot write an array of unknown dtype %d", (int)dtype);
    int64_t numel = 1;
    for (int i = 0; i < rank; i++) {
        if (shape[i] < 0) return fail(err, errlen, path, "negative extent %lld", (long long)shape[i]);
        numel *= shape[i];
    }
    if (numel > 0 && !data) return fail(err, errlen, path, "no data to write");
    /* bf16 and tf32 have no NumPy dtype: stored as float32. */
    int as_f32 = dtype == TILE_BF16 || dtype == TILE_TF32;
    const char *descr = as_f32 ? "<f4" : npy_descr(dtype);
    int out_size = as_f32 ? 4 : tile_dtype_size(dtype);
    int swap = !host_is_little_endian() && out_size > 1;

    char dict[400];
    int k = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int i = 0; i < rank; i++)
        k += snprintf(dict + k, sizeof dict - (size_t)k, "%lld%s", (long long)shape[i],
                      rank == 1 ? "," : i + 1 < rank ? ", " : "");
    k += snprintf(dict + k, sizeof dict - (size_t)k, "), }");
    /* Pad so that magic + version + length + dict + '\n' is a multiple of 64. */
    size_t total = 10 + (size_t)k + 1;
    size_t padded = (total + 63) / 64 * 64;
    size_t header_len = padded - 10;
    if (header_len > 65535) return fail(err, errlen, path, "header too long");

    char *tmp = malloc(strlen(path) + 16);
    if (!tmp) return fail(err, errlen, path, "out of memory");
    sprintf(tmp, "%s.tmpXXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        int e = errno;
        free(tmp);
        return fail(err, errlen, path, "cannot create: %s", strerror(e));
    }
    fchmod(fd, 0644);   /* mkstemp makes it 0600; an output file should be readable */
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        int e = errno;
        close(fd);
        unlink(tmp);
        free(tmp);
        return fail(err, errlen, path, "cannot write: %s", strerror(e));
    }
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                             (unsigned char)(header_len & 0xff), (unsigned char)(header_len >> 8)};
    int ok = write_all(f, pre, 10) && write_all(f, dict, (size_t)k);
    for (size_t i = 10 + (size_t)k; ok && i + 1 < padded; i++) ok = fputc(' ', f) != EOF;
    ok = ok && fputc('\n', f) != EOF;

    /* Data in chunks, converting or swapping where needed. */
    int in_size = tile_dtype_size(dtype);
    unsigned char buf[4096];
    int per_chunk = (int)(sizeof buf / (size_t)out_size);
    for (int64_t e = 0; ok && e < numel; e += per_chunk) {
        int64_t m = numel - e < per_chunk ? numel - e : per_chunk;
        const unsigned char *src = (const unsigned char *)data + e * in_size;
        if (dtype == TILE_BF16) {
            for (int64_t j = 0; j < m; j++) {
                uint16_t b;
                memcpy(&b, src + 2 * j, 2);
                float x = bf16_bits_to_f32(b);
                memcpy(buf + 4 * j, &x, 4);
            }
        } else {
            memcpy(buf, src, (size_t)(m * out_size));
        }
        if (swap) byteswap(buf, m, out_size);
        ok = write_all(f, buf, (size_t)(m * out_size));
    }
    int e = errno;
    if (fclose(f) != 0 && ok) {
        ok = 0;
        e = errno;
    }
    if (!ok) {
        unlink(tmp);
        free(tmp);
        return fail(err, errlen, path, "write failed: %s", strerror(e));
    }
    if (rename(tmp, path) != 0) {
        e = errno;
        unlink(tmp);
        free(tmp);
        return fail(err, errlen, path, "cannot rename into place: %s", strerror(e));
    }
    free(tmp);
    return 0;
}
