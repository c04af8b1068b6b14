// The bandwidth ceiling of the roofline: device-to-device copy bandwidth (bytes read + bytes
// written per second), measured once per device name and cached next to the tuner cache
// (<user cache dir>/ceiling.json). Bench reports quote effective bandwidth as % of it.
//   {"format": "mlakit.ceiling", "version": 1, "devices": {
//     "NVIDIA H200": {"copy_gbps": 4049.3, "bytes": 1073741824, "repeats": 10,
//                     "measured": "2026-11-21T10:00:00Z", "git": "0c0e77e"}}}
#pragma once

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

}  // namespace mlakit
