// Bench records (JSON lines, CSV, table), the timer's statistics and CUPTI span grouping, the
// NVML throttle names, the profiling helpers, and the CLI of tune / ceiling / report.
#include <gtest/gtest.h>

#include "temp_dir.h"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/run_info.h"
#include "io/json.h"
#include "mlakit/version.h"
#include "workbench/ceiling.h"
#include "workbench/cublas_gemm.h"
#include "workbench/cupti_spans.h"
#include "workbench/nvml.h"
#include "workbench/profiling.h"
#include "workbench/report.h"
#include "workbench/timer.h"

namespace mlakit {
namespace {

using test::TempDir;

namespace fs = std::filesystem;


std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string l; std::getline(ss, l);) out.push_back(l);
  return out;
}

BenchRecord sample_record(const std::string& workload, double median) {
  BenchRecord r;
  r.git = "abc1234+dirty";
  r.version = "0.1.0";
  r.time = "2026-11-21T10:00:00Z";
  r.op = "dsa_decode";
  r.kernel_key = "dsa_decode.v1_splitk.bf16";
  r.tiling = "s16n64x2m4";
  r.suite = "dsa-contest";
  r.workload = workload;
  r.shape = "T=8 H=16 ckv=512 kpe=64 pages=8462 ps=64 topk=2048";
  r.num_tokens = 8;
  r.device = "NVIDIA H200";
  r.sm_clock_mhz = 1980;
  r.throttle = "none";
  r.method = "cupti";
  r.iters = 50;
  r.median_us = median;
  r.p10_us = median - 0.5;
  r.p90_us = median + 0.75;
  r.mean_us = median + 0.1;
  r.host_us = 7.25;
  r.verify_ran = true;
  r.verified = true;
  r.max_abs_err_output = 0.015625;
  r.max_abs_err_lse = 2.5e-6;
  Cost cost;
  cost.gathered_bytes = 2048.0 * 8 * 1152;
  cost.flops = 1e9;
  apply_roofline(cost, 4000, &r);
  return r;
}

// --- records --------------------------------------------------------------------------------------

TEST(BenchRecordTest, RooflineFigures) {
  BenchRecord r;
  r.median_us = 10;
  Cost cost;
  cost.gathered_bytes = 20e6;  // 20 MB in 10 us = 2000 GB/s
  cost.flops = 5e9;            // 5 GFLOP in 10 us = 500 TFLOP/s
  apply_roofline(cost, 4000, &r);
  EXPECT_DOUBLE_EQ(r.gbps, 2000);
  EXPECT_DOUBLE_EQ(r.tflops, 500);
  EXPECT_DOUBLE_EQ(r.pct_of_ceiling, 50);
  EXPECT_EQ(r.peak_tflops, 0);  // no tensor peak given: no % of it
  EXPECT_EQ(r.pct_of_peak, 0);
  apply_roofline(cost, 4000, &r, 800);
  EXPECT_DOUBLE_EQ(r.peak_tflops, 800);
  EXPECT_DOUBLE_EQ(r.pct_of_peak, 62.5);  // 500 of 800 TFLOP/s
  apply_roofline(cost, 0, &r);
  EXPECT_EQ(r.pct_of_ceiling, 0);
  EXPECT_EQ(r.pct_of_peak, 0);
  r.median_us = 0;
  apply_roofline(cost, 4000, &r);
  EXPECT_EQ(r.gbps, 0);
}

TEST(BenchRecordTest, JsonRoundTrip) {
  const BenchRecord r = sample_record("contest-07", 12.3456789);
  const json::Value v = to_json(r);
  json::Value parsed;
  ASSERT_TRUE(json::parse(json::dump(v), &parsed).is_ok());
  BenchRecord back;
  ASSERT_TRUE(from_json(parsed, &back).is_ok());
  EXPECT_EQ(back.git, r.git);
  EXPECT_EQ(back.version, r.version);
  EXPECT_EQ(back.op, "dsa_decode");
  EXPECT_EQ(back.kernel_key, r.kernel_key);
  EXPECT_EQ(back.tiling, r.tiling);
  EXPECT_EQ(back.workload, r.workload);
  EXPECT_EQ(back.shape, r.shape);
  EXPECT_EQ(back.num_tokens, 8);
  EXPECT_EQ(back.device, r.device);
  EXPECT_EQ(back.sm_clock_mhz, 1980);
  EXPECT_EQ(back.method, "cupti");
  EXPECT_DOUBLE_EQ(back.median_us, 12.346);  // written to 3 decimals
  EXPECT_DOUBLE_EQ(back.host_us, 7.25);
  EXPECT_DOUBLE_EQ(back.bytes, r.bytes);
  EXPECT_NEAR(back.gbps, r.gbps, 0.05);
  EXPECT_TRUE(back.verify_ran);
  EXPECT_TRUE(back.verified);
  EXPECT_DOUBLE_EQ(back.max_abs_err_output, 0.015625);
  // The spec's fields of a bench line are all there.
  for (const char* key : {"git", "version", "op", "kernel", "shape", "device", "median_us", "p90_us", "gbps",
                          "pct_of_ceiling"})
    EXPECT_TRUE(v.contains(key)) << key;
}

