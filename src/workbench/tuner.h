// The autotuner, op-neutral: for each shape bucket of a suite, every tiling of the kernel's search
// space that plans for all the bucket's workloads is verified and timed on each of them; the one
// with the lowest mean span wins and goes into the tune cache (runtime/tune_cache.h), unless the
// kernel's built-in default was as fast. Tilings travel as their names; invalid tilings, launch
// failures and verification failures are skipped with their reason.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "mlakit/device.h"
#include "plan/kernel_entry.h"
#include "runtime/planner.h"
#include "workbench/op_bench.h"
#include "workbench/timer.h"

namespace mlakit {

// One tiling of a search space: its plans for the bucket's workloads, or why it cannot run.
struct TilingChoice {
  std::string tiling;
  std::string skip_reason;       // "" = it plans for every workload
  std::vector<BenchPlan> plans;  // one per workload of the bucket, when valid
  bool valid() const { return skip_reason.empty(); }
};

// The search spaces of `workloads` (one bucket of `suite`) merged in order of first appearance,
// duplicates dropped; each tiling planned for every workload against `target`: the planner's
// check is the validation, and its plans are what the tuner times. The reason names the first
// failing workload's T when the workloads' T differ.
std::vector<TilingChoice> enumerate_tilings(const BenchSuite& suite,
                                            const std::vector<size_t>& workloads,
                                            const PlanTarget& target);

// The workloads of a suite grouped by their tune bucket, buckets in order of first appearance.
struct BucketGroup {
  std::string bucket;
  std::vector<size_t> workloads;  // indices into the suite
};
std::vector<BucketGroup> group_by_bucket(const BenchSuite& suite);

struct TuneOptions {
  SuiteRequest suite{"dsa-contest", {}};  // the suite and the values of its flavouring options
  uint64_t seed = 1;
  std::string cache_path;   // "" = default_tune_cache_path()
  TimingConfig timing;      // warm-up and iterations per (tiling, workload)
  bool verify = true;       // verify every (tiling, workload) before timing it
  bool dry_run = false;     // enumerate and plan only: no GPU work, nothing written
  bool verbose = false;     // one progress line per timed (tiling, workload)
  DeviceFacts device;       // a dry run plans for these facts; a real run for the current device
  const OpBench* op = nullptr;  // null = the op table's entry for the kernel's op
  std::function<void(const std::string&)> log;  // progress lines; null = silent
  // A transient status before each (tiling, workload) is timed, for a terminal's progress line
  // ("bucket 1/3 T8..., workload 2/4 contest-05: tiling 7/40 s16n64x2m4"); null = none.
  std::function<void(const std::string&)> progress;
};

struct TuneCandidateResult {
  std::string tiling;
  std::string skip_reason;        // invalid, failed to launch or to verify ("" = timed everywhere)
  std::vector<double> median_us;  // per workload of the bucket
  double mean_us = 0;
};

struct TuneBucketResult {
  std::string bucket;
  std::vector<std::string> workloads;
  std::vector<TuneCandidateResult> candidates;  // every enumerated tiling
  bool has_winner = false;
  std::string winner;
  double winner_us = 0;
  double default_us = 0;         // mean over the workloads of each one's default tiling (0 = unknown)
  // Mean over the workloads of each one's fastest tiling (0 = some workload had none): what a
  // choice per workload would give, against the one tiling a bucket can hold (the winner).
  double best_each_us = 0;
  bool written = false;          // the winner went into the cache
  std::string decision;          // one line: what was written and why
};

struct TuneReport {
  std::string device;
  std::string kernel_key;
  std::string cache_path;
  std::vector<TuneBucketResult> buckets;
};

// Fills the bucket's winner (the lowest mean span among the tilings timed on all `workloads`),
// each candidate's mean_us and best_each_us from the candidates' spans.
void summarize_bucket(size_t workloads, TuneBucketResult* br);

// Runs the tuner (see the file comment). Fails on setup errors (op, suite, the arch gate, a
// corrupt cache file it would overwrite); per-tiling failures are recorded in the report.
Status tune(const KernelEntry& kernel, const TuneOptions& options, TuneReport* report);

}  // namespace mlakit
