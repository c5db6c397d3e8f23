/* test_npy.c: .npy round trips of every dtype and errors on malformed files.
 * usage: test_npy SCRATCH_DIR */
#include "check.h"
#include "npy.h"
#include "scalar.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>

static char dir[1024];

static const char *path_of(const char *name) {
    static char buf[2048];
    snprintf(buf, sizeof buf, "%s/%s", dir, name);
    return buf;
}

static void write_bytes(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        exit(1);
    }
    fwrite(data, 1, n, f);
    fclose(f);
}

/* A v1 file with `dict` as its header (padded) and `ndata` bytes of data. */
static void write_npy_raw(const char *path, int major, const char *dict, const void *data, size_t ndata) {
    unsigned char buf[4096];
    size_t dl = strlen(dict), pre = major == 1 ? 10 : 12;
    size_t total = (pre + dl + 1 + 63) / 64 * 64, hl = total - pre;
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)major;
    buf[7] = 0;
    buf[8] = (unsigned char)(hl & 0xff);
    buf[9] = (unsigned char)(hl >> 8);
    if (major != 1) buf[10] = buf[11] = 0;
    memcpy(buf + pre, dict, dl);
    memset(buf + pre + dl, ' ', hl - dl - 1);
    buf[total - 1] = '\n';
    memcpy(buf + total, data, ndata);
    write_bytes(path, buf, total + ndata);
}

static void test_round_trips(void) {
    char err[512];
    for (int t = 0; t < TILE_DTYPE_COUNT; t++) {
        tile_dtype dt = (tile_dtype)t;
        int size = tile_dtype_size(dt);
        int64_t shape[3] = {2, 3, 5};
        int64_t n = 30;
        unsigned char *data = malloc((size_t)(n * size));
        for (int64_t i = 0; i < n * size; i++) data[i] = (unsigned char)(i * 37 + t);
        if (dt == TILE_BOOL)
            for (int64_t i = 0; i < n; i++) data[i] = (unsigned char)(i % 3 == 0);
        if (dt == TILE_BF16 || dt == TILE_TF32) /* stored as float32: use exact values */
            for (int64_t i = 0; i < n; i++) {
                float f = (float)(i - 7) * 0.5f;
                if (dt == TILE_BF16) {
                    uint16_t b = f32_to_bf16_bits(f);
                    memcpy(data + 2 * i, &b, 2);
                } else {
                    memcpy(data + 4 * i, &f, 4);
                }
            }
        char name[64];
        snprintf(name, sizeof name, "rt_%s.npy", tile_dtype_name(dt));
        const char *p = path_of(name);
        CHECK(npy_write(p, dt, 3, shape, data, err, sizeof err) == 0);
        NpyArray a;
        int rc = npy_read(p, &a, err, sizeof err);
        CHECK(rc == 0);
        if (rc != 0) {
            fprintf(stderr, "  %s: %s\n", tile_dtype_name(dt), err);
            free(data);
            continue;
        }
        CHECK(a.rank == 3 && a.shape[0] == 2 && a.shape[1] == 3 && a.shape[2] == 5 && a.numel == 30);
        if (dt == TILE_BF16 || dt == TILE_TF32) {
            CHECK(a.dtype == TILE_F32);
            for (int64_t i = 0; i < n; i++) {
                float f;
                memcpy(&f, (char *)a.data + 4 * i, 4);
                CHECK(f == (float)(i - 7) * 0.5f);
            }
        } else {
            CHECK(a.dtype == dt);
            CHECK(a.nbytes == (size_t)(n * size));
            CHECK(memcmp(a.data, data, (size_t)(n * size)) == 0);
        }
        /* The header pads the data to a 64-byte boundary. */
        struct stat st;
        CHECK(stat(p, &st) == 0 && (st.st_size - n * (dt == TILE_BF16 ? 4 : size)) % 64 == 0);
        npy_free(&a);
        free(data);
    }
    /* rank 0 and rank 1 and an empty array */
    double x = 2.5;
    CHECK(npy_write(path_of("r0.npy"), TILE_F64, 0, NULL, &x, err, sizeof err) == 0);
    NpyArray a;
    CHECK(npy_read(path_of("r0.npy"), &a, err, sizeof err) == 0 && a.rank == 0 && a.numel == 1 &&
          *(double *)a.data == 2.5);
    npy_free(&a);
    int64_t five = 5, zero[2] = {0, 4};
    int32_t v[5] = {1, -2, 3, -4, 5};
    CHECK(npy_write(path_of("r1.npy"), TILE_I32, 1, &five, v, err, sizeof err) == 0);
    CHECK(npy_read(path_of("r1.npy"), &a, err, sizeof err) == 0 && a.rank == 1 && a.shape[0] == 5 &&
          ((int32_t *)a.data)[3] == -4);
    npy_free(&a);
    CHECK(npy_write(path_of("empty.npy"), TILE_F32, 2, zero, NULL, err, sizeof err) == 0);
    CHECK(npy_read(path_of("empty.npy"), &a, err, sizeof err) == 0 && a.numel == 0 && a.shape[1] == 4);
    npy_free(&a);
}