// The tensor peak travels in the JSON record (not the CSV: its columns stay) and shows in the
// table as TFLOP/s and % of it.
TEST(BenchRecordTest, TheTensorPeakRoundTripsAndShowsInTheTable) {
  BenchRecord r = sample_record("mla-h128", 10);
  Cost cost;
  cost.gathered_bytes = 20e6;
  cost.flops = 5e9;  // 500 TFLOP/s in 10 us
  apply_roofline(cost, 4000, &r, 812.5);
  json::Value parsed;
  ASSERT_TRUE(json::parse(json::dump(to_json(r)), &parsed).is_ok());
  BenchRecord back;
  ASSERT_TRUE(from_json(parsed, &back).is_ok());
  EXPECT_DOUBLE_EQ(back.tflops, 500);
  EXPECT_DOUBLE_EQ(back.peak_tflops, 812.5);
  EXPECT_DOUBLE_EQ(back.pct_of_peak, 61.54);  // written to 2 decimals
  EXPECT_EQ(csv_header().find("peak"), std::string::npos);

  BenchRecord unknown = sample_record("contest-01", 10);
  apply_roofline(cost, 4000, &unknown);  // no peak measured
  const std::vector<std::string> table = lines_of(format_bench_table({back, unknown}));
  ASSERT_GE(table.size(), 3u);
  EXPECT_NE(table[0].find("TFLOP/s"), std::string::npos) << table[0];
  EXPECT_NE(table[0].find("%peak"), std::string::npos) << table[0];
  EXPECT_NE(table[1].find(" 500.0   61.5 "), std::string::npos) << table[1];
  EXPECT_NE(table[2].find(" 500.0      - "), std::string::npos) << table[2];
}

TEST(BenchRecordTest, TheFloorOfTheSameRunRoundTrips) {
  BenchRecord r = sample_record("serving-T16", 20.5);
  r.floor_key = "dsa_decode.floor_gather.bf16";
  r.floor_us = 14.6874;
  json::Value parsed;
  ASSERT_TRUE(json::parse(json::dump(to_json(r)), &parsed).is_ok());
  BenchRecord back;
  ASSERT_TRUE(from_json(parsed, &back).is_ok());
  EXPECT_EQ(back.floor_key, r.floor_key);
  EXPECT_DOUBLE_EQ(back.floor_us, 14.687);
  const std::string row = to_csv_row(r);
  EXPECT_EQ(row.substr(row.size() - 36), ",dsa_decode.floor_gather.bf16,14.687") << row;
  EXPECT_EQ(csv_header().substr(csv_header().size() - 18), ",op,floor,floor_us");
}

TEST(BenchRecordTest, UnverifiedRecordsWriteNulls) {
  BenchRecord r = sample_record("w", 5);
  r.verify_ran = false;
  const json::Value v = to_json(r);
  EXPECT_TRUE(v["verified"].is_null());
  EXPECT_TRUE(v["max_abs_err_output"].is_null());
  BenchRecord back;
  ASSERT_TRUE(from_json(v, &back).is_ok());
  EXPECT_FALSE(back.verify_ran);
  const std::string row = to_csv_row(r);
  EXPECT_NE(row.find(",,,dsa_decode"), std::string::npos) << row;  // verified and both errors empty, then op
}

TEST(BenchRecordTest, RecordsWithoutAnOpTakeItFromTheKernelKey) {
  json::Value v = to_json(sample_record("contest-01", 10));
  json::Value old = v;
  old.erase("op");
  BenchRecord back;
  ASSERT_TRUE(from_json(old, &back).is_ok());
  EXPECT_EQ(back.op, "dsa_decode");
}

