// The timer is honest: kernels of known span (globaltimer spins) measure within 10% of it, with
// CUPTI and with the event fallback; a call with a gap between two kernels spans both and the
// gap; host work inside a call never shows in the span; the L2 flush and busy-wait never count.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "kernels/workbench/timing_kernels.h"
#include "mlakit/device.h"
#include "workbench/cupti_spans.h"
#include "workbench/nvml.h"
#include "workbench/timer.h"

namespace mlakit {
namespace {

#define SKIP_WITHOUT_SM90()                                                        \
  do {                                                                             \
    if (device_count() == 0) GTEST_SKIP() << "no CUDA device";                     \
    DeviceFacts dev;                                                               \
    if (!query_device(0, &dev)) GTEST_SKIP() << "cannot query device 0";           \
    if (dev.sm_major != 9) GTEST_SKIP() << "needs sm_90, found " << dev.describe(); \
  } while (0)

#define SKIP_WITHOUT_CUPTI()                                                  \
  do {                                                                        \
    if (Status c = cupti_built(); !c) GTEST_SKIP() << c.message();            \
  } while (0)

constexpr double kTolerance = 0.10;

GpuCall spin_call(double us, int blocks = 1) {
  return [us, blocks](cudaStream_t s) -> Status {
    const cudaError_t e = kernels::launch_spin(uint64_t(us * 1e3), blocks, s);
    return e == cudaSuccess ? Status::ok() : Status::device_error(cudaGetErrorString(e));
  };
}

TimingConfig config(TimingConfig::Method method, int iters = 20) {
  TimingConfig c;
  c.warmup = 3;
  c.iters = iters;
  c.method = method;
  return c;
}

class TimerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (device_count() > 0) ASSERT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
  }
  void TearDown() override {
    if (stream_) cudaStreamDestroy(stream_);
  }
  cudaStream_t stream_ = nullptr;
};

TEST(TimerArgs, RejectsBadConfigWithoutTouchingTheDevice) {
  TimingResult r;
  TimingConfig c;
  c.iters = 0;
  Status st = time_gpu_call(spin_call(1), nullptr, c, &r);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("iters"), std::string::npos) << st.message();
  st = time_gpu_call(GpuCall{}, nullptr, TimingConfig{}, &r);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
}

TEST_F(TimerTest, CuptiSpanOfOneSpinKernel) {
  SKIP_WITHOUT_SM90();
  SKIP_WITHOUT_CUPTI();
  TimingResult r;
  ASSERT_TRUE(time_gpu_call(spin_call(50), stream_, config(TimingConfig::Method::kCupti), &r).is_ok());
  EXPECT_EQ(r.method, "cupti");
  EXPECT_NEAR(r.median_us, 50.0, 50.0 * kTolerance) << "p10 " << r.p10_us << " p90 " << r.p90_us;
  // The L2 flush and the busy-wait ran before every call and must not be counted.
  EXPECT_EQ(r.kernels_per_call, 1);
  EXPECT_EQ(r.samples_us.size(), 20u);
  EXPECT_LE(r.p10_us, r.median_us);
  EXPECT_LE(r.median_us, r.p90_us);
  EXPECT_GT(r.host_us, 0.0);
}

TEST_F(TimerTest, CuptiSpanIsTheSameWithAndWithoutColdL2) {
  SKIP_WITHOUT_SM90();
  SKIP_WITHOUT_CUPTI();
  TimingConfig c = config(TimingConfig::Method::kCupti);
  TimingResult cold, warm;
  ASSERT_TRUE(time_gpu_call(spin_call(50), stream_, c, &cold).is_ok());
  c.cold_l2 = false;
  ASSERT_TRUE(time_gpu_call(spin_call(50), stream_, c, &warm).is_ok());
  EXPECT_NEAR(cold.median_us, warm.median_us, 50.0 * kTolerance);
}

