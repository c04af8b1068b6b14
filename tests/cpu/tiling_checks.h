// Test helpers over a kernel's name-based tiling interface (plan/op_kernel.h).
#pragma once

#include <string>

#include "mlakit/device.h"
#include "mlakit/plan.h"
#include "mlakit/status.h"

namespace mlakit {

// "ok", or the reason the kernel rejects tiling `name` for `problem` on `dev`.
template <class Kernel, class Problem>
std::string why(const Kernel& kernel, const Problem& problem, const std::string& name, const DeviceFacts& dev) {
  const Status s = kernel.check(problem, name, dev);
  return s.is_ok() ? std::string("ok") : s.message();
}

// The workspace of a tiling the kernel accepts (0 when it rejects it: the test says so too).
template <class Kernel, class Problem>
size_t workspace_of(const Kernel& kernel, const Problem& problem, const std::string& name, const DeviceFacts& dev) {
  TilingValues values;
  const Status s = kernel.check(problem, name, dev, &values);
  return s.is_ok() ? kernel.workspace_bytes(problem, values) : 0;
}

}  // namespace mlakit
