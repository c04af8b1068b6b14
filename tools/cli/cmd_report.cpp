// `mlakit report`: the table of a bench JSON Lines file, and its picture.
#include <cstdio>

#include "cli.h"
#include "workbench/report.h"

namespace mlakit::cli {
namespace {

const char* kReportUsage =
    "usage: mlakit report [--in FILE] [--png FILE] [--all]\n\n"
    "Prints the records of a bench JSON Lines file (default out/bench.jsonl, written by\n"
    "`mlakit bench --out DIR`): the newest record per (device, kernel, tiling, suite, workload),\n"
    "or every record with --all, and the mean span per kernel/tiling/suite. --png FILE also draws\n"
    "latency per workload and bandwidth against the copy ceiling (scripts/plot_report.py,\n"
    "python3 + matplotlib).";

int run_report(Args& args) {
  std::string in = "out/bench.jsonl", png;
  bool all = false;
  args.text("--in", &in);
  args.text("--png", &png);
  args.flag("--all", &all);
  if (!args.parse()) return args.finish(kReportUsage);
  if (args.given("--png") && png.empty()) args.error("--png: expected a file path, got ''");
  if (!args.ok()) return args.finish(kReportUsage);

  std::vector<BenchRecord> records;
  if (Status st = read_bench_jsonl(in, &records); !st) {
    std::fprintf(stderr, "mlakit: report: %s\n", st.message().c_str());
    if (st.code() == Code::kIoError)
      std::fprintf(stderr, "(bench results are appended there by `mlakit bench --out DIR`)\n");
    return kExitFailure;
  }
  if (records.empty()) {
    std::fprintf(stderr, "mlakit: report: %s holds no records\n", in.c_str());
    return kExitFailure;
  }
  const std::vector<BenchRecord> shown = all ? records : latest_records(records);
  std::printf("%s: %zu records%s\n", in.c_str(), records.size(),
              all ? "" : (", newest per configuration: " + std::to_string(shown.size())).c_str());
  std::printf("%s", format_bench_table(shown).c_str());
  if (png.empty()) return kExitOk;
  if (Status st = render_report_png(in, png); !st) {
    std::fprintf(stderr, "mlakit: report: no picture: %s\n", st.message().c_str());
    return kExitFailure;
  }
  std::printf("picture: %s\n", png.c_str());
  return kExitOk;
}

}  // namespace

MLAKIT_CLI_COMMAND(report, "report", "table and picture of bench results (JSON Lines)", run_report);

}  // namespace mlakit::cli
