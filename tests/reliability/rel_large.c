/* rel_large.c: loads and stores beyond 2^31 and 2^32 elements land where they
 * should, and nowhere else.
 *
 * One f32 array A of R x C = 65537 x 65536 = 2^32 + 2^16 elements (16 GiB)
 * followed by a guard row.  On the CPU it is a sparse anonymous mapping
 * (MAP_NORESERVE): only the pages the test touches ever exist, and mincore()
 * afterwards proves that no other page was written.  On CUDA it is one
 * tile_malloc (the GPU has the memory) and the aliases an offset truncated to
 * 32 bits would hit are checked instead.
 *
 *   1. tile loads and stores (2 x 64 tiles) just below 2^31, at 2^31, at the
 *      very end (the last row partly out of range: padding read, nothing
 *      written into the guard row) and back from the end to the middle;
 *   2. gather, scatter and atomic_add at element offsets above 2^32;
 *   3. a strided 3-d view of A whose strides exceed 2^31 (offsets up to 2^32 + 62);
 *   4. an i8 view of extent 2^31 - 1 (the runtime's per-axis limit) read at
 *      its last tile; extent 2^31 is refused with a message;
 *   5. extents of 2^31 - 1 on two axes with stride 0 (more than 2^62
 *      elements in name, 64 in memory): the last tile reads right.
 *
 *   rel_large [--backend cpu|cuda] [--probe]
 * Exit status: 0 ok, 1 a failed check, 77 no such backend (or, on the CPU,
 * no 16 GiB of address space) here. */
#include "rel_common.h"

#include <math.h>
#include <stdint.h>
#include <sys/mman.h>

enum { R = 65537, C = 65536, BR = 2, BC = 64 };
static const int64_t NUMEL = (int64_t)R * C;
static const int64_t GUARD = 2 * (int64_t)C;   /* elements after the end, never to be written */

static const char *source =
    "kernel move_tile(a: f32[R, C], si: i32, sj: i32, di: i32, dj: i32, const BR: i32 = 2, const BC: i32 = 64) {\n"
    "    let t = load(a, index=(si, sj), shape=(BR, BC), padding=nan);\n"
    "    store(a, index=(di, dj), tile=where(isnan(t), -1.0, t * 2.0 + 1.0));\n"
    "}\n"
    "kernel far_gather(a: f32[R, C], out: f32[K], row: i32, col: i32) {\n"
    "    store(out, index=(0,), tile=gather(a, (row, col + arange(16))));\n"
    "}\n"
    "kernel far_scatter(a: f32[R, C], row: i32, col: i32, v: f32) {\n"
    "    scatter(a, (row, col + arange(16)), arange(16).astype(f32) + v);\n"
    "    atomic_add(a, (row, col + 16), v);\n"
    "}\n"
    "kernel copy3(src: f32[X, Y, Z], dst: f32[X, Y, Z]) {\n"
    "    let t = load(src, index=(bid(0), bid(1), 0), shape=(1, 1, 64));\n"
    "    store(dst, index=(bid(0), bid(1), 0), tile=t);\n"
    "}\n"
    "kernel last_bytes(src: i8[N], dst: i8[M], ti: i32) {\n"
    "    store(dst, index=(0,), tile=load(src, index=(ti,), shape=(64,), padding=zero));\n"
    "}\n"
    "kernel corner(src: f32[P, Q, Z], dst: f32[Z], pi: i32, qi: i32) {\n"
    "    store(dst, index=(0,), tile=reshape(load(src, index=(pi, qi, 0), shape=(1, 1, 64)), (64,)));\n"
    "}\n";

static tile_ctx *ctx;
static tile_module *mod;
static char *base;         /* the array A (host or device address) */
static int on_cpu;

/* Byte ranges of A the test touched itself, for the mincore check. */
typedef struct Window { int64_t off, bytes; } Window;
static Window windows[256];
static int nwindows;

static void touched(int64_t off, int64_t bytes) {
    if (nwindows < (int)(sizeof windows / sizeof windows[0])) windows[nwindows++] = (Window){off, bytes};
}