TEST(BenchRecordTest, MadeFromAWorkloadARunAndTheOpsOutputs) {
  WorkloadInfo w;
  w.name = "serving-T16";
  w.shape = "T=16 H=16 ckv=512 kpe=64 pages=10240 ps=64 topk=2048";
  w.num_tokens = 16;
  w.cost.rows = 16 * 2048;
  w.cost.gathered_bytes = 16.0 * 2048 * 1152;
  w.cost.flops = 1e9;
  TimingResult t;
  t.median_us = 24;
  t.method = "cupti";
  VerifyResult v;
  v.outputs = {{"output", {}}, {"lse", {}}};
  v.outputs[0].report.max_abs_err = 0.015625;
  v.outputs[1].report.max_abs_err = 1e-6;
  DeviceFacts h200;
  ASSERT_TRUE(find_known_device("h200", &h200).is_ok());
  const BenchRun run{"suite dsa-serving", "dsa_decode", "dsa_decode.v1_splitk.bf16", "s1n64x2m4"};
  BenchRecord r = make_bench_record(run, w, h200, t, 50, &v, 4000);
  EXPECT_EQ(r.op, "dsa_decode");
  EXPECT_EQ(r.version, MLAKIT_VERSION_STRING);  // mlakit's version in every record
  EXPECT_EQ(to_json(r)["version"], MLAKIT_VERSION_STRING);
  EXPECT_EQ(r.suite, "suite dsa-serving");
  EXPECT_EQ(r.tiling, "s1n64x2m4");
  EXPECT_EQ(r.shape, w.shape);
  EXPECT_EQ(r.num_tokens, 16);
  EXPECT_TRUE(r.verified);
  EXPECT_DOUBLE_EQ(r.max_abs_err_output, 0.015625);
  EXPECT_DOUBLE_EQ(r.max_abs_err_lse, 1e-6);
  EXPECT_DOUBLE_EQ(r.gbps, w.cost.gathered_bytes / 24e3);
  // An op without an lse output: its column is null in JSON and empty in CSV.
  v.outputs.pop_back();
  r = make_bench_record(run, w, h200, t, 50, &v, 4000);
  EXPECT_TRUE(std::isnan(r.max_abs_err_lse));
  EXPECT_TRUE(to_json(r)["max_abs_err_lse"].is_null());
}

TEST(BenchRecordTest, FromJsonNamesAWrongType) {
  json::Value v;
  ASSERT_TRUE(json::parse(R"({"median_us": "fast"})", &v).is_ok());
  BenchRecord r;
  const Status st = from_json(v, &r, "line 3");
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("line 3.median_us"), std::string::npos) << st.message();
}

TEST(BenchRecordTest, CsvRowMatchesTheHeaderAndQuotes) {
  BenchRecord r = sample_record("contest-01", 10);
  r.workload = "odd, \"name\"";
  const std::string header = csv_header();
  const std::string row = to_csv_row(r);
  EXPECT_NE(row.find("\"odd, \"\"name\"\"\""), std::string::npos) << row;
  // Count fields outside quotes.
  auto fields = [](const std::string& s) {
    int n = 1;
    bool quoted = false;
    for (char c : s) {
      if (c == '"') quoted = !quoted;
      else if (c == ',' && !quoted) ++n;
    }
    return n;
  };
  EXPECT_EQ(fields(row), fields(header));
  EXPECT_EQ(header.find('\n'), std::string::npos);
}

TEST(BenchRecordTest, AppendWritesJsonLinesAndOneCsvHeader) {
  TempDir dir;
  const std::string out = dir.file("out/nested");
  ASSERT_TRUE(append_bench_records(out, {sample_record("a", 1), sample_record("b", 2)}).is_ok());
  ASSERT_TRUE(append_bench_records(out, {sample_record("a", 3)}).is_ok());
  const auto jl = lines_of(read_text(out + "/bench.jsonl"));
  ASSERT_EQ(jl.size(), 3u);
  const auto csv = lines_of(read_text(out + "/bench.csv"));
  ASSERT_EQ(csv.size(), 4u);
  EXPECT_EQ(csv[0], csv_header());
  EXPECT_NE(csv[1], csv_header());

  std::vector<BenchRecord> back;
  ASSERT_TRUE(read_bench_jsonl(out + "/bench.jsonl", &back).is_ok());
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[2].workload, "a");
  EXPECT_DOUBLE_EQ(back[2].median_us, 3);

  const auto latest = latest_records(back);
  ASSERT_EQ(latest.size(), 2u);
  EXPECT_EQ(latest[0].workload, "a");
  EXPECT_DOUBLE_EQ(latest[0].median_us, 3);  // the newer "a", in the place of the first
  EXPECT_EQ(latest[1].workload, "b");

  const std::string table = format_bench_table(latest);
  EXPECT_NE(table.find("a "), std::string::npos);
  EXPECT_NE(table.find("mean span"), std::string::npos);
  EXPECT_NE(table.find("2.50 us"), std::string::npos) << table;  // (3 + 2) / 2
}

TEST(BenchRecordTest, ForeignCsvHeaderIsRefused) {
  TempDir dir;
  std::ofstream(dir.file("bench.csv")) << "a,b,c\n1,2,3\n";
  const Status st = append_bench_records(dir.str(), {sample_record("a", 1)});
  EXPECT_EQ(st.code(), Code::kIoError);
  EXPECT_NE(st.message().find("bench.csv"), std::string::npos) << st.message();
}

TEST(BenchRecordTest, BadJsonLineIsNamed) {
  TempDir dir;
  const std::string path = dir.file("bench.jsonl");
  std::ofstream(path) << to_json(sample_record("a", 1)).dump() << "\n{oops\n";
  std::vector<BenchRecord> back;
  const Status st = read_bench_jsonl(path, &back);
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("line 2"), std::string::npos) << st.message();
}

