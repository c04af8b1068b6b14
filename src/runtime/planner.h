// Where plans are made (mlakit/plan.h), once for every op. Two steps, each check in one place:
//   1. plan_target: the device a kernel will run on (a live device, or the facts of a known chip
//      for dry planning) and the kernel's arch gate;
//   2. Planner<Problem>::plan: the tiling (forced by name, tuned or the kernel's default), parsed
//      and checked once by the kernel's variant (OpKernel::check), and the workspace size.
// The op's public entry points (dsa_plan, dsa_run) are thin wrappers: Planner::plan_request does
// both steps for a kernel key, and check_runnable is all a run re-checks.
#pragma once

#include <string>

#include <cuda_runtime_api.h>

#include "base/cuda_status.h"
#include "mlakit/device.h"
#include "mlakit/plan.h"
#include "plan/op_kernel.h"
#include "runtime/registry.h"
#include "runtime/tune_cache.h"

namespace mlakit {

// A kernel and the device facts it passed the arch gate for. Only plan_target makes one.
class PlanTarget {
 public:
  PlanTarget() = default;
  bool empty() const { return kernel_ == nullptr; }
  const KernelEntry& kernel() const { return *kernel_; }
  const DeviceFacts& facts() const { return facts_; }
  int device() const { return device_; }  // -1: facts of a known chip, no live device

 private:
  friend Status plan_target(const KernelEntry&, int, PlanTarget*);
  friend Status plan_target(const KernelEntry&, const DeviceFacts&, PlanTarget*);
  const KernelEntry* kernel_ = nullptr;
  DeviceFacts facts_;
  int device_ = -1;
};

// CUDA device `device` (-1 = the current one; its facts are read once per process), gated.
// kUnsupported without a visible device, or when the kernel's arch does not match.
Status plan_target(const KernelEntry& kernel, int device, PlanTarget* out);
// The facts of a chip without a GPU (dry planning: the CLI on a CPU machine, tuner dry runs,
// tests), gated. Plans made for it have device() == -1 and never run.
Status plan_target(const KernelEntry& kernel, const DeviceFacts& facts, PlanTarget* out);

// A plan made for device `planned` used on device `current`: ok when both are the same chip.
Status check_same_chip(int planned, const std::string& planned_name, int current);

// What a planning request names; the op's public options map onto it.
struct PlanRequest {
  std::string kernel_key;                     // "" = the registry's default for the problem
  std::string tiling;                         // "" = tuned if cached and valid, else default
  int device = -1;                            // -1 = current device
  const DeviceFacts* device_facts = nullptr;  // non-null: dry planning for these facts
};

template <class Problem>
struct Planner {
  using Kernel = OpKernel<Problem>;
  using Contract = OpContract<Problem>;
  using PlanT = Plan<Problem>;

  // The kernel for `problem`: `key` (kNotFound when unknown, kInvalidArgument when it is another
  // op's), or the registry default for the problem's op, dtype and heads (kUnsupported when none).
  static Status resolve_kernel(const std::string& key, const Problem& problem, const Kernel** out) {
    if (!key.empty()) {
      const KernelEntry* entry = find_kernel(key);
      if (entry == nullptr)
        return Status::not_found("kernel_key: no kernel registered as '" + key +
                                 "' (known:" + kernel_keys() + ")");
      *out = dynamic_cast<const Kernel*>(entry);
      if (*out == nullptr)
        return Status::invalid_argument("kernel_key: '" + key + "' is a " + entry->info().op +
                                        " kernel, not " + Contract::kOp);
      if (entry->info().dtype != Contract::dtype(problem))
        return Status::unsupported("kernel_key: '" + key + "' reads a " + entry->info().dtype +
                                   " cache; the problem's is " + Contract::dtype(problem));
      return Status::ok();
    }
    const std::string dtype = Contract::dtype(problem);
    const int heads = Contract::heads(problem);
    *out = dynamic_cast<const Kernel*>(default_kernel(Contract::kOp, dtype, heads));
    if (*out != nullptr) return Status::ok();
    // Each registered kernel with what it runs, so the error names the supported head counts.
    std::string keys;
    for (const KernelEntry* k : kernels_of(Contract::kOp))
      if (!k->info().floor)
        keys += " " + k->info().key + " (" + k->info().dtype + ", " + k->info().heads_string() + " heads)";
    return Status::unsupported(std::string("no ") + Contract::kOp + " kernel is registered for " +
                               dtype + " with " + std::to_string(heads) + " heads (registered:" +
                               (keys.empty() ? std::string(" none") : keys) + ")");
  }