static int put(int64_t elem, const float *v, int n) {
    touched(elem * 4, (int64_t)n * 4);
    REL_TRY(ctx, tile_memcpy_h2d(ctx, base + elem * 4, v, (size_t)n * 4));
    return 0;
}
static int get(int64_t elem, float *v, int n) {
    touched(elem * 4, (int64_t)n * 4);
    REL_TRY(ctx, tile_memcpy_d2h(ctx, v, base + elem * 4, (size_t)n * 4));
    return 0;
}

static tile_arg array_a(void) {
    const int64_t shape[2] = {R, C};
    return tile_arg_array(tile_array_contiguous(base, TILE_F32, 2, shape));
}

static int launch(const char *name, const int grid[3], const tile_arg *args, int nargs) {
    tile_kernel *k = NULL;
    REL_TRY(ctx, tile_kernel_get(mod, name, NULL, 0, &k));
    REL_TRY(ctx, tile_launch(k, grid, args, nargs, NULL));
    REL_TRY(ctx, tile_synchronize(ctx));
    return 0;
}

/* A distinct, exactly representable value for element e. */
static float pattern(int64_t e) { return (float)(e % 8191) + 0.5f; }

/* 1. move_tile from tile (si, sj) to tile (di, dj); checks the destination. */
static int move_case(const char *what, int si, int sj, int di, int dj) {
    float v[BC], got[BC];
    for (int r = 0; r < BR; r++) {
        const int64_t row = (int64_t)si * BR + r;
        if (row >= R) continue;
        const int64_t e = row * C + (int64_t)sj * BC;
        for (int c = 0; c < BC; c++) v[c] = pattern(e + c);
        if (put(e, v, BC)) return -1;
    }
    const int grid[3] = {1, 1, 1};
    const tile_arg args[5] = {array_a(), tile_arg_i32(si), tile_arg_i32(sj), tile_arg_i32(di), tile_arg_i32(dj)};
    if (launch("move_tile", grid, args, 5)) return -1;
    int wrong = 0;
    for (int r = 0; r < BR; r++) {
        const int64_t drow = (int64_t)di * BR + r, srow = (int64_t)si * BR + r;
        if (drow >= R) continue;   /* past the end: the guard check covers it */
        const int64_t e = drow * C + (int64_t)dj * BC;
        if (get(e, got, BC)) return -1;
        for (int c = 0; c < BC; c++) {
            const float want = srow < R ? 2.0f * pattern(srow * C + (int64_t)sj * BC + c) + 1.0f : -1.0f;
            if (got[c] != want && wrong++ < 3)
                fprintf(stderr, "  %s: element %lld is %g, expected %g\n", what, (long long)(e + c), got[c], want);
        }
    }
    printf("  %-44s element offsets %lld..%lld: %s\n", what, (long long)((int64_t)di * BR * C + (int64_t)dj * BC),
           (long long)(((int64_t)di * BR + BR - 1) * C + (int64_t)dj * BC + BC - 1), wrong ? "WRONG" : "ok");
    REL_CHECK(wrong == 0, "%s: %d elements wrong", what, wrong);
    return 0;
}

