// The host side of a run, estimated before anything is synthesized: how much memory a workload's
// inputs, their copies and the CPU reference's output hold, and roughly how long the host needs
// to make and check them. A shape past the host-memory limit is refused (a usage error naming the
// option that sized it) instead of dying in std::bad_alloc; a long one gets a warning.
//
// The limit: physical memory (sysconf), lowered by a cgroup's memory limit and by
// MLAKIT_HOST_MEMORY_LIMIT (bytes, or with a K, M, G or T suffix of powers of 1024: "16G"). The
// variable can only lower it: past physical memory a run swaps or is killed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mlakit/status.h"

namespace mlakit {

struct HostFootprint {
  double bytes = 0;              // held at once while the workload runs
  std::string detail;            // the parts: "caches 7.3 GB, indices 46.9 MB, reference 187.6 MB"
  std::string sized_by;          // the options that size the largest part ("--num-pages 1000000")
  double synth_seconds = 0;      // synthesizing the inputs on the host (rough)
  double reference_seconds = 0;  // the fp64 CPU reference (rough)
  // Synthesis a session does once for consecutive workloads of the same key, included in
  // synth_seconds (DSA: the caches of one page count and page size); "" = none.
  std::string shared_key;
  double shared_synth_seconds = 0;
};

// The host time of a session over `footprints` in order: the shared synthesis counted once per
// run of equal keys. `bytes`: the largest of them (a session holds one workload's inputs at once).
HostFootprint session_footprint(const std::vector<HostFootprint>& footprints);

struct HostMemoryLimit {
  double bytes = 0;
  std::string source;  // "physical memory", "cgroup memory limit", "MLAKIT_HOST_MEMORY_LIMIT=16G"
};

// kInvalidArgument when MLAKIT_HOST_MEMORY_LIMIT is set but is no size.
Status host_memory_limit(HostMemoryLimit* out);
// Parses "17179869184", "16G", "512M", "1.5T" (powers of 1024); false when it is no size.
bool parse_memory_size(const std::string& text, double* bytes);

// kInvalidArgument when `f` needs more than the limit: "<who>: the run needs about 68.7 GB of
// host memory (caches 68.7 GB, ...), more than the limit of 23.5 GB (physical memory)".
Status check_host_footprint(const HostFootprint& f, const std::string& who);

// Runs whose host work is estimated past this many seconds get a warning.
constexpr double kLongHostSeconds = 10;
// The warning's text ("" below kLongHostSeconds): what takes long and roughly how long.
// `reference`: whether the CPU reference runs too.
std::string long_run_warning(const HostFootprint& total, bool reference, const std::string& who);

}  // namespace mlakit
