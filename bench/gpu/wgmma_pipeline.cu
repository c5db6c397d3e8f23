// wgmma_pipeline.cu: does feeding wgmma with cp.async from the same warps drain the
// copy pipeline?  The wgmma matmul (compiler/emit_cuda_wgmma.c) runs as fast with
// its products removed as with them (docs/performance.md), so its copies bound it;
// this program times one block per SM on a 128 x 256 x 64 bf16 step (A 16 KB +
// B 32 KB a stage, 4 stages, 2 warp groups each doing 4 m64n256k16 products an
// iteration) in six schemes:
//   0 products only (operands already in shared memory)
//   1 copies only: every thread's cp.async, 2 iterations ahead, as the emitter does
//   2 both, the emitter's scheme: wait for this iteration's copies, fence.proxy.async,
//     barrier, copies 2 ahead, wgmma.fence, products, commit, wait_group 1
//   3 the same without fence.proxy.async (unsafe: for the measurement only)
//   4 a producer warp (a ninth warp) copies, with mbarriers: cp.async completion
//     arrives on the stage's `full` barrier, the warp groups wait on it, fence the
//     async proxy, multiply, and after wait_group 1 arrive on the previous stage's
//     `empty` barrier, which the producer waits on before refilling it
//   5 the same without the consumers' fence.proxy.async
// Prints ms, TFLOP/s of the products and GB/s of the copies for each.  The values
// multiplied are whatever the copies bring; nothing is checked.
//   nvcc -gencode arch=compute_90a,code=sm_90a -O2 -o /tmp/wgmma_pipeline bench/gpu/wgmma_pipeline.cu && /tmp/wgmma_pipeline
#include <cstdint>
#include <cstdio>

#include "wgmma_m64n256.cuh"

#define STAGES 4
#define STAGE_BYTES 49152                   // A 128 x 64 + B 64 x 256, bf16
#define CHUNKS (STAGE_BYTES / 16)           // 16-byte copies a stage
#define SMEM (STAGES * STAGE_BYTES + 1024)  // + the mbarriers

