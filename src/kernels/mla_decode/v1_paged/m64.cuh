// mla_decode v1_paged, 64 query rows per CTA (tiling field m64): a request's s_q x heads query rows
// in groups of 64 are the M of Hopper's wgmma, so every group streams each cache row once.
//
//   grid = (ctas_per_group, groups), groups = ceil(s_q x heads / 64); group gi holds the query rows
//   [64 gi, 64 gi + 64) of every request (row f = position f / heads, head f % heads), and walks
//   the schedule of its last position (schedule.cuh: the most rows under causal masking); a row
//   of an earlier position masks the cache rows it does not see.
//   warps 0-7: the 64-row wgmma consumer pair (kernels/common/wgmma_rows64.cuh) over 64-row
//   tiles of a ring that continues across the CTA's pieces; per piece: Q of the item, the tiles,
//   then bf16 output and lse (an item held whole) or an unnormalised partial (a piece of a split
//   item) counted at the item's counter. Two schedules of the pair (tiling field o): the seesaw
//   (o1, the default: the ring is two tile slots of two stages interleaved per block, warpgroup w
//   computes S of slot w's tile, a piece takes whole pairs of tiles, a missing last tile is
//   neither copied nor computed) and the lockstep pair (o0: both warpgroups on each tile of two
//   consecutive stages, S halves).
//   warps 8-11: producers, one warpgroup (its registers lowered by setmaxnreg for the consumers'
//   64 x 256 fp32 accumulators). Q of an item is 64 rows x 576, 16-byte cp.async into 9 swizzled
//   blocks: the CTA's first item's by the 256 consumer threads at their start (8 rows per warp;
//   one warp issuing all 64 rows would be the critical path of the CTA's start), every later
//   item's by the four producer warps (16 rows each) once the consumers' last QK of the previous
//   item is done; stage i goes to warp i % 4.
//   Gather 3 (pages of a multiple of 32 rows): a whole stage is 32 rows of one page, 9 tensor-map
//   boxes of 64 dims x 32 rows that the copy engine writes in the swizzle, issued by one lane.
//   Otherwise (gather 2, a stage cut short by the piece's end, a page id outside the cache): the
//   page of each row from block_table per lane, then 32 rows by 16-byte cp.async into the
//   swizzled blocks (lane L: chunks L and 32 + L of ckv, L < 8: chunk L of kpe). Completion on
//   the stage's mbarrier either way. Rows past the piece and rows of a page id
//   outside the cache are zero-filled (the contract's zero rows; masked past the piece).
//   The end as the 16-row path (kernel.cuh), by the 256 consumer threads: every CTA holding a
//   piece of a split item waits for the item and merges its share of the item's output chunks.
#pragma once

#include <cstdint>

#include "kernels/common/wgmma_rows64.cuh"
#include "kernels/mla_decode/v1_paged/kernel.cuh"
#include "kernels/mla_decode/v1_paged/m64_traits.h"

