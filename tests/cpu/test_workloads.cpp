// Workload suites keep their structure: the contest table equals data/workloads/dsa_contest.json,
// short rows are page runs, full rows are clustered top-k picks on distinct pages, serving pages
// are distinct across tokens, edge cases are what their names say, and everything is
// reproducible per seed and different across seeds. Plus the counter-based randn generator.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "io/json.h"
#include "base/bf16.h"
#include "workloads/dsa/suites.h"

namespace mlakit {
namespace {

DsaSuite suite(const std::string& name, uint64_t seed = 1, int heads = 16, DsaKv kv = DsaKv::kBf16) {
  DsaSuite s;
  const Status st = make_dsa_suite(name, seed, &s, heads, kv);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return s;
}

const DsaWorkload& by_name(const DsaSuite& s, const std::string& name) {
  for (const DsaWorkload& w : s.workloads)
    if (w.name == name) return w;
  ADD_FAILURE() << "no workload " << name << " in " << s.name;
  static const DsaWorkload none;
  return none;
}

const int32_t* row_of(const DsaWorkload& w, int t) { return w.indices.data() + size_t(t) * size_t(w.problem.topk); }

// A short row (valid < topk): valid entries first, laid out page by page from each page's first
// slot, the last page partial, every page distinct. Returns its pages.
std::vector<int64_t> check_sequence_row(const DsaWorkload& w, int t, int valid) {
  const int ps = w.problem.page_size;
  const int32_t* row = row_of(w, t);
  std::vector<int64_t> pages;
  for (int k = 0; k < valid; ++k) {
    EXPECT_GE(row[k], 0);
    EXPECT_LT(row[k], w.problem.num_slots());
    EXPECT_EQ(row[k] % ps, k % ps) << w.name << " row " << t << " position " << k;
    if (k % ps == 0) pages.push_back(row[k] / ps);
    else EXPECT_EQ(row[k] / ps, pages.back()) << w.name << " row " << t << " position " << k;
  }
  for (int k = valid; k < w.problem.topk; ++k) EXPECT_EQ(row[k], -1);
  EXPECT_EQ(std::set<int64_t>(pages.begin(), pages.end()).size(), pages.size()) << w.name << " row " << t;
  return pages;
}

// A full top-k row: pages in groups (each page one contiguous group, distinct), 56..64 slots of
// each page but the last, offsets ascending within a group, every slot distinct. Returns pages.
std::vector<int64_t> check_topk_row(const DsaWorkload& w, int t, int valid) {
  const int ps = w.problem.page_size;
  const int32_t* row = row_of(w, t);
  std::vector<int64_t> pages;
  std::vector<int> counts;
  for (int k = 0; k < valid; ++k) {
    EXPECT_GE(row[k], 0);
    EXPECT_LT(row[k], w.problem.num_slots());
    const int64_t page = row[k] / ps;
    if (k == 0 || page != pages.back()) {
      pages.push_back(page);
      counts.push_back(0);
    } else {
      EXPECT_GT(row[k], row[k - 1]) << w.name << " row " << t << ": offsets ascend within a page";
    }
    ++counts.back();
  }
  for (int k = valid; k < w.problem.topk; ++k) EXPECT_EQ(row[k], -1);
  EXPECT_EQ(std::set<int64_t>(pages.begin(), pages.end()).size(), pages.size())
      << w.name << " row " << t << ": each page is one group";
  for (size_t i = 0; i + 1 < counts.size(); ++i) {
    EXPECT_GE(counts[i], ps - ps / 8) << w.name << " row " << t;
    EXPECT_LE(counts[i], ps) << w.name << " row " << t;
  }
  if (counts.size() >= 20) {  // about 60 of 64 on average (56..64 uniform: 60 +- 0.5 over 30 pages)
    const double mean = double(valid - counts.back()) / double(counts.size() - 1);
    EXPECT_GT(mean, 58.0 * ps / 64) << w.name << " row " << t;
    EXPECT_LT(mean, 62.0 * ps / 64) << w.name << " row " << t;
  }
  return pages;
}

TEST(ContestSuite, EqualsTheJsonFile) {
  json::Value d;
  const Status st = json::parse_file(std::string(MLAKIT_SOURCE_DIR) + "/data/workloads/dsa_contest.json", &d);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  const DsaSuite s = suite("dsa-contest");
  const json::Value& shapes = d.at("workloads");
  ASSERT_EQ(s.workloads.size(), shapes.size());
  ASSERT_EQ(s.workloads.size(), 23u);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const DsaWorkload& w = s.workloads[i];
    char name[32];
    std::snprintf(name, sizeof name, "contest-%02zu", i);
    EXPECT_EQ(w.name, name);
    EXPECT_EQ(w.uuid, shapes[i].at("uuid").get<std::string>());
    EXPECT_EQ(w.problem.num_pages, d.at("num_pages").get<int>());
    EXPECT_EQ(w.problem.page_size, d.at("page_size").get<int>());
    EXPECT_EQ(w.problem.num_heads, d.at("num_qo_heads").get<int>());
    EXPECT_EQ(w.problem.head_dim_ckv, d.at("head_dim_ckv").get<int>());
    EXPECT_EQ(w.problem.head_dim_kpe, d.at("head_dim_kpe").get<int>());
    EXPECT_EQ(w.problem.topk, d.at("topk").get<int>());
    EXPECT_EQ(w.sm_scale, float(d.at("sm_scale").get<double>()));
    const std::vector<int> expected = shapes[i].at("valid_per_row").get<std::vector<int>>();
    EXPECT_EQ(w.problem.num_tokens, int(expected.size()));
    EXPECT_EQ(valid_per_row(w), expected) << w.name;
    EXPECT_TRUE(w.problem.validate().is_ok());
  }
}

TEST(ContestSuite, RowsHaveThePageStructure) {
  const DsaSuite s = suite("dsa-contest", 7);
  int full_rows = 0;
  for (const DsaWorkload& w : s.workloads) {
    const std::vector<int> valid = valid_per_row(w);
    std::set<int64_t> all_pages;
    size_t page_count = 0;
    for (int t = 0; t < w.problem.num_tokens; ++t) {
      const int v = valid[size_t(t)];
      const std::vector<int64_t> pages = v == w.problem.topk ? check_topk_row(w, t, v) : check_sequence_row(w, t, v);
      full_rows += v == w.problem.topk;
      all_pages.insert(pages.begin(), pages.end());
      page_count += pages.size();
    }
    // Rows of one workload are different sequences: no page is shared between them.
    EXPECT_EQ(all_pages.size(), page_count) << w.name;
  }
  EXPECT_EQ(full_rows, 4);  // the JSON has four rows with all 2048 valid
}

TEST(ServingSuite, FullRowsOnDistinctPagesAcrossTokens) {
  const DsaSuite s = suite("dsa-serving", 3);
  std::vector<int> tokens;
  for (const DsaWorkload& w : s.workloads) {
    tokens.push_back(w.problem.num_tokens);
    EXPECT_TRUE(w.problem.validate().is_ok());
    EXPECT_EQ(w.problem.page_size, 64);
    EXPECT_EQ(w.problem.topk, 2048);
    EXPECT_EQ(w.name, "serving-T" + std::to_string(w.problem.num_tokens));
    std::set<int64_t> pages;
    size_t count = 0;
    for (int t = 0; t < w.problem.num_tokens; ++t) {
      const std::vector<int64_t> p = check_topk_row(w, t, 2048);
      pages.insert(p.begin(), p.end());
      count += p.size();
    }
    EXPECT_EQ(pages.size(), count) << w.name << ": a page is shared between tokens";
    EXPECT_EQ(valid_per_row(w), std::vector<int>(size_t(w.problem.num_tokens), 2048));
  }
  EXPECT_EQ(tokens, (std::vector<int>{16, 32, 64, 128, 256}));
}

TEST(EdgeSuite, EachCaseIsWhatItsNameSays) {
  const DsaSuite s = suite("dsa-edge", 5);
  for (const DsaWorkload& w : s.workloads) {
    EXPECT_TRUE(w.problem.validate().is_ok()) << w.name;
    EXPECT_EQ(w.indices.size(), size_t(w.problem.num_tokens) * size_t(w.problem.topk)) << w.name;
  }
  // T = 1, nothing valid.
  const DsaWorkload& empty = by_name(s, "edge-empty-T1");
  EXPECT_EQ(empty.problem.num_tokens, 1);
  EXPECT_EQ(valid_per_row(empty), std::vector<int>{0});

  // -1 at the start, in the middle, valid entries only at the end.
  const DsaWorkload& pad = by_name(s, "edge-pad-anywhere");
  EXPECT_EQ(row_of(pad, 0)[0], -1);
  EXPECT_GE(row_of(pad, 0)[100], 0);
  EXPECT_EQ(row_of(pad, 1)[1], -1);
  EXPECT_GE(row_of(pad, 1)[2], 0);
  EXPECT_EQ(row_of(pad, 3)[0], -1);
  EXPECT_GE(row_of(pad, 3)[2047], 0);
  EXPECT_EQ(valid_per_row(pad), (std::vector<int>{1948, 1365, 37, 1}));

  // The same slot many times.
  const DsaWorkload& rep = by_name(s, "edge-repeat");
  const std::set<int32_t> r0(row_of(rep, 0), row_of(rep, 0) + 2048);
  EXPECT_EQ(r0.size(), 1u);
  const std::set<int32_t> r1(row_of(rep, 1), row_of(rep, 1) + 2048);
  EXPECT_EQ(r1.size(), 8u);
  EXPECT_EQ(valid_per_row(rep), (std::vector<int>{2048, 2048, 200}));
  EXPECT_TRUE(std::equal(row_of(rep, 2), row_of(rep, 2) + 100, row_of(rep, 2) + 100));

  // Page size 1 at several T.
  for (const char* n : {"edge-ps1-T1", "edge-ps1-T8", "edge-ps1-T64"}) {
    const DsaWorkload& w = by_name(s, n);
    EXPECT_EQ(w.problem.page_size, 1) << n;
  }
  EXPECT_EQ(by_name(s, "edge-ps1-T64").problem.num_tokens, 64);

  // topk 256 / 512 / 1024 with padding.
  for (int K : {256, 512, 1024}) {
    const DsaWorkload& w = by_name(s, "edge-topk" + std::to_string(K) + "-T4");
    EXPECT_EQ(w.problem.topk, K);
    EXPECT_EQ(valid_per_row(w), (std::vector<int>{K, K / 2, 1, K - 37}));
  }

  // T = 1024 with empty and full rows.
  const DsaWorkload& big = by_name(s, "edge-T1024");
  EXPECT_EQ(big.problem.num_tokens, 1024);
  const std::vector<int> v = valid_per_row(big);
  EXPECT_GT(std::count(v.begin(), v.end(), 0), 20);
  EXPECT_GT(std::count(v.begin(), v.end(), 2048), 100);
  EXPECT_GT(std::count_if(v.begin(), v.end(), [](int x) { return x > 0 && x < 2048; }), 400);

  // The first and the last slot of the cache.
  const DsaWorkload& bounds = by_name(s, "edge-first-last-slot");
  const int32_t last = int32_t(bounds.problem.num_slots() - 1);
  EXPECT_EQ(row_of(bounds, 0)[0], 0);
  EXPECT_EQ(row_of(bounds, 0)[1], last);
  EXPECT_EQ(row_of(bounds, 1)[0], last);
  EXPECT_EQ(row_of(bounds, 1)[1], 0);

  // Out-of-range values, counted as padding.
  const DsaWorkload& oor = by_name(s, "edge-out-of-range");
  const int32_t n = int32_t(oor.problem.num_slots());
  int big_values = 0, negative = 0;
  for (int32_t x : oor.indices) {
    big_values += x >= n;
    negative += x < -1;
  }
  EXPECT_GT(big_values, 100);
  EXPECT_GT(negative, 100);
  const std::vector<int> ov = valid_per_row(oor);
  EXPECT_EQ(ov[1], 0);
  EXPECT_EQ(ov[2], 99);
  EXPECT_GT(ov[0], 300);
  EXPECT_LT(ov[0], 512);
}

TEST(Suites, ReproduciblePerSeedAndDifferentAcrossSeeds) {
  for (const std::string& name : dsa_suite_names()) {
    for (const int heads : kDsaHeadCounts) {
      for (const DsaKv kv : {DsaKv::kBf16, DsaKv::kFp8}) {
        SCOPED_TRACE(name + " heads " + std::to_string(heads) + (kv == DsaKv::kFp8 ? " fp8" : ""));
        const DsaSuite a = suite(name, 11, heads, kv), b = suite(name, 11, heads, kv), c = suite(name, 12, heads, kv);
        ASSERT_EQ(a.workloads.size(), b.workloads.size());
        ASSERT_EQ(a.workloads.size(), c.workloads.size());
        int differ = 0;
        for (size_t i = 0; i < a.workloads.size(); ++i) {
          EXPECT_EQ(a.workloads[i].indices, b.workloads[i].indices) << a.workloads[i].name;
          EXPECT_EQ(valid_per_row(a.workloads[i]), valid_per_row(c.workloads[i])) << a.workloads[i].name;
          differ += a.workloads[i].indices != c.workloads[i].indices;
        }
        // Only edge-empty-T1 has nothing to vary.
        EXPECT_GE(differ, int(a.workloads.size()) - 1) << name;
      }
    }
  }
}

TEST(Suites, UnknownNameListsTheKnownOnes) {
  DsaSuite s;
  const Status st = make_dsa_suite("dsa-nope", 1, &s);
  EXPECT_EQ(st.code(), Code::kNotFound);
  for (const std::string& n : dsa_suite_names()) EXPECT_NE(st.message().find(n), std::string::npos) << st.message();
  // A head count no suite comes in is refused, naming the option.
  const Status heads = make_dsa_suite("dsa-edge", 1, &s, 48);
  EXPECT_EQ(heads.code(), Code::kInvalidArgument);
  EXPECT_EQ(heads.message().rfind("--heads: ", 0), 0u) << heads.message();
}

TEST(MakeWorkload, FullRowsAndErrors) {
  DsaProblem p;
  p.num_tokens = 4;
  p.num_pages = 2000;
  DsaWorkload w;
  ASSERT_TRUE(make_dsa_workload(p, -1, 9, &w).is_ok());
  EXPECT_EQ(valid_per_row(w), std::vector<int>(4, 2048));
  for (int t = 0; t < 4; ++t) check_topk_row(w, t, 2048);
  ASSERT_TRUE(make_dsa_workload(p, 300, 9, &w).is_ok());
  EXPECT_EQ(valid_per_row(w), std::vector<int>(4, 300));
  for (int t = 0; t < 4; ++t) check_topk_row(w, t, 300);

  Status st = make_dsa_workload(p, 3000, 9, &w);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("3000"), std::string::npos) << st.message();
  p.num_pages = 10;  // 640 slots
  st = make_dsa_workload(p, 1000, 9, &w);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("640"), std::string::npos) << st.message();
  // A cache too small for clustered pages still gets distinct slots per row.
  ASSERT_TRUE(make_dsa_workload(p, 640, 9, &w).is_ok());
  for (int t = 0; t < 4; ++t) {
    const std::set<int32_t> slots(row_of(w, t), row_of(w, t) + 640);
    EXPECT_EQ(slots.size(), 640u);
  }
  p.page_size = 0;
  EXPECT_EQ(make_dsa_workload(p, 1, 9, &w).code(), Code::kInvalidArgument);
}

