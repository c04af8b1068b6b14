// Device facts: the table of known chips, the live query through the CUDA runtime (a machine
// without a driver or GPU has 0 devices), the per-process cache of live facts, and the arch gate.
// Table figures are datasheet leads; the live query wins.
#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <mutex>

#include <cuda_runtime_api.h>

#include "base/cuda_status.h"
#include "mlakit/device.h"

namespace mlakit {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

DeviceFacts entry(const char* name, int major, int minor, int sms, int smem_block_kb,
                  int smem_sm_kb, int max_threads, int l2_mb, double hbm_gbps) {
  DeviceFacts f;
  f.name = name;
  f.sm_major = major;
  f.sm_minor = minor;
  f.num_sms = sms;
  f.smem_per_block_optin = smem_block_kb * 1024;
  f.smem_per_sm = smem_sm_kb * 1024;
  f.regs_per_sm = 65536;
  f.regs_per_thread_max = 255;
  f.max_threads_per_sm = max_threads;
  f.l2_bytes = l2_mb * 1024 * 1024;
  f.hbm_gbps = hbm_gbps;
  return f;
}

}  // namespace

std::string DeviceFacts::describe() const {
  char buf[160];
  std::snprintf(buf, sizeof buf, "sm_%d%d (%s, %d SMs)", sm_major, sm_minor, name.c_str(), num_sms);
  return buf;
}

const std::vector<DeviceFacts>& known_devices() {
  // name, sm, SMs, smem/block opt-in KB, smem/SM KB, threads/SM, L2 MB, HBM GB/s
  static const std::vector<DeviceFacts> table = {
      entry("NVIDIA H100 80GB HBM3", 9, 0, 132, 227, 228, 2048, 50, 3350),
      entry("NVIDIA H200", 9, 0, 132, 227, 228, 2048, 60, 4800),
      entry("NVIDIA B200", 10, 0, 148, 227, 228, 2048, 126, 8000),
      entry("NVIDIA B300", 10, 3, 148, 227, 228, 2048, 126, 8000),
      entry("NVIDIA GeForce RTX 5090", 12, 0, 170, 99, 100, 1536, 96, 1792),
  };
  return table;
}

Status find_known_device(const std::string& name, DeviceFacts* out) {
  const std::string want = lower(name);
  for (const DeviceFacts& f : known_devices()) {
    if (lower(f.name).find(want) != std::string::npos) {
      *out = f;
      return Status::ok();
    }
  }
  std::string names;
  for (const DeviceFacts& f : known_devices()) names += (names.empty() ? "" : ", ") + f.name;
  return Status::not_found("device '" + name + "': not in the table (known: " + names + ")");
}

std::string ArchRequirement::describe() const {
  return "sm_" + std::to_string(sm_major) + std::to_string(sm_minor) + (arch_specific ? "a" : "");
}

Status check_arch(const ArchRequirement& need, const DeviceFacts& dev) {
  const bool ok = need.arch_specific
                      ? dev.sm_major == need.sm_major && dev.sm_minor == need.sm_minor
                      : dev.sm() >= need.sm_major * 10 + need.sm_minor;
  if (ok) return Status::ok();
  return Status::unsupported("needs " + need.describe() + "; found sm_" + std::to_string(dev.sm_major) +
                             std::to_string(dev.sm_minor) + " (" + dev.name + ")");
}

// --- live devices ---------------------------------------------------------------------------

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error for later calls
    return 0;
  }
  return n;
}

Status query_device(int device, DeviceFacts* out) {
  const int n = device_count();
  if (n == 0) return Status::unsupported("no CUDA device is visible (no GPU or no driver)");
  if (device < 0 || device >= n)
    return Status::invalid_argument("device: expected 0.." + std::to_string(n - 1) + ", got " +
                                    std::to_string(device));
  cudaDeviceProp prop;
  MLAKIT_RETURN_IF_ERROR(cuda_status(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties"));
  DeviceFacts f;
  f.name = prop.name;
  f.sm_major = prop.major;
  f.sm_minor = prop.minor;
  f.num_sms = prop.multiProcessorCount;
  f.smem_per_block_optin = int(prop.sharedMemPerBlockOptin);
  f.smem_per_sm = int(prop.sharedMemPerMultiprocessor);
  f.regs_per_sm = prop.regsPerMultiprocessor;
  f.max_threads_per_sm = prop.maxThreadsPerMultiProcessor;
  f.l2_bytes = prop.l2CacheSize;
  // Datasheet bandwidth from the table when the chip is known (the runtime no longer reports it).
  DeviceFacts known;
  if (find_known_device(f.name, &known).is_ok()) f.hbm_gbps = known.hbm_gbps;
  f.live = true;
  *out = f;
  return Status::ok();
}

Status cached_device_facts(int device, DeviceFacts* out) {
  static std::mutex mu;
  static std::array<DeviceFacts, 64> facts;
  static std::array<bool, 64> have{};
  if (device < 0 || device >= int(facts.size())) return query_device(device, out);
  std::lock_guard<std::mutex> lock(mu);
  if (!have[device]) {
    MLAKIT_RETURN_IF_ERROR(query_device(device, &facts[device]));
    have[device] = true;
  }
  *out = facts[device];
  return Status::ok();
}

}  // namespace mlakit
