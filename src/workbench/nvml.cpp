// NVML through dlopen: the entry points the timer reads, typed from nvml.h (the pinned
// nvidia-nvml-dev header in .deps/; declarations only) and resolved with dlsym at run time, so
// the binary needs no libnvidia-ml at link or load time and runs where the driver has none.
#include "workbench/nvml.h"

#include <dlfcn.h>
#include <nvml.h>

#include <cstdio>
#include <mutex>

#include <cuda_runtime_api.h>

#include "base/cuda_status.h"

namespace mlakit {
namespace {

// decltype takes the declared signatures without referencing the symbols (nothing to link).
using NvmlInitFn = decltype(&nvmlInit_v2);
using NvmlHandleByPciFn = decltype(&nvmlDeviceGetHandleByPciBusId_v2);
using NvmlClockFn = decltype(&nvmlDeviceGetClockInfo);
using NvmlMaxClockFn = decltype(&nvmlDeviceGetMaxClockInfo);
// Also the type of the deprecated nvmlDeviceGetCurrentClocksThrottleReasons (the same signature).
using NvmlReasonsFn = decltype(&nvmlDeviceGetCurrentClocksEventReasons);
using NvmlErrorStringFn = decltype(&nvmlErrorString);

struct Nvml {
  bool loaded = false;
  std::string error;
  NvmlHandleByPciFn handle_by_pci = nullptr;
  NvmlClockFn clock_info = nullptr;
  NvmlMaxClockFn max_clock_info = nullptr;
  NvmlReasonsFn reasons = nullptr;
  NvmlErrorStringFn error_string = nullptr;

  std::string describe(nvmlReturn_t rc) const {
    const char* s = error_string ? error_string(rc) : nullptr;
    return s ? std::string(s) : "NVML error " + std::to_string(int(rc));
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
    lib.max_clock_info = reinterpret_cast<NvmlMaxClockFn>(dlsym(h, "nvmlDeviceGetMaxClockInfo"));
    // Renamed "clocks event reasons" in driver 535; older drivers export only the throttle name.
    lib.reasons = reinterpret_cast<NvmlReasonsFn>(dlsym(h, "nvmlDeviceGetCurrentClocksEventReasons"));
    if (!lib.reasons)
      lib.reasons = reinterpret_cast<NvmlReasonsFn>(dlsym(h, "nvmlDeviceGetCurrentClocksThrottleReasons"));
    lib.error_string = reinterpret_cast<NvmlErrorStringFn>(dlsym(h, "nvmlErrorString"));
    if (!init || !lib.handle_by_pci || !lib.clock_info) {
      lib.error = "libnvidia-ml.so.1 lacks nvmlInit_v2 / nvmlDeviceGetHandleByPciBusId_v2 / "
                  "nvmlDeviceGetClockInfo";
      return;
    }
    const nvmlReturn_t rc = init();
    if (rc != NVML_SUCCESS) {
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
  nvmlDevice_t dev = nullptr;
  nvmlReturn_t rc = lib.handle_by_pci(bus_id, &dev);
  if (rc != NVML_SUCCESS)
    return Status::not_found("NVML has no device at PCI " + std::string(bus_id) + ": " +
                             lib.describe(rc));
  unsigned int mhz = 0;
  rc = lib.clock_info(dev, NVML_CLOCK_SM, &mhz);
  if (rc != NVML_SUCCESS) return Status::device_error("nvmlDeviceGetClockInfo: " + lib.describe(rc));
  out->sm_clock_mhz = int(mhz);
  if (lib.max_clock_info && lib.max_clock_info(dev, NVML_CLOCK_SM, &mhz) == NVML_SUCCESS)
    out->sm_clock_max_mhz = int(mhz);
  unsigned long long mask = 0;
  if (lib.reasons && lib.reasons(dev, &mask) == NVML_SUCCESS) out->throttle_mask = mask;
  return Status::ok();
}

namespace {

// Every clocks-event reason nvml.h declares, idle aside, by the name records and tables show.
struct ThrottleReason {
  unsigned long long bit;
  const char* name;
};
constexpr ThrottleReason kThrottleReasons[] = {
    {nvmlClocksEventReasonApplicationsClocksSetting, "applications_clocks_setting"},
    {nvmlClocksEventReasonSwPowerCap, "sw_power_cap"},
    {nvmlClocksThrottleReasonHwSlowdown, "hw_slowdown"},
    {nvmlClocksEventReasonSyncBoost, "sync_boost"},
    {nvmlClocksEventReasonSwThermalSlowdown, "sw_thermal_slowdown"},
    {nvmlClocksThrottleReasonHwThermalSlowdown, "hw_thermal_slowdown"},
    {nvmlClocksThrottleReasonHwPowerBrakeSlowdown, "hw_power_brake_slowdown"},
    {nvmlClocksEventReasonDisplayClockSetting, "display_clock_setting"},
};

constexpr unsigned long long named_reasons() {
  unsigned long long all = nvmlClocksEventReasonGpuIdle;  // known, and dropped on purpose (workbench/nvml.h)
  for (const ThrottleReason& r : kThrottleReasons) all |= r.bit;
  return all;
}
// A newer nvml.h that declares another reason fails here until the table names it.
static_assert(named_reasons() == (unsigned long long)(nvmlClocksEventReasonAll),
              "nvml.h declares a clocks-event reason that kThrottleReasons does not name");

}  // namespace

std::string describe_throttle(uint64_t mask) {
  std::string s;
  for (const ThrottleReason& r : kThrottleReasons) {
    if (!(mask & r.bit)) continue;
    if (!s.empty()) s += ',';
    s += r.name;
  }
  if (const uint64_t other = mask & ~uint64_t(named_reasons())) {
    char hex[32];
    std::snprintf(hex, sizeof(hex), "0x%llx", static_cast<unsigned long long>(other));
    s += s.empty() ? "other:" : ",other:";
    s += hex;
  }
  return s.empty() ? "none" : s;
}

}  // namespace mlakit
