#include "suite_run.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <vector>

#include "base/format.h"
#include "base/progress_line.h"
#include "io/file.h"
#include "runtime/registry.h"
#include "workbench/ceiling.h"
#include "workbench/report.h"

namespace mlakit::cli {
namespace {

// What the run of one suite shares: its plans, made before any GPU work.
struct SuiteRun {
  const SuiteOptions& o;
  const BenchSuite& suite;
  const KernelEntry& kernel;
  PlanTarget target;
  std::vector<BenchPlan> plans;    // per workload
  std::vector<Status> plan_status;  // per workload: why it has no plan
  // The op's gather floor, timed on every workload in the same run (span / floor in the table);
  // a workload the floor cannot plan has no floor figure.
  const KernelEntry* floor = nullptr;
  std::vector<BenchPlan> floor_plans;
};

struct Totals {
  int workloads = 0, failed = 0, errors = 0;
  double span_sum_us = 0;
  double floor_sum_us = 0, floored_span_sum_us = 0;  // over the workloads with a floor figure
  int floored = 0;
  double ceiling_gbps = 0;  // measured copy ceiling, 0 = unknown
  double peak_tflops = 0;   // measured bf16 dense tensor peak, 0 = unknown
  std::vector<BenchRecord> records;
};

// Plans every workload. A --tiling that no workload accepts is a usage error: its reason, exit 2.
int plan_workloads(SuiteRun* run) {
  const SuiteOptions& o = run->o;
  int planned = 0;
  for (size_t i = 0; i < run->suite.size(); ++i) {
    BenchPlan plan;
    const Status st = run->suite.plan(i, run->target, o.tiling ? &*o.tiling : nullptr, &plan);
    planned += st.is_ok();
    run->plans.push_back(std::move(plan));
    run->plan_status.push_back(st);
  }
  if (o.tiling && planned == 0 && run->suite.size() > 0) {
    const std::string where = run->target.device() < 0 ? " (checked for " + run->target.facts().describe() +
                                                            "; no usable GPU here)"
                                                      : "";
    return fail("--tiling " + *o.tiling + ": " + run->plan_status[0].message() + where, kExitUsage);
  }
  return kExitOk;
}

// The op's floor (when the kernel is not one itself and --no-floor is not given), planned with its
// default tiling for every workload of the suite.
void plan_floors(SuiteRun* run) {
  const KernelInfo& k = run->kernel.info();
  if (!run->o.time || !run->o.floor || k.floor || k.heads.empty()) return;
  run->floor = floor_kernel(k.op, k.dtype, k.heads.front());
  PlanTarget target;
  if (run->floor == nullptr || !plan_target(*run->floor, run->target.device(), &target).is_ok()) {
    run->floor = nullptr;
    return;
  }
  for (size_t i = 0; i < run->suite.size(); ++i) {
    BenchPlan plan;
    if (!run->suite.plan(i, target, nullptr, &plan).is_ok()) plan = BenchPlan{};
    run->floor_plans.push_back(std::move(plan));
  }
}

void print_gpu_header(bool time) {
  if (time)
    std::printf("%-12s %3s %6s %-14s %9s %9s %9s %8s %6s %8s %6s %9s %7s %9s %9s %s\n", "workload", "T", "slots",
                "tiling", "span_us", "p90_us", "host_us", "GB/s", "%ceil", "TFLOP/s", "%peak", "floor_us", "x_floor",
                "err_out", "err_lse", "check");
  else
    std::printf("%-12s %3s %6s %-12s %9s %9s %s\n", "workload", "T", "slots", "tiling", "err_out",
                "err_lse", "check");
}

std::string max_err(const VerifyResult& v, const char* output) {
  const CompareReport* c = v.find(output);
  return c ? format_sci(c->max_abs_err, 2) : "-";
}

void print_row(const SuiteOptions& o, const WorkloadInfo& w, const BenchPlan& plan, const VerifyResult& v,
               const TimingResult& t, const BenchRecord* rec) {
  const std::string check = o.verify ? v.verdict() : "-";
  const std::string err_out = o.verify ? max_err(v, "output") : "-", err_lse = o.verify ? max_err(v, "lse") : "-";
  if (rec) {
    const std::string floor_us = rec->floor_us > 0 ? format_fixed(rec->floor_us, 2) : "-";
    const std::string x_floor = rec->floor_us > 0 ? format_fixed(t.median_us / rec->floor_us, 2) : "-";
    const std::string pct_peak = rec->peak_tflops > 0 ? format_fixed(rec->pct_of_peak, 1) : "-";
    std::printf("%-12s %3d %6lld %-14s %9.2f %9.2f %9.2f %8.0f %6.1f %8.1f %6s %9s %7s %9s %9s %s\n", w.name.c_str(),
                w.num_tokens, (long long)w.cost.rows, plan.tiling().c_str(), t.median_us, t.p90_us, t.host_us,
                rec->gbps, rec->pct_of_ceiling, rec->tflops, pct_peak.c_str(), floor_us.c_str(), x_floor.c_str(),
                err_out.c_str(), err_lse.c_str(), check.c_str());
  }
  else
    std::printf("%-12s %3d %6lld %-12s %9s %9s %s\n", w.name.c_str(), w.num_tokens, (long long)w.cost.rows,
                plan.tiling().c_str(), err_out.c_str(), err_lse.c_str(), check.c_str());
  if (o.verify)
    for (const std::string& p : v.problems()) std::printf("    %s\n", p.c_str());
  if (o.explain) std::printf("    %s\n", plan.explain().c_str());
}

// Verifies (and times) workload i with its plan; prints one table row.
// "[3/23] contest-02: verifying and timing", the progress line of workload i.
std::string progress_text(const BenchSuite& suite, size_t i, const char* what) {
  char count[48];
  std::snprintf(count, sizeof count, "[%zu/%zu] ", i + 1, suite.size());
  return count + suite.info(i).name + ": " + what;
}

void run_gpu_workload(const SuiteRun& run, const DeviceFacts& facts, BenchSession& session, size_t i,
                      ProgressLine& progress, Totals* totals) {
  const SuiteOptions& o = run.o;
  const WorkloadInfo& w = run.suite.info(i);
  const BenchPlan& plan = run.plans[i];
  ++totals->workloads;
  const char* doing = o.verify && o.time ? "verifying and timing" : o.verify ? "verifying" : o.time ? "timing" : "running";
  progress.show(progress_text(run.suite, i, doing));
  Status s = run.plan_status[i];
  if (s.is_ok()) s = session.prepare(i);
  if (s.is_ok() && o.check_inputs) s = session.check_inputs();
  VerifyResult v;
  if (s.is_ok() && o.verify) s = session.verify(plan, &v);
  TimingResult t;
  TimingConfig timing = o.timing;
  timing.label = w.name;  // the NVTX range of each timed call under --prof annotation
  if (s.is_ok() && o.time) s = session.time(plan, timing, &t);
  // Neither verified nor timed (`run --no-time`): still one call, so that a sanitizer sees it.
  if (s.is_ok() && !o.verify && !o.time) s = session.run_once(plan);
  progress.clear();
  if (!s.is_ok()) {
    ++totals->errors;
    std::printf("%-12s %3d %6lld error: %s\n", w.name.c_str(), w.num_tokens, (long long)w.cost.rows,
                s.to_string().c_str());
    return;
  }
  if (o.verify && !v.ok()) ++totals->failed;
  if (!o.time) {
    print_row(o, w, plan, v, t, nullptr);
    return;
  }
  totals->span_sum_us += t.median_us;
  // Warm-L2 spans are a diagnosis, never the figure of merit, and graph replays another mode of
  // the same calls: their records name another suite.
  const BenchRun what{run.suite.title() + (o.timing.graph ? " (graph)" : "") + (o.timing.cold_l2 ? "" : " (warm L2)"),
                      run.suite.op(), plan.kernel_key(), plan.tiling()};
  totals->records.push_back(
      make_bench_record(what, w, facts, t, o.timing.iters, o.verify ? &v : nullptr, totals->ceiling_gbps,
                        totals->peak_tflops));
  BenchRecord& rec = totals->records.back();
  if (run.floor && !run.floor_plans[i].empty()) {
    progress.show(progress_text(run.suite, i, "timing the gather floor"));
    TimingResult ft;
    if (session.time(run.floor_plans[i], timing, &ft).is_ok()) {
      rec.floor_key = run.floor_plans[i].kernel_key();
      rec.floor_us = ft.median_us;
      totals->floor_sum_us += ft.median_us;
      totals->floored_span_sum_us += t.median_us;
      ++totals->floored;
    }
  }
  progress.clear();
  print_row(o, w, plan, v, t, &rec);
}

// No usable GPU: the CPU reference on every workload (what can run here).
int run_cpu_reference(const BenchSuite& suite, uint64_t seed, bool quiet) {
  std::printf("%-12s %3s %6s %11s %s\n", "workload", "T", "slots", "cpu_ref_ms", suite.reference_header().c_str());
  const std::unique_ptr<BenchSession> session = suite.open_session(seed);
  ProgressLine progress(stdout, quiet);
  for (size_t i = 0; i < suite.size(); ++i) {
    const WorkloadInfo& w = suite.info(i);
    std::string columns;
    progress.show(progress_text(suite, i, "synthesizing the inputs"));
    Status s = session->prepare(i);  // input synthesis stays out of the reference's time
    progress.show(progress_text(suite, i, "the CPU reference"));
    const auto t0 = std::chrono::steady_clock::now();
    if (s.is_ok()) s = session->reference(&columns);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    progress.clear();
    if (!s.is_ok()) {
      std::printf("%-12s error: %s\n", w.name.c_str(), s.to_string().c_str());
      return kExitFailure;
    }
    std::printf("%-12s %3d %6lld %11.1f %s\n", w.name.c_str(), w.num_tokens, (long long)w.cost.rows, ms,
                columns.c_str());
  }
  return kExitOk;
}

double measured_ceiling(int device) {
  CopyCeiling ceiling;
  if (Status c = copy_ceiling(device, &ceiling); !c.is_ok()) {
    std::printf("copy ceiling unknown: %s\n", c.to_string().c_str());
    return 0;
  }
  std::printf("copy ceiling %.0f GB/s (%s); GB/s = gathered rows / span\n", ceiling.gbps,
              ceiling.from_cache ? "cached" : "measured now");
  return ceiling.gbps;
}

double measured_peak(int device) {
  MatmulCeiling peak;
  if (Status c = matmul_ceiling(device, &peak); !c.is_ok()) {
    std::printf("bf16 dense tensor peak unknown: %s\n", c.to_string().c_str());
    return 0;
  }
  std::printf("bf16 dense tensor peak %.0f TFLOP/s (%s); TFLOP/s = the op's FLOPs / span\n", peak.tflops,
              peak.from_cache ? "cached" : "measured now");
  return peak.tflops;
}

// False when the records could not be written (the folder was checked before the run).
bool write_records(const std::string& out_dir, const std::vector<BenchRecord>& records) {
  if (records.empty() || out_dir.empty()) return true;
  if (Status r = append_bench_records(out_dir, records); !r.is_ok()) {
    fail("results not written: " + r.to_string(), kExitFailure);
    return false;
  }
  std::printf("results appended to %s/bench.jsonl and %s/bench.csv\n", out_dir.c_str(), out_dir.c_str());
  return true;
}

int run_gpu(const SuiteRun& run) {
  const SuiteOptions& o = run.o;
  const DeviceFacts& facts = run.target.facts();
  const char* of = o.timing.graph ? "one replay of the call captured in a CUDA graph" : "one call";
  std::printf("%s on %s, kernel %s%s%s%s\n", run.suite.title().c_str(), facts.describe().c_str(),
              run.kernel.info().key.c_str(), o.time ? " (span = median GPU time of " : "", o.time ? of : "",
              !o.time ? "" : o.timing.cold_l2 ? ", cold L2)" : ", WARM L2: a diagnosis, not the figure of merit)");
  Totals totals;
  if (o.prof == ProfMode::kAnnotation) set_nvtx_enabled(true);
  if (o.time) {
    totals.ceiling_gbps = measured_ceiling(run.target.device());
    totals.peak_tflops = measured_peak(run.target.device());
  }
  for (int k = 0; k < o.seeds; ++k) {
    if (o.seeds > 1) std::printf("-- seed %llu\n", (unsigned long long)(o.seed + k));
    print_gpu_header(o.time);
    const std::unique_ptr<BenchSession> session = run.suite.open_session(o.seed + k);
    ProgressLine progress(stdout, o.quiet);
    for (size_t i = 0; i < run.suite.size(); ++i) run_gpu_workload(run, facts, *session, i, progress, &totals);
  }
  const bool written = write_records(o.out_dir, totals.records);
  if (o.time && totals.workloads > totals.errors)
    std::printf("mean span over %d workloads: %.2f us\n", totals.workloads - totals.errors,
                totals.span_sum_us / (totals.workloads - totals.errors));
  if (totals.floored > 0)
    std::printf("gather floor (%s) over %d workloads: mean %.2f us; mean span / mean floor %.2f\n",
                run.floor->info().key.c_str(), totals.floored, totals.floor_sum_us / totals.floored,
                totals.floored_span_sum_us / totals.floor_sum_us);
  std::printf("%d workloads, %d failed verification, %d errors\n", totals.workloads, totals.failed,
              totals.errors);
  return totals.failed || totals.errors || !written ? kExitFailure : kExitOk;
}

// The host side of the suite, before anything is synthesized: every workload within the
// host-memory limit (exit 2 naming it), and a warning on stderr when synthesizing the inputs and
// (`reference`) the CPU reference will take long.
int check_host(const SuiteOptions& o, const BenchSuite& suite, bool reference) {
  std::vector<HostFootprint> each;
  for (size_t i = 0; i < suite.size(); ++i) {
    const WorkloadInfo& w = suite.info(i);
    if (Status s = check_host_footprint(w.host, "workload " + w.name + " (" + w.shape + ")"); !s.is_ok())
      return fail(s.message(), kExitUsage);
    each.push_back(w.host);
  }
  HostFootprint total = session_footprint(each);  // one session per seed
  total.synth_seconds *= o.seeds;
  total.reference_seconds *= o.seeds;
  if (const std::string w = long_run_warning(total, reference, suite.title()); !w.empty()) {
    std::fflush(stdout);
    std::fprintf(stderr, "mlakit: warning: %s\n", w.c_str());
  }
  return kExitOk;
}

// --explain without a usable GPU, or with --device-preset NAME: every workload planned against the
// limits of a chip of the device table (h200 unless named), each plan explained; nothing runs.
int explain_plans(SuiteRun* run, const Status& gate) {
  const SuiteOptions& o = run->o;
  const std::string preset = o.device_preset.empty() ? kDryPlanDevice : o.device_preset;
  DeviceFacts facts;
  if (Status s = find_known_device(preset, &facts); !s.is_ok()) return fail("--device-preset: " + s.message(), kExitUsage);
  if (Status s = plan_target(run->kernel, facts, &run->target); !s.is_ok())
    return fail("--explain: " + run->kernel.info().key + " cannot be planned for " + facts.describe() + ": " +
                    s.message(),
                kExitUsage);
  if (int rc = plan_workloads(run); rc != kExitOk) return rc;
  const std::string why = o.device_preset.empty() ? "; no usable GPU here (" + gate.message() + "), so the limits of " +
                                                        "the " + preset + " preset (--device-preset NAME picks another)"
                                                  : "";
  std::printf("%s, kernel %s: plans for %s%s; nothing runs\n", run->suite.title().c_str(),
              run->kernel.info().key.c_str(), facts.describe().c_str(), why.c_str());
  std::printf("%-12s %3s %6s %s\n", "workload", "T", "slots", "tiling");
  for (size_t i = 0; i < run->suite.size(); ++i) {
    const WorkloadInfo& w = run->suite.info(i);
    if (!run->plan_status[i].is_ok()) {
      std::printf("%-12s %3d %6lld no plan: %s\n", w.name.c_str(), w.num_tokens, (long long)w.cost.rows,
                  run->plan_status[i].message().c_str());
      continue;
    }
    std::printf("%-12s %3d %6lld %s\n    %s\n", w.name.c_str(), w.num_tokens, (long long)w.cost.rows,
                run->plans[i].tiling().c_str(), run->plans[i].explain().c_str());
  }
  return kExitOk;
}

// No kernel of the op runs the suite's first workload (an op whose kernels have not landed): an
// error on a GPU machine or with --tiling; elsewhere the CPU reference, as without a GPU.
int run_without_kernel(const SuiteOptions& o, const BenchSuite& suite) {
  const std::string registered = kernel_keys(suite.op());
  const std::string why = "no registered " + suite.op() + " kernel runs its first workload (" +
                          (suite.size() ? suite.info(0).shape : std::string("no workloads")) + "; registered " +
                          suite.op() + " kernels:" + (registered.empty() ? std::string(" none") : registered) + ")";
  if (device_count() > 0 || o.tiling || suite.size() == 0) return fail(suite.title() + ": " + why, kExitFailure);
  if (o.explain) std::printf("--explain: no plan to explain: %s\n", why.c_str());
  if (int rc = check_host(o, suite, true); rc != kExitOk) return rc;
  std::printf("%s\nGPU kernels skipped: %s\nShowing the CPU reference (fp64) on %s instead.\n\n",
              suite.title().c_str(), why.c_str(), suite.title().c_str());
  return run_cpu_reference(suite, o.seed, o.quiet);
}

// A kernel named on the command line that runs none of the suite's workloads (another cache
// format: `verify dsa_decode.v2_fused.bf16 --kv fp8`, or other head counts): a usage error, with or
// without a GPU, instead of one planning error per workload.
int check_named_kernel(const KernelEntry& kernel, const BenchSuite& suite) {
  const KernelInfo& k = kernel.info();
  for (size_t i = 0; i < suite.size(); ++i)
    if (k.runs(suite.info(i).dtype, suite.info(i).heads)) return kExitOk;
  if (suite.size() == 0) return kExitOk;
  return fail(k.key + " runs " + k.dtype + " caches with " + k.heads_string() + " heads; no workload of " +
                  suite.title() + " does (" + suite.info(0).name + ": " + suite.info(0).shape + ")",
              kExitUsage);
}

}  // namespace

// Plans the suite for the current device, or, without a usable one, checks --tiling against a
// known chip and shows the CPU reference.
int run_suite(const SuiteOptions& o, const BenchSuite& suite) {
  if (o.sel.kernel)
    if (int rc = check_named_kernel(*o.sel.kernel, suite); rc != kExitOk) return rc;
  const KernelEntry* kernel = o.sel.kernel ? o.sel.kernel : suite.size() ? suite.default_kernel(0) : nullptr;
  if (kernel == nullptr) return run_without_kernel(o, suite);
  SuiteRun run{o, suite, *kernel, {}, {}, {}, nullptr, {}};
  const Status gate = plan_target(*kernel, -1, &run.target);
  if (o.explain && (!gate.is_ok() || !o.device_preset.empty())) return explain_plans(&run, gate);
  if (gate.is_ok() || o.tiling) {
    if (!gate.is_ok()) {
      if (Status dry = dry_target(*kernel, &run.target); !dry.is_ok()) return fail(dry.message(), kExitUsage);
    }
    if (int rc = plan_workloads(&run); rc != kExitOk) return rc;
  }
  if (int rc = check_host(o, suite, !gate.is_ok() || o.verify); rc != kExitOk) return rc;
  if (gate.is_ok()) {
    plan_floors(&run);
    return run_gpu(run);
  }
  std::printf("%s\nGPU kernels skipped: %s\nShowing the CPU reference (fp64) on %s instead.\n\n",
              suite.title().c_str(), gate.message().c_str(), suite.title().c_str());
  return run_cpu_reference(suite, o.seed, o.quiet);
}

void declare(Args& args, Kind kind, CommandLine* c) {
  args.positional("target", &c->target);
  args.text("--kernel", &c->kernel);
  args.text("--tiling", &c->tiling);
  args.integer("--seed", &c->seed, 0, 1ll << 62);
  args.integer("--seeds", &c->seeds, 1, 100);
  args.flag("--explain", &c->explain);
  args.text("--device-preset", &c->device_preset);
  args.flag("--quiet", &c->quiet);
  args.text("--prof", &c->prof);
  args.text("--prof-kernel", &c->prof_kernel);
  args.integer("--prof-skip", &c->prof_skip, 0, 1 << 20);
  args.integer("--prof-count", &c->prof_count, 1, 1 << 20);
  if (kind != Kind::kRun) {
    args.text("--suite", &c->suite);
    args.text("--trace", &c->trace);
    args.text("--definition", &c->definition);
    declare_suite_choices(args, &c->choices);
  }
  if (kind != Kind::kVerify) {  // timing and its records
    args.integer("--warmup", &c->warmup, 0, 100000);
    args.integer("--iters", &c->iters, 1, 100000);
    args.flag("--no-floor", &c->no_floor);
    args.flag("--warm-l2", &c->warm_l2);
    args.flag("--graph", &c->graph);
    args.text("--out", &c->out);
  }
  if (kind == Kind::kBench) args.flag("--no-verify", &c->no_verify);
  if (kind != Kind::kRun) return;
  args.flag("--check", &c->check);
  args.flag("--no-time", &c->no_time);
  // Every op's shape options; those of another op than the one named are refused after parsing.
  for (const OpBench* op : op_benches())
    for (const ShapeOption& s : op->shape_options()) {
      if (c->shape.count(s.name) || c->shape_flags.count(s.name) || c->choices.count(s.name)) continue;
      if (s.flag) args.flag("--" + s.name, &c->shape_flags[s.name]);
      else if (!s.choices.empty()) args.choice("--" + s.name, &c->choices[s.name], s.choices);
      else args.integer("--" + s.name, &c->shape[s.name], LLONG_MIN, LLONG_MAX);
    }
}

void read_options(Args& args, const CommandLine& c, SuiteOptions* o) {
  if (args.given("--tiling")) o->tiling = c.tiling;
  o->seed = uint64_t(c.seed);
  o->seeds = int(c.seeds);
  o->timing.warmup = int(c.warmup);
  o->timing.iters = int(c.iters);
  o->timing.cold_l2 = !c.warm_l2;
  o->timing.graph = c.graph;
  o->explain = c.explain;
  o->device_preset = c.device_preset;
  if (args.given("--device-preset") && !c.explain) args.error("--device-preset NAME only applies with --explain");
  o->floor = !c.no_floor;
  o->quiet = c.quiet;
  o->out_dir = c.out;
  if (Status s = parse_prof_mode(c.prof, &o->prof); !s.is_ok()) args.error(s.message());
  if (!c.trace.empty() && !c.suite.empty()) args.error("--suite and --trace: give one of them");
  if (args.given("--definition") && c.trace.empty()) args.error("--definition NAME only applies with --trace DIR");
}

int reexec_ncu(const CommandLine& c, const OpBench& op, ProfMode mode) {
  NcuOptions n;
  n.kernel_regex = c.prof_kernel.empty() ? op.profile_kernels() : c.prof_kernel;
  n.launch_skip = int(c.prof_skip);
  n.launch_count = int(c.prof_count);
  n.extra_args = ncu_mode_args(mode);
  const std::string flag = std::string("--prof ") + prof_mode_name(mode);
  std::vector<std::string> argv;
  NcuRun run;
  Status st = current_command_line(&argv);
  if (st.is_ok()) st = prepare_ncu_run(argv, n, &run);
  if (!st.is_ok()) return fail(flag + ": " + st.message(), kExitFailure);
  std::string shown;
  for (const auto& a : run.command) shown += (shown.empty() ? "" : " ") + a;
  std::printf("[prof] %s\n", shown.c_str());
  std::fflush(stdout);
  int code = 1;
  if (st = execute_ncu_run(run, &code); !st.is_ok()) return fail(flag + ": " + st.message(), kExitFailure);
  if (io::file_exists(run.report)) {
    std::printf("[prof] ncu report: %s (open with ncu-ui, or: ncu --import %s --page details)\n",
                run.report.c_str(), run.report.c_str());
    if (mode == ProfMode::kNcuStalls)
      std::printf("[prof] stall samples per instruction and reason: python3 lab/scripts/ncu_stalls.py %s\n",
                  run.report.c_str());
  } else {
    fail(flag + ": ncu exited with " + std::to_string(code) + " and wrote no report at " + run.report +
             "; check that the kernel filter regex:" + n.kernel_regex + " matches a kernel the command launches",
         code);
  }
  return code;
}

void check_floor_verify(Args& args, const SuiteOptions& o, const std::string& what) {
  if (!what.empty() && o.sel.kernel && o.sel.kernel->info().floor)
    args.error(what + ": " + o.sel.kernel->info().key + " is a gather floor; it computes nothing to verify");
}

void check_out_dir(Args& args, const SuiteOptions& o) {
  if (!o.time || o.out_dir.empty()) return;
  if (Status s = check_bench_output(o.out_dir); !s.is_ok()) args.error("--out " + o.out_dir + ": " + s.message());
}

}  // namespace mlakit::cli