TEST(MakeWorkload, MixedRowsHalveFromOneLongRow) {
  DsaProblem p;
  p.num_tokens = 8;
  p.num_pages = 2000;
  DsaWorkload w;
  ASSERT_TRUE(make_dsa_workload(p, 300, 9, &w, /*mixed=*/true).is_ok());
  EXPECT_EQ(valid_per_row(w), (std::vector<int>{300, 150, 75, 37, 18, 9, 300, 150}));
  for (int t = 0; t < 8; ++t) check_topk_row(w, t, 300 >> (t % 6));
  EXPECT_NE(w.name.find("-mixed"), std::string::npos) << w.name;
}

TEST(MakeWorkload, PageSize1ClustersOn64SlotRuns) {
  DsaProblem p;
  p.num_tokens = 2;
  p.page_size = 1;
  p.num_pages = 1 << 16;
  DsaWorkload w;
  ASSERT_TRUE(make_dsa_workload(p, 2048, 4, &w).is_ok());
  // With page size 1 the picks cluster on aligned 64-slot runs: view them as 64-slot "pages".
  DsaWorkload as64 = w;
  as64.problem.page_size = 64;
  as64.problem.num_pages = p.num_pages / 64;
  for (int t = 0; t < 2; ++t) check_topk_row(as64, t, 2048);
}

