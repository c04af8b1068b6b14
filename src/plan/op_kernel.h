// The op-typed kernel interface, one template for every op. An op names its types and the few
// facts the generic layers ask of a problem in a specialization of OpContract (for DSA:
// plan/dsa/contract.h). Tilings cross this interface by name: each variant owns its tiling type
// (a struct and a field table in its folder, plan/tiling_fields.h) and implements the interface
// through VariantKernel<Problem, its Tiling> in its folder's entry.cpp.
#pragma once

#include <cstddef>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include <cuda_runtime_api.h>

#include "mlakit/device.h"
#include "mlakit/plan.h"
#include "mlakit/status.h"
#include "plan/kernel_entry.h"

namespace mlakit {

// Specialized once per op problem type, with:
//   using Tensors;                              // the op's tensors
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
  using Tensors = typename Contract::Tensors;

  // Every tiling the tuner may try for this problem, by name (valid or not: check() says which).
  virtual std::vector<std::string> search_space(const Problem& problem) const = 0;
  // The built-in choice when no tuned entry exists.
  virtual std::string default_tiling(const Problem& problem, const DeviceFacts& dev) const = 0;
  // The tiling `name` for this problem on `dev`: parsed by the variant and checked; its values in
  // `out` (may be null) and its canonical name in `canonical` (may be null). Ok, or a reason a
  // person can read ("shared-memory plan 240 KB exceeds the 227 KB ..."). Plain C++: runs without
  // a GPU against any DeviceFacts.
  virtual Status check(const Problem& problem, const std::string& name, const DeviceFacts& dev,
                       TilingValues* out = nullptr, std::string* canonical = nullptr) const = 0;
  virtual size_t workspace_bytes(const Problem& problem, const TilingValues& tiling) const = 0;
  // Resource plan of one tiling, for --explain: grid, threads, shared memory, launches.
  virtual std::string explain(const Problem& problem, const TilingValues& tiling) const = 0;
  // Asynchronous launch on `stream` of a planned (problem, tiling); tensors already checked by
  // the op's run function.
  virtual Status launch(const Problem& problem, const TilingValues& tiling, const Tensors& tensors,
                        void* workspace, cudaStream_t stream) const = 0;
};

// A variant's kernel written against its own Tiling type: a struct of ints with name() and a
// static parse(name, Tiling*) (plan/tiling_fields.h), copied into the plan's TilingValues.
template <class ProblemT, class TilingT>
class VariantKernel : public OpKernel<ProblemT> {
 public:
  using Problem = ProblemT;
  using Tiling = TilingT;
  using Tensors = typename OpKernel<ProblemT>::Tensors;
  static_assert(std::is_trivially_copyable_v<Tiling> && sizeof(Tiling) <= sizeof(TilingValues::bytes),
                "a tiling travels in a plan as plain bytes");

  // What the variant implements, in its own type.
  virtual std::vector<Tiling> tilings(const Problem& problem) const = 0;
  virtual Tiling default_for(const Problem& problem, const DeviceFacts& dev) const = 0;
  virtual Status validate(const Problem& problem, const Tiling& tiling, const DeviceFacts& dev) const = 0;
  virtual size_t workspace(const Problem& problem, const Tiling& tiling) const = 0;
  virtual std::string describe(const Problem& problem, const Tiling& tiling) const = 0;
  virtual Status run(const Problem& problem, const Tiling& tiling, const Tensors& tensors, void* workspace,
                     cudaStream_t stream) const = 0;

  static TilingValues pack(const Tiling& t) {
    TilingValues v;
    std::memcpy(v.bytes, &t, sizeof t);
    return v;
  }
  static Tiling unpack(const TilingValues& v) {
    Tiling t;
    std::memcpy(&t, v.bytes, sizeof t);
    return t;
  }

  std::vector<std::string> search_space(const Problem& problem) const final {
    std::vector<std::string> names;
    for (const Tiling& t : tilings(problem)) names.push_back(t.name());
    return names;
  }
  std::string default_tiling(const Problem& problem, const DeviceFacts& dev) const final {
    return default_for(problem, dev).name();
  }
  Status check(const Problem& problem, const std::string& name, const DeviceFacts& dev, TilingValues* out,
               std::string* canonical) const final {
    Tiling t{};
    MLAKIT_RETURN_IF_ERROR(Tiling::parse(name, &t));
    MLAKIT_RETURN_IF_ERROR(validate(problem, t, dev));
    if (out != nullptr) *out = pack(t);
    if (canonical != nullptr) *canonical = t.name();
    return Status::ok();
  }
  size_t workspace_bytes(const Problem& problem, const TilingValues& tiling) const final {
    return workspace(problem, unpack(tiling));
  }
  std::string explain(const Problem& problem, const TilingValues& tiling) const final {
    return describe(problem, unpack(tiling));
  }
  Status launch(const Problem& problem, const TilingValues& tiling, const Tensors& tensors, void* workspace,
                cudaStream_t stream) const final {
    return run(problem, unpack(tiling), tensors, workspace, stream);
  }
};

}  // namespace mlakit