namespace mlakit::mla_v1::m64 {

using namespace mlakit::kernels;
using rows64::consumer_wg;
using rows64::copy_rows;
using rows64::pair_sync;
using rows64::RowPtrs;
using rows64::Rows;
using rows64::wg_warp;
using rows64::kTileBlockBytes;

// The query rows of a group.
struct Group {
  int index;  // gi (blockIdx.y)
  int f0;     // first of the request's s_q x heads query rows
  int n;      // rows of the group: 64, fewer in the last group when s_q x heads is not a multiple
  int qpos;   // the group's last query position: the schedule's rows
  __device__ int64_t out_row(int b, int heads, int seq_q) const { return int64_t(b) * seq_q * heads + f0; }
  __device__ int rows() const { return n; }
};
__device__ __forceinline__ Group group_of(const Params& p, int index) {
  Group g;
  g.index = index;
  g.f0 = index * kRows;
  g.n = min(kRows, p.seq_q * p.heads - g.f0);
  g.qpos = (g.f0 + g.n - 1) / p.heads;
  return g;
}

// ---- producers -------------------------------------------------------------------------------

// Warp-wide: Q rows row0, row0 + step, ... of item b into the swizzled Q blocks; rows past the
// group's are zeros. No cache hint (the default policy is evict-normal, what Q wants).
__device__ inline void load_q(const Params& p, SmemPlan& s, const Group& g, int b, int row0, int step) {
  const MlaTensors& x = p.io;
  const auto* q_nope = static_cast<const uint16_t*>(x.q_nope) + b * x.q_nope_stride_b;
  const auto* q_pe = static_cast<const uint16_t*>(x.q_pe) + b * x.q_pe_stride_b;
  copy_rows(s.q, kQBlockBytes, row0, kRows, step, [&](int m) {
    const int f = g.f0 + (m < g.n ? m : 0), i = f / p.heads, h = f % p.heads;
    return RowPtrs{q_nope + i * x.q_nope_stride_s + h * x.q_nope_stride_h,
                   q_pe + i * x.q_pe_stride_s + h * x.q_pe_stride_h, m < g.n};
  });
}

// The 256 consumer threads: the copies of the CTA's first item's Q (8 rows per warp), issued at
// the consumers' start rather than behind one producer warp's walk (docs/knowledge/copies.md).
__device__ inline void issue_first_q(const Params& p, SmemPlan& s, const Group& g, int b) {
  load_q(p, s, g, b, threadIdx.x / 32, kConsumerThreads / 32);
}
// ... and landed, visible to wgmma, when this returns.
__device__ inline void load_first_q(const Params& p, SmemPlan& s, const Group& g, int b) {
  issue_first_q(p, s, g, b);
  cp_async_commit();
  cp_async_wait<0>();
  fence_async_smem();
  pair_sync();
}

// The ring's stage `buf` and the stride of its 64-dim blocks. Lockstep pair: stage after stage,
// 4 KB blocks. Seesaw: stages 2j and 2j + 1 are the halves of tile slot j, interleaved per block
// (block k of the slot: the 32 rows of stage 2j, then those of 2j + 1; 8 KB), so that a 64-row tile
// is one wgmma operand.
template <bool kSeesaw>
__device__ __forceinline__ uint8_t* stage_at(SmemPlan& s, int buf) {
  return kSeesaw ? rows64::seesaw_stage(&s.ring[0][0], buf) : s.ring[buf];
}
template <bool kSeesaw>
constexpr int kStageBlockStride = kSeesaw ? kTileBlockBytes : kBlockBytes;

// Warp-wide: rows [first, first + rows) of request b into one ring stage (blocks `block_bytes`
// apart); the rest of its 32 rows are zeros.
__device__ inline void fill_stage(const Params& p, int b, int first, int rows, uint8_t* dst, int block_bytes,
                                  uint64_t policy) {
  const MlaTensors& x = p.io;
  const int lane = threadIdx.x % 32, j = first + lane;
  int page = -1;
  if (lane < rows) page = __ldg(x.block_table + b * x.block_table_stride_b + j / p.page_size);
  if (page >= p.num_pages) page = -1;
  const int in_page = j % p.page_size;
  const auto* ckv = static_cast<const uint16_t*>(x.ckv_cache);
  const auto* kpe = static_cast<const uint16_t*>(x.kpe_cache);
  copy_rows(dst, block_bytes, 0, kStageRows, 1,
            [&](int r) {
              const int pg = __shfl_sync(0xffffffffu, page, r), row = __shfl_sync(0xffffffffu, in_page, r);
              const bool valid = pg >= 0;
              const int64_t page_at = valid ? pg : 0;
              return RowPtrs{ckv + page_at * x.ckv_stride_page + row * x.ckv_stride_row,
                             kpe + page_at * x.kpe_stride_page + row * x.kpe_stride_row, valid};
            },
            policy);
}

// Warp-wide, gather 3: a whole stage (32 rows of one page: page_size a multiple of 32, `first` of
// 32) by 9 tensor-map boxes, 8 of ckv and 1 of kpe, each 64 dims x 32 rows into its swizzled block;
// lane 0 arms the stage's barrier with the 36 KB, the other lanes arrive. False (nothing issued)
// for a page id outside the cache: fill_stage zero-fills those rows.
__device__ inline bool fill_stage_tma(const Params& p, int b, int first, uint8_t* dst, int block_bytes,
                                      uint64_t* full, uint64_t policy) {
  const MlaTensors& x = p.io;
  const int page = __ldg(x.block_table + b * x.block_table_stride_b + first / p.page_size);
  if (page < 0 || page >= p.num_pages) return false;
  if (threadIdx.x % 32 == 0) {
    mbar_arrive_expect_tx(full, kStageBytes);
    const int row = first % p.page_size;
#pragma unroll
    for (int k = 0; k < kDimV / 64; ++k) tma_load_3d(dst + k * block_bytes, &p.ckv_map, 64 * k, row, page, full, policy);
    tma_load_3d(dst + (kDimV / 64) * block_bytes, &p.kpe_map, 0, row, page, full, policy);
  } else {
    mbar_arrive(full);
  }
  return true;
}

// Stages per piece a multiple of this: the seesaw takes whole pairs of 64-row tiles.
template <bool kSeesaw>
constexpr int kPiecePad = kSeesaw ? 4 : 1;

// Producer warp `pw`: rows pw, pw + 4, ... of each item's Q but the CTA's first (the consumers
// load that one) and its share of the ring stages (stage i: warp i % 4), in the order the
// consumers take them.
template <bool kSeesaw>
__device__ inline void produce(const Params& p, SmemPlan& s, const Range& r, const Group& g, int pw) {
  const uint64_t policy = l2_policy(p.groups == 1 ? L2Evict::kFirst : L2Evict::kNormal);
  constexpr int kStride = kStageBlockStride<kSeesaw>;
  walk_pieces<kStages, kProducers, kPiecePad<kSeesaw>, kProducers>(
      p, s, r, g, pw, [&](int b, int w) { load_q(p, s, g, b, w, kProducers); },
      [&](int b, int first, int rows, int buf, int end) {
        uint8_t* dst = stage_at<kSeesaw>(s, buf);
        // A whole padding tile (the seesaw's tile B past the piece's rows): nothing to copy, the
        // consumers skip its math (pair_seesaw, b_empty) but still wait for the stage in order.
        if (kSeesaw && rows64::seesaw_stage_empty(first, buf, end)) {
          mbar_arrive(&s.full[buf]);
          return;
        }
        if (p.tma && rows == kStageRows && fill_stage_tma(p, b, first, dst, kStride, &s.full[buf], policy)) return;
        fill_stage(p, b, first, rows, dst, kStride, policy);
        cp_async_arrive_on(&s.full[buf]);
      });
}

// ---- consumers -------------------------------------------------------------------------------

// The tiles of one piece (`count` rows from request row `begin`), continuing the CTA's ring at
// stage `stage`. `seen[r]`: rows of the request the lane's row r sees (its causal limit; 0 for a
// row past the group's). Releases Q after the last tile's QK.
__device__ inline void consume_piece(SmemPlan& s, int begin, int count, const int (&seen)[2], Ring<kStages, int64_t>& stage,
                                     float scale_log2, Rows& st, float (&o)[128]) {
  const int wg = consumer_wg();
  const int stages = (count + kStageRows - 1) / kStageRows;
  walk_tiles<kStages>(s, count, stage, [&](int i, bool two, int b0, int b1) {
    fence_async_smem();  // cp.async wrote the rows; wgmma reads them
    // A tile of one stage: warpgroup 1 has no rows of its own, warpgroup 0 no other half.
    const uint32_t own = smem_addr(s.ring[wg == 0 || !two ? b0 : b1]);
    const uint32_t other = smem_addr(s.ring[wg == 1 || !two ? b0 : b1]);
    const int own_first = begin + (i + wg) * kStageRows;  // request row of the own stage's column 0
    const int own_rows = wg == 0 || two ? min(kStageRows, count - (i + wg) * kStageRows) : 0;
    const int lim[2] = {min(own_rows, seen[0] - own_first), min(own_rows, seen[1] - own_first)};
    const bool last = i + 2 >= stages;
    rows64::tile(s, own, other, lim, scale_log2, st, o, [&] {
      if (last) mbar_arrive(&s.q_empty);  // no QK of this item reads Q any more
    });
    // Released by walk_tiles only now: P V read both stages.
  });
}

// The seesaw's pairs of one piece (`count` rows from request row `begin`): tile 2 i + w of the
// piece is warpgroup w's (slot w of the ring); a last tile B past the rows is neither copied nor
// computed (b_empty), a partial tile is zero-filled past them and masked.
// `stage` is a multiple of 4 at every piece's start (pieces take whole pairs).
__device__ inline void consume_piece_seesaw(SmemPlan& s, int begin, int count, const int (&seen)[2], Ring<kStages, int64_t>& stage,
                                            float scale_log2, Rows& st, float (&o)[128]) {
  const int wg = consumer_wg();
  const int pairs = piece_stages<kPiecePad<true>>(count) / kStages;
  for (int i = 0; i < pairs; ++i, stage += kStages) {
    const uint32_t phase = stage.full_parity();  // the pair's stages are one round of the ring
    const int own = (2 * i + wg) * kUnitRows;  // the own tile's first row in the piece
    const int rows = max(0, min(kUnitRows, count - own));
    const int lim[2] = {min(rows, seen[0] - begin - own), min(rows, seen[1] - begin - own)};
    const bool last = i + 1 == pairs;
    const bool b_empty = (2 * i + 1) * kUnitRows >= count;  // the piece's rows end in tile A
    rows64::pair_seesaw(s, lim, scale_log2, st, o, phase, b_empty, [&] {
      if (last) mbar_arrive(&s.q_empty);  // no QK of this item reads Q any more
    });
  }
}

// bf16 O / l and the lse of an item held whole; a row that saw nothing gets 0 and -inf.
__device__ inline void store_item(const Params& p, const Group& g, int b, const Rows& st, const float (&l_total)[2],
                                  const float (&o)[128]) {
  const int wg = consumer_wg(), lane = threadIdx.x % 32, q = lane % 4;
  const int row0 = wg_warp() * 16 + lane / 4, col = wg * rows64::kDimsPerWg + 2 * q;
  const int64_t out0 = g.out_row(b, p.heads, p.seq_q);
  auto* out = static_cast<uint32_t*>(p.io.output);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int m = row0 + 8 * r;
    if (m >= g.n) continue;
    const bool seen = l_total[r] > 0.f;
    const float inv = seen ? fast_rcp(l_total[r]) : 0.f;
    const int64_t base = (out0 + m) * kDimV + col;
#pragma unroll
    for (int j = 0; j < 32; ++j) out[(base + 8 * j) / 2] = pack_bf16x2(o[4 * j + 2 * r] * inv, o[4 * j + 2 * r + 1] * inv);
    if (wg == 0 && q == 0) p.io.lse[out0 + m] = seen ? st.m[r] + fast_log2(l_total[r]) : -INFINITY;
  }
}

