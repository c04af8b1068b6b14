// A workbench session: one workload's inputs on the device (caches shared between workloads of
// the same shape and seed), its CPU reference computed once, and the verify / time operations
// that the CLI, the tuner and the GPU tests share.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "mlakit/dsa.h"
#include "reference/compare.h"
#include "reference/dsa/reference.h"
#include "runtime/registry.h"
#include "workbench/timer.h"
#include "workloads/dsa/suites.h"

namespace mlakit {

struct VerifyResult {
  std::string workload;
  CompareReport output;   // bf16 output vs fp64 reference, contest rule
  CompareReport lse;      // fp32 lse vs fp64 reference, contest rule, -inf allowed where expected
  bool deterministic = true;  // two runs bitwise equal
  bool ok() const { return output.ok() && lse.ok() && deterministic; }
};

class DsaSession {
 public:
  explicit DsaSession(uint64_t seed);
  ~DsaSession();
  DsaSession(const DsaSession&) = delete;
  DsaSession& operator=(const DsaSession&) = delete;

  // Makes `w` current: generates and uploads its q (and the caches when not yet resident).
  Status prepare(const DsaWorkload& w);
  const DsaWorkload& workload() const { return workload_; }

  // Poisons output/lse with NaN, runs, compares with the reference (computed on first use),
  // runs again and checks the two results are bitwise equal.
  Status verify(const DsaKernel& kernel, const DsaTiling& tiling, VerifyResult* result);
  // One call of the kernel on the current workload, for the timer.
  GpuCall call(const DsaKernel& kernel, const DsaTiling& tiling);
  Status time(const DsaKernel& kernel, const DsaTiling& tiling, const TimingConfig& config,
              TimingResult* result);
  // Runs the CPU reference of the current workload (cached) — what `make run` shows without a GPU.
  Status reference(const DsaReferenceOutput** out);

  bool has_device() const { return has_device_; }

 private:
  struct DeviceState;
  Status ensure_workspace(size_t bytes);
  DsaTensors tensors() const;

  uint64_t seed_;
  bool has_device_ = false;
  DsaWorkload workload_;
  DsaHostData host_;                   // q of the current workload + caches (host copies)
  std::tuple<int, int> cache_shape_{-1, -1};  // (num_pages, page_size) of the resident caches
  std::unique_ptr<DsaReferenceOutput> reference_;
  std::unique_ptr<DeviceState> dev_;
};

}  // namespace mlakit