TEST(BenchRecordTest, GitRevisionAndTimestamp) {
  EXPECT_FALSE(git_revision().empty());  // a revision or "unknown", never empty
  const std::string t = utc_timestamp();
  ASSERT_EQ(t.size(), 20u) << t;
  EXPECT_EQ(t[4], '-');
  EXPECT_EQ(t[10], 'T');
  EXPECT_EQ(t.back(), 'Z');
}

// --- the copy ceiling's cache (reading only: measuring needs a GPU) ----------------------------

TEST(CeilingCache, ReadsTheEntryOfADeviceName) {
  TempDir dir;
  const std::string path = dir.file("ceiling.json");
  std::ofstream(path) << R"({"format": "mlakit.ceiling", "version": 1, "devices": {
      "NVIDIA H200": {"copy_gbps": 4049.3, "bytes": 1073741824, "repeats": 10,
                      "measured": "2026-11-20T08:00:00Z", "git": "abc"}}})";
  CopyCeiling c;
  ASSERT_TRUE(cached_copy_ceiling("NVIDIA H200", &c, path).is_ok());
  EXPECT_DOUBLE_EQ(c.gbps, 4049.3);
  EXPECT_DOUBLE_EQ(c.bytes, 1073741824.0);
  EXPECT_EQ(c.repeats, 10);
  EXPECT_EQ(c.measured, "2026-11-20T08:00:00Z");
  EXPECT_TRUE(c.from_cache);
  EXPECT_EQ(c.path, path);
  const Status st = cached_copy_ceiling("NVIDIA H100 80GB HBM3", &c, path);
  EXPECT_EQ(st.code(), Code::kNotFound);
  EXPECT_NE(st.message().find("H100"), std::string::npos) << st.message();
}

TEST(CeilingCache, MissingOrForeignFiles) {
  TempDir dir;
  CopyCeiling c;
  EXPECT_EQ(cached_copy_ceiling("NVIDIA H200", &c, dir.file("none.json")).code(), Code::kNotFound);
  const std::string path = dir.file("ceiling.json");
  std::ofstream(path) << R"({"format": "something else", "version": 1, "devices": {}})";
  Status st = cached_copy_ceiling("NVIDIA H200", &c, path);
  EXPECT_EQ(st.code(), Code::kIoError);
  EXPECT_NE(st.message().find("mlakit.ceiling"), std::string::npos) << st.message();
  std::ofstream(path) << R"({"format": "mlakit.ceiling", "version": 1, "devices": {"NVIDIA H200": {"copy_gbps": -1}}})";
  st = cached_copy_ceiling("NVIDIA H200", &c, path);
  EXPECT_EQ(st.code(), Code::kIoError);
  EXPECT_NE(st.message().find("copy_gbps"), std::string::npos) << st.message();
}

// --- the bf16 tensor peak beside it (the cache; measuring needs a GPU) -------------------------

MatmulCeiling sample_peak(const std::string& device) {
  MatmulCeiling m;
  m.device = device;
  m.tflops = 812.44;
  m.m = 8192;
  m.n = 8192;
  m.k = 16384;
  m.library = "cuBLAS 13.0.2";
  m.method = "cupti";
  m.iters = 20;
  m.sm_clock_mhz = 1755;
  m.throttle = "sw_power_cap";
  m.measured = "2026-11-21T10:00:01Z";
  return m;
}

