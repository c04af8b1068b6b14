// Host-side resource rules shared by the registry entries of src/kernels (host-safe): what an SM
// leaves each thread when several CTAs share it.
#pragma once

#include <algorithm>
#include <string>

#include "mlakit/device.h"

namespace mlakit::kernels {

// Registers one thread may use when `ctas_per_sm` CTAs of `threads` threads share an SM.
inline int register_cap(const DeviceFacts& dev, int threads, int ctas_per_sm) {
  return std::min(dev.regs_per_thread_max, dev.regs_per_sm / (threads * ctas_per_sm));
}

// "" when a kernel needing `regs` registers per thread fits `ctas_per_sm` CTAs of `threads`
// threads on one SM; else "<threads> threads leave <cap> registers per thread; the kernel needs
// <regs>".
inline std::string register_shortfall(const DeviceFacts& dev, int threads, int ctas_per_sm, int regs) {
  const int cap = register_cap(dev, threads, ctas_per_sm);
  if (cap >= regs) return std::string();
  return std::to_string(threads) + " threads leave " + std::to_string(cap) + " registers per thread; the kernel needs " +
         std::to_string(regs);
}

}  // namespace mlakit::kernels
