// The generic layers with a second op. "scale" (out = factor * in, rows x heads x width floats) is a
// test-only op whose "kernel" runs on the host, so everything that needs no GPU runs here through
// the same code DSA uses: the registry's default selection, the planner (arch gate, forced / tuned /
// default tiling, the kernel's reason), OpSuite (buckets, search spaces, plans), the tuner's
// enumeration, the verify steps (poison, compare, bitwise repeat), bench records and the tune cache.
#include <gtest/gtest.h>

#include "temp_dir.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "base/format.h"
#include "plan/dsa/contract.h"
#include "plan/op_kernel.h"
#include "runtime/planner.h"
#include "runtime/registry.h"
#include "runtime/tune_cache.h"
#include "workbench/op_bench_impl.h"
#include "workbench/report.h"
#include "workbench/tuner.h"
#include "workbench/verify.h"

namespace mlakit {

// ---- the op: problem, tiling, tensors ----------------------------------------------------------

struct ScaleProblem {
  int rows = 1;
  int heads = 4;
  int width = 8;
  Status validate() const {
    if (rows < 1) return Status::invalid_argument("ScaleProblem.rows: expected >= 1, got " + std::to_string(rows));
    if (width < 1) return Status::invalid_argument("ScaleProblem.width: expected >= 1, got " + std::to_string(width));
    return Status::ok();
  }
  std::string to_string() const {
    return "R=" + std::to_string(rows) + " H=" + std::to_string(heads) + " W=" + std::to_string(width);
  }
  int64_t elems() const { return int64_t(rows) * heads * width; }
  bool operator==(const ScaleProblem&) const = default;
};

struct ScaleTiling {
  int block = 4;  // rows per step
  std::string name() const { return "b" + std::to_string(block); }
  static Status parse(const std::string& name, ScaleTiling* out) {
    int block = 0, consumed = 0;
    if (std::sscanf(name.c_str(), "b%d%n", &block, &consumed) != 1 || consumed != int(name.size()) || block < 1)
      return Status::invalid_argument("tiling: expected b<rows>, got '" + name + "'");
    out->block = block;
    return Status::ok();
  }
  bool operator==(const ScaleTiling&) const = default;
};

struct ScaleTensors {
  const float* in = nullptr;
  float* out = nullptr;
  float factor = 1.f;
};

template <>
struct OpContract<ScaleProblem> {
  using Tensors = ScaleTensors;
  static constexpr const char* kOp = "scale";
  static constexpr const char* kPlanFunction = "scale_plan";
  static std::string dtype(const ScaleProblem&) { return "fp32"; }
  static int heads(const ScaleProblem& p) { return p.heads; }
  static std::string bucket(const ScaleProblem& p) {
    return "R" + std::to_string(dsa_bucket_tokens(p.rows)) + ".w" + std::to_string(p.width);
  }
};

namespace {

using ScalePlan = Plan<ScaleProblem>;
using ScalePlanner = Planner<ScaleProblem>;

// How the host "kernel" misbehaves, for the verify tests.
enum class Flaw { kNone, kSkipsLastElement, kDriftsBetweenRuns };

class ScaleKernel final : public VariantKernel<ScaleProblem, ScaleTiling> {
 public:
  ScaleKernel(std::string variant, int rank, std::vector<int> heads, Flaw flaw = Flaw::kNone) : flaw_(flaw) {
    info_ = {"scale." + variant + ".fp32", "scale", variant, "fp32", std::move(heads), rank, "a test op", {9, 0, true}};
  }
  const KernelInfo& info() const override { return info_; }
  std::vector<ScaleTiling> tilings(const ScaleProblem&) const override {
    return {{1}, {2}, {4}, {8}, {16}};
  }
  ScaleTiling default_for(const ScaleProblem& p, const DeviceFacts&) const override {
    return {p.rows >= 4 ? 4 : 1};
  }
  Status validate(const ScaleProblem& p, const ScaleTiling& t, const DeviceFacts&) const override {
    if (t.block > p.rows)
      return Status::unsupported("tiling " + t.name() + ": a block of " + std::to_string(t.block) +
                                 " rows exceeds the " + std::to_string(p.rows) + " rows");
    return Status::ok();
  }
  size_t workspace(const ScaleProblem&, const ScaleTiling&) const override { return 0; }
  std::string describe(const ScaleProblem& p, const ScaleTiling& t) const override {
    return info_.key + " " + t.name() + ": " + std::to_string((p.rows + t.block - 1) / t.block) + " blocks";
  }
  Status run(const ScaleProblem& p, const ScaleTiling&, const ScaleTensors& x, void*,
             cudaStream_t) const override {
    const int64_t n = p.elems() - (flaw_ == Flaw::kSkipsLastElement ? 1 : 0);
    const float drift = flaw_ == Flaw::kDriftsBetweenRuns && (runs_++ % 2) ? 1e-6f : 0.f;
    for (int64_t i = 0; i < n; ++i) x.out[i] = x.factor * x.in[i] + drift;
    return Status::ok();
  }

