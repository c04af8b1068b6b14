// The CTA body of the DSA decode's 64-heads-per-CTA kernel (tiling field h64): the heads are the M
// of Hopper's wgmma. v2_fused runs it over the bf16 cache, v2_fp8 over the FP8 cache; each gives
// it a row Source (its producer warpgroup and its first-tile prefetch).
//
//   grid and split as v2_fused: CTA (s x head_groups + g, t), head_groups = H / 64.
//   warps 0-7: two consumer warpgroups, the seesaw of kernels/common/wgmma_rows64.cuh over pairs
//   of 64-slot tiles (the ring is two tile slots of two 32-slot stages, interleaved per 64-dim
//   block): warpgroup w computes S of slot w's tile (36 wgmma m64n64k16, A = Q), the running max
//   passes 0 -> 1 -> 0 through shared memory with P, and each warpgroup accumulates O for its 256
//   dims over both tiles (m64n256k16, A = its own P from registers, the other's from smem).
//   warps 8-11: the Source's producers (one warpgroup, its registers lowered by setmaxnreg for the
//   consumers' accumulators), kWarpsPerStage warps per stage, every lane arriving once on the
//   stage's full barrier; the slots are padded to whole pairs of tiles (zeros; a tile B wholly
//   past them is skipped).
//   The end as v2_fused, by the consumer threads: one split writes O / l and the lse, several
//   write partials per 16-head block (split_merge.cuh's layout), both through shared memory in
//   whole rows (store); the splits of a row then merge the CTA's 64 heads in one walk (merge_cta).
// The compacted slots live in the workspace (p.slots): Q, P and four stages fill shared memory.
// Design: docs/kernels/dsa_decode_v2_fused.md.
#pragma once

#include <cstdint>

#include "kernels/common/consumer_h16.cuh"
#include "kernels/common/ring.cuh"
#include "kernels/common/wgmma_rows64.cuh"
#include "kernels/dsa_decode/common/h64_traits.h"
#include "kernels/dsa_decode/common/row_slice.cuh"
#include "kernels/dsa_decode/common/split_merge.cuh"

