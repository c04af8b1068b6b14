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
//   ran in bf16: docs/kernels/dsa_decode_v2_fp8.md.)
//   Splits merge in the kernel as v2_fused's (the same functions), by the 256 consumer threads, or
//   (tiling c1, kCluster) inside a thread-block cluster of the row's CTAs, each reading the others'
//   staged partials from their shared memory (merge_cluster; slower where measured, for the tuner).
//   Work::kStreamOnly is the gather floor: the same rows into the same ring, released on arrival
//   by warpgroup 0, nothing computed or written.
//   Shared memory (traits.h): barriers | per consumer warpgroup: reductions, Q / partial S
//   18.7 KB, P 2.3 KB (and v2_fused's zero row, 1 KB, unused here) | Stages x 20.5 KB raw ring |
//   slots 10 KB.
// Design and measurements: docs/kernels/dsa_decode_v2_fp8.md
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/common/bf16x2.cuh"
#include "kernels/common/cluster.cuh"
#include "kernels/common/timeline.cuh"
#include "kernels/dsa_decode/v2_fp8/consumer.cuh"
#include "kernels/dsa_decode/v2_fp8/traits.h"
#include "kernels/common/consumer_h16.cuh"
#include "kernels/common/ring.cuh"
#include "kernels/dsa_decode/common/gather_ring.cuh"
#include "kernels/dsa_decode/common/row_slice.cuh"
#include "kernels/dsa_decode/common/split_merge.cuh"

