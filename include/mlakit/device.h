// Device facts: a table of the chips mlakit knows (for validating plans on any machine) and the
// live query of the device in this process. Plain C++; the live query uses the CUDA runtime only.
#pragma once

#include <string>
#include <vector>

#include "mlakit/status.h"

namespace mlakit {

struct DeviceFacts {
  std::string name;            // "NVIDIA H200"
  int sm_major = 0, sm_minor = 0;
  int num_sms = 0;
  int smem_per_block_optin = 0;  // bytes a block may request after cudaFuncSetAttribute
  int smem_per_sm = 0;           // bytes
  int regs_per_sm = 0;           // 32-bit registers
  int regs_per_thread_max = 255;
  int max_threads_per_sm = 0;
  int l2_bytes = 0;
  double hbm_gbps = 0;           // datasheet bandwidth, GB/s (a lead; `mlakit ceiling` measures)
  bool live = false;             // true when read from a device of this process

  int sm() const { return sm_major * 10 + sm_minor; }
  // "sm_90 (NVIDIA H200, 132 SMs)"
  std::string describe() const;
};

// The table: H100 and H200 (sm_90), B200 and B300 (sm_100), RTX 5090 (sm_120).
const std::vector<DeviceFacts>& known_devices();
// Finds a table entry by a case-insensitive substring of its name ("h200", "rtx 5090").
Status find_known_device(const std::string& name, DeviceFacts* out);

// Number of CUDA devices usable in this process; 0 (never an error) without a driver or GPU.
int device_count();
// Reads the live facts of `device`; fails with a readable reason without a GPU.
Status query_device(int device, DeviceFacts* out);
// The same, read once per device and process (cudaGetDeviceProperties is too slow for every
// plan or verification); thread-safe.
Status cached_device_facts(int device, DeviceFacts* out);

// What a kernel needs of the device it runs on.
struct ArchRequirement {
  int sm_major = 9, sm_minor = 0;
  bool arch_specific = true;  // needs the "a" target (sm_90a): the exact major.minor, no newer
  std::string describe() const;  // "sm_90a"
};

// Ok when a kernel built for `need` runs on `dev`; else a reason such as
// "needs sm_90a; found sm_120 (NVIDIA GeForce RTX 5090)".
Status check_arch(const ArchRequirement& need, const DeviceFacts& dev);

}  // namespace mlakit
