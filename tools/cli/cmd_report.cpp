// `mlakit report`: the table of a bench JSON Lines file, and its picture.
#include <cstdio>

#include "common.h"
#include "io/file.h"
#include "workbench/report.h"

namespace mlakit::cli {
namespace {

const char* kReportUsage =
    "usage: mlakit report [--in FILE] [--png FILE] [--all]\n\n"
    "Prints the records of a bench JSON Lines file (default out/bench.jsonl, written by\n"
    "`mlakit bench --out DIR`): the newest record per (device, kernel, tiling, suite, workload),\n"
    "or every record with --all, and the mean span per kernel/tiling/suite. --png FILE (a .png in\n"
    "an existing folder) also draws latency per workload and bandwidth against the copy ceiling\n"
    "(scripts/plot_report.py, python3 + matplotlib). Every error, the picture's included, exits 2\n"
    "with one message.";

int run_report(Args& args) {
  std::string in = "out/bench.jsonl", png;
  bool all = false;
  args.text("--in", &in);
  args.text("--png", &png);
  args.flag("--all", &all);
  if (!args.parse()) return args.finish(kReportUsage);
  if (args.given("--png"))
    if (Status s = check_png_path(png); !s) args.error("--png " + png + ": " + s.message());
  if (!args.ok()) return args.finish(kReportUsage);

  std::vector<BenchRecord> records;
  if (Status st = read_bench_jsonl(in, &records); !st)
    return fail("report: " + st.message() +
                    (st.code() == Code::kIoError && !io::file_exists(in)
                         ? " (`mlakit bench --out DIR` appends its results to DIR/bench.jsonl)"
                         : ""),
                kExitUsage);
  if (records.empty()) return fail("report: " + in + " holds no records", kExitUsage);
  const std::vector<BenchRecord> shown = all ? records : latest_records(records);
  std::printf("%s: %zu records%s\n", in.c_str(), records.size(),
              all ? "" : (", newest per configuration: " + std::to_string(shown.size())).c_str());
  std::printf("%s", format_bench_table(shown).c_str());
  if (png.empty()) return kExitOk;
  if (Status st = render_report_png(in, png); !st) return fail("report: no picture: " + st.message(), kExitUsage);
  std::printf("picture: %s\n", png.c_str());
  return kExitOk;
}

}  // namespace

MLAKIT_CLI_COMMAND(report, "report", "table and picture of bench results (JSON Lines)", run_report);

}  // namespace mlakit::cli
