// How the workbench sees an op: one type-erased interface, so the CLI, the tuner, bench records
// and the GPU tests are written once for every op.
//   OpBench      an op's entry in the op table (ops.cpp): its suites, its single-shape options,
//                its trace reader;
//   BenchSuite   a list of one op's workloads: what the generic layers read of each (name, shape,
//                tune bucket, cost) and planning (tilings cross as their name strings);
//   BenchSession one workload's inputs on the device and its CPU reference: verify and time a plan;
//   BenchPlan    a plan of some op, made only by BenchSuite::plan (through the op's planner).
// op_bench_impl.h implements all of them once, as templates over an op's traits; an op writes only
// its own pieces (workbench/<op>/bench.h). docs/adding-an-op.md has the checklist.
#pragma once

#include <any>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "mlakit/status.h"
#include "plan/cost.h"
#include "plan/kernel_entry.h"
#include "runtime/planner.h"
#include "workbench/host_budget.h"
#include "workbench/timer.h"
#include "workbench/verify.h"

namespace mlakit {

// What the generic layers know of one workload.
struct WorkloadInfo {
  std::string name;    // "contest-07"
  std::string shape;   // the problem's to_string()
  std::string bucket;  // its tune-cache shape bucket
  int num_tokens = 0;  // query tokens: the tables' "T" column
  std::string dtype;   // what a kernel must run (KernelInfo::runs): filled by OpSuite from the
  int heads = 0;       // op's contract
  Cost cost;           // roofline counts of one call
  HostFootprint host;  // host memory and time its inputs and CPU reference take (workbench/host_budget.h)
};

template <class Op>
class OpSuite;

class BenchPlan {
 public:
  BenchPlan() = default;  // empty: verify and time refuse it
  bool empty() const { return !plan_.has_value(); }
  const std::string& kernel_key() const { return kernel_key_; }
  const std::string& tiling() const { return tiling_; }  // the tiling's stable name
  size_t workspace_bytes() const { return workspace_bytes_; }
  const std::string& explain() const { return explain_; }  // the kernel's resource plan
  // The op's own plan; null when this plan is another op's (or empty).
  template <class Plan>
  const Plan* as() const {
    return std::any_cast<Plan>(&plan_);
  }

