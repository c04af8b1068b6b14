// The persistent split-KV schedule of mla_decode v1_paged, computed by every CTA from
// cache_seqlens on the GPU (no metadata launch, nothing from the host: the call is graph
// capturable and balanced whatever the lengths).
//
// Group (i, hb) of the grid sees request b as one work item of len_b = ceil(n_{b,i} / 64) + 1
// units: one unit of fixed cost (Q, epilogue), then one unit per 64-row tile. The group's items
// are one flat sequence of W units, and CTA c of the group's n CTAs takes a contiguous range of
// it, cut one of two ways (every CTA of the group computes both and makes the same choice):
//   - units: [floor(c W / n), floor((c + 1) W / n)). The items that sequence cuts are "split":
//     every CTA that holds a piece of one writes a partial into its own workspace slot (slot 0 for
//     its first item, 1 for its last) and the pieces merge after all CTAs finished their pieces.
//   - whole items: each of those boundaries moved to the item edge nearest to it, so no item is
//     split (some CTAs may hold none). Taken when its longest range is at most the units cut's
//     longest range plus Params::whole units (tiling field w, default 8): about what splits cost
//     a CTA (partials stored and merged at the end, Q loaded per piece, the wait for an item's
//     slowest piece; docs/kernels/mla_decode_v1_paged.md, "Whole items").
//   - aligned pieces (where whole items are not taken and the batch has 2..n requests; in the
//     64-row kernel only its kAligned instance): item b in k_b = max(1, floor(len_b n / W)) equal
//     pieces, CTA K_b + j holding piece j (K_b = k_0 + ... + k_{b-1}; CTAs from sum k_b on hold
//     none), so that no CTA holds parts of two items: one Q, one partial and one merge per CTA
//     instead of two. Equal lengths give every item the same k: 32 requests of 4k over 132 CTAs
//     are 4 pieces each on 128 CTAs.
//     Taken under the same rule as whole items (its longest range against the units cut's).
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/common/timeline.cuh"
#include "kernels/mla_decode/v1_paged/traits.h"

