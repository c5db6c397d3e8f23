// wgmma_m64n256.cuh: what bench/gpu's wgmma microbenchmarks share -- a shared-memory
// matrix descriptor (no swizzle; lbo: bytes between core matrices next to each other
// along K, sbo: along M / N) and one m64n256k16 bf16 product into 128 f32 registers
// (TB: B N-major when 1, K-major when 0).  sm_90a only.
#pragma once
#include <cstdint>

__device__ __forceinline__ uint64_t wgmma_desc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return (uint64_t)((addr & 0x3FFFF) >> 4) | (uint64_t)((lbo & 0x3FFFF) >> 4) << 16 | (uint64_t)((sbo & 0x3FFFF) >> 4) << 32;
}

#define WGMMA_R8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
template <int TB>
__device__ __forceinline__ void wgmma_m64n256k16(float *d, uint64_t da, uint64_t db) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
    "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
    "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"
    "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,"
    "%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,"
    "%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127},"
    " %128, %129, p, 1, 1, 0, %131;\n}\n"
    : WGMMA_R8(0), WGMMA_R8(8), WGMMA_R8(16), WGMMA_R8(24), WGMMA_R8(32), WGMMA_R8(40), WGMMA_R8(48), WGMMA_R8(56),
      WGMMA_R8(64), WGMMA_R8(72), WGMMA_R8(80), WGMMA_R8(88), WGMMA_R8(96), WGMMA_R8(104), WGMMA_R8(112), WGMMA_R8(120)
    : "l"(da), "l"(db), "r"(1), "n"(TB));
}