TEST(Randn, PureFunctionOfSeedStreamAndIndex) {
  // The first 1000 elements do not depend on how many are generated (single thread vs many).
  std::vector<uint16_t> small(1001), large(700001);
  fill_randn_bf16(small.data(), int64_t(small.size()), 42, 7);
  fill_randn_bf16(large.data(), int64_t(large.size()), 42, 7);
  EXPECT_TRUE(std::equal(small.begin(), small.end(), large.begin()));
  std::vector<uint16_t> again(large.size());
  fill_randn_bf16(again.data(), int64_t(again.size()), 42, 7);
  EXPECT_EQ(again, large);
  std::vector<uint16_t> other_seed(small.size()), other_stream(small.size());
  fill_randn_bf16(other_seed.data(), int64_t(small.size()), 43, 7);
  fill_randn_bf16(other_stream.data(), int64_t(small.size()), 42, 8);
  EXPECT_NE(other_seed, small);
  EXPECT_NE(other_stream, small);
}

TEST(Randn, StandardNormalMoments) {
  std::vector<uint16_t> v(1 << 20);
  fill_randn_bf16(v.data(), int64_t(v.size()), 1, 2);
  double sum = 0, sq = 0, within1 = 0;
  for (uint16_t b : v) {
    const double x = bf16_to_float(b);
    ASSERT_TRUE(std::isfinite(x));
    sum += x;
    sq += x * x;
    within1 += std::fabs(x) < 1.0;
  }
  const double n = double(v.size()), mean = sum / n, var = sq / n - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.01);
  EXPECT_NEAR(var, 1.0, 0.01);
  EXPECT_NEAR(within1 / n, 0.6827, 0.01);
}