namespace mlakit::mla_v1 {

// Rows query position `qpos` of request b sees: the clamped seqlen, less the causal offset.
__device__ __forceinline__ int visible_rows(const Params& p, int b, int qpos) {
  int64_t n = __ldg(p.io.cache_seqlens + b);
  n = n < 0 ? 0 : (n > p.max_seqlen ? p.max_seqlen : n);
  if (p.causal) n = n - (p.seq_q - 1 - qpos) < 0 ? 0 : n - (p.seq_q - 1 - qpos);
  return int(n);
}
__device__ __forceinline__ int item_units(int rows) { return (rows + kUnitRows - 1) / kUnitRows + kRequestCost; }

// First unit of CTA c's range, and the CTA whose range holds unit x (the largest c with
// boundary(c) <= x). With n <= total, boundaries strictly increase: every CTA holds a unit.
__device__ __forceinline__ int64_t boundary(int c, int n, int64_t total) { return int64_t(c) * total / n; }
__device__ __forceinline__ int owner(int64_t x, int n, int64_t total) {
  return int(((x + 1) * n + total - 1) / total - 1);
}

// One CTA's range of its group's sequence: units [lo, hi), items first..last. The sequence is cut
// over n = min(CTAs of the group, total) CTAs, so that no CTA inside an item's span is empty (a
// split item counts every CTA between its first and its last as a piece).
struct Range {
  int64_t total, lo, hi;
  int n;
  int first, last;     // requests
  int64_t first_unit;  // first unit of request `first`
  // The cut, in one register (Range stays live through the consumers' loops): 0 the units cut, -1
  // whole items (every item of the range held whole), else aligned pieces: the item's pieces << 16
  // | the CTA holding its first piece (the range is piece cta - that of item `first`).
  int cut;
  static_assert(kMaxCtas < (1 << 15), "a group's CTA index and piece count fit 16 and 15 bits");
  __device__ bool whole() const { return cut < 0; }
  __device__ bool aligned() const { return cut > 0; }
  __device__ int item_cta() const { return cut & 0xffff; }
  __device__ int item_pieces() const { return cut >> 16; }
  __device__ bool empty() const { return lo >= hi; }
};

// The schedule's phase stamps (timeline.cuh); true when the CTA holds no units (more CTAs than
// units), its stop stamped: the kernel then returns.
__device__ __forceinline__ bool holds_nothing(const Range& r) {
  namespace timeline = kernels::timeline;
  timeline::phase(timeline::kSliced);
  timeline::phase_value(timeline::kCount, uint64_t(r.hi - r.lo) | (uint64_t(r.last - r.first + 1) << 32));
  if (!r.empty()) return false;
  timeline::phase(timeline::kStop);
  return true;
}

// `v` with every 32-bit word lane 0's: the fields of a schedule value (a Range, a Piece), the same
// in every lane but loaded from shared memory or chosen by a branch on such a value. The compiler
// then knows the loops and branches that follow are warp-uniform, and keeps what derives from them
// in uniform registers (docs/knowledge/codegen.md).
// Call it with the whole warp.
template <class T>
__device__ __forceinline__ T warp_uniform(T v) {
  static_assert(sizeof(T) % sizeof(uint32_t) == 0, "whole 32-bit words");
  uint32_t w[sizeof(T) / sizeof(uint32_t)];
  memcpy(w, &v, sizeof(T));
#pragma unroll
  for (auto& x : w) x = __shfl_sync(0xffffffffu, x, 0);
  memcpy(&v, w, sizeof(T));
  return v;
}

// One item's piece in this CTA.
struct Piece {
  int b;           // request
  int64_t unit;    // the item's first unit in the group's sequence
  int units;       // the item's length in units
  int begin, count;  // rows [begin, begin + count) of the request this CTA computes
  int first_cta;   // the CTA holding the item's first unit (its counters)
  int pieces;      // CTAs holding a part of the item (1: not split)
  int slot;        // this CTA's partial slot for the item (when split)
  bool aligned;    // cut in aligned pieces: every piece in slot 0 of its CTA (its only item)
};

__device__ __forceinline__ Piece piece_of(const Params& p, const Range& r, int qpos, int b, int64_t unit) {
  const int n = r.n;
  Piece pc;
  const int rows = visible_rows(p, b, qpos);
  pc.b = b;
  pc.unit = unit;
  pc.units = item_units(rows);
  const int64_t u0 = r.lo > unit ? r.lo - unit : 0;
  const int64_t u1 = r.hi - unit < pc.units ? r.hi - unit : pc.units;
  const int64_t t0 = u0 > kRequestCost ? u0 - kRequestCost : 0, t1 = u1 > kRequestCost ? u1 - kRequestCost : 0;
  pc.begin = int(t0 * kUnitRows);
  const int end = int(t1 * kUnitRows < rows ? t1 * kUnitRows : rows);
  pc.count = end > pc.begin ? end - pc.begin : 0;
  pc.first_cta = r.whole() ? int(blockIdx.x) : r.aligned() ? r.item_cta() : owner(unit, n, r.total);
  pc.pieces = r.whole() ? 1 : r.aligned() ? r.item_pieces() : owner(unit + pc.units - 1, n, r.total) - pc.first_cta + 1;
  pc.slot = b == r.first ? 0 : 1;
  pc.aligned = r.aligned();
  return pc;
}

// The partial slot that CTA first_cta + j of a split item wrote it into.
__device__ __forceinline__ int slot_of_piece(const Piece& pc, int j, int n, int64_t total) {
  return !pc.aligned && j == 0 && boundary(pc.first_cta, n, total) < pc.unit ? 1 : 0;
}

// Block-wide exclusive scan of one int64 per thread (kThreads threads); `scratch` holds 32. With
// kTop, also the block's maximum of a second int64 (`top`) through the same barrier (else `top` is
// unused and `block_top` untouched).
template <int kThreads, bool kTop = false>
__device__ int64_t exclusive_scan(int64_t v, int64_t top, int64_t* scratch, int64_t* total, int64_t* block_top) {
  constexpr int kWarps = kThreads / 32;
  static_assert(!kTop || kWarps <= 16, "scratch holds the warps' sums, then their maxima");
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  int64_t inc = v;
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    const int64_t up = __shfl_up_sync(0xffffffffu, inc, d);
    if (lane >= d) inc += up;
    if constexpr (kTop) {
      const int64_t other = __shfl_xor_sync(0xffffffffu, top, d);
      top = other > top ? other : top;
    }
  }
  if (lane == 31) scratch[warp] = inc;
  if (kTop && lane == 0) scratch[16 + warp] = top;
  __syncthreads();
  int64_t before = inc - v, sum = 0, m = 0;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    before += w < warp ? scratch[w] : 0;
    sum += scratch[w];
    if constexpr (kTop) m = scratch[16 + w] > m ? scratch[16 + w] : m;
  }
  *total = sum;
  if constexpr (kTop) *block_top = m;
  return before;
}

