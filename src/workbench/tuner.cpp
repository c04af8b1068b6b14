// The autotuner (see tuner.h): enumerate, validate, verify, time, pick, persist.
#include "workbench/tuner.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include <cuda_runtime_api.h>

#include "base/cuda_status.h"
#include "base/format.h"
#include "base/run_info.h"
#include "runtime/tune_cache.h"
#include "workbench/report.h"
#include "workbench/session.h"

namespace mlakit {
namespace {

// Verifies (when asked) and times one tiling on the session's current workload.
Status evaluate(DsaSession& session, const DsaKernel& kernel, const DsaTiling& tiling,
                const TuneOptions& o, double* median_us) {
  if (o.verify) {
    VerifyResult v;
    MLAKIT_RETURN_IF_ERROR(session.verify(kernel, tiling, &v));
    if (!v.ok()) {
      std::string why = "verification failed:";
      if (!v.output.ok()) why += " output " + v.output.summary() + ";";
      if (!v.lse.ok()) why += " lse " + v.lse.summary() + ";";
      if (!v.deterministic) why += " two runs differ bitwise;";
      why.pop_back();
      return Status::internal(why);
    }
  }
  TimingResult t;
  MLAKIT_RETURN_IF_ERROR(session.time(kernel, tiling, o.timing, &t));
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

}  // namespace

std::vector<TilingChoice> enumerate_tilings(const DsaKernel& kernel,
                                            const std::vector<DsaProblem>& problems,
                                            const DeviceFacts& device) {
  std::vector<TilingChoice> out;
  for (const DsaProblem& p : problems)
    for (const DsaTiling& t : kernel.search_space(p))
      if (std::none_of(out.begin(), out.end(), [&](const TilingChoice& c) { return c.tiling == t; }))
        out.push_back({t, ""});
  bool same_tokens = true;
  for (const DsaProblem& p : problems) same_tokens &= p.num_tokens == problems.front().num_tokens;
  for (TilingChoice& c : out)
    for (const DsaProblem& p : problems) {
      const Status st = kernel.validate(p, c.tiling, device);
      if (st) continue;
      // Kernels often open their reason with "tiling <name>: "; the skip line names it already.
      std::string why = st.message();
      const std::string prefix = "tiling " + c.tiling.name() + ": ";
      if (why.rfind(prefix, 0) == 0) why = why.substr(prefix.size());
      c.skip_reason = (same_tokens ? "" : "T=" + std::to_string(p.num_tokens) + ": ") + why;
      break;
    }
  return out;
}

std::vector<BucketGroup> group_by_bucket(const std::vector<DsaWorkload>& workloads) {
  std::vector<BucketGroup> groups;
  for (size_t i = 0; i < workloads.size(); ++i) {
    const std::string b = dsa_shape_bucket(workloads[i].problem);
    auto it = std::find_if(groups.begin(), groups.end(), [&](const BucketGroup& g) { return g.bucket == b; });
    if (it == groups.end()) groups.push_back({b, {i}});
    else it->workloads.push_back(i);
  }
  return groups;
}

Status tune_dsa(const DsaKernel& kernel, const TuneOptions& o, TuneReport* report) {
  auto log = [&](const std::string& line) {
    if (o.log) o.log(line);
  };
  const auto t_start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f s",
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count());
    return std::string(buf);
  };

  *report = TuneReport{};
  report->device = o.device.name;
  report->kernel_key = kernel.info().key;
  report->cache_path = o.cache_path.empty() ? default_tune_cache_path() : o.cache_path;
  DsaSuite suite;
  MLAKIT_RETURN_IF_ERROR(make_dsa_suite(o.suite, o.seed, &suite));
  TuneCache cache;
  if (!o.dry_run) {
    // A corrupt file is reported, never silently replaced: it may hold other devices' results.
    MLAKIT_RETURN_IF_ERROR(cache.load(report->cache_path));
    MLAKIT_RETURN_IF_ERROR(check_kernel_arch(kernel, o.device));
  }
  std::unique_ptr<DsaSession> session;
  if (!o.dry_run) session = std::make_unique<DsaSession>(o.seed);

