// Register-level bf16 pairs (one 32-bit word, the low half first): unpacking to floats and the
// packed multiply and maximum. Shared by the FP8 decode, the FP8 quantizer and v2_fused's merge.
#pragma once

#include <cstdint>

namespace mlakit::kernels {

// The two bf16 of a word as floats (exact).
__device__ __forceinline__ float bf16_lo(uint32_t w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float bf16_hi(uint32_t w) { return __uint_as_float(w & 0xffff0000u); }
// The four bf16 of two words (lo's first) as floats.
__device__ __forceinline__ float4 unpack_bf16x4(uint32_t lo, uint32_t hi) {
  return make_float4(bf16_lo(lo), bf16_hi(lo), bf16_lo(hi), bf16_hi(hi));
}

__device__ __forceinline__ uint32_t mul_bf16x2(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

__device__ __forceinline__ uint32_t max_bf16x2(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("max.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

}  // namespace mlakit::kernels
