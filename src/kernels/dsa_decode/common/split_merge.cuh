// The meeting and merge of a split row's CTAs in the single-launch DSA kernels (v2_fused, v2_fp8
// and the 64-head CTA of both): Q shares of the consumer warps, where each 16-head block's
// partials sit, the arrival counters, the merge of the partials in split order (deterministic),
// and the empty row's output.
#pragma once

#include <cstdint>

#include "kernels/common/bf16x2.cuh"
#include "kernels/common/chunk_merge.cuh"
#include "kernels/common/row_copy.cuh"
#include "kernels/common/timeline.cuh"
#include "kernels/dsa_decode/common/split_params.h"

namespace mlakit::dsa_split {

using namespace mlakit::kernels;
using kernels::kKvPitch;

// Consumer warp k of kParts: heads [head0 + k n, head0 + k n + n), n = 16 / kParts, of token t's Q
// into rows [k n, k n + n) of `q` (pitch kKvPitch) by cp.async, issued before the index row is
// known; once the split is known each thread arrives on q_full (working CTA) or waits for its
// copies (idle CTA). The mma.sync path's consumer warps share Q this way: issued by one warp,
// its 48 copies per lane at 16 heads made the slice's barriers wait for that warp; issued by the
// consumers after the slice, Q competed with the first stages' DRAM reads.
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
// Output 0 and lse -inf for a token without a valid slot (all threads of the CTA).
__device__ inline void store_empty(const Params& p, int hb) {
  auto* out = reinterpret_cast<uint4*>(static_cast<uint16_t*>(p.io.output) + int64_t(hb) * kHeads * kDimV);
  for (int i = threadIdx.x; i < kHeads * kDimV / 8; i += blockDim.x) out[i] = make_uint4(0, 0, 0, 0);
  if (threadIdx.x < kHeads) p.io.lse[hb * kHeads + threadIdx.x] = -INFINITY;
}

// The partial O rows of every v2_fused kernel and of v2_fp8 are bf16 (kDimV per row, in the first
// half of the fp32 layout's region): half the bytes through L2 on the store and on the merge's
// loads (docs/knowledge/epilogue.md).
__device__ __forceinline__ uint16_t* part_o_bf16(const Params& p) { return reinterpret_cast<uint16_t*>(p.part_o); }

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
  const auto head = [&] { return hb * kHeads % p.num_heads + h; };
  *reinterpret_cast<uint4*>(static_cast<uint16_t*>(p.io.output) + (int64_t(hb) * kHeads + h) * kDimV + d0) =
      m.output(sink_share(p.io.attn_sink, head, m.m));
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
    }
    store_chunk(p, m, hb, h, d0);
  }
}
// Rows of S = 2..4 splits (a launch whose max_splits is at most 4: T >= 33 at 16 heads), in a
// kernel instance of their own (the kernels' FewSplits twins): a thread loads the partials of
// kMergeBatch / S chunks before folding any, so a CTA with more chunks than threads (S = 2: 512 at
// 16 heads, two per thread) waits for one L2 round trip instead of one per chunk. The splits fold in the same order
// as merge_splits: the same bits. (The walk inside merge_splits itself helped these rows but
// slowed every row that never ran it, so it lives in an instance of its own.)
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

}  // namespace mlakit::dsa_split
