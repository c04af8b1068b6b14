// NVML through dlopen: the few entry points the timer reads, declared here by their C signatures
// (nvmlReturn_t is an int enum, nvmlDevice_t an opaque pointer, NVML_CLOCK_SM is 1).
#include "workbench/nvml.h"

#include <dlfcn.h>

#include <cstdio>
#include <mutex>

#include <cuda_runtime_api.h>

#include "base/cuda_status.h"

namespace mlakit {
namespace {

using NvmlDevice = void*;
using NvmlInitFn = int (*)();
using NvmlHandleByPciFn = int (*)(const char*, NvmlDevice*);
using NvmlClockFn = int (*)(NvmlDevice, int, unsigned int*);
using NvmlReasonsFn = int (*)(NvmlDevice, unsigned long long*);
using NvmlErrorStringFn = const char* (*)(int);

constexpr int kNvmlSuccess = 0;
constexpr int kNvmlClockSm = 1;

struct Nvml {
  bool loaded = false;
  std::string error;
  NvmlHandleByPciFn handle_by_pci = nullptr;
  NvmlClockFn clock_info = nullptr;
  NvmlClockFn max_clock_info = nullptr;
  NvmlReasonsFn reasons = nullptr;
  NvmlErrorStringFn error_string = nullptr;

  std::string describe(int rc) const {
    const char* s = error_string ? error_string(rc) : nullptr;
    return s ? std::string(s) : "NVML error " + std::to_string(rc);
  }
};

const Nvml& nvml() {
  static Nvml lib;
  static std::once_flag once;
  std::call_once(once, [] {
    void* h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* e = dlerror();
      lib.error = std::string("cannot load libnvidia-ml.so.1: ") + (e ? e : "unknown reason");
      return;
    }
    auto init = reinterpret_cast<NvmlInitFn>(dlsym(h, "nvmlInit_v2"));
    lib.handle_by_pci = reinterpret_cast<NvmlHandleByPciFn>(dlsym(h, "nvmlDeviceGetHandleByPciBusId_v2"));
    lib.clock_info = reinterpret_cast<NvmlClockFn>(dlsym(h, "nvmlDeviceGetClockInfo"));
    lib.max_clock_info = reinterpret_cast<NvmlClockFn>(dlsym(h, "nvmlDeviceGetMaxClockInfo"));
    // Renamed "clocks event reasons" in newer drivers; the older name stays exported.
    lib.reasons = reinterpret_cast<NvmlReasonsFn>(dlsym(h, "nvmlDeviceGetCurrentClocksEventReasons"));
    if (!lib.reasons)
      lib.reasons = reinterpret_cast<NvmlReasonsFn>(dlsym(h, "nvmlDeviceGetCurrentClocksThrottleReasons"));
    lib.error_string = reinterpret_cast<NvmlErrorStringFn>(dlsym(h, "nvmlErrorString"));
    if (!init || !lib.handle_by_pci || !lib.clock_info) {
      lib.error = "libnvidia-ml.so.1 lacks nvmlInit_v2 / nvmlDeviceGetHandleByPciBusId_v2 / "
                  "nvmlDeviceGetClockInfo";
      return;
    }
    const int rc = init();
    if (rc != kNvmlSuccess) {
      lib.error = "nvmlInit_v2 failed: " + lib.describe(rc);
      return;
    }
    lib.loaded = true;
  });
  return lib;
}

}  // namespace

Status nvml_sample(int cuda_device, NvmlSample* out) {
  *out = NvmlSample{};
  const Nvml& lib = nvml();
  if (!lib.loaded) return Status::unsupported(lib.error);
  char bus_id[32] = {0};
  MLAKIT_RETURN_IF_ERROR(
      cuda_status(cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), cuda_device), "cudaDeviceGetPCIBusId"));
  NvmlDevice dev = nullptr;
  int rc = lib.handle_by_pci(bus_id, &dev);
  if (rc != kNvmlSuccess)
    return Status::not_found("NVML has no device at PCI " + std::string(bus_id) + ": " +
                             lib.describe(rc));
  unsigned int mhz = 0;
  rc = lib.clock_info(dev, kNvmlClockSm, &mhz);
  if (rc != kNvmlSuccess) return Status::device_error("nvmlDeviceGetClockInfo: " + lib.describe(rc));
  out->sm_clock_mhz = int(mhz);
  if (lib.max_clock_info && lib.max_clock_info(dev, kNvmlClockSm, &mhz) == kNvmlSuccess)
    out->sm_clock_max_mhz = int(mhz);
  unsigned long long mask = 0;
  if (lib.reasons && lib.reasons(dev, &mask) == kNvmlSuccess) out->throttle_mask = mask;
  return Status::ok();
}

std::string describe_throttle(uint64_t mask) {
  static constexpr struct {
    uint64_t bit;
    const char* name;
  } kReasons[] = {
      {0x2, "applications_clocks_setting"}, {0x4, "sw_power_cap"},
      {0x8, "hw_slowdown"},                 {0x10, "sync_boost"},
      {0x20, "sw_thermal_slowdown"},        {0x40, "hw_thermal_slowdown"},
      {0x80, "hw_power_brake_slowdown"},    {0x100, "display_clock_setting"},
  };
  std::string s;
  uint64_t known = 0x1;  // gpu_idle: dropped on purpose
  for (const auto& r : kReasons) {
    known |= r.bit;
    if (!(mask & r.bit)) continue;
    if (!s.empty()) s += ',';
    s += r.name;
  }
  if (mask & ~known) {
    char hex[32];
    std::snprintf(hex, sizeof(hex), "0x%llx", static_cast<unsigned long long>(mask & ~known));
    s += s.empty() ? "other:" : ",other:";
    s += hex;
  }
  return s.empty() ? "none" : s;
}

}  // namespace mlakit
