// Host-side rules shared by the registry entries of the single-launch DSA kernels (v2_fused and
// the gather floor): the problems they run, the row-split fields of a tiling, and the default
// split count. Plain C++.
#pragma once

#include <iterator>
#include <string>
#include <vector>

#include "kernels/dsa_decode/common/ring_tiling.h"
#include "kernels/dsa_decode/common/row_ring.h"

#include "mlakit/device.h"
#include "mlakit/dsa.h"
#include "mlakit/status.h"
#include "plan/dsa/contract.h"

namespace mlakit::dsa_ring {

// "tiling s8n64x4m1p2: <why>" for a tiling of any variant (anything with name()).
template <class T>
Status reject(const T& t, const std::string& why) {
  return Status::unsupported("tiling " + t.name() + ": " + why);
}

// A consumer warpgroup of the ring kernels computes 16 heads (the M of one m16n8k16 MMA), a CTA 16
// or (v2_fused, h32) 32 of them; 32, 64 and 128 heads run as several CTAs per (row, split) that
// gather the same rows (docs/kernels/dsa_decode_v2_fused.md, "Design").
constexpr int kCtaHeads = 16;
inline std::vector<int> head_counts() { return {std::begin(kDsaHeadCounts), std::end(kDsaHeadCounts)}; }
// CTAs per (row, split): one per `cta_heads` heads (16, or 32 for v2_fused's two warpgroups).
inline int head_groups(const DsaProblem& p, int cta_heads = kCtaHeads) { return p.num_heads / cta_heads; }

// Blocks of 16 heads over the batch (T x H / 16): what the merging kernels keep partials for; their
// counters (one per CTA group) are never more.
inline int head_blocks(const DsaProblem& p) { return p.num_tokens * head_groups(p); }
// ", 8 CTAs of 16 heads per split" for --explain when there is more than one.
std::string heads_note(const DsaProblem& p, int cta_heads = kCtaHeads);
// A merging kernel (num_splits > 1) counts the CTAs of each group in the workspace's counter
// region, which is checked against the blocks of 16 heads (at least as many); the reason names
// them (empty when it fits).
std::string counted_blocks_shortfall(const DsaProblem& p, const RingTiling& t);
template <class T>
Status check_counted_blocks(const DsaProblem& p, const T& t) {
  const std::string why = counted_blocks_shortfall(p, t);
  return why.empty() ? Status::ok() : reject(t, why);
}

// A head count in `heads`, ckv 512 + kpe 64, and rows of at most `max_topk` indices (one CTA reads
// the whole row). The head-count error names the supported counts.
Status check_problem(const std::string& variant, const DsaProblem& p, int max_topk,
                     const std::vector<int>& heads = head_counts());

// num_splits (CTAs per row) in [1, max_splits]; block_n (least slots per split) a positive
// multiple of the 32-row stage; with `co_resident`, the row's CTAs wait for each other, so the
// whole grid (num_splits x T x `groups` CTAs) must fit the device at `ctas_per_sm` CTAs per SM.
std::string split_shortfall(const DsaProblem& p, const RingTiling& t, const DeviceFacts& dev, int max_splits,
                            bool co_resident, int ctas_per_sm, int groups);
template <class T>
Status check_split(const DsaProblem& p, const T& t, const DeviceFacts& dev, int max_splits, bool co_resident,
                   int ctas_per_sm, int groups = 1) {
  const std::string why = split_shortfall(p, t, dev, max_splits, co_resident, ctas_per_sm, groups);
  return why.empty() ? Status::ok() : reject(t, why);
}

// About one CTA per SM: the largest power of two S <= max_splits with S x T x `groups` <= SMs (1 when
// T x groups >= SMs). `groups`: CTAs per (row, split), head_groups() for a decode kernel. No larger
// than the first power of two that covers the splits of a full row (topk slots at `min_rows` per
// split): the CTAs past those could only read the index row and leave (64 splits at T <= 2 and
// topk 2048 launched 32 such CTAs per row; any S from there on splits every row the same way).
int default_splits(const DsaProblem& p, const DeviceFacts& dev, int max_splits, int min_rows, int groups = 1);

// "3, 4 or 5"
std::string or_list(const std::vector<int>& values);

// The tuner's choices of a ring kernel: CTAs per row (powers of two up to max_splits) x least
// slots per split {32, 64, 128} x `pipes` (every compiled pipe of kPipeChoices by default) x
// `gathers`, with m = 1; T's own fields at their defaults.
template <class T>
std::vector<T> ring_search_space(int max_splits, const std::vector<int>& gathers,
                                 const std::vector<Pipe>& pipes = {std::begin(kPipeChoices), std::end(kPipeChoices)}) {
  std::vector<T> out;
  for (int s = 1; s <= max_splits; s *= 2)
    for (int rows : {32, 64, 128})
      for (const Pipe& pipe : pipes)
        for (int g : gathers) {
          T t{};
          static_cast<RingTiling&>(t) = RingTiling{s, rows, pipe.stages, 1, pipe.producers, g};
          out.push_back(t);
        }
  return out;
}
// A ring tiling with T's own fields at their defaults.
template <class T>
T ring_tiling(int splits, int block_n, Pipe pipe, int gather) {
  T t{};
  static_cast<RingTiling&>(t) = RingTiling{splits, block_n, pipe.stages, 1, pipe.producers, gather};
  return t;
}

// The fields every ring kernel's Params shares (io, the shape, the row split), from a plan.
template <class RingParams>
RingParams ring_params(const DsaProblem& p, const RingTiling& t, const DsaTensors& x) {
  RingParams a{};
  a.io = x;
  a.num_tokens = p.num_tokens;
  a.num_heads = p.num_heads;
  a.topk = p.topk;
  a.num_slots = p.num_slots();
  a.max_splits = t.num_splits;
  a.min_rows = t.block_n;
  return a;
}

}  // namespace mlakit::dsa_ring
