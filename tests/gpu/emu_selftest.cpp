// emu_selftest.cpp: the emu backend's host emulation of CUDA (runtime/emu_device.h)
// tested on kernels written by hand, for what the generated kernels cannot show:
// the failures it must report, that ldmatrix and mma.sync agree as the
// hardware's do (fragments read by ldmatrix make a matrix product), that
// wgmma finds its operands by their descriptors, that a TMA copy lands
// at its mbarrier's wait (and that reading its bytes before then fails), and
// that the two orders of the threads both run.
// Compiled as the emu backend compiles kernels (tests/gpu/CMakeLists.txt:
// emu_selftest), with compiler/tile_device.cuh as tile_device.h.
#include "tile_device.h"

#include <cstdio>
#include <cstring>

static int which;                         // the kernel tile_host_entry runs
static float result[32][4];               // what kernels write out, by lane
static unsigned short ga[64 * 16], gb[16 * 8];   // (wgmma's case: A 64 x 16, B 8 x 16, both [row][k])
static float wg_result[128][4];                  // wgmma's D, by thread
static float garr[3][4];                         // TMA's case: the array, and its map as emu_backend.c encodes it
static TileTensorMap gmap;
alignas(16) static unsigned char gsrc[16];
static int counter;                              // case 12: threads counted in

static unsigned short bf16(float f) { return tile_f32_bf16(f); }

// the same instructions as a case's other branch, at another place in the kernel
// (a call of its own, so that no compiler merges the two branches' calls)
__attribute__((noinline)) static void ldsm_elsewhere(unsigned *r, int lane) {
    tile_ldsm_x4(r[0], r[1], r[2], r[3], tile_smem + (lane & 7) * 16);
}
__attribute__((noinline)) static void wgmma_elsewhere(float *const *acc, unsigned long long desc) {
    tile_emu_wgmma("bf16", 8, acc, (const unsigned *)0, desc, desc, 0, 0);
}
__attribute__((noinline)) static void wgmma_elsewhere2(float *const *acc, unsigned long long da, unsigned long long db) {
    tile_emu_wgmma("bf16", 8, acc, (const unsigned *)0, da, db, 0, 0);
}

// thread 0 arms the mbarrier at `bar` (count 1) for a TMA copy of gmap's box at (x, y) into
// shared memory's start, and issues it
static void tma_begin(unsigned char *bar, int x, int y) {
    if (threadIdx.x != 0) return;
    tile_mbar_init(bar, 1);
    tile_mbar_expect(bar, 64);
    tile_tma_load(tile_smem, &gmap, bar, x, y);
}

