// Tensor-core helpers for sm_80+ warp-level MMAs, on top of CuTe's arch atoms:
// ldmatrix (plain and transposed) from shared memory and the bf16 and f16 m16n8k16 MMAs with fp32
// accumulate.
// Fragment layouts follow the PTX ISA's mma.m16n8k16 figures (lane = 4 * group + quad).
#pragma once

#include <cstdint>

#include <cute/arch/copy_sm75.hpp>
#include <cute/arch/mma_sm80.hpp>

namespace mlakit::kernels {

// Four 8x8 bf16 matrices; lane L supplies the row address of matrix L / 8.
__device__ __forceinline__ void ldmatrix_x4(const void* smem_row, uint32_t (&r)[4]) {
  cute::SM75_U32x4_LDSM_N::copy(*reinterpret_cast<const cute::uint128_t*>(smem_row), r[0], r[1],
                                r[2], r[3]);
}

// Two 8x8 bf16 matrices; lanes 0-15 supply the row addresses.
__device__ __forceinline__ void ldmatrix_x2(const void* smem_row, uint32_t& r0, uint32_t& r1) {
  cute::SM75_U32x2_LDSM_N::copy(*reinterpret_cast<const cute::uint128_t*>(smem_row), r0, r1);
}

// Same, each matrix transposed on the way into registers (B operands stored K-major in rows).
__device__ __forceinline__ void ldmatrix_x4_trans(const void* smem_row, uint32_t (&r)[4]) {
  cute::SM75_U16x8_LDSM_T::copy(*reinterpret_cast<const cute::uint128_t*>(smem_row), r[0], r[1],
                                r[2], r[3]);
}

// d += a * b for one m16n8k16 tile: a row-major 16x16 bf16, b column-major 16x8 bf16, d fp32.
__device__ __forceinline__ void mma_bf16_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                               uint32_t b1) {
  cute::SM80_16x8x16_F32BF16BF16F32_TN::fma(d[0], d[1], d[2], d[3], a[0], a[1], a[2], a[3], b0, b1,
                                            d[0], d[1], d[2], d[3]);
}

// The same with f16 operands.
__device__ __forceinline__ void mma_f16_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  cute::SM80_16x8x16_F32F16F16F32_TN::fma(d[0], d[1], d[2], d[3], a[0], a[1], a[2], a[3], b0, b1, d[0], d[1], d[2],
                                           d[3]);
}

__device__ __forceinline__ uint32_t pack_f16x2(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

// Eight floats times `scale` as eight bf16 (one 16-byte store), the first in the low half.
__device__ __forceinline__ uint4 pack_bf16x8(const float (&v)[8], float scale) {
  return make_uint4(pack_bf16x2(v[0] * scale, v[1] * scale), pack_bf16x2(v[2] * scale, v[3] * scale),
                    pack_bf16x2(v[4] * scale, v[5] * scale), pack_bf16x2(v[6] * scale, v[7] * scale));
}

// Two adjacent n8 tiles of one accumulator row as bf16 in one whole 32-byte sector: lane q of the
// row's quad holds `lo` (columns 2q, 2q + 1 of the first tile, packed) and `hi` (the same of the
// second); after two pairs of shuffles it stores columns 4q .. 4q + 3 at dst + 4q (dst: column 0
// of the first tile, 32-byte aligned). A quad storing its own words would write each sector in two
// halves. The whole warp calls it.
__device__ __forceinline__ void store_bf16_tile_pair(uint16_t* dst, uint32_t lo, uint32_t hi) {
  const int lane = threadIdx.x % 32, q = lane % 4, src = (lane & ~3) | (2 * (q % 2));
  const uint32_t a0 = __shfl_sync(0xffffffffu, lo, src), a1 = __shfl_sync(0xffffffffu, lo, src + 1);
  const uint32_t b0 = __shfl_sync(0xffffffffu, hi, src), b1 = __shfl_sync(0xffffffffu, hi, src + 1);
  *reinterpret_cast<uint2*>(dst + 4 * q) = q < 2 ? make_uint2(a0, a1) : make_uint2(b0, b1);
}

}  // namespace mlakit::kernels