/* 2. gather / scatter / atomic_add at element offsets above 2^32. */
static int far_indexed(void) {
    const int row = R - 1, col = 1000;       /* element 2^32 + 1000 */
    const int64_t e = (int64_t)row * C + col;
    float v[16], got[17];
    for (int i = 0; i < 16; i++) v[i] = pattern(e + i);
    if (put(e, v, 16)) return -1;
    void *out = NULL;
    REL_TRY(ctx, tile_malloc(ctx, 64, &out));
    const int64_t k = 16;
    const int grid[3] = {1, 1, 1};
    const tile_arg g[4] = {array_a(), tile_arg_array(tile_array_contiguous(out, TILE_F32, 1, &k)), tile_arg_i32(row),
                           tile_arg_i32(col)};
    if (launch("far_gather", grid, g, 4)) return -1;
    REL_TRY(ctx, tile_memcpy_d2h(ctx, got, out, 64));
    tile_free(ctx, out);
    int wrong = 0;
    for (int i = 0; i < 16; i++) wrong += got[i] != v[i];
    REL_CHECK(wrong == 0, "gather at element %lld: %d of 16 wrong (got[0] %g, want %g)", (long long)e, wrong, got[0], v[0]);

    const int64_t e2 = (int64_t)row * C + 5000;
    const float start = 7.0f;
    if (put(e2 + 16, &start, 1)) return -1;
    const tile_arg s[4] = {array_a(), tile_arg_i32(row), tile_arg_i32(5000), tile_arg_f32(100.0f)};
    if (launch("far_scatter", grid, s, 4)) return -1;
    if (get(e2, got, 17)) return -1;
    int wrong2 = 0;
    for (int i = 0; i < 16; i++) wrong2 += got[i] != 100.0f + (float)i;
    REL_CHECK(wrong2 == 0, "scatter at element %lld: %d of 16 wrong", (long long)e2, wrong2);
    REL_CHECK(got[16] == 107.0f, "atomic_add at element %lld: %g, expected 107", (long long)(e2 + 16), got[16]);
    printf("  %-44s element offsets %lld..%lld: %s\n", "gather, scatter, atomic_add above 2^32", (long long)e,
           (long long)(e2 + 16), wrong || wrong2 || got[16] != 107.0f ? "WRONG" : "ok");
    return 0;
}

/* 3. a strided 3-d view: strides above 2^31, offsets up to 2^32 + 62. */
static int strided_view(void) {
    const int64_t shape[3] = {2, 3, 64}, strides[3] = {((int64_t)1 << 31) + 5, ((int64_t)1 << 30) - 3, 1};
    float v[64], got[2 * 3 * 64];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) {
            const int64_t e = i * strides[0] + j * strides[1];
            for (int c = 0; c < 64; c++) v[c] = pattern(e + c);
            if (put(e, v, 64)) return -1;
        }
    tile_array src = tile_array_contiguous(base, TILE_F32, 3, shape);
    for (int d = 0; d < 3; d++) src.strides[d] = strides[d];
    void *dst = NULL;
    REL_TRY(ctx, tile_malloc(ctx, sizeof got, &dst));
    const int grid[3] = {2, 3, 1};
    const tile_arg args[2] = {tile_arg_array(src), tile_arg_array(tile_array_contiguous(dst, TILE_F32, 3, shape))};
    if (launch("copy3", grid, args, 2)) return -1;
    REL_TRY(ctx, tile_memcpy_d2h(ctx, got, dst, sizeof got));
    tile_free(ctx, dst);
    int wrong = 0;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int c = 0; c < 64; c++)
                wrong += got[(i * 3 + j) * 64 + c] != pattern(i * strides[0] + j * strides[1] + c);
    printf("  %-44s element offsets up to %lld: %s\n", "3-d view, strides 2^31+5 and 2^30-3",
           (long long)(strides[0] + 2 * strides[1] + 63), wrong ? "WRONG" : "ok");
    REL_CHECK(wrong == 0, "strided view: %d of 384 elements wrong", wrong);
    return 0;
}