TEST_F(TimerTest, CuptiSpanCoversTwoKernelsAndTheGapBetweenThem) {
  SKIP_WITHOUT_SM90();
  SKIP_WITHOUT_CUPTI();
  // spin A (30 us), a host function sleeping 100 us on the stream (device idle), spin B (30 us):
  // the span runs from A's start to B's end, so it holds both kernels and the gap.
  constexpr double kA = 30, kB = 30, kGap = 100;
  GpuCall call = [&](cudaStream_t s) -> Status {
    MLAKIT_RETURN_IF_ERROR(spin_call(kA)(s));
    const cudaError_t e = cudaLaunchHostFunc(
        s, [](void*) { std::this_thread::sleep_for(std::chrono::microseconds(int(kGap))); }, nullptr);
    if (e != cudaSuccess) return Status::device_error(cudaGetErrorString(e));
    return spin_call(kB)(s);
  };
  TimingResult r;
  ASSERT_TRUE(time_gpu_call(call, stream_, config(TimingConfig::Method::kCupti), &r).is_ok());
  EXPECT_EQ(r.kernels_per_call, 2);
  EXPECT_GE(r.median_us, (kA + kB + kGap) * (1 - kTolerance));
  EXPECT_LT(r.median_us, (kA + kB + kGap) * 20) << "a span this long means it also covered the "
                                                   "flush or busy-wait";
}

// Graph mode: the call captured once and replayed; its span covers the same kernels (the flush and
// the busy-wait stay outside the graph and the span), and a replay of two spins lasts about as
// long as the eager call.
TEST_F(TimerTest, GraphReplaysSpanTheEagerCallsKernels) {
  SKIP_WITHOUT_SM90();
  SKIP_WITHOUT_CUPTI();
  const GpuCall two = [](cudaStream_t s) -> Status {
    MLAKIT_RETURN_IF_ERROR(spin_call(20)(s));
    return spin_call(20)(s);
  };
  TimingConfig c = config(TimingConfig::Method::kCupti);
  TimingResult eager, graph;
  ASSERT_TRUE(time_gpu_call(two, stream_, c, &eager).is_ok());
  c.graph = true;
  const Status st = time_gpu_call(two, stream_, c, &graph);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(eager.method, "cupti");
  EXPECT_EQ(graph.method, "cupti, graph");
  EXPECT_EQ(eager.kernels_per_call, 2);
  EXPECT_EQ(graph.kernels_per_call, 2);
  EXPECT_NEAR(graph.median_us, eager.median_us, 40.0 * kTolerance);
}

// The legacy default stream cannot be captured, and a call that fails under capture says so;
// either way the stream is left usable.
TEST_F(TimerTest, GraphModeErrorsNameTheirCause) {
  SKIP_WITHOUT_SM90();
  TimingConfig c = config(TimingConfig::Method::kAuto);
  c.graph = true;
  TimingResult r;
  Status st = time_gpu_call(spin_call(5), nullptr, c, &r);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("legacy default stream"), std::string::npos) << st.message();
  int calls = 0;
  const GpuCall fails_second = [&calls](cudaStream_t s) -> Status {
    if (++calls == 2) return Status::invalid_argument("refused");
    return spin_call(5)(s);
  };
  st = time_gpu_call(fails_second, stream_, c, &r);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("under capture: refused"), std::string::npos) << st.message();
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusActive;
  ASSERT_EQ(cudaStreamIsCapturing(stream_, &capturing), cudaSuccess);
  EXPECT_EQ(capturing, cudaStreamCaptureStatusNone);
  EXPECT_TRUE(time_gpu_call(spin_call(5), stream_, config(TimingConfig::Method::kAuto), &r).is_ok());
}

TEST_F(TimerTest, HostWorkInsideTheCallIsNotInTheSpan) {
  SKIP_WITHOUT_SM90();
  // The call sleeps 200 us on the host before launching a 50 us spin: the host cost shows in
  // host_us, never in the span (the busy-wait covers it).
  GpuCall call = [](cudaStream_t s) -> Status {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    return spin_call(50)(s);
  };
  for (auto method : {TimingConfig::Method::kCupti, TimingConfig::Method::kEvents}) {
    if (method == TimingConfig::Method::kCupti && !cupti_built()) continue;
    TimingResult r;
    ASSERT_TRUE(time_gpu_call(call, stream_, config(method, 10), &r).is_ok());
    EXPECT_GE(r.host_us, 200.0) << r.method;
    EXPECT_NEAR(r.median_us, 50.0, 50.0 * kTolerance + (method == TimingConfig::Method::kEvents ? 3 : 0))
        << r.method;
  }
}

