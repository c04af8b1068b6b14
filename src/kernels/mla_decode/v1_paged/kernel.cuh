// Dense paged MLA decode v1: one persistent launch, balanced split-KV computed on the GPU.
//
//   grid = (ctas_per_group, groups); group (i, hb) = query position i, heads [16 hb, 16 hb + 16)
//   of every request; CTA c of a group takes an equal contiguous range of the group's work units
//   (schedule.cuh) and walks its pieces of work items in order.
//   warps 0-3: consumers, the 16-head warpgroup of kernels/common/consumer_h16.cuh (QK, base-2
//   online softmax, PV with bf16 mma.sync) over 64-row tiles of a ring that continues across the
//   CTA's pieces; an item held whole stores bf16 output and lse, a piece of a split item stores an
//   unnormalised partial into the CTA's slot and counts itself at the item's counter.
//   warps 4..: producers: the page rows of each piece (block_table lookups per row), one
//   cp.async.bulk per row into 32-row ring stages (two when ckv and kpe are separate tensors), Q
//   of each item by cp.async into its own buffer.
//   Then every CTA that holds a piece of a split item waits for the item's pieces (all CTAs are
//   co-resident: the launch is cooperative) and merges its share of the item's output chunks.
// Design and measurements: docs/kernels/mla_decode_v1_paged.md
#pragma once

#include <cstdint>

#include "kernels/common/async_pipe.cuh"
#include "kernels/common/bf16x2.cuh"
#include "kernels/common/chunk_merge.cuh"
#include "kernels/common/ring.cuh"
#include "kernels/common/row_copy.cuh"
#include "kernels/common/consumer_h16.cuh"
#include "kernels/mla_decode/v1_paged/schedule.cuh"

