// The bf16 dense tensor peak: cuBLAS runs on the tensor cores (the figure is far above any
// non-tensor bf16 rate), the timer sees the whole GEMM (the figure stays below what the SMs can
// issue), the figure is cached and read back, and the current device is restored.
#include <gtest/gtest.h>

#include "../cpu/temp_dir.h"

#include <cuda_runtime_api.h>

#include "mlakit/device.h"
#include "workbench/ceiling.h"

namespace mlakit {
namespace {

// sm_90 issues at most 4096 dense bf16 FLOP per SM per clock (H100 SXM: 132 SMs at 1830 MHz =
// 989 TFLOP/s); 2 GHz is above any Hopper boost clock. Non-tensor bf16 peaks near 134 TFLOP/s,
// so a figure above 400 says the tensor cores ran.
constexpr double kFlopPerSmPerClock = 4096;
constexpr double kMaxClockHz = 2.0e9;
constexpr double kMinTensorTflops = 400;

TEST(MatmulCeiling, MeasuresTheTensorPeakAndCachesIt) {
  if (device_count() == 0) GTEST_SKIP() << "no CUDA device";
  DeviceFacts dev;
  if (!query_device(0, &dev)) GTEST_SKIP() << "cannot query device 0";
  if (dev.sm_major != 9) GTEST_SKIP() << "needs sm_90, found " << dev.describe();
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  test::TempDir dir;
  const std::string path = dir.file("ceiling.json");

  MatmulCeiling m;
  const Status st = matmul_ceiling(0, &m, path);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_FALSE(m.from_cache);
  EXPECT_GT(m.tflops, kMinTensorTflops) << m.m << "x" << m.n << "x" << m.k;
  EXPECT_LT(m.tflops, dev.num_sms * kFlopPerSmPerClock * kMaxClockHz / 1e12);
  int count = 0;
  const GemmShape* shapes = matmul_ceiling_shapes(&count);
  bool known_shape = false;
  for (int i = 0; i < count; ++i)
    known_shape |= shapes[i].m == m.m && shapes[i].n == m.n && shapes[i].k == m.k;
  EXPECT_TRUE(known_shape) << m.m << "x" << m.n << "x" << m.k;
  EXPECT_EQ(m.library.rfind("cuBLAS ", 0), 0u) << m.library;
  EXPECT_FALSE(m.method.empty());
  int current = -1;
  ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
  EXPECT_EQ(current, 0);

  MatmulCeiling again;
  ASSERT_TRUE(matmul_ceiling(0, &again, path).is_ok());
  EXPECT_TRUE(again.from_cache);
  EXPECT_NEAR(again.tflops, m.tflops, 0.05);  // stored to 1 decimal
  EXPECT_EQ(again.k, m.k);
}

}  // namespace
}  // namespace mlakit
