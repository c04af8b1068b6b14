// What the single-launch DSA kernels whose rows split over CTAs share on the host side (v2_fused,
// v2_fp8, and the 64-head CTA of both): the kernel parameters, the index-row limits, the MMA path
// a tiling names, and the workspace layout of the split rows' partials. Host-safe (plain C++).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/common/consumer_h16.h"
#include "kernels/dsa_decode/common/workspace.h"
#include "mlakit/dsa.h"

namespace mlakit::dsa_split {

using h16::kConsumerThreads;
using h16::kHeads;
using kernels::kDimV;

// Index compaction: each thread reads 16 consecutive entries of the row (160 threads or more).
constexpr int kIdxPerThread = 16;
// The most entries of an index row: 16 per thread of the smallest CTA (a consumer warpgroup and a
// producer warp, 160 threads).
constexpr int kMaxTopk = (kConsumerThreads + 32) * kIdxPerThread;  // 2560
// Splits per row are capped so that the per-split partial outputs stay small next to the rows.
constexpr int kMaxSplits = 64;

static_assert(kMaxTopk % 4 == 0, "indices are loaded four at a time");

// Launches of 2-4 CTAs per row run a twin instance whose merge loads all of a thread's chunks
// before folding any (one L2 round trip instead of one per chunk).
constexpr bool merges_few_splits(int max_splits) { return max_splits >= 2 && max_splits <= 4; }

// Kernel arguments; strides in elements (already defaulted by dsa_run).
struct Params {
  DsaTensors io;
  int num_tokens;
  int num_heads;         // H: output row r (of T x H) is head r % H, whose attn_sink it takes
  int topk;
  int64_t num_slots;
  int max_splits;        // CTAs per token and head group, of which split_row() uses what the row needs
  int head_groups;       // CTAs per (token, split), 16 x Wgs heads each: gridDim.x = max_splits x head_groups
  int min_rows;          // least slots per split (a multiple of kStageRows)
  float scale_log2;      // sm_scale * log2(e)
  // Partials are per block of 16 heads (T x H / 16 blocks), counters per CTA group (T x head_groups).
  float* part_o;         // [T x H / 16, max_splits, 16, 512] unnormalised partial outputs, bf16 in the
                         // first half of the region sized for fp32 (part_o_bf16)
  float2* part_ml;       // [T x H / 16, max_splits, 16] (running max in the log2 domain, sum of 2^(x - m))
  uint32_t* counters;    // [T x head_groups, 2] arrivals and departures of the group's CTAs; zero between calls
  int32_t* slots;        // h64 only: [T x gridDim.x, topk] each CTA's compacted slots
};

// How a tile's products are computed (the values are the tilings' w field): bf16 mma.sync m16n8k16 with
// the 16 heads of a warpgroup as M (h16, h32), or wgmma with the 64 heads of a CTA as M (h64).
enum class Mma { kSync = 0, kWgmma = 1 };

// Workspace (kernels/common/workspace.h): the counter region, then (m, l) and O partials of every
// block of 16 heads (T x head_groups of them); nothing when no row can split (one CTA per row and
// no pooling). The counters must be zero before the first call (the kernel leaves them zero).
// Pooled rows keep the same T x max_splits partials per block of a token, numbered by compact
// split (row_slice.cuh), so the layout is the same.
struct WorkspaceLayout {
  size_t counters = 0, part_ml = 0, part_o = 0, bytes = 0;
};
inline WorkspaceLayout workspace_layout(int head_blocks, int max_splits, bool pooled = false) {
  WorkspaceLayout w;
  if (max_splits <= 1 && !pooled) return w;
  const auto align = [](size_t b) { return (b + 255) / 256 * 256; };
  const size_t rows = size_t(head_blocks) * max_splits * kHeads;
  w.counters = 0;
  w.part_ml = dsa_workspace::kCounterBytes;
  w.part_o = w.part_ml + align(rows * 2 * sizeof(float));
  w.bytes = w.part_o + rows * kDimV * sizeof(float);
  return w;
}
static_assert(dsa_workspace::kCounterBytes % 256 == 0, "the partials stay 256-byte aligned");

}  // namespace mlakit::dsa_split
