// The gathered-row ring of the single-launch DSA kernels (v2_fused, v2_fp8) and the gather floor:
// how a row is gathered, the compiled pipes, and the rules that split one token's top-k row over
// CTAs (alone, or pooled with the batch's other rows). Host-safe: the planners size shared memory
// and workspaces from the same numbers. The row layout itself is kernels/common/kv_rows.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/common/host_device.h"
#include "kernels/common/kv_rows.h"

namespace mlakit::dsa_ring {

using kernels::kCkvBytes;
using kernels::kDimK;
using kernels::kDimR;
using kernels::kDimV;
using kernels::kKpeBytes;
using kernels::kKvPitch;
using kernels::kRowBytes;
using kernels::kRowPad;
using kernels::kStageBytes;
using kernels::kStageElems;
using kernels::kStageRows;
using kernels::Pipe;

// How a producer warp moves a row (ckv 1024 B | kpe 128 B -> one smem row); the values are
// tilings' g field. kHybrid: one bulk copy for ckv and the warp's 16-byte cp.async for kpe (4
// rows per instruction); kBulk: two cp.async.bulk copies through the copy engine; kCpAsync:
// 16-byte cp.async by the whole warp; kLdg (gather floor only): 16-byte loads into registers by
// every warp, no shared memory at all.
enum class Gather { kHybrid = 0, kBulk = 1, kCpAsync = 2, kLdg = 3 };

// The instantiated (ring stages, producer warps) pairs of the ring kernels (v2_fused and the gather
// floor): the one list of their launchers, validation and search spaces. Each ring buffer belongs
// to one producer warp, or with four producer warps to a pair of them, each filling half of its
// rows (gather_ring.cuh, kWarpsPerStage).
constexpr Pipe kPipeChoices[] = {{3, 1}, {4, 1}, {5, 1}, {4, 2}, {4, 4}};
// Two producer warps: the default of two consumer warpgroups (the register budget of 320 threads).
constexpr Pipe kDefaultPipe = {4, 2};
// Four, two per stage: one consumer warpgroup and the gather floor. A warp's lanes issue their
// rows' bulk copies one after another, so a lone warp's requests for a stage (rope rows included)
// are the first tile's critical path; two per stage halve it (docs/knowledge/copies.md).
constexpr Pipe kPairedPipe = {4, 4};
constexpr bool is_instantiated(Pipe pipe) {
  for (const Pipe& c : kPipeChoices)
    if (c.stages == pipe.stages && c.producers == pipe.producers) return true;
  return false;
}
static_assert(is_instantiated(kDefaultPipe), "the default pipe must be instantiated");

// The shared-memory bytes of a ring kernel's plan (Plan<Stages>) for a compiled ring depth, 0 for
// any other.
template <template <int> class Plan>
constexpr size_t ring_smem_bytes(int stages) {
  switch (stages) {
    case 3: return sizeof(Plan<3>);
    case 4: return sizeof(Plan<4>);
    case 5: return sizeof(Plan<5>);
    default: return 0;
  }
}
template <template <int> class Plan>
constexpr bool covers_every_pipe() {
  for (const Pipe& c : kPipeChoices)
    if (ring_smem_bytes<Plan>(c.stages) == 0) return false;
  return true;
}

// How one token's valid slots (n after dropping padding) are cut over at most `max_splits` CTAs:
// every split but the last holds `rows_per_split` slots, a multiple of the stage size and at
// least `min_rows`; the number of splits follows n, so short rows use one CTA and long rows
// many, whatever the other rows of the batch hold.
struct RowSplit {
  int splits;          // CTAs that work on the row (1 when n == 0)
  int rows_per_split;  // compacted slots per split (the last split may hold fewer)
};

// With ceil_div(a, b) = ceil(a / b) for the pairs it is given: (n, max_splits), and (n, per) when
// per < n. A row of at most `whole_rows` slots is not split at all (one split of n).
template <class CeilDiv>
MLAKIT_HOST_DEVICE constexpr RowSplit split_row_by(int n, int max_splits, int min_rows, CeilDiv ceil_div,
                                                   int whole_rows = 0) {
  if (whole_rows > 0 && n <= whole_rows) return RowSplit{1, n};
  const int even = ceil_div(n, max_splits);
  int per = (even + kStageRows - 1) / kStageRows * kStageRows;
  if (per < min_rows) per = min_rows;
  const int splits = per >= n ? 1 : ceil_div(n, per);  // n == 0: one split
  return RowSplit{splits, per};
}

MLAKIT_HOST_DEVICE constexpr RowSplit split_row(int n, int max_splits, int min_rows, int whole_rows = 0) {
  return split_row_by(n, max_splits, min_rows, [](int a, int b) { return (a + b - 1) / b; }, whole_rows);
}

// The rows a kernel that merges its splits keeps whole: at most one stage past a split's least
// rows (96 at block_n 64). A split costs the row its meeting and merge, a fixed cost, and saves
// only what one CTA takes for the rows it hands away, a small cost per row: up to this bound the
// fixed cost is the larger, past it the saving (docs/knowledge/splits-and-merges.md). A gather
// floor, which merges nothing, splits as before.
MLAKIT_HOST_DEVICE constexpr int merging_whole_rows(int min_rows) { return min_rows + kStageRows; }

// The kernels' ceil_div for rows of at most kMaxRowEntries entries and at most kMaxRowEntries
// splits (so a + b <= 2^14): floor of a float quotient of (a + b - 1/2) / b. The exact quotient is
// at least 1 / (2b) away from an integer, and one within a relative 2^-21 of it (__fdividef: 2
// ulp) is at most 2^14 / b x 2^-21 < 1 / (2b) away from it, so the floor is ceil(a / b): one
// reciprocal and one multiply instead of an integer division (two of them, each a long chain in
// the uniform datapath, sat on every CTA's slice: docs/knowledge/prologues.md).
constexpr int kMaxRowEntries = 1 << 13;
MLAKIT_HOST_DEVICE constexpr float ceil_div_numerator(int a, int b) { return float(a) + (float(b) - 0.5f); }

// Pooled rows (a tiling's b1, T <= kMaxPoolTokens): the grid keeps its S CTAs per token, but the
// splits of every row come from one slot count per split for the whole batch, so a long row may
// take the CTAs that the short rows of other tokens leave idle. Every CTA reads all T rows
// (kernels/dsa_decode/common/row_slice.cuh, slice_pooled, which computes the same plan with one
// row per lane) and derives the same plan:
//   per = the least multiple of kStageRows, at least min_rows, with sum_r splits_r <= T x S, where
//   splits_r = max(1, ceil(n_r / per));
//   row r keeps its own CTAs for its splits [0, min(splits_r, S)); the CTAs a row does not use are
//   numbered in (token, split) order and take the splits past S of the rows that have them, in
//   (row, split) order; the rest stay idle.
// A row's partials sit at a compact split index (first_split + split: the rows before it take
// first_split), so the T x S partials of the workspace always suffice.
constexpr int kMaxPoolTokens = 8;

// The batch's plan from the T valid counts n[0, T): per and every row's splits.
struct PoolPlan {
  int per;
  int splits[kMaxPoolTokens];
};
MLAKIT_HOST_DEVICE constexpr PoolPlan pool_plan(const int (&n)[kMaxPoolTokens], int num_tokens, int ctas_per_token,
                                                int min_rows) {
  int total = 0;
MLAKIT_UNROLL
  for (int r = 0; r < kMaxPoolTokens; ++r) total += r < num_tokens ? n[r] : 0;
  const int cap = num_tokens * ctas_per_token;
  PoolPlan plan{((total + cap - 1) / cap + kStageRows - 1) / kStageRows * kStageRows, {}};
  if (plan.per < min_rows) plan.per = min_rows;
  for (;;) {  // ends: once per covers the longest row every row takes one split, T <= cap
    int sum = 0;
MLAKIT_UNROLL
    for (int r = 0; r < kMaxPoolTokens; ++r) {
      plan.splits[r] = r < num_tokens ? (n[r] == 0 ? 1 : (n[r] + plan.per - 1) / plan.per) : 0;
      sum += plan.splits[r];
    }
    if (sum <= cap) return plan;
    plan.per += kStageRows;
  }
}

// What CTA `cta` (of ctas_per_token) of token `token` does under `plan`: split `split` of row `row`
// (row -1: nothing), whose partials start at compact split `first_split`.
struct PoolWork {
  int row, split, first_split;
};
MLAKIT_HOST_DEVICE constexpr PoolWork pool_work(const PoolPlan& plan, int num_tokens, int ctas_per_token, int token,
                                                int cta) {
  PoolWork w{-1, 0, 0};
  int own = 0, k = 0;  // k: this CTA among the unused ones, in (token, split) order
MLAKIT_UNROLL
  for (int r = 0; r < kMaxPoolTokens; ++r) {
    const int used = plan.splits[r] < ctas_per_token ? plan.splits[r] : ctas_per_token;
    if (r == token) own = used;
    if (r < token && r < num_tokens) k += ctas_per_token - used;
  }
  if (cta < own) {
    w.row = token;
    w.split = cta;
  } else {
    k += cta - own;
MLAKIT_UNROLL
    for (int r = 0; r < kMaxPoolTokens; ++r) {  // the splits past ctas_per_token, in (row, split) order
      const int extra = plan.splits[r] > ctas_per_token ? plan.splits[r] - ctas_per_token : 0;
      if (w.row < 0 && k < extra) {
        w.row = r;
        w.split = ctas_per_token + k;
      }
      if (w.row < 0) k -= extra;
    }
  }
MLAKIT_UNROLL
  for (int r = 0; r < kMaxPoolTokens; ++r)
    if (r < w.row) w.first_split += plan.splits[r];
  return w;
}

// Ints of shared scratch slice_pooled needs: the T rows (topk rounded up to 16 entries), their T
// valid counts and one sum per warp.
MLAKIT_HOST_DEVICE constexpr int pooled_scratch_ints(int tokens, int topk, int warps) {
  return tokens * ((topk + 15) / 16 * 16) + tokens + warps;
}

}  // namespace mlakit::dsa_ring