  // Step 2 for a target that passed the gate: validates the problem, chooses and checks the
  // tiling (`forced` by name, or tuned / default when null) once, fills `out`. `target.kernel()`
  // must be a Kernel.
  static Status plan(const PlanTarget& target, const Problem& problem, const std::string* forced,
                     PlanT* out) {
    MLAKIT_RETURN_IF_ERROR(problem.validate());
    return plan_valid(target, problem, forced, out);
  }

  // Both steps for a request: what dsa_plan (and every op's plan function) is.
  static Status plan_request(const Problem& problem, const PlanRequest& request, PlanT* out) {
    if (out == nullptr) return Status::invalid_argument("plan: null pointer");
    MLAKIT_RETURN_IF_ERROR(problem.validate());
    const Kernel* kernel = nullptr;
    MLAKIT_RETURN_IF_ERROR(resolve_kernel(request.kernel_key, problem, &kernel));
    PlanTarget target;
    if (request.device_facts != nullptr)
      MLAKIT_RETURN_IF_ERROR(plan_target(*kernel, *request.device_facts, &target));
    else
      MLAKIT_RETURN_IF_ERROR(plan_target(*kernel, request.device, &target));
    return plan_valid(target, problem, request.tiling.empty() ? nullptr : &request.tiling, out);
  }

  static const Kernel& kernel(const PlanT& plan) { return *static_cast<const Kernel*>(plan.kernel_); }

  // The planned launch (the op's run function checked the tensors and the device).
  static Status launch(const PlanT& plan, const typename Kernel::Tensors& tensors, void* workspace,
                       cudaStream_t stream) {
    return kernel(plan).launch(plan.problem_, plan.values_, tensors, workspace, stream);
  }
  // --explain of a plan.
  static std::string explain(const PlanT& plan) { return kernel(plan).explain(plan.problem_, plan.values_); }

  // All a run checks of its plan: made by the planner, for a live device that is the current one
  // (or the same chip: then the plan's checks hold there too). One cudaGetDevice on the fast path.
  static Status check_runnable(const PlanT& plan) {
    if (plan.empty())
      return Status::invalid_argument(std::string("plan: empty; make it with ") + Contract::kPlanFunction);
    if (plan.device_ < 0)
      return Status::unsupported("plan: made for " + plan.device_name_ +
                                 " without a live device (dry planning); it cannot run");
    int current = 0;
    MLAKIT_RETURN_IF_ERROR(cuda_status(cudaGetDevice(&current), "cudaGetDevice"));
    if (current == plan.device_) return Status::ok();
    return check_same_chip(plan.device_, plan.device_name_, current);
  }

 private:
  static Status plan_valid(const PlanTarget& target, const Problem& problem, const std::string* forced,
                           PlanT* out) {
    const auto* kernel = dynamic_cast<const Kernel*>(&target.kernel());
    if (kernel == nullptr)
      return Status::internal("plan target holds " + target.kernel().info().key + ", not a " +
                              Contract::kOp + " kernel");
    const std::string name = forced ? *forced : choose_tiling(*kernel, target.facts(), problem);
    PlanT plan;
    MLAKIT_RETURN_IF_ERROR(kernel->check(problem, name, target.facts(), &plan.values_, &plan.tiling_));
    plan.problem_ = problem;
    plan.kernel_key_ = kernel->info().key;
    plan.workspace_bytes_ = kernel->workspace_bytes(problem, plan.values_);
    plan.device_ = target.device();
    plan.device_name_ = target.facts().name;
    plan.kernel_ = kernel;
    *out = std::move(plan);
    return Status::ok();
  }

  // A tuned tiling when the cache has one for the device, kernel and bucket and it is valid for
  // this exact problem; else the kernel's default. Any cache problem falls back silently.
  static std::string choose_tiling(const Kernel& kernel, const DeviceFacts& facts, const Problem& problem) {
    std::string name;
    if (tuned_tiling(facts.name, kernel.info().key, Contract::bucket(problem), &name).is_ok() &&
        kernel.check(problem, name, facts).is_ok())
      return name;
    return kernel.default_tiling(problem, facts);
  }
};

}  // namespace mlakit