static void test_header_forms(void) {
    char err[512];
    NpyArray a;
    /* v2 header, double quotes, no trailing comma, big-endian data */
    unsigned char be[8] = {0x3f, 0x80, 0, 0, 0xc0, 0, 0, 0};   /* 1.0f, -2.0f */
    write_npy_raw(path_of("v2.npy"), 2, "{\"descr\": \">f4\", \"fortran_order\": False, \"shape\": (2,)}", be, 8);
    int rc = npy_read(path_of("v2.npy"), &a, err, sizeof err);
    CHECK(rc == 0);
    if (rc == 0) {
        CHECK(a.dtype == TILE_F32 && ((float *)a.data)[0] == 1.0f && ((float *)a.data)[1] == -2.0f);
        npy_free(&a);
    } else {
        fprintf(stderr, "  %s\n", err);
    }
    /* v3 is read like v2 */
    int16_t s[2] = {7, -7};
    write_npy_raw(path_of("v3.npy"), 3, "{'descr': '<i2', 'fortran_order': False, 'shape': (1, 2), }", s, 4);
    CHECK(npy_read(path_of("v3.npy"), &a, err, sizeof err) == 0 && a.rank == 2 && ((int16_t *)a.data)[1] == -7);
    npy_free(&a);
    /* bool bytes other than 0/1 read as true */
    unsigned char b[3] = {0, 2, 1};
    write_npy_raw(path_of("b.npy"), 1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", b, 3);
    CHECK(npy_read(path_of("b.npy"), &a, err, sizeof err) == 0 && ((unsigned char *)a.data)[1] == 1);
    npy_free(&a);
}

/* npy_read of `name` fails with a message naming the file and saying `why`. */
static void expect_read_error(const char *name, const char *why) {
    char err[512] = "";
    NpyArray a;
    const char *p = path_of(name);
    CHECK(npy_read(p, &a, err, sizeof err) == -1);
    CHECK_HAS(err, name);
    CHECK_HAS(err, why);
    CHECK(a.data == NULL);
}

static void test_malformed(void) {
    float four[4] = {1, 2, 3, 4};
    expect_read_error("does_not_exist.npy", "cannot open");
    write_bytes(path_of("magic.npy"), "PK\x03\x04 not numpy at all", 22);
    expect_read_error("magic.npy", "not a .npy file");
    write_bytes(path_of("short.npy"), "\x93NUM", 4);
    expect_read_error("short.npy", "not a .npy file");
    write_bytes(path_of("hdr.npy"), "\x93NUMPY\x01\x00\x76\x00{'descr'", 17);
    expect_read_error("hdr.npy", "truncated .npy header");
    write_bytes(path_of("ver.npy"), "\x93NUMPY\x09\x00\x76\x00{}", 12);
    expect_read_error("ver.npy", "version 9.0");
    write_npy_raw(path_of("fortran.npy"), 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", four, 16);
    expect_read_error("fortran.npy", "Fortran-order");
    write_npy_raw(path_of("trunc.npy"), 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", four, 16);
    expect_read_error("trunc.npy", "truncated data: expected 24 bytes, found 16");
    write_npy_raw(path_of("extra.npy"), 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", four, 16);
    expect_read_error("extra.npy", "does not match");
    write_npy_raw(path_of("c8.npy"), 1, "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", four, 16);
    expect_read_error("c8.npy", "unsupported dtype '<c8'");
    write_npy_raw(path_of("struct.npy"), 1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", four, 8);
    expect_read_error("struct.npy", "unsupported dtype");
    write_npy_raw(path_of("shape.npy"), 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }", four, 8);
    expect_read_error("shape.npy", "malformed .npy header (shape)");
    write_npy_raw(path_of("rank9.npy"), 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }", four, 4);
    expect_read_error("rank9.npy", "more than 8 dimensions");
    write_npy_raw(path_of("nokey.npy"), 1, "{'descr': '<f4', 'shape': (1,), }", four, 4);
    expect_read_error("nokey.npy", "missing fortran_order");
    write_npy_raw(path_of("huge.npy"), 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", four, 4);
    expect_read_error("huge.npy", "too large");
    write_npy_raw(path_of("dict.npy"), 1, "'descr': '<f4'", four, 4);
    expect_read_error("dict.npy", "no '{'");
}

static void test_write_errors(void) {
    char err[512] = "";
    int64_t shape[1] = {4};
    float x[4] = {0};
    CHECK(npy_write("/nonexistent-dir/x.npy", TILE_F32, 1, shape, x, err, sizeof err) == -1);
    CHECK_HAS(err, "/nonexistent-dir/x.npy");
    CHECK(npy_write(path_of("bad.npy"), TILE_F32, 9, shape, x, err, sizeof err) == -1);
    CHECK_HAS(err, "rank 9");
    int64_t neg[1] = {-1};
    CHECK(npy_write(path_of("bad.npy"), TILE_F32, 1, neg, x, err, sizeof err) == -1);
    CHECK_HAS(err, "negative extent");
    struct stat st;
    CHECK(stat(path_of("bad.npy"), &st) != 0);   /* nothing left behind */
}

int main(int argc, char **argv) {
    snprintf(dir, sizeof dir, "%s", argc > 1 ? argv[1] : ".");
    mkdir(dir, 0755);
    test_round_trips();
    test_header_forms();
    test_malformed();
    test_write_errors();
    if (check_failures) fprintf(stderr, "%d check(s) failed\n", check_failures);
    return check_failures != 0;
}
