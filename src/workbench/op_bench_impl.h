// The workbench's op interfaces (op_bench.h) implemented once, as templates over an op's traits.
// An op writes a traits struct (DSA: workbench/dsa/bench.h) with:
//   using Problem;                 // with validate(), to_string(), == and an OpContract
//   using Workload;                // with .name and .problem
//   class Inputs;                  // one workload's host and device data:
//     Status prepare(const Workload&, uint64_t seed, bool upload);
//     Tensors tensors() const;                          // device pointers of the prepared inputs
//     Status outputs(std::vector<CallOutput>*);         // device outputs + comparators
//     Status reference(std::string* columns);           // CPU reference summary, once per prepare
//     Status check(cudaStream_t);                       // optional: the op's checked mode
//   static constexpr const char* kProfileKernels;       // --prof ncu's default kernel filter
//   static std::vector<std::string> suite_names();
//   static Status make_suite(const std::string& name, const ShapeArgs& flavours, uint64_t seed,
//                            std::vector<Workload>*);   // flavours: checked against shape_options()
//   static Status load_trace(const std::string& dir, const std::string& definition, uint64_t seed,
//                            std::vector<Workload>*);   // kUnsupported without a trace reader
//   static const std::vector<ShapeOption>& shape_options();
//   static Status shape_footprint(const ShapeArgs&, HostFootprint*);  // before make_shape synthesizes
//   static Status make_shape(const ShapeArgs&, uint64_t seed, Workload*);
//   static WorkloadInfo describe(const Workload&);     // its .host too (workbench/host_budget.h)
//   static std::string reference_header();
//   static Status run(const Plan&, const Tensors&, void* workspace, size_t bytes, cudaStream_t);
// and ops.cpp lists OpBenchT<Traits>.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include "base/cuda_status.h"
#include "kernels/common/workspace.h"
#include "mlakit/device.h"
#include "runtime/planner.h"
#include "workbench/device_buffer.h"
#include "workbench/op_bench.h"

namespace mlakit {

template <class Op>
class OpSuite final : public BenchSuite {
 public:
  using Problem = typename Op::Problem;
  using Workload = typename Op::Workload;
  using PlannerT = Planner<Problem>;
  using Kernel = typename PlannerT::Kernel;
  using PlanT = typename PlannerT::PlanT;
  using Contract = OpContract<Problem>;

  OpSuite(std::string title, std::vector<Workload> workloads)
      : op_(Contract::kOp), title_(std::move(title)), workloads_(std::move(workloads)) {
    for (const Workload& w : workloads_) {
      infos_.push_back(Op::describe(w));
      infos_.back().dtype = Contract::dtype(w.problem);
      infos_.back().heads = Contract::heads(w.problem);
    }
  }

  const std::vector<Workload>& workloads() const { return workloads_; }
  const std::string& op() const override { return op_; }
  const std::string& title() const override { return title_; }
  size_t size() const override { return workloads_.size(); }
  const WorkloadInfo& info(size_t i) const override { return infos_.at(i); }

  const KernelEntry* default_kernel(size_t i) const override {
    const Problem& p = workloads_.at(i).problem;
    return mlakit::default_kernel(Contract::kOp, Contract::dtype(p), Contract::heads(p));
  }

  std::vector<std::string> search_space(size_t i, const KernelEntry& kernel) const override {
    std::vector<std::string> names;
    if (const auto* k = dynamic_cast<const Kernel*>(&kernel))
      names = k->search_space(workloads_.at(i).problem);
    return names;
  }

  std::string default_tiling(size_t i, const PlanTarget& target) const override {
    const auto* k = dynamic_cast<const Kernel*>(&target.kernel());
    return k ? k->default_tiling(workloads_.at(i).problem, target.facts()) : std::string();
  }

  Status plan(size_t i, const PlanTarget& target, const std::string* tiling,
              BenchPlan* out) const override {
    if (i >= workloads_.size())
      return Status::invalid_argument("workload: index " + std::to_string(i) + " of " +
                                      std::to_string(workloads_.size()));
    PlanT plan;
    MLAKIT_RETURN_IF_ERROR(PlannerT::plan(target, workloads_[i].problem, tiling, &plan));
    BenchPlan b;
    b.kernel_key_ = plan.kernel_key();
    b.tiling_ = plan.tiling();
    b.workspace_bytes_ = plan.workspace_bytes();
    b.explain_ = PlannerT::explain(plan);
    b.plan_ = std::move(plan);
    *out = std::move(b);
    return Status::ok();
  }

  std::unique_ptr<BenchSession> open_session(uint64_t seed) const override;
  std::string reference_header() const override { return Op::reference_header(); }

 private:
  std::string op_;
  std::string title_;
  std::vector<Workload> workloads_;
  std::vector<WorkloadInfo> infos_;
};

template <class Op>
class OpSession final : public BenchSession {
 public:
  using PlanT = typename OpSuite<Op>::PlanT;
  using Workload = typename Op::Workload;

  OpSession(const OpSuite<Op>& suite, uint64_t seed)
      : suite_(suite), seed_(seed), has_device_(device_count() > 0) {}
  ~OpSession() override {
    if (stream_) cudaStreamDestroy(stream_);
  }
  OpSession(const OpSession&) = delete;
  OpSession& operator=(const OpSession&) = delete;

  bool has_device() const override { return has_device_; }

  Status prepare(size_t index) override {
    current_ = nullptr;
    if (index >= suite_.size())
      return Status::invalid_argument("workload: index " + std::to_string(index) + " of " +
                                      std::to_string(suite_.size()));
    if (has_device_ && stream_ == nullptr)
      MLAKIT_RETURN_IF_ERROR(cuda_status(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
                                         "cudaStreamCreate"));
    const Workload& w = suite_.workloads()[index];
    MLAKIT_RETURN_IF_ERROR(inputs_.prepare(w, seed_, has_device_));
    current_ = &w;
    return Status::ok();
  }

