// Benchmark records: one per (kernel, tiling, workload) timing, appended as a JSON line to
// <out>/bench.jsonl and a row to <out>/bench.csv; read back by `mlakit report`, which prints a
// table and draws scripts/plot_report.py's picture (latency bars, bandwidth vs the copy ceiling).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/json.h"
#include "mlakit/device.h"
#include "mlakit/status.h"
#include "plan/cost.h"
#include "workbench/op_bench.h"
#include "workbench/timer.h"
#include "workbench/verify.h"

namespace mlakit {

struct BenchRecord {
  std::string git;          // short revision of the source tree ("+dirty" when modified), "unknown"
  std::string version;      // mlakit's version (MLAKIT_VERSION_STRING; "" in records written before it)
  std::string time;         // UTC, ISO 8601
  std::string op;           // "dsa_decode" (records written before it existed: the key's prefix)
  std::string kernel_key;   // "dsa_decode.v1_splitk.bf16"
  std::string tiling;       // "s16n64x2m4"
  std::string suite;        // the run's title: "suite dsa-contest", "trace DIR", "shape T=..."
  std::string workload;     // "contest-07"
  std::string shape;        // the problem's to_string()
  int num_tokens = 0;
  std::string device;       // "NVIDIA H200"
  int sm_clock_mhz = 0;     // 0 = unknown
  std::string throttle;     // "none", a list, or "" = unknown
  std::string method;       // "cupti" / "events"
  int iters = 0;
  double median_us = 0, p10_us = 0, p90_us = 0, mean_us = 0;
  double host_us = 0;       // host time of one call
  double bytes = 0;         // gathered bytes per call (Cost::gathered_bytes)
  double flops = 0;
  double gbps = 0;          // bytes / median span
  double tflops = 0;        // flops / median span
  double ceiling_gbps = 0;  // measured copy ceiling (0 = unknown)
  double pct_of_ceiling = 0;
  // The measured bf16 dense tensor peak (0 = unknown) and tflops as % of it. JSON only: a CSV
  // column would make every existing bench.csv refuse appending.
  double peak_tflops = 0;
  double pct_of_peak = 0;
  bool verify_ran = false;
  bool verified = false;             // verification ran and passed
  // Of the outputs named "output" and "lse" when verify_ran; NaN (null / empty in the files) for
  // an op without such an output.
  double max_abs_err_output = 0;
  double max_abs_err_lse = 0;
  // The op's gather floor timed on the same workload in the same run (0 / "" = not timed).
  std::string floor_key;
  double floor_us = 0;
};

// What ran: the run's title (a suite, a trace, one shape), the op, the plan's kernel and tiling.
struct BenchRun {
  std::string suite;
  std::string op;
  std::string kernel_key;
  std::string tiling;
};

// Everything a record holds, from the parts a bench run has. `verify` may be null (not run);
// `ceiling_gbps` <= 0 leaves the % of ceiling at 0, `peak_tflops` <= 0 the % of peak.
BenchRecord make_bench_record(const BenchRun& run, const WorkloadInfo& workload,
                              const DeviceFacts& device, const TimingResult& timing, int iters,
                              const VerifyResult* verify, double ceiling_gbps, double peak_tflops = 0);
// GB/s, TFLOP/s, % of the copy ceiling and % of the tensor peak from the cost and the record's
// median.
void apply_roofline(const Cost& cost, double ceiling_gbps, BenchRecord* record, double peak_tflops = 0);

json::Value to_json(const BenchRecord& r);
// Reads a record; unknown keys are ignored, missing ones keep their defaults, a wrong type fails.
Status from_json(const json::Value& v, BenchRecord* r, const std::string& where = "record");
std::string csv_header();           // no newline; "op" is the last column (added last)
std::string to_csv_row(const BenchRecord& r);  // no newline; RFC 4180 quoting

// Creates out_dir when missing and checks that bench.jsonl and bench.csv can be appended there:
// kIoError naming the reason (not a folder, not writable, a CSV with other columns). Bench runs
// call it before any work.
Status check_bench_output(const std::string& out_dir);
// Appends to <out_dir>/bench.jsonl and <out_dir>/bench.csv (created with a header when new;
// kIoError when an existing CSV has another header). Creates out_dir.
Status append_bench_records(const std::string& out_dir, const std::vector<BenchRecord>& records);
Status read_bench_jsonl(const std::string& path, std::vector<BenchRecord>* records);

// The newest record per (device, kernel, tiling, suite, workload), in order of first appearance.
std::vector<BenchRecord> latest_records(const std::vector<BenchRecord>& records);
// A fixed-width text table of `records` (what `mlakit report` prints).
std::string format_bench_table(const std::vector<BenchRecord>& records);

// Finds scripts/plot_report.py: $MLAKIT_SOURCE_DIR/scripts, next to the executable (../scripts,
// ../../scripts), ./scripts.
Status find_plot_script(std::string* path);
// What a picture may be written to: a path ending in .png (any case) in an existing folder;
// kInvalidArgument saying which it is not. matplotlib picks the format by the suffix.
Status check_png_path(const std::string& png_path);
// Runs `python3 plot_report.py --in JSONL --png PNG` with its output captured. kNotFound when
// python3 or matplotlib is missing (the message says what to install), kIoError when the script
// failed (the message is its last line: the reason, not a traceback).
Status render_report_png(const std::string& jsonl_path, const std::string& png_path);

}  // namespace mlakit