// kUniform: each item's piece made warp-uniform (warp_uniform, schedule.cuh) before its loops.
template <bool kSeesaw, bool kUniform>
__device__ inline void consume(const Params& p, SmemPlan& s, const Range& r, const Group& g) {
  Ring<kStages, int64_t> stage;
  int items = 0;
  int64_t unit = r.first_unit;
  const int lane = threadIdx.x % 32;
  for (int b = r.first; b <= r.last; ++b) {
    const Piece found = piece_of(p, r, g.qpos, b, unit);
    const Piece pc = kUniform ? warp_uniform(found) : found;
    unit += pc.units;
    Rows st;
    float o[128] = {};
    float l_total[2] = {0.f, 0.f};
    if (pc.count > 0) {
      if (items == 0) issue_first_q(p, s, g, b);  // before anything else: Q is the first tile's
      int seen[2];
#pragma unroll
      for (int k = 0; k < 2; ++k) {
        const int m = wg_warp() * 16 + lane / 4 + 8 * k;
        seen[k] = m < g.n ? visible_rows(p, b, (g.f0 + m) / p.heads) : 0;
      }
      if (items == 0) {
        cp_async_commit();
        cp_async_wait<0>();
        fence_async_smem();  // cp.async wrote Q; wgmma (the async proxy) reads it
        pair_sync();         // every consumer warp's rows are in
      } else {
        Ring<1>{items - 1}.wait_full(&s.q_full);
        fence_async_smem();  // cp.async wrote Q; wgmma reads it
      }
      ++items;
      if constexpr (kSeesaw) consume_piece_seesaw(s, pc.begin, pc.count, seen, stage, p.scale_log2, st, o);
      else consume_piece(s, pc.begin, pc.count, seen, stage, p.scale_log2, st, o);
      rows64::total_sums(s, st, l_total);
    }
    if (pc.pieces == 1) {
      store_item(p, g, b, st, l_total, o);
      // Every consumer's reads of red_sum (total_sums) end before the next item's writes (a split
      // item's stores end with a barrier already). Without it, racecheck reported hazards
      // between the two in the instance with warp-uniform ranges, where the next pair's mbarrier
      // hand-offs were meant to order them.
      if (pc.count > 0 && b < r.last) pair_sync();
    } else {
      const int64_t gid = int64_t(g.index) * p.ctas_per_group + blockIdx.x;
      // The unnormalised partial into the piece's slot (64 rows); l = 0 marks a row that saw
      // nothing in the piece, which the merge skips.
      rows64::store_partial(p.part_o, p.part_ml, (gid * 2 + pc.slot) * kRows + wg_warp() * 16, st, l_total, o);
      __threadfence();
      pair_sync();  // every consumer thread's stores are visible before the piece counts
      if (threadIdx.x == 0) atomicAdd(p.counters + 2 * (int64_t(g.index) * p.ctas_per_group + pc.first_cta), 1u);
    }
  }
}