 private:
  template <class Op>
  friend class OpSuite;
  std::any plan_;
  std::string kernel_key_, tiling_, explain_;
  size_t workspace_bytes_ = 0;
};

class BenchSession {
 public:
  virtual ~BenchSession() = default;
  // Whether a CUDA device is visible (verify and time need one; reference does not).
  virtual bool has_device() const = 0;
  // Makes workload `index` of the suite current: synthesizes its inputs (seeded) and uploads them
  // when a device is visible.
  virtual Status prepare(size_t index) = 0;
  // Poisons, runs, compares with the reference, runs again (workbench/verify.h).
  virtual Status verify(const BenchPlan& plan, VerifyResult* result) = 0;
  // The timing core (workbench/timer.h) on one call of the plan.
  virtual Status time(const BenchPlan& plan, const TimingConfig& config, TimingResult* result) = 0;
  // One call of the plan, then a synchronize: its launch and its execution errors, nothing timed
  // or compared (`mlakit run --no-time` without --check, the form a sanitizer runs).
  virtual Status run_once(const BenchPlan& plan) = 0;
  // The op's checked mode on the current workload's device inputs (`mlakit run --check`): what
  // its public check does (mla_check_inputs); ok for an op without one. Synchronizes.
  virtual Status check_inputs() = 0;
  // Runs the CPU reference of the current workload (once per prepare); `columns` gets the op's
  // summary of it, formatted under BenchSuite::reference_header().
  virtual Status reference(std::string* columns) = 0;
};

class BenchSuite {
 public:
  virtual ~BenchSuite() = default;
  virtual const std::string& op() const = 0;     // "dsa_decode"
  virtual const std::string& title() const = 0;  // "suite dsa-contest": tables and records
  virtual size_t size() const = 0;
  virtual const WorkloadInfo& info(size_t index) const = 0;
  // The registry's default kernel for the workload's dtype and heads; null when none runs it.
  virtual const KernelEntry* default_kernel(size_t index) const = 0;
  // `kernel`'s search space for the workload, as tiling names (empty for another op's kernel).
  virtual std::vector<std::string> search_space(size_t index, const KernelEntry& kernel) const = 0;
  virtual std::string default_tiling(size_t index, const PlanTarget& target) const = 0;
  // Plans the workload for `target` (runtime/planner.h): the tiling named `tiling`, or when null
  // the tuned or default one. kInvalidArgument for a name the op cannot parse; else the planner's.
  virtual Status plan(size_t index, const PlanTarget& target, const std::string* tiling,
                      BenchPlan* out) const = 0;
  // A session over this suite's workloads (the suite must outlive it).
  virtual std::unique_ptr<BenchSession> open_session(uint64_t seed) const = 0;
  // Titles of the op's reference summary columns.
  virtual std::string reference_header() const = 0;
};

// One option of the single-shape command (`mlakit run OP --t 8`): an integer, a flag (`--causal`:
// no value, 1 when given), or a named choice (`--kv fp8`: the index of the value in `choices`, whose
// first is the default). A name is the same kind, with the same choices, for every op that has it.
//
// An option that flavours suites is also an option of verify, bench and tune, whose value reaches
// the op's suite with the suite's name (SuiteRequest): `--kv fp8 --suite dsa-contest` is every
// dsa-contest workload on the FP8 cache, `--heads 64` every one with 64 query heads, so a format
// or a head count is picked the same way for one shape and for a suite.
struct ShapeOption {
  std::string name;  // "t" for --t
  long long lo = 0, hi = 0;
  bool required = false;
  std::string help;  // "number of tokens"
  bool flag = false;
  std::vector<std::string> choices = {};  // a named choice: its values, the default first
  bool flavours_suites = false;           // also an option of verify, bench and tune (SuiteRequest)
  // An integer option that flavours suites: the values the suites come in, the default first
  // ({16, 32, 64, 128} for --heads). A named choice's are its choices.
  std::vector<long long> suite_values = {};
};
using ShapeArgs = std::map<std::string, long long>;  // the options given, by name (a flag: 1)

// A suite as verify, bench and tune ask for it: one of the op's suites and the values of the
// options that flavour it, by name ({"heads": 64} for --heads 64, {"kv": 1} for --kv fp8: a
// choice's index); an option left out takes its default.
struct SuiteRequest {
  std::string name;  // "dsa-serving"
  ShapeArgs flavours;
};

class OpBench {
 public:
  virtual ~OpBench() = default;
  virtual const std::string& name() const = 0;  // "dsa_decode", the KernelInfo::op of its kernels
  virtual std::vector<std::string> suite_names() const = 0;
  // Same (request, seed): the same workloads. An unknown name: kNotFound listing the known ones;
  // a flavour that is not one of the op's options, or out of its range: kInvalidArgument.
  virtual Status make_suite(const SuiteRequest& request, uint64_t seed,
                            std::unique_ptr<BenchSuite>* out) const = 0;
  // A FlashInfer-Trace dataset's workloads; kUnsupported for ops without a trace reader.
  virtual Status load_trace(const std::string& dir, const std::string& definition, uint64_t seed,
                            std::unique_ptr<BenchSuite>* out) const = 0;
  virtual const std::vector<ShapeOption>& shape_options() const = 0;
  // One synthetic workload from the shape options; kInvalidArgument naming the bad option, or the
  // option that sizes a workload past the host-memory limit (checked before any synthesis).
  virtual Status make_shape(const ShapeArgs& args, uint64_t seed,
                            std::unique_ptr<BenchSuite>* out) const = 0;
  // The kernel-name filter `--prof ncu` profiles by default ("dsa_").
  virtual std::string profile_kernels() const = 0;
};

// The op table (ops.cpp, one line per op).
const std::vector<const OpBench*>& op_benches();
const OpBench* find_op_bench(const std::string& name);
// The op that has a suite of this name; null when none has.
const OpBench* op_bench_of_suite(const std::string& suite);
// " dsa_decode ..." for "known:" lists; " dsa-contest dsa-serving ..." of every op (suite_summary).
std::string op_names();
std::string suite_names_of_all_ops();

// The options of `op` that flavour suites (ShapeOption::flavours_suites), in its order.
std::vector<const ShapeOption*> flavour_options(const OpBench& op);
// Ok, or why `request` is no suite of `op`: an unknown name (kNotFound listing the op's suites),
// a flavour the op does not have or a value its suites do not come in (kInvalidArgument naming
// the option).
Status check_suite_request(const OpBench& op, const SuiteRequest& request);
// The values `option` flavours suites with, the default first: a named choice's indices, else
// its suite_values.
std::vector<long long> flavour_values(const ShapeOption& option);
// Every suite of `op` in every combination of its flavours, the plain suites first.
std::vector<SuiteRequest> every_suite_request(const OpBench& op);
// "dsa-serving", "dsa-serving --heads 64 --kv fp8": how titles, records and messages name it.
std::string suite_label(const OpBench& op, const SuiteRequest& request);
// " dsa-contest dsa-serving dsa-edge (--heads 16|32|64|128, --kv bf16|fp8)": the op's suites
// and the options that flavour them, the default first.
std::string suite_summary(const OpBench& op);

}  // namespace mlakit