TEST(HostData, SizesAndSeeds) {
  DsaProblem p;
  p.num_tokens = 3;
  p.num_pages = 5;
  p.page_size = 64;
  DsaWorkload w;
  ASSERT_TRUE(make_dsa_workload(p, 10, 1, &w).is_ok());
  DsaHostData a, b;
  make_dsa_queries(w, 1, &a);
  make_dsa_caches(p, 1, &a);
  EXPECT_EQ(a.q_nope.size(), size_t(3 * 16 * 512));
  EXPECT_EQ(a.q_pe.size(), size_t(3 * 16 * 64));
  EXPECT_EQ(a.ckv.size(), size_t(5 * 64 * 512));
  EXPECT_EQ(a.kpe.size(), size_t(5 * 64 * 64));
  make_dsa_queries(w, 1, &b);
  make_dsa_caches(p, 1, &b);
  EXPECT_EQ(a.q_nope, b.q_nope);
  EXPECT_EQ(a.ckv, b.ckv);
  EXPECT_NE(std::vector<uint16_t>(a.q_nope.begin(), a.q_nope.begin() + 64),
            std::vector<uint16_t>(a.ckv.begin(), a.ckv.begin() + 64));
  make_dsa_caches(p, 2, &b);
  EXPECT_NE(a.ckv, b.ckv);
  DsaWorkload w2 = w;
  w2.name = "another";
  make_dsa_queries(w2, 1, &b);
  EXPECT_NE(a.q_nope, b.q_nope);
}

}  // namespace
}  // namespace mlakit