namespace mlakit::dsa_h64 {

using namespace mlakit::kernels;
using namespace mlakit::dsa_ring;
using h16::consumer_wg;
using h16::wg_warp;
using rows64::copy_rows;
using rows64::pair_sync;
using rows64::RowPtrs;
using rows64::Rows;

// Warp `w` of the CTA's kThreads / 32: heads w, w + 12, ... of Q (issued only; the caller tracks
// completion), with no cache hint (docs/knowledge/copies.md). Every warp
// takes a share before the index row's scan, whose barriers wait for the slowest warp: the four
// producer warps alone would issue 36 copies per lane before reaching it.
__device__ inline void load_q(const Params& p, SmemPlan& s, int t, int head0, int w) {
  const DsaTensors& x = p.io;
  const auto* q_nope = static_cast<const uint16_t*>(x.q_nope) + t * x.q_nope_stride_t + head0 * x.q_nope_stride_h;
  const auto* q_pe = static_cast<const uint16_t*>(x.q_pe) + t * x.q_pe_stride_t + head0 * x.q_pe_stride_h;
  copy_rows(s.q, kQBlockBytes, w, kCtaHeads, kThreads / 32,
            [&](int h) { return RowPtrs{q_nope + h * x.q_nope_stride_h, q_pe + h * x.q_pe_stride_h, true}; });
}

// Stages of `count` slots: one per 32, rounded up to whole pairs of 64-slot tiles.
__device__ __forceinline__ int num_stages_of(int count) {
  return ((count + kStageRows - 1) / kStageRows + kStages - 1) / kStages * kStages;
}

// The producer warpgroup's shape: the warp pair pw / 2 fills every other stage (pair 0 the even
// ones), and within a stage warp pw % 2 the 16 rows from kRowsPerWarp * (pw % 2): lane group
// g = lane / 8 rows g, g + 4, g + 8, g + 12 of the warp's share.
constexpr int kWarpsPerStage = 2;
constexpr int kWarpSets = kProducers / kWarpsPerStage;
constexpr int kRowsPerWarp = kStageRows / kWarpsPerStage;  // 16
constexpr int kRowsPerLane = kRowsPerWarp / 4;  // 4: four lane groups of 8 per warp
static_assert(kWarpSets * kWarpsPerStage == kProducers && kStages % kWarpSets == 0, "warp sets take whole stages");
static_assert(kRowsPerLane * 4 * kWarpsPerStage == kStageRows, "every row of a stage has one lane group");
// The consumer warpgroups' walk over the CTA's `count` slots, the seesaw (rows64::pair_seesaw):
// tile 2 i + w of the slots is warpgroup w's. Leaves O (this warpgroup's 256 dims of the lane's
// two heads, wgmma accumulator layout) and the state.
__device__ inline void consume(SmemPlan& s, int count, float scale_log2, Rows& st, float (&o)[128]) {
  const int wg = consumer_wg();
  mbar_wait(&s.q_full, 0);
  fence_async_smem();  // cp.async wrote Q; wgmma reads it
  const int pairs = num_stages_of(count) / kStages;
  for (int i = 0; i < pairs; ++i) {
    const int rows = max(0, min(kTileRows, count - (2 * i + wg) * kTileRows));
    const int lim[2] = {rows, rows};
    const bool b_empty = (2 * i + 1) * kTileRows >= count;
    rows64::pair_seesaw(s, lim, scale_log2, st, o, Ring<kStages>{i * kStages}.full_parity(), b_empty, [] {});
  }
}

// Each head's sum over both warpgroups (fixed order), the same in both.
__device__ inline void total_sums(SmemPlan& s, const Rows& st, float (&l_total)[2]) {
  rows64::total_sums(s, st, l_total);
}

// One split: O / l as bf16 and the lse; several: the unnormalised partial of each 16-head block
// hb = 4 block + w, O as bf16 (part_o_bf16) and (m, l) fp32 (consumer threads). O goes through
// shared memory (the ring, idle once total_sums has met both warpgroups) so that a warp's store
// is 512 contiguous bytes of one row: the fragments' own stores (a quad's 64 bytes of each of 8
// rows) touch eight rows per instruction, and the CTA's 64 KB drains far slower that way
// (docs/knowledge/epilogue.md).
// The staged rows are 1 KB and 16 bytes apart, so that a warp's fragment writes (8 rows x 4
// lanes) fall in 32 distinct banks.
constexpr int kStagedPitch = kDimV * 2 + 16;
static_assert(kCtaHeads * kStagedPitch <= kStages * kStageBytes, "the staged output fits the ring");
__device__ inline void store(const Params& p, SmemPlan& s, int block, int split, int splits, const Rows& st,
                             const float (&l_total)[2], const float (&o)[128]) {
  const int wg = consumer_wg(), lane = threadIdx.x % 32, g = lane / 4, q = lane % 4, w = wg_warp();
  const bool whole = splits == 1;
  // Row r of the CTA's 64 in the output (one split) or in its block's partials.
  const auto out_row = [&](int r) {
    const int hb = block * (kCtaHeads / kHeads) + r / kHeads;
    return whole ? int64_t(hb) * kHeads + r % kHeads : block_rows(p, hb).first + split * kHeads + r % kHeads;
  };
  uint8_t* staged = &s.ring[0][0];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = 16 * w + g + 8 * r;
    // Head (block % head_groups) x 64 + row: the CTA's 64 heads are consecutive.
    const auto head = [&] { return block % p.head_groups * kCtaHeads + row; };
    const float k = whole ? fast_rcp(l_total[r] + sink_share(p.io.attn_sink, head, st.m[r])) : 1.f;
    uint8_t* dst = staged + row * kStagedPitch + (wg * kDimsPerWg + 2 * q) * 2;
#pragma unroll
    for (int j = 0; j < 32; ++j)  // n8 tile j: dims 8 j + 2 q, + 1 of the warpgroup's 256
      *reinterpret_cast<uint32_t*>(dst + 16 * j) = pack_bf16x2(o[4 * j + 2 * r] * k, o[4 * j + 2 * r + 1] * k);
    if (wg == 0 && q == 0) {
      if (whole) p.io.lse[out_row(row)] = st.m[r] + fast_log2(l_total[r]);
      else p.part_ml[out_row(row)] = make_float2(st.m[r], l_total[r]);
    }
  }
  pair_sync();
  uint16_t* out = whole ? static_cast<uint16_t*>(p.io.output) : part_o_bf16(p);
  constexpr int kChunks = kDimV * 2 / 16;  // 16-byte chunks per row
#pragma unroll 4
  for (int i = threadIdx.x; i < kCtaHeads * kChunks; i += kWgs * kConsumerThreads) {
    const int row = i / kChunks, c = i % kChunks;
    reinterpret_cast<uint4*>(out + out_row(row) * kDimV)[c] =
        *reinterpret_cast<const uint4*>(staged + row * kStagedPitch + c * 16);
  }
}