 private:
  KernelInfo info_;
  Flaw flaw_;
  mutable int runs_ = 0;
};

const ScaleKernel& scale_v1() {
  static const ScaleKernel k("v1_rows", 1, {4});
  return k;
}

// The op's run function: a host op has no device to check, only a plan the planner made.
Status scale_run(const ScalePlan& plan, const ScaleTensors& x, void* workspace, size_t, cudaStream_t stream) {
  if (plan.empty()) return Status::invalid_argument("plan: empty; make it with scale_plan");
  return ScalePlanner::launch(plan, x, workspace, stream);
}

// ---- the op's workbench traits (what op_bench_impl.h asks of an op) -------------------------------

struct ScaleWorkload {
  std::string name;
  ScaleProblem problem;
  float factor = 2.f;
};

struct ScaleBench {
  using Problem = ScaleProblem;
  using Workload = ScaleWorkload;

  // Host "device" buffers: the session of a CPU op never runs (no GPU here) but compiles the same.
  class Inputs {
   public:
    Status prepare(const ScaleWorkload& w, uint64_t seed, bool) {
      w_ = w;
      in_.resize(size_t(w.problem.elems()));
      out_.assign(in_.size(), 0.f);
      for (size_t i = 0; i < in_.size(); ++i) in_[i] = float((i * 7 + seed) % 13) - 6.f;
      return Status::ok();
    }
    ScaleTensors tensors() const { return {in_.data(), const_cast<float*>(out_.data()), w_.factor}; }
    Status outputs(std::vector<CallOutput>* out) {
      *out = {output_of(out_.data(), in_, w_.factor)};
      return Status::ok();
    }
    Status reference(std::string* columns) {
      *columns = std::to_string(in_.size()) + " elements";
      return Status::ok();
    }

   private:
    ScaleWorkload w_;
    std::vector<float> in_, out_;
  };

  static CallOutput output_of(float* data, const std::vector<float>& in, float factor) {
    return {"output", data, in.size() * sizeof(float), [&in, factor](const void* host) {
              std::vector<double> expected(in.size());
              for (size_t i = 0; i < in.size(); ++i) expected[i] = double(factor) * in[i];
              return compare_contest(static_cast<const float*>(host), expected.data(), int64_t(in.size()));
            }};
  }

