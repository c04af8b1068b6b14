// MLA decode's pieces of the workbench (op_bench_impl.h says what an op provides): its suites, the
// single-shape options of `mlakit run mla_decode`, its inputs on the device (separate or combined
// layout, every cache row no request reads NaN) with the fp64 reference and the contest
// comparator for output and lse, and the checked mode (mla_check_inputs).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "mlakit/mla.h"
#include "reference/mla/reference.h"
#include "workbench/op_bench.h"
#include "workloads/mla/suites.h"

namespace mlakit {

struct MlaBench {
  using Problem = MlaProblem;
  using Workload = MlaWorkload;

  // One workload's host inputs (q and the pages requests use), their device copies (the whole
  // cache, NaN where no request reads) and the reference.
  class Inputs {
   public:
    Inputs();
    ~Inputs();
    Status prepare(const MlaWorkload& w, uint64_t seed, bool upload);
    MlaTensors tensors() const;
    Status outputs(std::vector<CallOutput>* out);
    Status reference(std::string* columns);
    // The checked mode on the device inputs: mla_check_inputs (synchronizes `stream`).
    Status check(cudaStream_t stream);
    // The fp64 reference of the prepared workload, computed on first use.
    Status reference_output(const MlaReferenceOutput** out);

   private:
    struct Device;
    Status upload_queries();
    Status upload_cache();
    MlaWorkload workload_;
    MlaHostData host_;
    std::unique_ptr<MlaReferenceOutput> reference_;
    std::unique_ptr<Device> dev_;
  };

  static constexpr const char* kProfileKernels = "mla_";
  static std::vector<std::string> suite_names() { return mla_suite_names(); }
  static Status make_suite(const std::string& name, const ShapeArgs& flavours, uint64_t seed,
                           std::vector<MlaWorkload>* out);
  static Status load_trace(const std::string& dir, const std::string& definition, uint64_t seed,
                           std::vector<MlaWorkload>* out);
  // --b, --t (required), --s, --heads, --page-size, --causal, --mixed, --separate.
  static const std::vector<ShapeOption>& shape_options();
  static Status shape_footprint(const ShapeArgs& args, HostFootprint* out);
  static Status make_shape(const ShapeArgs& args, uint64_t seed, MlaWorkload* out);
  static WorkloadInfo describe(const MlaWorkload& w);
  static std::string reference_header();
  static Status run(const MlaPlan& plan, const MlaTensors& tensors, void* workspace, size_t bytes,
                    cudaStream_t stream) {
    return mla_run(plan, tensors, workspace, bytes, stream);
  }
};

// The MLA decode entry of the op table.
const OpBench& mla_bench();

}  // namespace mlakit
