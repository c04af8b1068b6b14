// DSA sparse decode over the FP8 cache (v2_fp8): v2_fused's single launch with 656-byte rows.
//
//   grid = (max_splits x head_groups, T) as v2_fused: CTA (s x head_groups + g, t) compacts index
//   row t, takes split s of it and computes heads [16 g, 16 g + 16) (the floor: one group); with
//   the cluster merge (kCluster) CTA (g x max_splits + s, t), so that a cluster is one row's splits.
//   warps 8-11: producers, one warpgroup (setmaxnreg lowers it to 40 registers, the consumers
//   rise to 232). Stage i belongs to the pair of warps 8 + 2 (i % 2) and 9 + 2 (i % 2), each
//   issuing one bulk copy of a whole 656-byte row per lane for half of the stage's 32 rows into the
//   raw ring, completion counted on the stage's full barrier. The producers leave once their
//   copies are issued. (Q comes from the consumer warps, before the index row's scan.)
//   warps 0-7: consumers, two warpgroups on the same 16 heads, warpgroup v on tiles v, v + 2, ...
//   of 64 slots, or, when the split holds a single tile, on its stage v (32 slots; warpgroup 1
//   idle until the merge when there is no second stage). Per tile they read the E4M3 bytes of the
//   tile's raw stages straight into MMA fragments (QK and PV in f16; the scales outside the MMAs,
//   below), run v2_fused's online softmax between the two, and give the stages back after PV. At
//   the end warpgroup 1's (m, l, O) is folded into warpgroup 0's, which stores. (Earlier designs
//   dequantized the tile into a bf16 copy in shared memory first, one warpgroup did all tiles, PV
//   ran in bf16: the devlog's steps.)
//   Splits merge in the kernel as v2_fused's (the same functions), by the 256 consumer threads, or
//   (tiling c1, kCluster) inside a thread-block cluster of the row's CTAs, each reading the others'
//   staged partials from their shared memory (merge_cluster; slower where measured, for the tuner).
//   Work::kStreamOnly is the gather floor: the same rows into the same ring, released on arrival
//   by warpgroup 0, nothing computed or written.
//   Shared memory (traits.h): barriers | per consumer warpgroup: reductions, Q / partial S
//   18.7 KB, P 2.3 KB (and v2_fused's zero row, 1 KB, unused here) | Stages x 20.5 KB raw ring |
//   slots 10 KB.
// Devlog: docs/kernels/dsa_decode_v2_fp8.md
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/common/bf16x2.cuh"
#include "kernels/common/cluster.cuh"
#include "kernels/common/timeline.cuh"
#include "kernels/dsa_decode/v2_fp8/traits.h"
#include "kernels/dsa_decode/v2_fused/kernel.cuh"

