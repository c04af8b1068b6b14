// DSA sparse decode v2: one launch for every T. Each token's row is split over CTAs by its own
// valid count (on the GPU), rows are gathered by a producer warp into a deep ring, and the splits
// of a row merge their partials inside the kernel.
//
//   grid = (max_splits x head_groups, T); CTA (s x head_groups + g, t) reads the whole index row t,
//   counts its valid slots n, takes split s of split_row(n) (idle when s >= splits: it exits at
//   once) and computes heads [C g, C g + C), C = 16 x Wgs heads per CTA. The head groups of one
//   split are neighbours in the grid, so they run together and all but the first read the split's
//   rows from L2. Output, lse and partials are per 16-head block hb = t x H / 16 + h / 16; the
//   counters per CTA group (t x head_groups + g).
//   Pooled (a tiling's b1, T <= 8): every CTA reads all T rows instead, and the splits of a long
//   row may go to the CTAs the short rows of other tokens leave (common/row_ring.h); a CTA then
//   computes heads of its group for that row, loads that token's Q, and keeps its partial at the
//   row's compact split index.
//   warps 0-3 (0-7: two warpgroups, 16 heads each): consumers (kernels/common/consumer_h16.cuh): QK, online
//   softmax, PV on 64-slot tiles (32-slot ones for a tile of one stage); P V reads a zero row in
//   place of the rows past a tile's valid ones, so no stage is ever zeroed.
//   the warps after them: producers (common/gather_ring.cuh): Q, then the split's rows, stage by
//   stage, by cp.async.bulk and/or 16-byte cp.async, completion counted on mbarriers.
//   One split: bf16 output and lse written directly. Several: each CTA writes its unnormalised
//   (O, m, l) partial to the workspace (O as bf16, m and l fp32), the row's CTAs meet at a counter
//   there (all co-resident: the launch is cooperative), and CTA s merges its share of the 16 x 64
//   output chunks in split order (deterministic); the last CTA to leave sets the counters back to
//   zero. (Per CTA group: the head groups of a row never wait for each other.)
//   Shared memory (traits.h, SmemPlan): barriers | per consumer warpgroup: reductions, Q / partial S
//   18.7 KB, P 2.3 KB, a zero row 1 KB | Stages x 36.5 KB ring | slots 10 KB.
// Design: docs/kernels/dsa_decode_v2_fused.md
#pragma once

#include <cstdint>

#include "kernels/common/bf16x2.cuh"
#include "kernels/common/chunk_merge.cuh"
#include "kernels/common/consumer_h16.cuh"
#include "kernels/common/timeline.cuh"
#include "kernels/dsa_decode/common/gather_ring.cuh"
#include "kernels/dsa_decode/common/row_slice.cuh"
#include "kernels/dsa_decode/common/split_merge.cuh"
#include "kernels/dsa_decode/v2_fused/traits.h"