TEST(CeilingCache, TheTensorPeakRoundTripsBesideTheCopyFigure) {
  TempDir dir;
  const std::string path = dir.file("sub/ceiling.json");
  CopyCeiling copy;
  copy.device = "NVIDIA H200";
  copy.gbps = 4049.34;
  copy.bytes = 1073741824;
  copy.repeats = 10;
  copy.measured = "2026-11-21T10:00:00Z";
  ASSERT_TRUE(store_copy_ceiling(copy, path).is_ok());
  ASSERT_TRUE(store_matmul_ceiling(sample_peak("NVIDIA H200"), path).is_ok());

  MatmulCeiling m;
  ASSERT_TRUE(cached_matmul_ceiling("NVIDIA H200", &m, path).is_ok());
  EXPECT_DOUBLE_EQ(m.tflops, 812.4);  // written to 1 decimal
  EXPECT_EQ(m.m, 8192);
  EXPECT_EQ(m.n, 8192);
  EXPECT_EQ(m.k, 16384);
  EXPECT_EQ(m.library, "cuBLAS 13.0.2");
  EXPECT_EQ(m.method, "cupti");
  EXPECT_EQ(m.iters, 20);
  EXPECT_EQ(m.sm_clock_mhz, 1755);
  EXPECT_EQ(m.throttle, "sw_power_cap");
  EXPECT_EQ(m.measured, "2026-11-21T10:00:01Z");
  EXPECT_EQ(m.device, "NVIDIA H200");
  EXPECT_EQ(m.path, path);
  EXPECT_TRUE(m.from_cache);

  // Storing one figure keeps the other, in either order.
  CopyCeiling c;
  ASSERT_TRUE(cached_copy_ceiling("NVIDIA H200", &c, path).is_ok());
  EXPECT_DOUBLE_EQ(c.gbps, 4049.3);
  EXPECT_EQ(c.measured, "2026-11-21T10:00:00Z");
  copy.gbps = 4100;
  ASSERT_TRUE(store_copy_ceiling(copy, path).is_ok());
  ASSERT_TRUE(cached_matmul_ceiling("NVIDIA H200", &m, path).is_ok());
  EXPECT_DOUBLE_EQ(m.tflops, 812.4);
  ASSERT_TRUE(cached_copy_ceiling("NVIDIA H200", &c, path).is_ok());
  EXPECT_DOUBLE_EQ(c.gbps, 4100);

  // A device with only a tensor peak has no copy ceiling (not found, not a corrupt file), and
  // the first device's entry is untouched.
  ASSERT_TRUE(store_matmul_ceiling(sample_peak("NVIDIA H100 80GB HBM3"), path).is_ok());
  const Status st = cached_copy_ceiling("NVIDIA H100 80GB HBM3", &c, path);
  EXPECT_EQ(st.code(), Code::kNotFound) << st.to_string();
  EXPECT_TRUE(cached_matmul_ceiling("NVIDIA H100 80GB HBM3", &m, path).is_ok());
  EXPECT_TRUE(cached_copy_ceiling("NVIDIA H200", &c, path).is_ok());
}

TEST(CeilingCache, AFileOfTheCopyFigureOnlyHasNoTensorPeak) {
  TempDir dir;
  const std::string path = dir.file("ceiling.json");
  std::ofstream(path) << R"({"format": "mlakit.ceiling", "version": 1, "devices": {
      "NVIDIA H200": {"copy_gbps": 4049.3, "bytes": 1073741824, "repeats": 10}}})";
  MatmulCeiling m;
  Status st = cached_matmul_ceiling("NVIDIA H200", &m, path);
  EXPECT_EQ(st.code(), Code::kNotFound) << st.to_string();
  EXPECT_NE(st.message().find("bf16 tensor peak"), std::string::npos) << st.message();
  EXPECT_EQ(cached_matmul_ceiling("NVIDIA H200", &m, dir.file("none.json")).code(), Code::kNotFound);
  // A figure that is no positive number is an error naming the field.
  std::ofstream(path) << R"({"format": "mlakit.ceiling", "version": 1, "devices": {
      "NVIDIA H200": {"copy_gbps": 4049.3, "bf16_matmul": {"tflops": 0}}}})";
  st = cached_matmul_ceiling("NVIDIA H200", &m, path);
  EXPECT_EQ(st.code(), Code::kIoError);
  EXPECT_NE(st.message().find("bf16_matmul.tflops"), std::string::npos) << st.message();
  std::ofstream(path) << R"({"format": "mlakit.ceiling", "version": 1, "devices": {
      "NVIDIA H200": {"bf16_matmul": {"tflops": 800, "m": "big"}}}})";
  st = cached_matmul_ceiling("NVIDIA H200", &m, path);
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("bf16_matmul.m"), std::string::npos) << st.message();
}

// cuBLAS is opened at run time; the toolkit's library and every entry point the GEMM uses are
// found without a GPU.
TEST(CeilingCache, CublasLoads) {
  const Status st = load_cublas();
  EXPECT_TRUE(st.is_ok()) << st.to_string();
}

// --- timer statistics and span grouping --------------------------------------------------------

TEST(TimerStats, MedianPercentilesMean) {
  SampleStats s = summarize_samples({5, 1, 3, 2, 4});
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_DOUBLE_EQ(s.p10, 1.4);  // numpy.percentile([1..5], 10)
  EXPECT_DOUBLE_EQ(s.p90, 4.6);
  s = summarize_samples({4, 1, 3, 2});
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  s = summarize_samples({7});
  EXPECT_DOUBLE_EQ(s.median, 7);
  EXPECT_DOUBLE_EQ(s.p10, 7);
  EXPECT_DOUBLE_EQ(s.p90, 7);
  s = summarize_samples({});
  EXPECT_EQ(s.median, 0);
}

ActivityRecord act(uint64_t start, uint64_t end, uint32_t corr, ActivityMarker m = ActivityMarker::kNone) {
  return {start, end, corr, m};
}