namespace mlakit::mla_v1 {

using namespace mlakit::kernels;
static_assert(h16::kHeads == kHeadBlock && h16::kSPitch == kSPitch && h16::kPPitch == kPPitch &&
                  h16::kConsumerWarps == kConsumerWarps,
              "the shared consumer's shared-memory layout");

// Which query rows a group works on.
struct Group {
  int qpos, hblock, index;
  __device__ int64_t out_row(int b, int heads, int seq_q) const {  // first output row of an item
    return (int64_t(b) * seq_q + qpos) * heads + hblock * kHeadBlock;
  }
  __device__ int rows() const { return kHeadBlock; }  // query rows of an item
};

template <class Smem>
__device__ void init_barriers(Smem& s) {
  if (threadIdx.x != 0) return;
  for (auto& b : s.full) mbar_init(&b, 32);                  // the producer warp's 32 lanes
  for (auto& b : s.empty) mbar_init(&b, kConsumerThreads);   // every consumer thread releases
  mbar_init(&s.q_full, 32);                                  // one warp's cp.async arrivals
  mbar_init(&s.q_empty, kConsumerThreads);
  mbar_fence_init();
}

// ---- producers -------------------------------------------------------------------------------

// Warp-wide: rows [first, first + rows) of request b into one ring stage; rows past `rows` and
// rows of a page id outside the cache are zeros (the contract reads a missing page as zero rows;
// past `rows`, QK's masked columns read them).
__device__ inline void fill_stage(const Params& p, int b, int first, int rows, uint16_t* dst, uint64_t* full,
                           uint64_t policy) {
  const MlaTensors& x = p.io;
  const int lane = threadIdx.x % 32, j = first + lane;
  int page = -1;
  if (lane < rows) page = __ldg(x.block_table + b * x.block_table_stride_b + j / p.page_size);
  const bool good = page >= 0 && page < p.num_pages;
  const uint32_t zero_rows = __ballot_sync(0xffffffffu, !good);
  for (uint32_t m = zero_rows; m != 0; m &= m - 1) {  // the warp zeroes each such row
    uint16_t* row = dst + (__ffs(m) - 1) * kKvPitch;
    for (int c = lane; c < kDimK / 8; c += 32) *reinterpret_cast<uint4*>(row + c * 8) = make_uint4(0, 0, 0, 0);
  }
  if (zero_rows != 0) asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncwarp();
  const uint32_t bytes = uint32_t(32 - __popc(zero_rows)) * kRowBytes;
  if (lane == 0) mbar_arrive_expect_tx(full, bytes);
  else mbar_arrive(full);
  if (!good) return;
  const int64_t r = j % p.page_size;
  const auto* ckv = static_cast<const uint16_t*>(x.ckv_cache) + page * x.ckv_stride_page + r * x.ckv_stride_row;
  uint16_t* row = dst + lane * kKvPitch;
  if (p.fused_rows) {
    bulk_copy_g2s(row, ckv, kRowBytes, full, policy);
  } else {
    const auto* kpe = static_cast<const uint16_t*>(x.kpe_cache) + page * x.kpe_stride_page + r * x.kpe_stride_row;
    bulk_copy_g2s(row, ckv, kDimV * 2, full, policy);
    bulk_copy_g2s(row + kDimV, kpe, kDimR * 2, full, policy);
  }
}
static_assert(kStageRows == 32, "one row per lane of a producer warp");

// Ring stages of a piece of `count` rows: one per 32 rows, rounded up to a multiple of `Pad` (the
// seesaw takes whole pairs of 64-row tiles: 4); the stages past the rows are zero-filled.
template <int Pad>
__device__ __forceinline__ int piece_stages(int count) {
  return ((count + kStageRows - 1) / kStageRows + Pad - 1) / Pad * Pad;
}

// Producer warp `pw`'s walk over the CTA's pieces, shared by both row paths: Q of each item with
// rows (warps 0..QWarps-1, once the consumers released the previous Q: load_q(b, pw), then an
// arrival of each of their lanes on q_full when its cp.async land) and its share of the ring
// stages (stage i: warp i % Producers), in the order the consumers take them: fill(b, first row,
// rows, buffer, the piece's end row) once the buffer is free (rows 0 for a padding stage). The
// CTA's first item's Q is the consumers' to load (load_first_q): the producers load the later
// items' only.
template <int Stages, int Producers, int Pad = 1, int QWarps = 1, class Smem, class G, class LoadQ, class Fill>
__device__ __forceinline__ void walk_pieces(const Params& p, Smem& s, const Range& r, const G& g, int pw,
                                            LoadQ&& load_q, Fill&& fill) {
  Ring<Stages, int64_t> stage;  // ring stages of this CTA so far
  int items = 0;                 // items whose Q was loaded
  int64_t unit = r.first_unit;
  for (int b = r.first; b <= r.last; ++b) {
    const Piece pc = piece_of(p, r, g.qpos, b, unit);
    unit += pc.units;
    if (pc.count == 0) continue;
    if (pw < QWarps && items != 0) {
      // Stamps of the first Q the producers load (lane 0 of warp 0): reached, copies issued.
      Ring<1>{items}.wait_empty(&s.q_empty);  // the consumers hold the previous item's Q
      load_q(b, pw);
      cp_async_arrive_on(&s.q_full);
    }
    ++items;
    const int stages = piece_stages<Pad>(pc.count);
    for (int k = 0; k < stages; ++k, ++stage) {
      if (int(stage.use % Producers) != pw) continue;
      stage.wait_empty(s.empty);
      fill(b, pc.begin + k * kStageRows, max(0, min(kStageRows, pc.count - k * kStageRows)), stage.buffer(),
           pc.begin + pc.count);
      // The CTA's second stage (producer warp 1's first) requested.
    }
  }
}

// Warp-wide: Q rows (heads) head0, head0 + step, ... of the group's head block of request b into
// `dst` (one row per head, kKvPitch apart), by 16-byte cp.async without a cache hint (an explicit
// evict_normal hint was slower on the split shapes: docs/knowledge/copies.md).
__device__ inline void load_q(const Params& p, const Group& g, int b, uint16_t* dst, int head0, int step) {
  const MlaTensors& x = p.io;
  const int h = g.hblock * kHeadBlock;
  const auto* q_nope = static_cast<const uint16_t*>(x.q_nope) + b * x.q_nope_stride_b + g.qpos * x.q_nope_stride_s +
                       h * x.q_nope_stride_h;
  const auto* q_pe = static_cast<const uint16_t*>(x.q_pe) + b * x.q_pe_stride_b + g.qpos * x.q_pe_stride_s +
                     h * x.q_pe_stride_h;
  for (int k = head0; k < kHeadBlock; k += step)
    cp_async_row(dst + k * kKvPitch, q_nope + k * x.q_nope_stride_h, q_pe + k * x.q_pe_stride_h,
                           true);
}

// The consumer warps: the CTA's first item's Q (warp w: heads w, w + 4, ...), landed and visible
// to every consumer thread when this returns. Issued at the consumers' start rather than behind
// producer warp 0's walk: one warp issuing a whole Q is the critical path of the CTA's start
// (docs/knowledge/copies.md).
template <class Smem>
__device__ inline void load_first_q(const Params& p, Smem& s, const Group& g, int b) {
  load_q(p, g, b, s.q, threadIdx.x / 32, kConsumerWarps);
  cp_async_commit();
  cp_async_wait<0>();
  h16::consumer_sync();
}

template <int Stages, int Producers, class Smem>
__device__ void produce(const Params& p, Smem& s, const Range& r, const Group& g, int pw) {
  const uint64_t policy = l2_policy(p.groups == 1 ? L2Evict::kFirst : L2Evict::kNormal);
  walk_pieces<Stages, Producers>(
      p, s, r, g, pw, [&](int b, int) { load_q(p, g, b, s.q, 0, 1); },
      [&](int b, int first, int rows, int buf, int) { fill_stage(p, b, first, rows, s.ring[buf], &s.full[buf], policy); });
}

// ---- consumers -------------------------------------------------------------------------------

// The consumers' walk over one piece's `count` rows, shared by both row paths: tiles of two ring
// stages (one when a single stage is left), continuing the CTA's ring at stage `stage`. Waits for
// the tile's stages, runs tile(i, two, b0, b1) (i: the piece's stage of the tile; b0, b1: its
// buffers, b1 only when `two`), then releases them; `stage` ends past the stages taken.
template <int Stages, class Smem, class Tile>
__device__ __forceinline__ void walk_tiles(Smem& s, int count, Ring<Stages, int64_t>& stage, Tile&& tile) {
  const int stages = (count + kStageRows - 1) / kStageRows;
  for (int i = 0; i < stages; i += 2, stage += 2) {
    const bool two = i + 1 < stages;
    const Ring<Stages, int64_t> second = stage.at(1);
    const int b0 = stage.buffer(), b1 = second.buffer();
    stage.wait_full(s.full);
    if (two) second.wait_full(s.full);
    tile(i, two, b0, b1);
    stage.release(s.empty);
    if (two) second.release(s.empty);
  }
  if (stages % 2 == 1) stage += -1;  // a one-stage last tile took one stage, not two
}

// The tiles of one piece, continuing the CTA's ring at stage `stage`.
template <int Stages, class Smem>
__device__ void consume_piece(Smem& s, int count, Ring<Stages, int64_t>& stage, float scale_log2, const uint32_t (&qa)[9][4],
                              h16::RowState& st, float (&o)[h16::kOTiles][4]) {
  walk_tiles<Stages>(s, count, stage, [&](int i, bool two, int b0, int b1) {
    const h16::Tile tile(s.ring[b0], two ? s.ring[b1] : s.ring[b0], min(kUnitRows, count - i * kStageRows), s.zeros);
    h16::decode_tile(s, qa, tile, scale_log2, st, o);
  });
}

// bf16 O / l and lse of an item held whole (consumer threads); count == 0: output 0, lse -inf.
__device__ inline void store_item(const Params& p, int64_t row0, const h16::RowState& st, const float (&l_total)[2],
                           const float (&o)[h16::kOTiles][4], bool empty) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4;
  auto* out = static_cast<uint32_t*>(p.io.output);
  const int col = warp * h16::kDimsPerWarp + 2 * (lane % 4);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float inv = empty ? 0.f : fast_rcp(l_total[r]);
    const int64_t base = (row0 + g + 8 * r) * kDimV + col;
#pragma unroll
    for (int j = 0; j < h16::kOTiles; ++j) out[(base + j * 8) / 2] = pack_bf16x2(o[j][2 * r] * inv, o[j][2 * r + 1] * inv);
  }
  if (warp == 0 && lane % 4 == 0) {
    p.io.lse[row0 + g] = empty ? -INFINITY : st.m[0] + fast_log2(l_total[0]);
    p.io.lse[row0 + g + 8] = empty ? -INFINITY : st.m[1] + fast_log2(l_total[1]);
  }
}

