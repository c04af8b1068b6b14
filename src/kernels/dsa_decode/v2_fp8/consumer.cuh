// v2_fp8's consumer math over the FP8 cache's raw 656-byte rows: QK and P V read the E4M3 bytes of
// a ring tile straight into MMA fragments (f16), the per-slot scales applied outside the MMAs.
// The walk over the tiles, the softmax between the two products and the stores are kernel.cuh's.
#pragma once

#include <cstdint>

#include "kernels/common/consumer_h16.cuh"
#include "kernels/common/mma.cuh"
#include "kernels/dsa_decode/v2_fp8/traits.h"

namespace mlakit::dsa_v2_fp8 {

using namespace mlakit::kernels;
using h16::kDimsPerWarp;
using h16::kOTiles;
using h16::kPPitch;
using h16::kSPitch;
using h16::kSlotTiles;
using h16::wg_warp;

// The consumers read the E4M3 bytes of the raw stages straight into MMA fragments: no bf16 copy
// of the tile, no barrier between conversion and math. Warp w owns scale tile w (latent channels
// [128 w, 128 w + 128): one scale per slot) for QK and output dims [128 w, 128 w + 128) for PV, so
// every product it forms has one scale per slot, applied outside the MMA:
//   QK: S = Q K^T over the tile's channels in f16 (an E4M3 pair -> f16x2 is one exact cvt; Q is
//       f16 after a per-row power-of-two shift), then each column times its slot's scale and each
//       row times 2^shift in fp32; then the rope channels [16 w, 16 w + 16) in bf16.
//   PV: O += (P x scale of the slot) V in f16 (P's bf16 times a power of two is exact; each row's
//       products are brought into f16's range by a power of two that O carries, pv_mma; V's bytes
//       are paired across two slots by one prmt and widened by one exact cvt per pair).
// The contraction order inside an MMA is free, so each lane reads whole 16-byte runs of its rows,
// one shared load where 32-bit words took four (the same wavefronts: a warp's 16- and 8-byte loads
// are conflict-free at the 656-byte row pitch): QK's k16 step k = 4 h + i takes channels
// 64 h + 16 t + 4 i .. + 3 of the lane's slot, word i of its run h (k = 2t, 2t + 1 <- the word's low
// half, 2t + 8, 2t + 9 <- its high half; Q's fragment is built to match). P V's B fragments take
// two 8-byte runs per slot row (with one 16-byte run a lane's output dims would form runs that no
// store instruction writes as whole sectors without an exchange between lanes): lane n's run a
// holds dims v_dims(a, n) .. + 7 and n8 tile 8 a + 4 h + r takes byte 4 h + r of it, so a lane's
// accumulators of column 2t + b hold dims 64 a + 32 b + 8 t .. + 7 (n8 tiles 8 a .. 8 a + 7) and a
// quad's four lanes write one 64-byte run per store instruction (store, below).

constexpr int kLatentSteps = dsa_fp8::kTile / 16;  // 8 k16 steps of QK per warp
static_assert(dsa_fp8::kNumScales == kConsumerWarps && kDimR == 16 * kConsumerWarps,
              "warp w: scale tile w and one k16 step of the rope");
static_assert(kDimsPerWarp == dsa_fp8::kTile && kOTiles == 16, "PV: warp w's dims are scale tile w");

// P V: the first of the 8 dims (bytes) of lane n's run a within the scale tile, 64 a + 32 (n % 2) +
// 8 (n / 2) (the order above).
__device__ __forceinline__ int v_dims(int a, int n) { return 32 * (2 * a + (n & 1)) + 8 * (n >> 1); }

// Four E4M3 bytes -> two exact f16x2: bytes 0, 1 -> lo, bytes 2, 3 -> hi.
__device__ __forceinline__ void e4m3x4_to_f16x2(uint32_t w, uint32_t& lo, uint32_t& hi) {
  asm("{\n\t.reg .b16 l, h;\n\tmov.b32 {l, h}, %2;\n\tcvt.rn.f16x2.e4m3x2 %0, l;\n\tcvt.rn.f16x2.e4m3x2 %1, h;\n\t}"
      : "=r"(lo), "=r"(hi)
      : "r"(w));
}

// Dims R = 0..3 of two slots' words x (slot k) and y (slot k + 1) -> four f16x2 B halves
// {x.R (low), y.R (high)}, exactly: one prmt pairs the bytes of two dims, one cvt widens a pair.
__device__ __forceinline__ void e4m3_slot_pairs(uint32_t x, uint32_t y, uint32_t (&b)[4]) {
  uint32_t d01, d23;
  asm("prmt.b32 %0, %1, %2, 0x5140;" : "=r"(d01) : "r"(x), "r"(y));  // x.0 y.0 x.1 y.1
  asm("prmt.b32 %0, %1, %2, 0x7362;" : "=r"(d23) : "r"(x), "r"(y));  // x.2 y.2 x.3 y.3
  e4m3x4_to_f16x2(d01, b[0], b[1]);
  e4m3x4_to_f16x2(d23, b[2], b[3]);
}

// 2^e for e in [-126, 127].
__device__ __forceinline__ float pow2(int e) { return __int_as_float((e + 127) << 23); }

// floor(log2 x) for a positive normal x; -127 for 0 (and subnormals).
__device__ __forceinline__ int binade(float x) { return int((__float_as_uint(x) >> 23) & 0xff) - 127; }

// A tile of raw rows: two ring stages, or one twice (its second half is masked, never multiplied).
struct RawTile {
  const uint8_t* stage[kTileStages];
  int rows;  // valid rows, 1..64
  // Every member from the caller: a forgotten one must not compile to a null pointer.
  __device__ RawTile(const uint8_t* first, const uint8_t* second, int valid_rows)
      : stage{first, second}, rows(valid_rows) {}
  __device__ const uint8_t* row(int slot) const {
    return (slot < kStageRows ? stage[0] : stage[1]) + (slot % kStageRows) * kRawRowBytes;
  }
  __device__ float scale(int slot, int tile) const {
    return reinterpret_cast<const float*>(row(slot) + dsa_fp8::kScaleOffset)[tile];
  }
};

// The first of the four channels that lane t's word of QK's k16 step k holds, within a scale tile
// (the order above): word k % 4 of the lane's 16-byte run k / 4.
__device__ __forceinline__ int q_channel(int k, int t) { return 64 * (k / 4) + 16 * t + 4 * (k % 4); }

// This warp's Q operands, built once: its scale tile's 128 channels as f16 in the permuted order
// above, each row shifted by a power of two that puts its largest value in [2^14, 2^15) (f16's
// range; values 2^28 below the row's largest may lose bits, which cannot show in S), and the rope
// channels [16 w, 16 w + 16) as bf16.
struct QOperands {
  uint32_t latent[kLatentSteps][4];
  uint32_t rope[4];
  float unshift[2];  // 2^shift of rows g and g + 8
};

__device__ __forceinline__ void load_q_operands(const uint16_t* sq, QOperands& q) {
  const int lane = threadIdx.x % 32, w = wg_warp(), g = lane / 4, t = lane % 4;
  float v[2][kLatentSteps][4];
  float amax[2] = {0.f, 0.f};
#pragma unroll
  for (int r = 0; r < 2; ++r)
#pragma unroll
    for (int k = 0; k < kLatentSteps; ++k) {
      const uint2 x = *reinterpret_cast<const uint2*>(sq + (g + 8 * r) * kKvPitch + w * dsa_fp8::kTile + q_channel(k, t));
      v[r][k][0] = bf16_lo(x.x);
      v[r][k][1] = bf16_hi(x.x);
      v[r][k][2] = bf16_lo(x.y);
      v[r][k][3] = bf16_hi(x.y);
#pragma unroll
      for (int i = 0; i < 4; ++i) amax[r] = fmaxf(amax[r], fabsf(v[r][k][i]));
    }
  float down[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    amax[r] = quad_max(amax[r]);
    const int exponent = binade(amax[r]);
    const int shift = min(max(exponent - 14, -100), 113);
    down[r] = pow2(-shift);
    q.unshift[r] = pow2(shift);
  }
#pragma unroll
  for (int k = 0; k < kLatentSteps; ++k) {
    q.latent[k][0] = pack_f16x2(v[0][k][0] * down[0], v[0][k][1] * down[0]);  // row g, k = 2t, 2t + 1
    q.latent[k][1] = pack_f16x2(v[1][k][0] * down[1], v[1][k][1] * down[1]);  // row g + 8
    q.latent[k][2] = pack_f16x2(v[0][k][2] * down[0], v[0][k][3] * down[0]);  // row g, k = 2t + 8, 2t + 9
    q.latent[k][3] = pack_f16x2(v[1][k][2] * down[1], v[1][k][3] * down[1]);
  }
  ldmatrix_x4(sq + (lane % 16) * kKvPitch + kDimV + 16 * w + (lane / 16) * 8, q.rope);
}

// Partial S[16 x 8 SlotTiles] over this warp's channels (scale tile w and rope step w) -> s_part[w].
// `pv_scale` gets what P V multiplies P by: the scales of the lane's column slots j * 8 + 2t, + 1
// (n8 tile j) as bf16x2 (exact: powers of two), 0 past the tile's rows (their scale may be stale,
// not finite), read here once for both products. kFull: every slot of the tile is valid.
template <int SlotTiles, bool kFull>
__device__ __forceinline__ void qk_partial(float* s_part, const QOperands& q, const RawTile& tile,
                                           uint32_t (&pv_scale)[SlotTiles]) {
  const int rows = kFull ? SlotTiles * 8 : tile.rows;
  const int lane = threadIdx.x % 32, w = wg_warp(), g = lane / 4, t = lane % 4;
  static_assert(kLatentSteps % 4 == 0, "a lane's 16-byte run feeds four k16 steps");
  float acc[SlotTiles][4] = {};
#pragma unroll
  for (int j = 0; j < SlotTiles; ++j) {
    const auto* runs = reinterpret_cast<const uint4*>(tile.row(j * 8 + g) + w * dsa_fp8::kTile) + t;
#pragma unroll
    for (int h = 0; h < kLatentSteps / 4; ++h) {
      const uint4 x = runs[4 * h];  // channels 64 h + 16 t .. + 15
      const uint32_t words[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        uint32_t b0, b1;
        e4m3x4_to_f16x2(words[i], b0, b1);
        mma_f16_16816(acc[j], q.latent[4 * h + i], b0, b1);
      }
    }
  }
#pragma unroll
  for (int j = 0; j < SlotTiles; ++j) {  // columns j * 8 + 2t, + 1 (rows past the tile: masked later)
    const int c0 = j * 8 + 2 * t;
    const float s0 = tile.scale(c0, w), s1 = tile.scale(c0 + 1, w);
    pv_scale[j] = pack_bf16x2(c0 < rows ? s0 : 0.f, c0 + 1 < rows ? s1 : 0.f);
    acc[j][0] = acc[j][0] * s0 * q.unshift[0];
    acc[j][1] = acc[j][1] * s1 * q.unshift[0];
    acc[j][2] = acc[j][2] * s0 * q.unshift[1];
    acc[j][3] = acc[j][3] * s1 * q.unshift[1];
    uint32_t b0, b1;
    ldmatrix_x2(tile.row(j * 8 + lane % 8) + dsa_fp8::kRopeOffset + 2 * (16 * w + ((lane / 8) % 2) * 8), b0, b1);
    mma_bf16_16816(acc[j], q.rope, b0, b1);
  }
  float* out = s_part + w * kHeads * kSPitch;
#pragma unroll
  for (int j = 0; j < SlotTiles; ++j) {
    const int col = j * 8 + 2 * t;
    *reinterpret_cast<float2*>(out + g * kSPitch + col) = make_float2(acc[j][0], acc[j][1]);
    *reinterpret_cast<float2*>(out + (g + 8) * kSPitch + col) = make_float2(acc[j][2], acc[j][3]);
  }
}

// O[16 x dims 128 w ..] = alpha * O + (P x scale) V over the tile's valid k16 steps, in f16.
// f16 holds P x scale only within 2^-24..2^16, so O is kept in units of 2^unit[r] per row (the
// lane's rows g and g + 8; each warp its own, its scales being its own): the tile's products of a
// row are divided by the power of two just above their largest, or by O's carried unit if that is
// larger (a tile far below the running sum: its products under 2^-24 of the sum are dropped, below
// what the fp32 sum keeps), so the rescale of O stays in [0, 2) and P' = P x scale / 2^unit in
// [0, 1]. The products and P' are exact (bf16 P times powers of two; bf16's 8-bit significand fits
// f16's 11) except where P' falls in f16's subnormal range. V's bytes widen to f16 exactly: one prmt
// pairs the same dim of two slots, one cvt widens the pair.
// kFull: the tile holds 16 x Steps valid rows (no k16 step is skipped: straight-line code, whose
// loads the compiler may issue ahead of the previous step's MMAs).
template <int Steps, bool kFull>
__device__ __forceinline__ void pv_mma(const uint16_t* sp, const RawTile& tile, const uint32_t (&pv_scale)[2 * Steps],
                                       const float (&alpha)[2], int (&unit)[2], float (&o)[kOTiles][4]) {
  const int lane = threadIdx.x % 32, w = wg_warp(), g = lane / 4, t = lane % 4;
  const int k_steps = kFull ? Steps : (tile.rows + 15) / 16;
  const uint16_t* a_row = sp + (lane % 16) * kPPitch + (lane / 16) * 8;
  // P x scale in bf16 (exact: the scale is a power of two; 0 past the tile's rows, qk_partial) and
  // each row's largest product. A's registers: 0 and 2 row g, 1 and 3 row g + 8; this lane's k
  // pairs are slots s0, s0 + 1 (0, 1; n8 column tile 2k of QK) and s0 + 8, s0 + 9 (2, 3; tile 2k + 1).
  uint32_t a[Steps][4];
  uint32_t top[2] = {0u, 0u};  // bf16x2; every product is >= 0
#pragma unroll
  for (int k = 0; k < Steps; ++k) {
    if (k >= k_steps) break;
    ldmatrix_x4(a_row + k * 16, a[k]);
    const uint32_t m01 = pv_scale[2 * k], m89 = pv_scale[2 * k + 1];
    a[k][0] = mul_bf16x2(a[k][0], m01);
    a[k][1] = mul_bf16x2(a[k][1], m01);
    a[k][2] = mul_bf16x2(a[k][2], m89);
    a[k][3] = mul_bf16x2(a[k][3], m89);
    top[0] = max_bf16x2(top[0], max_bf16x2(a[k][0], a[k][2]));
    top[1] = max_bf16x2(top[1], max_bf16x2(a[k][1], a[k][3]));
  }
  float rescale[2];
  uint32_t down[2];  // bf16 2^-unit, twice
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float largest = quad_max(fmaxf(bf16_lo(top[r]), bf16_hi(top[r])));
    const float carried = alpha[r] * pow2(unit[r]);  // O's scale after the softmax's rescale
    const int e = min(max(max(binade(largest) + 1, binade(carried)), -126), 126);
    rescale[r] = carried * pow2(-e);
    unit[r] = e;
    down[r] = uint32_t(127 - e) << 7 | uint32_t(127 - e) << 23;
  }
  h16::rescale_rows(o, rescale);
#pragma unroll
  for (int k = 0; k < Steps; ++k) {
    if (k >= k_steps) break;
    const int s0 = 16 * k + 2 * t;
    uint32_t a16[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint32_t x = mul_bf16x2(a[k][i], down[i % 2]);
      a16[i] = pack_f16x2(bf16_lo(x), bf16_hi(x));
    }
    // Slots s0, s0 + 1, s0 + 8, s0 + 9, this lane's two 8-byte runs (v_dims): 16 dims each.
    const auto runs = [&](int slot, uint2 (&x)[2]) {
      const uint8_t* row = tile.row(slot) + w * dsa_fp8::kTile;
      x[0] = *reinterpret_cast<const uint2*>(row + v_dims(0, g));
      x[1] = *reinterpret_cast<const uint2*>(row + v_dims(1, g));
    };
    uint2 x0[2], x1[2], x8[2], x9[2];
    runs(s0, x0), runs(s0 + 1, x1), runs(s0 + 8, x8), runs(s0 + 9, x9);
#pragma unroll
    for (int a = 0; a < 2; ++a)
#pragma unroll
      for (int h = 0; h < 2; ++h) {  // word h of run a: n8 tiles 8 a + 4 h + 0..3
        uint32_t b0[4], b1[4];
        e4m3_slot_pairs(h ? x0[a].y : x0[a].x, h ? x1[a].y : x1[a].x, b0);
        e4m3_slot_pairs(h ? x8[a].y : x8[a].x, h ? x9[a].y : x9[a].x, b1);
#pragma unroll
        for (int r = 0; r < 4; ++r) mma_f16_16816(o[8 * a + 4 * h + r], a16, b0[r], b1[r]);
      }
  }
}

}  // namespace mlakit::dsa_v2_fp8