namespace mlakit::dsa_v2_fp8 {

using namespace mlakit::kernels;
using dsa_v2::consumer_sync;
using dsa_v2::RowState;
using dsa_v2::kDimsPerWarp;
using dsa_v2::kOTiles;
using dsa_v2::kPPitch;
using dsa_v2::kSPitch;
using dsa_v2::kSlotTiles;
using dsa_v2::wg_warp;

// Slot `slot`'s 656-byte row: page slot / page_size (a shift when page_shift >= 0), row slot %
// page_size (slot < 2^31: 32-bit division).
__device__ __forceinline__ const uint8_t* raw_row(const uint8_t* cache, int64_t stride_page, int page_size,
                                                  int page_shift, int32_t slot) {
  const int32_t page = page_shift >= 0 ? slot >> page_shift : slot / page_size;
  return cache + int64_t(page) * stride_page + int64_t(slot - page * page_size) * kRawRowBytes;
}

// Producer warp `pw`: its stages of the ring and its rows of each (dsa_ring::for_each_own_stage:
// two warps per stage, each half of its rows, so that the first tile's rows are requested by all
// four warps at once; v2_fused devlog step 19). Lane 0 raises the full barrier's byte count for
// its warp's rows first, the lanes of the valid rows issue their copies; in the decode the warp
// then zeroes the latent bytes of its share of a partial stage's rows up to the next multiple of
// 16 while the copies fly (P V's last k16 step widens them, times a P of 0, and a stale byte could
// widen to a NaN, E4M3 0x7f); every lane arrives last, its release publishing its zeros. A
// partial stage is the CTA's last, so no later copy lands on the zeroed bytes. (Zeroing first
// delayed a short row's copies; a zero row read by P V in place of the rows past the valid ones
// instead cost the consumers a select per slot and serving 1 %: fp8 devlog step 10.)
template <int Stages, int Producers, Work W, class Smem>
__device__ void produce(const Params& p, Smem& s, int count, int pw) {
  const auto* cache = static_cast<const uint8_t*>(p.io.kv_cache);
  const uint64_t policy = l2_policy(L2Evict::kFirst);  // each row is read once
  const int lane = threadIdx.x % 32;
  for_each_own_stage<Stages, Producers>(count, s.empty, pw, [&](const OwnStage& st) {
    // The phase timeline's stamps (timeline.cuh): the first warp of the first and the last stage.
    [[maybe_unused]] const bool stamp_first = st.index == 0 && st.r0 == 0 && lane == 0;
    [[maybe_unused]] const bool stamp_last = st.last && st.r0 == 0 && lane == 0;
    MLAKIT_STAMP(stamp_first, kFillStart);
    uint8_t* stage = s.ring[st.buffer];
    uint64_t* full = &s.full[st.buffer];
    const int own = max(0, min(st.rows, st.r1) - st.r0);  // this warp's valid rows: r0, r0 + 1, ...
    if (lane == 0) mbar_expect_tx(full, uint32_t(own * kRawRowBytes));  // before any copy completes
    __syncwarp();
    if (lane < own) {
      const int r = st.r0 + lane;
      const int32_t slot = s.slots[st.index * kStageRows + r];
      const uint8_t* src = raw_row(cache, p.io.kv_stride_page, p.page_size, p.page_shift, slot);
      bulk_copy_g2s(stage + r * kRawRowBytes, src, kRawRowBytes, full, policy);
    }
    MLAKIT_STAMP(stamp_first, kFillBulk);
    if (W == Work::kDecode) {
      constexpr int kChunks = dsa_fp8::kScaleOffset / 16;  // 16-byte chunks of a row's latent bytes
      const int zero_end = min(st.r1, (st.rows + 15) / 16 * 16);
      for (int c = max(st.rows, st.r0) * kChunks + lane; c < zero_end * kChunks; c += 32) {
        auto* chunk = stage + (c / kChunks) * kRawRowBytes + (c % kChunks) * 16;
        *reinterpret_cast<uint4*>(chunk) = make_uint4(0u, 0u, 0u, 0u);
      }
    }
    MLAKIT_STAMP(stamp_first, kFillCopied);  // the zeros written (no rope copies here)
    mbar_arrive(full);
    MLAKIT_STAMP(stamp_first, kIssued);
    MLAKIT_STAMP(stamp_last, kLastIssued);
  });
}
static_assert(kStageRows == 32, "a stage's rows are split between the lanes of its warps");

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
  dsa_v2::rescale_rows(o, rescale);
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

// Consumer warpgroup v's walk over the CTA's `count` slots: tiles v, v + kWgs, ... (two raw stages
// each) are waited for, decoded in place, then given back (every thread of the warpgroup arrives
// once its reads are done).
template <int Stages, class Smem, class Body>
__device__ __forceinline__ void for_each_tile(Smem& s, int count, int v, Body&& body) {
  const int num_stages = (count + kStageRows - 1) / kStageRows;
  for (int i = kTileStages * v; i < num_stages; i += kTileStages * kWgs) {
    const bool two = i + 1 < num_stages;
    const Ring<Stages> first{i}, second{i + 1};
    const int b0 = first.buffer(), b1 = second.buffer();
    first.wait_full(s.full);
    if (two) second.wait_full(s.full);
    body(RawTile(s.ring[b0], two ? s.ring[b1] : s.ring[b0], min(kTileRows, count - i * kStageRows)));
    first.release(s.empty);
    if (two) second.release(s.empty);
  }
}

// Both warpgroups hold the same 16 heads over different tiles; warpgroup 1 hands its (m, l, O) to
// warpgroup 0 through the ring (free once both are past their last tile: every stage was produced
// and consumed), lane for lane (the fragment layouts are the same), and warpgroup 0 folds it in.
// The hand-over's area at the ring's start: warpgroup 1's O, m and l, one float per thread each.
constexpr size_t kHandOverBytes = (kOTiles * 4 + 4) * kConsumerThreads * sizeof(float);
// Behind it, the partial staged by store(): warp w's 16 x 128 floats at rows of kStagePitch floats
// (rows g and g + 1 start 16 bytes apart in the banks), then (m, l) of the 16 heads (the cluster
// merge reads both from every CTA of the row).
constexpr int kStagePitch = kDimsPerWarp + 4;
constexpr size_t kStagedMlOffset = kHandOverBytes + kConsumerWarps * kHeads * kStagePitch * sizeof(float);
constexpr size_t kStagedEnd = kStagedMlOffset + kHeads * sizeof(float2);

template <class Smem>
__device__ __forceinline__ void combine_warpgroups(Smem& s, int v, RowState& st, float (&l_total)[2],
                                                   float (&o)[kOTiles][4]) {
  static_assert(kWgs == 2 && kHandOverBytes <= sizeof(s.ring),
                "warpgroup 1's (O, m, l) fits in the ring");
  float* xfer = reinterpret_cast<float*>(&s.ring[0][0]) + threadIdx.x % kConsumerThreads;
  named_barrier_sync(kPairBarrier, kWgs * kConsumerThreads);  // both warpgroups are done with the ring
  if (v == 1) {
#pragma unroll
    for (int j = 0; j < kOTiles; ++j)
#pragma unroll
      for (int c = 0; c < 4; ++c) xfer[(j * 4 + c) * kConsumerThreads] = o[j][c];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      xfer[(kOTiles * 4 + r) * kConsumerThreads] = st.m[r];
      xfer[(kOTiles * 4 + 2 + r) * kConsumerThreads] = l_total[r];
    }
  }
  named_barrier_sync(kPairBarrier, kWgs * kConsumerThreads);
  if (v == 1) return;
  float a0[2], a1[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float m1 = xfer[(kOTiles * 4 + r) * kConsumerThreads], l1 = xfer[(kOTiles * 4 + 2 + r) * kConsumerThreads];
    const float m = fmaxf(st.m[r], m1);  // finite: warpgroup 0 always has a tile with a valid slot
    a0[r] = fast_exp2(st.m[r] - m);
    a1[r] = m1 == -INFINITY ? 0.f : fast_exp2(m1 - m);  // (warpgroup 1 had rows: m1 is finite)
    l_total[r] = l_total[r] * a0[r] + l1 * a1[r];
    st.m[r] = m;
  }
#pragma unroll
  for (int j = 0; j < kOTiles; ++j)
#pragma unroll
    for (int c = 0; c < 4; ++c) o[j][c] = o[j][c] * a0[c / 2] + xfer[(j * 4 + c) * kConsumerThreads] * a1[c / 2];
}

