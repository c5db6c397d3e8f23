// mma_sync_peak.cu: the ceiling of the pre-Hopper tensor-core instruction,
// mma.sync, on this GPU: operands already in registers, nothing loaded, 8
// independent accumulators per warp so that no product waits for the one
// before.  bf16 m16n8k16 and tf32 m16n8k8, f32 accumulators, at 4 to 16 warps
// per SM.  Prints TFLOP/s (the events include the launch: about 4% at 4
// warps).  It bounds what any mma.sync matmul can reach (issue 3 aims at 60%
// of cuBLAS with mma.sync): compare with bench_gpu's matmul rows,
// TILEC_WGMMA=0.
//   nvcc -arch=sm_90 -O2 -o /tmp/mma_sync_peak bench/gpu/mma_sync_peak.cu && /tmp/mma_sync_peak
#include <cstdio>

// the wrappers the generated kernels call (tile_mma_m16n8k16_bf16, tile_mma_m16n8k8_tf32)
#include "../../compiler/tile_device.cuh"

constexpr int kAcc = 8;        // independent accumulators per warp
constexpr int kIters = 4096;   // products per accumulator

template <int TF32>
__global__ void peak(float *out, unsigned seed) {
  unsigned a[4], b[2];
  // operands the compiler cannot see through (seed is 0 at run time)
  for (int i = 0; i < 4; i++) a[i] = (0x3f803f80u ^ seed) + threadIdx.x * i;
  for (int i = 0; i < 2; i++) b[i] = (0x3f803f80u ^ seed) + threadIdx.x * i;
  float d[kAcc][4] = {};
  for (int it = 0; it < kIters; it++) {
#pragma unroll
    for (int j = 0; j < kAcc; j++) {
      if (TF32) tile_mma_m16n8k8_tf32(d[j][0], d[j][1], d[j][2], d[j][3], a[0], a[1], a[2], a[3], b[0], b[1]);
      else tile_mma_m16n8k16_bf16(d[j][0], d[j][1], d[j][2], d[j][3], a[0], a[1], a[2], a[3], b[0], b[1]);
    }
  }
  float s = 0.f;
  for (int j = 0; j < kAcc; j++) s += d[j][0] + d[j][1] + d[j][2] + d[j][3];
  if (s == 12345.f) out[threadIdx.x] = s;   // keeps the products alive
}

int main() {
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  float *out;
  cudaMalloc(&out, 4096);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
  for (int tf32 = 0; tf32 <= 1; tf32++) {
    for (int warps = 4; warps <= 16; warps *= 2) {
      // two blocks per SM of warps / 2 warps each (warps * 32 / 2 threads):
      // `warps` warps per SM if the scheduler spreads them evenly (if not, the
      // figure comes out low, never high)
      const int blocks = prop.multiProcessorCount * 2, threads = warps * 16;
      float best = 1e30f;
      for (int rep = 0; rep < 6; rep++) {   // the first is the warm-up
        cudaEventRecord(e0);
        if (tf32) peak<1><<<blocks, threads>>>(out, 0);
        else peak<0><<<blocks, threads>>>(out, 0);
        cudaEventRecord(e1);
        cudaEventSynchronize(e1);
        cudaError_t err = cudaGetLastError();
        if (err != cudaSuccess) {
          printf("CUDA error: %s\n", cudaGetErrorString(err));
          return 1;
        }
        float ms;
        cudaEventElapsedTime(&ms, e0, e1);
        if (rep > 0 && ms < best) best = ms;
      }
      const double k = tf32 ? 8 : 16;
      const double flops = 2.0 * 16 * 8 * k * kAcc * kIters * (threads / 32) * (double)blocks;
      printf("mma.sync %-4s %2d warps/SM: %7.1f TFLOP/s\n", tf32 ? "tf32" : "bf16", warps, flops / best / 1e9);
    }
  }
  return 0;
}