// The unnormalised partial of a piece into partial slot `slot_row` (consumer threads): O as bf16
// in whole 32-byte sectors (a quad's half-sector stores cost the split shapes more), and (m, l):
// l = 0 for an empty piece, which the merge skips. An empty piece still writes its O (zeros): the
// merge loads every piece's O before it looks at l, and must never read one an earlier call left.
__device__ inline void store_partial(const Params& p, int64_t slot_row, const h16::RowState& st,
                                     const float (&l_total)[2], const float (&o)[h16::kOTiles][4], bool empty) {
  static_assert(h16::kOTiles % 2 == 0, "tiles in pairs: 16 dims, one sector of bf16");
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, q = lane % 4;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    uint16_t* dst = p.part_o + (slot_row + g + 8 * r) * kDimV + warp * h16::kDimsPerWarp;
#pragma unroll
    for (int j = 0; j < h16::kOTiles; j += 2)
      store_bf16_tile_pair(dst + j * 8, pack_bf16x2(o[j][2 * r], o[j][2 * r + 1]),
                           pack_bf16x2(o[j + 1][2 * r], o[j + 1][2 * r + 1]));
  }
  if (warp == 0 && q == 0) {
    p.part_ml[slot_row + g] = make_float2(empty ? -INFINITY : st.m[0], empty ? 0.f : l_total[0]);
    p.part_ml[slot_row + g + 8] = make_float2(empty ? -INFINITY : st.m[1], empty ? 0.f : l_total[1]);
  }
}