extern "C" void tile_host_entry(void *const *) {
    const int t = threadIdx.x, lane = t & 31;
    unsigned r[4];
    switch (which) {
    case 0: {   // A (16 x 16, rows of 32 bytes) by ldmatrix.x4, B stored [K][N] by .x2.trans, one product
        for (int i = t; i < 16 * 16; i += blockDim.x) ((unsigned short *)tile_smem)[i] = ga[i];
        for (int i = t; i < 16 * 8; i += blockDim.x) ((unsigned short *)(tile_smem + 512))[i] = gb[i];
        __syncthreads();
        tile_ldsm_x4(r[0], r[1], r[2], r[3], tile_smem + (lane & 15) * 32 + (lane >> 4) * 16);
        unsigned b0, b1;
        tile_ldsm_x2_trans(b0, b1, tile_smem + 512 + (lane & 15) * 16);
        float d[4] = {0, 0, 0, 0};
        tile_mma_m16n8k16_bf16(d[0], d[1], d[2], d[3], r[0], r[1], r[2], r[3], b0, b1);
        for (int i = 0; i < 4; i++) result[lane][i] = d[i];
        break;
    }
    case 1:   // lanes at two places' ldmatrix: must fail
        if (lane & 1) tile_ldsm_x4(r[0], r[1], r[2], r[3], tile_smem + (lane & 7) * 16);
        else ldsm_elsewhere(r, lane);
        break;
    case 2:   // lane 0 at __syncthreads, the others at __syncwarp: a deadlock
        if (lane == 0) __syncthreads();
        else __syncwarp();
        break;
    case 3:   // threads that return no longer count at __syncthreads
        if (t >= 16) return;
        __syncthreads();
        result[t][0] = 1;
        break;
    case 4:   // a cp.async copy lands at its wait, not before
        if (t == 0) {
            tile_cp_async16(tile_smem, gsrc, 16);
            tile_cp_async_commit();
            result[0][0] = tile_smem[0];
            tile_cp_async_wait<0>();
            result[0][1] = tile_smem[0];
        }
        break;
    case 5:   // an ldmatrix address past the block's shared memory: must fail
        tile_ldsm_x4(r[0], r[1], r[2], r[3], tile_smem + 4096);
        break;
    case 6: {   // wgmma m64n8k16: A (64 x 16) and B (8 x 16) K-major in 128-byte swizzled rows
        // element (i, k) of either: row i at (i / 8) 1024 + (i % 8) 128, its
        // 16-byte piece k / 8 XORed with i % 8 (the swizzle, written by hand)
        for (int e = t; e < 72 * 16; e += blockDim.x) {
            const int i = e / 16, k = e % 16, in_b = i >= 64, row = in_b ? i - 64 : i;
            const unsigned off = (in_b ? 8192u : 0u) + (row / 8) * 1024 + (row % 8) * 128 + (((k / 8) ^ (row % 8)) * 16) + (k % 8) * 2;
            memcpy(tile_smem + off, in_b ? &gb[row * 16 + k] : &ga[row * 16 + k], 2);
        }
        __syncthreads();
        float d[4] = {0, 0, 0, 0};
        float *const acc[4] = {&d[0], &d[1], &d[2], &d[3]};
        tile_wgmma_fence();
        tile_emu_wgmma("bf16", 8, acc, (const unsigned *)0, tile_wgmma_desc(tile_smem_addr(tile_smem), 16, 1024, 1),
                       tile_wgmma_desc(tile_smem_addr(tile_smem + 8192), 16, 1024, 1), 0, 0);
        tile_wgmma_commit();
        result[t % 32][0] = d[0];   // before the wait: still 0
        tile_wgmma_wait0();
        if (t < 32) result[t][1] = d[0];
        for (int i = 0; i < 4; i++) wg_result[t][i] = d[i];
        break;
    }
    case 8: {   // a TMA copy of a 2 x 8 box of f32 at (-2, 1) of a 3 x 4 array: lands at the mbarrier's wait
        unsigned char *bar = tile_smem + 1024;
        tma_begin(bar, -2, 1);
        if (t == 0) result[0][0] = tile_smem[0];   // not landed yet: 0xff
        __syncthreads();
        tile_mbar_wait(bar, 0);
        if (t == 0)
            for (int i = 0; i < 16; i++) wg_result[i / 4][i % 4] = ((const float *)tile_smem)[i];
        break;
    }
    case 7: {   // warps of one warp group at two places' wgmma: must fail
        float d = 0;
        float *const acc[4] = {&d, &d, &d, &d};
        const unsigned long long desc = tile_wgmma_desc(0, 16, 1024, 1);
        if (t < 64) tile_emu_wgmma("bf16", 8, acc, (const unsigned *)0, desc, desc, 0, 0);
        else wgmma_elsewhere(acc, desc);
        break;
    }
    case 9: {   // wait_group 1 leaves the newest group in flight; K-major operands without swizzle
        // core matrices: element (i, k) at (i / 8) 256 (sbo) + (k / 8) 128 (lbo) + (i % 8) 16 + (k % 8) 2
        for (int e = t; e < 72 * 16; e += blockDim.x) {
            const int i = e / 16, k = e % 16, in_b = i >= 64, row = in_b ? i - 64 : i;
            const unsigned off = (in_b ? 4096u : 0u) + (row / 8) * 256 + (k / 8) * 128 + (row % 8) * 16 + (k % 8) * 2;
            memcpy(tile_smem + off, in_b ? &gb[row * 16 + k] : &ga[row * 16 + k], 2);
        }
        __syncthreads();
        float d1[4] = {0, 0, 0, 0}, d2[4] = {0, 0, 0, 0};
        float *const acc1[4] = {&d1[0], &d1[1], &d1[2], &d1[3]}, *const acc2[4] = {&d2[0], &d2[1], &d2[2], &d2[3]};
        const unsigned long long da = tile_wgmma_desc(tile_smem_addr(tile_smem), 128, 256, 0),
                                 db = tile_wgmma_desc(tile_smem_addr(tile_smem + 4096), 128, 256, 0);
        tile_wgmma_fence();
        tile_emu_wgmma("bf16", 8, acc1, (const unsigned *)0, da, db, 0, 0);
        tile_wgmma_commit();
        wgmma_elsewhere2(acc2, da, db);
        tile_wgmma_commit();
        tile_wgmma_wait1();
        const float first = d1[0], second_early = d2[0];
        tile_wgmma_wait0();
        if (t == 0) result[0][0] = first, result[0][1] = second_early, result[0][2] = d2[0];
        break;
    }
    case 11: {   // an ldmatrix of bytes a TMA copy in flight fills (not waited for): must fail
        unsigned char *bar = tile_smem + 1024;
        tma_begin(bar, 0, 0);
        __syncthreads();
        tile_ldsm_x4(r[0], r[1], r[2], r[3], tile_smem + (lane & 7) * 16);   // (one warp: every lane reads before any waits)
        tile_mbar_wait(bar, 0);
        break;
    }
    case 12: {   // two warps, no barrier after the first: each thread counts itself in; warp 1
                 // (the last through that barrier, which runs on first) reads the count after a
                 // warp-wide instruction (32: it ran ahead of warp 0; 64: in step), then the
                 // warps' lane 0 arrive on an mbarrier of count 2 that thread 0 waits on
        unsigned char *bar = tile_smem + 1024;
        if (t == 0) tile_mbar_init(bar, 2);
        __syncthreads();
        __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
        __syncwarp();
        if (t == 32) result[0][0] = (float)counter;
        if (lane == 0) tile_mbar_arrive(bar);
        if (t == 0) {
            tile_mbar_wait(bar, 0);
            result[0][1] = (float)counter;   // every thread has counted itself in by now
        }
        break;
    }
    case 10: {   // a second phase of an mbarrier (parity 1); a TMA store lands at its bulk group's wait
        unsigned char *bar = tile_smem + 1024;
        tma_begin(bar, 0, 0);
        __syncthreads();
        tile_mbar_wait(bar, 0);
        __syncthreads();
        if (t == 0) {
            tile_mbar_expect(bar, 64);
            tile_tma_load(tile_smem + 128, &gmap, bar, 0, 1);
        }
        tile_mbar_wait(bar, 1);
        if (t == 0) {
            result[0][0] = ((const float *)tile_smem)[0];         // (0, 0): 1
            result[0][1] = ((const float *)(tile_smem + 128))[0]; // (1, 0): 5
            ((float *)tile_smem)[0] = 100.0f;                     // stored to (0, 0) below
            tile_tma_store(tile_smem, &gmap, 0, 0);
            tile_bulk_commit();
            ((float *)tile_smem)[1] = 200.0f;                     // before the wait: stored too (read at the wait)
            result[0][2] = garr[0][0];                            // not yet written: 1
            tile_bulk_wait();
            result[0][3] = garr[0][0] + garr[0][1];               // 100 + 200
        }
        break;
    }
    }
}

