// The autotuner (see tuner.h): enumerate and plan, verify, time, pick, persist.
#include "workbench/tuner.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include <cuda_runtime_api.h>

#include "base/cuda_status.h"
#include "base/format.h"
#include "base/run_info.h"
#include "runtime/tune_cache.h"

namespace mlakit {
namespace {

// What every step of one tuner run shares.
struct TuneRun {
  const KernelEntry& kernel;
  const TuneOptions& o;
  const OpBench& op;
  const BenchSuite& suite;
  const PlanTarget& target;
  BenchSession* session;  // null in a dry run
  TuneCache& cache;
  TuneReport& report;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();

  void log(const std::string& line) const {
    if (o.log) o.log(line);
  }
  void progress(const std::string& status) const {
    if (o.progress) o.progress(status);
  }
  std::string elapsed() const {
    return format_fixed(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1) +
           " s";
  }
};

// Verifies (when asked) and times one plan on the session's current workload.
Status evaluate(BenchSession& session, const BenchPlan& plan, const TuneOptions& o, double* median_us) {
  if (o.verify) {
    VerifyResult v;
    MLAKIT_RETURN_IF_ERROR(session.verify(plan, &v));
    if (!v.ok()) {
      std::string why = "verification failed:";
      for (const std::string& p : v.problems()) why += " " + p + ";";
      why.pop_back();
      return Status::internal(why);
    }
  }
  TimingResult t;
  MLAKIT_RETURN_IF_ERROR(session.time(plan, o.timing, &t));
  *median_us = t.median_us;
  return Status::ok();
}

// After a kernel fault the CUDA context is unusable: every later tiling would "fail" too.
Status context_alive(const std::string& after) {
  const Status st = cuda_status(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  if (st) return st;
  return Status::device_error("the CUDA context is unusable after " + after + " (" + st.message() +
                              "); re-run the tuner without that tiling");
}

// The span of workload `index`'s default tiling: from the candidates when one of them is it,
// else planned and measured on its own. False when it could not be measured.
bool default_span(const TuneRun& r, size_t index, const std::vector<TuneCandidateResult>& candidates,
                  double* us) {
  const std::string name = r.suite.default_tiling(index, r.target);
  for (const TuneCandidateResult& c : candidates)
    if (c.tiling == name && c.skip_reason.empty() && !c.median_us.empty()) {
      *us = c.median_us.back();
      return true;
    }
  // Outside the search space, invalid for the bucket or failed above.
  BenchPlan plan;
  Status st = r.suite.plan(index, r.target, &name, &plan);
  if (st) st = evaluate(*r.session, plan, r.o, us);
  if (st) return true;
  r.log("  default " + name + " on " + r.suite.info(index).name + ": " + st.message());
  return false;
}

// Times every valid candidate on the bucket's workload `j` (its plans[j]), then the default.
Status time_workload(const TuneRun& r, const BucketGroup& group, size_t j,
                     const std::vector<TilingChoice>& choices, TuneBucketResult* br,
                     double* default_sum, bool* default_known) {
  const size_t index = group.workloads[j];
  const std::string& name = r.suite.info(index).name;
  MLAKIT_RETURN_IF_ERROR(r.session->prepare(index));
  double best = 0;
  std::string best_name;
  for (size_t k = 0; k < choices.size(); ++k) {
    TuneCandidateResult& c = br->candidates[k];
    if (!c.skip_reason.empty()) continue;
    r.progress(br->bucket + ", workload " + std::to_string(j + 1) + "/" + std::to_string(group.workloads.size()) +
               " " + name + ": tiling " + std::to_string(k + 1) + "/" + std::to_string(choices.size()) + " " +
               c.tiling + " (" + r.elapsed() + ")");
    double us = 0;
    if (const Status st = evaluate(*r.session, choices[k].plans[j], r.o, &us); !st) {
      c.skip_reason = name + ": " + st.message();
      r.log("  drop " + c.tiling + ": " + c.skip_reason);
      MLAKIT_RETURN_IF_ERROR(context_alive(c.tiling + " on " + name));
      continue;
    }
    c.median_us.push_back(us);
    if (r.o.verbose) r.log("    " + name + " " + c.tiling + ": " + format_us(us));
    if (best_name.empty() || us < best) {
      best = us;
      best_name = c.tiling;
    }
  }
  double us = 0;
  if (default_span(r, index, br->candidates, &us)) {
    *default_sum += us;
  } else {
    *default_known = false;
    MLAKIT_RETURN_IF_ERROR(context_alive("the default tiling on " + name));
  }
  r.log("[tune]   " + br->bucket + " workload " + std::to_string(j + 1) + "/" +
        std::to_string(group.workloads.size()) + " " + name +
        (best_name.empty() ? ": no tiling ran" : ": best " + best_name + " " + format_us(best)) + " (" +
        r.elapsed() + ")");
  return Status::ok();
}

// Writes the winner, or removes an older entry when the defaults were as fast.
Status decide(const TuneRun& r, size_t workloads, TuneBucketResult* br) {
  const TuneKey key{r.target.facts().name, r.kernel.info().key, br->bucket};
  if (!br->has_winner) {
    br->decision = "no tiling ran on every workload; cache unchanged";
    return Status::ok();
  }
  if (br->default_us > 0 && br->winner_us >= br->default_us) {
    const bool removed = r.cache.erase(key);
    br->decision = "the built-in default (" + format_us(br->default_us) + ") is as fast as the best fixed tiling " +
                   br->winner + " (" + format_us(br->winner_us) + "): " +
                   (removed ? "old entry removed" : "no entry written");
    if (removed) MLAKIT_RETURN_IF_ERROR(r.cache.save(r.report.cache_path));
    if (removed) reload_tune_cache();
    return Status::ok();
  }
  TuneEntry e{key.device, key.kernel_key, key.bucket, br->winner, br->winner_us, br->default_us,
              suite_label(r.op, r.o.suite), r.o.seed, int(workloads), git_revision(), utc_timestamp()};
  r.cache.put(e);
  MLAKIT_RETURN_IF_ERROR(r.cache.save(r.report.cache_path));
  reload_tune_cache();
  br->written = true;
  br->decision = "wrote " + br->winner + " (" + format_us(br->winner_us) +
                 (br->default_us > 0 ? ", default " + format_us(br->default_us) : std::string(", default unknown")) +
                 ")";
  return Status::ok();
}

Status tune_bucket(const TuneRun& r, size_t g, size_t groups, const BucketGroup& group,
                   TuneBucketResult* br) {
  br->bucket = group.bucket;
  for (size_t i : group.workloads) br->workloads.push_back(r.suite.info(i).name);
  const std::vector<TilingChoice> choices = enumerate_tilings(r.suite, group.workloads, r.target);
  int valid = 0;
  for (const TilingChoice& c : choices) {
    br->candidates.push_back({c.tiling, c.skip_reason, {}, 0});
    valid += c.valid();
  }
  r.log("[tune] bucket " + std::to_string(g + 1) + "/" + std::to_string(groups) + " " + br->bucket + ": " +
        std::to_string(br->workloads.size()) + " workload(s), " + std::to_string(choices.size()) +
        " tilings, " + std::to_string(valid) + " valid");
  for (const TilingChoice& c : choices)
    if (!c.valid()) r.log("  skip " + c.tiling + ": " + c.skip_reason);
  if (r.o.dry_run) {
    br->decision = "dry run: nothing timed";
    return Status::ok();
  }
  double default_sum = 0;
  bool default_known = true;
  for (size_t j = 0; j < group.workloads.size(); ++j)
    MLAKIT_RETURN_IF_ERROR(time_workload(r, group, j, choices, br, &default_sum, &default_known));
  if (default_known && !group.workloads.empty()) br->default_us = default_sum / double(group.workloads.size());
  summarize_bucket(group.workloads.size(), br);
  MLAKIT_RETURN_IF_ERROR(decide(r, group.workloads.size(), br));
  r.log("[tune] " + br->bucket + ": " + br->decision);
  return Status::ok();
}

}  // namespace

std::vector<TilingChoice> enumerate_tilings(const BenchSuite& suite, const std::vector<size_t>& workloads,
                                            const PlanTarget& target) {
  std::vector<TilingChoice> out;
  for (size_t i : workloads)
    for (const std::string& t : suite.search_space(i, target.kernel()))
      if (std::none_of(out.begin(), out.end(), [&](const TilingChoice& c) { return c.tiling == t; }))
        out.push_back({t, "", {}});
  bool same_tokens = true;
  for (size_t i : workloads) same_tokens &= suite.info(i).num_tokens == suite.info(workloads.front()).num_tokens;
  for (TilingChoice& c : out)
    for (size_t i : workloads) {
      BenchPlan plan;
      const Status st = suite.plan(i, target, &c.tiling, &plan);
      if (st) {
        c.plans.push_back(std::move(plan));
        continue;
      }
      // Kernels often open their reason with "tiling <name>: "; the skip line names it already.
      std::string why = st.message();
      const std::string prefix = "tiling " + c.tiling + ": ";
      if (why.rfind(prefix, 0) == 0) why = why.substr(prefix.size());
      c.skip_reason = (same_tokens ? "" : "T=" + std::to_string(suite.info(i).num_tokens) + ": ") + why;
      c.plans.clear();
      break;
    }
  return out;
}

void summarize_bucket(size_t workloads, TuneBucketResult* br) {
  br->has_winner = false;
  std::vector<double> best(workloads, 0.0);
  std::vector<bool> seen(workloads, false);
  for (TuneCandidateResult& c : br->candidates) {
    // A candidate dropped on workload j keeps its spans of the workloads before it.
    for (size_t j = 0; j < std::min(workloads, c.median_us.size()); ++j)
      if (!seen[j] || c.median_us[j] < best[j]) {
        best[j] = c.median_us[j];
        seen[j] = true;
      }
    if (!c.skip_reason.empty() || c.median_us.size() != workloads || workloads == 0) continue;
    double sum = 0;
    for (double v : c.median_us) sum += v;
    c.mean_us = sum / double(c.median_us.size());
    if (!br->has_winner || c.mean_us < br->winner_us) {
      br->has_winner = true;
      br->winner = c.tiling;
      br->winner_us = c.mean_us;
    }
  }
  const bool all_seen = workloads > 0 && std::all_of(seen.begin(), seen.end(), [](bool b) { return b; });
  double sum = 0;
  for (double v : best) sum += v;
  br->best_each_us = all_seen ? sum / double(workloads) : 0.0;
}

std::vector<BucketGroup> group_by_bucket(const BenchSuite& suite) {
  std::vector<BucketGroup> groups;
  for (size_t i = 0; i < suite.size(); ++i) {
    const std::string& b = suite.info(i).bucket;
    auto it = std::find_if(groups.begin(), groups.end(), [&](const BucketGroup& g) { return g.bucket == b; });
    if (it == groups.end()) groups.push_back({b, {i}});
    else it->workloads.push_back(i);
  }
  return groups;
}

Status tune(const KernelEntry& kernel, const TuneOptions& o, TuneReport* report) {
  *report = TuneReport{};
  report->device = o.device.name;
  report->kernel_key = kernel.info().key;
  report->cache_path = o.cache_path.empty() ? default_tune_cache_path() : o.cache_path;
  const OpBench* op = o.op ? o.op : find_op_bench(kernel.info().op);
  if (op == nullptr) return Status::not_found("no workbench op '" + kernel.info().op + "' (known:" + op_names() + ")");
  std::unique_ptr<BenchSuite> suite;
  MLAKIT_RETURN_IF_ERROR(op->make_suite(o.suite, o.seed, &suite));
  TuneCache cache;
  // A corrupt file is reported, never silently replaced: it may hold other devices' results.
  if (!o.dry_run) MLAKIT_RETURN_IF_ERROR(cache.load(report->cache_path));
  // The arch gate, once: a dry run plans for o.device's facts, a real one for the current device.
  PlanTarget target;
  MLAKIT_RETURN_IF_ERROR(o.dry_run ? plan_target(kernel, o.device, &target) : plan_target(kernel, -1, &target));
  report->device = target.facts().name;
  if (o.log)
    o.log("tune " + kernel.info().key + " on " + target.facts().describe() + ", suite " + suite_label(*op, o.suite) +
          ", seed " + std::to_string(o.seed) + (o.dry_run ? " (dry run)" : ""));
  std::unique_ptr<BenchSession> session;
  if (!o.dry_run) session = suite->open_session(o.seed);
  const TuneRun run{kernel, o, *op, *suite, target, session.get(), cache, *report};
  const std::vector<BucketGroup> groups = group_by_bucket(*suite);
  for (size_t g = 0; g < groups.size(); ++g) {
    TuneBucketResult br;
    MLAKIT_RETURN_IF_ERROR(tune_bucket(run, g, groups.size(), groups[g], &br));
    report->buckets.push_back(std::move(br));
  }
  return Status::ok();
}

}  // namespace mlakit
