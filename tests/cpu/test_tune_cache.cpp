// The tuner cache (buckets, paths, file round trip, corrupt files, the dispatch lookup) and the
// tuner's CPU-side helpers (tiling enumeration, bucket grouping, dry runs).
#include <gtest/gtest.h>

#include "temp_dir.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include "base/run_info.h"
#include "plan/dsa/contract.h"
#include "runtime/planner.h"
#include "runtime/registry.h"
#include "kernels/dsa_decode/v1_splitk/tiling.h"
#include "runtime/tune_cache.h"
#include "workbench/dsa/bench.h"
#include "workbench/op_bench_impl.h"
#include "workbench/tuner.h"

namespace mlakit {
namespace {

using test::TempDir;

namespace fs = std::filesystem;


// Sets an environment variable for the scope; restores the previous value.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) setenv(name, value, 1);
    else unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

DsaProblem problem_with_tokens(int t) {
  DsaProblem p;
  p.num_tokens = t;
  p.num_pages = 8462;
  return p;
}

TuneEntry entry(const std::string& device, const std::string& bucket, const dsa_v1::Tiling& t, double us) {
  TuneEntry e;
  e.device = device;
  e.kernel_key = "dsa_decode.v1_splitk.bf16";
  e.bucket = bucket;
  e.tiling = t.name();
  e.median_us = us;
  e.default_us = us + 1;
  e.suite = "dsa-contest";
  e.seed = 7;
  e.workloads = 3;
  e.git = "abc1234";
  e.updated = "2026-11-21T10:00:00Z";
  return e;
}

// --- buckets and paths --------------------------------------------------------------------------

TEST(TuneBucket, TokensRoundUpToPowersOfTwo) {
  EXPECT_EQ(dsa_bucket_tokens(0), 1);
  EXPECT_EQ(dsa_bucket_tokens(1), 1);
  EXPECT_EQ(dsa_bucket_tokens(2), 2);
  EXPECT_EQ(dsa_bucket_tokens(3), 4);
  EXPECT_EQ(dsa_bucket_tokens(4), 4);
  EXPECT_EQ(dsa_bucket_tokens(5), 8);
  EXPECT_EQ(dsa_bucket_tokens(8), 8);
  EXPECT_EQ(dsa_bucket_tokens(9), 16);
  EXPECT_EQ(dsa_bucket_tokens(129), 256);
}

TEST(TuneBucket, NamesEveryFieldThatChangesTheWinnerButNotNumPages) {
  DsaProblem p = problem_with_tokens(3);
  EXPECT_EQ(dsa_shape_bucket(p), "T4.h16.ckv512.kpe64.ps64.k2048");
  DsaProblem q = problem_with_tokens(4);
  q.num_pages = 17;
  EXPECT_EQ(dsa_shape_bucket(q), dsa_shape_bucket(p));
  q.page_size = 1;
  EXPECT_EQ(dsa_shape_bucket(q), "T4.h16.ckv512.kpe64.ps1.k2048");
  DsaProblem r = problem_with_tokens(5);
  r.topk = 512;
  r.num_heads = 8;
  EXPECT_EQ(dsa_shape_bucket(r), "T8.h8.ckv512.kpe64.ps64.k512");
}

TEST(TuneCachePath, EnvironmentPrecedence) {
  {
    ScopedEnv a("MLAKIT_CACHE_DIR", "/x/cache");
    ScopedEnv b("XDG_CACHE_HOME", "/y");
    EXPECT_EQ(user_cache_dir(), "/x/cache");
    EXPECT_EQ(default_tune_cache_path(), "/x/cache/tune.json");
  }
  {
    ScopedEnv a("MLAKIT_CACHE_DIR", "");  // empty counts as unset
    ScopedEnv b("XDG_CACHE_HOME", "/y");
    EXPECT_EQ(user_cache_dir(), "/y/mlakit");
  }
  {
    ScopedEnv a("MLAKIT_CACHE_DIR", nullptr);
    ScopedEnv b("XDG_CACHE_HOME", nullptr);
    ScopedEnv c("HOME", "/home/someone");
    EXPECT_EQ(default_tune_cache_path(), "/home/someone/.cache/mlakit/tune.json");
  }
}

// --- the file -----------------------------------------------------------------------------------

TEST(TuneCacheFile, SaveLoadRoundTrip) {
  TempDir dir;
  const std::string path = dir.file("sub/folder/tune.json");  // folders are created
  TuneCache c;
  c.put(entry("NVIDIA H200", "T1.h16.ckv512.kpe64.ps64.k2048", {32, 64, 2, 4}, 10.5));
  c.put(entry("NVIDIA H200", "T8.h16.ckv512.kpe64.ps64.k2048", {8, 64, 3, 8}, 14.25));
  c.put(entry("NVIDIA H100 80GB HBM3", "T8.h16.ckv512.kpe64.ps64.k2048", {16, 64, 1, 4}, 16));
  ASSERT_TRUE(c.save(path).is_ok());

  TuneCache d;
  ASSERT_TRUE(d.load(path).is_ok());
  ASSERT_EQ(d.entries().size(), 3u);
  const TuneEntry* e = d.find({"NVIDIA H200", "dsa_decode.v1_splitk.bf16", "T8.h16.ckv512.kpe64.ps64.k2048"});
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->tiling, (dsa_v1::Tiling{8, 64, 3, 8}).name());
  EXPECT_DOUBLE_EQ(e->median_us, 14.25);
  EXPECT_DOUBLE_EQ(e->default_us, 15.25);
  EXPECT_EQ(e->suite, "dsa-contest");
  EXPECT_EQ(e->seed, 7u);
  EXPECT_EQ(e->workloads, 3);
  EXPECT_EQ(e->git, "abc1234");
  EXPECT_EQ(e->updated, "2026-11-21T10:00:00Z");
  EXPECT_EQ(d.find({"NVIDIA H200", "dsa_decode.other.bf16", "T8.h16.ckv512.kpe64.ps64.k2048"}), nullptr);
  EXPECT_EQ(d.dump(), c.dump());
}

TEST(TuneCacheFile, PutReplacesTheSameKeyAndEraseRemovesIt) {
  TuneCache c;
  const std::string b = "T2.h16.ckv512.kpe64.ps64.k2048";
  c.put(entry("NVIDIA H200", b, {16, 64, 2, 4}, 12));
  c.put(entry("NVIDIA H200", b, {32, 64, 2, 4}, 11));
  ASSERT_EQ(c.entries().size(), 1u);
  EXPECT_EQ(c.entries()[0].tiling, "s32n64x2m4");
  EXPECT_TRUE(c.erase({"NVIDIA H200", "dsa_decode.v1_splitk.bf16", b}));
  EXPECT_FALSE(c.erase({"NVIDIA H200", "dsa_decode.v1_splitk.bf16", b}));
  EXPECT_TRUE(c.entries().empty());
}

TEST(TuneCacheFile, MissingFileIsAnEmptyCache) {
  TempDir dir;
  TuneCache c;
  EXPECT_TRUE(c.load(dir.file("absent.json")).is_ok());
  EXPECT_TRUE(c.entries().empty());
}

TEST(TuneCacheFile, CorruptFilesGiveAClearError) {
  TempDir dir;
  const std::string good_entry =
      R"({"device":"NVIDIA H200","kernel":"k","bucket":"b","tiling":"s16n64x2m4","median_us":12})";
  const struct {
    const char* what;
    std::string text;
    const char* expect;  // a fragment of the message
  } cases[] = {
      {"not JSON", "{\"format\": \"mlakit.tune\", ", "line 1"},
      {"truncated", "", "line 1"},
      {"an array", "[]", "expected a JSON object"},
      {"another format", R"({"format":"other","version":1,"entries":[]})", "format: expected \"mlakit.tune\""},
      {"a newer version", R"({"format":"mlakit.tune","version":2,"entries":[]})", "reads version 1, got 2"},
      {"entries not a list", R"({"format":"mlakit.tune","version":1,"entries":{}})", "entries: expected an array"},
      {"bad tiling", R"({"format":"mlakit.tune","version":1,"entries":[{"device":"d","kernel":"k","bucket":"b","tiling":"fast","median_us":1}]})",
       "entries[0].tiling"},
      {"missing key", R"({"format":"mlakit.tune","version":1,"entries":[{"device":"d","kernel":"k","tiling":"s1n64x1m4","median_us":1}]})",
       "bucket"},
      {"wrong type", R"({"format":"mlakit.tune","version":1,"entries":[)" + good_entry.substr(0, good_entry.size() - 1) +
                         R"(,"seed":"seven"}]})",
       "seed"},
  };
  for (const auto& c : cases) {
    const std::string path = dir.file("tune.json");
    write_text(path, c.text);
    TuneCache cache;
    const Status st = cache.load(path);
    EXPECT_EQ(st.code(), Code::kIoError) << c.what;
    EXPECT_NE(st.message().find(path), std::string::npos) << c.what << ": " << st.message();
    EXPECT_NE(st.message().find("corrupt"), std::string::npos) << c.what << ": " << st.message();
    EXPECT_NE(st.message().find(c.expect), std::string::npos) << c.what << ": " << st.message();
    EXPECT_TRUE(cache.entries().empty()) << c.what;
  }
}

// --- the dispatch lookup ------------------------------------------------------------------------

class TunedTilingTest : public ::testing::Test {
 protected:
  void TearDown() override { set_tune_cache_path(""); }
  TempDir dir_;
};

// The tuned tiling name of a DSA problem's bucket, as the planner asks for it.
Status tuned(const std::string& device, const std::string& kernel, const DsaProblem& p, std::string* out) {
  return tuned_tiling(device, kernel, dsa_shape_bucket(p), out);
}

TEST_F(TunedTilingTest, FindsTheEntryOfTheProblemsBucket) {
  const std::string path = dir_.file("tune.json");
  TuneCache c;
  c.put(entry("NVIDIA H200", "T8.h16.ckv512.kpe64.ps64.k2048", {8, 64, 3, 8}, 14));
  ASSERT_TRUE(c.save(path).is_ok());
  set_tune_cache_path(path);
  EXPECT_EQ(tune_cache_path(), path);

  std::string t;
  ASSERT_TRUE(tuned("NVIDIA H200", "dsa_decode.v1_splitk.bf16", problem_with_tokens(5), &t).is_ok());
  EXPECT_EQ(t, (dsa_v1::Tiling{8, 64, 3, 8}).name());
  // Another bucket, device or kernel: kNotFound with the key in the message.
  Status st = tuned("NVIDIA H200", "dsa_decode.v1_splitk.bf16", problem_with_tokens(4), &t);
  EXPECT_EQ(st.code(), Code::kNotFound);
  EXPECT_NE(st.message().find("T4.h16"), std::string::npos) << st.message();
  EXPECT_EQ(tuned("NVIDIA H100", "dsa_decode.v1_splitk.bf16", problem_with_tokens(8), &t).code(),
            Code::kNotFound);
  EXPECT_EQ(tuned("NVIDIA H200", "dsa_decode.other", problem_with_tokens(8), &t).code(), Code::kNotFound);
}

TEST_F(TunedTilingTest, LoadsOnceUntilToldToReload) {
  const std::string path = dir_.file("tune.json");
  TuneCache c;
  c.put(entry("NVIDIA H200", "T1.h16.ckv512.kpe64.ps64.k2048", {32, 64, 2, 4}, 9));
  ASSERT_TRUE(c.save(path).is_ok());
  set_tune_cache_path(path);
  std::string t;
  ASSERT_TRUE(tuned("NVIDIA H200", "dsa_decode.v1_splitk.bf16", problem_with_tokens(1), &t).is_ok());
  EXPECT_EQ(t, "s32n64x2m4");

  c.put(entry("NVIDIA H200", "T1.h16.ckv512.kpe64.ps64.k2048", {16, 64, 2, 4}, 8));
  ASSERT_TRUE(c.save(path).is_ok());
  ASSERT_TRUE(tuned("NVIDIA H200", "dsa_decode.v1_splitk.bf16", problem_with_tokens(1), &t).is_ok());
  EXPECT_EQ(t, "s32n64x2m4") << "the file is read once per process";
  reload_tune_cache();
  ASSERT_TRUE(tuned("NVIDIA H200", "dsa_decode.v1_splitk.bf16", problem_with_tokens(1), &t).is_ok());
  EXPECT_EQ(t, "s16n64x2m4");
}

TEST_F(TunedTilingTest, MissingFileIsNotFound) {
  set_tune_cache_path(dir_.file("none.json"));
  std::string t;
  const Status st = tuned("NVIDIA H200", "dsa_decode.v1_splitk.bf16", problem_with_tokens(1), &t);
  EXPECT_EQ(st.code(), Code::kNotFound);
  EXPECT_NE(st.message().find("none.json"), std::string::npos) << st.message();
}

TEST_F(TunedTilingTest, CorruptFileIsAClearErrorAndLeavesTheTilingAlone) {
  // The planner turns any non-ok answer into the kernel's built-in default: the tiling it passed
  // in must come back untouched, and the status must say what is wrong with which file.
  const std::string path = dir_.file("tune.json");
  write_text(path, "{\"format\": \"mlakit.tune\", \"version\": 1, \"entries\": [ oops");
  set_tune_cache_path(path);
  std::string t = "s4n64x2m4";
  const Status st = tuned("NVIDIA H200", "dsa_decode.v1_splitk.bf16", problem_with_tokens(1), &t);
  EXPECT_EQ(st.code(), Code::kIoError);
  EXPECT_NE(st.message().find(path), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("corrupt"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("built-in tilings are used"), std::string::npos) << st.message();
  EXPECT_EQ(t, "s4n64x2m4");
}

TEST_F(TunedTilingTest, ConcurrentLookupsAgree) {
  const std::string path = dir_.file("tune.json");
  TuneCache c;
  for (int t = 1; t <= 256; t *= 2)
    c.put(entry("NVIDIA H200", dsa_shape_bucket(problem_with_tokens(t)), {t, 64, 2, 4}, 10));
  ASSERT_TRUE(c.save(path).is_ok());
  set_tune_cache_path(path);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int k = 0; k < 8; ++k)
    threads.emplace_back([&, k] {
      for (int i = 0; i < 200; ++i) {
        const int t = 1 << ((i + k) % 9);
        std::string out;
        if (!tuned("NVIDIA H200", "dsa_decode.v1_splitk.bf16", problem_with_tokens(t), &out).is_ok() ||
            out != (dsa_v1::Tiling{t, 64, 2, 4}).name())
          ++wrong;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST_F(TunedTilingTest, ThePlannerUsesAValidTunedTilingAndIgnoresAnInvalidOne) {
  const std::string path = dir_.file("tune.json");
  TuneCache c;
  c.put(entry("NVIDIA H200", "T8.h16.ckv512.kpe64.ps64.k2048", {8, 64, 1, 8}, 14));
  c.put(entry("NVIDIA H200", "T1.h16.ckv512.kpe64.ps64.k2048", {16, 64, 3, 4}, 9));  // 3 stages: too big
  ASSERT_TRUE(c.save(path).is_ok());
  set_tune_cache_path(path);
  DeviceFacts h200;
  ASSERT_TRUE(find_known_device("h200", &h200).is_ok());
  DsaPlanOptions o;
  o.device_facts = &h200;
  o.kernel_key = "dsa_decode.v1_splitk.bf16";  // the entries above are v1's
  DsaPlan plan;
  ASSERT_TRUE(dsa_plan(problem_with_tokens(8), o, &plan).is_ok());
  EXPECT_EQ(plan.tiling(), "s8n64x1m8");
  ASSERT_TRUE(dsa_plan(problem_with_tokens(1), o, &plan).is_ok());
  EXPECT_EQ(plan.tiling(), "s32n64x2m4");  // the kernel's default for T=1
}

// --- tuner helpers (a test double kernel; no GPU) -----------------------------------------------

class FakeKernel : public VariantKernel<DsaProblem, dsa_v1::Tiling> {
 public:
  FakeKernel() {
    info_.key = "dsa_decode.fake.bf16";
    info_.op = "dsa_decode";
    info_.variant = "fake";
    info_.dtype = "bf16";
    info_.heads = {16};
    info_.description = "a test double";
  }
  const KernelInfo& info() const override { return info_; }
  std::vector<dsa_v1::Tiling> tilings(const DsaProblem& p) const override {
    std::vector<dsa_v1::Tiling> out;
    for (int s = 1; s <= 32; s *= 2)
      for (int stages : {1, 2}) out.push_back({s, 64, stages, 4});
    if (p.num_tokens >= 4) out.push_back({64, 64, 1, 4});  // only in the larger problems' space
    return out;
  }
  dsa_v1::Tiling default_for(const DsaProblem&, const DeviceFacts&) const override { return {4, 64, 2, 4}; }
  Status validate(const DsaProblem& p, const dsa_v1::Tiling& t, const DeviceFacts&) const override {
    if (t.num_splits * p.num_tokens > 64)
      return Status::unsupported("grid of " + std::to_string(t.num_splits * p.num_tokens) +
                                 " CTAs exceeds this double's 64");
    if (t.num_splits == 1 && t.stages == 2) return Status::unsupported("one split needs one stage here");
    return Status::ok();
  }
  size_t workspace(const DsaProblem&, const dsa_v1::Tiling&) const override { return 0; }
  std::string describe(const DsaProblem&, const dsa_v1::Tiling&) const override { return ""; }
  Status run(const DsaProblem&, const dsa_v1::Tiling&, const DsaTensors&, void*, cudaStream_t) const override {
    return Status::unsupported("the test double does not launch");
  }

 private:
  KernelInfo info_;
};

DeviceFacts h200() {
  DeviceFacts d;
  EXPECT_TRUE(find_known_device("h200", &d).is_ok());
  return d;
}

// A suite of DSA workloads with these token counts (indices are not needed to plan).
OpSuite<DsaBench> suite_of(const std::vector<int>& tokens) {
  std::vector<DsaWorkload> ws;
  for (int t : tokens) {
    DsaWorkload w;
    w.name = "w" + std::to_string(ws.size());
    w.problem = problem_with_tokens(t);
    ws.push_back(w);
  }
  return OpSuite<DsaBench>("test", ws);
}

PlanTarget h200_target(const KernelEntry& k) {
  PlanTarget target;
  EXPECT_TRUE(plan_target(k, h200(), &target).is_ok());
  return target;
}

dsa_v1::Tiling tiling_of(const TilingChoice& c) {
  dsa_v1::Tiling t;
  EXPECT_TRUE(dsa_v1::Tiling::parse(c.tiling, &t).is_ok()) << c.tiling;
  return t;
}

TEST(TunerEnumerate, MergesSpacesDropsDuplicatesAndGivesReasons) {
  FakeKernel k;
  const OpSuite<DsaBench> suite = suite_of({5, 8});
  const std::vector<TilingChoice> choices = enumerate_tilings(suite, {0, 1}, h200_target(k));
  ASSERT_EQ(choices.size(), 13u);  // 6 splits x 2 stages + s64 (once, though in both spaces)
  int valid = 0;
  for (const TilingChoice& c : choices) {
    valid += c.valid();
    const dsa_v1::Tiling t = tiling_of(c);
    if (t.num_splits == 1 && t.stages == 2) {
      EXPECT_EQ(c.skip_reason, "T=5: one split needs one stage here");
    }
    if (t.num_splits == 16) {
      // 16 x 5 = 80 > 64 fails on the first problem already.
      EXPECT_EQ(c.skip_reason, "T=5: grid of 80 CTAs exceeds this double's 64");
    }
    if (t.num_splits == 8) {
      // valid for T=5 (40) but not for T=8 (64 is fine, 8*8 = 64): valid.
      EXPECT_TRUE(c.valid()) << c.skip_reason;
    }
    // A valid tiling comes with its plan for each workload: what the tuner times.
    EXPECT_EQ(c.plans.size(), c.valid() ? 2u : 0u) << c.tiling;
    for (const BenchPlan& p : c.plans) EXPECT_EQ(p.tiling(), c.tiling);
  }
  EXPECT_EQ(valid, 7);  // s1x1, s2x1, s2x2, s4x1, s4x2, s8x1, s8x2
}

TEST(TunerEnumerate, SameTokensGiveBareReasons) {
  FakeKernel k;
  const OpSuite<DsaBench> suite = suite_of({2, 2});
  const auto choices = enumerate_tilings(suite, {0, 1}, h200_target(k));
  for (const TilingChoice& c : choices)
    if (tiling_of(c).num_splits == 1 && tiling_of(c).stages == 2)
      EXPECT_EQ(c.skip_reason, "one split needs one stage here");
}

TEST(TunerGroups, GroupsByBucketInOrderOfFirstAppearance) {
  const OpSuite<DsaBench> suite = suite_of({1, 3, 4, 2, 8, 5, 1});
  const auto groups = group_by_bucket(suite);
  ASSERT_EQ(groups.size(), 4u);
  EXPECT_EQ(groups[0].bucket, "T1.h16.ckv512.kpe64.ps64.k2048");
  EXPECT_EQ(groups[0].workloads, (std::vector<size_t>{0, 6}));
  EXPECT_EQ(groups[1].bucket, "T4.h16.ckv512.kpe64.ps64.k2048");
  EXPECT_EQ(groups[1].workloads, (std::vector<size_t>{1, 2}));
  EXPECT_EQ(groups[2].workloads, (std::vector<size_t>{3}));
  EXPECT_EQ(groups[3].workloads, (std::vector<size_t>{4, 5}));
}

TEST(TunerDryRun, EnumeratesTheContestSuiteAndWritesNothing) {
  TempDir dir;
  FakeKernel k;
  TuneOptions o;
  o.dry_run = true;
  o.device = h200();
  o.cache_path = dir.file("tune.json");
  std::vector<std::string> lines;
  o.log = [&](const std::string& l) { lines.push_back(l); };
  TuneReport r;
  ASSERT_TRUE(tune(k, o, &r).is_ok());
  EXPECT_FALSE(fs::exists(o.cache_path));
  ASSERT_FALSE(r.buckets.empty());
  size_t workloads = 0;
  bool saw_skip_line = false;
  for (const auto& b : r.buckets) {
    workloads += b.workloads.size();
    EXPECT_FALSE(b.candidates.empty()) << b.bucket;
    EXPECT_FALSE(b.has_winner);
  }
  for (const auto& l : lines) saw_skip_line |= l.find("  skip s1n64x2m4: ") == 0;
  EXPECT_EQ(workloads, 23u);  // every contest workload lands in exactly one bucket
  EXPECT_TRUE(saw_skip_line);
}

TEST(TunerRun, RefusesToOverwriteACorruptCache) {
  TempDir dir;
  FakeKernel k;
  TuneOptions o;
  o.device = h200();
  o.cache_path = dir.file("tune.json");
  write_text(o.cache_path, "not json");
  TuneReport r;
  const Status st = tune(k, o, &r);
  EXPECT_EQ(st.code(), Code::kIoError);
  EXPECT_NE(st.message().find("corrupt"), std::string::npos) << st.message();
  std::ifstream f(o.cache_path);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "not json");
}

TEST(TunerRun, UnknownSuiteIsNotFound) {
  FakeKernel k;
  TuneOptions o;
  o.dry_run = true;
  o.device = h200();
  o.suite = {"no-such-suite", {}};
  TuneReport r;
  EXPECT_FALSE(tune(k, o, &r).is_ok());
}

// The winner is the best mean over tilings timed everywhere; best_each_us takes each workload's
// fastest tiling, dropped ones included for the workloads they ran on.
TEST(TunerSummary, WinnerAndBestOfEachWorkload) {
  TuneBucketResult b;
  b.candidates = {{"a", "", {10.0, 20.0, 30.0}, 0},
                  {"b", "", {12.0, 15.0, 31.0}, 0},
                  {"c", "w2: verification failed", {8.0}, 0},
                  {"d", "invalid", {}, 0}};
  summarize_bucket(3, &b);
  ASSERT_TRUE(b.has_winner);
  EXPECT_EQ(b.winner, "b");
  EXPECT_DOUBLE_EQ(b.winner_us, (12.0 + 15.0 + 31.0) / 3);
  EXPECT_DOUBLE_EQ(b.candidates[0].mean_us, 20.0);
  EXPECT_DOUBLE_EQ(b.candidates[2].mean_us, 0.0);  // not timed on every workload
  EXPECT_DOUBLE_EQ(b.best_each_us, (8.0 + 15.0 + 30.0) / 3);
}

TEST(TunerSummary, NoBestOfEachWhenAWorkloadHadNoTiling) {
  TuneBucketResult b;
  b.candidates = {{"a", "w1: failed to launch", {10.0}, 0}};
  summarize_bucket(2, &b);
  EXPECT_FALSE(b.has_winner);
  EXPECT_DOUBLE_EQ(b.best_each_us, 0.0);
  summarize_bucket(0, &b);
  EXPECT_FALSE(b.has_winner);
  EXPECT_DOUBLE_EQ(b.best_each_us, 0.0);
}

}  // namespace
}  // namespace mlakit
