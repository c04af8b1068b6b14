// NVML, loaded at run time (dlopen "libnvidia-ml.so.1"; the entry points are typed from the
// pinned nvml.h, which only declares): the SM clock and the clock-event (throttle) reasons of a
// CUDA device, read while a benchmark runs. Read-only: mlakit never sets clocks.
#pragma once

#include <cstdint>
#include <string>

#include "mlakit/status.h"

namespace mlakit {

struct NvmlSample {
  int sm_clock_mhz = 0;         // current SM clock
  int sm_clock_max_mhz = 0;     // the board's maximum SM clock (0 when NVML does not say)
  uint64_t throttle_mask = 0;   // NVML clocks-event (throttle) reason bits
};

// Reads the current SM clock and throttle reasons of CUDA device `cuda_device` (matched to its
// NVML handle by PCI bus id). Fails with a reason when the driver library or the device is
// unavailable; never prints.
Status nvml_sample(int cuda_device, NvmlSample* out);

// "none", or a comma-separated list of reasons ("sw_power_cap,hw_thermal_slowdown"), one name
// for each reason nvml.h declares; bits it does not declare as "other:0x...". The idle bit is
// dropped: an idle GPU between calls says nothing about the clock a kernel ran at.
std::string describe_throttle(uint64_t mask);

}  // namespace mlakit
