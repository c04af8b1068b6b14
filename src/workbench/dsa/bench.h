// DSA decode's pieces of the workbench (op_bench_impl.h says what an op provides): its suites,
// the single-shape options of `mlakit run`, the trace reader, and its inputs on the device with
// the CPU reference and the contest comparator for output and lse.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "mlakit/dsa.h"
#include "reference/dsa/reference.h"
#include "workbench/device_buffer.h"
#include "workbench/op_bench.h"
#include "workloads/dsa/suites.h"

namespace mlakit {

struct DsaBench {
  using Problem = DsaProblem;
  using Workload = DsaWorkload;

  // One workload's host inputs (q per workload, caches per cache key), their device copies and
  // the reference. An FP8 workload's caches are made as bf16 ones, quantized on the host into the
  // 656-byte rows that go to the device as kv_cache, and replaced on the host by their dequantized
  // values, which the fp64 reference reads: the contest tolerance applies unchanged. Only the
  // format's caches are on the device; the host keeps no FP8 rows once they are uploaded.
  class Inputs {
   public:
    Inputs();
    ~Inputs();
    Status prepare(const DsaWorkload& w, uint64_t seed, bool upload);
    DsaTensors tensors() const;
    Status outputs(std::vector<CallOutput>* out);
    Status reference(std::string* columns);
    // The fp64 reference of the prepared workload, computed on first use.
    Status reference_output(const DsaReferenceOutput** out);

   private:
    struct Device;
    // What the resident caches were made for: their shape, format and values.
    struct CacheKey {
      int num_pages = -1, page_size = -1;
      DsaKv kv = DsaKv::kBf16;
      DsaCacheValues values = DsaCacheValues::kRandn;
      bool operator==(const CacheKey&) const = default;
    };
    Status make_caches(const DsaWorkload& w, uint64_t seed, bool upload);

    DsaWorkload workload_;
    DsaHostData host_;
    CacheKey cache_key_;  // num_pages -1: none resident
    std::unique_ptr<DsaReferenceOutput> reference_;
    std::unique_ptr<Device> dev_;
  };

  static constexpr const char* kProfileKernels = "dsa_";
  static std::vector<std::string> suite_names() { return dsa_suite_names(); }
  static Status make_suite(const std::string& name, const ShapeArgs& flavours, uint64_t seed,
                           std::vector<DsaWorkload>* out);
  static Status load_trace(const std::string& dir, const std::string& definition, uint64_t seed,
                           std::vector<DsaWorkload>* out);
  static const std::vector<ShapeOption>& shape_options();
  static Status shape_footprint(const ShapeArgs& args, HostFootprint* out);
  static Status make_shape(const ShapeArgs& args, uint64_t seed, DsaWorkload* out);
  static WorkloadInfo describe(const DsaWorkload& w);
  static std::string reference_header();
  static Status run(const DsaPlan& plan, const DsaTensors& tensors, void* workspace, size_t bytes,
                    cudaStream_t stream) {
    return dsa_run(plan, tensors, workspace, bytes, stream);
  }
};

// The DSA entry of the op table.
const OpBench& dsa_bench();

}  // namespace mlakit
