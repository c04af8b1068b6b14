// NVML through dlopen (workbench/shared_library.h): the entry points the timer reads, typed from
// nvml.h (the pinned nvidia-nvml-dev header in .deps/), so the binary needs no libnvidia-ml at link
// or load time and runs where the driver has none.
#include "workbench/nvml.h"

#include <nvml.h>

#include <cstdio>
#include <mutex>

#include <cuda_runtime_api.h>

#include "base/cuda_status.h"
#include "workbench/shared_library.h"

namespace mlakit {
namespace {

struct Nvml {
  bool loaded = false;
  std::string error;
  decltype(&nvmlDeviceGetHandleByPciBusId_v2) handle_by_pci = nullptr;
  decltype(&nvmlDeviceGetClockInfo) clock_info = nullptr;
  decltype(&nvmlDeviceGetMaxClockInfo) max_clock_info = nullptr;
  // Also the type of the deprecated nvmlDeviceGetCurrentClocksThrottleReasons (the same signature).
  decltype(&nvmlDeviceGetCurrentClocksEventReasons) reasons = nullptr;
  decltype(&nvmlErrorString) error_string = nullptr;

  std::string describe(nvmlReturn_t rc) const {
    const char* s = error_string ? error_string(rc) : nullptr;
    return s ? std::string(s) : "NVML error " + std::to_string(int(rc));
  }
};

const Nvml& nvml() {
  static Nvml lib;
  static std::once_flag once;
  std::call_once(once, [] {
    SharedLibrary so;
    if (!so.open({"libnvidia-ml.so.1"})) {
      lib.error = "cannot load libnvidia-ml.so.1: " + so.error();
      return;
    }
    decltype(&nvmlInit_v2) init = nullptr;
    so.bind(&init, "nvmlInit_v2");
    so.bind(&lib.handle_by_pci, "nvmlDeviceGetHandleByPciBusId_v2");
    so.bind(&lib.clock_info, "nvmlDeviceGetClockInfo");
    so.bind(&lib.max_clock_info, "nvmlDeviceGetMaxClockInfo");
    // Renamed "clocks event reasons" in driver 535; older drivers export only the throttle name.
    so.bind(&lib.reasons, "nvmlDeviceGetCurrentClocksEventReasons");
    if (!lib.reasons) so.bind(&lib.reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
    so.bind(&lib.error_string, "nvmlErrorString");
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