namespace mlakit::dsa_v2 {

template <Gather G, int Producers, int Wgs, class Smem>
__device__ void init_barriers(Smem& s, uint32_t q_arrivals) {
  if (threadIdx.x != 0) return;
  for (auto& b : s.full) mbar_init(&b, kFullArrivals<G, Producers>);
  for (auto& b : s.empty) mbar_init(&b, kConsumerThreads * Wgs);  // every consumer thread releases
  mbar_init(&s.q_full, q_arrivals);  // the cp.async arrivals of the threads that copy Q
  mbar_fence_init();
}

// Heads [head0, head0 + 16) of token t's Q into a warpgroup's `part` by cp.async where the
// consumers do not load it (pooled rows, whose CTA may change rows), issued by the Q loader before
// the index row is known; the warp arrives on q_full (working CTA) or waits for the copies (idle
// CTA: no copy may land in the smem of a finished CTA) once the split is known.
template <class Part>
__device__ void load_q(const Params& p, Part& part, int t, int head0) {
  const DsaTensors& x = p.io;
  const auto* q_nope = static_cast<const uint16_t*>(x.q_nope) + t * x.q_nope_stride_t + head0 * x.q_nope_stride_h;
  const auto* q_pe = static_cast<const uint16_t*>(x.q_pe) + t * x.q_pe_stride_t + head0 * x.q_pe_stride_h;
  load_query(q_nope, x.q_nope_stride_h, q_pe, x.q_pe_stride_h, kHeads, part.q);
}

// Producer warp `pw`: its stages of the split.
template <Gather G, int Stages, int Producers, class Smem>
__device__ void produce(const Params& p, Smem& s, int count, int pw) {
  produce_rows<G, Stages, Producers>(row_source(p.io), s.slots, count, &s.ring[0][0], s.full, s.empty, pw);
}

template <bool Pooled>
__device__ __forceinline__ SplitRows split_rows(const Params& p, int hb, int first_split, int block_in_token,
                                                int blocks_per_token) {
  if constexpr (!Pooled) return block_rows(p, hb);
  return {(int64_t(first_split) * blocks_per_token + block_in_token) * kHeads, int64_t(blocks_per_token) * kHeads};
}

// The mma.sync fragments of O give a lane two bf16 (4 bytes) of a row per n8 tile: a quad's 16
// contiguous bytes fill half a sector, and a warp's store touches 8 rows: stored straight, the
// output drains slowly, on every row's critical path (docs/knowledge/epilogue.md). So each warp
// stages its 16 x 128 block in its warpgroup's Q / partial-S area (free: reduce_row_sums' barrier
// is behind every read of it) and writes whole rows, 512 contiguous bytes per instruction. The
// staged rows are 136 bf16 apart, so that a quad's pieces of 8 rows land in distinct banks.
constexpr int kStageOutPitch = kDimsPerWarp + 8;
static_assert(kConsumerWarps * kHeads * kStageOutPitch * 2 <= sizeof(WgPart::q),
              "each warp's staged block fits in its warpgroup's Q / partial-S area");

// Each warp's 16 x 128 block of O, row r of its fragments times scale[r] (the output's 1 / l, a
// partial's 1), as bf16 into the 16 rows of kDimV bf16 at dst (this warp's 128 columns): staged,
// then whole rows stored.
template <class Part>
__device__ __forceinline__ void store_rows_bf16(Part& part, uint16_t* dst, const float (&scale)[2],
                                                const float (&o)[kOTiles][4]) {
  const int lane = threadIdx.x % 32, warp = wg_warp(), g = lane / 4, q = lane % 4;
  uint16_t* stage = part.q + warp * kHeads * kStageOutPitch;
#pragma unroll
  for (int r = 0; r < 2; ++r)
#pragma unroll
    for (int j = 0; j < kOTiles; ++j)
      *reinterpret_cast<uint32_t*>(stage + (g + 8 * r) * kStageOutPitch + 8 * j + 2 * q) =
          pack_bf16x2(o[j][2 * r] * scale[r], o[j][2 * r + 1] * scale[r]);
  __syncwarp();
  // Two rows of 256 bytes per instruction: lane L moves 16-byte chunk L % 16 of row 2 i + L / 16.
  uint16_t* out = dst + warp * kDimsPerWarp;
#pragma unroll
  for (int i = 0; i < kHeads / 2; ++i) {
    const int row = 2 * i + lane / 16, chunk = lane % 16;
    *reinterpret_cast<uint4*>(out + row * kDimV + chunk * 8) =
        *reinterpret_cast<const uint4*>(stage + row * kStageOutPitch + chunk * 8);
  }
}

// One split: O / (l + the sink's share) as bf16 and lse = m + log2(l) (consumer threads, after
// reduce_row_sums).
template <class Part>
__device__ void store_output(const Params& p, Part& part, int hb, const RowState& st, const float (&l_total)[2],
                             const float (&o)[kOTiles][4]) {
  const int lane = threadIdx.x % 32, g = lane / 4;
  const auto head = [&](int r) { return [&, r] { return hb * kHeads % p.num_heads + g + 8 * r; }; };
  const float inv[2] = {fast_rcp(l_total[0] + sink_share(p.io.attn_sink, head(0), st.m[0])),
                        fast_rcp(l_total[1] + sink_share(p.io.attn_sink, head(1), st.m[1]))};
  store_rows_bf16(part, static_cast<uint16_t*>(p.io.output) + int64_t(hb) * kHeads * kDimV, inv, o);
  if (wg_warp() == 0 && lane % 4 == 0) {
    p.io.lse[hb * kHeads + g] = st.m[0] + fast_log2(l_total[0]);
    p.io.lse[hb * kHeads + g + 8] = st.m[1] + fast_log2(l_total[1]);
  }
}

// Several splits: the unnormalised partial (O, m, l) of split s (consumer threads, after
// reduce_row_sums), O as bf16 staged like the output.
template <class Part>
__device__ void store_partial(const Params& p, Part& part, SplitRows rows, int split, const RowState& st,
                              const float (&l_total)[2], const float (&o)[kOTiles][4]) {
  const int64_t row0 = rows.first + split * rows.stride;
  const float one[2] = {1.f, 1.f};
  store_rows_bf16(part, part_o_bf16(p) + row0 * kDimV, one, o);
  const int lane = threadIdx.x % 32, g = lane / 4;
  if (wg_warp() == 0 && lane % 4 == 0) {
    p.part_ml[row0 + g] = make_float2(st.m[0], l_total[0]);
    p.part_ml[row0 + g + 8] = make_float2(st.m[1], l_total[1]);
  }
}

// A consumer warpgroup's part of one split: its 16 heads over the tiles, then the result stored
// directly (one split) or as a partial (several).
template <int Stages, class Smem>
__device__ void consume_and_store(const Params& p, Smem& s, WgPart& part, int hb, SplitRows rows, int split,
                                  const RowSlice& rs) {
  RowState st;
  float o[kOTiles][4] = {};
  float l_total[2];
  consume_rows<Stages>(s, part, rs.count, p.scale_log2, st, o);
  reduce_row_sums(part, st, l_total);
  if (rs.splits == 1) store_output(p, part, hb, st, l_total, o);
  else store_partial(p, part, rows, split, st, l_total, o);
}

// Who copies Q, before the index row's scan: the consumer warps, a share each (load_q_share); with
// pooled rows, whose CTA may change rows, the Q loader (the first producer warp) all of it (load_q).
template <bool Pooled>
constexpr bool kQByConsumers = !Pooled;

template <bool Pooled, int Wgs>
__device__ __forceinline__ bool copies_q(int warp) {
  return kQByConsumers<Pooled> ? warp < kConsumerWarps * Wgs : warp == kConsumerWarps * Wgs;
}
// The threads copies_q names: q_full's arrival count.
template <bool Pooled, int Wgs>
constexpr uint32_t kQCopyThreads = kQByConsumers<Pooled> ? kConsumerThreads * Wgs : 32;

// This warp's copies of token t's Q for the CTA's heads (issued only).
template <bool Pooled, int Wgs, class Smem>
__device__ __forceinline__ void issue_q(const Params& p, Smem& s, int t, int group, int warp) {
  if (!copies_q<Pooled, Wgs>(warp)) return;
  if constexpr (kQByConsumers<Pooled>) {
    const int w = consumer_wg();
    load_q_share<kConsumerWarps>(p, s.wg[w].q, t, (group * Wgs + w) * kHeads, warp % kConsumerWarps);
  } else {
    for (int w = 0; w < Wgs; ++w) load_q(p, s.wg[w], t, (group * Wgs + w) * kHeads);
  }
}

// Once the split is known, the warps that copied Q post their copies on q_full (working CTA) or
// wait for them (idle CTA: no copy may land in the smem of a finished CTA).
template <bool Pooled, int Wgs, class Smem>
__device__ __forceinline__ void post_q(const Params& p, Smem& s, int t, int row, int group, int warp, bool works) {
  if (!copies_q<Pooled, Wgs>(warp)) return;
  if (works && row != t) {  // a pooled CTA on another token's row: its Q replaces the own token's
    // cp.async copies of one thread are not ordered among themselves: the own token's must have
    // landed before the same bytes are copied again (the slice's copies never waited for them:
    // this warp copies no index row). Found by racecheck on the binding's pooled graph test.
    cp_async_wait<0>();
    for (int w = 0; w < Wgs; ++w) load_q(p, s.wg[w], row, (group * Wgs + w) * kHeads);
  }
  if (works) cp_async_arrive_on(&s.q_full);
  else cp_async_wait<0>();
}

// A bf16 slot's row for FirstTiles (row_slice.cuh): its ckv part (1,024 bytes) and its kpe part
// (128), one L2 prefetch per line.
struct RowLinesBf16 {
  const uint8_t* ckv;
  const uint8_t* kpe;
  int64_t ckv_pitch, kpe_pitch;  // bytes
  __device__ explicit RowLinesBf16(const DsaTensors& x)
      : ckv(static_cast<const uint8_t*>(x.ckv_cache)),
        kpe(static_cast<const uint8_t*>(x.kpe_cache)),
        ckv_pitch(x.ckv_stride_slot * 2),
        kpe_pitch(x.kpe_stride_slot * 2) {}
  __device__ void operator()(int64_t slot, bool on) const {
    prefetch_lines_l2<kDimV * 2>(ckv + slot * ckv_pitch, on);
    prefetch_lines_l2<kDimR * 2>(kpe + slot * kpe_pitch, on);
  }
};

// grid (max_splits x head_groups, T); Wgs consumer warpgroups of 16 heads each share the CTA's
// gathered tiles (head_groups = H / (16 Wgs)). Pooled: the rows of all T <= kMaxPoolTokens tokens
// share the grid's CTAs (row_ring.h).
// FewSplits: the instance for launches of at most 4 splits per row (merge_few_splits).
template <Gather G, int Stages, int Producers, int Wgs, bool Pooled = false, bool FewSplits = false>
__global__ void __launch_bounds__(kThreadsFor<Producers, Wgs>, kCtasPerSm)
    dsa_v2_kernel(const __grid_constant__ Params p) {
  static_assert(!(Pooled && FewSplits), "pooled rows keep the general merge");
  extern __shared__ __align__(128) uint8_t smem_raw[];
  auto& s = *reinterpret_cast<SmemPlan<Stages, Wgs>*>(smem_raw);
  const int own_split = blockIdx.x / p.head_groups, group = blockIdx.x % p.head_groups, t = blockIdx.y;
  const int warp = threadIdx.x / 32;
  const bool producer = warp >= kConsumerWarps * Wgs;
  timeline::phase(timeline::kStart);
  // The index row's loads go out first: their round trip overlaps the set-up below.
  int32_t entries[kIdxPerThread];
  if constexpr (!Pooled) load_entries<kIdxPerThread>(p.io.sparse_indices + t * p.io.indices_stride_t, p.topk, entries);
  // Its first tiles' rows, prefetched once the row's plan says it is split (pooled rows: unused).
  const FirstTiles<kThreadsFor<Producers, Wgs>, RowLinesBf16> first_tiles(
      p.io.sparse_indices + t * p.io.indices_stride_t, p.topk, p.num_slots, own_split, p.max_splits, p.min_rows, group,
      p.head_groups, RowLinesBf16(p.io));
  // Ordered before first use by the slice's barriers (every arrival on q_full comes after them).
  init_barriers<G, Producers, Wgs>(s, kQCopyThreads<Pooled, Wgs>);
  issue_q<Pooled, Wgs>(p, s, t, group, warp);

  // The row this CTA works on: its own token's (split own_split), or with pooled rows possibly
  // another token's (row_slice.cuh); the heads are the CTA's group either way.
  RowSlice rs;
  int row = t, split = own_split, first_split = 0;
  if constexpr (Pooled) {
    const PooledSlice ps = slice_pooled<kThreadsFor<Producers, Wgs>, kIdxPerThread>(
        p.io.sparse_indices, p.io.indices_stride_t, p.num_tokens, p.topk, p.num_slots, t, own_split, p.max_splits,
        p.min_rows, kConsumerWarps * Wgs, reinterpret_cast<int32_t*>(&s.ring[0][0]), s.slots);
    rs = ps.rs, row = ps.row, split = ps.split, first_split = ps.first_split;
  } else {
    rs = slice_entries<kThreadsFor<Producers, Wgs>, kIdxPerThread>(entries, p.num_slots, split, p.max_splits, p.min_rows,
                                                                   merging_whole_rows(p.min_rows),
                                                                   s.slots, s.warp_count, first_tiles);
  }
  timeline::phase(timeline::kSliced);
  timeline::phase_value(timeline::kCount, uint64_t(rs.count) | (uint64_t(rs.splits) << 32));
  const int block = row * p.head_groups + group;  // this CTA's heads: 16-head blocks [Wgs block, + Wgs)
  const bool works = split < rs.splits && rs.n_valid > 0;
  post_q<Pooled, Wgs>(p, s, t, row, group, warp, works);
  if (!works) {  // beyond the row's splits, or an empty row (one split, output 0)
    if (split == 0)
      for (int w = 0; w < Wgs; ++w) store_empty(p, block * Wgs + w);
    timeline::phase(timeline::kStop);
    return;
  }
  const int blocks_per_token = p.head_groups * Wgs;
  if (producer) {
    produce<G, Stages, Producers>(p, s, rs.count, warp - kConsumerWarps * Wgs);
  } else {
    const int w = consumer_wg();
    consume_and_store<Stages>(p, s, s.wg[w], block * Wgs + w,
                                 split_rows<Pooled>(p, block * Wgs + w, first_split, group * Wgs + w, blocks_per_token), split,
                                 rs);
    timeline::phase(timeline::kStored);
  }
  if (rs.splits == 1) {
    timeline::phase(timeline::kStop);
    return;
  }
  uint32_t* counters = p.counters + 2 * block;
  const uint32_t left_before = wait_for_row(counters, rs.splits);
  timeline::phase(timeline::kMet);
  for (int w = 0; w < Wgs; ++w) {
    const SplitRows rows = split_rows<Pooled>(p, block * Wgs + w, first_split, group * Wgs + w, blocks_per_token);
    if constexpr (FewSplits) merge_few_splits(p, rows, block * Wgs + w, split, rs.splits, blockDim.x);
    else merge_splits(p, rows, block * Wgs + w, split, rs.splits, blockDim.x);
  }
  timeline::phase(timeline::kMerged);
  leave_row(counters, rs.splits, left_before);
  timeline::phase(timeline::kStop);
}

}  // namespace mlakit::dsa_v2