// ---- the kernel ------------------------------------------------------------------------------

// kMath = false: the gather floor of this tiling (mla_decode.floor_stream.bf16): rows and Q only.
// kSeesaw: the consumer pair's schedule (tiling field o1), else the lockstep pair.
// kAligned: the schedule may cut requests into aligned pieces (schedule.cuh; the host picks this
// instance for 2 <= batch <= CTAs per group / 2: launch_m64.cu).
template <bool kMath, bool kSeesaw, bool kAligned = false>
__global__ void __launch_bounds__(kThreads, 1) mla_m64_kernel(const __grid_constant__ Params p) {
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  auto& s = rows64::plan_at<SmemPlan>(smem_raw);
  const Group g = group_of(p, int(blockIdx.y));
  timeline::phase(timeline::kStart);  // the phase hook (timeline.cuh; no-op in other builds)
  if (threadIdx.x == 0) {
    for (auto& b : s.full) mbar_init(&b, 32);  // the filling warp's lanes
    for (auto& b : s.empty) mbar_init(&b, kConsumerThreads);
    mbar_init(&s.q_full, kProducers * 32);     // the producer warps' lanes
    mbar_init(&s.q_empty, kConsumerThreads);
    for (auto& b : s.hand) mbar_init(&b, rows64::kWgThreads);
    mbar_fence_init();
  }
  // Ordered before first use by locate_range's barriers.
  const Range found = locate_range<kThreads, false, kAligned>(p, g.qpos, blockIdx.x, s.scan, s.sched, &s.ring[0][0]);
  // The range and each piece warp-uniform in the plain instance: its consumers then keep no value
  // in local memory (they spilled without it) and run faster where they bound the kernel. The
  // aligned instance keeps both as they come: its wgmma descriptors are per-thread values already
  // (moved to uniform registers before each wgmma), and the same change doubled those moves and
  // made it slower.
  constexpr bool kUniform = !kAligned;
  const Range r = kUniform ? warp_uniform(found) : found;
  if (holds_nothing(r)) return;
  const int warp = threadIdx.x / 32;
  if (warp >= kWgs * 4) {  // the producer warpgroup leaves once its copies are issued
    set_max_registers<kProducerRegs, false>();
    produce<kSeesaw>(p, s, r, g, warp - kWgs * 4);
    return;
  }
  set_max_registers<kConsumerRegs, true>();
  if constexpr (!kMath) {
    mla_v1::consume_no_math<kStages, kPiecePad<kSeesaw>>(p, s, r, g, [&](int b) { load_first_q(p, s, g, b); });
  } else {
    consume<kSeesaw, kUniform>(p, s, r, g);
    timeline::phase(timeline::kStored);  // every piece computed, stored or published
    pair_sync();  // every piece of this CTA is published; the ring is free
    timeline::phase(timeline::kMet);
    merge_split_items<kConsumerThreads, kRows>(p, r, g, [] { pair_sync(); });
    timeline::phase(timeline::kMerged);
  }
  timeline::phase(timeline::kStop);
}

}  // namespace mlakit::mla_v1::m64