// The CTA's 64 heads merged in one walk: split s of S merges output chunks [s 4096 / S,
// (s + 1) 4096 / S), a chunk being 8 dims of one head (kernel.cuh's merge_splits, called for the
// four 16-head blocks in turn, waited for an L2 round trip per block). A thread takes K chunks at
// a time with the partials of B splits each loaded before any is folded; the splits fold in order,
// as in merge_splits (deterministic).
template <int K, int B>
__device__ inline void merge_cta(const Params& p, int block, int split, int splits) {
  constexpr int kChunksPerHead = kDimV / 8, kChunks = kCtaHeads * kChunksPerHead;
  constexpr int kMergers = kWgs * kConsumerThreads;
  const int begin = split * kChunks / splits, end = (split + 1) * kChunks / splits;
  const uint16_t* part = part_o_bf16(p);
  for (int c0 = begin + int(threadIdx.x); c0 < end; c0 += K * kMergers) {
    ChunkMerge m[K];
    int64_t base[K], stride[K];
    bool in[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int c = c0 + k * kMergers, head = c / kChunksPerHead;
      const SplitRows rows = block_rows(p, block * (kCtaHeads / kHeads) + head / kHeads);
      in[k] = c < end;
      base[k] = rows.first + head % kHeads;
      stride[k] = rows.stride;
    }
    for (int j0 = 0; j0 < splits; j0 += B) {
      uint4 x[K][B];
      float2 v[K][B];
#pragma unroll
      for (int k = 0; k < K; ++k)  // every load of the round first
#pragma unroll
        for (int u = 0; u < B; ++u) {
          const bool load = in[k] && j0 + u < splits;
          const int64_t row = base[k] + (j0 + u) * stride[k];
          const int d0 = ((c0 + k * kMergers) % kChunksPerHead) * 8;
          x[k][u] = load ? *reinterpret_cast<const uint4*>(part + row * kDimV + d0) : make_uint4(0, 0, 0, 0);
          v[k][u] = load ? p.part_ml[row] : float2{};
        }
#pragma unroll
      for (int k = 0; k < K; ++k)
#pragma unroll
        for (int u = 0; u < B; ++u)  // l = 0 past the splits
          m[k].add(v[k][u].x, v[k][u].y, unpack_bf16x4(x[k][u].x, x[k][u].y), unpack_bf16x4(x[k][u].z, x[k][u].w));
    }
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int c = c0 + k * kMergers, head = c / kChunksPerHead;
      if (in[k])
        store_chunk(p, m[k], block * (kCtaHeads / kHeads) + head / kHeads, head % kHeads, (c % kChunksPerHead) * 8);
    }
  }
}

