// Every registered DSA kernel against the fp64 reference on every suite, three fresh seeds,
// outputs poisoned before each run, output and lse checked, two runs bitwise equal.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "mlakit/device.h"
#include "runtime/registry.h"
#include "workbench/session.h"

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
  std::string suite;
};
// A readable parameter in test names (ctest lists "GetParam() = <this>").
void PrintTo(const Case& c, std::ostream* os) { *os << c.suite; }

class DsaSuiteTest : public ::testing::TestWithParam<Case> {};

// Verifies one suite with the tiling dsa_plan picks (or `forced`), on three fresh seeds.
void verify_suite(const DsaKernel& kernel, const std::string& suite_name, const DsaTiling* forced,
                  int* checked) {
  for (int round = 0; round < 3; ++round) {
    const uint64_t seed = fresh_seed();
    DsaSuite suite;
    ASSERT_TRUE(make_dsa_suite(suite_name, seed, &suite).is_ok());
    DsaSession session(seed);
    for (const DsaWorkload& w : suite.workloads) {
      SCOPED_TRACE(suite_name + "/" + w.name + " seed " + std::to_string(seed));
      ASSERT_TRUE(session.prepare(w).is_ok());
      DsaTiling tiling;
      if (forced) {
        tiling = *forced;
        DeviceFacts facts;
        ASSERT_TRUE(query_device(0, &facts).is_ok());
        if (!kernel.validate(w.problem, tiling, facts).is_ok()) continue;  // e.g. too many splits
        ++*checked;
      } else {
        DsaPlanOptions po;
        po.kernel_key = kernel.info().key;
        DsaPlan plan;
        Status s = dsa_plan(w.problem, po, &plan);
        ASSERT_TRUE(s.is_ok()) << s.to_string();
        tiling = plan.tiling;
      }
      VerifyResult r;
      Status s = session.verify(kernel, tiling, &r);
      ASSERT_TRUE(s.is_ok()) << s.to_string();
      EXPECT_TRUE(r.output.ok()) << tiling.name() << " output: " << r.output.summary();
      EXPECT_TRUE(r.lse.ok()) << tiling.name() << " lse: " << r.lse.summary();
      EXPECT_TRUE(r.deterministic) << tiling.name() << ": two runs differ bitwise";
    }
  }
}

TEST_P(DsaSuiteTest, MatchesReferenceOnThreeSeeds) {
  const DsaKernel* kernel = find_dsa_kernel(GetParam().kernel);
  ASSERT_NE(kernel, nullptr);
  REQUIRE_GPU_FOR(*kernel);
  int checked = 0;
  verify_suite(*kernel, GetParam().suite, nullptr, &checked);
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (const DsaKernel* k : dsa_kernels())
    for (const std::string& s : dsa_suite_names()) cases.push_back({k->info().key, s});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(AllKernels, DsaSuiteTest, ::testing::ValuesIn(all_cases()),
                         [](const auto& info) {
                           std::string n = info.param.kernel + "_" + info.param.suite;
                           for (char& c : n)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

// The v1 tilings that change the code path: fused epilogue (1 split), single stage, many splits.
TEST(DsaV1Tilings, EveryInstantiatedPathMatchesReference) {
  const DsaKernel* kernel = find_dsa_kernel("dsa_decode.v1_splitk.bf16");
  ASSERT_NE(kernel, nullptr);
  REQUIRE_GPU_FOR(*kernel);
  for (const char* name : {"s1n64x2m4", "s1n64x1m4", "s4n64x1m8", "s32n64x2m16", "s3n64x2m4"}) {
    DsaTiling t;
    ASSERT_TRUE(DsaTiling::parse(name, &t).is_ok());
    SCOPED_TRACE(name);
    int checked = 0;
    verify_suite(*kernel, "dsa-edge", &t, &checked);
    EXPECT_GT(checked, 0) << "no dsa-edge workload accepts tiling " << name;
  }
}

}  // namespace
}  // namespace mlakit
