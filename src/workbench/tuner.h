// The autotuner: for each shape bucket of a suite, every tiling of the kernel's search space
// that validates for all the bucket's workloads is verified and timed on each of them; the one
// with the lowest mean span wins and goes into the tune cache (runtime/tune_cache.h), unless
// the kernel's built-in default was faster. Invalid tilings, launch failures and verification
// failures are skipped with their reason.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "mlakit/device.h"
#include "runtime/registry.h"
#include "workbench/timer.h"
#include "workloads/dsa/suites.h"

namespace mlakit {

// One tiling of a search space and why it cannot run ("" = it validates).
struct TilingChoice {
  DsaTiling tiling;
  std::string skip_reason;
  bool valid() const { return skip_reason.empty(); }
};

// The search spaces of `problems` (one bucket) merged in order of first appearance, duplicates
// dropped; a tiling is valid only when it validates for every problem (the reason names the
// first failing problem's T when the problems differ).
std::vector<TilingChoice> enumerate_tilings(const DsaKernel& kernel,
                                            const std::vector<DsaProblem>& problems,
                                            const DeviceFacts& device);

// The workloads of a suite grouped by dsa_shape_bucket, buckets in order of first appearance.
struct BucketGroup {
  std::string bucket;
  std::vector<size_t> workloads;  // indices into the suite's workloads
};
std::vector<BucketGroup> group_by_bucket(const std::vector<DsaWorkload>& workloads);

struct TuneOptions {
  std::string suite = "dsa-contest";
  uint64_t seed = 1;
  std::string cache_path;   // "" = default_tune_cache_path()
  TimingConfig timing;      // warm-up and iterations per (tiling, workload)
  bool verify = true;       // verify every (tiling, workload) before timing it
  bool dry_run = false;     // enumerate and validate only: no GPU work, nothing written
  bool verbose = false;     // one progress line per timed (tiling, workload)
  DeviceFacts device;       // the device validated against (live for a real run)
  std::function<void(const std::string&)> log;  // progress lines; null = silent
};

struct TuneCandidateResult {
  DsaTiling tiling;
  std::string skip_reason;        // invalid, failed to launch or to verify ("" = timed everywhere)
  std::vector<double> median_us;  // per workload of the bucket
  double mean_us = 0;
};

struct TuneBucketResult {
  std::string bucket;
  std::vector<std::string> workloads;
  std::vector<TuneCandidateResult> candidates;  // every enumerated tiling
  bool has_winner = false;
  DsaTiling winner;
  double winner_us = 0;
  double default_us = 0;         // mean over the workloads of each one's default tiling (0 = unknown)
  bool written = false;          // the winner went into the cache
  std::string decision;          // one line: what was written and why
};

struct TuneReport {
  std::string device;
  std::string kernel_key;
  std::string cache_path;
  std::vector<TuneBucketResult> buckets;
};

// Runs the tuner (see the file comment). Fails on setup errors (suite, device, a corrupt cache
// file it would overwrite); per-tiling failures are recorded in the report, not returned.
Status tune_dsa(const DsaKernel& kernel, const TuneOptions& options, TuneReport* report);

}  // namespace mlakit