  static constexpr const char* kProfileKernels = "scale_";
  static std::vector<std::string> suite_names() { return {"scale-tiny"}; }
  static Status make_suite(const std::string& name, const ShapeArgs&, uint64_t, std::vector<ScaleWorkload>* out) {
    if (name != "scale-tiny") return Status::not_found("suite '" + name + "': known: scale-tiny");
    *out = {{"r1", {1, 4, 8}}, {"r3", {3, 4, 8}}, {"r4", {4, 4, 8}}, {"r16", {16, 4, 8}}};
    return Status::ok();
  }
  static Status load_trace(const std::string&, const std::string&, uint64_t, std::vector<ScaleWorkload>*) {
    return Status::unsupported("scale has no trace reader");
  }
  static const std::vector<ShapeOption>& shape_options() {
    static const std::vector<ShapeOption> options = {{"rows", 1, 1 << 20, true, "number of rows"}};
    return options;
  }
  // Input and output floats of `rows` rows.
  static Status shape_footprint(const ShapeArgs& args, HostFootprint* out) {
    ScaleProblem p;
    p.rows = int(args.at("rows"));
    out->bytes = 2.0 * 4.0 * double(p.elems());
    out->detail = "input and output " + format_bytes(out->bytes);
    out->sized_by = "--rows " + std::to_string(p.rows);
    return Status::ok();
  }
  static Status make_shape(const ShapeArgs& args, uint64_t, ScaleWorkload* out) {
    out->name = "shape";
    out->problem.rows = int(args.at("rows"));
    return out->problem.validate();
  }
  static WorkloadInfo describe(const ScaleWorkload& w) {
    WorkloadInfo i{w.name, w.problem.to_string(), OpContract<ScaleProblem>::bucket(w.problem), w.problem.rows, {}};
    i.cost.rows = w.problem.rows;
    i.cost.gathered_bytes = 4.0 * double(w.problem.elems());
    return i;
  }
  static std::string reference_header() { return "elements"; }
  static Status run(const ScalePlan& plan, const ScaleTensors& x, void* ws, size_t bytes, cudaStream_t s) {
    return scale_run(plan, x, ws, bytes, s);
  }
};

// Host memory, as the verifier sees it.
class HostOutputs final : public OutputMemory {
 public:
  Status poison(const CallOutput& o) override {
    std::memset(o.data, 0xFF, o.bytes);
    return Status::ok();
  }
  Status download(const CallOutput& o, void* host) override {
    std::memcpy(host, o.data, o.bytes);
    return Status::ok();
  }
  Status finish(const std::string&) override { return Status::ok(); }
};

DeviceFacts h200() {
  DeviceFacts d;
  EXPECT_TRUE(find_known_device("h200", &d).is_ok());
  return d;
}

PlanTarget target_for(const KernelEntry& k) {
  PlanTarget t;
  EXPECT_TRUE(plan_target(k, h200(), &t).is_ok());
  return t;
}

OpSuite<ScaleBench> tiny_suite() {
  std::vector<ScaleWorkload> w;
  EXPECT_TRUE(ScaleBench::make_suite("scale-tiny", {}, 0, &w).is_ok());
  return OpSuite<ScaleBench>("suite scale-tiny", w);
}

// ---- the tests ---------------------------------------------------------------------------------

TEST(OpNeutral, TheDefaultIsPickedByOpDtypeAndHeadsAcrossOps) {
  const ScaleKernel v2("v2_wide", 2, {4, 8}), also_v2("v2_copy", 2, {4});
  const KernelEntry* dsa = find_kernel("dsa_decode.v1_splitk.bf16");
  ASSERT_NE(dsa, nullptr);
  const std::vector<const KernelEntry*> table = {dsa, &scale_v1(), &v2, &also_v2};
  EXPECT_EQ(select_kernel(table, "scale", "fp32", 4), &v2);  // rank 2 over 1; the first of a tie
  EXPECT_EQ(select_kernel(table, "scale", "fp32", 8), &v2);
  EXPECT_EQ(select_kernel(table, "scale", "fp32", 2), nullptr);
  EXPECT_EQ(select_kernel(table, "scale", "bf16", 4), nullptr);
  EXPECT_EQ(select_kernel(table, "dsa_decode", "bf16", 16), dsa);
}

TEST(OpNeutral, ThePlannerServesAnyOp) {
  const PlanTarget target = target_for(scale_v1());
  ScalePlan plan;
  ASSERT_TRUE(ScalePlanner::plan(target, {16, 4, 8}, nullptr, &plan).is_ok());
  EXPECT_EQ(plan.kernel_key(), "scale.v1_rows.fp32");
  EXPECT_EQ(plan.tiling(), "b4");  // the kernel's default
  EXPECT_EQ(plan.device_name(), "NVIDIA H200");
  const std::string big = "b8";
  Status s = ScalePlanner::plan(target, {3, 4, 8}, &big, &plan);
  EXPECT_EQ(s.code(), Code::kUnsupported);
  EXPECT_NE(s.message().find("a block of 8 rows exceeds the 3 rows"), std::string::npos) << s.message();
  s = ScalePlanner::plan(target, {0, 4, 8}, nullptr, &plan);
  EXPECT_NE(s.message().find("ScaleProblem.rows"), std::string::npos) << s.message();
  // A target of another op's kernel, and another op's kernel key, are refused.
  s = ScalePlanner::plan(target_for(*find_kernel("dsa_decode.v1_splitk.bf16")), {16, 4, 8}, nullptr, &plan);
  EXPECT_EQ(s.code(), Code::kInternal);
  const ScalePlanner::Kernel* k = nullptr;
  s = ScalePlanner::resolve_kernel("dsa_decode.v1_splitk.bf16", {1, 4, 8}, &k);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("is a dsa_decode kernel, not scale"), std::string::npos) << s.message();
  s = ScalePlanner::resolve_kernel("", {1, 4, 8}, &k);  // not in the production registry
  EXPECT_NE(s.message().find("no scale kernel is registered for fp32 with 4 heads"), std::string::npos);
  // The arch gate is the target's, for every op.
  DeviceFacts rtx;
  ASSERT_TRUE(find_known_device("rtx 5090", &rtx).is_ok());
  PlanTarget none;
  EXPECT_NE(plan_target(scale_v1(), rtx, &none).message().find("needs sm_90a"), std::string::npos);
}

TEST(OpNeutral, SuitesGroupEnumerateAndPlanAnyOp) {
  const OpSuite<ScaleBench> suite = tiny_suite();
  EXPECT_EQ(suite.op(), "scale");
  const std::vector<BucketGroup> groups = group_by_bucket(suite);
  ASSERT_EQ(groups.size(), 3u);  // R1, R4 (rows 3 and 4), R16
  EXPECT_EQ(groups[1].bucket, "R4.w8");
  EXPECT_EQ(groups[1].workloads, (std::vector<size_t>{1, 2}));
  const std::vector<TilingChoice> choices = enumerate_tilings(suite, groups[1].workloads, target_for(scale_v1()));
  ASSERT_EQ(choices.size(), 5u);
  EXPECT_TRUE(choices[1].valid());  // b2 runs both
  EXPECT_EQ(choices[1].plans.size(), 2u);
  EXPECT_EQ(choices[1].plans[0].kernel_key(), "scale.v1_rows.fp32");
  EXPECT_EQ(choices[2].skip_reason, "T=3: a block of 4 rows exceeds the 3 rows");
  EXPECT_EQ(choices[4].skip_reason, "T=3: a block of 16 rows exceeds the 3 rows");
  // A plan carries its explanation, and a BenchPlan is the op's plan inside.
  EXPECT_EQ(choices[1].plans[1].explain(), "scale.v1_rows.fp32 b2: 2 blocks");
  EXPECT_NE(choices[1].plans[1].as<ScalePlan>(), nullptr);
  EXPECT_EQ(choices[1].plans[1].as<DsaPlan>(), nullptr);
  BenchPlan plan;
  const std::string garbage = "s16n64x2m4";
  EXPECT_EQ(suite.plan(0, target_for(scale_v1()), &garbage, &plan).code(), Code::kInvalidArgument);
}

TEST(OpNeutral, VerifyPoisonsComparesAndRepeatsForAnyOp) {
  const PlanTarget target = target_for(scale_v1());
  ScalePlan plan;
  ASSERT_TRUE(ScalePlanner::plan(target, {3, 4, 8}, nullptr, &plan).is_ok());
  std::vector<float> in(size_t(plan.problem().elems())), out(in.size());
  for (size_t i = 0; i < in.size(); ++i) in[i] = float(i % 5) - 2.f;
  const std::vector<CallOutput> outputs = {ScaleBench::output_of(out.data(), in, 3.f)};
  const auto verify_with = [&](const ScaleKernel& kernel, VerifyResult* r) {
    const GpuCall call = [&](cudaStream_t s) {
      return kernel.run(plan.problem(), ScaleTiling{}, {in.data(), out.data(), 3.f}, nullptr, s);
    };
    HostOutputs memory;
    return verify_call(call, nullptr, outputs, memory, kernel.info().key, r);
  };
  VerifyResult r;
  ASSERT_TRUE(verify_with(scale_v1(), &r).is_ok());
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.verdict(), "ok");
  ASSERT_NE(r.find("output"), nullptr);
  EXPECT_EQ(r.find("lse"), nullptr);
  // An element the kernel never writes keeps the NaN poison and fails.
  ASSERT_TRUE(verify_with(ScaleKernel("v0_skips", 0, {4}, Flaw::kSkipsLastElement), &r).is_ok());
  EXPECT_EQ(r.verdict(), "FAIL");
  EXPECT_EQ(r.outputs[0].report.num_failed, 1);
  EXPECT_NE(r.problems().at(0).find("output: FAILED 1 of 96"), std::string::npos) << r.problems().at(0);
  // Within tolerance both times, but not bitwise the same twice.
  ASSERT_TRUE(verify_with(ScaleKernel("v0_drifts", 0, {4}, Flaw::kDriftsBetweenRuns), &r).is_ok());
  EXPECT_TRUE(r.outputs[0].report.ok());
  EXPECT_FALSE(r.deterministic);
  EXPECT_EQ(r.verdict(), "NONDETERMINISTIC");
}