// Counts this CTA's piece at the item's counter once every consumer thread's stores are visible.
__device__ inline void publish_piece(uint32_t* arrivals) {
  __threadfence();
  h16::consumer_sync();
  if (threadIdx.x == 0) atomicAdd(arrivals, 1u);
}

template <int Stages, class Smem>
__device__ void consume(const Params& p, Smem& s, const Range& r, const Group& g) {
  h16::write_zero_row(s);  // ordered before every P V by load_first_q's consumer barrier
  Ring<Stages, int64_t> stage;
  int items = 0;
  int64_t unit = r.first_unit;
  const int cta = blockIdx.x;
  for (int b = r.first; b <= r.last; ++b) {
    const Piece pc = piece_of(p, r, g.qpos, b, unit);
    unit += pc.units;
    h16::RowState st;
    float o[h16::kOTiles][4] = {};
    float l_total[2] = {0.f, 0.f};
    if (pc.count > 0) {
      uint32_t qa[h16::kQkSteps][4];
      if (items == 0) load_first_q(p, s, g, b);
      else Ring<1>{items - 1}.wait_full(&s.q_full);  // the producers' copy of this item's Q
      h16::load_q_fragments(s.q, qa);
      mbar_arrive(&s.q_empty);
      ++items;
      consume_piece<Stages>(s, pc.count, stage, p.scale_log2, qa, st, o);
      h16::reduce_row_sums(s, st, l_total);
    }
    if (pc.pieces == 1) {
      store_item(p, g.out_row(b, p.heads, p.seq_q), st, l_total, o, pc.count == 0);
    } else {
      const int64_t gid = int64_t(g.index) * p.ctas_per_group + cta;
      store_partial(p, (gid * 2 + pc.slot) * kHeadBlock, st, l_total, o, pc.count == 0);
      publish_piece(p.counters + 2 * (int64_t(g.index) * p.ctas_per_group + pc.first_cta));
    }
  }
}

// The gather floor's consumers: the same hand-offs (Q, every ring stage) with no math and no
// output, so the producers stream exactly the rows the kernel reads; the CTA's first item's Q is
// theirs to load (first_q(b)), as in the kernel.
template <int Stages, int Pad = 1, class Smem, class G, class FirstQ>
__device__ void consume_no_math(const Params& p, Smem& s, const Range& r, const G& g, FirstQ&& first_q) {
  Ring<Stages, int64_t> stage;
  int items = 0;
  int64_t unit = r.first_unit;
  for (int b = r.first; b <= r.last; ++b) {
    const Piece pc = piece_of(p, r, g.qpos, b, unit);
    unit += pc.units;
    if (pc.count == 0) continue;
    if (items == 0) first_q(b);
    else Ring<1>{items - 1}.wait_full(&s.q_full);
    mbar_arrive(&s.q_empty);
    ++items;
    const int stages = piece_stages<Pad>(pc.count);
    for (int i = 0; i < stages; ++i, ++stage) {
      stage.wait_full(s.full);
      stage.release(s.empty);
    }
  }
}

// ---- merge of split items --------------------------------------------------------------------