  const std::vector<BucketGroup> groups = group_by_bucket(suite.workloads);
  for (size_t g = 0; g < groups.size(); ++g) {
    const BucketGroup& group = groups[g];
    TuneBucketResult br;
    br.bucket = group.bucket;
    std::vector<DsaProblem> problems;
    for (size_t i : group.workloads) {
      br.workloads.push_back(suite.workloads[i].name);
      problems.push_back(suite.workloads[i].problem);
    }
    const std::vector<TilingChoice> choices = enumerate_tilings(kernel, problems, o.device);
    int valid = 0;
    for (const TilingChoice& c : choices) {
      br.candidates.push_back({c.tiling, c.skip_reason, {}, 0});
      valid += c.valid();
    }
    log("[tune] bucket " + std::to_string(g + 1) + "/" + std::to_string(groups.size()) + " " +
        br.bucket + ": " + std::to_string(br.workloads.size()) + " workload(s), " +
        std::to_string(choices.size()) + " tilings, " + std::to_string(valid) + " valid");
    for (const TilingChoice& c : choices)
      if (!c.valid()) log("  skip " + c.tiling.name() + ": " + c.skip_reason);
    if (o.dry_run) {
      br.decision = "dry run: nothing timed";
      report->buckets.push_back(std::move(br));
      continue;
    }

    double default_sum = 0;
    bool default_known = true;
    for (size_t j = 0; j < group.workloads.size(); ++j) {
      const DsaWorkload& w = suite.workloads[group.workloads[j]];
      MLAKIT_RETURN_IF_ERROR(session->prepare(w));
      const DsaTiling fallback = kernel.default_tiling(w.problem, o.device);
      bool default_done = false;
      double best = 0;
      std::string best_name;
      for (TuneCandidateResult& c : br.candidates) {
        if (!c.skip_reason.empty()) continue;
        double us = 0;
        const Status st = evaluate(*session, kernel, c.tiling, o, &us);
        if (!st) {
          c.skip_reason = w.name + ": " + st.message();
          log("  drop " + c.tiling.name() + ": " + c.skip_reason);
          MLAKIT_RETURN_IF_ERROR(context_alive(c.tiling.name() + " on " + w.name));
          continue;
        }
        c.median_us.push_back(us);
        if (o.verbose) log("    " + w.name + " " + c.tiling.name() + ": " + format_us(us));
        if (best_name.empty() || us < best) {
          best = us;
          best_name = c.tiling.name();
        }
        if (c.tiling == fallback) {
          default_sum += us;
          default_done = true;
        }
      }
      if (!default_done) {
        // The default is outside the search space, invalid for the bucket or failed above:
        // measure it on its own (a failure leaves the baseline unknown).
        double us = 0;
        Status st = kernel.validate(w.problem, fallback, o.device);
        if (st) st = evaluate(*session, kernel, fallback, o, &us);
        if (st) {
          default_sum += us;
        } else {
          default_known = false;
          log("  default " + fallback.name() + " on " + w.name + ": " + st.message());
          MLAKIT_RETURN_IF_ERROR(context_alive("the default tiling on " + w.name));
        }
      }
      log("[tune]   " + br.bucket + " workload " + std::to_string(j + 1) + "/" +
          std::to_string(group.workloads.size()) + " " + w.name +
          (best_name.empty() ? ": no tiling ran" : ": best " + best_name + " " + format_us(best)) +
          " (" + elapsed() + ")");
    }
    if (default_known && !group.workloads.empty()) br.default_us = default_sum / group.workloads.size();

    for (TuneCandidateResult& c : br.candidates) {
      if (!c.skip_reason.empty() || c.median_us.size() != group.workloads.size()) continue;
      double sum = 0;
      for (double v : c.median_us) sum += v;
      c.mean_us = sum / c.median_us.size();
      if (!br.has_winner || c.mean_us < br.winner_us) {
        br.has_winner = true;
        br.winner = c.tiling;
        br.winner_us = c.mean_us;
      }
    }

    if (!br.has_winner) {
      br.decision = "no tiling ran on every workload; cache unchanged";
    } else if (br.default_us > 0 && br.winner_us >= br.default_us) {
      const bool removed = cache.erase(o.device.name, kernel.info().key, br.bucket);
      br.decision = "the built-in default (" + format_us(br.default_us) + ") is as fast as the best fixed tiling " +
                    br.winner.name() + " (" + format_us(br.winner_us) + "): " +
                    (removed ? "old entry removed" : "no entry written");
      if (removed) {
        MLAKIT_RETURN_IF_ERROR(cache.save(report->cache_path));
        reload_tune_cache();
      }
    } else {
      TuneEntry e;
      e.device = o.device.name;
      e.kernel_key = kernel.info().key;
      e.bucket = br.bucket;
      e.tiling = br.winner;
      e.median_us = br.winner_us;
      e.default_us = br.default_us;
      e.suite = o.suite;
      e.seed = o.seed;
      e.workloads = int(group.workloads.size());
      e.git = git_revision();
      e.updated = utc_timestamp();
      cache.put(e);
      MLAKIT_RETURN_IF_ERROR(cache.save(report->cache_path));
      reload_tune_cache();
      br.written = true;
      br.decision = "wrote " + br.winner.name() + " (" + format_us(br.winner_us) +
                    (br.default_us > 0 ? ", default " + format_us(br.default_us) : std::string(", default unknown")) +
                    ")";
    }
    log("[tune] " + br.bucket + ": " + br.decision);
    report->buckets.push_back(std::move(br));
  }
  return Status::ok();
}

}  // namespace mlakit