TEST(CuptiSpans, ByCorrelationExcludesFlushAndBusyWait) {
  // Window 1: kernels corr 11 (1000..3000) and 12 (3500..6000) -> span 5 us, gap included.
  // Window 2: one kernel corr 21 (20000..24000) -> 4 us. Markers and unrelated work ignored.
  const std::vector<ActivityRecord> acts = {
      act(0, 900, 10, ActivityMarker::kL2Flush), act(900, 1000, 10, ActivityMarker::kBusyWait),
      act(1000, 3000, 11), act(3500, 6000, 12), act(10000, 19000, 20, ActivityMarker::kL2Flush),
      act(20000, 24000, 21), act(50000, 90000, 99)};
  const std::vector<CorrelationRecord> corrs = {{11, 1}, {12, 1}, {21, 2}, {13, 1}};
  WindowSpans w;
  ASSERT_TRUE(group_window_spans(acts, corrs, 2, &w).is_ok());
  EXPECT_FALSE(w.by_stream_order);
  ASSERT_EQ(w.spans_us.size(), 2u);
  EXPECT_DOUBLE_EQ(w.spans_us[0], 5.0);
  EXPECT_DOUBLE_EQ(w.spans_us[1], 4.0);
  EXPECT_EQ(w.activities, (std::vector<int>{2, 1}));
}

TEST(CuptiSpans, StreamOrderFallbackStartsAWindowAtEachBusyWait) {
  const std::vector<ActivityRecord> acts = {
      act(20000, 24000, 0), act(0, 900, 0, ActivityMarker::kL2Flush),
      act(900, 1000, 0, ActivityMarker::kBusyWait), act(3500, 6000, 0), act(1000, 3000, 0),
      act(10000, 19000, 0, ActivityMarker::kL2Flush), act(19000, 19900, 0, ActivityMarker::kBusyWait)};
  WindowSpans w;
  ASSERT_TRUE(group_window_spans(acts, {}, 2, &w).is_ok());
  EXPECT_TRUE(w.by_stream_order);
  EXPECT_DOUBLE_EQ(w.spans_us[0], 5.0);
  EXPECT_DOUBLE_EQ(w.spans_us[1], 4.0);
}

TEST(CuptiSpans, EmptyWindowOrMissingTimestampsFail) {
  WindowSpans w;
  Status st = group_window_spans({act(1000, 2000, 11)}, {{11, 1}}, 2, &w);
  EXPECT_EQ(st.code(), Code::kDeviceError);
  EXPECT_NE(st.message().find("timed call 1"), std::string::npos) << st.message();
  st = group_window_spans({act(0, 2000, 11)}, {{11, 1}}, 1, &w);
  EXPECT_EQ(st.code(), Code::kDeviceError);
  EXPECT_NE(st.message().find("timestamps"), std::string::npos) << st.message();
  st = group_window_spans({}, {}, 0, &w);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
}

TEST(Throttle, NamesTheReasonsAndDropsIdle) {
  EXPECT_EQ(describe_throttle(0), "none");
  EXPECT_EQ(describe_throttle(0x1), "none");
  EXPECT_EQ(describe_throttle(0x4 | 0x40), "sw_power_cap,hw_thermal_slowdown");
  EXPECT_EQ(describe_throttle(0x1000), "other:0x1000");
  // Every reason of nvml.h's nvmlClocksEventReasonAll (0x1ff in the pinned 13.0 header) has a name.
  EXPECT_EQ(describe_throttle(0x80 | 0x100), "hw_power_brake_slowdown,display_clock_setting");
  EXPECT_EQ(describe_throttle(0x1ff).find("other"), std::string::npos) << describe_throttle(0x1ff);
}

// --- profiling helpers --------------------------------------------------------------------------

TEST(Profiling, ParsesModes) {
  ProfMode m = ProfMode::kDisabled;
  EXPECT_TRUE(parse_prof_mode("annotation", &m).is_ok());
  EXPECT_EQ(m, ProfMode::kAnnotation);
  EXPECT_TRUE(parse_prof_mode("ncu", &m).is_ok());
  EXPECT_STREQ(prof_mode_name(m), "ncu");
  EXPECT_TRUE(runs_under_ncu(m));
  EXPECT_TRUE(ncu_mode_args(m).empty());
  EXPECT_TRUE(parse_prof_mode("ncu-stalls", &m).is_ok());
  EXPECT_EQ(m, ProfMode::kNcuStalls);
  EXPECT_STREQ(prof_mode_name(m), "ncu-stalls");
  EXPECT_TRUE(runs_under_ncu(m));
  EXPECT_FALSE(runs_under_ncu(ProfMode::kAnnotation));
  EXPECT_FALSE(runs_under_ncu(ProfMode::kDisabled));
  const Status st = parse_prof_mode("nsys", &m);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("disabled, annotation, ncu or ncu-stalls"), std::string::npos);
}

