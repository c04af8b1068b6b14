// What every registered kernel is, whatever its op: a stable key and the facts the registry
// selects by. The op-typed interface (plan, validate, launch) derives from it: op_kernel.h.
#pragma once

#include <string>
#include <vector>

#include "mlakit/device.h"

namespace mlakit {

struct KernelInfo {
  std::string key;          // "<op>.<variant>.<dtype>": "dsa_decode.v1_splitk.bf16"
  std::string op;           // "dsa_decode": the problem type it solves
  std::string variant;      // "v1_splitk": its folder, src/kernels/<op>/<variant>/
  std::string dtype;        // "bf16": the cache dtype it reads
  std::vector<int> heads;   // the query-head counts it runs
  // Among the registered kernels that run an (op, dtype, heads), the highest rank is the default.
  int rank = 0;
  std::string description;  // one line
  ArchRequirement arch;     // what the device code was built for
  // A gather floor: moves the bytes the op's kernels read and computes nothing. Never a default,
  // never verified; `mlakit bench` times it beside the op's kernels (span / floor).
  bool floor = false;

  bool runs(const std::string& dtype, int heads) const;
  std::string heads_string() const;  // "16" or "32, 64, 128"
};

class KernelEntry {
 public:
  virtual ~KernelEntry() = default;
  virtual const KernelInfo& info() const = 0;
};

}  // namespace mlakit
