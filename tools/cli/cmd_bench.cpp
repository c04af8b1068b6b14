// `mlakit bench`, `mlakit verify` and `mlakit run`: verify and time a kernel on a suite, a trace
// or one synthetic shape. Without a usable GPU they say so and run the CPU reference instead.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "common.h"
#include "io/file.h"
#include "workloads/dsa/trace.h"
#include "plan/dsa/cost.h"
#include "workbench/ceiling.h"
#include "workbench/profiling.h"
#include "workbench/report.h"
#include "workbench/session.h"

namespace mlakit::cli {
namespace {

struct SuiteOptions {
  const DsaKernel* kernel = nullptr;
  DsaTiling tiling;
  bool tiling_given = false;
  uint64_t seed = 1;
  int seeds = 1;
  bool verify = true;
  bool time = true;
  bool explain = false;
  TimingConfig timing;
  ProfMode prof = ProfMode::kDisabled;
  std::string out_dir = "out";  // bench.jsonl + bench.csv are appended here ("" = none)
};

struct Totals {
  int workloads = 0, failed = 0, errors = 0;
  double span_sum_us = 0;
  double ceiling_gbps = 0;  // measured copy ceiling, 0 = unknown
  std::vector<BenchRecord> records;
};

std::string short_result(const VerifyResult& v) {
  if (v.ok()) return "ok";
  if (!v.deterministic && v.output.ok() && v.lse.ok()) return "NONDETERMINISTIC";
  return "FAIL";
}

// The tiling used for a workload: --tiling, else what dsa_plan picks (tuned cache or default).
Status choose_tiling(const SuiteOptions& o, const DsaWorkload& w, DsaTiling* tiling) {
  if (o.tiling_given) {
    *tiling = o.tiling;
    return Status::ok();
  }
  DsaPlanOptions po;
  po.kernel_key = o.kernel->info().key;
  DsaPlan plan;
  MLAKIT_RETURN_IF_ERROR(dsa_plan(w.problem, po, &plan));
  *tiling = plan.tiling;
  return Status::ok();
}

void print_gpu_header(bool time) {
  if (time)
    std::printf("%-12s %3s %6s %-12s %9s %9s %9s %8s %6s %9s %9s %s\n", "workload", "T", "slots",
                "tiling", "span_us", "p90_us", "host_us", "GB/s", "%ceil", "err_out", "err_lse", "check");
  else
    std::printf("%-12s %3s %6s %-12s %9s %9s %s\n", "workload", "T", "slots", "tiling", "err_out",
                "err_lse", "check");
}

// Verifies (and times) one workload on the GPU; prints one table row.
void run_gpu_workload(const SuiteOptions& o, const std::string& title, const DeviceFacts& facts,
                      DsaSession& session, const DsaWorkload& w, Totals* totals) {
  ++totals->workloads;
  DsaTiling tiling;
  Status s = session.prepare(w);
  if (s.is_ok()) s = choose_tiling(o, w, &tiling);
  const DsaCost cost = dsa_cost(w.problem, valid_per_row(w));
  VerifyResult v;
  if (s.is_ok() && o.verify) s = session.verify(*o.kernel, tiling, &v);
  TimingResult t;
  TimingConfig timing = o.timing;
  timing.label = w.name;  // the NVTX range of each timed call under --prof annotation
  if (s.is_ok() && o.time) s = session.time(*o.kernel, tiling, timing, &t);
  if (!s.is_ok()) {
    ++totals->errors;
    std::printf("%-12s %3d %6lld error: %s\n", w.name.c_str(), w.problem.num_tokens,
                (long long)cost.valid_slots, s.to_string().c_str());
    return;
  }
  if (o.verify && !v.ok()) ++totals->failed;
  const std::string check = o.verify ? short_result(v) : "-";
  char err_out[32] = "-", err_lse[32] = "-";
  if (o.verify) {
    std::snprintf(err_out, sizeof err_out, "%.2e", v.output.max_abs_err);
    std::snprintf(err_lse, sizeof err_lse, "%.2e", v.lse.max_abs_err);
  }
  if (o.time) {
    totals->span_sum_us += t.median_us;
    BenchRecord rec = make_bench_record(title, w, o.kernel->info().key, tiling, facts, t, o.timing.iters,
                                        o.verify ? &v : nullptr, totals->ceiling_gbps);
    totals->records.push_back(rec);
    std::printf("%-12s %3d %6lld %-12s %9.2f %9.2f %9.2f %8.0f %6.1f %9s %9s %s\n", w.name.c_str(),
                w.problem.num_tokens, (long long)cost.valid_slots, tiling.name().c_str(), t.median_us,
                t.p90_us, t.host_us, rec.gbps, rec.pct_of_ceiling, err_out, err_lse, check.c_str());
  } else {
    std::printf("%-12s %3d %6lld %-12s %9s %9s %s\n", w.name.c_str(), w.problem.num_tokens,
                (long long)cost.valid_slots, tiling.name().c_str(), err_out, err_lse, check.c_str());
  }
  if (o.verify && !v.ok()) {
    if (!v.output.ok()) std::printf("    output: %s\n", v.output.summary().c_str());
    if (!v.lse.ok()) std::printf("    lse: %s\n", v.lse.summary().c_str());
    if (!v.deterministic) std::printf("    two runs differ bitwise\n");
  }
  if (o.explain) std::printf("    %s\n", o.kernel->explain(w.problem, tiling).c_str());
}

// No usable GPU: the CPU reference on every workload (what can run here).
int run_cpu_reference(const std::vector<DsaWorkload>& workloads, uint64_t seed) {
  std::printf("%-12s %3s %6s %11s %12s %10s\n", "workload", "T", "slots", "cpu_ref_ms", "empty_rows",
              "max_lse");
  DsaSession session(seed);
  for (const DsaWorkload& w : workloads) {
    const DsaReferenceOutput* ref = nullptr;
    Status s = session.prepare(w);  // input synthesis stays out of the reference's time
    const auto t0 = std::chrono::steady_clock::now();
    if (s.is_ok()) s = session.reference(&ref);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!s.is_ok()) {
      std::printf("%-12s error: %s\n", w.name.c_str(), s.to_string().c_str());
      return kExitFailure;
    }
    int empty = 0;
    double max_lse = -INFINITY;
    for (double l : ref->lse) {
      if (std::isinf(l)) ++empty;
      else max_lse = std::max(max_lse, l);
    }
    long long slots = 0;
    for (int v : valid_per_row(w)) slots += v;
    std::printf("%-12s %3d %6lld %11.1f %12d %10.3f\n", w.name.c_str(), w.problem.num_tokens, slots, ms,
                empty / w.problem.num_heads, max_lse);
  }
  return kExitOk;
}

int run_workloads(const SuiteOptions& o, const std::string& title, const std::vector<DsaWorkload>& workloads) {
  DeviceFacts facts;
  if (Status gate = gpu_gate(*o.kernel, &facts); !gate.is_ok()) {
    std::printf("%s\nGPU kernels skipped: %s\nShowing the CPU reference (fp64) on %s instead.\n\n",
                title.c_str(), gate.message().c_str(), title.c_str());
    return run_cpu_reference(workloads, o.seed);
  }
  std::printf("%s on %s, kernel %s%s\n", title.c_str(), facts.describe().c_str(), o.kernel->info().key.c_str(),
              o.time ? " (span = median GPU time of one call, cold L2)" : "");
  Totals totals;
  if (o.prof == ProfMode::kAnnotation) set_nvtx_enabled(true);
  if (o.time) {
    int device = 0;
    cudaGetDevice(&device);
    CopyCeiling ceiling;
    if (Status c = copy_ceiling(device, &ceiling); c.is_ok()) {
      totals.ceiling_gbps = ceiling.gbps;
      std::printf("copy ceiling %.0f GB/s (%s); GB/s = gathered rows / span\n", ceiling.gbps,
                  ceiling.from_cache ? "cached" : "measured now");
    } else {
      std::printf("copy ceiling unknown: %s\n", c.to_string().c_str());
    }
  }
  for (int k = 0; k < o.seeds; ++k) {
    if (o.seeds > 1) std::printf("-- seed %llu\n", (unsigned long long)(o.seed + k));
    print_gpu_header(o.time);
    DsaSession session(o.seed + k);
    for (const DsaWorkload& w : workloads) run_gpu_workload(o, title, facts, session, w, &totals);
  }
  if (!totals.records.empty() && !o.out_dir.empty()) {
    if (Status r = append_bench_records(o.out_dir, totals.records); r.is_ok())
      std::printf("results appended to %s/bench.jsonl and %s/bench.csv\n", o.out_dir.c_str(), o.out_dir.c_str());
    else
      std::printf("results not written: %s\n", r.to_string().c_str());
  }
  if (o.time && totals.workloads > totals.errors)
    std::printf("mean span over %d workloads: %.2f us\n", totals.workloads - totals.errors,
                totals.span_sum_us / (totals.workloads - totals.errors));
  std::printf("%d workloads, %d failed verification, %d errors\n", totals.workloads, totals.failed,
              totals.errors);
  return totals.failed || totals.errors ? kExitFailure : kExitOk;
}

bool read_common(Args& args, SuiteOptions* o, const std::string& positional_kernel) {
  o->kernel = resolve_kernel(args, positional_kernel);
  parse_tiling_option(args, &o->tiling, &o->tiling_given);
  o->seed = uint64_t(args.get_int("seed", 1, 0, 1ll << 62));
  o->seeds = int(args.get_int("seeds", 1, 1, 100));
  o->timing.warmup = int(args.get_int("warmup", 10, 0, 100000));
  o->timing.iters = int(args.get_int("iters", 50, 1, 100000));
  o->explain = args.has("explain");
  o->out_dir = args.get_or("out", "out");
  if (Status s = parse_prof_mode(args.get_or("prof", "disabled"), &o->prof); !s.is_ok()) args.error("--prof: " + s.message());
  return args.ok();
}

const std::set<std::string> kCommonOptions = {"kernel", "tiling", "seed", "seeds", "warmup", "iters", "explain",
                                              "out", "prof", "prof-kernel", "prof-skip", "prof-count"};

// --prof ncu: the same command again under Nsight Compute (before any CUDA work here). The
// workbench prepares and runs it; what ran and where the report went is said here.
int reexec_ncu(Args& args) {
  NcuOptions n;
  n.kernel_regex = args.get_or("prof-kernel", "dsa_");
  n.launch_skip = int(args.get_int("prof-skip", 0, 0, 1 << 20));
  n.launch_count = int(args.get_int("prof-count", 2, 1, 1 << 20));
  std::vector<std::string> argv;
  NcuRun run;
  Status st = current_command_line(&argv);
  if (st.is_ok()) st = prepare_ncu_run(argv, n, &run);
  if (!st.is_ok()) {
    std::fprintf(stderr, "mlakit: --prof ncu: %s\n", st.message().c_str());
    return kExitFailure;
  }
  std::string shown;
  for (const auto& a : run.command) shown += (shown.empty() ? "" : " ") + a;
  std::printf("[prof] %s\n", shown.c_str());
  std::fflush(stdout);
  int code = 1;
  if (st = execute_ncu_run(run, &code); !st.is_ok()) {
    std::fprintf(stderr, "mlakit: --prof ncu: %s\n", st.message().c_str());
    return kExitFailure;
  }
  if (io::file_exists(run.report))
    std::printf("[prof] ncu report: %s (open with ncu-ui, or: ncu --import %s --page details)\n",
                run.report.c_str(), run.report.c_str());
  else
    std::fprintf(stderr,
                 "mlakit: --prof ncu: ncu exited with %d and wrote no report at %s; check that "
                 "the kernel filter regex:%s matches a kernel the command launches\n",
                 code, run.report.c_str(), n.kernel_regex.c_str());
  return code;
}

Status load_suite_or_trace(Args& args, uint64_t seed, std::string* title, std::vector<DsaWorkload>* out) {
  if (auto dir = args.get("trace")) {
    DsaTraceOptions opts;
    opts.seed = seed;
    if (auto def = args.get("definition")) opts.definition = *def;
    DsaSuite suite;
    MLAKIT_RETURN_IF_ERROR(load_dsa_trace(*dir, opts, &suite));
    *title = "trace " + *dir;
    *out = std::move(suite.workloads);
    return Status::ok();
  }
  const std::string name = args.get_or("suite", "dsa-contest");
  DsaSuite suite;
  MLAKIT_RETURN_IF_ERROR(make_dsa_suite(name, seed, &suite));
  *title = "suite " + name;
  *out = std::move(suite.workloads);
  return Status::ok();
}

int suite_command(Args& args, bool time, const char* usage) {
  SuiteOptions o;
  o.time = time;
  o.verify = !args.has("no-verify");
  std::set<std::string> known = kCommonOptions;
  known.insert({"suite", "trace", "definition", "no-verify"});
  read_common(args, &o, "");
  args.reject_unknown(known);
  if (!args.ok()) return args.fail_usage(usage);
  if (o.prof == ProfMode::kNcu) return reexec_ncu(args);
  std::string title;
  std::vector<DsaWorkload> workloads;
  if (Status s = load_suite_or_trace(args, o.seed, &title, &workloads); !s.is_ok()) {
    std::fprintf(stderr, "mlakit: %s\n", s.to_string().c_str());
    return s.code() == Code::kInvalidArgument || s.code() == Code::kNotFound ? kExitUsage : kExitFailure;
  }
  return run_workloads(o, title, workloads);
}

const char* kBenchUsage =
    "usage: mlakit bench [--suite NAME | --trace DIR [--definition NAME]] [--kernel KEY]\n"
    "                    [--tiling NAME] [--seed S] [--warmup N] [--iters N] [--no-verify] [--explain]\n\n"
    "Verifies and times every workload of a suite (dsa-contest, dsa-serving, dsa-edge) or of a\n"
    "FlashInfer-Trace dataset directory. Span = median GPU time of one call over --iters calls\n"
    "(cold L2 before each), host = host time of one call. Without an sm_90a GPU, runs the CPU\n"
    "reference on the workloads instead.""\n\nProfiling: --prof disabled|annotation|ncu. annotation wraps each timed call in an NVTX range\n"
    "named after the workload; ncu re-runs the command under Nsight Compute (--clock-control none)\n"
    "with --prof-kernel REGEX (default dsa_), --prof-skip N, --prof-count N (default 2) and prints\n"
    "where the report went. Results are appended to --out DIR (default out/) as JSON lines and CSV.";
const char* kVerifyUsage =
    "usage: mlakit verify [--suite NAME | --trace DIR] [--kernel KEY] [--tiling NAME] [--seed S]\n"
    "                     [--seeds N] [--explain]\n\n"
    "Checks a kernel against the fp64 CPU reference with the contest rule (an element fails only\n"
    "if abs err > 1e-2 and rel err > 1e-2), output and lse, outputs poisoned before each run, two\n"
    "runs bitwise equal. --seeds N repeats with N fresh seeds.";

int run_bench(Args& args) { return suite_command(args, true, kBenchUsage); }
int run_verify(Args& args) { return suite_command(args, false, kVerifyUsage); }

const char* kRunUsage =
    "usage: mlakit run [KERNEL] --t N [--page-size P] [--topk K] [--num-pages N] [--valid V]\n"
    "                  [--tiling NAME] [--seed S] [--check] [--no-time] [--explain] [--warmup N]\n"
    "                  [--iters N]\n\n"
    "Runs one synthetic shape: T tokens, each row V valid top-k picks (default: topk) clustered by\n"
    "page, the rest -1. --check verifies against the CPU reference; --no-time skips timing (for\n"
    "compute-sanitizer); --explain prints the plan.""\n\nProfiling: --prof disabled|annotation|ncu. annotation wraps each timed call in an NVTX range\n"
    "named after the workload; ncu re-runs the command under Nsight Compute (--clock-control none)\n"
    "with --prof-kernel REGEX (default dsa_), --prof-skip N, --prof-count N (default 2) and prints\n"
    "where the report went. Results are appended to --out DIR (default out/) as JSON lines and CSV.";

int run_run(Args& args) {
  SuiteOptions o;
  const std::string positional = args.positional().empty() ? "" : args.positional()[0];
  read_common(args, &o, positional);
  DsaProblem p;
  p.num_tokens = int(args.get_int("t", -1, 1, 1 << 20));
  p.page_size = int(args.get_int("page-size", 64, 1, 1 << 16));
  p.topk = int(args.get_int("topk", 2048, 1, 1 << 20));
  const int valid = int(args.get_int("valid", -1, 0, 1 << 20));
  o.verify = args.has("check");
  o.time = !args.has("no-time");
  if (!args.has("t")) args.error("--t N (number of tokens) is required");
  if (args.positional().size() > 1) args.error("expected at most one kernel key, got " + args.positional()[1]);
  std::set<std::string> known = kCommonOptions;
  known.insert({"t", "page-size", "topk", "num-pages", "valid", "check", "no-time"});
  // Enough pages for every row to pick distinct pages, unless given.
  const long long pages_needed = (long long)p.num_tokens * ((p.topk + p.page_size - 1) / p.page_size + 1);
  p.num_pages = int(args.get_int("num-pages", std::min<long long>(pages_needed, 1 << 20), 1, 1 << 24));
  args.reject_unknown(known);
  if (!args.ok()) return args.fail_usage(kRunUsage);
  if (o.prof == ProfMode::kNcu) return reexec_ncu(args);
  DsaWorkload w;
  if (Status s = make_dsa_workload(p, valid, o.seed, &w); !s.is_ok()) {
    std::fprintf(stderr, "mlakit: %s\n", s.to_string().c_str());
    return kExitUsage;
  }
  return run_workloads(o, "shape " + p.to_string(), {w});
}

}  // namespace

MLAKIT_CLI_COMMAND(bench, "bench", "verify and time a kernel on a suite or a trace", kBenchUsage,
                   run_bench, {"no-verify", "explain"});
MLAKIT_CLI_COMMAND(verify, "verify", "check a kernel against the CPU reference on a suite", kVerifyUsage,
                   run_verify, {"explain"});
MLAKIT_CLI_COMMAND(run, "run", "run one shape (the workbench's single-shape command)", kRunUsage,
                   run_run, {"check", "explain", "no-time"});

}  // namespace mlakit::cli