/* 4. the per-axis extent limit: 2^31 - 1 works (read at its end), 2^31 is refused. */
static int extent_limit(void) {
    const int64_t n = INT32_MAX, last_tile = n / 64;   /* covers 2^31-64 .. 2^31-1; the last is outside */
    signed char bytes[64], got[64];
    for (int i = 0; i < 64; i++) bytes[i] = (signed char)(i + 1);
    touched(last_tile * 64, 64);
    REL_TRY(ctx, tile_memcpy_h2d(ctx, base + last_tile * 64, bytes, 64));
    void *dst = NULL;
    REL_TRY(ctx, tile_malloc(ctx, 64, &dst));
    const int64_t m = 64;
    tile_arg args[3] = {tile_arg_array(tile_array_contiguous(base, TILE_I8, 1, &n)),
                        tile_arg_array(tile_array_contiguous(dst, TILE_I8, 1, &m)), tile_arg_i32((int32_t)last_tile)};
    const int grid[3] = {1, 1, 1};
    if (launch("last_bytes", grid, args, 3)) return -1;
    REL_TRY(ctx, tile_memcpy_d2h(ctx, got, dst, 64));
    int wrong = 0;
    for (int i = 0; i < 64; i++) wrong += got[i] != (i < 63 ? bytes[i] : 0);   /* element 2^31-1 is padding */
    REL_CHECK(wrong == 0, "i8[2^31-1] read at its last tile: %d of 64 wrong", wrong);

    const int64_t too_big = (int64_t)1 << 31;
    args[0] = tile_arg_array(tile_array_contiguous(base, TILE_I8, 1, &too_big));
    tile_kernel *k = NULL;
    REL_TRY(ctx, tile_kernel_get(mod, "last_bytes", NULL, 0, &k));
    const tile_status st = tile_launch(k, grid, args, 3, NULL);
    REL_CHECK(st == TILE_ERR_INVALID_ARG, "extent 2^31: %s, expected TILE_ERR_INVALID_ARG", tile_status_name(st));
    REL_CHECK(strstr(tile_ctx_last_error(ctx), "exceeds 2^31-1") != NULL, "extent 2^31: message '%s'",
              tile_ctx_last_error(ctx));
    printf("  %-44s last element offset %lld: %s; extent 2^31 refused: \"%s\"\n", "i8 view of extent 2^31-1",
           (long long)(n - 1), wrong ? "WRONG" : "ok", tile_ctx_last_error(ctx));
    tile_free(ctx, dst);
    return 0;
}

/* 5. extents of 2^31 - 1 on two axes with stride 0: the last tile reads right. */
static int zero_strides(void) {
    float v[64], got[64];
    for (int i = 0; i < 64; i++) v[i] = (float)i - 20.5f;
    void *src = NULL, *dst = NULL;
    REL_TRY(ctx, tile_malloc(ctx, 256, &src));
    REL_TRY(ctx, tile_malloc(ctx, 256, &dst));
    REL_TRY(ctx, tile_memcpy_h2d(ctx, src, v, 256));
    const int64_t shape[3] = {INT32_MAX, INT32_MAX, 64}, m = 64;
    tile_array a = tile_array_contiguous(src, TILE_F32, 3, shape);
    a.strides[0] = a.strides[1] = 0;
    const tile_arg args[4] = {tile_arg_array(a), tile_arg_array(tile_array_contiguous(dst, TILE_F32, 1, &m)),
                              tile_arg_i32(INT32_MAX - 1), tile_arg_i32(INT32_MAX - 1)};
    const int grid[3] = {1, 1, 1};
    if (launch("corner", grid, args, 4)) return -1;
    REL_TRY(ctx, tile_memcpy_d2h(ctx, got, dst, 256));
    const int wrong = memcmp(got, v, 256) != 0;
    printf("  %-44s %s\n", "(2^31-1) x (2^31-1) x 64, strides (0, 0, 1):", wrong ? "WRONG" : "ok");
    REL_CHECK(!wrong, "zero-stride view: the last tile read wrong values (got[0] %g)", got[0]);
    tile_free(ctx, src);
    tile_free(ctx, dst);
    return 0;
}

/* Nothing outside the touched windows changed: on the CPU no other page of
 * the mapping exists (mincore); on CUDA the guard row and the places a
 * 32-bit-truncated offset would land are still zero. */
