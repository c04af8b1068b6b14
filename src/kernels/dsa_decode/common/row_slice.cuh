// One CTA's slice of one token's top-k row: the whole row is read and its valid slots counted
// (so every CTA of the row derives the same split from the data, on the GPU), and the slots of
// this CTA's split are written densely, in order, into shared memory.
#pragma once

#include <cstdint>

#include "kernels/common/gather.cuh"
#include "kernels/dsa_decode/common/row_ring.h"

namespace mlakit::dsa_ring {

struct RowSlice {
  int n_valid;  // valid slots of the whole row
  int splits;   // CTAs working on the row
  int count;    // slots of this CTA's split (0 when the CTA has no work)
};

// Entry x (kept: a valid slot) at row position pos: written to slots[pos - begin] when that is in
// [0, count), and pos moves past it. Without a branch: a kept entry in the split is one predicated
// store, so the unrolled loop over a thread's entries is straight-line code (a branch per entry
// puts its reconvergence on every CTA's critical path: docs/knowledge/prologues.md).
__device__ __forceinline__ void place_entry(int32_t x, bool kept, int& pos, int begin, int count, int32_t* slots) {
  const int at = pos - begin;
  if (kept && uint32_t(at) < uint32_t(count)) slots[at] = x;
  pos += int(kept);
}

// split_row() for a row of at most kMaxRowEntries entries, its divisions by float (row_ring.h).
__device__ __forceinline__ RowSplit split_row_small(int n, int max_splits, int min_rows, int whole_rows) {
  return split_row_by(
      n, max_splits, min_rows, [](int a, int b) { return int(__fdividef(ceil_div_numerator(a, b), float(b))); },
      whole_rows);
}

// Issues the loads of entries [tid * kPerThread, tid * kPerThread + kPerThread) of the row
// (16-byte loads when the row is aligned; -1 past topk) and returns without waiting for them: a
// kernel issues them first, so that their round trip overlaps its set-up (barriers, Q's copies).
template <int kPerThread>
__device__ __forceinline__ void load_entries(const int32_t* row, int topk, int32_t (&v)[kPerThread]) {
  static_assert(kPerThread % 4 == 0, "entries are loaded four at a time");
  const int first = threadIdx.x * kPerThread;
  if (reinterpret_cast<uintptr_t>(row) % 16 == 0 && first + kPerThread <= topk) {
#pragma unroll
    for (int j = 0; j < kPerThread; j += 4) {
      const int4 q = __ldg(reinterpret_cast<const int4*>(row + first + j));
      v[j] = q.x, v[j + 1] = q.y, v[j + 2] = q.z, v[j + 3] = q.w;
    }
  } else {
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) v[j] = first + j < topk ? __ldg(row + first + j) : -1;
  }
}

// All kThreads threads call it with the entries load_entries read. `warp_count` is kThreads / 32
// ints of shared scratch. Keeps the values in [0, num_slots), counts them over the CTA and ends
// with a CTA barrier, after which slots[0, count) holds the split's slots. `whole_rows`: the
// split_row_by argument (merging_whole_rows for a kernel that merges its splits, 0 for a floor).
// on_split(plan) runs on every thread once the row's split plan is known (after the count's
// barrier, before the compaction's stores).
struct NoSplitHook {
  __device__ void operator()(const RowSplit&) const {}
};
template <int kThreads, int kPerThread, class OnSplit = NoSplitHook>
__device__ RowSlice slice_entries(int32_t (&v)[kPerThread], int64_t num_slots, int split, int max_splits,
                                  int min_rows, int whole_rows, int32_t* slots, int* warp_count,
                                  OnSplit on_split = {}) {
  constexpr int kWarps = kThreads / 32;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  int mine = 0;
#pragma unroll
  for (int j = 0; j < kPerThread; ++j) {
    if (v[j] < 0 || v[j] >= num_slots) v[j] = -1;
    mine += v[j] >= 0;
  }
  int inclusive = mine;  // warp-inclusive scan of the per-thread counts
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    const int up = __shfl_up_sync(0xffffffffu, inclusive, d);
    if (lane >= d) inclusive += up;
  }
  if (lane == 31) warp_count[warp] = inclusive;
  __syncthreads();
  int pos = inclusive - mine, n = 0;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    const int c = warp_count[w];
    pos += w < warp ? c : 0;
    n += c;
  }
  static_assert(kThreads * kPerThread <= kMaxRowEntries, "split_row_small covers the row");
  const RowSplit rs = split_row_small(n, max_splits, min_rows, whole_rows);
  on_split(rs);
  const int begin = split * rs.rows_per_split;
  const int count = split < rs.splits ? min(rs.rows_per_split, n - begin) : 0;