TEST(Profiling, NcuStallsRecordsTheSamplingSections) {
  NcuOptions o;
  o.kernel_regex = "h64";
  o.report_path = "out/prof/y";
  o.extra_args = ncu_mode_args(ProfMode::kNcuStalls);
  const std::vector<std::string> argv = {"/b/mlakit", "run", "--prof", "ncu-stalls", "--t", "128"};
  const auto cmd = ncu_command_line("/usr/bin/ncu", argv, o);
  const std::vector<std::string> expect = {
      "/usr/bin/ncu", "--clock-control", "none", "--kernel-name", "regex:h64", "--launch-skip", "0",
      "--launch-count", "1", "-f", "-o", "out/prof/y", "--section", "SourceCounters", "--section",
      "WarpStateStats", "/b/mlakit", "run", "--t", "128"};
  EXPECT_EQ(cmd, expect);
}

TEST(Profiling, NcuCommandLineDropsProfAndKeepsTheRest) {
  NcuOptions o;
  o.kernel_regex = "dsa_.*";
  o.launch_skip = 10;
  o.launch_count = 2;
  o.report_path = "out/prof/x";
  const std::vector<std::string> argv = {"/b/mlakit", "bench", "--prof", "ncu", "--suite",
                                         "dsa-contest", "--prof=ncu", "--iters", "5"};
  EXPECT_EQ(strip_prof_args(argv),
            (std::vector<std::string>{"/b/mlakit", "bench", "--suite", "dsa-contest", "--iters", "5"}));
  const auto cmd = ncu_command_line("/usr/bin/ncu", argv, o);
  const std::vector<std::string> expect = {
      "/usr/bin/ncu", "--clock-control", "none", "--kernel-name", "regex:dsa_.*", "--launch-skip", "10",
      "--launch-count", "2", "-f", "-o", "out/prof/x", "/b/mlakit", "bench", "--suite", "dsa-contest",
      "--iters", "5"};
  EXPECT_EQ(cmd, expect);
}

TEST(Profiling, CurrentCommandLineIsThisBinary) {
  std::vector<std::string> argv;
  ASSERT_TRUE(current_command_line(&argv).is_ok());
  ASSERT_FALSE(argv.empty());
  EXPECT_TRUE(fs::exists(argv[0])) << argv[0];
}

TEST(Profiling, FindNcuSaysWhereItLooked) {
  std::string path;
  const Status st = find_ncu(&path);
  if (st) {
    EXPECT_FALSE(path.empty());
  } else {
    EXPECT_EQ(st.code(), Code::kNotFound);
    EXPECT_NE(st.message().find("/usr/local/cuda/bin/ncu"), std::string::npos) << st.message();
  }
}

TEST(Profiling, NvtxRangesAreNoOpsUnlessEnabled) {
  EXPECT_FALSE(nvtx_enabled());
  { ScopedNvtxRange r("off"); }
  set_nvtx_enabled(true);
  { ScopedNvtxRange r("on"); }  // no tool attached: still harmless
  set_nvtx_enabled(false);
  EXPECT_FALSE(nvtx_enabled());
}

// --- CLI ----------------------------------------------------------------------------------------

struct CliResult {
  int code = -1;
  std::string output;
};

// `env`: a shell prefix, "PATH=/x:$PATH".
CliResult run_cli(const std::string& args, const std::string& env = "") {
  CliResult r;
  const std::string cmd = env + " " + std::string(MLAKIT_CLI_PATH) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) r.output += buf;
  const int st = pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

bool cli_built() { return fs::exists(MLAKIT_CLI_PATH); }

TEST(Cli, TuneArgumentErrors) {
  if (!cli_built()) GTEST_SKIP() << "CLI not built";
  CliResult r = run_cli("tune --bogus 1");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("unknown option --bogus"), std::string::npos) << r.output;
  r = run_cli("tune --iters 0");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--iters"), std::string::npos) << r.output;
  r = run_cli("tune --device h200");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--dry-run"), std::string::npos) << r.output;
}

