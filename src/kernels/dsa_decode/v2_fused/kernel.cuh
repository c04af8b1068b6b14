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
//   warps 0-3 (0-7: two warpgroups, 16 heads each): consumers (consumer_mma.cuh): QK, online
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
// Devlog: docs/kernels/dsa_decode_v2_fused.md
// The non-template device functions are inline: v2_fp8 includes this file too.
#pragma once

#include <cstdint>

#include "kernels/common/bf16x2.cuh"
#include "kernels/common/chunk_merge.cuh"
#include "kernels/common/timeline.cuh"
#include "kernels/dsa_decode/common/gather_ring.cuh"
#include "kernels/dsa_decode/common/row_slice.cuh"
#include "kernels/dsa_decode/v2_fused/consumer_mma.cuh"

namespace mlakit::dsa_v2 {

template <Gather G, int Producers, int Wgs, class Smem>
__device__ void init_barriers(Smem& s, uint32_t q_arrivals) {
  if (threadIdx.x != 0) return;
  for (auto& b : s.full) mbar_init(&b, kFullArrivals<G, Producers>);
  for (auto& b : s.empty) mbar_init(&b, kConsumerThreads * Wgs);  // every consumer thread releases
  mbar_init(&s.q_full, q_arrivals);  // the cp.async arrivals of the threads that copy Q
  mbar_fence_init();
}

// Consumer warp k of kParts: heads [head0 + k n, head0 + k n + n), n = 16 / kParts, of token t's Q
// into rows [k n, k n + n) of `q` (pitch kKvPitch) by cp.async, issued before the index row is
// known; once the split is known each thread arrives on q_full (working CTA) or waits for its
// copies (idle CTA). The mma.sync path's consumer warps share Q this way: issued by one warp,
// its ~400 instructions (48 copies per lane at 16 heads) made the slice's barriers wait for that
// warp; issued by the consumers after the slice, Q went out with the first stages' DRAM reads
// (serving T = 256 +1 us).
template <int kParts>
__device__ void load_q_share(const Params& p, uint16_t* q, int t, int head0, int k) {
  static_assert(kHeads % kParts == 0, "whole heads per warp");
  constexpr int n = kHeads / kParts;
  const DsaTensors& x = p.io;
  const int h = head0 + k * n;
  load_query(static_cast<const uint16_t*>(x.q_nope) + t * x.q_nope_stride_t + h * x.q_nope_stride_h, x.q_nope_stride_h,
             static_cast<const uint16_t*>(x.q_pe) + t * x.q_pe_stride_t + h * x.q_pe_stride_h, x.q_pe_stride_h, n,
             q + k * n * kKvPitch);
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

// In the functions below `hb` is a block of 16 heads, t x H / 16 + h / 16 (a consumer warpgroup's:
// (t x head_groups + group) x Wgs + warpgroup): the output rows [16 hb, 16 hb + 16) of [T x H, 512]
// (contiguous) and the block's partials.

// Where the partials of one block's splits sit in part_o / part_ml: split j's 16 rows start at row
// first + j x stride. Without pooling [hb][max_splits][16]; pooled (row_slice.cuh) [compact split]
// [blocks of the token][16], the compact split of a row's split j being first_split + j.
struct SplitRows {
  int64_t first, stride;
};
// Without pooling (also h64 and v2_fp8): block hb's max_splits slots of 16 rows.
__device__ __forceinline__ SplitRows block_rows(const Params& p, int hb) {
  return {int64_t(hb) * p.max_splits * kHeads, kHeads};
}
template <bool Pooled>
__device__ __forceinline__ SplitRows split_rows(const Params& p, int hb, int first_split, int block_in_token,
                                                int blocks_per_token) {
  if constexpr (!Pooled) return block_rows(p, hb);
  return {(int64_t(first_split) * blocks_per_token + block_in_token) * kHeads, int64_t(blocks_per_token) * kHeads};
}

// Output 0 and lse -inf for a token without a valid slot (all threads of the CTA).
__device__ inline void store_empty(const Params& p, int hb) {
  auto* out = reinterpret_cast<uint4*>(static_cast<uint16_t*>(p.io.output) + int64_t(hb) * kHeads * kDimV);
  for (int i = threadIdx.x; i < kHeads * kDimV / 8; i += blockDim.x) out[i] = make_uint4(0, 0, 0, 0);
  if (threadIdx.x < kHeads) p.io.lse[hb * kHeads + threadIdx.x] = -INFINITY;
}

// The mma.sync fragments of O give a lane two bf16 (4 bytes) of a row per n8 tile: a quad's 16
// contiguous bytes fill half a sector, and a warp's store touches 8 rows. Stored straight, one
// warpgroup's 16 x 512 bf16 took ~1,800 cycles (devlog step 19). So each warp stages its 16 x 128
// block in its warpgroup's Q / partial-S area (free: reduce_row_sums' barrier is behind every read
// of it) and writes whole rows, 512 contiguous bytes per instruction. The staged rows are 136 bf16
// apart, so that a quad's pieces of 8 rows land in distinct banks.
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

// One split: O / l as bf16 and lse = m + log2(l) (consumer threads, after reduce_row_sums).
template <class Part>
__device__ void store_output(const Params& p, Part& part, int hb, const RowState& st, const float (&l_total)[2],
                             const float (&o)[kOTiles][4]) {
  const float inv[2] = {fast_rcp(l_total[0]), fast_rcp(l_total[1])};
  store_rows_bf16(part, static_cast<uint16_t*>(p.io.output) + int64_t(hb) * kHeads * kDimV, inv, o);
  const int lane = threadIdx.x % 32, g = lane / 4;
  if (wg_warp() == 0 && lane % 4 == 0) {
    p.io.lse[hb * kHeads + g] = st.m[0] + fast_log2(l_total[0]);
    p.io.lse[hb * kHeads + g + 8] = st.m[1] + fast_log2(l_total[1]);
  }
}

// The partial O rows of every v2_fused kernel and of v2_fp8 are bf16 (kDimV per row, in the first
// half of the fp32 layout's region): half the bytes through L2 on the store and on the merge's
// loads (devlog steps 20 and 21).
__device__ __forceinline__ uint16_t* part_o_bf16(const Params& p) { return reinterpret_cast<uint16_t*>(p.part_o); }

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

// Every CTA of the row has published its partial once this returns. The threads that wrote the
// partials call it (thread 0 among them); `sync` is their barrier (all threads by default).
// Thread 0 also counts the CTA's leave right after its wait (counters[1]: a CTA counted there is
// past its poll of counters[0]) and returns how many had left before it; the answer travels while
// the CTA merges and is read by leave_row after the merge, so that no CTA's end waits for the
// atomic's round trip.
template <class Sync>
__device__ uint32_t wait_for_row(uint32_t* counters, int splits, Sync&& sync) {
  sync();
  uint32_t left_before = 0;
  if (threadIdx.x == 0) {
    __threadfence();
    atomicAdd(&counters[0], 1u);
    MLAKIT_STAMP(true, kArrived);
    while (ld_acquire_gpu(&counters[0]) < uint32_t(splits)) __nanosleep(32);
    __threadfence();
    left_before = atomicAdd(&counters[1], 1u);
  }
  sync();
  return left_before;
}
__device__ inline uint32_t wait_for_row(uint32_t* counters, int splits) {
  return wait_for_row(counters, splits, [] { __syncthreads(); });
}

// The last CTA of the row to leave (wait_for_row's answer) resets both counters: every other one
// is past its wait.
__device__ inline void leave_row(uint32_t* counters, int splits, uint32_t left_before) {
  if (threadIdx.x == 0 && left_before == uint32_t(splits - 1)) {
    counters[0] = 0;
    counters[1] = 0;
  }
}

// Split s merges output chunks [s * 1024 / splits, (s + 1) * 1024 / splits) of the row, a chunk
// being 8 dims of one head, straight from the (L2-resident) partials, one thread per chunk and no
// shared memory: one pass over the splits in order with a running max M, the partials of
// kMergeBatch splits loaded together (L2 latency per batch, not per split), and
// O = sum_j 2^(m_j - M) O_j / sum_j 2^(m_j - M) l_j rescaled whenever M grows. Every thread of a
// head sees the same splits in the same order: the result is deterministic.
constexpr int kMergeBatch = 8;

// O / l of a merged chunk as bf16 into dims [d0, d0 + 8) of head h of block hb; the lse with the
// chunk of dim 0.
__device__ __forceinline__ void store_chunk(const Params& p, const ChunkMerge& m, int hb, int h, int d0) {
  *reinterpret_cast<uint4*>(static_cast<uint16_t*>(p.io.output) + (int64_t(hb) * kHeads + h) * kDimV + d0) = m.output();
  if (d0 == 0) p.io.lse[hb * kHeads + h] = m.lse();
}

// Threads [0, threads) take part; the O partials are bf16 (part_o_bf16).
__device__ inline void merge_splits(const Params& p, SplitRows rows, int hb, int split, int splits, int threads) {
  constexpr int kChunks = kHeads * kDimV / 8;
  const float2* ml = p.part_ml + rows.first;
  const uint16_t* part = part_o_bf16(p) + rows.first * kDimV;
  const int begin = split * kChunks / splits, end = (split + 1) * kChunks / splits;
  for (int c = begin + threadIdx.x; c < end; c += threads) {
    const int h = c / (kDimV / 8), d0 = (c % (kDimV / 8)) * 8;
    ChunkMerge m;
    for (int j0 = 0; j0 < splits; j0 += kMergeBatch) {
      float4 a[kMergeBatch], b[kMergeBatch];
      float2 v[kMergeBatch];
#pragma unroll
      for (int u = 0; u < kMergeBatch; ++u) {  // all loads of the batch first
        const bool in = j0 + u < splits;
        const int64_t row = (j0 + u) * rows.stride + h;
        const uint4 x = in ? *reinterpret_cast<const uint4*>(part + row * kDimV + d0) : make_uint4(0, 0, 0, 0);
        a[u] = unpack_bf16x4(x.x, x.y);
        b[u] = unpack_bf16x4(x.z, x.w);
        v[u] = in ? ml[row] : float2{};
      }
#pragma unroll
      for (int u = 0; u < kMergeBatch; ++u) m.add(v[u].x, v[u].y, a[u], b[u]);  // l = 0 past the splits
      MLAKIT_STAMP(threadIdx.x == 0 && j0 == 0 && c == begin, kMergeLoaded);
    }
    store_chunk(p, m, hb, h, d0);
  }
}
// Rows of S = 2..4 splits (a launch whose max_splits is at most 4: T >= 33 at 16 heads), in a
// kernel instance of their own (the kernels' FewSplits twins): a thread loads the partials of
// kMergeBatch / S chunks before folding any, so a CTA with more chunks than threads (S = 2: 512 at
// 16 heads, two per thread) waits for one L2 round trip instead of one per chunk. The splits fold in the same order
// as merge_splits: the same bits. (Step 20 put this walk in merge_splits itself, -0.4 to -1.3 us at
// serving T = 64, but every row that never ran it lost 0.05-0.2 us: devlog step 31.)
template <int S>
__device__ void merge_few_splits_of(const Params& p, SplitRows rows, int hb, int split, int threads) {
  constexpr int kChunks = kHeads * kDimV / 8, kGroup = kMergeBatch / S;
  const float2* ml = p.part_ml + rows.first;
  const uint16_t* part = part_o_bf16(p) + rows.first * kDimV;
  const int end = (split + 1) * kChunks / S;
  for (int c0 = split * kChunks / S + int(threadIdx.x); c0 < end; c0 += threads * kGroup) {
    uint4 x[kGroup][S];
    float2 v[kGroup][S];
#pragma unroll
    for (int k = 0; k < kGroup; ++k) {  // every load of the round first
      const int c = c0 + k * threads, h = c / (kDimV / 8), d0 = (c % (kDimV / 8)) * 8;
      const bool in = c < end;
#pragma unroll
      for (int j = 0; j < S; ++j) {
        const int64_t row = j * rows.stride + h;
        x[k][j] = in ? *reinterpret_cast<const uint4*>(part + row * kDimV + d0) : make_uint4(0, 0, 0, 0);
        v[k][j] = in ? ml[row] : float2{};
      }
    }
#pragma unroll
    for (int k = 0; k < kGroup; ++k) {
      const int c = c0 + k * threads;
      if (c >= end) break;
      ChunkMerge m;
#pragma unroll
      for (int j = 0; j < S; ++j)
        m.add(v[k][j].x, v[k][j].y, unpack_bf16x4(x[k][j].x, x[k][j].y), unpack_bf16x4(x[k][j].z, x[k][j].w));
      store_chunk(p, m, hb, c / (kDimV / 8), (c % (kDimV / 8)) * 8);
    }
  }
}
__device__ inline void merge_few_splits(const Params& p, SplitRows rows, int hb, int split, int splits, int threads) {
  switch (splits) {
    case 2: return merge_few_splits_of<2>(p, rows, hb, split, threads);
    case 3: return merge_few_splits_of<3>(p, rows, hb, split, threads);
    case 4: return merge_few_splits_of<4>(p, rows, hb, split, threads);
    default: __trap();  // the launch takes this instance only for max_splits <= 4
  }
}

// Partials per block (no pooling): h64 and v2_fp8.
__device__ inline void merge_splits(const Params& p, int hb, int split, int splits, int threads) {
  merge_splits(p, block_rows(p, hb), hb, split, splits, threads);
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
  MLAKIT_STAMP(threadIdx.x == 0, kRowSums);
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
  MLAKIT_STAMP_START(threadIdx.x == 0);
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
  MLAKIT_STAMP(threadIdx.x == 0, kSliced);
  MLAKIT_STAMP_VALUE(threadIdx.x == 0, kCount, uint64_t(rs.count) | (uint64_t(rs.splits) << 32));
  const int block = row * p.head_groups + group;  // this CTA's heads: 16-head blocks [Wgs block, + Wgs)
  const bool works = split < rs.splits && rs.n_valid > 0;
  post_q<Pooled, Wgs>(p, s, t, row, group, warp, works);
  if (!works) {  // beyond the row's splits, or an empty row (one split, output 0)
    if (split == 0)
      for (int w = 0; w < Wgs; ++w) store_empty(p, block * Wgs + w);
    MLAKIT_STAMP_STOP(threadIdx.x == 0);
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
    MLAKIT_STAMP(threadIdx.x == 0, kStored);
  }
  if (rs.splits == 1) {
    MLAKIT_STAMP_STOP(threadIdx.x == 0);
    return;
  }
  uint32_t* counters = p.counters + 2 * block;
  const uint32_t left_before = wait_for_row(counters, rs.splits);
  MLAKIT_STAMP(threadIdx.x == 0, kMet);
  for (int w = 0; w < Wgs; ++w) {
    const SplitRows rows = split_rows<Pooled>(p, block * Wgs + w, first_split, group * Wgs + w, blocks_per_token);
    if constexpr (FewSplits) merge_few_splits(p, rows, block * Wgs + w, split, rs.splits, blockDim.x);
    else merge_splits(p, rows, block * Wgs + w, split, rs.splits, blockDim.x);
  }
  MLAKIT_STAMP(threadIdx.x == 0, kMerged);
  leave_row(counters, rs.splits, left_before);
  MLAKIT_STAMP_STOP(threadIdx.x == 0);
}

}  // namespace mlakit::dsa_v2
