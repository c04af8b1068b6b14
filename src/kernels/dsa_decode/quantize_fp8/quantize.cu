// The FP8 cache quantizer: one warp per slot, streaming. Lane l reads ckv channels [8 l, 8 l + 8)
// and [256 + 8 l, 256 + 8 l + 8) (so every warp load and store is one contiguous run), the 16
// lanes of a 128-channel tile agree on its amax by shuffles, and each lane converts its values
// with the hardware's round-to-nearest-even saturating E4M3 conversion. The scale is the smallest
// power of two >= max(amax / 448, 1e-4), found on the fp32 bits exactly as the host codec does
// (reference/dsa/fp8.cpp), so both agree bit for bit. Lanes 0-7 copy the 128 rope bytes.
#include <cstdint>

#include "kernels/common/bf16x2.cuh"
#include "kernels/dsa_decode/quantize_fp8/launch.h"
#include "mlakit/dsa_fp8.h"

namespace mlakit::dsa_fp8_quant {
namespace {

using namespace mlakit::dsa_fp8;
using kernels::bf16_hi;
using kernels::bf16_lo;
constexpr int kWarpsPerBlock = 8;

__device__ __forceinline__ float tile_scale(float amax) {
  const float r = fmaxf(__fdiv_rn(amax, kE4m3Max), kMinScale);
  uint32_t u = __float_as_uint(r);
  if (u & 0x007fffffu) u = (u & 0xff800000u) + 0x00800000u;
  return __uint_as_float(u);
}

// Two floats -> two E4M3 bytes (lo in the low byte), round to nearest even, saturating.
__device__ __forceinline__ uint32_t e4m3x2(float lo, float hi) {
  uint16_t r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
  return r;
}

// Eight bf16 (one uint4) scaled by `inv` -> eight E4M3 bytes (one uint2).
__device__ __forceinline__ uint2 quantize8(uint4 v, float inv) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
  uint32_t q[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) q[i] = e4m3x2(bf16_lo(w[i]) * inv, bf16_hi(w[i]) * inv);
  return make_uint2(q[0] | (q[1] << 16), q[2] | (q[3] << 16));
}

__device__ __forceinline__ float amax8(uint4 v) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
  float m = 0.f;
#pragma unroll
  for (int i = 0; i < 4; ++i) m = fmaxf(m, fmaxf(fabsf(bf16_lo(w[i])), fabsf(bf16_hi(w[i]))));
  return m;
}

__global__ void __launch_bounds__(kWarpsPerBlock * 32) quantize_kernel(const Params p) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = int64_t(gridDim.x) * kWarpsPerBlock;
  for (int64_t slot = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32; slot < p.num_slots; slot += warps) {
    const auto* ckv = reinterpret_cast<const uint4*>(p.ckv + slot * p.ckv_stride_slot);
    const uint4 a = ckv[lane], b = ckv[32 + lane];  // channels 8 lane.., 256 + 8 lane..
    float ma = amax8(a), mb = amax8(b);
#pragma unroll
    for (int o = 1; o < 16; o *= 2) {  // the 16 lanes of each 128-channel tile
      ma = fmaxf(ma, __shfl_xor_sync(0xffffffffu, ma, o));
      mb = fmaxf(mb, __shfl_xor_sync(0xffffffffu, mb, o));
    }
    const float sa = tile_scale(ma), sb = tile_scale(mb);  // tiles lane / 16 and 2 + lane / 16
    uint8_t* row = p.cache + (slot / p.page_size) * p.stride_page + (slot % p.page_size) * kRowBytes;
    reinterpret_cast<uint2*>(row)[lane] = quantize8(a, __frcp_rn(sa));
    reinterpret_cast<uint2*>(row)[32 + lane] = quantize8(b, __frcp_rn(sb));
    // Scales: tile i's from lane 16 (i % 2) of the a (i < 2) or b half.
    const float s0 = __shfl_sync(0xffffffffu, sa, 0), s1 = __shfl_sync(0xffffffffu, sa, 16);
    const float s2 = __shfl_sync(0xffffffffu, sb, 0), s3 = __shfl_sync(0xffffffffu, sb, 16);
    if (lane == 0) *reinterpret_cast<float4*>(row + kScaleOffset) = make_float4(s0, s1, s2, s3);
    if (lane < kRopeBytes / 16)
      reinterpret_cast<uint4*>(row + kRopeOffset)[lane] = reinterpret_cast<const uint4*>(p.kpe + slot * p.kpe_stride_slot)[lane];
  }
}
static_assert(kNumScales == 4 && kTile == 128 && kNopeBytes == 512, "the lane map above is for 4 tiles of 128");

}  // namespace

cudaError_t launch(const Params& p, cudaStream_t stream) {
  if (p.num_slots <= 0) return cudaSuccess;
  const int64_t blocks = (p.num_slots + kWarpsPerBlock - 1) / kWarpsPerBlock;
  const int grid = int(blocks < 132 * 64 ? blocks : 132 * 64);  // grid-stride beyond ~64 blocks per SM
  quantize_kernel<<<grid, kWarpsPerBlock * 32, 0, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace mlakit::dsa_fp8_quant
