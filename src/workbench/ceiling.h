// The two ceilings of the roofline, measured once per device name and cached next to the tuner
// cache (<user cache dir>/ceiling.json):
// - bandwidth: device-to-device copy bandwidth (bytes read + bytes written per second); bench
//   reports quote effective bandwidth as % of it;
// - compute: the bf16 dense tensor-core peak, the best TFLOP/s of cuBLAS bf16 GEMMs (fp32
//   accumulate) on a few large shapes; compute-bound targets are stated as % of it.
//   {"format": "mlakit.ceiling", "version": 1, "devices": {
//     "NVIDIA H200": {"copy_gbps": 4049.3, "bytes": 1073741824, "repeats": 10,
//                     "measured": "2026-11-21T10:00:00Z", "git": "0c0e77e",
//                     "bf16_matmul": {"tflops": 812.4, "m": 8192, "n": 8192, "k": 16384,
//                                     "library": "cuBLAS 13.0.2", "method": "cupti", "iters": 20,
//                                     "sm_clock_mhz": 1755, "throttle": "none",
//                                     "measured": "2026-11-21T10:00:01Z", "git": "0c0e77e"}}}}
// (The tensor figures are an example of the format.) Either figure may be absent from a
// device's entry; storing one keeps the other.
#pragma once

#include <cstdint>
#include <string>

#include "mlakit/status.h"

namespace mlakit {

struct CopyCeiling {
  std::string device;      // DeviceFacts::name
  double gbps = 0;         // 2 x bytes / median copy time, GB/s (1e9 bytes)
  double bytes = 0;        // bytes of one copy (each direction)
  int repeats = 0;         // timed copies; the median is kept
  std::string measured;    // UTC, ISO 8601
  std::string path;        // the cache file it was read from or written to
  bool from_cache = false;
};

std::string default_ceiling_cache_path();  // user_cache_dir() + "/ceiling.json"

// Measures now on CUDA device `device` (cudaMemcpyAsync device to device of up to 1 GiB, bounded
// by free memory; 2 warm-up copies, 10 timed with events). Restores the current device.
Status measure_copy_ceiling(int device, CopyCeiling* out);

// The cached ceiling of `device`'s name in `cache_path` ("" = default); measures and stores it
// when absent, when the file is unreadable (it is rewritten), or when `remeasure`.
Status copy_ceiling(int device, CopyCeiling* out, const std::string& cache_path = "",
                    bool remeasure = false);

// Only what the cache holds for `device_name` (no GPU work): kNotFound when absent.
Status cached_copy_ceiling(const std::string& device_name, CopyCeiling* out,
                           const std::string& cache_path = "");

// Writes `c` into the entry of c.device in `cache_path` ("" = default), keeping the entry's other
// figure and the other devices; an unreadable file is started again. copy_ceiling calls it.
Status store_copy_ceiling(const CopyCeiling& c, const std::string& cache_path = "");

struct MatmulCeiling {
  std::string device;      // DeviceFacts::name
  double tflops = 0;       // 2*m*n*k / median span of the best shape, TFLOP/s (1e12 FLOP)
  int64_t m = 0, n = 0, k = 0;  // that shape: C(m x n) = A(m x k) B(k x n)
  std::string library;     // "cuBLAS 13.0.2"
  std::string method;      // the timer's span method: "cupti" / "events"
  int iters = 0;           // timed calls per shape; the median is kept
  int sm_clock_mhz = 0;    // NVML during the best shape's timing (0 = unknown)
  std::string throttle;    // NVML clock-event reasons then ("none", a list; "" = unknown)
  std::string measured;    // UTC, ISO 8601
  std::string path;        // the cache file it was read from or written to
  bool from_cache = false;
};

// The GEMM shapes measure_matmul_ceiling tries, in order ({m, n, k}).
struct GemmShape {
  int64_t m, n, k;
};
const GemmShape* matmul_ceiling_shapes(int* count);

// Measures now on CUDA device `device`: cublasGemmEx (workbench/cublas_gemm.h), A^T B with A and
// B K-contiguous, bf16 inputs of uniform random values, fp32 accumulation (CUBLAS_COMPUTE_32F,
// default math mode: tensor ops), bf16 output, beta 0. Each shape that fits in half the free
// memory is timed by the workbench's timer (time_gpu_call: CUPTI span, warm L2, 5 warm-up and
// 20 timed calls, median); the best TFLOP/s is kept. Restores the current device. kNotFound
// when cuBLAS cannot be loaded.
Status measure_matmul_ceiling(int device, MatmulCeiling* out);

// The cached bf16 dense tensor peak of `device`'s name in `cache_path` ("" = default); measures
// and stores it when absent, when the file is unreadable (it is rewritten), or when `remeasure`.
// What the bench layer calls to quote a kernel's TFLOP/s as % of the peak.
Status matmul_ceiling(int device, MatmulCeiling* out, const std::string& cache_path = "",
                      bool remeasure = false);

// Only what the cache holds for `device_name` (no GPU work): kNotFound when absent.
Status cached_matmul_ceiling(const std::string& device_name, MatmulCeiling* out,
                             const std::string& cache_path = "");

// Writes `c` into the entry of c.device, keeping the copy figure (as store_copy_ceiling).
Status store_matmul_ceiling(const MatmulCeiling& c, const std::string& cache_path = "");

}  // namespace mlakit
