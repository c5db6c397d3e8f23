// wgmma_smem.cu: the rate of Hopper's wgmma alone, operands already in shared
// memory, for the operand layouts emit_cuda_wgmma.c could use (no swizzle; core
// matrices side by side along a row group, or down a 16-byte column; B N-major or
// K-major).  One block of two warp groups per SM, each warp group 4 m64n256k16
// bf16 products per iteration on a 128 x 64 by 64 x 256 tile, waited for every
// iteration.  Prints TFLOP/s per layout.  What a kernel's copies cost is left
// out on purpose: compare with bench_gpu's matmul to see what they cost.
//   nvcc -gencode arch=compute_90a,code=sm_90a -O2 -o /tmp/wgmma_smem bench/gpu/wgmma_smem.cu && /tmp/wgmma_smem
#include <cstdio>
#include "wgmma_m64n256.cuh"

// A: 128 x 64 (K-major), B: 64 x 256 (TB=1: N-major; TB=0: K-major).  Strides in bytes.
template <int TB>
__global__ void __launch_bounds__(256, 1) k(float *out, int iters, unsigned alb, unsigned asb, unsigned astep, unsigned amstep,
                                            unsigned blb, unsigned bsb, unsigned bstep) {
  extern __shared__ __align__(128) unsigned char sm[];
  for (int i = threadIdx.x; i < 49152 / 4; i += 256) ((unsigned *)sm)[i] = 0x3f803f80u;
  __syncthreads();
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();
  float d[128];
  for (int i = 0; i < 128; i++) d[i] = 0.f;
  uint32_t a0 = (uint32_t)__cvta_generic_to_shared(sm) + (threadIdx.x / 128) * amstep, b0 = (uint32_t)__cvta_generic_to_shared(sm) + 16384;
  for (int it = 0; it < iters; it++) {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
    for (int ks = 0; ks < 4; ks++) wgmma_m64n256k16<TB>(d, wgmma_desc(a0 + ks * astep, alb, asb), wgmma_desc(b0 + ks * bstep, blb, bsb));
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  }
  float s = 0; for (int i = 0; i < 128; i++) s += d[i];
  out[blockIdx.x * 256 + threadIdx.x] = s;
}
int main() {
  float *out; cudaMalloc(&out, 132 * 256 * 4);
  cudaFuncSetAttribute(k<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, 49152 + 1024);
  cudaFuncSetAttribute(k<0>, cudaFuncAttributeMaxDynamicSharedMemorySize, 49152 + 1024);
  struct { const char *name; int tb; unsigned alb, asb, astep, amstep, blb, bsb, bstep; } c[] = {
    // A K-major 128x64: group-major: LBO 128 (K), SBO 1024 (M); k16 step +256; WG1 rows 64 -> +8192
    {"A GM, B N-major GM", 1, 128, 1024, 256, 8192, 4096, 128, 8192},
    // chunk-major: A: K-adjacent 2048, M-adjacent 128, k16 +4096, WG1 +1024; B (64 K rows x 256): K-adj 128, N-adj 1024, k16 +256
    {"A CM, B N-major CM", 1, 2048, 128, 4096, 1024, 128, 1024, 256},
    {"A GM, B N-major CM", 1, 128, 1024, 256, 8192, 128, 1024, 256},
    {"A CM, B N-major GM", 1, 2048, 128, 4096, 1024, 4096, 128, 8192},
    // B K-major (256 N rows x 64 K): GM: K-adj 128, N-adj 1024, k16 +256; CM: K-adj 4096, N-adj 128, k16 +8192
    {"A GM, B K-major GM", 0, 128, 1024, 256, 8192, 128, 1024, 256},
    {"A CM, B K-major CM", 0, 2048, 128, 4096, 1024, 4096, 128, 8192},
  };
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  int iters = 4000;
  for (auto &x : c) {
    for (int rep = 0; rep < 2; rep++) {
      cudaEventRecord(e0);
      if (x.tb) k<1><<<132, 256, 49152>>>(out, iters, x.alb, x.asb, x.astep, x.amstep, x.blb, x.bsb, x.bstep);
      else k<0><<<132, 256, 49152>>>(out, iters, x.alb, x.asb, x.astep, x.amstep, x.blb, x.bsb, x.bstep);
      cudaEventRecord(e1); cudaEventSynchronize(e1);
      float ms; cudaEventElapsedTime(&ms, e0, e1);
      double flop = 2.0 * 128 * 256 * 64 * (double)iters * 132;
      if (rep) printf("wgmma_smem %-40s %8.1f TFLOP/s  (%s)\n", x.name, flop / ms / 1e9, cudaGetErrorString(cudaGetLastError()));
    }
  }
}
