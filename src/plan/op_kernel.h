// The op-typed kernel interface, one template for every op. An op names its types and the few
// facts the generic layers ask of a problem in a specialization of OpContract (for DSA:
// plan/dsa/contract.h); each variant implements OpKernel<its problem> in its folder's entry.cpp.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "mlakit/device.h"
#include "mlakit/status.h"
#include "plan/kernel_entry.h"

namespace mlakit {

// Specialized once per op problem type, with:
//   using Tiling, Tensors;                      // the op's tiling (name() / parse()) and tensors
//   static constexpr const char* kOp;           // "dsa_decode": KernelInfo::op of its kernels
//   static constexpr const char* kPlanFunction; // "dsa_plan": named in messages about plans
//   static std::string dtype(const Problem&);   // the registry dtype the problem needs, "bf16"
//   static int heads(const Problem&);           // its query heads
//   static std::string bucket(const Problem&);  // its tune-cache shape bucket
template <class Problem>
struct OpContract;

template <class ProblemT>
class OpKernel : public KernelEntry {
 public:
  using Problem = ProblemT;
  using Contract = OpContract<Problem>;
  using Tiling = typename Contract::Tiling;
  using Tensors = typename Contract::Tensors;

  // Every tiling the tuner may try for this problem (valid or not: validate() says which).
  virtual std::vector<Tiling> search_space(const Problem& problem) const = 0;
  // The built-in choice when no tuned entry exists.
  virtual Tiling default_tiling(const Problem& problem, const DeviceFacts& dev) const = 0;
  // Ok, or a reason a person can read ("shared-memory plan 240 KB exceeds the 227 KB ..."). The
  // planner calls it once per plan, for a valid problem on a device that passed the arch gate.
  // Plain C++: runs without a GPU against any DeviceFacts.
  virtual Status validate(const Problem& problem, const Tiling& tiling,
                          const DeviceFacts& dev) const = 0;
  virtual size_t workspace_bytes(const Problem& problem, const Tiling& tiling) const = 0;
  // Resource plan of one tiling, for --explain: grid, threads, shared memory, launches.
  virtual std::string explain(const Problem& problem, const Tiling& tiling) const = 0;
  // Asynchronous launch on `stream` of a planned (problem, tiling); tensors already checked by
  // the op's run function.
  virtual Status launch(const Problem& problem, const Tiling& tiling, const Tensors& tensors,
                        void* workspace, cudaStream_t stream) const = 0;
};

}  // namespace mlakit