// Output rows [16 hb, 16 hb + 16): one split writes O / l as bf16 (and the lse), several the
// unnormalised partial; a lane's dims of column 2t + b are [128 w + 64 a + 32 b + 8 t, + 8), n8 tiles
// 8 a .. 8 a + 7 (pv_mma).
// The bf16 rows go out from the fragments (a quad writes 64 contiguous bytes: whole sectors), the
// output's scaled by 1 / l, the partial's as they are (bf16 partials, v2_fused devlog step 20; the
// fp32 partial had to be staged: a lane's 32 bytes as two 16-byte halves touched half of 32 sectors
// per store). In a cluster (kCluster) each warp stages its fp32 16 x 128 partial in the ring,
// behind combine_warpgroups' area (every stage is consumed and the warpgroup is past
// reduce_row_sums' barrier), where merge_cluster reads it with its (m, l).
template <bool kPartial, bool kCluster, class Smem>
__device__ __forceinline__ void store(const Params& p, Smem& s, int hb, int split, const RowState& st,
                                      const float (&l_total)[2], const float (&o)[kOTiles][4]) {
  const int lane = threadIdx.x % 32, w = wg_warp(), g = lane / 4, t = lane % 4;
  const int64_t row0 = kPartial ? (int64_t(hb) * p.max_splits + split) * kHeads : int64_t(hb) * kHeads;
  constexpr int kPitch = kStagePitch;
  static_assert(kStagedEnd <= sizeof(s.ring), "the staged partial fits in the ring behind the warpgroups' hand-over");
  static_assert(kOTiles == 16, "two runs of 8 n8 tiles");
  float* stage = reinterpret_cast<float*>(&s.ring[0][0] + kHandOverBytes) + w * kHeads * kPitch;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int64_t base = (row0 + g + 8 * r) * kDimV + w * kDimsPerWarp + 8 * t;
    const float k = kPartial ? 1.f : fast_rcp(l_total[r]);  // a partial stays unnormalised
#pragma unroll
    for (int a = 0; a < 2; ++a)
#pragma unroll
      for (int b = 0; b < 2; ++b) {
        const int c = 2 * r + b, d = 64 * a + 32 * b;  // the accumulator (row, column 2t + b), its dims
        const float v[8] = {o[8 * a][c], o[8 * a + 1][c], o[8 * a + 2][c], o[8 * a + 3][c],
                            o[8 * a + 4][c], o[8 * a + 5][c], o[8 * a + 6][c], o[8 * a + 7][c]};
        if constexpr (kPartial && kCluster) {
          auto* dst = reinterpret_cast<float4*>(stage + (g + 8 * r) * kPitch + d + 8 * t);
          dst[0] = make_float4(v[0], v[1], v[2], v[3]);
          dst[1] = make_float4(v[4], v[5], v[6], v[7]);
        } else {  // bf16 rows: the output, or the partial (dsa_v2::part_o_bf16)
          uint16_t* out = kPartial ? dsa_v2::part_o_bf16(p) : static_cast<uint16_t*>(p.io.output);
          *reinterpret_cast<uint4*>(out + base + d) =
              make_uint4(pack_bf16x2(v[0] * k, v[1] * k), pack_bf16x2(v[2] * k, v[3] * k),
                         pack_bf16x2(v[4] * k, v[5] * k), pack_bf16x2(v[6] * k, v[7] * k));
        }
      }
  }
  if (w == 0 && t == 0) {
    auto* staged_ml = reinterpret_cast<float2*>(&s.ring[0][0] + kStagedMlOffset);
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      if constexpr (kPartial && kCluster) staged_ml[g + 8 * r] = make_float2(st.m[r], l_total[r]);
      else if constexpr (kPartial) p.part_ml[row0 + g + 8 * r] = make_float2(st.m[r], l_total[r]);
      else p.io.lse[row0 + g + 8 * r] = st.m[r] + fast_log2(l_total[r]);
    }
  }
}