// Block-wide maximum of one int64 per thread (kThreads threads); `scratch` holds 32 and is free
// (no thread still reads it). Ends with a CTA barrier after which `scratch` is free again.
template <int kThreads>
__device__ int64_t block_max(int64_t v, int64_t* scratch) {
  constexpr int kWarps = kThreads / 32;
#pragma unroll
  for (int d = 16; d > 0; d /= 2) {
    const int64_t o = __shfl_xor_sync(0xffffffffu, v, d);
    v = o > v ? o : v;
  }
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  int64_t m = scratch[0];
#pragma unroll
  for (int w = 1; w < kWarps; ++w) m = scratch[w] > m ? scratch[w] : m;
  __syncthreads();
  return m;
}

// The aligned-pieces cut (see the file comment): item b in k_b = max(1, floor(len_b n / W))
// equal pieces, piece j on CTA K_b + j. Warp 0 computes it (B <= n requests: at most
// ceil(n / 32) per lane), the other warps wait at the closing barrier; it writes piece[0..4] (this
// CTA's item, its first unit, the range, its first piece's CTA | pieces << 32; when cta < sum k_b)
// and piece[5] = sum k_b (the CTAs holding a piece) when the cut fits the rule, else -1. Every
// thread of the CTA calls it, with 2 <= batch <= n; `piece` (6 int64 of free shared memory) is
// readable after it. One warp, shuffles and one barrier: a block-wide scan would add two. The
// arithmetic: traits.h (aligned_pieces_of, aligned_piece_start, aligned_widest).
__device__ __forceinline__ void aligned_pieces(const Params& p, int qpos, int cta, int n, int64_t total,
                                               int64_t widest_units, int64_t* piece) {
  if (threadIdx.x < 32) {
    const int lane = threadIdx.x;
    const int per = (p.batch + 31) / 32, b0 = lane * per, b1 = min(b0 + per, p.batch);
    int64_t units = 0, widest = 0;
    int k_mine = 0;
#pragma unroll 1
    for (int b = b0; b < b1; ++b) {
      const uint32_t len = uint32_t(item_units(visible_rows(p, b, qpos))), k = aligned_pieces_of(len, n, total);
      units += len;
      k_mine += int(k);
      widest = max(widest, int64_t(aligned_widest(len, k)));
    }
    int64_t u_inc = units;
    int k_inc = k_mine;
#pragma unroll
    for (int d = 1; d < 32; d *= 2) {
      const int64_t u_up = __shfl_up_sync(0xffffffffu, u_inc, d);
      const int k_up = __shfl_up_sync(0xffffffffu, k_inc, d);
      if (lane >= d) u_inc += u_up, k_inc += k_up;
      widest = max(widest, __shfl_xor_sync(0xffffffffu, widest, d));
    }
    const int k_sum = __shfl_sync(0xffffffffu, k_inc, 31);
    const bool taken = k_sum <= n && widest <= widest_units + p.whole;  // warp-uniform
    int kb = k_inc - k_mine;
    if (taken && kb <= cta && cta < kb + k_mine) {  // the lane holding this CTA's item
      int64_t u = u_inc - units;
#pragma unroll 1
      for (int b = b0; b < b1; ++b) {
        const uint32_t len = uint32_t(item_units(visible_rows(p, b, qpos))), k = aligned_pieces_of(len, n, total);
        if (kb <= cta && cta < kb + int(k)) {
          const uint32_t j = uint32_t(cta - kb);
          piece[0] = b, piece[1] = u;
          piece[2] = u + aligned_piece_start(len, k, j);
          piece[3] = u + aligned_piece_start(len, k, j + 1);
          piece[4] = kb | (int64_t(k) << 32);
        }
        u += len, kb += int(k);
      }
    }
    if (lane == 0) piece[5] = taken ? k_sum : -1;
  }
  __syncthreads();
}