TEST(OpNeutral, SessionsOfAnyOpRefuseWithoutAPlanOrADevice) {
  // Verify and time take a BenchPlan, and only a suite (through the op's planner) fills one.
  static_assert(!std::is_aggregate_v<BenchPlan> && !std::is_aggregate_v<ScalePlan>);
  const OpSuite<ScaleBench> suite = tiny_suite();
  const std::unique_ptr<BenchSession> session = suite.open_session(7);
  ASSERT_TRUE(session->prepare(1).is_ok());
  std::string columns;
  ASSERT_TRUE(session->reference(&columns).is_ok());
  EXPECT_EQ(columns, "96 elements");
  VerifyResult r;
  Status s = session->verify(BenchPlan{}, &r);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("plan: empty"), std::string::npos) << s.message();
  EXPECT_EQ(session->prepare(9).code(), Code::kInvalidArgument);
}

TEST(OpNeutral, BenchRecordsOfAnyOp) {
  const OpSuite<ScaleBench> suite = tiny_suite();
  TimingResult t;
  t.median_us = 2;
  VerifyResult v;
  v.outputs = {{"output", {}}};
  const BenchRun run{suite.title(), suite.op(), "scale.v1_rows.fp32", "b4"};
  const BenchRecord r = make_bench_record(run, suite.info(3), h200(), t, 50, &v, 0);
  EXPECT_EQ(r.op, "scale");
  EXPECT_EQ(r.shape, "R=16 H=4 W=8");
  EXPECT_EQ(r.num_tokens, 16);
  EXPECT_DOUBLE_EQ(r.gbps, 4.0 * 16 * 4 * 8 / 2e3);
  EXPECT_TRUE(to_json(r)["max_abs_err_lse"].is_null());  // the op has no lse
  const std::string row = to_csv_row(r);
  EXPECT_EQ(row.substr(row.size() - 8), ",scale,,") << row;  // then floor and floor_us: none timed
  EXPECT_TRUE(to_json(r)["floor_us"].is_null());
}