// The merge inside a cluster (the row's CTAs, rank = split): after a cluster barrier, CTA `split`
// merges output chunks [split * 1024 / splits, (split + 1) * 1024 / splits) as merge_splits does,
// reading every CTA's staged partial and (m, l) from its shared memory (all loads of a chunk
// first, in split order: deterministic). The caller keeps every CTA alive until all have read.
template <class Smem>
__device__ __forceinline__ void merge_cluster(const Params& p, Smem& s, int hb, int split, int splits) {
  constexpr int kChunks = kHeads * kDimV / 8;
  const uint32_t staged = smem_addr(&s.ring[0][0] + kHandOverBytes);
  const uint32_t staged_ml = smem_addr(&s.ring[0][0] + kStagedMlOffset);
  const int end = (split + 1) * kChunks / splits;
  for (int c = split * kChunks / splits + int(threadIdx.x); c < end; c += kWgs * kConsumerThreads) {
    const int h = c / (kDimV / 8), d0 = (c % (kDimV / 8)) * 8;
    const uint32_t off = uint32_t(((d0 / kDimsPerWarp) * kHeads * kStagePitch + h * kStagePitch + d0 % kDimsPerWarp) *
                                  sizeof(float));
    float4 a[kMaxClusterSplits], b[kMaxClusterSplits];
    float2 v[kMaxClusterSplits];
#pragma unroll
    for (int j = 0; j < kMaxClusterSplits; ++j) {
      if (j < splits) {
        const uint32_t src = map_shared_rank(staged + off, uint32_t(j));
        a[j] = ld_shared_cluster_v4(src);
        b[j] = ld_shared_cluster_v4(src + 16);
        v[j] = ld_shared_cluster_v2(map_shared_rank(staged_ml + uint32_t(h * sizeof(float2)), uint32_t(j)));
      } else {
        a[j] = b[j] = float4{};
        v[j] = float2{};  // l = 0: skipped
      }
    }
    ChunkMerge m;
#pragma unroll
    for (int j = 0; j < kMaxClusterSplits; ++j) m.add(v[j].x, v[j].y, a[j], b[j]);
    dsa_v2::store_chunk(p, m, hb, h, d0);
  }
}