// Takes the aligned pieces into `r` where they fit (every thread calls it, as aligned_pieces, with
// 2 <= batch <= n, after a barrier that ended every read of `piece`); ends with a barrier after
// which `piece` is free.
__device__ __forceinline__ void take_aligned_pieces(const Params& p, int qpos, int cta, int64_t widest_units,
                                                    int64_t* piece, Range& r) {
  aligned_pieces(p, qpos, cta, r.n, r.total, widest_units, piece);
  const int64_t holding = piece[5];
  if (holding >= 0) {
    if (cta < holding) {
      r.first = r.last = int(piece[0]);
      r.first_unit = piece[1];
      r.lo = piece[2];
      r.hi = piece[3];
      r.cut = int(piece[4] & 0xffff) | int(piece[4] >> 32) << 16;
    } else {
      r.lo = r.hi = r.total;  // past the pieces: holds none
      r.cut = 1 << 16;
    }
  }
  __syncthreads();  // every read of piece is done
}

// Every thread of the CTA calls it; ends with a CTA barrier after which `edge_scratch` (at least
// kEdgeScratchBytes, 8-byte aligned: the ring before any copy) is free. Thread t sums the units of
// requests [t K, t K + K); the scan gives W and each thread's first unit. The threads whose items
// hold this CTA's boundaries of the units cut find its requests; thread c (and c + kThreads, ...)
// finds the item edge nearest to boundary c for the whole-items cut (a binary search over the
// threads' first units, then the thread's K items); then both cuts' longest ranges decide which one
// the group runs. kSkipWhole: first decide from the longest item whether the whole-items cut can
// be taken at all, and skip its edges when not (the 16-row kernel; the m64 kernel keeps the plain
// schedule: the skip's registers pushed more of its consumers' values into local memory, which
// its compute-bound shapes pay for). kAligned: the aligned pieces may be taken
// (else the cut is one of the other two; the 64-row kernel has an instance of each: with the cut
// its consumers spill and build their wgmma descriptors per thread, paid only by the launches that
// may take it, 2 <= batch <= CTAs per group / 2: launch_m64.cu).
template <int kThreads, bool kSkipWhole = false, bool kAligned = true>
__device__ Range locate_range(const Params& p, int qpos, int cta, int64_t* scan, int64_t* sched, void* edge_scratch) {
  static_assert(kThreads <= kMaxScheduleThreads, "the schedule's scratch holds each thread's first unit");
  auto* first_unit = static_cast<int64_t*>(edge_scratch);  // [kThreads]
  auto* edge_unit = first_unit + kMaxScheduleThreads;      // [n + 1]
  auto* edge_item = reinterpret_cast<int*>(edge_unit + kMaxCtas + 1);
  const int per = (p.batch + kThreads - 1) / kThreads;
  const int b0 = threadIdx.x * per, b1 = min(b0 + per, p.batch);
  int64_t mine = 0, longest_mine = 0;
  for (int b = b0; b < b1; ++b) {
    const int units = item_units(visible_rows(p, b, qpos));
    mine += units;
    longest_mine = units > longest_mine ? units : longest_mine;
  }
  Range r;
  int64_t longest = 0;  // the group's longest item (kSkipWhole)
  const int64_t unit = exclusive_scan<kThreads, kSkipWhole>(mine, longest_mine, scan, &r.total, &longest);
  first_unit[threadIdx.x] = unit;
  r.n = int(r.total < p.ctas_per_group ? r.total : p.ctas_per_group);
  const int n = r.n;
  const int64_t widest_units = (r.total + n - 1) / n;
  // Some CTA's whole-items range holds the longest item, so that cut's widest range is at least
  // `longest`: past the units cut's widest plus `whole`, it cannot be taken, and its edges (a
  // search per boundary, two barriers and a block maximum: a large part of the schedule)
  // are not computed. The same decision as computing them, from block-wide values: every thread
  // takes the same branch.
  const bool whole_possible = !kSkipWhole || longest <= widest_units + p.whole;
  r.lo = cta < n ? boundary(cta, n, r.total) : r.total;
  r.hi = cta < n ? boundary(cta + 1, n, r.total) : r.total;
  if (r.lo < r.hi && unit <= r.hi - 1 && r.lo < unit + mine) {
    int64_t u = unit;
    for (int b = b0; b < b1; ++b) {
      const int64_t len = item_units(visible_rows(p, b, qpos));
      if (u <= r.lo && r.lo < u + len) sched[0] = b, sched[1] = u;
      if (u <= r.hi - 1 && r.hi - 1 < u + len) sched[2] = b;
      u += len;
    }
  }
  __syncthreads();
  r.cut = 0;
  if (!whole_possible) {
    r.first = int(sched[0]);
    r.first_unit = sched[1];
    r.last = int(sched[2]);
    // The aligned pieces (block-uniform condition: every thread takes the same barriers; `scan`'s
    // last reads were before the barrier above).
    if (kAligned && p.batch > 1 && p.batch <= n) take_aligned_pieces(p, qpos, cta, widest_units, edge_unit, r);
    __syncthreads();  // every read of sched is done
    return r;
  }
  // The whole-items cut: the item edge nearest to boundary c (the lower one on a tie). Threads
  // with items have strictly increasing first units (an item is at least one unit); those
  // without any start at W, past every boundary.
  for (int c = threadIdx.x; c < n; c += kThreads) {
    const int64_t t = boundary(c, n, r.total);
    int lo = 0, hi = kThreads - 1;  // the last thread whose first unit is <= t
    while (lo < hi) {
      const int mid = (lo + hi + 1) / 2;
      if (first_unit[mid] <= t) lo = mid;
      else hi = mid - 1;
    }
    int b = lo * per;
    int64_t u = first_unit[lo], len = item_units(visible_rows(p, b, qpos));
    while (t >= u + len) u += len, len = item_units(visible_rows(p, ++b, qpos));
    const bool up = t - u > u + len - t;
    edge_unit[c] = up ? u + len : u;
    edge_item[c] = up ? b + 1 : b;
  }
  if (threadIdx.x == 0) edge_unit[n] = r.total, edge_item[n] = p.batch;
  __syncthreads();
  int64_t widest = 0;
  for (int c = threadIdx.x; c < n; c += kThreads) widest = max(widest, edge_unit[c + 1] - edge_unit[c]);
  const int64_t widest_whole = block_max<kThreads>(widest, scan);
  const bool whole = widest_whole <= widest_units + p.whole;
  r.cut = whole ? -1 : 0;
  if (whole) {
    r.lo = cta < n ? edge_unit[cta] : r.total;
    r.hi = cta < n ? edge_unit[cta + 1] : r.total;
    r.first = cta < n ? edge_item[cta] : p.batch;
    r.first_unit = r.lo;
    r.last = cta < n ? edge_item[cta + 1] - 1 : p.batch - 1;
  } else {
    r.first = int(sched[0]);
    r.first_unit = sched[1];
    r.last = int(sched[2]);
  }
  __syncthreads();  // every read of edge_scratch and sched is done: the ring is the producers'
  // The aligned pieces where the whole items are not kept (block-uniform: `whole` is).
  if (kAligned && !whole && p.batch > 1 && p.batch <= n) take_aligned_pieces(p, qpos, cta, widest_units, edge_unit, r);
  return r;
}

}  // namespace mlakit::mla_v1
