// The timing core: warm-up, host-cost pass, timed pass (CUPTI spans or CUDA events).
// Design notes and the reasons behind the numbers: docs/workbench.md ("How a call is timed").
#include "workbench/timer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>
#include <mutex>

#include "base/cuda_status.h"
#include "kernels/workbench/timing_kernels.h"
#include "workbench/cupti_spans.h"
#include "workbench/nvml.h"
#include "workbench/profiling.h"

namespace mlakit {
namespace {

// The busy-wait before a timed call lasts kBusyWaitBaseUs + kBusyWaitHostFactor x (p90 host cost
// of one call): CUPTI's API tracing makes launches slower than the untraced host pass measured,
// and the call must be fully enqueued before the busy-wait ends. Capped so a pathological host
// cost cannot make a timing run take minutes.
constexpr double kBusyWaitBaseUs = 30;
constexpr double kBusyWaitHostFactor = 4;
constexpr double kBusyWaitMaxUs = 20000;
// Calls timed on the host clock for host_us (and the busy-wait length): a median and p90 of 20
// steady host timings are stable to a fraction of a microsecond.
constexpr int kHostCostCalls = 20;
// Without an L2 size from the device, flush 2 x 64 MiB (more than any Hopper L2).
constexpr size_t kFallbackL2Bytes = size_t(64) << 20;

struct FlushBuffer {
  void* ptr = nullptr;
  size_t bytes = 0;
  int num_sms = 0;
};

// One buffer per device, kept for the life of the process: cudaMalloc/cudaFree synchronize the
// device, and every timing run would otherwise pay for them.
Status flush_buffer(int device, FlushBuffer* out) {
  static std::mutex mutex;
  static std::map<int, FlushBuffer> buffers;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = buffers.find(device);
  if (it != buffers.end()) {
    *out = it->second;
    return Status::ok();
  }
  int l2 = 0, sms = 0;
  MLAKIT_RETURN_IF_ERROR(cuda_status(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device),
                                     "cudaDeviceGetAttribute(L2 size)"));
  MLAKIT_RETURN_IF_ERROR(cuda_status(
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute(SMs)"));
  FlushBuffer fb;
  fb.bytes = 2 * (l2 > 0 ? size_t(l2) : kFallbackL2Bytes);
  fb.num_sms = sms;
  MLAKIT_RETURN_IF_ERROR(cuda_status(cudaMalloc(&fb.ptr, fb.bytes),
                                     "allocating the cold-L2 buffer (" +
                                         std::to_string(fb.bytes >> 20) + " MiB)"));
  buffers[device] = fb;
  *out = fb;
  return Status::ok();
}

// What one timing run enqueues, step by step.
class Runner {
 public:
  Runner(const GpuCall& call, cudaStream_t stream, const TimingConfig& config, FlushBuffer flush)
      : call_(call), stream_(stream), cold_l2_(config.cold_l2), flush_(flush),
        label_(config.label.empty() ? "call" : config.label) {}

  Status cold_l2() {
    if (!cold_l2_) return Status::ok();
    return cuda_status(kernels::launch_l2_flush(flush_.ptr, flush_.bytes, ++salt_, flush_.num_sms, stream_),
                       "cold-L2 flush kernel");
  }
  Status busy_wait(double us) {
    return cuda_status(kernels::launch_busy_wait(uint64_t(us * 1e3), stream_), "busy-wait kernel");
  }
  Status invoke(const char* phase, int i) {
    ScopedNvtxRange range(label_);
    const Status st = call_(stream_);
    if (st) return st;
    return Status(st.code(), std::string(phase) + " call " + std::to_string(i) + ": " + st.message());
  }
  cudaStream_t stream() const { return stream_; }
  Status sync(const char* phase) {
    return cuda_status(cudaStreamSynchronize(stream_),
                       std::string("synchronizing after the ") + phase + " calls");
  }

 private:
  const GpuCall& call_;
  cudaStream_t stream_;
  bool cold_l2_;
  FlushBuffer flush_;
  std::string label_;
  uint32_t salt_ = 0;
};

// A call captured once into a CUDA graph, replayed by the timing passes: an engine's decode step.
class CapturedCall {
 public:
  CapturedCall() = default;
  CapturedCall(const CapturedCall&) = delete;
  CapturedCall& operator=(const CapturedCall&) = delete;
  ~CapturedCall() {
    if (exec_) cudaGraphExecDestroy(exec_);
    if (graph_) cudaGraphDestroy(graph_);
  }

  // One eager call first, so that one-time work (function attributes, lazy loading) stays out of
  // the graph; then the call's stream work captured and instantiated.
  Status capture(const GpuCall& call, cudaStream_t stream) {
    if (stream == nullptr || stream == cudaStreamLegacy)
      return Status::invalid_argument("graph mode: stream: the legacy default stream cannot be captured; "
                                      "time on a created stream");
    MLAKIT_RETURN_IF_ERROR(call(stream));
    MLAKIT_RETURN_IF_ERROR(cuda_status(cudaStreamSynchronize(stream), "graph mode: the call before the capture"));
    MLAKIT_RETURN_IF_ERROR(cuda_status(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
                                       "graph mode: cudaStreamBeginCapture"));
    const Status called = call(stream);
    const cudaError_t ended = cudaStreamEndCapture(stream, &graph_);  // ends it whatever the call did
    if (!called.is_ok()) {
      cudaGetLastError();  // the invalidated capture's error is the call's
      return Status(called.code(), "graph mode: the call under capture: " + called.message());
    }
    MLAKIT_RETURN_IF_ERROR(cuda_status(ended, "graph mode: cudaStreamEndCapture"));
    return cuda_status(cudaGraphInstantiate(&exec_, graph_, 0), "graph mode: cudaGraphInstantiate");
  }

  GpuCall replay() const {
    const cudaGraphExec_t exec = exec_;
    return [exec](cudaStream_t s) { return cuda_status(cudaGraphLaunch(exec, s), "cudaGraphLaunch"); };
  }

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

// NVML read twice during the timed pass (middle and last call, while the GPU is busy): the lower
// clock and the union of the throttle reasons are reported.
struct ClockWatch {
  int device = 0;
  bool any = false;
  int clock = 0;
  uint64_t mask = 0;
  void sample() {
    NvmlSample s;
    if (!nvml_sample(device, &s)) return;
    clock = any ? std::min(clock, s.sm_clock_mhz) : s.sm_clock_mhz;
    mask |= s.throttle_mask;
    any = true;
  }
  bool due(int i, int iters) const { return i == iters / 2 || i == iters - 1; }
};

// `*cupti_fault` tells a CUPTI failure (the caller may fall back to events) from a failure of
// the call or of the stream (returned as is).
Status time_with_cupti(Runner& r, int iters, double wait_us, ClockWatch* clocks,
                       std::vector<double>* samples, int* activities_per_call, bool* cupti_fault) {
  *cupti_fault = true;
  MLAKIT_RETURN_IF_ERROR(cupti_begin());
  struct AbortGuard {
    bool armed = true;
    ~AbortGuard() {
      if (armed) cupti_abort();
    }
  } guard;
  for (int i = 0; i < iters; ++i) {
    *cupti_fault = false;
    MLAKIT_RETURN_IF_ERROR(r.cold_l2());
    MLAKIT_RETURN_IF_ERROR(r.busy_wait(wait_us));
    *cupti_fault = true;
    MLAKIT_RETURN_IF_ERROR(cupti_window_push(uint64_t(i) + 1));
    *cupti_fault = false;
    const Status st = r.invoke("timed", i);
    const Status popped = cupti_window_pop();
    MLAKIT_RETURN_IF_ERROR(st);
    *cupti_fault = true;
    MLAKIT_RETURN_IF_ERROR(popped);
    *cupti_fault = false;
    if (clocks->due(i, iters)) clocks->sample();
    MLAKIT_RETURN_IF_ERROR(r.sync("timed"));
  }
  guard.armed = false;
  *cupti_fault = true;
  WindowSpans spans;
  MLAKIT_RETURN_IF_ERROR(cupti_end(iters, &spans));
  *cupti_fault = false;
  *samples = spans.spans_us;
  std::vector<int> counts = spans.activities;
  std::nth_element(counts.begin(), counts.begin() + counts.size() / 2, counts.end());
  *activities_per_call = counts[counts.size() / 2];
  return Status::ok();
}

Status time_with_events(Runner& r, int iters, double wait_us, ClockWatch* clocks,
                        std::vector<double>* samples) {
  cudaEvent_t ev[2] = {nullptr, nullptr};
  struct EventGuard {
    cudaEvent_t* ev;
    ~EventGuard() {
      for (int k = 0; k < 2; ++k)
        if (ev[k]) cudaEventDestroy(ev[k]);
    }
  } guard{ev};
  for (auto& e : ev) MLAKIT_RETURN_IF_ERROR(cuda_status(cudaEventCreate(&e), "cudaEventCreate"));
  samples->clear();
  for (int i = 0; i < iters; ++i) {
    MLAKIT_RETURN_IF_ERROR(r.cold_l2());
    MLAKIT_RETURN_IF_ERROR(r.busy_wait(wait_us));
    // Recorded while the busy-wait still runs: the event fires when it ends, with the whole call
    // already queued behind it.
    MLAKIT_RETURN_IF_ERROR(cuda_status(cudaEventRecord(ev[0], r.stream()), "cudaEventRecord"));
    MLAKIT_RETURN_IF_ERROR(r.invoke("timed", i));
    MLAKIT_RETURN_IF_ERROR(cuda_status(cudaEventRecord(ev[1], r.stream()), "cudaEventRecord"));
    if (clocks->due(i, iters)) clocks->sample();
    MLAKIT_RETURN_IF_ERROR(r.sync("timed"));
    float ms = 0;
    MLAKIT_RETURN_IF_ERROR(cuda_status(cudaEventElapsedTime(&ms, ev[0], ev[1]), "cudaEventElapsedTime"));
    samples->push_back(double(ms) * 1e3);
  }
  return Status::ok();
}

Status check_config(const GpuCall& call, const TimingConfig& config) {
  if (!call) return Status::invalid_argument("call: expected a callable, got an empty GpuCall");
  if (config.warmup < 0 || config.warmup > 100000)
    return Status::invalid_argument("warmup: expected 0..100000, got " + std::to_string(config.warmup));
  if (config.iters < 1 || config.iters > 100000)
    return Status::invalid_argument("iters: expected 1..100000, got " + std::to_string(config.iters));
  return Status::ok();
}

Status warm_up(Runner& r, int warmup) {
  ScopedNvtxRange range("mlakit.timer.warmup");
  for (int i = 0; i < warmup; ++i) {
    MLAKIT_RETURN_IF_ERROR(r.cold_l2());
    MLAKIT_RETURN_IF_ERROR(r.invoke("warm-up", i));
  }
  return r.sync("warm-up");
}

// Host cost of one call: the wall clock of enqueuing it on an idle stream, no tracing on.
Status measure_host_cost(Runner& r, int iters, SampleStats* host) {
  ScopedNvtxRange range("mlakit.timer.host");
  std::vector<double> host_us;
  for (int i = 0; i < std::min(iters, kHostCostCalls); ++i) {
    MLAKIT_RETURN_IF_ERROR(r.sync("host-cost"));
    const auto t0 = std::chrono::steady_clock::now();
    MLAKIT_RETURN_IF_ERROR(r.invoke("host-cost", i));
    const auto t1 = std::chrono::steady_clock::now();
    host_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  MLAKIT_RETURN_IF_ERROR(r.sync("host-cost"));
  *host = summarize_samples(host_us);
  return Status::ok();
}

// The config's method, unless kAuto and the environment or the build says otherwise; `note` says why.
TimingConfig::Method choose_method(TimingConfig::Method method, std::string* note) {
  if (method != TimingConfig::Method::kAuto) return method;
  const char* forced = std::getenv("MLAKIT_TIMER");
  const char* profiler = std::getenv("MLAKIT_PROFILED_BY");
  if (forced && std::string(forced) == "events") {
    *note = "MLAKIT_TIMER=events";
    return TimingConfig::Method::kEvents;
  }
  if (forced && std::string(forced) == "cupti") return TimingConfig::Method::kCupti;
  if (profiler && *profiler) {
    *note = std::string("running under ") + profiler + ", which owns CUPTI";
    return TimingConfig::Method::kEvents;
  }
  if (Status built = cupti_built(); !built) {
    *note = built.message();
    return TimingConfig::Method::kEvents;
  }
  return method;
}

// The timed pass: CUPTI unless the method says events; events also when CUPTI fails under kAuto.
Status timed_pass(Runner& r, const TimingConfig& config, double wait_us, int device,
                  std::vector<double>* samples, TimingResult* result) {
  TimingConfig::Method method = choose_method(config.method, &result->note);
  ClockWatch clocks{device};
  ScopedNvtxRange range("mlakit.timer.timed");
  if (method != TimingConfig::Method::kEvents) {
    bool cupti_fault = false;
    const Status st = time_with_cupti(r, config.iters, wait_us, &clocks, samples,
                                      &result->kernels_per_call, &cupti_fault);
    if (st) {
      result->method = "cupti";
    } else if (method == TimingConfig::Method::kCupti || !cupti_fault) {
      return st;  // CUPTI was required, or the call / the stream failed
    } else {
      result->note = "CUPTI unusable, events used: " + st.message();
      MLAKIT_RETURN_IF_ERROR(cuda_status(cudaStreamSynchronize(r.stream()), "synchronizing after CUPTI"));
      method = TimingConfig::Method::kEvents;
    }
  }
  if (method == TimingConfig::Method::kEvents) {
    clocks = ClockWatch{device};
    MLAKIT_RETURN_IF_ERROR(time_with_events(r, config.iters, wait_us, &clocks, samples));
    result->method = "events";
  }
  if (clocks.any) {
    result->sm_clock_mhz = clocks.clock;
    result->throttle = describe_throttle(clocks.mask);
  }
  return Status::ok();
}

}  // namespace

Status time_gpu_call(const GpuCall& call, cudaStream_t stream, const TimingConfig& config,
                     TimingResult* result) {
  *result = TimingResult{};
  MLAKIT_RETURN_IF_ERROR(check_config(call, config));
  // CUPTI's activity state is process-wide, and two runs interleaving on one GPU would time
  // each other: one timing run at a time.
  static std::mutex timer_mutex;
  std::lock_guard<std::mutex> lock(timer_mutex);

  int device = 0;
  MLAKIT_RETURN_IF_ERROR(cuda_status(cudaGetDevice(&device), "cudaGetDevice"));
  FlushBuffer flush;
  if (config.cold_l2) MLAKIT_RETURN_IF_ERROR(flush_buffer(device, &flush));
  CapturedCall captured;
  GpuCall replay;
  if (config.graph) {
    MLAKIT_RETURN_IF_ERROR(captured.capture(call, stream));
    replay = captured.replay();
  }
  Runner r(config.graph ? replay : call, stream, config, flush);
  MLAKIT_RETURN_IF_ERROR(warm_up(r, config.warmup));
  SampleStats host;
  MLAKIT_RETURN_IF_ERROR(measure_host_cost(r, config.iters, &host));
  const double wait_us = std::min(kBusyWaitMaxUs, kBusyWaitBaseUs + kBusyWaitHostFactor * host.p90);

  std::vector<double> samples;
  MLAKIT_RETURN_IF_ERROR(timed_pass(r, config, wait_us, device, &samples, result));
  const SampleStats st = summarize_samples(samples);
  if (config.graph) result->method += ", graph";
  if (!config.cold_l2) result->method += ", warm L2";
  result->median_us = st.median;
  result->p10_us = st.p10;
  result->p90_us = st.p90;
  result->mean_us = st.mean;
  result->host_us = host.median;
  result->samples_us = std::move(samples);
  result->busy_wait_us = wait_us;
  return Status::ok();
}

SampleStats summarize_samples(std::vector<double> s) {
  SampleStats st;
  if (s.empty()) return st;
  std::sort(s.begin(), s.end());
  const size_t n = s.size();
  auto quantile = [&](double q) {
    const double pos = q * double(n - 1);
    const size_t lo = size_t(std::floor(pos)), hi = std::min(lo + 1, n - 1);
    return s[lo] + (s[hi] - s[lo]) * (pos - double(lo));
  };
  st.median = quantile(0.5);
  st.p10 = quantile(0.1);
  st.p90 = quantile(0.9);
  double sum = 0;
  for (double v : s) sum += v;
  st.mean = sum / double(n);
  return st;
}

std::string timer_capabilities() {
  const Status c = cupti_built();
  return c ? "cupti+events" : "events (" + c.message() + ")";
}

}  // namespace mlakit
