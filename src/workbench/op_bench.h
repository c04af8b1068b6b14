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
// A choice that flavours suites is also an option of verify, bench and tune: a value past the
// first reads the suite "<suite>-<value>" instead of <suite> (`--kv fp8 --suite dsa-contest` reads
// dsa-contest-fp8), so an op's suites of one format and its flavours' stay one list of names and
// a format is picked the same way for one shape and for a suite. An integer can flavour suites
// too (`--heads 64 --suite dsa-serving` reads dsa-serving-h64); the flavours of several options
// follow each other in the order the op declares them (dsa-serving-h64-fp8).
struct ShapeOption {
  std::string name;  // "t" for --t
  long long lo = 0, hi = 0;
  bool required = false;
  std::string help;  // "number of tokens"
  bool flag = false;
  std::vector<std::string> choices = {};  // a named choice: its values, the default first
  bool flavours_suites = false;      // picks "<suite>-<prefix><value>" on verify, bench and tune
  // A flavour's part of a suite name is "-" + flavour_prefix + value ("-fp8", "-h64"); an integer
  // option (no choices) that flavours suites names the plain suite with `fallback` (--heads 16).
  std::string flavour_prefix = {};
  long long fallback = 0;
};
using ShapeArgs = std::map<std::string, long long>;  // the options given, by name (a flag: 1)

class OpBench {
 public:
  virtual ~OpBench() = default;
  virtual const std::string& name() const = 0;  // "dsa_decode", the KernelInfo::op of its kernels
  virtual std::vector<std::string> suite_names() const = 0;
  // Same (name, seed): the same workloads. Unknown name: kNotFound listing the known ones.
  virtual Status make_suite(const std::string& name, uint64_t seed,
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

// Suite flavours (ShapeOption::flavours_suites): a suite's name is the plain suite's, then the
// part each flavour option adds, in the order the op declares them ("dsa-serving-h64-fp8").
// The options of `op` that flavour suites, in that order.
std::vector<const ShapeOption*> flavour_options(const OpBench& op);
// The value of an option that adds nothing: its first choice, or an integer's fallback.
std::string plain_flavour(const ShapeOption& option);
// Whether `value` can be an integer flavour option's value: 1 to 9 decimal digits.
bool is_whole_number(const std::string& value);
// The part of a suite name that `value` adds: "" for the plain value, else "-<prefix><value>".
std::string flavour_suffix(const ShapeOption& option, const std::string& value);
// `suite` without its flavour parts; `values` (when not null) gets the value of each part found.
std::string split_flavours(const OpBench& op, const std::string& suite, std::map<std::string, std::string>* values);
// " dsa-contest dsa-serving dsa-edge, each also -h32|-h64|-h128 (--heads), then -fp8 (--kv)": the
// plain suites and the flavours their names can carry.
std::string suite_summary(const OpBench& op);

}  // namespace mlakit