// The gather floor's consumers: every stage released as soon as it arrived.
template <int Stages, class Smem>
__device__ void drain(Smem& s, int count) {
  const int num_stages = (count + kStageRows - 1) / kStageRows;
  for (Ring<Stages> stage; stage.use < num_stages; ++stage) {
    stage.wait_full(s.full);
    stage.release(s.empty);
  }
}

template <int Stages, bool kCluster, class Smem>
__device__ void consume_and_store(const Params& p, Smem& s, int hb, int split, const RowSlice& rs) {
  const int v = dsa_v2::consumer_wg();
  // Warpgroup v takes tiles v, v + 2, ... of 64 slots, or, when the split holds one tile, its
  // stage v (32 slots): warpgroup 1 has work (the same for the whole CTA) past the first stage.
  const bool pair = rs.count > kStageRows;
  if (v == 1 && !pair) return;             // nothing to compute or hand over; it joins the merge
  auto& part = s.wg[v];
  RowState st;
  float o[kOTiles][4] = {};
  int unit[2] = {0, 0};  // O = o x 2^unit, row by row (pv_mma)
  float l_total[2];
  QOperands q;
  mbar_wait(&s.q_full, 0);
  load_q_operands(s.wg[0].q, q);  // one copy of Q, in warpgroup 0's buffer
  if (pair) named_barrier_sync(kPairBarrier, kWgs * kConsumerThreads);  // warpgroup 0's s_part may overwrite Q now
  else consumer_sync();
  MLAKIT_STAMP(threadIdx.x == 0, kQReady);
  // `stamp`: the phase timeline's stamps of warpgroup 0's last tile (timeline.cuh; no-ops in other builds).
  // kFull (full_c): every one of the kRows slots is valid, as in all but a split's last tile.
  const auto decode = [&](auto rows_c, auto full_c, const RawTile& tile, [[maybe_unused]] bool stamp) {
    constexpr int kRows = decltype(rows_c)::value;
    constexpr bool kFull = decltype(full_c)::value;
    uint32_t pv_scale[kRows / 8];
    qk_partial<kRows / 8, kFull>(&part.s_part[0][0], q, tile, pv_scale);
    consumer_sync();  // all four partials of S are in smem
    MLAKIT_STAMP(stamp, kLastQk);
    float alpha[2];
    dsa_v2::online_softmax<kRows / 8>(part, kFull ? kRows : tile.rows, p.scale_log2, st, alpha);
    MLAKIT_STAMP(stamp, kLastSoftmax);
    pv_mma<kRows / 16, kFull>(part.p, tile, pv_scale, alpha, unit, o);
    MLAKIT_STAMP(stamp, kLastPv);
  };
  if (rs.count <= kTileRows) {  // one tile: warpgroup v takes its stage v (ring slot v, first phase)
    mbar_wait(&s.full[v], 0);  // the first use of buffer v: the first phase
    MLAKIT_STAMP(threadIdx.x == 0, kFirstTile);
    MLAKIT_STAMP(threadIdx.x == 0, kLastTile);
    const RawTile half(s.ring[v], s.ring[v], min(kStageRows, rs.count - v * kStageRows));
    decode(std::integral_constant<int, kStageRows>{}, std::false_type{}, half, threadIdx.x == 0);
    mbar_arrive(&s.empty[v]);
  } else {
    // Warpgroup v: every other tile, from tile v (the phase timeline's stamps: thread 0's walk).
    kernels::timeline::TileWalk walk{v * kTileRows, kWgs * kTileRows, rs.count, threadIdx.x == 0};
    for_each_tile<Stages>(s, rs.count, v, [&](const RawTile& tile) {
      const bool stamp = walk.tile();
      if (tile.rows == kTileRows) decode(std::integral_constant<int, kTileRows>{}, std::true_type{}, tile, stamp);
      else decode(std::integral_constant<int, kTileRows>{}, std::false_type{}, tile, stamp);
    });
  }
  const float unscale[2] = {pow2(unit[0]), pow2(unit[1])};
  dsa_v2::rescale_rows(o, unscale);
  dsa_v2::reduce_row_sums(part, st, l_total);
  MLAKIT_STAMP(threadIdx.x == 0, kRowSums);
  if (pair) combine_warpgroups(s, v, st, l_total, o);
  MLAKIT_STAMP(threadIdx.x == 0, kCombined);
  if (v == 1) return;
  if (rs.splits == 1) store<false, false>(p, s, hb, split, st, l_total, o);
  else store<true, kCluster>(p, s, hb, split, st, l_total, o);
  MLAKIT_STAMP(threadIdx.x == 0, kStored);
}

