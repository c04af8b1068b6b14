// The binding's plans, kept between calls so that a call costs a lookup, not a plan: one cache per
// op (its Problem type), keyed by (problem, device), the previous call's plan in front. An op's
// call type (op_call.h) asks cached_plan with its public planning function; mlakit.empty_cache() and
// cache_stats() reach every op's cache through plan_caches().
//
// All state is touched with the GIL held (the binding never releases it). Callers hold the plan
// through its shared pointer: a registered Python allocator may run other threads mid-call, and
// one of them may empty the caches.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "mlakit/status.h"
#include "py_errors.h"

namespace mlakit::python {

// What empty_cache and cache_stats see of one op's plan cache.
class AnyPlanCache {
 public:
  virtual size_t size() const = 0;
  virtual void clear() = 0;

 protected:
  ~AnyPlanCache() = default;
};

// Every op's plan cache, each added on its first use.
std::vector<AnyPlanCache*>& plan_caches();

// One op's plans per device, keyed by the problem (its == and std::hash cover every field).
template <class Problem, class Plan>
class PlanCache final : public AnyPlanCache {
 public:
  // `plan_function(problem, device, &plan)` plans on a miss; its error is raised.
  template <class PlanFunction>
  std::shared_ptr<const Plan> get(const Problem& p, int device, PlanFunction plan_function) {
    // Most loops repeat one shape.
    if (last_.plan && last_.device == device && last_.problem == p) return last_.plan;
    if (device < 0)
      raise(PyExc_ValueError, "device: expected a CUDA device index, got " + std::to_string(device));
    if (size_t(device) >= maps_.size()) maps_.resize(size_t(device) + 1);
    auto it = maps_[size_t(device)].find(p);
    if (it == maps_[size_t(device)].end()) {
      auto plan = std::make_shared<Plan>();
      if (Status s = plan_function(p, device, plan.get()); !s) raise_status(s);
      if (size() >= kMaxPlans) clear();
      it = maps_[size_t(device)].emplace(p, std::move(plan)).first;
    }
    last_ = Last{p, device, it->second};
    return last_.plan;
  }

  size_t size() const override {
    size_t n = 0;
    for (const Map& m : maps_) n += m.size();
    return n;
  }

  void clear() override {
    for (Map& m : maps_) m.clear();
    last_ = Last{};
  }

 private:
  // Shapes in a process are few (T or b varies by batch); past this many something generates
  // shapes without bound, and forgetting them all is cheaper than tracking recency.
  static constexpr size_t kMaxPlans = 4096;

  using Map = std::unordered_map<Problem, std::shared_ptr<const Plan>>;
  struct Last {
    Problem problem{};
    int device = -1;
    std::shared_ptr<const Plan> plan;
  };
  std::vector<Map> maps_;
  Last last_;
};

// The cache of one op's plans. Never destroyed: at process exit nothing is left to free into a
// CUDA context that may already be gone (the atexit hook empties it earlier).
template <class Problem, class Plan>
PlanCache<Problem, Plan>& plan_cache() {
  static auto* cache = [] {
    auto* c = new PlanCache<Problem, Plan>();
    plan_caches().push_back(c);
    return c;
  }();
  return *cache;
}

// The plan of `problem` on `device`: the cached one, else what the op's public planning function
// (dsa_plan, mla_plan) makes with the default options on that device; its error is raised as the
// mapped Python exception.
template <class Problem, class Options, class Plan>
std::shared_ptr<const Plan> cached_plan(const Problem& problem, int device,
                                        Status (*plan_function)(const Problem&, const Options&, Plan*)) {
  const auto plan_on = [plan_function](const Problem& p, int dev, Plan* out) {
    Options options;
    options.device = dev;
    return plan_function(p, options, out);
  };
  return plan_cache<Problem, Plan>().get(problem, device, plan_on);
}

}  // namespace mlakit::python
