// emu_selftest.cpp: the emu backend's host emulation of CUDA (runtime/emu_device.h)
// tested on kernels written by hand, for what the generated kernels cannot show:
// the failures it must report, and that ldmatrix and mma.sync agree as the
// hardware's do (fragments read by ldmatrix make a matrix product).
// Compiled as the emu backend compiles kernels (tests/gpu/CMakeLists.txt:
// emu_selftest), with compiler/tile_device.cuh as tile_device.h.
#include "tile_device.h"

#include <cstdio>
#include <cstring>

static int which;                         // the kernel tile_host_entry runs
static float result[32][4];               // what kernels write out, by lane
static unsigned short ga[16 * 16], gb[16 * 8];
alignas(16) static unsigned char gsrc[16];

static unsigned short bf16(float f) { return tile_f32_bf16(f); }

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
        else tile_ldsm_x4(r[0], r[1], r[2], r[3], tile_smem + (lane & 7) * 16);
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
    printf("%d failures\n", failures);
    return failures ? 1 : 0;
}