// Pieces j = first, first + step, ... of chunk c of a split item (CTAs gbase + first_cta + j of
// the grid; partial slots of kSlotRows query rows), the loads of kBatch pieces at a time (L2
// latency per batch, not per piece). The 64-row kernel's batch: 8 (chosen by measurement:
// docs/kernels/mla_decode_v1_paged.md).
constexpr int kMergeBatch = 8;
// The 16-row kernel's: 9. Its split requests often come in 8k + 1 pieces per lane (132 pieces over
// 16 lanes at b = 1; 17 or 65 where a request's fixed unit tips it over), and a last batch of one
// piece costs a whole L2 round trip.
constexpr int kMergeBatchRows16 = 9;
template <int kSlotRows, int kBatch>
__device__ ChunkMerge merge_pieces(const Params& p, const Piece& pc, int n, int64_t total, int gbase, int c,
                                   int first, int step) {
  const int h = c / (kDimV / 8), d0 = (c % (kDimV / 8)) * 8;
  ChunkMerge st;
  for (int j0 = first; j0 < pc.pieces; j0 += kBatch * step) {
    float4 a[kBatch], b[kBatch];
    float2 v[kBatch];
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {  // all loads of the batch first
      const int j = j0 + u * step;
      const bool in = j < pc.pieces;
      const int slot = slot_of_piece(pc, j, n, total);
      const int64_t row = ((int64_t(gbase) + pc.first_cta + (in ? j : 0)) * 2 + slot) * kSlotRows + h;
      const uint4 w = in ? __ldcg(reinterpret_cast<const uint4*>(p.part_o + row * kDimV + d0)) : uint4{};
      a[u] = unpack_bf16x4(w.x, w.y);  // bf16: the chunk is one 16-byte load
      b[u] = unpack_bf16x4(w.z, w.w);
      v[u] = in ? __ldcg(p.part_ml + row) : float2{};
    }
#pragma unroll
    for (int u = 0; u < kBatch; ++u) st.add(v[u].x, v[u].y, a[u], b[u]);
  }
  return st;
}

// This CTA's share of a split item's output: chunk pairs (16 dims of one query row; g.rows() x 32
// of them; one 32-byte sector of a bf16 partial), piece k of the item's pieces. Lane bit 0 picks
// the pair's chunk (8 dims), so two adjacent lanes read the two halves of one sector and the same
// (m, l) in one load instruction (one request for each, not two). With fewer pairs than threads,
// tpc lane pairs (a power of two up to 16) take one pair, pair r every tpc-th piece from r, and the
// states of a chunk's lanes (xor distances 2, 4, ...) fold into the first one's by an xor tree of
// shuffles: a fixed order, so the result is deterministic. kThreads threads (0..kThreads-1, whole
// warps) take part.
template <int kThreads, int kSlotRows, int kBatch, class G>
__device__ void merge_share(const Params& p, const Piece& pc, int n, int64_t total, const G& g, int k) {
  static_assert(kThreads % 32 == 0, "whole warps: the lanes of a chunk fold by shuffles");
  const int pairs = g.rows() * (kDimV / 16);
  const int p_begin = k * pairs / pc.pieces, p_end = (k + 1) * pairs / pc.pieces;
  const int n_pairs = p_end - p_begin;
  int tpc = 1;  // lane pairs per chunk pair: the most that still takes every pair in one pass
  while (tpc < 16 && 4 * tpc * n_pairs <= kThreads) tpc *= 2;
  const int per_pass = kThreads / (2 * tpc);
  const int gbase = g.index * p.ctas_per_group;
  const int64_t row0 = g.out_row(pc.b, p.heads, p.seq_q);
  const int half = int(threadIdx.x) % 2, u = int(threadIdx.x) / 2, r = u % tpc;
  for (int base = p_begin; base < p_end; base += per_pass) {  // the same passes in every thread
    const int pair = base + u / tpc, c = 2 * pair + half;
    ChunkMerge st;
    if (pair < p_end) st = merge_pieces<kSlotRows, kBatch>(p, pc, n, total, gbase, c, r, tpc);
    st.fold_lanes(tpc, 2);
    if (pair >= p_end || r != 0) continue;
    const int h = c / (kDimV / 8), d0 = (c % (kDimV / 8)) * 8;
    *reinterpret_cast<uint4*>(static_cast<uint16_t*>(p.io.output) + (row0 + h) * kDimV + d0) = st.output();
    if (d0 == 0) p.io.lse[row0 + h] = st.lse();
  }
}