#pragma unroll
  for (int j = 0; j < kPerThread; ++j) place_entry(v[j], v[j] >= 0, pos, begin, count, slots);
  __syncthreads();
  return RowSlice{n, rs.splits, count > 0 ? count : 0};
}

// The first tiles of a split row's splits prefetched into L2 while the row is sliced
// (docs/knowledge/rings-and-l2.md). When many CTAs start long rows at once, their first tiles are
// requested after the slice (index row, scan and plan) and land at DRAM's pace; asked for as soon as
// the index row lands, those bytes come while the CTAs still compact. Each CTA guesses without the
// scan: split s of a full row is raw positions [s per, (s + 1) per), per as split_row() gives it
// for topk valid slots, and the CTA prefetches the first kFirstTileRows of that window (the head
// groups of a split take alternate positions). So the CTAs of a row cover every window whatever
// the row's valid count; a row with holes moves its slots to other splits, whose rows some other
// CTA of the row prefetched. Only rows of two splits or more prefetch (the hook below): a row that
// one CTA takes whole gains nothing and pays the prefetch's load-store issue on its slice.
// prefetch.global.L2, one per 128-byte line: the bulk form goes through the copy unit ahead of the
// CTA's own bulk copies and delays them, which short rows feel most.
constexpr int kFirstTileRows = 64;  // one tile (chosen by measurement: docs/kernels/dsa_decode_v2_fused.md)

// The line prefetches of kBytes from `at` (16-byte aligned; a row that crosses one more line than
// kBytes / 128 leaves its last line out: the prefetch is a hint).
template <int kBytes>
__device__ __forceinline__ void prefetch_lines_l2(const void* at, bool on) {
#pragma unroll
  for (int b = 0; b < kBytes; b += 128)
    if (on) asm volatile("prefetch.global.L2 [%0];" ::"l"(static_cast<const uint8_t*>(at) + b));
}

// RowLines(slot, on): the prefetches of one slot's row (on: the slot is valid). kThreads: the CTA's.
template <int kThreads, class RowLines>
struct FirstTiles {
  static constexpr int kPer = (kFirstTileRows + kThreads - 1) / kThreads;  // positions per thread
  int32_t e[kPer > 0 ? kPer : 1];
  int64_t num_slots;
  RowLines lines;

  // At the kernel's start, beside the index row's own loads: this CTA's positions of its window.
  __device__ FirstTiles(const int32_t* row, int topk, int64_t num_slots_, int split, int max_splits, int min_rows,
                        int group, int groups, RowLines lines_)
      : num_slots(num_slots_), lines(lines_) {
    const int per = split_row_small(topk, max_splits, min_rows, 0).rows_per_split;  // a full row's
    const int begin = split * per, end = min(topk, begin + min(per, kFirstTileRows));
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      const int pos = begin + group + groups * (int(threadIdx.x) + k * kThreads);
      e[k] = pos < end ? __ldg(row + pos) : -1;
    }
  }
  // slice_entries' hook: the prefetches, when the row has two splits or more.
  __device__ void operator()(const RowSplit& plan) const {
    if (kPer == 0 || plan.splits < 2) return;
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      const bool on = e[k] >= 0 && e[k] < num_slots;
      lines(on ? e[k] : 0, on);
    }
  }
};

// Both steps at once: the whole row read, counted and this split's slots compacted (no row kept
// whole: the gather floors' slicing).
template <int kThreads, int kPerThread>
__device__ RowSlice slice_row(const int32_t* row, int topk, int64_t num_slots, int split, int max_splits,
                              int min_rows, int32_t* slots, int* warp_count) {
  int32_t v[kPerThread];
  load_entries<kPerThread>(row, topk, v);
  return slice_entries<kThreads, kPerThread>(v, num_slots, split, max_splits, min_rows, 0, slots, warp_count);
}

