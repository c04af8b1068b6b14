#include "runtime/planner.h"

namespace mlakit {

Status plan_target(const KernelEntry& kernel, int device, PlanTarget* out) {
  if (device < 0 && cudaGetDevice(&device) != cudaSuccess) {
    cudaGetLastError();  // not sticky: later calls must not see it
    return Status::unsupported("no CUDA device is visible (no GPU or no driver); " + kernel.info().key +
                               " needs an " + kernel.info().arch.describe() + " device");
  }
  DeviceFacts facts;
  MLAKIT_RETURN_IF_ERROR(cached_device_facts(device, &facts));
  MLAKIT_RETURN_IF_ERROR(check_kernel_arch(kernel, facts));
  out->kernel_ = &kernel;
  out->facts_ = std::move(facts);
  out->device_ = device;
  return Status::ok();
}

Status plan_target(const KernelEntry& kernel, const DeviceFacts& facts, PlanTarget* out) {
  MLAKIT_RETURN_IF_ERROR(check_kernel_arch(kernel, facts));
  out->kernel_ = &kernel;
  out->facts_ = facts;
  out->device_ = -1;
  return Status::ok();
}

Status check_same_chip(int planned, const std::string& planned_name, int current) {
  DeviceFacts facts;
  MLAKIT_RETURN_IF_ERROR(cached_device_facts(current, &facts));
  if (facts.name == planned_name) return Status::ok();
  return Status::invalid_argument("plan: made for device " + std::to_string(planned) + " (" +
                                  planned_name + "); the current device is " +
                                  std::to_string(current) + " (" + facts.name + "): plan on it");
}

}  // namespace mlakit
