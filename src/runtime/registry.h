// The kernel registry: every DSA kernel variant behind one interface, keyed by a stable string
// ("dsa_decode.v1_splitk.bf16") used by the CLI, tests, bench JSON and the tuner cache.
#pragma once

#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "mlakit/device.h"
#include "mlakit/dsa.h"

namespace mlakit {

struct KernelInfo {
  std::string key;          // "dsa_decode.v1_splitk.bf16"
  std::string op;           // "dsa_decode"
  std::string variant;      // "v1_splitk"
  std::string dtype;        // "bf16"
  std::string description;  // one line
  ArchRequirement arch;     // what the device code was built for
};

class DsaKernel {
 public:
  virtual ~DsaKernel() = default;
  virtual const KernelInfo& info() const = 0;
  // Every tiling the tuner may try for this problem (valid or not: validate() says which).
  virtual std::vector<DsaTiling> search_space(const DsaProblem& problem) const = 0;
  // The built-in choice when no tuned entry exists.
  virtual DsaTiling default_tiling(const DsaProblem& problem, const DeviceFacts& dev) const = 0;
  // Ok, or a reason a person can read ("shared-memory plan 240 KB exceeds the 227 KB ...").
  // Plain C++: runs without a GPU against any DeviceFacts.
  virtual Status validate(const DsaProblem& problem, const DsaTiling& tiling,
                          const DeviceFacts& dev) const = 0;
  virtual size_t workspace_bytes(const DsaProblem& problem, const DsaTiling& tiling) const = 0;
  // Resource plan of one tiling, for --explain: grid, threads, shared memory, launches.
  virtual std::string explain(const DsaProblem& problem, const DsaTiling& tiling) const = 0;
  // Asynchronous launch on `stream`; tensors already validated by dsa_run.
  virtual Status launch(const DsaProblem& problem, const DsaTiling& tiling,
                        const DsaTensors& tensors, void* workspace, cudaStream_t stream) const = 0;
};

const std::vector<const DsaKernel*>& dsa_kernels();
const DsaKernel* find_dsa_kernel(const std::string& key);  // null when unknown
const char* default_dsa_kernel_key();

// Ok when `kernel` can run on device `dev` (arch gate), else the reason.
Status check_kernel_arch(const DsaKernel& kernel, const DeviceFacts& dev);

}  // namespace mlakit
