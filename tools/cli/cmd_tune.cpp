// `mlakit tune`: autotunes a kernel's tiling per shape bucket of a suite and writes the winners
// to the tune cache that planning reads (docs/workbench.md, "Autotuning"). Any op's kernel.
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include <cuda_runtime_api.h>

#include "base/cuda_status.h"
#include "base/progress_line.h"
#include "common.h"
#include "runtime/tune_cache.h"
#include "workbench/tuner.h"

namespace mlakit::cli {
namespace {

const char* kTuneUsage =
    "usage: mlakit tune [KERNEL] [--suite NAME] [--heads H] [--kv bf16|fp8] [--seed S] [--cache PATH]\n"
    "                   [--iters N] [--warmup N] [--no-verify] [--verbose] [--quiet]\n"
    "                   [--dry-run [--device NAME]]\n\n"
    "For each shape bucket of the suite (T rounded up to a power of two, heads, widths, page size,\n"
    "topk), verifies and times every valid tiling of KERNEL's search space on the bucket's\n"
    "workloads (cold L2, median span) and stores the one with the lowest mean span in the tune\n"
    "cache, keyed by device name, kernel key and bucket. Tilings that do not validate, fail to\n"
    "launch or fail verification are skipped with their reason.\n\n"
    "  KERNEL        registry key (default: the registry default of the suite's op; or --kernel KEY)\n"
    "  --suite NAME  dsa-contest (default), dsa-serving, dsa-edge, mla-serving, mla-edge; the suite\n"
    "                names the op\n"
    "  --heads H     every workload of the suite with H = 16 (default), 32, 64 or 128 query heads\n"
    "                (dsa_decode)\n"
    "  --kv fp8      every workload of the suite on the FP8 cache (dsa_decode); bf16: the default\n"
    "  --cache PATH  tune cache file (default $MLAKIT_CACHE_DIR, $XDG_CACHE_HOME/mlakit or\n"
    "                ~/.cache/mlakit, + /tune.json)\n"
    "  --iters N     timed calls per (tiling, workload), default 50; --warmup N, default 10\n"
    "  --dry-run     enumerate and validate only (no GPU needed): against the live device, or\n"
    "                --device NAME from the known-device table (default h200)\n"
    "  --quiet       no progress line (shown only when stdout is a terminal)";

void print_ranking(const TuneBucketResult& b) {
  std::vector<const TuneCandidateResult*> timed;
  int skipped = 0;
  for (const auto& c : b.candidates) {
    if (c.skip_reason.empty() && c.mean_us > 0) timed.push_back(&c);
    else ++skipped;
  }
  std::sort(timed.begin(), timed.end(),
            [](const TuneCandidateResult* a, const TuneCandidateResult* c) { return a->mean_us < c->mean_us; });
  std::printf("\n%s (%zu workloads): %zu timed, %d skipped\n", b.bucket.c_str(), b.workloads.size(),
              timed.size(), skipped);
  const size_t shown = std::min<size_t>(timed.size(), 5);
  for (size_t i = 0; i < shown; ++i)
    std::printf("  %zu. %-14s %9.2f us\n", i + 1, timed[i]->tiling.c_str(), timed[i]->mean_us);
  if (b.default_us > 0) std::printf("     %-14s %9.2f us\n", "(defaults)", b.default_us);
  // What no single tiling per bucket can reach: each workload's own fastest tiling.
  if (b.best_each_us > 0) std::printf("     %-14s %9.2f us\n", "(best of each)", b.best_each_us);
  std::printf("  %s\n", b.decision.c_str());
}

// The kernel to tune: the one named, else the registry default of the suite's first workload.
Status kernel_to_tune(const Selection& sel, const TuneOptions& o, const KernelEntry** kernel) {
  *kernel = sel.kernel;
  if (*kernel != nullptr) return Status::ok();
  std::unique_ptr<BenchSuite> suite;
  MLAKIT_RETURN_IF_ERROR(sel.op->make_suite(o.suite, o.seed, &suite));
  *kernel = suite->size() ? suite->default_kernel(0) : nullptr;
  if (*kernel == nullptr)
    return Status::not_found("no registered kernel runs the first workload of " + suite_label(*sel.op, o.suite));
  return Status::ok();
}

// A dry run plans for --device NAME, for the live device, or without one for the H200 of the table.
Status dry_run_device(const std::string& name, DeviceFacts* device) {
  if (!name.empty() || device_count() == 0) return find_known_device(name.empty() ? kDryPlanDevice : name, device);
  int current = 0;
  MLAKIT_RETURN_IF_ERROR(cuda_status(cudaGetDevice(&current), "cudaGetDevice"));
  return cached_device_facts(current, device);
}

int report_tune(const TuneOptions& o, const TuneReport& report, const Status& st) {
  if (!o.dry_run)
    for (const TuneBucketResult& b : report.buckets) print_ranking(b);
  if (!st && st.code() == Code::kUnsupported && !o.dry_run)
    return fail("tuning needs a GPU the kernel runs on: " + st.message() +
                    "\n(--dry-run --device h200 lists the search space and the skip reasons without one)",
                kExitFailure);
  if (!st)
    return fail("tune: " + st.to_string(),
                st.code() == Code::kNotFound || st.code() == Code::kInvalidArgument ? kExitUsage : kExitFailure);
  if (!o.dry_run) {
    int written = 0;
    for (const TuneBucketResult& b : report.buckets) written += b.written;
    std::printf("\n%d of %zu buckets written to %s\n", written, report.buckets.size(), report.cache_path.c_str());
  }
  return kExitOk;
}

// What tune reads from its command line.
struct TuneArgs {
  std::string target, kernel, suite = "dsa-contest", cache, device;
  long long seed = 1, iters = 50, warmup = 10;
  bool no_verify = false, verbose = false, dry_run = false, quiet = false;
  std::map<std::string, std::string> choices;  // the suite-flavouring choices ("kv" -> "fp8")
};

void declare(Args& args, TuneArgs* t) {
  args.positional("target", &t->target);
  args.text("--kernel", &t->kernel);
  args.text("--suite", &t->suite);
  args.integer("--seed", &t->seed, 0, 1ll << 62);
  args.text("--cache", &t->cache);
  args.integer("--iters", &t->iters, 1, 100000);
  args.integer("--warmup", &t->warmup, 0, 100000);
  args.flag("--no-verify", &t->no_verify);
  args.flag("--verbose", &t->verbose);
  args.flag("--dry-run", &t->dry_run);
  args.flag("--quiet", &t->quiet);
  args.text("--device", &t->device);
  declare_suite_choices(args, &t->choices);
}

int run_tune(Args& args) {
  TuneArgs a;
  declare(args, &a);
  if (!args.parse()) return args.finish(kTuneUsage);
  TuneOptions o;
  o.seed = uint64_t(a.seed);
  o.cache_path = a.cache;
  o.timing.iters = int(a.iters);
  o.timing.warmup = int(a.warmup);
  o.verify = !a.no_verify;
  o.verbose = a.verbose;
  o.dry_run = a.dry_run;
  Selection sel;
  if (select_op(args, a.target, a.kernel, a.suite, &sel)) suite_request(args, *sel.op, a.suite, a.choices, false, &o.suite);
  if (args.given("--device") && !o.dry_run) args.error("--device NAME only applies with --dry-run");
  if (args.given("--cache") && o.cache_path.empty()) args.error("--cache: expected a file path, got ''");
  if (!args.ok()) return args.finish(kTuneUsage);
  o.op = sel.op;
  const KernelEntry* kernel = nullptr;
  if (Status s = kernel_to_tune(sel, o, &kernel); !s) return fail(s.message(), kExitUsage);
  if (o.dry_run)
    if (Status s = dry_run_device(a.device, &o.device); !s) return fail("--device: " + s.message(), kExitUsage);
  if (!o.cache_path.empty()) set_tune_cache_path(o.cache_path);
  ProgressLine progress(stdout, a.quiet);
  o.progress = [&progress](const std::string& status) { progress.show("[tune] " + status); };
  o.log = [&progress](const std::string& line) {
    progress.clear();
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  };
  TuneReport report;
  const Status st = tune(*kernel, o, &report);
  progress.clear();
  return report_tune(o, report, st);
}

}  // namespace

MLAKIT_CLI_COMMAND(tune, "tune", "autotune a kernel's tiling per shape bucket (writes the tune cache)", run_tune);

}  // namespace mlakit::cli