TEST(Cli, TuneDryRunListsSkipReasonsWithoutWriting) {
  if (!cli_built()) GTEST_SKIP() << "CLI not built";
  TempDir dir;
  const CliResult r = run_cli("tune --dry-run --device h200 --suite dsa-contest --cache " + dir.file("t.json"));
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("bucket 1/"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir.file("t.json")));
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(Cli, ReportOfAMissingFileSaysSoOnce) {
  if (!cli_built()) GTEST_SKIP() << "CLI not built";
  TempDir dir;
  const CliResult r = run_cli("report --in " + dir.file("none.jsonl"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_EQ(count(r.output, "none.jsonl"), 1u) << r.output;
  EXPECT_EQ(count(r.output, "\n"), 1u) << r.output;  // one message
}

// A stand-in for python3 on PATH: `body` is its shell script.
std::string fake_python(const TempDir& dir, const std::string& body) {
  std::ofstream(dir.file("python3")) << "#!/bin/sh\n" << body << "\n";
  fs::permissions(dir.file("python3"), fs::perms::owner_all);
  return "PATH=" + dir.str() + ":$PATH MLAKIT_SOURCE_DIR=" + MLAKIT_SOURCE_DIR;
}

// Issue 13: `report --png out.txt` ended in matplotlib's traceback (it picks the format by suffix).
TEST(Cli, ReportRefusesAPictureThatIsNoPngBeforeAnyWork) {
  if (!cli_built()) GTEST_SKIP() << "CLI not built";
  TempDir dir;
  ASSERT_TRUE(append_bench_records(dir.str(), {sample_record("contest-03", 11)}).is_ok());
  CliResult r = run_cli("report --in " + dir.file("bench.jsonl") + " --png " + dir.file("out.txt"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--png " + dir.file("out.txt") + ": expected a file name ending in .png"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("contest-03"), std::string::npos) << r.output;  // refused before the table
  r = run_cli("report --in " + dir.file("bench.jsonl") + " --png " + dir.file("no/such/folder/x.png"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("no folder " + dir.file("no/such/folder")), std::string::npos) << r.output;
}

// Issue 13: matplotlib's absence was reported twice (the script's line, then the CLI's).
TEST(Cli, ReportSaysOnceThatMatplotlibIsMissing) {
  if (!cli_built()) GTEST_SKIP() << "CLI not built";
  TempDir dir, bin;
  ASSERT_TRUE(append_bench_records(dir.str(), {sample_record("contest-03", 11)}).is_ok());
  const char* real = std::getenv("PATH");
  ASSERT_NE(real, nullptr);
  // python3 -S: no site-packages, so matplotlib cannot be imported wherever it is installed.
  const std::string env = fake_python(bin, "PATH='" + std::string(real) + "'; export PATH; exec python3 -S \"$@\"");
  const CliResult r = run_cli("report --in " + dir.file("bench.jsonl") + " --png " + dir.file("x.png"), env);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_EQ(count(r.output, "matplotlib"), 2u) << r.output;  // one line: "matplotlib ... pip install matplotlib"
  EXPECT_NE(r.output.find("mlakit: report: no picture: matplotlib is not installed"), std::string::npos) << r.output;
}

// A plot script that fails is quoted in one line: its reason, never its traceback.
TEST(Cli, ReportQuotesAFailingPlotScriptInOneLine) {
  if (!cli_built()) GTEST_SKIP() << "CLI not built";
  TempDir dir, bin;
  ASSERT_TRUE(append_bench_records(dir.str(), {sample_record("contest-03", 11)}).is_ok());
  const std::string env = fake_python(bin,
                                      "echo 'Traceback (most recent call last):' >&2\n"
                                      "echo '  File \"plot_report.py\", line 9' >&2\n"
                                      "echo 'ValueError: Format \"txt\" is not supported' >&2\nexit 1");
  const CliResult r = run_cli("report --in " + dir.file("bench.jsonl") + " --png " + dir.file("x.png"), env);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_EQ(r.output.find("Traceback"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("failed (exit code 1): ValueError: Format \"txt\" is not supported\n"), std::string::npos)
      << r.output;
}

TEST(Cli, ReportPrintsTheTable) {
  if (!cli_built()) GTEST_SKIP() << "CLI not built";
  TempDir dir;
  ASSERT_TRUE(append_bench_records(dir.str(), {sample_record("contest-03", 11), sample_record("contest-04", 13)}).is_ok());
  const CliResult r = run_cli("report --in " + dir.file("bench.jsonl"));
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("contest-04"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("12.00 us"), std::string::npos) << r.output;
}

TEST(Cli, CeilingArgumentErrors) {
  if (!cli_built()) GTEST_SKIP() << "CLI not built";
  const CliResult r = run_cli("ceiling --device x");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--device"), std::string::npos) << r.output;
}

// The help names every GEMM shape the tensor peak is measured on.
TEST(Cli, CeilingHelpNamesTheTensorPeakShapes) {
  if (!cli_built()) GTEST_SKIP() << "CLI not built";
  const CliResult r = run_cli("ceiling --help");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("bf16 dense tensor peak"), std::string::npos) << r.output;
  int count = 0;
  const GemmShape* shapes = matmul_ceiling_shapes(&count);
  ASSERT_GT(count, 0);
  for (int i = 0; i < count; ++i) {
    const std::string shape = std::to_string(shapes[i].m) + "x" + std::to_string(shapes[i].n) + "x" +
                              std::to_string(shapes[i].k);
    EXPECT_NE(r.output.find(shape), std::string::npos) << shape << "\n" << r.output;
  }
}

TEST(Cli, CeilingWithoutAGpuMeasuresNothing) {
  if (!cli_built()) GTEST_SKIP() << "CLI not built";
  if (device_count() > 0) GTEST_SKIP() << "a CUDA device is visible: `ceiling` would measure it";
  TempDir dir;
  const CliResult r = run_cli("ceiling --cache " + dir.file("ceiling.json"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("no CUDA device is visible; nothing to measure"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir.file("ceiling.json")));
}

}  // namespace
}  // namespace mlakit
