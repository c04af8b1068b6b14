// The flashinfer-bench trace set written by scripts/fib/traceset.py holds exactly the workloads
// of the C++ suites: the Python port of the index synthesis (scripts/fib/synth.py) gives the same
// indices as src/workloads for dsa-contest and dsa-serving, at page size 64 and page size 1, and
// the project's own trace reader reads what the writer wrote. This is what lets
// docs/flashinfer-bench.md put the harness's figures beside `mlakit bench` on the same workloads.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "workloads/dsa/trace.h"
#include "temp_dir.h"
#include "workloads/dsa/suites.h"
#include "workloads/dsa/synth.h"

namespace mlakit {
namespace {

bool have_python3() { return std::system("python3 -c 'import sys' >/dev/null 2>&1") == 0; }

// Runs the writer; returns its exit status.
int write_traceset(const std::string& out, const std::string& defs) {
  const std::string cmd = std::string("python3 ") + MLAKIT_SOURCE_DIR + "/scripts/fib/traceset.py --out " +
                          out + " --definitions " + defs + " >/dev/null";
  return std::system(cmd.c_str());
}

class FibTraceSet : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_python3()) GTEST_SKIP() << "python3 not found (the trace set writer is a Python script)";
    ASSERT_EQ(write_traceset(dir_.str(), "ps64 ps1"), 0);
  }

  // The trace's workloads in file order: the 23 contest shapes, then serving T = 16..256.
  DsaSuite load(const char* definition) {
    DsaTraceOptions opts;
    opts.definition = definition;
    DsaSuite suite;
    const Status s = load_dsa_trace(dir_.str(), opts, &suite);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    return suite;
  }

  test::TempDir dir_;
};

TEST_F(FibTraceSet, Ps64HoldsTheContestAndServingSuitesIndexForIndex) {
  DsaSuite contest, serving;
  ASSERT_TRUE(make_dsa_suite("dsa-contest", 1, &contest).is_ok());
  ASSERT_TRUE(make_dsa_suite("dsa-serving", 1, &serving).is_ok());
  const DsaSuite trace = load(kDsaDefinitionPs64);
  ASSERT_EQ(trace.workloads.size(), contest.workloads.size() + serving.workloads.size());
  for (size_t i = 0; i < trace.workloads.size(); ++i) {
    const DsaWorkload& got = trace.workloads[i];
    const DsaWorkload& want = i < contest.workloads.size() ? contest.workloads[i]
                                                            : serving.workloads[i - contest.workloads.size()];
    SCOPED_TRACE(want.name);
    EXPECT_EQ(got.problem.num_tokens, want.problem.num_tokens);
    EXPECT_EQ(got.problem.num_pages, want.problem.num_pages);
    EXPECT_EQ(got.problem.page_size, 64);
    EXPECT_EQ(got.problem.topk, want.problem.topk);
    EXPECT_FLOAT_EQ(got.sm_scale, want.sm_scale);
    if (!want.uuid.empty()) EXPECT_EQ(got.uuid, want.uuid);  // contest workloads keep the dataset's uuid
    EXPECT_TRUE(got.indices == want.indices) << "indices differ from the C++ suite";
  }
}

TEST_F(FibTraceSet, Ps1IsTheSameSynthesisAtPageSizeOne) {
  DsaSuite contest, serving;
  ASSERT_TRUE(make_dsa_suite("dsa-contest", 1, &contest).is_ok());
  ASSERT_TRUE(make_dsa_suite("dsa-serving", 1, &serving).is_ok());
  const DsaSuite trace = load(kDsaDefinitionPs1);
  std::vector<const DsaWorkload*> wants;
  for (const DsaWorkload& w : contest.workloads) wants.push_back(&w);
  for (const DsaWorkload& w : serving.workloads) wants.push_back(&w);
  ASSERT_EQ(trace.workloads.size(), wants.size());
  for (size_t i = 0; i < wants.size(); ++i) {
    const DsaWorkload& ps64 = *wants[i];
    SCOPED_TRACE(ps64.name);
    // The C++ generator on the page-size-1 problem of the same name and valid counts.
    DsaProblem p = ps64.problem;
    p.page_size = 1;
    p.num_pages = ps64.problem.num_pages * 64;
    DsaWorkload want = synth::blank_workload(ps64.name, p);
    const bool serving_row = ps64.name.rfind("serving-", 0) == 0;
    ASSERT_TRUE(synth::synthesize_rows(&want, valid_per_row(ps64),
                                       serving_row ? synth::RowShape::kTopk : synth::RowShape::kMixed, 1)
                    .is_ok());
    const DsaWorkload& got = trace.workloads[i];
    EXPECT_EQ(got.problem.page_size, 1);
    EXPECT_EQ(got.problem.num_pages, p.num_pages);
    EXPECT_TRUE(got.indices == want.indices) << "indices differ from the C++ generator";
    // Units of 64 slots at page size 1 draw the same slots as pages of 64.
    EXPECT_TRUE(got.indices == ps64.indices);
  }
}

}  // namespace
}  // namespace mlakit
