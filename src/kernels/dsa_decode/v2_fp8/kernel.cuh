// DSA sparse decode over the FP8 cache (v2_fp8): v2_fused's single launch with 656-byte rows.
//
//   grid = (max_splits x head_groups, T) as v2_fused: CTA (s x head_groups + g, t) compacts index
//   row t, takes split s of it and computes heads [16 g, 16 g + 16) (the floor: one group).
//   warps 4..: producers. Each stage of 32 slots is 32 bulk copies of one whole 656-byte row (lane
//   r: row r) into the raw ring, completion counted on the stage's full barrier.
//   warps 0-3: consumers. Per 64-slot tile they dequantize the tile's two raw stages into one bf16
//   tile in v2_fused's row layout (E4M3 x power-of-two scale is exact in bf16), give the raw
//   stages back at once (the producers refill them during the math), and run v2_fused's mma.sync
//   tile (consumer_mma.cuh: QK, online softmax, PV) on the bf16 tile. (Converter warps beside the
//   consumers measured slower: the devlog's step 2.)
//   Splits merge in the kernel exactly as v2_fused's (the same functions).
//   Work::kStreamOnly is the gather floor: the same rows into the same ring, released on arrival,
//   nothing computed or written.
//   Shared memory (traits.h): barriers | Q / partial S 18.7 KB | Stages x 20.5 KB raw ring |
//   bf16 tile 73 KB | P 2.3 KB | slots 10 KB.
// Devlog: docs/kernels/dsa_decode_v2_fp8.md
#pragma once

#include <cstdint>

#include "kernels/dsa_decode/v2_fp8/traits.h"
#include "kernels/dsa_decode/v2_fused/kernel.cuh"