// Waits for every piece of a split item, merges this CTA's share, and leaves; the last CTA to
// leave sets the item's counters back to zero (a CTA counted at counters[1] is past its poll of
// counters[0]). Thread 0 counts the leave right after the barrier that follows its wait and reads
// the answer after the merge (which has no barrier), so that the round trip can overlap the merge
// (issuing it before that barrier instead gains nothing measurable). Threads 0..kThreads-1 call
// it; `sync` is their barrier.
template <int kThreads, int kSlotRows, int kBatch, class G, class Sync>
__device__ void merge_item(const Params& p, const Piece& pc, const Range& r, const G& g, Sync&& sync) {
  uint32_t* counters = p.counters + 2 * (int64_t(g.index) * p.ctas_per_group + pc.first_cta);
  if (threadIdx.x == 0) {
    while (ld_acquire_gpu(&counters[0]) < uint32_t(pc.pieces)) __nanosleep(32);
    __threadfence();
  }
  sync();
  const uint32_t left_before = threadIdx.x == 0 ? atomicAdd(&counters[1], 1u) : 0u;
  merge_share<kThreads, kSlotRows, kBatch>(p, pc, r.n, r.total, g, int(blockIdx.x) - pc.first_cta);
  if (threadIdx.x == 0 && left_before == uint32_t(pc.pieces - 1)) {
    counters[0] = 0;
    counters[1] = 0;
  }
}

// The CTA's split items (only its first and its last can be), merged after every piece of the
// CTA is published.
template <int kThreads, int kSlotRows, int kBatch = kMergeBatch, class G, class Sync>
__device__ void merge_split_items(const Params& p, const Range& r, const G& g, Sync&& sync) {
  const Piece first = piece_of(p, r, g.qpos, r.first, r.first_unit);
  if (first.pieces > 1) merge_item<kThreads, kSlotRows, kBatch>(p, first, r, g, sync);
  if (r.last == r.first) return;
  int64_t unit = first.unit + first.units;  // the last item starts where the others end
  for (int b = r.first + 1; b < r.last; ++b) unit += item_units(visible_rows(p, b, g.qpos));
  const Piece last = piece_of(p, r, g.qpos, r.last, unit);
  if (last.pieces > 1) merge_item<kThreads, kSlotRows, kBatch>(p, last, r, g, sync);
}

// ---- the kernel ------------------------------------------------------------------------------

// kMath = false: the gather floor (mla_decode.floor_stream.bf16): rows and Q only.
template <int Stages, int Producers, bool kMath>
__global__ void __launch_bounds__(kThreadsFor<Producers>, kCtasPerSm) mla_v1_kernel(const __grid_constant__ Params p) {
  extern __shared__ __align__(128) uint8_t smem_raw[];
  auto& s = *reinterpret_cast<SmemPlan<Stages>*>(smem_raw);
  const int head_blocks = p.heads / kHeadBlock;
  const Group g{int(blockIdx.y) / head_blocks, int(blockIdx.y) % head_blocks, int(blockIdx.y)};
  timeline::phase(timeline::kStart);  // the phase hook (timeline.cuh; no-op in other builds)
  init_barriers(s);  // ordered before first use by locate_range's barriers
  const Range r = locate_range<kThreadsFor<Producers>, true>(p, g.qpos, blockIdx.x, s.scan, s.sched, &s.ring[0][0]);
  if (holds_nothing(r)) return;
  const int warp = threadIdx.x / 32;
  if (warp >= kConsumerWarps) produce<Stages, Producers>(p, s, r, g, warp - kConsumerWarps);
  else if constexpr (kMath) consume<Stages>(p, s, r, g);
  else consume_no_math<Stages>(p, s, r, g, [&](int b) { load_first_q(p, s, g, b); });
  timeline::phase(timeline::kStored);  // every piece computed, stored or published
  if constexpr (!kMath) return;
  __syncthreads();  // every piece of this CTA is published; the ring is free
  timeline::phase(timeline::kMet);  // (the CTA's own pieces only: merge_item waits for the others)
  merge_split_items<kThreadsFor<Producers>, kHeadBlock, kMergeBatchRows16>(p, r, g, [] { __syncthreads(); });
  timeline::phase(timeline::kMerged);
  timeline::phase(timeline::kStop);
}

}  // namespace mlakit::mla_v1