class OpNeutralTuneCache : public ::testing::Test {
 protected:
  void TearDown() override { set_tune_cache_path(""); }
  test::TempDir dir_;
};

TEST_F(OpNeutralTuneCache, HoldsEveryOpAndThePlannerReadsIt) {
  const std::string path = dir_.file("tune.json");
  TuneCache c;
  c.put({"NVIDIA H200", "scale.v1_rows.fp32", "R16.w8", "b8", 1, 2, "scale-tiny", 1, 1, "abc", "now"});
  c.put({"NVIDIA H200", "dsa_decode.v1_splitk.bf16", "T8.h16.ckv512.kpe64.ps64.k2048", "s8n64x1m8", 1, 2,
         "dsa-contest", 1, 4, "abc", "now"});
  ASSERT_TRUE(c.save(path).is_ok());
  set_tune_cache_path(path);
  ScalePlan plan;
  ASSERT_TRUE(ScalePlanner::plan(target_for(scale_v1()), {16, 4, 8}, nullptr, &plan).is_ok());
  EXPECT_EQ(plan.tiling(), "b8");  // tuned
  ASSERT_TRUE(ScalePlanner::plan(target_for(scale_v1()), {4, 4, 8}, nullptr, &plan).is_ok());
  EXPECT_EQ(plan.tiling(), "b4");  // no entry for R4: the default
  std::string dsa;
  EXPECT_TRUE(tuned_tiling("NVIDIA H200", "dsa_decode.v1_splitk.bf16", "T8.h16.ckv512.kpe64.ps64.k2048", &dsa).is_ok());
  EXPECT_EQ(dsa, "s8n64x1m8");
}

TEST(OpNeutral, TheOpTableServesTheCli) {
  const OpBenchT<ScaleBench> op;
  EXPECT_EQ(op.name(), "scale");
  std::unique_ptr<BenchSuite> suite;
  ASSERT_TRUE(op.make_shape({{"rows", 5}}, 1, &suite).is_ok());
  EXPECT_EQ(suite->title(), "shape R=5 H=4 W=8");
  EXPECT_EQ(op.load_trace("x", "", 1, &suite).code(), Code::kUnsupported);
  EXPECT_EQ(op.make_suite({"nope", {}}, 1, &suite).code(), Code::kNotFound);
  EXPECT_EQ(op.make_suite({"scale-tiny", {{"heads", 64}}}, 1, &suite).code(), Code::kInvalidArgument);
  // A shape past the host-memory limit is refused before anything is made, naming its option.
  setenv("MLAKIT_HOST_MEMORY_LIMIT", "1K", 1);
  const Status big = op.make_shape({{"rows", 1 << 20}}, 1, &suite);
  unsetenv("MLAKIT_HOST_MEMORY_LIMIT");
  EXPECT_EQ(big.code(), Code::kInvalidArgument);
  EXPECT_EQ(big.message(), "--rows 1048576: the run needs about 256.0 MB of host memory (input and output "
                           "256.0 MB), more than the limit of 1.0 KB (MLAKIT_HOST_MEMORY_LIMIT=1K)");
  // The production table: DSA, found by name and by its suites.
  ASSERT_NE(find_op_bench("dsa_decode"), nullptr);
  EXPECT_EQ(op_bench_of_suite("dsa-serving"), find_op_bench("dsa_decode"));
  EXPECT_EQ(op_bench_of_suite("scale-tiny"), nullptr);
}

}  // namespace
}  // namespace mlakit