static int failures;
static void expect(bool ok, const char *what) {
    if (!ok) failures++;
    printf("%s %s\n", ok ? "ok  " : "FAIL", what);
}
static int launch(int kernel, int threads, int smem, char *err) {
    which = kernel;
    const int grid[3] = {1, 1, 1};
    err[0] = 0;
    return tile_emu_launch(grid, threads, smem, NULL, err, 512);
}

int main() {
    char err[512];
    // the product against one summed in double from the same bf16 values
    for (int i = 0; i < 16 * 16; i++) ga[i] = bf16((float)((i * 7) % 11) - 5.0f);
    for (int i = 0; i < 16 * 8; i++) gb[i] = bf16((float)((i * 5) % 13) * 0.25f - 1.5f);
    bool ok = launch(0, 32, 1024, err) == 0;
    for (int lane = 0; lane < 32 && ok; lane++)
        for (int i = 0; i < 4; i++) {
            const int row = lane / 4 + 8 * (i >> 1), col = 2 * (lane % 4) + (i & 1);
            double want = 0;
            for (int k = 0; k < 16; k++) want += (double)tile_bf16_f32(ga[row * 16 + k]) * tile_bf16_f32(gb[k * 8 + col]);
            if (result[lane][i] != (float)want) ok = false;
        }
    expect(ok, "ldmatrix.x4 A, ldmatrix.x2.trans B and mma.sync m16n8k16 make A B");
    expect(launch(1, 32, 1024, err) != 0 && strstr(err, "different warp-wide instructions"),
           "lanes at ldmatrix in two places fail the launch");
    expect(launch(2, 32, 1024, err) != 0 && strstr(err, "deadlock"), "a deadlock fails the launch");
    memset(result, 0, sizeof result);
    ok = launch(3, 64, 0, err) == 0;
    for (int t = 0; t < 16; t++) ok = ok && result[t][0] == 1;
    expect(ok, "threads that returned are not waited for at __syncthreads");
    memset(gsrc, 0x5a, sizeof gsrc);
    ok = launch(4, 32, 64, err) == 0;
    expect(ok && result[0][0] == 0xff && result[0][1] == 0x5a, "a cp.async copy lands at its wait");
    expect(launch(5, 32, 1024, err) != 0 && strstr(err, "not in the block's"), "an ldmatrix outside shared memory fails");
    // wgmma: A 64 x 16 and B 8 x 16 from ga and gb, D = A B^T
    for (int i = 0; i < 64 * 16; i++) ga[i] = bf16((float)((i * 7) % 11) - 5.0f);
    for (int i = 0; i < 16 * 8; i++) gb[i] = bf16((float)((i * 5) % 13) * 0.25f - 1.5f);
    memset(result, 0xff, sizeof result);
    ok = launch(6, 128, 16384, err) == 0;
    for (int t = 0; t < 128 && ok; t++)
        for (int i = 0; i < 4; i++) {
            const int row = 16 * (t / 32) + (t % 32) / 4 + 8 * (i >> 1), col = 2 * (t % 4) + (i & 1);
            double want = 0;
            for (int k = 0; k < 16; k++) want += (double)tile_bf16_f32(ga[row * 16 + k]) * tile_bf16_f32(gb[col * 16 + k]);
            if (wg_result[t][i] != (float)want) ok = false;
        }
    expect(ok, "wgmma m64n8k16 reads 128-byte swizzled K-major operands by their descriptors and makes A B^T");
    expect(ok && result[0][0] == 0 && result[0][1] == wg_result[0][0], "a wgmma's accumulators change at its wait, not before");
    expect(launch(7, 128, 16384, err) != 0 && strstr(err, "different warp-group instructions"),
           "warps of a warp group at wgmma in two places fail the launch");
    // TMA: element (r, c) of the box is array element (1 + r, -2 + c), zero outside
    unsigned long long words[16] = {(unsigned long long)(uintptr_t)garr, 2 | 4 << 8, 4, 3, 0, 0, 0, 16, 0, 0, 0, 8, 2};
    memcpy(&gmap, words, sizeof words);
    for (int i = 0; i < 12; i++) garr[i / 4][i % 4] = (float)(i + 1);
    memset(result, 0, sizeof result);
    ok = launch(8, 64, 2048, err) == 0 && result[0][0] == 0xff;
    for (int i = 0; i < 16 && ok; i++) {
        const int r = 1 + i / 8, c = -2 + i % 8;
        const float want = r < 3 && c >= 0 && c < 4 ? garr[r][c] : 0.0f;
        ok = wg_result[i / 4][i % 4] == want;
    }
    expect(ok, "a TMA copy lands at its mbarrier's wait, elements outside the array as zeros");
    // wait_group 1, core-matrix operands: D[0][0] = sum_k A[0][k] B[0][k]
    double d00 = 0;
    for (int k = 0; k < 16; k++) d00 += (double)tile_bf16_f32(ga[k]) * tile_bf16_f32(gb[k]);
    memset(result, 0xff, sizeof result);
    ok = launch(9, 128, 8192, err) == 0;
    expect(ok && result[0][0] == (float)d00 && result[0][1] == 0 && result[0][2] == (float)d00,
           "wgmma.wait_group 1 completes all but the newest group; K-major core matrices read by lbo and sbo");
    // the 3 x 4 array, a 2 x 8 box at rows 0.. and 1..
    for (int i = 0; i < 12; i++) garr[i / 4][i % 4] = (float)(i + 1);
    memset(result, 0, sizeof result);
    ok = launch(10, 64, 2048, err) == 0;
    expect(ok && result[0][0] == 1 && result[0][1] == 5, "an mbarrier's second phase completes on parity 1");
    expect(ok && result[0][2] == 1 && result[0][3] == 300, "a TMA store reads shared memory and writes at its bulk group's wait");
    expect(launch(11, 32, 2048, err) != 0 && strstr(err, "reads what a TMA copy in flight fills"),
           "an ldmatrix of bytes a TMA copy in flight fills fails the launch");
    // the two orders, one launch each (the first block's alternates between launches)
    float seen[2];
    ok = true;
    for (int k = 0; k < 2; k++) {
        counter = 0;
        memset(result, 0, sizeof result);
        ok = ok && launch(12, 64, 2048, err) == 0 && result[0][1] == 64;
        seen[k] = result[0][0];
    }
    expect(ok && seen[0] + seen[1] == 32 + 64 && (seen[0] == 32 || seen[1] == 32),
           "a warp runs ahead of the others in one launch, in step with them in the next; an mbarrier of count 2 completes");
    printf("%d failures\n", failures);
    return failures ? 1 : 0;
}
