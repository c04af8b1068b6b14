// The one timing core (CLI, tuner, Python): cold L2 before every timed call, warm-up, median of
// the GPU span of a call (first kernel start to last kernel end, gaps included) via CUPTI, with
// a CUDA-event fallback whose host launch work is hidden behind a busy-wait kernel.
//
// One timed iteration enqueues, in stream order:
//   [L2 flush kernel]  [busy-wait kernel]  <call: its kernels, memsets, copies>   then synchronizes.
// The busy-wait spins long enough (several times the measured host cost of `call`) that every
// launch of the call is queued before its first kernel starts: the span never contains host time.
// CUPTI: the call is enqueued inside an external-correlation window (an id per iteration); only
// device activities whose API correlation id maps to that window count, so the flush and the
// busy-wait are never part of a span. docs/workbench.md has the details and the fallbacks.
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
  // Write a buffer of 2x the L2 before every timed call (the figure of merit). false (bench and
  // run --warm-l2) is a diagnosis: data and kernel code stay in L2 from the call before.
  bool cold_l2 = true;
  enum class Method { kAuto, kCupti, kEvents } method = Method::kAuto;
  std::string label;         // NVTX range name of each timed call in annotation mode ("" = "call")
  // Time replays of the call captured once into a CUDA graph (as engines replay a decode step)
  // instead of eager calls: the same span of its kernels, the same cold L2 and busy-wait, both
  // outside the graph. Needs a created stream (the legacy default stream cannot be captured).
  bool graph = false;
};

struct TimingResult {
  double median_us = 0, p10_us = 0, p90_us = 0, mean_us = 0;
  double host_us = 0;        // host time one call costs (launch overhead), median
  std::string method;        // "cupti" / "events"; ", graph" and ", warm L2" appended when set
  int sm_clock_mhz = 0;      // NVML, 0 when unavailable
  std::string throttle;      // NVML throttle reasons, "none" or a list; "" when unavailable
  std::vector<double> samples_us;
  std::string note;          // why kAuto fell back to events, or "" (for logs, never an error)
  double busy_wait_us = 0;   // the busy-wait that preceded every timed call
  int kernels_per_call = 0;  // device activities in one call's span (CUPTI only; median)
};

// One call = whatever `call` enqueues on `stream` (one or more kernels).
using GpuCall = std::function<Status(cudaStream_t)>;
// Times `call` on the current device (with config.graph: one eager call, then its capture, then
// replays of the graph). Synchronizes `stream`; serialized process-wide (CUPTI's activity state is
// global). kAuto = CUPTI when built with it and usable, else events; kCupti
// fails rather than fall back. Never prints.
Status time_gpu_call(const GpuCall& call, cudaStream_t stream, const TimingConfig& config,
                     TimingResult* result);

// Median (mean of the middle two for even n), p10/p90 (linear interpolation between closest
// ranks, as numpy's default) and mean of `samples`; all 0 for an empty vector.
struct SampleStats {
  double median = 0, p10 = 0, p90 = 0, mean = 0;
};
SampleStats summarize_samples(std::vector<double> samples);

// Which span methods this build and process can use: "cupti+events" or "events (...reason)".
std::string timer_capabilities();

}  // namespace mlakit
