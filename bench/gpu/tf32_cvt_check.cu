// bench/gpu/tf32_cvt_check.cu: every f32 bit pattern: cvt.rn.tf32.f32 against ties-to-even written in integers
// (the device header's tile_tf32: docs/performance.md, "tf32 rounded to nearest even").
// nvcc -arch=sm_90a -o /tmp/tf32_cvt_check bench/gpu/tf32_cvt_check.cu && /tmp/tf32_cvt_check
#include <cstdio>
__device__ unsigned ref_rne(unsigned u) {
  if ((u & 0x7f800000u) == 0x7f800000u) return u;
  return (u + 0xfffu + ((u >> 13) & 1u)) & 0xffffe000u;
}
__device__ bool isnanbits(unsigned u) { return (u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu); }
__global__ void k(unsigned long long *bad, unsigned *first, unsigned long long *lowbits) {
  unsigned long long base = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) * 64ull;
  for (int i = 0; i < 64; i++) {
    unsigned u = (unsigned)(base + i), rn;
    asm("cvt.rn.tf32.f32 %0, %1;" : "=r"(rn) : "f"(__uint_as_float(u)));
    bool nan = isnanbits(u);
    if (rn & 0x1fffu) atomicAdd(lowbits, 1ull);
    bool ok_rn = nan ? isnanbits(rn) : rn == ref_rne(u);
    if (!ok_rn) { if (atomicAdd(&bad[0], 1ull) < 4) first[atomicAdd(&first[8], 1u) % 8] = u; }
  }
}
int main() {
  unsigned long long *bad, *low; unsigned *first;
  cudaMallocManaged(&bad, 8); cudaMallocManaged(&low, 8); cudaMallocManaged(&first, 40);
  bad[0] = 0; *low = 0; for (int i = 0; i < 10; i++) first[i] = 0;
  k<<<(1ull << 32) / 64 / 256, 256>>>(bad, first, low);
  cudaError_t e = cudaDeviceSynchronize();
  printf("cvt.rn.tf32.f32 over 2^32 inputs (%s): %llu mismatches, %llu results with low bits set; first mismatches:",
         cudaGetErrorString(e), bad[0], *low);
  for (int i = 0; i < 4; i++) printf(" %08x", first[i]);
  printf("\n");
  return 0;
}