  Status verify(const BenchPlan& plan, VerifyResult* result) override {
    const PlanT* p = nullptr;
    MLAKIT_RETURN_IF_ERROR(ready(plan, "verify", &p));
    std::vector<CallOutput> outputs;
    MLAKIT_RETURN_IF_ERROR(inputs_.outputs(&outputs));
    DeviceOutputs memory(stream_, {workspace_.data(), workspace_.bytes(), workspace::kCounterBytes});
    result->workload = current_->name;
    return verify_call(call(*p), stream_, outputs, memory, p->kernel_key(), result);
  }

  Status time(const BenchPlan& plan, const TimingConfig& config, TimingResult* result) override {
    const PlanT* p = nullptr;
    MLAKIT_RETURN_IF_ERROR(ready(plan, "timing", &p));
    return time_gpu_call(call(*p), stream_, config, result);
  }

  Status run_once(const BenchPlan& plan) override {
    const PlanT* p = nullptr;
    MLAKIT_RETURN_IF_ERROR(ready(plan, "run", &p));
    MLAKIT_RETURN_IF_ERROR(call(*p)(stream_));
    return cuda_status(cudaStreamSynchronize(stream_), "run");
  }

  Status check_inputs() override {
    if (!has_device_) return Status::unsupported("the input check needs a CUDA device; none is visible");
    if (current_ == nullptr) return Status::invalid_argument("check: no workload prepared");
    if constexpr (requires(typename Op::Inputs& in, cudaStream_t s) { in.check(s); })
      return inputs_.check(stream_);
    else
      return Status::ok();
  }

  Status reference(std::string* columns) override {
    if (current_ == nullptr) return Status::invalid_argument("reference: no workload prepared");
    return inputs_.reference(columns);
  }

 private:
  // A plan of this op for the current workload, a device, and the plan's workspace.
  Status ready(const BenchPlan& plan, const std::string& what, const PlanT** out) {
    *out = plan.as<PlanT>();
    if (*out == nullptr)
      return Status::invalid_argument(plan.empty() ? "plan: empty; plans come from BenchSuite::plan"
                                                   : "plan: " + plan.kernel_key() + " is not a " +
                                                         suite_.op() + " plan");
    if (!has_device_) return Status::unsupported(what + " needs a CUDA device; none is visible");
    if (current_ == nullptr) return Status::invalid_argument(what + ": no workload prepared");
    if (!((*out)->problem() == current_->problem))
      return Status::invalid_argument("plan: made for " + (*out)->problem().to_string() +
                                      ", the current workload " + current_->name + " is " +
                                      current_->problem.to_string());
    return workspace_.reserve((*out)->workspace_bytes(), "workspace", workspace::kCounterBytes);
  }

  GpuCall call(const PlanT& plan) const {
    return [plan, tensors = inputs_.tensors(), ws = workspace_.data(),
            bytes = workspace_.bytes()](cudaStream_t stream) {
      return Op::run(plan, tensors, ws, bytes, stream);
    };
  }

  const OpSuite<Op>& suite_;
  uint64_t seed_;
  bool has_device_;
  cudaStream_t stream_ = nullptr;
  typename Op::Inputs inputs_;
  DeviceBuffer workspace_;
  const Workload* current_ = nullptr;
};

template <class Op>
std::unique_ptr<BenchSession> OpSuite<Op>::open_session(uint64_t seed) const {
  return std::make_unique<OpSession<Op>>(*this, seed);
}

template <class Op>
class OpBenchT final : public OpBench {
 public:
  using Workload = typename Op::Workload;

  OpBenchT() : name_(OpContract<typename Op::Problem>::kOp) {}
  const std::string& name() const override { return name_; }
  std::vector<std::string> suite_names() const override { return Op::suite_names(); }

  Status make_suite(const SuiteRequest& request, uint64_t seed,
                    std::unique_ptr<BenchSuite>* out) const override {
    MLAKIT_RETURN_IF_ERROR(check_suite_request(*this, request));
    std::vector<Workload> w;
    MLAKIT_RETURN_IF_ERROR(Op::make_suite(request.name, request.flavours, seed, &w));
    *out = std::make_unique<OpSuite<Op>>("suite " + suite_label(*this, request), std::move(w));
    return Status::ok();
  }

  Status load_trace(const std::string& dir, const std::string& definition, uint64_t seed,
                    std::unique_ptr<BenchSuite>* out) const override {
    std::vector<Workload> w;
    MLAKIT_RETURN_IF_ERROR(Op::load_trace(dir, definition, seed, &w));
    *out = std::make_unique<OpSuite<Op>>("trace " + dir, std::move(w));
    return Status::ok();
  }

  const std::vector<ShapeOption>& shape_options() const override { return Op::shape_options(); }

  Status make_shape(const ShapeArgs& args, uint64_t seed,
                    std::unique_ptr<BenchSuite>* out) const override {
    HostFootprint footprint;
    MLAKIT_RETURN_IF_ERROR(Op::shape_footprint(args, &footprint));
    MLAKIT_RETURN_IF_ERROR(check_host_footprint(footprint, footprint.sized_by));
    Workload w;
    MLAKIT_RETURN_IF_ERROR(Op::make_shape(args, seed, &w));
    std::string title = "shape " + w.problem.to_string();
    *out = std::make_unique<OpSuite<Op>>(std::move(title), std::vector<Workload>{std::move(w)});
    return Status::ok();
  }

  std::string profile_kernels() const override { return Op::kProfileKernels; }

 private:
  std::string name_;
};

}  // namespace mlakit
