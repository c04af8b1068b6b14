// `mlakit tune`: autotunes a kernel's tiling per shape bucket of a suite and writes the winners
// to the tune cache that dsa_plan reads (docs/workbench.md, "Autotuning").
#include <algorithm>
#include <cstdio>

#include "common.h"
#include "runtime/tune_cache.h"
#include "workbench/tuner.h"

namespace mlakit::cli {
namespace {

const char* kTuneUsage =
    "usage: mlakit tune [KERNEL] [--suite NAME] [--seed S] [--cache PATH] [--iters N] [--warmup N]\n"
    "                   [--no-verify] [--verbose] [--dry-run [--device NAME]]\n\n"
    "For each shape bucket of the suite (T rounded up to a power of two, heads, widths, page size,\n"
    "topk), verifies and times every valid tiling of KERNEL's search space on the bucket's\n"
    "workloads (cold L2, median span) and stores the one with the lowest mean span in the tune\n"
    "cache, keyed by device name, kernel key and bucket. Tilings that do not validate, fail to\n"
    "launch or fail verification are skipped with their reason.\n\n"
    "  KERNEL        registry key (default: the default kernel; or --kernel KEY)\n"
    "  --suite NAME  dsa-contest (default), dsa-serving, dsa-edge\n"
    "  --cache PATH  tune cache file (default $MLAKIT_CACHE_DIR, $XDG_CACHE_HOME/mlakit or\n"
    "                ~/.cache/mlakit, + /tune.json)\n"
    "  --iters N     timed calls per (tiling, workload), default 50; --warmup N, default 10\n"
    "  --dry-run     enumerate and validate only (no GPU needed): against the live device, or\n"
    "                --device NAME from the known-device table (default h200)";

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
    std::printf("  %zu. %-14s %9.2f us\n", i + 1, timed[i]->tiling.name().c_str(), timed[i]->mean_us);
  if (b.default_us > 0) std::printf("     %-14s %9.2f us\n", "(defaults)", b.default_us);
  std::printf("  %s\n", b.decision.c_str());
}

int run_tune(Args& args) {
  const std::string positional = args.positional().empty() ? "" : args.positional()[0];
  const DsaKernel* kernel = resolve_kernel(args, positional);
  TuneOptions o;
  o.suite = args.get_or("suite", "dsa-contest");
  o.seed = uint64_t(args.get_int("seed", 1, 0, 1ll << 62));
  o.cache_path = args.get_or("cache", "");
  o.timing.iters = int(args.get_int("iters", 50, 1, 100000));
  o.timing.warmup = int(args.get_int("warmup", 10, 0, 100000));
  o.verify = !args.has("no-verify");
  o.verbose = args.has("verbose");
  o.dry_run = args.has("dry-run");
  if (args.positional().size() > 1) args.error("expected at most one kernel key, got " + args.positional()[1]);
  if (args.has("device") && !o.dry_run) args.error("--device NAME only applies with --dry-run");
  if (args.has("cache") && o.cache_path.empty()) args.error("--cache: expected a file path, got ''");
  args.reject_unknown({"kernel", "suite", "seed", "cache", "iters", "warmup", "no-verify", "verbose",
                       "dry-run", "device"});
  if (!args.ok()) return args.fail_usage(kTuneUsage);

  if (o.dry_run && (args.has("device") || device_count() == 0)) {
    if (Status s = find_known_device(args.get_or("device", "h200"), &o.device); !s) {
      std::fprintf(stderr, "mlakit: --device: %s\n", s.message().c_str());
      return kExitUsage;
    }
  } else if (Status gate = gpu_gate(*kernel, &o.device); !gate) {
    if (o.dry_run) {
      std::fprintf(stderr, "mlakit: %s\n", gate.message().c_str());
    } else {
      std::fprintf(stderr,
                   "mlakit: tuning needs a GPU the kernel runs on: %s\n"
                   "(--dry-run --device h200 lists the search space and the skip reasons without one)\n",
                   gate.message().c_str());
    }
    return kExitFailure;
  }
  if (!o.cache_path.empty()) set_tune_cache_path(o.cache_path);

  std::printf("tune %s on %s, suite %s, seed %llu%s\n", kernel->info().key.c_str(),
              o.device.describe().c_str(), o.suite.c_str(), (unsigned long long)o.seed,
              o.dry_run ? " (dry run)" : "");
  o.log = [](const std::string& line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  };
  TuneReport report;
  const Status st = tune_dsa(*kernel, o, &report);
  if (!o.dry_run)
    for (const TuneBucketResult& b : report.buckets) print_ranking(b);
  if (!st) {
    std::fprintf(stderr, "mlakit: tune: %s\n", st.to_string().c_str());
    return st.code() == Code::kNotFound || st.code() == Code::kInvalidArgument ? kExitUsage : kExitFailure;
  }
  if (!o.dry_run) {
    int written = 0;
    for (const TuneBucketResult& b : report.buckets) written += b.written;
    std::printf("\n%d of %zu buckets written to %s\n", written, report.buckets.size(),
                report.cache_path.c_str());
  }
  return kExitOk;
}

}  // namespace

MLAKIT_CLI_COMMAND(tune, "tune", "autotune a kernel's tiling per shape bucket (writes the tune cache)",
                   kTuneUsage, run_tune, {"no-verify", "verbose", "dry-run"});

}  // namespace mlakit::cli
