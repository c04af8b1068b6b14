// Index synthesis shared by the DSA suites (docs/workloads.md, on workloads/rng.h): a pool
// of cache units drawn without replacement, and the two row shapes of real DSA traffic —
// whole short sequences laid out unit by unit, and top-k picks clustered by unit.
//
// A "unit" is the block of slots the synthesis clusters on: the page when page_size >= 64,
// else 64 consecutive slots when page_size divides 64 (page size 1: the token runs a real
// sparse indexer picks), else the page.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mlakit/dsa.h"
#include "workloads/dsa/suites.h"
#include "workloads/rng.h"

namespace mlakit::synth {

// Slots per unit for a page size (see the file comment).
int unit_slots(int page_size);

// Units of a cache, drawn without replacement: distinct across the rows of a workload while
// the cache has room; when a row needs more units than remain, the pool refills (the new row's
// units are still distinct among themselves).
class UnitPool {
 public:
  UnitPool(int64_t num_units, Rng* rng);
  int64_t num_units() const { return num_units_; }
  // Call before drawing the units of one row; `needed` <= num_units().
  void begin_row(int64_t needed);
  int64_t draw();

 private:
  std::vector<int32_t> perm_;
  int64_t num_units_ = 0, remaining_ = 0;
  Rng* rng_;
};

// Row generators: write `valid` leading slots into row[0..valid), -1 into row[valid..topk).
// Each returns false when the cache cannot hold such a row with distinct slots
// (valid > num_slots); the caller turns that into a Status.
//
// A whole short sequence: ceil(valid / U) distinct units, each filled from its first slot, the
// last one partial. With U = page_size the runs start on page boundaries.
bool sequence_row(const DsaProblem& p, int valid, UnitPool& pool, Rng& rng, int32_t* row);
// Top-k picks from a long context: distinct units in random order, 7/8..8/8 of the slots of
// each (56..64 of 64, about 60), slot offsets ascending within a unit; the last unit takes the
// remainder.
bool topk_row(const DsaProblem& p, int valid, UnitPool& pool, Rng& rng, int32_t* row);

enum class RowShape {
  kMixed,  // rows with fewer than topk valid: sequence_row; full rows: topk_row (the contest mix)
  kTopk,   // every row: topk_row
};

// A workload named `name` with problem `p` and every index -1.
DsaWorkload blank_workload(std::string name, const DsaProblem& p);
// Fills w->indices row by row from the valid counts (one per token), with a generator seeded by
// (seed, w->name) and one unit pool for the whole workload. invalid_argument when a count is
// outside [0, min(topk, num_slots)].
Status synthesize_rows(DsaWorkload* w, const std::vector<int>& valid, RowShape shape, uint64_t seed);

// The suites (contest.cpp, suites.cpp, edge.cpp).
Status make_contest_suite(uint64_t seed, DsaSuite* out);
Status make_serving_suite(uint64_t seed, DsaSuite* out);
Status make_edge_suite(uint64_t seed, DsaSuite* out);
// dsa-edge's own FP8 workloads (kv = fp8), appended to `out`: the tiles of DsaCacheValues::kFp8Tiles,
// and page sizes 16 and 128.
Status add_fp8_edges(uint64_t seed, DsaSuite* out);

}  // namespace mlakit::synth