__device__ __forceinline__ uint32_t smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void cp16(uint32_t dst, const void *src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void fence_proxy() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

// One warp group's 4 products on stage `s` (A rows 64 wg.., K-major, core matrices side by
// side: 128 bytes along K, 1024 per 8 rows; B N-major: 4096 per 8 K rows, 128 along N).
__device__ __forceinline__ void products(float *d, uint32_t base, int s, int wg) {
  uint32_t a = base + s * STAGE_BYTES + wg * 8192, b = base + s * STAGE_BYTES + 16384;
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
  for (int ks = 0; ks < 4; ks++) wgmma_m64n256k16<1>(d, wgmma_desc(a + ks * 256, 128, 1024), wgmma_desc(b + ks * 8192, 4096, 128));
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

// This stage's copies by `nthreads` threads from thread `t`: consecutive threads take
// consecutive 16-byte pieces, from a different part of `src` each iteration.
__device__ __forceinline__ void copies(const uint4 *src, size_t src_chunks, uint32_t base, int s, long it, int t, int nthreads) {
  size_t first = ((size_t)(blockIdx.x * 7919 + it) * CHUNKS) % (src_chunks - CHUNKS);
  for (int c = t; c < CHUNKS; c += nthreads) cp16(base + s * STAGE_BYTES + c * 16, src + first + c);
}

__device__ __forceinline__ void bar_init(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void bar_arrive(uint32_t bar) {
  asm volatile("{ .reg .b64 st; mbarrier.arrive.shared::cta.b64 st, [%0]; }" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void bar_wait(uint32_t bar, int parity) {
  asm volatile("{ .reg .pred p; W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1; @!p bra W; }" ::"r"(bar), "r"(parity)
               : "memory");
}

__global__ void __launch_bounds__(288, 1) k(const uint4 *src, size_t src_chunks, float *out, int iters, int mode) {
  extern __shared__ __align__(1024) unsigned char sm[];
  const uint32_t base = smem_addr(sm), bars = base + STAGES * STAGE_BYTES;   // full[s], then empty[s]
  const int t = threadIdx.x, wg = t / 128;
  float d[128];
  for (int i = 0; i < 128; i++) d[i] = 0.f;
  if (mode <= 3) {
    if (t >= 256) return;   // the ninth warp only produces in modes 4 and 5
    const bool copy = mode != 0, multiply = mode != 1, fence = mode == 2;
    if (copy)
      for (int j = 0; j < 2; j++) {
        copies(src, src_chunks, base, j, j, t, 256);
        asm volatile("cp.async.commit_group;" ::: "memory");
      }
    for (int it = 0; it < iters; it++) {
      const int s = it % STAGES;
      if (copy) asm volatile("cp.async.wait_group 1;" ::: "memory");
      if (fence) fence_proxy();
      __syncthreads();
      if (copy) {
        copies(src, src_chunks, base, (it + 2) % STAGES, it + 2, t, 256);
        asm volatile("cp.async.commit_group;" ::: "memory");
      }
      if (multiply) {
        products(d, base, s, wg);
        asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
      }
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    asm volatile("cp.async.wait_all;" ::: "memory");
  } else {
    if (t == 0)
      for (int s = 0; s < STAGES; s++) {
        bar_init(bars + 8 * s, 32);                 // full: the producer warp's 32 cp.async arrivals
        bar_init(bars + 8 * (STAGES + s), 256);     // empty: every consumer thread
      }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    __syncthreads();
    if (t >= 256) {   // the producer warp
      for (int it = 0; it < iters; it++) {
        const int s = it % STAGES;
        if (it >= STAGES) bar_wait(bars + 8 * (STAGES + s), (it / STAGES - 1) & 1);
        copies(src, src_chunks, base, s, it, t - 256, 32);
        asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(bars + 8 * s) : "memory");
      }
      asm volatile("cp.async.wait_all;" ::: "memory");
      return;
    }
    for (int it = 0; it < iters; it++) {
      const int s = it % STAGES;
      bar_wait(bars + 8 * s, (it / STAGES) & 1);
      if (mode == 4) fence_proxy();
      products(d, base, s, wg);
      asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
      if (it > 0) bar_arrive(bars + 8 * (STAGES + (it - 1) % STAGES));   // the previous stage is free
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  }
  float sum = 0;
  for (int i = 0; i < 128; i++) sum += d[i];
  if (t < 256) out[blockIdx.x * 256 + t] = sum;
}

int main() {
  const size_t bytes = (size_t)1 << 28;   // 256 MB of source: larger than L2
  uint4 *src;
  float *out;
  if (cudaMalloc(&src, bytes) != cudaSuccess || cudaMalloc(&out, 132 * 256 * 4) != cudaSuccess) return 1;
  cudaMemset(src, 0, bytes);
  cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  const int iters = 2000;
  const char *names[] = {"products only", "copies only (every thread)", "both, the emitter's scheme",
                         "both, no fence.proxy.async (unsafe)", "producer warp + mbarriers", "producer warp, no consumer fence"};
  for (int mode = 0; mode < 6; mode++) {
    float ms = 0;
    for (int rep = 0; rep < 3; rep++) {
      cudaEventRecord(e0);
      k<<<132, 288, SMEM>>>(src, bytes / 16, out, iters, mode);
      cudaEventRecord(e1);
      cudaEventSynchronize(e1);
      cudaEventElapsedTime(&ms, e0, e1);
    }
    cudaError_t err = cudaGetLastError();
    double flop = mode == 1 ? 0 : 2.0 * 128 * 256 * 64 * iters * 132.0;
    double moved = mode == 0 ? 0 : (double)STAGE_BYTES * iters * 132.0;
    printf("wgmma_pipeline %d %-38s %8.3f ms %7.1f TFLOP/s %7.1f GB/s  (%s)\n", mode, names[mode], ms, flop / ms / 1e9,
           moved / ms / 1e6, cudaGetErrorString(err));
  }
  return 0;
}