// Pooled rows (a tiling's b1, T <= kMaxPoolTokens; the rule in row_ring.h): every CTA reads all T
// rows in one round trip and derives the same plan.
struct PooledSlice {
  RowSlice rs;      // of the row this CTA works on (count 0: idle, or an empty row's own CTA 0)
  int row;          // that row's token (the CTA's own token when it is idle)
  int split;        // which of the row's splits (ctas_per_token, past any row's own, when idle)
  int first_split;  // the splits of the rows before it (the compact partial index of split 0)
};

// All kThreads threads call it. `scratch` holds pooled_scratch_ints(T, topk, kThreads / 32) ints
// of shared memory that nothing else uses until it returns (the ring, before the first stage).
// Warp `late_warp` copies nothing and holds no entries (kThreads - 32 threads cover kMaxTopk): it
// has copies in flight (the caller's Q) that the index rows must not wait for. Ends with a CTA barrier,
// after which slots[0, count) holds the split's slots and `scratch` may be overwritten by bulk
// copies (the async proxy).
template <int kThreads, int kPerThread>
__device__ PooledSlice slice_pooled(const int32_t* indices, int64_t stride_t, int num_tokens, int topk,
                                    int64_t num_slots, int token, int cta, int ctas_per_token, int min_rows,
                                    int late_warp, int32_t* scratch, int32_t* slots) {
  static_assert(kPerThread == 16, "a thread's entries are four 16-byte chunks");
  static_assert(kMaxPoolTokens <= 32, "a warp's lanes hold the rows of the plan");
  constexpr int kWarps = kThreads / 32;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  // The thread's place in row order: every warp but late_warp in order, then late_warp.
  const int order_warp = warp < late_warp ? warp : warp == late_warp ? kWarps - 1 : warp - 1;
  const int ti = order_warp * 32 + lane;                  // entries [16 ti, 16 ti + 16) of the row
  const int active = (topk + kPerThread - 1) / kPerThread;  // threads with entries
  const int pitch = active * kPerThread;                   // >= topk, a multiple of 4
  int32_t* counts = scratch + num_tokens * pitch;          // T row counts, then kWarps warp sums
  // 1. Every row into scratch in row order, all copies in flight at once, the threads of the
  // rows' entries (ti < active) taking consecutive 16-byte chunks (coalesced); past topk -1.
  const bool vec = reinterpret_cast<uintptr_t>(indices) % 16 == 0 && stride_t % 4 == 0;
  const int row_chunks = pitch / 4, copiers = min(active, kThreads - 32);  // never late_warp
  if (ti < copiers) {
    const auto fast = [&](int e) { return vec && e + 4 <= topk; };
    for (int r = 0; r < num_tokens; ++r) {
      const int32_t* src = indices + r * stride_t;
      int32_t* dst = scratch + r * pitch;
#pragma unroll 4
      for (int e = 4 * ti; e < 4 * row_chunks; e += 4 * copiers) {
        if (fast(e)) {
          kernels::cp_async_16(dst + e, src + e, true);
        } else {
#pragma unroll 1
          for (int k = 0; k < 4; ++k) {
            if (e + k < topk) kernels::cp_async_4(dst + e + k, src + e + k);
            else dst[e + k] = -1;
          }
        }
      }
    }
    kernels::cp_async_commit();
    kernels::cp_async_wait<0>();
  }
  __syncthreads();
  // Valid: in [0, num_slots) (int32 indices: one unsigned compare against the limit).
  const uint32_t limit = uint32_t(num_slots < (int64_t(1) << 31) ? num_slots : (int64_t(1) << 31));
  const auto valid4 = [&](const int4& v) {
    return int(uint32_t(v.x) < limit) + int(uint32_t(v.y) < limit) + int(uint32_t(v.z) < limit) +
           int(uint32_t(v.w) < limit);
  };
  // 2. Row r's valid count by warp r % kWarps (any order of its entries: the whole int4 array).
  int32_t* row_n = counts;             // [T]
  int32_t* warp_sum = counts + num_tokens;  // [kWarps], by order_warp
  for (int r = warp; r < num_tokens; r += kWarps) {
    const int4* all = reinterpret_cast<const int4*>(scratch + r * pitch);
    int mine = 0;
#pragma unroll 4
    for (int i = lane; i < 4 * active; i += 32) mine += valid4(all[i]);
    mine = __reduce_add_sync(0xffffffffu, mine);
    if (lane == 0) row_n[r] = mine;
  }
  __syncthreads();
  // 3. The plan of row_ring.h (pool_plan, pool_work), lane r holding row r, the same in every warp.
  const bool is_row = lane < num_tokens;
  const int n_r = is_row ? row_n[lane] : 0;
  const int cap = num_tokens * ctas_per_token;
  int per = ((__reduce_add_sync(0xffffffffu, n_r) + cap - 1) / cap + kStageRows - 1) / kStageRows * kStageRows;
  if (per < min_rows) per = min_rows;
  int splits_r;
  for (;;) {  // ends: once per covers the longest row every row takes one split, T <= cap
    splits_r = is_row ? (n_r == 0 ? 1 : (n_r + per - 1) / per) : 0;
    if (__reduce_add_sync(0xffffffffu, splits_r) <= cap) break;
    per += kStageRows;
  }
  const int used_r = min(splits_r, ctas_per_token);
  const int unused_r = is_row ? ctas_per_token - used_r : 0, extra_r = splits_r - used_r;
  const auto exclusive = [&](int x) {  // over the lanes (rows) before this one
    int inclusive = x;
#pragma unroll
    for (int d = 1; d < kMaxPoolTokens; d *= 2) {
      const int up = __shfl_up_sync(0xffffffffu, inclusive, d);
      if (lane >= d) inclusive += up;
    }
    return inclusive - x;
  };
  const int splits_before = exclusive(splits_r), unused_before = exclusive(unused_r);
  const int extra_before = exclusive(extra_r);
  const int own = __shfl_sync(0xffffffffu, used_r, token);
  int row = -1, split = 0;
  if (cta < own) {
    row = token, split = cta;
  } else {  // this CTA among the unused ones in (token, split) order takes the k-th split past S
    const int k = __shfl_sync(0xffffffffu, unused_before, token) + cta - own;
    const uint32_t hit = __ballot_sync(0xffffffffu, is_row && k >= extra_before && k < extra_before + extra_r);
    if (hit != 0) row = __ffs(hit) - 1;
    const int before = __shfl_sync(0xffffffffu, extra_before, row < 0 ? 0 : row);
    if (row >= 0) split = ctas_per_token + k - before;
  }
  const int src = row < 0 ? 0 : row;
  const int first_split = __shfl_sync(0xffffffffu, splits_before, src);
  const int work_n = __shfl_sync(0xffffffffu, n_r, src), work_splits = __shfl_sync(0xffffffffu, splits_r, src);
  // An idle CTA: its own token, a split past the row's (neither works nor writes an empty row).
  PooledSlice out{RowSlice{0, 1, 0}, row < 0 ? token : row, row < 0 ? ctas_per_token : split, first_split};
  if (row >= 0) out.rs.n_valid = work_n, out.rs.splits = work_splits;
  // 4. The split's slots, in row order, densely into `slots` (the same branch for the whole CTA).
  const bool compact = row >= 0 && work_n > 0;
  int4 v[kPerThread / 4];
  int mine = 0, inclusive = 0;
  if (compact) {
#pragma unroll
    for (int c = 0; c < kPerThread / 4; ++c) {
      v[c] = ti < active ? reinterpret_cast<const int4*>(scratch + row * pitch)[4 * ti + c] : make_int4(-1, -1, -1, -1);
      mine += valid4(v[c]);
    }
    inclusive = mine;
#pragma unroll
    for (int d = 1; d < 32; d *= 2) {
      const int up = __shfl_up_sync(0xffffffffu, inclusive, d);
      if (lane >= d) inclusive += up;
    }
    if (lane == 31) warp_sum[order_warp] = inclusive;
  }
  __syncthreads();
  if (compact) {
    const int begin = split * per, count = min(per, work_n - begin);
    out.rs.count = count;
    int pos = inclusive - mine;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) pos += w < order_warp ? warp_sum[w] : 0;
    const auto place = [&](int32_t x) { place_entry(x, uint32_t(x) < limit, pos, begin, count, slots); };
#pragma unroll
    for (int c = 0; c < kPerThread / 4; ++c) place(v[c].x), place(v[c].y), place(v[c].z), place(v[c].w);
  }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // these reads before the ring's bulk copies
  __syncthreads();
  return out;
}

}  // namespace mlakit::dsa_ring
