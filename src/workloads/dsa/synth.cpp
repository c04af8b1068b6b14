#include "workloads/dsa/synth.h"

#include <algorithm>
#include <numeric>

namespace mlakit::synth {

int unit_slots(int page_size) {
  if (page_size >= 64) return page_size;
  if (64 % page_size == 0) return 64;
  return page_size;
}

UnitPool::UnitPool(int64_t num_units, Rng* rng) : num_units_(num_units), remaining_(num_units), rng_(rng) {
  perm_.resize(size_t(num_units));
  std::iota(perm_.begin(), perm_.end(), 0);
}

void UnitPool::begin_row(int64_t needed) {
  if (remaining_ < needed) remaining_ = num_units_;
}

int64_t UnitPool::draw() {
  // Partial Fisher-Yates: move a random remaining unit to the end of the remaining range.
  const int64_t i = int64_t(rng_->uniform(uint64_t(remaining_)));
  std::swap(perm_[size_t(i)], perm_[size_t(remaining_ - 1)]);
  return perm_[size_t(--remaining_)];
}

namespace {

// Fallback for caches too small for unit-structured rows: `valid` distinct random slots.
void scattered_row(int64_t num_slots, int valid, Rng& rng, int32_t* row) {
  std::vector<int32_t> perm(static_cast<size_t>(num_slots));
  std::iota(perm.begin(), perm.end(), 0);
  for (int k = 0; k < valid; ++k) {
    const int64_t j = k + int64_t(rng.uniform(uint64_t(num_slots - k)));
    std::swap(perm[size_t(k)], perm[size_t(j)]);
    row[k] = perm[size_t(k)];
  }
}

void pad(const DsaProblem& p, int valid, int32_t* row) { std::fill(row + valid, row + p.topk, -1); }

}  // namespace

bool sequence_row(const DsaProblem& p, int valid, UnitPool& pool, Rng& rng, int32_t* row) {
  if (valid > p.num_slots()) return false;
  const int U = unit_slots(p.page_size);
  const int64_t units = (valid + U - 1) / U;
  if (units > pool.num_units()) {
    scattered_row(p.num_slots(), valid, rng, row);
  } else {
    pool.begin_row(units);
    int k = 0;
    while (k < valid) {
      const int64_t base = pool.draw() * U;
      const int take = std::min(U, valid - k);
      for (int o = 0; o < take; ++o) row[k++] = int32_t(base + o);
    }
  }
  pad(p, valid, row);
  return true;
}

bool topk_row(const DsaProblem& p, int valid, UnitPool& pool, Rng& rng, int32_t* row) {
  if (valid > p.num_slots()) return false;
  const int U = unit_slots(p.page_size);
  const int min_take = std::max(1, U - U / 8);  // 56 of 64: about 60 on average
  const int64_t units_max = (valid + min_take - 1) / min_take;
  if (units_max > pool.num_units()) {
    scattered_row(p.num_slots(), valid, rng, row);
  } else {
    pool.begin_row(units_max);
    std::vector<int> offsets(static_cast<size_t>(U));
    int k = 0;
    while (k < valid) {
      const int64_t base = pool.draw() * U;
      const int take = std::min(int(rng.range(min_take, U)), valid - k);
      std::iota(offsets.begin(), offsets.end(), 0);
      for (int i = 0; i < take; ++i)
        std::swap(offsets[size_t(i)], offsets[size_t(i + int(rng.uniform(uint64_t(U - i))))]);
      std::sort(offsets.begin(), offsets.begin() + take);
      for (int i = 0; i < take; ++i) row[k++] = int32_t(base + offsets[size_t(i)]);
    }
  }
  pad(p, valid, row);
  return true;
}

DsaWorkload blank_workload(std::string name, const DsaProblem& p) {
  DsaWorkload w;
  w.name = std::move(name);
  w.problem = p;
  w.indices.assign(size_t(p.num_tokens) * size_t(p.topk), -1);
  return w;
}

Status synthesize_rows(DsaWorkload* w, const std::vector<int>& valid, RowShape shape, uint64_t seed) {
  const DsaProblem& p = w->problem;
  MLAKIT_RETURN_IF_ERROR(p.validate());
  if (int64_t(valid.size()) != p.num_tokens)
    return Status::invalid_argument(w->name + ": " + std::to_string(valid.size()) +
                                    " valid counts for T = " + std::to_string(p.num_tokens));
  w->indices.assign(size_t(p.num_tokens) * size_t(p.topk), -1);
  Rng rng(mix(seed, hash_string(w->name)));
  UnitPool pool(p.num_slots() / unit_slots(p.page_size), &rng);
  for (int t = 0; t < p.num_tokens; ++t) {
    const int v = valid[size_t(t)];
    const int64_t limit = std::min<int64_t>(p.topk, p.num_slots());
    if (v < 0 || v > limit)
      return Status::invalid_argument(w->name + ": row " + std::to_string(t) + ": expected a valid count in [0, " +
                                      std::to_string(limit) + "] (topk " + std::to_string(p.topk) +
                                      ", " + std::to_string(p.num_slots()) + " slots), got " + std::to_string(v));
    int32_t* row = w->indices.data() + size_t(t) * size_t(p.topk);
    if (shape == RowShape::kTopk || v == p.topk) topk_row(p, v, pool, rng, row);
    else sequence_row(p, v, pool, rng, row);
  }
  return Status::ok();
}

}  // namespace mlakit::synth