template <Work W, class Smem>
__device__ void init_barriers(Smem& s) {
  if (threadIdx.x != 0) return;
  for (auto& b : s.full) mbar_init(&b, 32 * kWarpsPerStage<kProducerWarps>);  // the lanes of a stage's warps
  for (auto& b : s.empty) mbar_init(&b, kConsumerThreads);  // one warpgroup per stage
  mbar_init(&s.q_full, kConsumerThreads * kWgs);  // the consumers' cp.async arrivals (load_q_share)
  mbar_fence_init();
}

// An FP8 slot's 656-byte row for FirstTiles (row_slice.cuh), one L2 prefetch per line (raw_row,
// as produce() addresses it).
struct RowLinesFp8 {
  const uint8_t* cache;
  int64_t stride_page;
  int page_size, page_shift;
  __device__ explicit RowLinesFp8(const Params& p)
      : cache(static_cast<const uint8_t*>(p.io.kv_cache)),
        stride_page(p.io.kv_stride_page),
        page_size(p.page_size),
        page_shift(p.page_shift) {}
  __device__ void operator()(int64_t slot, bool on) const {
    prefetch_lines_l2<kRawRowBytes>(raw_row(cache, stride_page, page_size, page_shift, int32_t(slot)), on);
  }
};

template <int Stages, int Producers, Work W, bool kCluster>
__global__ void __launch_bounds__(kThreadsFor<Producers, kWgs>, kCtasPerSm)
    dsa_v2_fp8_kernel(const __grid_constant__ Params p) {
  extern __shared__ __align__(128) uint8_t smem_raw[];
  auto& s = *reinterpret_cast<SmemPlan<Stages>*>(smem_raw);
  constexpr bool kDecode = W == Work::kDecode;
  static_assert(!kCluster || kDecode, "only the decode merges");
  static_assert(Producers == kProducerWarps, "init_barriers counts the arrivals of kProducerWarps");
  // A cluster is the max_splits CTAs of one (row, head group), neighbours along x.
  const int split = kCluster ? blockIdx.x % p.max_splits : blockIdx.x / p.head_groups;
  const int group = kCluster ? blockIdx.x / p.max_splits : blockIdx.x % p.head_groups, t = blockIdx.y;
  const int hb = t * p.head_groups + group, warp = threadIdx.x / 32;  // hb: the head block (v2_fused)
  MLAKIT_STAMP_START(threadIdx.x == 0);
  constexpr int kConsumerWarpsAll = kConsumerWarps * kWgs;
  const bool q_copier = kDecode && warp < kConsumerWarpsAll;  // q_full's arrivals: init_barriers
  // The index row's loads go out first: their round trip overlaps the set-up below.
  int32_t entries[dsa_v2::kIdxPerThread];
  load_entries<dsa_v2::kIdxPerThread>(p.io.sparse_indices + t * p.io.indices_stride_t, p.topk, entries);
  // Its first tiles' rows, prefetched once the row's plan says it is split (the decode only).
  const FirstTiles<kThreadsFor<Producers, kWgs>, RowLinesFp8> first_tiles(
      p.io.sparse_indices + t * p.io.indices_stride_t, p.topk, p.num_slots, split, p.max_splits, p.min_rows, group,
      p.head_groups, RowLinesFp8(p));
  init_barriers<W>(s);  // ordered before first use by slice_entries's barriers
  // One copy of Q for both consumer warpgroups, shared by every consumer warp (as v2_fused's
  // mma.sync path: dsa_v2::load_q_share).
  if (q_copier) dsa_v2::load_q_share<kConsumerWarpsAll>(p, s.wg[0].q, t, group * kHeads, warp);

  const RowSlice rs = slice_entries<kThreadsFor<Producers, kWgs>, dsa_v2::kIdxPerThread>(
      entries, p.num_slots, split, p.max_splits, p.min_rows, merging_whole_rows(p.min_rows), s.slots, s.warp_count,
      [&](const RowSplit& plan) {
        if constexpr (kDecode) first_tiles(plan);
      });
  MLAKIT_STAMP(threadIdx.x == 0, kSliced);
  MLAKIT_STAMP_VALUE(threadIdx.x == 0, kCount, uint64_t(rs.count) | (uint64_t(rs.splits) << 32));
  const bool works = split < rs.splits && rs.n_valid > 0;
  if (q_copier) {  // no copy may land in the smem of a finished CTA
    if (works) cp_async_arrive_on(&s.q_full);
    else cp_async_wait<0>();
  }
  if (!works) {
    if (kDecode && split == 0) dsa_v2::store_empty(p, hb);
    MLAKIT_STAMP_STOP(threadIdx.x == 0);
    return;
  }
  if (warp >= kConsumerWarpsAll) {  // the producer warpgroup leaves once its copies are issued
    set_max_registers<kProducerRegs, false>();
    produce<Stages, Producers, W>(p, s, rs.count, warp - kConsumerWarpsAll);
    return;
  }
  set_max_registers<kConsumerRegs, true>();
  if constexpr (!kDecode) {
    if (dsa_v2::consumer_wg() == 0) drain<Stages>(s, rs.count);  // the floor: one warpgroup sees every stage
    return;
  } else {
    consume_and_store<Stages, kCluster>(p, s, hb, split, rs);
    if (rs.splits == 1) {
      MLAKIT_STAMP_STOP(threadIdx.x == 0);
      return;
    }
    if constexpr (kCluster) {  // the row's other CTAs are idle (exited: arrived) or at the same barriers
      cluster_sync();          // every partial is staged
      merge_cluster(p, s, hb, split, rs.splits);
      cluster_sync();  // nobody reads this CTA's shared memory any more
    } else {  // the consumers merge (the producers are gone): their barrier instead of the CTA's
      const auto consumers_sync = [] { named_barrier_sync(kPairBarrier, kWgs * kConsumerThreads); };
      uint32_t* counters = p.counters + 2 * hb;
      const uint32_t left_before = dsa_v2::wait_for_row(counters, rs.splits, consumers_sync);
      MLAKIT_STAMP(threadIdx.x == 0, kMet);
      dsa_v2::merge_splits(p, hb, split, rs.splits, kWgs * kConsumerThreads);
      MLAKIT_STAMP(threadIdx.x == 0, kMerged);
      dsa_v2::leave_row(counters, rs.splits, left_before);
      MLAKIT_STAMP_STOP(threadIdx.x == 0);
    }
  }
}

}  // namespace mlakit::dsa_v2_fp8
