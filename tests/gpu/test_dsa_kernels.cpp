// Every registered kernel against the fp64 reference on every suite of its op that holds workloads
// it runs (a bf16 kernel on the bf16 suites, an fp8 kernel on them with --kv fp8; its head counts),
// three fresh seeds, outputs poisoned before each run, every output (output and lse) checked, two
// runs bitwise equal. Through the workbench's op interface, as the CLI runs them. Past 16 heads
// (--heads 64, ...): the edge suites on three seeds, the contest suites on one, the serving suites
// not here (their host work would double the test time; `mlakit bench --heads H` verifies them
// before timing).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "mlakit/device.h"
#include "kernels/dsa_decode/v2_fp8/tiling.h"
#include "mlakit/dsa.h"
#include "runtime/planner.h"
#include "runtime/registry.h"
#include "workbench/op_bench.h"

namespace mlakit {
namespace {

// Skips the test unless a device that `kernel` can run on is present.
#define REQUIRE_GPU_FOR(kernel)                                                  \
  do {                                                                           \
    if (device_count() == 0) GTEST_SKIP() << "no CUDA device visible";           \
    DeviceFacts facts_;                                                          \
    ASSERT_TRUE(query_device(0, &facts_).is_ok());                               \
    Status gate_ = check_kernel_arch(kernel, facts_);                            \
    if (!gate_.is_ok()) GTEST_SKIP() << gate_.message();                         \
  } while (0)

uint64_t fresh_seed() { return std::random_device{}() | (uint64_t(std::random_device{}()) << 32); }

struct Case {
  std::string kernel;
  SuiteRequest suite;
  std::string label;  // "dsa-edge --heads 64 --kv fp8"
  int rounds = 3;     // fresh seeds
};
// A readable parameter in test names (ctest lists "GetParam() = <this>").
void PrintTo(const Case& c, std::ostream* os) { *os << c.label; }

// (The name predates other ops; kept so test IDs compare across versions.)
class DsaSuiteTest : public ::testing::TestWithParam<Case> {};

// Verifies one suite with the tiling planning picks (or `forced`), on `rounds` fresh seeds.
void verify_suite(const KernelEntry& kernel, const SuiteRequest& request, const std::string* forced,
                  int* checked, int rounds = 3, int* ran = nullptr) {
  int ran_here = 0;
  if (ran == nullptr) ran = &ran_here;
  const OpBench* op = find_op_bench(kernel.info().op);
  ASSERT_NE(op, nullptr) << kernel.info().op;
  const std::string suite_name = suite_label(*op, request);
  PlanTarget target;
  ASSERT_TRUE(plan_target(kernel, -1, &target).is_ok());
  for (int round = 0; round < rounds; ++round) {
    const uint64_t seed = fresh_seed();
    std::unique_ptr<BenchSuite> suite;
    ASSERT_TRUE(op->make_suite(request, seed, &suite).is_ok()) << suite_name;
    const std::unique_ptr<BenchSession> session = suite->open_session(seed);
    for (size_t i = 0; i < suite->size(); ++i) {
      SCOPED_TRACE(suite_name + "/" + suite->info(i).name + " seed " + std::to_string(seed));
      // A suite may hold head counts (mla-edge: 16..128) that this kernel does not register.
      if (!kernel.info().runs(suite->info(i).dtype, suite->info(i).heads)) continue;
      ++*ran;
      ASSERT_TRUE(session->prepare(i).is_ok());
      BenchPlan plan;
      Status s = suite->plan(i, target, forced, &plan);
      if (forced) {
        if (!s.is_ok()) continue;  // e.g. too many splits for this topk
        ++*checked;
      } else {
        ASSERT_TRUE(s.is_ok()) << s.to_string();
      }
      VerifyResult r;
      s = session->verify(plan, &r);
      ASSERT_TRUE(s.is_ok()) << s.to_string();
      ASSERT_EQ(r.outputs.size(), 2u);  // output and lse
      for (const OutputCheck& o : r.outputs)
        EXPECT_TRUE(o.report.ok()) << plan.tiling() << " " << o.name << ": " << o.report.summary();
      EXPECT_TRUE(r.deterministic) << plan.tiling() << ": two runs differ bitwise";
    }
  }
}

TEST_P(DsaSuiteTest, MatchesReferenceOnThreeSeeds) {
  const KernelEntry* kernel = find_kernel(GetParam().kernel);
  ASSERT_NE(kernel, nullptr);
  REQUIRE_GPU_FOR(*kernel);
  int checked = 0, ran = 0;
  verify_suite(*kernel, GetParam().suite, nullptr, &checked, GetParam().rounds, &ran);
  EXPECT_GT(ran, 0) << GetParam().label << " has no workload " << kernel->info().key << " runs";
}

// Whether some workload of the suite has a cache dtype and head count that `kernel` runs.
bool runs_some_workload(const KernelEntry& kernel, const OpBench& op, const SuiteRequest& request) {
  std::unique_ptr<BenchSuite> suite;
  if (!op.make_suite(request, 1, &suite).is_ok()) return true;  // the test then says why
  for (size_t i = 0; i < suite->size(); ++i)
    if (kernel.info().runs(suite->info(i).dtype, suite->info(i).heads)) return true;
  return false;
}

// Whether a request holds another head count than the suite's own (--heads 64): the plain rows again.
bool more_heads(const SuiteRequest& r) {
  const auto h = r.flavours.find("heads");
  return h != r.flavours.end() && h->second != 16;
}

// The test list. Knowing whether a kernel runs some workload of a suite means building the suite
// (its inputs: ~2 s per test process, every ctest entry being one); without a device every case
// skips before using them, so that filter runs only where a device is visible, and a machine
// without one lists (and skips) the pairs it would have dropped.
std::vector<Case> all_cases() {
  const bool filter = device_count() > 0;
  std::vector<Case> cases;
  for (const KernelEntry* k : kernels())
    if (const OpBench* op = find_op_bench(k->info().op); op && !k->info().floor)  // a floor computes nothing
      for (const SuiteRequest& r : every_suite_request(*op)) {
        if (filter && !runs_some_workload(*k, *op, r)) continue;
        const std::string label = suite_label(*op, r);
        if (!more_heads(r)) cases.push_back({k->info().key, r, label});
        else if (r.name.find("-edge") != std::string::npos) cases.push_back({k->info().key, r, label, 3});
        else if (r.name.find("-contest") != std::string::npos) cases.push_back({k->info().key, r, label, 1});
      }
  return cases;
}

// A parameterized test's name from free text: every character gtest does not take becomes '_'.
std::string param_name(std::string n) {
  for (char& c : n)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(AllKernels, DsaSuiteTest, ::testing::ValuesIn(all_cases()),
                         [](const auto& info) { return param_name(info.param.kernel + "_" + info.param.label); });

// The v1 tilings that change the code path: fused epilogue (1 split), single stage, many splits.
TEST(DsaV1Tilings, EveryInstantiatedPathMatchesReference) {
  const KernelEntry* kernel = find_kernel("dsa_decode.v1_splitk.bf16");
  ASSERT_NE(kernel, nullptr);
  REQUIRE_GPU_FOR(*kernel);
  for (const std::string name : {"s1n64x2m4", "s1n64x1m4", "s4n64x1m8", "s32n64x2m16", "s3n64x2m4"}) {
    SCOPED_TRACE(name);
    int checked = 0;
    verify_suite(*kernel, {"dsa-edge", {}}, &name, &checked);
    EXPECT_GT(checked, 0) << "no dsa-edge workload accepts tiling " << name;
  }
}

// Every compiled v2_fused ring instance (gather x ring pipe) on the contest suite: two CTAs per row
// where a row is long enough (the in-kernel merge), one otherwise; one fresh seed each.
TEST(DsaV2Tilings, EveryInstanceMatchesReference) {
  const KernelEntry* kernel = find_kernel("dsa_decode.v2_fused.bf16");
  ASSERT_NE(kernel, nullptr);
  REQUIRE_GPU_FOR(*kernel);
  for (const char* pipe : {"x3m1", "x4m1", "x5m1", "x4m1p2", "x4m1p4"})
    for (const char* gather : {"", "g1"})
      for (const char* splits : {"s2n32", "s16n64"}) {
        const std::string name = std::string(splits) + pipe + gather;
        SCOPED_TRACE(name);
        int checked = 0;
        verify_suite(*kernel, {"dsa-contest", {}}, &name, &checked, 1);
        EXPECT_GT(checked, 0) << "no dsa-contest workload accepts tiling " << name;
      }
}

// Pooled rows (b1, T <= 8): every CTA plans all rows and long rows take the CTAs short rows leave,
// at 16 heads (the contest and edge suites: one long row among short ones, empty rows, padding
// anywhere, small top-k, page size 1; the T > 8 workloads refuse the tiling and are skipped) and
// with 32 heads per CTA at 128 heads (four head groups, the contest suite), with many CTAs per
// token, one, and the split counts in between. One fresh seed each.
TEST(DsaV2Tilings, PooledRowsMatchReference) {
  const KernelEntry* kernel = find_kernel("dsa_decode.v2_fused.bf16");
  ASSERT_NE(kernel, nullptr);
  REQUIRE_GPU_FOR(*kernel);
  for (const SuiteRequest& suite : {SuiteRequest{"dsa-contest", {}}, SuiteRequest{"dsa-edge", {}},
                                     SuiteRequest{"dsa-contest", {{"heads", 128}}}})
    for (const char* splits : {"s1", "s4", "s16"}) {
      const bool wide = more_heads(suite);
      const std::string name = std::string(splits) + "n64x4m1p2" + (wide ? "h32" : "") + "b1";
      const std::string label = suite.name + (wide ? " --heads 128" : "");
      SCOPED_TRACE(label + " " + name);
      int checked = 0;
      verify_suite(*kernel, suite, &name, &checked, 1);
      EXPECT_GT(checked, 0) << "no " << label << " workload accepts tiling " << name;
    }
}

// Every compiled v2_fp8 ring pipe on the FP8 contest suite, split in two where a row is long
// enough (the in-kernel merge) and with 16 splits (one-stage tiles); one fresh seed each.
TEST(DsaFp8Tilings, EveryInstanceMatchesReference) {
  const KernelEntry* kernel = find_kernel("dsa_decode.v2_fp8.fp8");
  ASSERT_NE(kernel, nullptr);
  REQUIRE_GPU_FOR(*kernel);
  // Split rows merge through global memory (s2, s16) and inside a cluster (c1: 2 and 8 CTAs).
  for (const char* tiling : {"s2n32x4m1p4g1", "s16n32x4m1p4g1", "s2n32x8m1p4g1", "s16n32x8m1p4g1", "s2n32x4m1p4g1c1",
                             "s8n32x8m1p4g1c1"}) {
    const std::string name = tiling;
    SCOPED_TRACE(name);
    int checked = 0;
    verify_suite(*kernel, {"dsa-contest", {{"kv", int(DsaKv::kFp8)}}}, &name, &checked, 1);
    EXPECT_GT(checked, 0) << "no dsa-contest --kv fp8 workload accepts tiling " << name;
  }
}

// More heads run as one CTA per 16, 32 (h32: two consumer warpgroups on each gathered tile) or 64
// heads (h64: wgmma with the heads as M) and split: split rows merge per block of 16 heads, one CTA
// per row writes directly, every MMA path takes its Q block from the head group's offset, and h64
// with 32-slot splits ends rows on one-stage tiles; with 16 it merges a row's partials in two
// batches of eight splits (merge_cta). v2_fp8's h64 runs the same tilings with its own producers.
// One test per kernel and head count, so that ctest runs them side by side (the six took up to
// ~470 s one after another in a single test).
struct HeadsCase {
  const char* key;
  int heads;
};
void PrintTo(const HeadsCase& c, std::ostream* os) { *os << c.key << " h" << c.heads; }
class DsaV2Heads : public ::testing::TestWithParam<HeadsCase> {};

TEST_P(DsaV2Heads, MatchesReferenceSplitOrNot) {
  const KernelEntry* kernel = find_kernel(GetParam().key);
  ASSERT_NE(kernel, nullptr);
  REQUIRE_GPU_FOR(*kernel);
  const bool fp8 = kernel->info().dtype == "fp8";
  const int heads = GetParam().heads;
  int tried = 0;
  for (const char* tiling : {"s1n64x4m1p2", "s4n32x4m1p2", "s2n64x4m1p2g1", "s1n64x4m1h32", "s4n32x4m1p2h32",
                             "s1n64x4m1p4g2w1h64", "s4n32x4m1p4g2w1h64", "s16n32x4m1p4g2w1h64"}) {
    const std::string how = tiling;
    const bool wide = how.find("h64") != std::string::npos;
    if (fp8 && !wide && (how.find("w1") != std::string::npos || how.find("h32") != std::string::npos))
      continue;  // mma.sync at 16 heads per CTA, or h64
    if (wide && heads % 64 != 0) continue;  // h64 takes whole blocks of 64 heads
    // Both kernels' names share these fields; v2_fp8's tiling type also has the cluster merge.
    dsa_v2_fp8::Tiling parsed;
    ASSERT_TRUE(dsa_v2_fp8::Tiling::parse(tiling, &parsed).is_ok()) << tiling;
    // v2_fp8: one bulk copy per 656-byte row by a producer warpgroup, or with h64 16-byte loads
    // into the registers of the producers that dequantize the rows (g3).
    if (fp8) {
      parsed.gather = wide ? 3 : 1;
      parsed.producers = 4;
    }
    const SuiteRequest suite{"dsa-edge", {{"heads", heads}, {"kv", fp8 ? int(DsaKv::kFp8) : int(DsaKv::kBf16)}}};
    const std::string label = "dsa-edge --heads " + std::to_string(heads) + (fp8 ? " --kv fp8" : "");
    // v2_fp8's split rows also merge in clusters, one per (row, head group), at 16 heads per CTA.
    for (int cluster : {0, 1}) {
      if (cluster == 1 && !(fp8 && !wide && parsed.num_splits > 1)) continue;
      parsed.cluster = cluster;
      const std::string name = parsed.name();
      SCOPED_TRACE(label + " " + name);
      int checked = 0;
      verify_suite(*kernel, suite, &name, &checked, 1);
      EXPECT_GT(checked, 0) << "no " << label << " workload accepts tiling " << name;
      ++tried;
    }
  }
  EXPECT_GT(tried, 0) << "no tiling tried";
}

INSTANTIATE_TEST_SUITE_P(EveryHeadCount, DsaV2Heads,
                         ::testing::Values(HeadsCase{"dsa_decode.v2_fused.bf16", 32},
                                           HeadsCase{"dsa_decode.v2_fused.bf16", 64},
                                           HeadsCase{"dsa_decode.v2_fused.bf16", 128},
                                           HeadsCase{"dsa_decode.v2_fp8.fp8", 32},
                                           HeadsCase{"dsa_decode.v2_fp8.fp8", 64},
                                           HeadsCase{"dsa_decode.v2_fp8.fp8", 128}),
                         [](const auto& info) {
                           return param_name(std::string(info.param.key) + "_h" + std::to_string(info.param.heads));
                         });

// Both row paths of mla_decode v1_paged on every mla-edge workload, whatever the default picks
// there: 16 query rows per CTA (mma.sync), 64 (m64: wgmma over a request's s_q x heads rows,
// partial groups, causal positions masked per row) with both gathers (16-byte cp.async; tensor-map
// boxes for whole stages where the pages hold 32k rows, cp.async for cut stages and other page
// sizes) and both consumer pairs (o1 seesaw: pieces of an odd tile count end in an empty tile B;
// o0 lockstep), and m64 over few CTAs (many items per CTA: Q reloaded between items, items split
// and merged), and both cuts of the schedule forced on both paths (w0: requests split unless that
// costs nothing; w1048576: every request whole, CTAs left empty where there are fewer requests);
// one fresh seed each.
TEST(MlaV1Tilings, BothRowPathsMatchReference) {
  const KernelEntry* kernel = find_kernel("mla_decode.v1_paged.bf16");
  ASSERT_NE(kernel, nullptr);
  REQUIRE_GPU_FOR(*kernel);
  for (const std::string name :
       {"c132x4p2", "c132x4p4g2m64", "c132x4p4g3m64", "c9x4p4g2m64", "c9x4p4g3m64", "c40x4p4g3m64", "c132x4p2w0",
        "c132x4p2w1048576", "c40x4p4g3m64w0", "c132x4p4g3m64w1048576", "c132x4p4g2m64o1", "c132x4p4g3m64o1",
        "c9x4p4g2m64o1", "c9x4p4g3m64o1", "c40x4p4g3m64w0o1", "c132x4p4g3m64w1048576o1"}) {
    SCOPED_TRACE(name);
    int checked = 0;
    verify_suite(*kernel, {"mla-edge", {}}, &name, &checked, 1);
    EXPECT_GT(checked, 0) << "no mla-edge workload accepts tiling " << name;
  }
}

// A floor computes nothing to verify: every workload it runs (its cache dtype) of every suite of
// its op launches and finishes, with the planned tiling and with each of `forced` where the
// workload accepts it.
void time_every_workload(const char* op_name, const char* dtype, const std::vector<const char*>& forced_tilings) {
  const KernelEntry* kernel = floor_kernel(op_name, dtype, 16);
  ASSERT_NE(kernel, nullptr);
  REQUIRE_GPU_FOR(*kernel);
  int ran = 0;
  const OpBench* op = find_op_bench(op_name);
  PlanTarget target;
  ASSERT_TRUE(plan_target(*kernel, -1, &target).is_ok());
  TimingConfig once;
  once.warmup = 0;
  once.iters = 1;
  std::vector<const char*> tilings = {nullptr};
  tilings.insert(tilings.end(), forced_tilings.begin(), forced_tilings.end());
  for (const SuiteRequest& request : every_suite_request(*op))
    for (const char* forced : tilings) {
      if (more_heads(request)) continue;  // the plain suite's rows again
      const std::string name = suite_label(*op, request);
      std::unique_ptr<BenchSuite> suite;
      ASSERT_TRUE(op->make_suite(request, fresh_seed(), &suite).is_ok()) << name;
      const std::unique_ptr<BenchSession> session = suite->open_session(1);
      for (size_t i = 0; i < suite->size(); ++i) {
        SCOPED_TRACE(name + "/" + suite->info(i).name + (forced ? std::string(" ") + forced : ""));
        if (!kernel->info().runs(suite->info(i).dtype, suite->info(i).heads)) continue;
        ++ran;
        ASSERT_TRUE(session->prepare(i).is_ok());
        BenchPlan plan;
        const std::string tiling = forced ? forced : "";
        Status s = suite->plan(i, target, forced ? &tiling : nullptr, &plan);
        if (forced && !s.is_ok()) continue;
        ASSERT_TRUE(s.is_ok()) << s.to_string();
        TimingResult t;
        s = session->time(plan, once, &t);
        EXPECT_TRUE(s.is_ok()) << s.to_string();
        EXPECT_GT(t.median_us, 0.0);
      }
    }
  EXPECT_GT(ran, 0) << kernel->info().key << " runs no workload of " << op_name << "'s suites";
}

TEST(DsaFloor, RunsEveryWorkloadOfEverySuite) { time_every_workload("dsa_decode", "bf16", {"s4n64x1m1g3"}); }
TEST(MlaFloor, RunsEveryWorkloadOfEverySuite) {
  time_every_workload("mla_decode", "bf16",
                      {"c132x4p2", "c132x4p4g2m64", "c132x4p4g3m64", "c132x4p4g2m64o1", "c132x4p4g3m64o1"});
}
// The FP8 cache's floor (the suites' rows with --kv fp8), once one is registered.
TEST(DsaFp8Floor, RunsEveryWorkloadOfEverySuite) {
  if (floor_kernel("dsa_decode", "fp8", 16) == nullptr)
    GTEST_SKIP() << "no dsa_decode gather floor is registered for fp8 with 16 heads";
  time_every_workload("dsa_decode", "fp8", {});
}

// Graph mode (bench --graph): each op's default kernel on the first workloads of a suite, in
// every cache format and at 16 and 128 heads, replayed from a CUDA graph runs exactly as many
// kernels as the eager call, with the workspace and inputs the session holds.
TEST(GraphMode, ReplaysRunTheEagerCallsKernels) {
  if (device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  const std::vector<std::pair<std::string, SuiteRequest>> suites = {
      {"dsa_decode", {"dsa-contest", {}}},
      {"dsa_decode", {"dsa-contest", {{"kv", 1}}}},
      {"dsa_decode", {"dsa-contest", {{"heads", 128}}}},
      {"dsa_decode", {"dsa-contest", {{"heads", 128}, {"kv", 1}}}},
      {"mla_decode", {"mla-edge", {}}}};
  for (const auto& [op_name, request] : suites) {
    const OpBench* op = find_op_bench(op_name);
    ASSERT_NE(op, nullptr);
    std::unique_ptr<BenchSuite> suite;
    ASSERT_TRUE(op->make_suite(request, fresh_seed(), &suite).is_ok());
    const std::unique_ptr<BenchSession> session = suite->open_session(1);
    for (size_t i = 0; i < std::min<size_t>(suite->size(), 3); ++i) {
      SCOPED_TRACE(suite_label(*op, request) + "/" + suite->info(i).name);
      const KernelEntry* kernel = suite->default_kernel(i);
      ASSERT_NE(kernel, nullptr);
      DeviceFacts facts;
      ASSERT_TRUE(query_device(0, &facts).is_ok());
      if (!check_kernel_arch(*kernel, facts).is_ok()) GTEST_SKIP() << "needs " << kernel->info().key << "'s arch";
      PlanTarget target;
      ASSERT_TRUE(plan_target(*kernel, -1, &target).is_ok());
      ASSERT_TRUE(session->prepare(i).is_ok());
      BenchPlan plan;
      ASSERT_TRUE(suite->plan(i, target, nullptr, &plan).is_ok());
      TimingConfig c;
      c.warmup = 1;
      c.iters = 5;
      TimingResult eager, graph;
      ASSERT_TRUE(session->time(plan, c, &eager).is_ok());
      c.graph = true;
      const Status st = session->time(plan, c, &graph);
      ASSERT_TRUE(st.is_ok()) << st.to_string();
      EXPECT_NE(graph.method.find("graph"), std::string::npos) << graph.method;
      if (eager.method == "cupti") EXPECT_EQ(graph.kernels_per_call, eager.kernels_per_call);
      EXPECT_GT(graph.median_us, 0.0);
    }
  }
}

// A plan that is not the session's, or none, is refused before anything runs.
TEST(DsaV1Plans, VerifyAndTimeTakeOnlyTheirWorkloadsPlan) {
  const KernelEntry* kernel = find_kernel("dsa_decode.v1_splitk.bf16");
  ASSERT_NE(kernel, nullptr);
  REQUIRE_GPU_FOR(*kernel);
  std::unique_ptr<BenchSuite> suite;
  ASSERT_TRUE(find_op_bench("dsa_decode")->make_suite({"dsa-contest", {}}, 1, &suite).is_ok());
  PlanTarget target;
  ASSERT_TRUE(plan_target(*kernel, -1, &target).is_ok());
  const std::unique_ptr<BenchSession> session = suite->open_session(1);
  ASSERT_TRUE(session->prepare(0).is_ok());
  VerifyResult r;
  Status s = session->verify(BenchPlan{}, &r);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("plan: empty"), std::string::npos) << s.message();
  BenchPlan other;
  size_t j = 1;
  while (j < suite->size() && suite->info(j).shape == suite->info(0).shape) ++j;
  ASSERT_LT(j, suite->size());
  ASSERT_TRUE(suite->plan(j, target, nullptr, &other).is_ok());
  TimingResult t;
  s = session->time(other, TimingConfig{}, &t);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("plan: made for"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace mlakit