namespace mlakit::dsa_v2_fp8 {

using namespace mlakit::kernels;
using h16::consumer_sync;
using h16::kDimsPerWarp;
using h16::kOTiles;
using h16::kPPitch;
using h16::kSPitch;
using h16::kSlotTiles;
using h16::RowState;
using h16::wg_warp;

// Slot `slot`'s 656-byte row: page slot / page_size (a shift when page_shift >= 0), row slot %
// page_size (slot < 2^31: 32-bit division).
__device__ __forceinline__ const uint8_t* raw_row(const uint8_t* cache, int64_t stride_page, int page_size,
                                                  int page_shift, int32_t slot) {
  const int32_t page = page_shift >= 0 ? slot >> page_shift : slot / page_size;
  return cache + int64_t(page) * stride_page + int64_t(slot - page * page_size) * kRawRowBytes;
}

// Producer warp `pw`: its stages of the ring and its rows of each (dsa_ring::for_each_own_stage:
// two warps per stage, each half of its rows, so that the first tile's rows are requested by all
// four warps at once: docs/knowledge/copies.md). Lane 0 raises the full barrier's byte count for
// its warp's rows first, the lanes of the valid rows issue their copies; in the decode the warp
// then zeroes the latent bytes of its share of a partial stage's rows up to the next multiple of
// 16 while the copies fly (P V's last k16 step widens them, times a P of 0, and a stale byte could
// widen to a NaN, E4M3 0x7f); every lane arrives last, its release publishing its zeros. A
// partial stage is the CTA's last, so no later copy lands on the zeroed bytes. (Zeroing first
// delayed a short row's copies; a zero row read by P V in place of the rows past the valid ones
// instead cost the consumers a select per slot, on their critical path.)
template <int Stages, int Producers, Work W, class Smem>
__device__ void produce(const Params& p, Smem& s, int count, int pw) {
  const auto* cache = static_cast<const uint8_t*>(p.io.kv_cache);
  const uint64_t policy = l2_policy(L2Evict::kFirst);  // each row is read once
  const int lane = threadIdx.x % 32;
  for_each_own_stage<Stages, Producers>(count, s.empty, pw, [&](const OwnStage& st) {
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
    if (W == Work::kDecode) {
      constexpr int kChunks = dsa_fp8::kScaleOffset / 16;  // 16-byte chunks of a row's latent bytes
      const int zero_end = min(st.r1, (st.rows + 15) / 16 * 16);
      for (int c = max(st.rows, st.r0) * kChunks + lane; c < zero_end * kChunks; c += 32) {
        auto* chunk = stage + (c / kChunks) * kRawRowBytes + (c % kChunks) * 16;
        *reinterpret_cast<uint4*>(chunk) = make_uint4(0u, 0u, 0u, 0u);
      }
    }
    mbar_arrive(full);
  });
}
static_assert(kStageRows == 32, "a stage's rows are split between the lanes of its warps");

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
// output's scaled by 1 / l, the partial's as they are (bf16 partials: half the bytes to store and
// merge, docs/knowledge/epilogue.md; the fp32 partial had to be staged: a lane's 32 bytes as two
// 16-byte halves touched half of 32 sectors per store). In a cluster (kCluster) each warp stages
// its fp32 16 x 128 partial in the ring, behind combine_warpgroups' area (every stage is consumed
// and the warpgroup is past reduce_row_sums' barrier), where merge_cluster reads it with its (m, l).
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
    const auto head = [&] { return hb * kHeads % p.num_heads + g + 8 * r; };
    const float k = kPartial ? 1.f : fast_rcp(l_total[r] + sink_share(p.io.attn_sink, head, st.m[r]));  // a partial stays unnormalised
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
        } else {  // bf16 rows: the output, or the partial (dsa_split::part_o_bf16)
          uint16_t* out = kPartial ? dsa_split::part_o_bf16(p) : static_cast<uint16_t*>(p.io.output);
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
    dsa_split::store_chunk(p, m, hb, h, d0);
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
  const int v = h16::consumer_wg();
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
  // kFull (full_c): every one of the kRows slots is valid, as in all but a split's last tile.
  const auto decode = [&](auto rows_c, auto full_c, const RawTile& tile) {
    constexpr int kRows = decltype(rows_c)::value;
    constexpr bool kFull = decltype(full_c)::value;
    uint32_t pv_scale[kRows / 8];
    qk_partial<kRows / 8, kFull>(&part.s_part[0][0], q, tile, pv_scale);
    consumer_sync();  // all four partials of S are in smem
    float alpha[2];
    h16::online_softmax<kRows / 8>(part, kFull ? kRows : tile.rows, p.scale_log2, st, alpha);
    pv_mma<kRows / 16, kFull>(part.p, tile, pv_scale, alpha, unit, o);
  };
  if (rs.count <= kTileRows) {  // one tile: warpgroup v takes its stage v (ring slot v, first phase)
    mbar_wait(&s.full[v], 0);  // the first use of buffer v: the first phase
    const RawTile half(s.ring[v], s.ring[v], min(kStageRows, rs.count - v * kStageRows));
    decode(std::integral_constant<int, kStageRows>{}, std::false_type{}, half);
    mbar_arrive(&s.empty[v]);
  } else {
    // Warpgroup v: every other tile, from tile v.
    for_each_tile<Stages>(s, rs.count, v, [&](const RawTile& tile) {
      if (tile.rows == kTileRows) decode(std::integral_constant<int, kTileRows>{}, std::true_type{}, tile);
      else decode(std::integral_constant<int, kTileRows>{}, std::false_type{}, tile);
    });
  }
  const float unscale[2] = {pow2(unit[0]), pow2(unit[1])};
  h16::rescale_rows(o, unscale);
  h16::reduce_row_sums(part, st, l_total);
  if (pair) combine_warpgroups(s, v, st, l_total, o);
  if (v == 1) return;
  if (rs.splits == 1) store<false, false>(p, s, hb, split, st, l_total, o);
  else store<true, kCluster>(p, s, hb, split, st, l_total, o);
  timeline::phase(timeline::kStored);
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
  timeline::phase(timeline::kStart);
  constexpr int kConsumerWarpsAll = kConsumerWarps * kWgs;
  const bool q_copier = kDecode && warp < kConsumerWarpsAll;  // q_full's arrivals: init_barriers
  // The index row's loads go out first: their round trip overlaps the set-up below.
  int32_t entries[dsa_split::kIdxPerThread];
  load_entries<dsa_split::kIdxPerThread>(p.io.sparse_indices + t * p.io.indices_stride_t, p.topk, entries);
  // Its first tiles' rows, prefetched once the row's plan says it is split (the decode only).
  const FirstTiles<kThreadsFor<Producers, kWgs>, RowLinesFp8> first_tiles(
      p.io.sparse_indices + t * p.io.indices_stride_t, p.topk, p.num_slots, split, p.max_splits, p.min_rows, group,
      p.head_groups, RowLinesFp8(p));
  init_barriers<W>(s);  // ordered before first use by slice_entries's barriers
  // One copy of Q for both consumer warpgroups, shared by every consumer warp (as v2_fused's
  // mma.sync path: dsa_split::load_q_share).
  if (q_copier) dsa_split::load_q_share<kConsumerWarpsAll>(p, s.wg[0].q, t, group * kHeads, warp);

  const RowSlice rs = slice_entries<kThreadsFor<Producers, kWgs>, dsa_split::kIdxPerThread>(
      entries, p.num_slots, split, p.max_splits, p.min_rows, merging_whole_rows(p.min_rows), s.slots, s.warp_count,
      [&](const RowSplit& plan) {
        if constexpr (kDecode) first_tiles(plan);
      });
  timeline::phase(timeline::kSliced);
  timeline::phase_value(timeline::kCount, uint64_t(rs.count) | (uint64_t(rs.splits) << 32));
  const bool works = split < rs.splits && rs.n_valid > 0;
  if (q_copier) {  // no copy may land in the smem of a finished CTA
    if (works) cp_async_arrive_on(&s.q_full);
    else cp_async_wait<0>();
  }
  if (!works) {
    if (kDecode && split == 0) dsa_split::store_empty(p, hb);
    timeline::phase(timeline::kStop);
    return;
  }
  if (warp >= kConsumerWarpsAll) {  // the producer warpgroup leaves once its copies are issued
    set_max_registers<kProducerRegs, false>();
    produce<Stages, Producers, W>(p, s, rs.count, warp - kConsumerWarpsAll);
    return;
  }
  set_max_registers<kConsumerRegs, true>();
  if constexpr (!kDecode) {
    if (h16::consumer_wg() == 0) drain<Stages>(s, rs.count);  // the floor: one warpgroup sees every stage
    return;
  } else {
    consume_and_store<Stages, kCluster>(p, s, hb, split, rs);
    if (rs.splits == 1) {
      timeline::phase(timeline::kStop);
      return;
    }
    if constexpr (kCluster) {  // the row's other CTAs are idle (exited: arrived) or at the same barriers
      cluster_sync();          // every partial is staged
      merge_cluster(p, s, hb, split, rs.splits);
      cluster_sync();  // nobody reads this CTA's shared memory any more
    } else {  // the consumers merge (the producers are gone): their barrier instead of the CTA's
      const auto consumers_sync = [] { named_barrier_sync(kPairBarrier, kWgs * kConsumerThreads); };
      uint32_t* counters = p.counters + 2 * hb;
      const uint32_t left_before = dsa_split::wait_for_row(counters, rs.splits, consumers_sync);
      timeline::phase(timeline::kMet);
      dsa_split::merge_splits(p, hb, split, rs.splits, kWgs * kConsumerThreads);
      timeline::phase(timeline::kMerged);
      dsa_split::leave_row(counters, rs.splits, left_before);
      timeline::phase(timeline::kStop);
    }
  }
}

}  // namespace mlakit::dsa_v2_fp8