TEST_F(TimerTest, EventFallbackSpanOfOneSpinKernel) {
  SKIP_WITHOUT_SM90();
  // 100 us: the event pair adds the first kernel's launch latency (~2-3 us) to the span.
  TimingResult r;
  ASSERT_TRUE(time_gpu_call(spin_call(100), stream_, config(TimingConfig::Method::kEvents), &r).is_ok());
  EXPECT_EQ(r.method, "events");
  EXPECT_NEAR(r.median_us, 100.0, 100.0 * kTolerance);
  EXPECT_GT(r.busy_wait_us, r.host_us);
}

TEST_F(TimerTest, EventFallbackCoversTwoKernelsAndTheGap) {
  SKIP_WITHOUT_SM90();
  constexpr double kA = 30, kB = 30, kGap = 100;
  GpuCall call = [&](cudaStream_t s) -> Status {
    MLAKIT_RETURN_IF_ERROR(spin_call(kA)(s));
    const cudaError_t e = cudaLaunchHostFunc(
        s, [](void*) { std::this_thread::sleep_for(std::chrono::microseconds(int(kGap))); }, nullptr);
    if (e != cudaSuccess) return Status::device_error(cudaGetErrorString(e));
    return spin_call(kB)(s);
  };
  TimingResult r;
  ASSERT_TRUE(time_gpu_call(call, stream_, config(TimingConfig::Method::kEvents), &r).is_ok());
  EXPECT_GE(r.median_us, (kA + kB + kGap) * (1 - kTolerance));
}

TEST_F(TimerTest, AutoPicksCuptiWhenBuiltWithIt) {
  SKIP_WITHOUT_SM90();
  SKIP_WITHOUT_CUPTI();
  if (std::getenv("MLAKIT_TIMER") || std::getenv("MLAKIT_PROFILED_BY"))
    GTEST_SKIP() << "MLAKIT_TIMER / MLAKIT_PROFILED_BY set";
  TimingResult r;
  ASSERT_TRUE(time_gpu_call(spin_call(20), stream_, config(TimingConfig::Method::kAuto), &r).is_ok());
  EXPECT_EQ(r.method, "cupti") << r.note;
}

TEST_F(TimerTest, ManyBlocksSpanOneWave) {
  SKIP_WITHOUT_SM90();
  SKIP_WITHOUT_CUPTI();
  // 132 one-warp CTAs fit in one wave: the span is still ~50 us.
  TimingResult r;
  ASSERT_TRUE(time_gpu_call(spin_call(50, 132), stream_, config(TimingConfig::Method::kCupti), &r).is_ok());
  EXPECT_NEAR(r.median_us, 50.0, 50.0 * kTolerance);
}

TEST_F(TimerTest, CallErrorsComeBackWithThePhase) {
  SKIP_WITHOUT_SM90();
  GpuCall call = [](cudaStream_t) { return Status::unsupported("tiling s99 is not valid"); };
  TimingResult r;
  const Status st = time_gpu_call(call, stream_, config(TimingConfig::Method::kAuto), &r);
  EXPECT_EQ(st.code(), Code::kUnsupported);
  EXPECT_NE(st.message().find("warm-up call 0"), std::string::npos) << st.message();
}

TEST(Nvml, ReadsTheSmClock) {
  SKIP_WITHOUT_SM90();
  NvmlSample s;
  const Status st = nvml_sample(0, &s);
  if (st.code() == Code::kUnsupported) GTEST_SKIP() << st.message();
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_GT(s.sm_clock_mhz, 0);
  EXPECT_FALSE(describe_throttle(s.throttle_mask).empty());
}

}  // namespace
}  // namespace mlakit