namespace mlakit::dsa_v2_fp8 {

using namespace mlakit::kernels;
using dsa_v2::consumer_sync;
using dsa_v2::RowState;
using dsa_v2::Tile;

// Producer warp `pw`: stages pw, pw + Producers, ... of the CTA's `count` compacted slots.
template <int Stages, int Producers, class Smem>
__device__ void produce(const Params& p, Smem& s, int count, int pw) {
  const auto* cache = static_cast<const uint8_t*>(p.io.kv_cache);
  const uint64_t policy = l2_policy(L2Evict::kFirst);  // each row is read once
  const int lane = threadIdx.x % 32;
  const int num_stages = (count + kStageRows - 1) / kStageRows;
  for (int i = pw; i < num_stages; i += Producers) {
    const int b = i % Stages;
    mbar_wait(&s.empty[b], ((i / Stages) & 1) ^ 1);
    const int rows = min(kStageRows, count - i * kStageRows);
    if (lane == 0) mbar_arrive_expect_tx(&s.full[b], uint32_t(rows * kRawRowBytes));
    else mbar_arrive(&s.full[b]);
    if (lane < rows) {
      const int32_t slot = s.slots[i * kStageRows + lane];  // < 2^31: 32-bit division
      const int32_t page = slot / p.page_size, row = slot - page * p.page_size;
      const uint8_t* src = cache + int64_t(page) * p.io.kv_stride_page + int64_t(row) * kRawRowBytes;
      bulk_copy_g2s(s.ring[b] + lane * kRawRowBytes, src, kRawRowBytes, &s.full[b], policy);
    }
  }
}
static_assert(kStageRows == 32, "one row per producer lane");

// Two E4M3 bytes (byte k and k + 1 of x, selected by `sel`) -> two bf16 bit patterns of value *
// 2^-120: prmt puts byte b in the low byte of a 16-bit lane and its sign, replicated, in the high
// byte; << 4 moves the exponent and mantissa bits to bf16's [4, 10] (the E4M3 exponent becomes the
// low bits of the bf16 exponent, subnormals become bf16 subnormals) and a sign copy to bit 15; the
// mask clears the other sign copies.
template <uint32_t kSel>
__device__ __forceinline__ uint32_t e4m3x2_raw(uint32_t x) {
  uint32_t lanes;
  asm("prmt.b32 %0, %1, 0, %2;" : "=r"(lanes) : "r"(x), "n"(kSel));
  return (lanes << 4) & 0x87f087f0u;
}

__device__ __forceinline__ uint32_t mul_bf16x2(uint32_t a, uint32_t b) {
  uint32_t d;
  asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

// Eight E4M3 bytes times `scale` (a power of two) -> eight bf16, exactly. `mult` is
// 2^120 * scale as a bf16 pair when that is a bf16 (scale <= 2^7), else 0 (the two-step path).
__device__ __forceinline__ uint4 dequantize8(uint2 q, uint32_t mult, float scale) {
  uint32_t w[4] = {e4m3x2_raw<0x9180>(q.x), e4m3x2_raw<0xb3a2>(q.x), e4m3x2_raw<0x9180>(q.y),
                   e4m3x2_raw<0xb3a2>(q.y)};
  if (mult != 0) {
#pragma unroll
    for (int i = 0; i < 4; ++i) w[i] = mul_bf16x2(w[i], mult);
  } else {  // |values| above 448 * 2^7: 2^120 * scale overflows bf16; two exact steps
    const uint32_t m1 = pack_bf16x2(0x1p120f, 0x1p120f), m2 = pack_bf16x2(scale, scale);
#pragma unroll
    for (int i = 0; i < 4; ++i) w[i] = mul_bf16x2(mul_bf16x2(w[i], m1), m2);
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

__device__ __forceinline__ uint32_t one_step_multiplier(float scale) {
  return scale <= 128.f ? pack_bf16x2(0x1p120f * scale, 0x1p120f * scale) : 0u;
}

// The consumer warpgroup dequantizes raw stage `raw` (`rows` valid rows) into `dst` (bf16 rows at
// kKvPitch); rows >= rows become zeros (P = 0 times them must be 0, never NaN). Warp w converts
// rows w, w + 4, ...: lane l the channels [8 l, 8 l + 8) and [256 + 8 l, ...), so every load and
// store of the warp is one contiguous run. Unrolled and branch-free over the rows, so that the
// loads of several rows are in flight together.
__device__ __forceinline__ void dequantize_stage(const uint8_t* raw, int rows, uint16_t* dst) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const uint4 zero = make_uint4(0, 0, 0, 0);
#pragma unroll
  for (int k = 0; k < kStageRows / kConsumerWarps; ++k) {
    const int r = warp + k * kConsumerWarps;
    const uint8_t* row = raw + r * kRawRowBytes;  // read even past `rows`: in the ring, replaced below
    const float4 sc = *reinterpret_cast<const float4*>(row + dsa_fp8::kScaleOffset);
    const auto* q = reinterpret_cast<const uint2*>(row);
    const uint2 qa = q[lane], qb = q[32 + lane];
    const float sa = lane < 16 ? sc.x : sc.y, sb = lane < 16 ? sc.z : sc.w;
    const bool valid = r < rows;
    auto* out = reinterpret_cast<uint4*>(dst + r * kKvPitch);
    out[lane] = valid ? dequantize8(qa, one_step_multiplier(sa), sa) : zero;
    out[32 + lane] = valid ? dequantize8(qb, one_step_multiplier(sb), sb) : zero;
    if (lane < kDimR / 8) out[64 + lane] = valid ? reinterpret_cast<const uint4*>(row + dsa_fp8::kRopeOffset)[lane] : zero;
  }
}
static_assert(kDimV == 64 * 8 && dsa_fp8::kTile == 128, "lanes 0-15 / 16-31 of each half are one scale tile");

// The consumer warps' walk over the CTA's `count` slots: per tile of two raw stages, wait, convert
// into s.tile, release the raw stages, then `body` on the bf16 tile.
template <int Stages, class Smem, class Body>
__device__ __forceinline__ void for_each_tile(Smem& s, int count, Body&& body) {
  const int num_stages = (count + kStageRows - 1) / kStageRows;
  for (int i = 0; i < num_stages; i += kTileStages) {
    const bool two = i + 1 < num_stages;
    consumer_sync();  // every warp is done with the previous tile's rows (its PV reads them)
#pragma unroll
    for (int h = 0; h < kTileStages; ++h) {
      if (h == 1 && !two) break;
      const int b = (i + h) % Stages;
      mbar_wait(&s.full[b], ((i + h) / Stages) & 1);
      dequantize_stage(s.ring[b], min(kStageRows, count - (i + h) * kStageRows), s.tile[h]);
      mbar_arrive(&s.empty[b]);
    }
    consumer_sync();  // the whole tile is converted
    body(Tile{{s.tile[0], two ? s.tile[1] : s.tile[0]}, min(kTileRows, count - i * kStageRows)});
  }
}

// The gather floor's consumers: every stage released as soon as it arrived.
template <int Stages, class Smem>
__device__ void drain(Smem& s, int count) {
  const int num_stages = (count + kStageRows - 1) / kStageRows;
  for (int i = 0; i < num_stages; ++i) {
    mbar_wait(&s.full[i % Stages], (i / Stages) & 1);
    mbar_arrive(&s.empty[i % Stages]);
  }
}

template <int Stages, class Smem>
__device__ void consume_and_store(const Params& p, Smem& s, int hb, int split, const RowSlice& rs) {
  RowState st;
  float o[dsa_v2::kOTiles][4] = {};
  float l_total[2];
  uint32_t qa[dsa_v2::kQkSteps][4];
  dsa_v2::take_q(s, s, qa);
  for_each_tile<Stages>(s, rs.count, [&](const Tile& tile) { dsa_v2::decode_tile(s, qa, tile, p.scale_log2, st, o); });
  dsa_v2::reduce_row_sums(s, st, l_total);
  if (rs.splits == 1) dsa_v2::store_output(p, hb, st, l_total, o);
  else dsa_v2::store_partial(p, hb, split, st, l_total, o);
}

template <Work W, class Smem>
__device__ void init_barriers(Smem& s) {
  if (threadIdx.x != 0) return;
  for (auto& b : s.full) mbar_init(&b, 32);  // the producer lanes (lane 0 with the bytes)
  for (auto& b : s.empty) mbar_init(&b, kConsumerThreads);
  mbar_init(&s.q_full, 32);  // one warp's cp.async arrivals
  mbar_fence_init();
}

template <int Stages, int Producers, Work W>
__global__ void __launch_bounds__(kThreadsFor<Producers>, kCtasPerSm)
    dsa_v2_fp8_kernel(const __grid_constant__ Params p) {
  extern __shared__ __align__(128) uint8_t smem_raw[];
  auto& s = *reinterpret_cast<SmemPlan<Stages>*>(smem_raw);
  constexpr bool kDecode = W == Work::kDecode;
  const int split = blockIdx.x / p.head_groups, group = blockIdx.x % p.head_groups, t = blockIdx.y;
  const int hb = t * p.head_groups + group, warp = threadIdx.x / 32;  // hb: the head block (v2_fused)
  const bool q_loader = kDecode && warp == kConsumerWarps;
  init_barriers<W>(s);  // ordered before first use by slice_row's barriers
  if (q_loader) dsa_v2::load_q<dsa_v2::Mma::kSync>(p, s, t, group * kHeads);

  const RowSlice rs = slice_row<kThreadsFor<Producers>, dsa_v2::kIdxPerThread>(
      p.io.sparse_indices + t * p.io.indices_stride_t, p.topk, p.num_slots, split, p.max_splits, p.min_rows,
      s.slots, s.warp_count);
  const bool works = split < rs.splits && rs.n_valid > 0;
  if (q_loader) {  // no copy may land in the smem of a finished CTA
    if (works) cp_async_arrive_on(&s.q_full);
    else cp_async_wait<0>();
  }
  if (!works) {
    if (kDecode && split == 0) dsa_v2::store_empty(p, hb);
    return;
  }
  if (warp >= kConsumerWarps) {
    produce<Stages, Producers>(p, s, rs.count, warp - kConsumerWarps);
  } else if constexpr (kDecode) {
    consume_and_store<Stages>(p, s, hb, split, rs);
  } else {
    drain<Stages>(s, rs.count);
  }
  if (!kDecode || rs.splits == 1) return;
  uint32_t* counters = p.counters + 2 * hb;
  dsa_v2::wait_for_row(&counters[0], rs.splits);
  dsa_v2::merge_splits(p, hb, split, rs.splits, blockDim.x);
  dsa_v2::leave_row(counters, rs.splits);
}

}  // namespace mlakit::dsa_v2_fp8
