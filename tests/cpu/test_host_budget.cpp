// The host side of a run (workbench/host_budget.h): the memory limit and its variable, the refusal
// message, the long-run warning, and DSA's estimate against what its sessions allocate.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/format.h"
#include "workbench/dsa/bench.h"
#include "workbench/host_budget.h"

namespace mlakit {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Sets MLAKIT_HOST_MEMORY_LIMIT for one scope.
class LimitVariable {
 public:
  explicit LimitVariable(const char* value) { setenv("MLAKIT_HOST_MEMORY_LIMIT", value, 1); }
  ~LimitVariable() { unsetenv("MLAKIT_HOST_MEMORY_LIMIT"); }
};

TEST(HostBudget, MemorySizes) {
  double b = 0;
  ASSERT_TRUE(parse_memory_size("17179869184", &b));
  EXPECT_EQ(b, 16 * kGiB);
  ASSERT_TRUE(parse_memory_size("16G", &b));
  EXPECT_EQ(b, 16 * kGiB);
  ASSERT_TRUE(parse_memory_size("512m", &b));
  EXPECT_EQ(b, 512.0 * 1024 * 1024);
  ASSERT_TRUE(parse_memory_size("1.5T", &b));
  EXPECT_EQ(b, 1.5 * 1024 * kGiB);
  for (const char* bad : {"", "G", "16GB", "16 G", "-1G", "0", "lots", "16X", "nan"})
    EXPECT_FALSE(parse_memory_size(bad, &b)) << bad;
}

TEST(HostBudget, TheVariableCanOnlyLowerTheLimit) {
  HostMemoryLimit machine;
  {
    // Make sure no variable from the caller's environment leaks in.
    LimitVariable none("");
    ASSERT_TRUE(host_memory_limit(&machine).is_ok());
  }
  ASSERT_GT(machine.bytes, 0);
  EXPECT_TRUE(machine.source == "physical memory" || machine.source == "cgroup memory limit") << machine.source;
  HostMemoryLimit limit;
  {
    LimitVariable lower("1G");
    ASSERT_TRUE(host_memory_limit(&limit).is_ok());
    EXPECT_EQ(limit.bytes, kGiB);
    EXPECT_EQ(limit.source, "MLAKIT_HOST_MEMORY_LIMIT=1G");
  }
  {
    LimitVariable higher("1000T");
    ASSERT_TRUE(host_memory_limit(&limit).is_ok());
    EXPECT_EQ(limit.bytes, machine.bytes);
    EXPECT_EQ(limit.source, machine.source);
  }
  LimitVariable bad("lots");
  const Status st = host_memory_limit(&limit);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_EQ(st.message(), "MLAKIT_HOST_MEMORY_LIMIT: expected a size such as 16G, 512M or 17179869184, got 'lots'");
}

TEST(HostBudget, TheRefusalNamesWhoWhatAndTheLimit) {
  HostFootprint f;
  f.bytes = 3 * kGiB;
  f.detail = "caches 3.0 GB";
  LimitVariable two("2G");
  const Status st = check_host_footprint(f, "--num-pages 50000");
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_EQ(st.message(), "--num-pages 50000: the run needs about 3.0 GB of host memory (caches 3.0 GB), more than "
                          "the limit of 2.0 GB (MLAKIT_HOST_MEMORY_LIMIT=2G)");
  f.bytes = kGiB;
  EXPECT_TRUE(check_host_footprint(f, "x").is_ok());
}

TEST(HostBudget, OnlyLongRunsAreAnnounced) {
  HostFootprint f;
  f.bytes = 7 * kGiB;
  f.synth_seconds = 6;
  f.reference_seconds = 6;
  EXPECT_EQ(long_run_warning(f, false, "shape T=9"), "");  // 6 s without the reference
  EXPECT_EQ(long_run_warning(f, true, "shape T=9"),
            "shape T=9: the host work takes about 12 s (synthesizing the inputs, the fp64 CPU reference; up to "
            "7.0 GB of host memory); a smaller shape runs sooner");
  f.synth_seconds = 600;
  EXPECT_NE(long_run_warning(f, false, "s").find("about 10 min"), std::string::npos);
}

// A session synthesizes the shared part (DSA: the caches) once per run of equal keys.
TEST(HostBudget, ASessionSharesWhatItKeeps) {
  HostFootprint a, b, c;
  a.bytes = 3, b.bytes = 5, c.bytes = 4;
  for (HostFootprint* f : {&a, &b, &c}) {
    f->synth_seconds = 10;  // 9 of them shared
    f->shared_synth_seconds = 9;
    f->reference_seconds = 2;
  }
  a.shared_key = b.shared_key = "pages=8462 ps=64";
  c.shared_key = "pages=64 ps=64";
  const HostFootprint s = session_footprint({a, b, c, a});
  EXPECT_EQ(s.bytes, 5);
  EXPECT_EQ(s.synth_seconds, 10 + 1 + 10 + 10);
  EXPECT_EQ(s.reference_seconds, 8);
  c.shared_key = "";  // nothing kept: every workload synthesizes all of it
  EXPECT_EQ(session_footprint({c, c}).synth_seconds, 20);
}

// The estimate of `mlakit run --t 3000` (issue 13: 7.5 GB measured) and of the suites, which must
// stay far below any machine's memory.
TEST(HostBudget, DsaEstimates) {
  HostFootprint f;
  ASSERT_TRUE(DsaBench::shape_footprint({{"t", 3000}}, &f).is_ok());
  EXPECT_NEAR(f.bytes / kGiB, 7.1, 0.1);  // 7.6e9 bytes: caches of 99000 pages dominate
  EXPECT_EQ(f.sized_by, "--t 3000 (its default --num-pages is 99000)");
  EXPECT_EQ(f.detail.rfind("caches 6.8 GB, ", 0), 0u) << f.detail;
  ASSERT_TRUE(DsaBench::shape_footprint({{"t", 1}, {"num-pages", 1000000}}, &f).is_ok());
  EXPECT_EQ(f.sized_by, "--num-pages 1000000");
  ASSERT_TRUE(DsaBench::shape_footprint({{"t", 100000}, {"topk", 2048}, {"num-pages", 64}}, &f).is_ok());
  EXPECT_EQ(f.sized_by, "--t 100000 --topk 2048");  // indices and reference outgrow the caches
  // Every suite in every flavour: 128 heads make the most reference work.
  for (const std::string& name : dsa_bench().suite_names()) {
    for (const int heads : kDsaHeadCounts) {
      for (const long long kv : {0, 1}) {
        const SuiteRequest request{name, {{"heads", heads}, {"kv", kv}}};
        const std::string label = suite_label(dsa_bench(), request);
        std::unique_ptr<BenchSuite> suite;
        ASSERT_TRUE(dsa_bench().make_suite(request, 1, &suite).is_ok()) << label;
        std::vector<HostFootprint> each;
        for (size_t i = 0; i < suite->size(); ++i) {
          EXPECT_LT(suite->info(i).host.bytes, 2 * kGiB) << suite->info(i).name;
          each.push_back(suite->info(i).host);
        }
        // Seconds on one thread: under a minute each (the warning's threshold is 10 s on the machine).
        const HostFootprint s = session_footprint(each);
        const double threads = std::max(1u, std::thread::hardware_concurrency());
        EXPECT_LT((s.synth_seconds + s.reference_seconds) * threads, 60) << label;
      }
    }
  }
}

}  // namespace
}  // namespace mlakit