// One CTA of a 64-head kernel reading its rows from Source (the body of dsa_v2_h64_kernel and of
// v2_fp8's). FewSplits: the twin for launches of 2-4 splits per row, whose merge takes four chunks
// per thread at a time, so that a thread waits for one L2 round trip instead of one per chunk.
template <bool FewSplits, class Source>
__device__ __forceinline__ void run_cta(const typename Source::Params& p) {
  static_assert(Source::kProducerRegs * kProducers * 32 + Source::kConsumerRegs * kWgs * kConsumerThreads <=
                    kThreads * (65536 / kThreads / 8 * 8),
                "setmaxnreg redistributes the CTA's launch allocation (168 registers per thread)");
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  auto& s = rows64::plan_at<SmemPlan>(smem_raw);
  const int split = blockIdx.x / p.head_groups, group = blockIdx.x % p.head_groups, t = blockIdx.y;
  const int block = t * p.head_groups + group;  // 16-head blocks 4 block .. 4 block + 3
  constexpr int kBlocksPerCta = kCtaHeads / kHeads;
  const int warp = threadIdx.x / 32;
  const bool producer = warp >= kWgs * kConsumerWarps;
  const int pw = warp - kWgs * kConsumerWarps;
  timeline::phase(timeline::kStart);
  // The index row's loads go out first: their round trip overlaps the set-up below.
  int32_t entries[kIdxPerThread];
  load_entries<kIdxPerThread>(p.io.sparse_indices + t * p.io.indices_stride_t, p.topk, entries);
  // Its first tiles' rows, prefetched once the row's plan says it is split (row_slice.cuh).
  const FirstTiles<kThreads, decltype(Source::lines(p))> first_tiles(
      p.io.sparse_indices + t * p.io.indices_stride_t, p.topk, p.num_slots, split, p.max_splits, p.min_rows, group,
      p.head_groups, Source::lines(p));
  if (threadIdx.x == 0) {
    for (auto& b : s.full) mbar_init(&b, kWarpsPerStage * 32);  // every lane of the stage's warps
    for (auto& b : s.empty) mbar_init(&b, kWgs * kConsumerThreads);
    mbar_init(&s.q_full, kThreads);  // every thread's cp.async arrival (load_q)
    for (auto& b : s.hand) mbar_init(&b, rows64::kWgThreads);
    mbar_fence_init();
  }
  load_q(p, s, t, group * kCtaHeads, warp);

  int32_t* slots = p.slots + (int64_t(t) * gridDim.x + blockIdx.x) * p.topk;
  const RowSlice rs = slice_entries<kThreads, kIdxPerThread>(entries, p.num_slots, split, p.max_splits, p.min_rows,
                                                             merging_whole_rows(p.min_rows), slots, s.warp_count,
                                                             first_tiles);
  const bool works = split < rs.splits && rs.n_valid > 0;
  timeline::phase(timeline::kSliced);
  timeline::phase_value(timeline::kCount, uint64_t(rs.count) | (uint64_t(rs.splits) << 32));
  // No copy may land in the smem of a finished CTA.
  if (works) cp_async_arrive_on(&s.q_full);
  else cp_async_wait<0>();
  if (!works) {
    if (split == 0)
      for (int w = 0; w < kBlocksPerCta; ++w) store_empty(p, block * kBlocksPerCta + w);
    timeline::phase(timeline::kStop);
    return;
  }
  if (producer) {  // the producer warpgroup leaves once its copies are issued (consumers wait for them)
    set_max_registers<Source::kProducerRegs, false>();
    Source::produce(p, s, slots, rs.count, pw);
    return;
  }
  set_max_registers<Source::kConsumerRegs, true>();
  {
    Rows st;
    float o[128] = {};
    float l_total[2];
    consume(s, rs.count, p.scale_log2, st, o);
    total_sums(s, st, l_total);
    store(p, s, block, split, rs.splits, st, l_total, o);
    timeline::phase(timeline::kStored);
  }
  if (rs.splits == 1) {
    timeline::phase(timeline::kStop);
    return;
  }
  uint32_t* counters = p.counters + 2 * block;
  const uint32_t left_before = wait_for_row(counters, rs.splits, [] { pair_sync(); });
  timeline::phase(timeline::kMet);
  // 2-4 splits: 1,024-2,048 chunks per CTA, four per thread at a time; more: two, the partials of
  // eight splits of each at a time.
  if constexpr (FewSplits) merge_cta<4, 4>(p, block, split, rs.splits);
  else merge_cta<2, kMergeBatch>(p, block, split, rs.splits);
  timeline::phase(timeline::kMerged);
  leave_row(counters, rs.splits, left_before);
  timeline::phase(timeline::kStop);
}

}  // namespace mlakit::dsa_h64
