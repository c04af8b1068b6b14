// The one timing core (CLI, tuner, Python): cold L2 before every timed call, warm-up, median of
// the GPU span of a call (first kernel start to last kernel end, gaps included) via CUPTI, with
// a CUDA-event fallback whose host launch work is hidden behind a busy-wait kernel.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "mlakit/status.h"

namespace mlakit {

struct TimingConfig {
  int warmup = 10;
  int iters = 50;
  bool cold_l2 = true;       // write a buffer of 2x the L2 before every timed call
  enum class Method { kAuto, kCupti, kEvents } method = Method::kAuto;
};

struct TimingResult {
  double median_us = 0, p10_us = 0, p90_us = 0, mean_us = 0;
  double host_us = 0;        // host time one call costs (launch overhead), median
  std::string method;        // "cupti" / "events"
  int sm_clock_mhz = 0;      // NVML, 0 when unavailable
  std::string throttle;      // NVML throttle reasons, "none" or a list; "" when unavailable
  std::vector<double> samples_us;
};

// One call = whatever `call` enqueues on `stream` (one or more kernels).
using GpuCall = std::function<Status(cudaStream_t)>;
Status time_gpu_call(const GpuCall& call, cudaStream_t stream, const TimingConfig& config,
                     TimingResult* result);

}  // namespace mlakit