static int nothing_else(size_t bytes) {
    float guard[64];
    int dirty = 0;
    if (on_cpu) {
        const long page = sysconf(_SC_PAGESIZE);
        const size_t npages = (bytes + (size_t)page - 1) / (size_t)page;
        unsigned char *vec = malloc(npages);
        if (!vec || mincore(base, bytes, vec) != 0) {
            fprintf(stderr, "rel_large: mincore failed\n");
            free(vec);
            rel_failures++;
            return -1;
        }
        size_t resident = 0;
        for (size_t p = 0; p < npages; p++) {
            if (!(vec[p] & 1)) continue;
            resident++;
            int expected = 0;
            for (int w = 0; w < nwindows && !expected; w++)
                expected = (int64_t)p >= windows[w].off / page &&
                           (int64_t)p <= (windows[w].off + windows[w].bytes - 1) / page;
            if (!expected && dirty++ < 5)
                fprintf(stderr, "  page at byte offset %lld was touched but the test never used it\n",
                        (long long)((int64_t)p * page));
        }
        printf("  %-44s %zu of %zu pages resident, %d unexpected\n", "sparse mapping (mincore):", resident, npages, dirty);
        free(vec);
    }
    /* Where the out-of-range row of the last tile would go (the guard row),
     * and where the stores above 2^32 (row R-1, columns 65472.. and 5000..)
     * would land with their offsets truncated to 32 bits. */
    const int64_t last = NUMEL - C;
    const int64_t probes[3] = {NUMEL + C - BC, (last + 65472) & 0xffffffffLL, (last + 5000) & 0xffffffffLL};
    for (int i = 0; i < 3; i++) {
        if (get(probes[i], guard, 64)) return -1;
        for (int c = 0; c < 64; c++)
            if (guard[c] != 0.0f && dirty++ < 8)
                fprintf(stderr, "  element %lld is %g; nothing should have written there\n", (long long)(probes[i] + c),
                        guard[c]);
    }
    REL_CHECK(dirty == 0, "%d stray writes", dirty);
    return 0;
}

int main(int argc, char **argv) {
    const tile_backend_kind kind = rel_backend_arg(argc, argv);
    ctx = rel_ctx_or_skip(kind, "rel_large");
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--probe")) { tile_ctx_destroy(ctx); return 0; }
    on_cpu = kind == TILE_BACKEND_CPU;
    const size_t bytes = (size_t)(NUMEL + GUARD) * 4;
    if (on_cpu) {
        void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) {
            fprintf(stderr, "rel_large: cannot map %zu bytes of address space here; skipped\n", bytes);
            tile_ctx_destroy(ctx);
            return REL_EXIT_SKIP;
        }
        base = p;
    } else {
        void *p = NULL;
        if (tile_malloc(ctx, bytes, &p) != TILE_OK || tile_memset(ctx, p, 0, bytes) != TILE_OK) {
            fprintf(stderr, "rel_large: cannot allocate %zu bytes on the device: %s\n", bytes, tile_ctx_last_error(ctx));
            tile_ctx_destroy(ctx);
            return 1;
        }
        base = p;
    }
    if (tile_module_load_string(ctx, "large.tile", source, &mod) != TILE_OK) {
        fprintf(stderr, "rel_large: %s\n", tile_ctx_last_error(ctx));
        return 1;
    }
    printf("rel_large on %s: f32[%d, %d] = %lld elements (%.1f GiB%s)\n", tile_ctx_device_name(ctx), R, C,
           (long long)NUMEL, (double)bytes / (1 << 30), on_cpu ? ", sparse" : "");
    const int last_i = (R - 1) / BR, last_j = C / BC - 1;
    move_case("tile loads/stores just below 2^31", 100, 7, (1 << 30) / C - 1, last_j);
    move_case("tile store at element 2^31", 3, 3, ((int64_t)1 << 31) / C / BR, 0);
    move_case("from the last tile (a padded row) to 2^32-2C", last_i, last_j, last_i - 1, 0);
    move_case("to the last tile (one row outside)", 200, 9, last_i, last_j);
    move_case("from above 2^32 back to the middle", last_i, 3, 1000, 11);
    far_indexed();
    strided_view();
    extent_limit();
    zero_strides();
    nothing_else(bytes);
    tile_module_release(mod);
    if (on_cpu) munmap(base, bytes);
    else tile_free(ctx, base);
    tile_ctx_destroy(ctx);
    if (rel_failures) fprintf(stderr, "rel_large: %d check(s) failed\n", rel_failures);
    return rel_failures ? 1 : 0;
}
