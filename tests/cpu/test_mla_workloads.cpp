// mla_decode's suites, shapes and host inputs: reproducible per seed, the workloads the suites
// promise, pages never in order and distinct, padding that names a page no request uses, NaN in
// every row no request reads, caches past 4 GiB on a few host pages, host footprints.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <set>
#include <thread>

#include "plan/mla/semantics.h"
#include "workbench/mla/bench.h"
#include "workloads/mla/suites.h"

namespace mlakit {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

MlaSuite suite(const std::string& name, uint64_t seed) {
  MlaSuite s;
  EXPECT_TRUE(make_mla_suite(name, seed, &s).is_ok()) << name;
  return s;
}

const MlaWorkload* find(const MlaSuite& s, const std::string& name) {
  for (const MlaWorkload& w : s.workloads)
    if (w.name == name) return &w;
  ADD_FAILURE() << "no workload " << name << " in " << s.name;
  return nullptr;
}

TEST(MlaSuites, ReproduciblePerSeedOtherPagesForOtherSeeds) {
  for (const std::string& name : mla_suite_names()) {
    const MlaSuite a = suite(name, 5), b = suite(name, 5), c = suite(name, 6);
    ASSERT_EQ(a.workloads.size(), c.workloads.size());
    int differ = 0;
    for (size_t i = 0; i < a.workloads.size(); ++i) {
      EXPECT_EQ(a.workloads[i].block_table, b.workloads[i].block_table) << a.workloads[i].name;
      EXPECT_EQ(a.workloads[i].cache_seqlens, c.workloads[i].cache_seqlens) << a.workloads[i].name;
      EXPECT_EQ(a.workloads[i].problem, c.workloads[i].problem) << a.workloads[i].name;
      differ += a.workloads[i].block_table != c.workloads[i].block_table;
    }
    EXPECT_EQ(differ, int(a.workloads.size())) << name;
  }
  MlaSuite s;
  const Status st = make_mla_suite("mla-nope", 1, &s);
  EXPECT_EQ(st.code(), Code::kNotFound);
  EXPECT_NE(st.message().find("known suites: mla-serving, mla-edge"), std::string::npos) << st.message();
}

TEST(MlaSuites, ServingHasTheShapesItPromises) {
  const MlaSuite s = suite("mla-serving", 1);
  const struct {
    const char* name;
    int b, s_q, heads, causal;
    int32_t length;  // of request 0
  } promised[] = {{"b32-t4096", 32, 1, 16, 0, 4096},          {"b128-t1024", 128, 1, 16, 0, 1024},
                  {"b64-t4096-h128", 64, 1, 128, 0, 4096},    {"b1-t131072", 1, 1, 16, 0, 131072},
                  {"b4-mix46k-s4c", 4, 4, 16, 1, 46000},      {"b32-t4096-s2c", 32, 2, 16, 1, 4096}};
  for (const auto& c : promised) {
    const MlaWorkload* w = find(s, c.name);
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(w->problem.batch, c.b) << c.name;
    EXPECT_EQ(w->problem.seq_q, c.s_q) << c.name;
    EXPECT_EQ(w->problem.num_heads, c.heads) << c.name;
    EXPECT_EQ(w->problem.causal, c.causal) << c.name;
    EXPECT_EQ(w->cache_seqlens[0], c.length) << c.name;
  }
  EXPECT_EQ(find(s, "b4-mix46k-s4c")->cache_seqlens, (std::vector<int32_t>{46000, 4600, 1700, 1700}));
  std::set<int32_t> mixed(find(s, "b32-mix65536")->cache_seqlens.begin(), find(s, "b32-mix65536")->cache_seqlens.end());
  EXPECT_GT(mixed.size(), 20u);
  for (const MlaWorkload& w : s.workloads) {
    int64_t rows = 0;
    for (int32_t n : w.cache_seqlens) rows += n;
    EXPECT_LE(rows, int64_t(1) << 20) << w.name;  // the cap of docs/workloads.md
    EXPECT_EQ(w.layout, MlaLayout::kCombined) << w.name;
  }
}

// Distinct pages within and across requests, never all in order, and every entry past a
// request's pages names the one spare page no request uses.
TEST(MlaSuites, PagesAreDistinctShuffledAndPaddedWithASparePage) {
  const MlaSuite serving = suite("mla-serving", 3);
  for (const std::string& name : {"b32-t4096", "b8-t4096-h128", "b128-mix16384"}) {
    const MlaWorkload* w = find(serving, name);
    ASSERT_NE(w, nullptr);
    const MlaProblem& p = w->problem;
    std::set<int32_t> used, padding;
    int ascending = 0, steps = 0;
    for (int b = 0; b < p.batch; ++b) {
      const int32_t* row = w->block_table.data() + size_t(b) * p.max_pages;
      const int64_t pages = mla_request_pages(p, w->cache_seqlens[size_t(b)]);
      for (int64_t k = 0; k < p.max_pages; ++k) {
        if (k < pages) EXPECT_TRUE(used.insert(row[k]).second) << name << " page " << row[k] << " twice";
        else padding.insert(row[k]);
        if (k > 0 && k < pages) ascending += row[k] == row[k - 1] + 1, ++steps;
      }
    }
    EXPECT_LT(ascending, steps / 8 + 1) << name;
    EXPECT_LE(padding.size(), 1u) << name;
    for (int32_t pad : padding) EXPECT_EQ(used.count(pad), 0u) << name;
    EXPECT_EQ(int64_t(used.size()) + 1, p.num_pages) << name;  // used pages + the spare
  }
}

TEST(MlaSuites, EdgeCasesAreWhatTheirNamesSay) {
  const MlaSuite s = suite("mla-edge", 9);
  std::set<int> heads, page_sizes;
  std::set<MlaLayout> layouts;
  for (const MlaWorkload& w : s.workloads) {
    EXPECT_TRUE(w.problem.validate().is_ok()) << w.name;
    heads.insert(w.problem.num_heads);
    page_sizes.insert(w.problem.page_size);
    layouts.insert(w.layout);
  }
  EXPECT_EQ(heads, (std::set<int>{16, 32, 64, 128}));
  EXPECT_EQ(page_sizes, (std::set<int>{1, 16, 64}));
  EXPECT_EQ(layouts.size(), 2u);
  EXPECT_EQ(find(s, "edge-seqlen-0-1")->cache_seqlens, (std::vector<int32_t>{0, 1, 0, 1}));
  EXPECT_EQ(find(s, "edge-t131000")->cache_seqlens, (std::vector<int32_t>{131000}));
  const MlaWorkload* causal = find(s, "edge-causal-s4");
  EXPECT_EQ(causal->problem.seq_q, 4);
  EXPECT_EQ(causal->problem.causal, 1);
  for (const char* name : {"edge-4gib-combined", "edge-4gib-separate"}) {
    const MlaWorkload* w = find(s, name);
    EXPECT_GT(double(w->problem.num_rows()) * 1152, 4 * kGiB) << name;
    const double row_bytes = w->layout == MlaLayout::kCombined ? 1152 : 1024;  // ckv rows alone when separate
    for (int b = 0; b < w->problem.batch; ++b)
      for (int64_t k = 0; k < mla_request_pages(w->problem, w->cache_seqlens[size_t(b)]); ++k)
        EXPECT_GE(double(w->block_table[size_t(b) * w->problem.max_pages + size_t(k)]) * 64 * row_bytes, 2 * kGiB);
    EXPECT_EQ(w->block_table[0], w->problem.num_pages - 1) << name;  // the last page too
  }
  const MlaWorkload* bad = find(s, "edge-bad-page-ids");
  const std::vector<int32_t>& t = bad->block_table;
  const int mp = bad->problem.max_pages;
  EXPECT_EQ(t[1], -1);
  EXPECT_EQ(t[3], bad->problem.num_pages);
  EXPECT_EQ(t[size_t(mp)], INT32_MAX);
  EXPECT_EQ(find(s, "edge-clamped-seqlens")->cache_seqlens, (std::vector<int32_t>{700, -5, INT32_MAX, 640}));
  EXPECT_EQ(find(s, "edge-clamped-seqlens")->problem.max_seqlen(), 640);
  const MlaWorkload* shared = find(s, "edge-shared-pages");
  EXPECT_TRUE(std::equal(shared->block_table.begin(), shared->block_table.begin() + 8,
                         shared->block_table.begin() + shared->problem.max_pages));
}

// Every row no request reads is NaN on the host, every row one reads is a number; the reference's
// block table points into the used pages only.
TEST(MlaHostData, UnusedRowsAreNanAndTheTableIsRemapped) {
  const MlaSuite s = suite("mla-edge", 4);
  for (const char* name : {"edge-partial-page", "edge-shared-pages", "edge-bad-page-ids", "edge-ps16"}) {
    const MlaWorkload* w = find(s, name);
    MlaHostData h;
    make_mla_host_data(*w, 4, &h);
    const MlaProblem& p = w->problem;
    const int64_t D = 576;
    std::vector<bool> read(h.cache.size() / size_t(D), false);
    for (int b = 0; b < p.batch; ++b) {
      const int64_t n = mla_request_rows(p, w->cache_seqlens[size_t(b)]);
      for (int64_t j = 0; j < n; ++j) {
        const int32_t local = h.block_table[size_t(b) * p.max_pages + size_t(j / p.page_size)];
        const int32_t page = w->block_table[size_t(b) * p.max_pages + size_t(j / p.page_size)];
        if (page < 0 || page >= p.num_pages) {
          EXPECT_EQ(local, -1) << name;
          continue;
        }
        ASSERT_EQ(h.pages.at(size_t(local)), page) << name;
        read[size_t(local * p.page_size + j % p.page_size)] = true;
      }
    }
    for (size_t r = 0; r < read.size(); ++r)
      for (int64_t d = 0; d < D; d += 97) {
        const uint16_t x = h.cache[r * size_t(D) + size_t(d)];
        EXPECT_EQ((x & 0x7F80) == 0x7F80 && (x & 0x7F), !read[r]) << name << " row " << r;
      }
    EXPECT_EQ(h.problem.num_pages, int(h.pages.size())) << name;
    EXPECT_TRUE(h.problem.validate().is_ok()) << name;
  }
}

TEST(MlaHostData, ACacheOf4GiBCostsItsUsedPages) {
  const MlaSuite edge = suite("mla-edge", 1);
  const MlaWorkload* w = find(edge, "edge-4gib-separate");
  MlaHostData h;
  make_mla_host_data(*w, 1, &h);
  EXPECT_EQ(int64_t(h.pages.size()), mla_used_pages(*w));
  EXPECT_LT(double(h.cache.size()) * 2, 8e6);  // 2300 rows on 37 pages: under 3 MB
  const WorkloadInfo info = MlaBench::describe(*w);
  EXPECT_LT(info.host.bytes, 64e6);
  EXPECT_EQ(info.cost.rows, 2300);
}

TEST(MlaBenchShapes, OptionsErrorsAndFootprints) {
  MlaWorkload w;
  ASSERT_TRUE(MlaBench::make_shape({{"b", 32}, {"t", 4096}}, 1, &w).is_ok());
  EXPECT_EQ(w.name, "b32-t4096");
  EXPECT_EQ(w.problem.to_string(), "b=32 s_q=1 h=16 ckv=512 kpe=64 pages=2049 ps=64 max_pages=64 causal=0");
  ASSERT_TRUE(MlaBench::make_shape({{"b", 3}, {"t", 100}, {"s", 2}, {"causal", 1}, {"separate", 1}, {"page-size", 16}},
                                   1, &w).is_ok());
  EXPECT_EQ(w.layout, MlaLayout::kSeparate);
  EXPECT_EQ(w.problem.causal, 1);
  EXPECT_EQ(w.problem.max_pages, 7);
  ASSERT_TRUE(MlaBench::make_shape({{"b", 64}, {"t", 4096}, {"mixed", 1}}, 1, &w).is_ok());
  for (int32_t n : w.cache_seqlens) EXPECT_TRUE(n >= 64 && n <= 4096) << n;
  EXPECT_EQ(MlaBench::make_shape({{"b", 1}, {"t", 1}, {"heads", 12}}, 1, &w).message(),
            "--heads: expected one of 16, 32, 64, 128, got 12");
  HostFootprint f;
  ASSERT_TRUE(MlaBench::shape_footprint({{"b", 256}, {"t", 65536}}, &f).is_ok());
  EXPECT_NEAR(f.bytes / kGiB, 18.0, 0.5);  // 16 Mi rows of 1152 bytes dominate
  EXPECT_EQ(f.sized_by, "--b 256 --t 65536");
  ASSERT_TRUE(MlaBench::shape_footprint({{"b", 4096}, {"t", 1}, {"s", 4}, {"heads", 128}}, &f).is_ok());
  EXPECT_EQ(f.sized_by, "--b 4096 --s 4 --heads 128");  // queries and the reference outgrow the cache
}

// The suites stay far below any machine's memory, and their host work stays bounded.
TEST(MlaBenchShapes, SuitesFitTheHost) {
  for (const std::string& name : mla_bench().suite_names()) {
    std::unique_ptr<BenchSuite> s;
    ASSERT_TRUE(mla_bench().make_suite({name, {}}, 1, &s).is_ok()) << name;
    std::vector<HostFootprint> each;
    for (size_t i = 0; i < s->size(); ++i) {
      EXPECT_LT(s->info(i).host.bytes, 2 * kGiB) << s->info(i).name;
      each.push_back(s->info(i).host);
    }
    // Thread-seconds: about 2 minutes for mla-serving (16 s on the 16-core GPU machines).
    const HostFootprint total = session_footprint(each);
    const double threads = std::max(1u, std::thread::hardware_concurrency());
    EXPECT_LT((total.synth_seconds + total.reference_seconds) * threads, 180) << name;
  }
}

}  // namespace
}  // namespace mlakit
