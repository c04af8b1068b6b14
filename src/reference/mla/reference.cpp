// The MLA decode CPU reference in fp64. One unit of work is (request b, query i, a group of up to 8
// heads): its n_{b,i} rows are read in blocks of 32 (converted to double once per block, zeros
// for a page id outside the cache), every head of the group scores them, then a max-subtracted
// softmax per head and a second pass over the rows for the weighted sum of the latent rows. Units
// are spread over threads (base/parallel.h); each is computed by one thread in a fixed order, so the result
// does not depend on the thread count.
#include "reference/mla/reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "base/bf16.h"
#include "base/parallel.h"
#include "plan/mla/semantics.h"
#include "reference/dot.h"

namespace mlakit {

namespace {

// 32 rows x 576 doubles = 144 KiB: one block of rows stays in L2 while every head of a group uses it.
constexpr int kBlockRows = 32;
// Heads per unit: enough to reuse a converted block, few enough that one request of 16 heads
// still makes two units for two threads.
constexpr int kHeadGroup = 8;
constexpr double kLog2e = 1.4426950408889634074;

using reference::axpy;
using reference::dot;

void to_double(const uint16_t* src, int n, double* dst) {
  for (int d = 0; d < n; ++d) dst[d] = bf16_to_float(src[d]);
}

const uint16_t* bf16(const void* base, int64_t offset) { return static_cast<const uint16_t*>(base) + offset; }

// The unit of work `index` enumerates: (b, i, heads [h0, h1)).
struct Unit {
  int b = 0, i = 0, h0 = 0, h1 = 0;
};

Unit unit_of(const MlaProblem& p, int64_t index) {
  const int groups = (p.num_heads + kHeadGroup - 1) / kHeadGroup;
  Unit u;
  u.h0 = int(index % groups) * kHeadGroup;
  u.h1 = std::min(p.num_heads, u.h0 + kHeadGroup);
  u.i = int(index / groups % p.seq_q);
  u.b = int(index / groups / p.seq_q);
  return u;
}

class UnitSolver {
 public:
  UnitSolver(const MlaProblem& p, const MlaTensors& t, MlaReferenceOutput* out) : p_(p), t_(t), out_(out) {}
  void solve(const Unit& u);

 private:
  void load_rows(int b, int64_t j0, int64_t j1, bool with_kpe);
  void load_queries(const Unit& u);
  void score(const Unit& u, int64_t n);
  void softmax(const Unit& u, int64_t n, double* lse);
  void weighted_sum(const Unit& u, int64_t n, double* o);

  const MlaProblem& p_;
  const MlaTensors& t_;
  MlaReferenceOutput* out_;
  std::vector<double> rows_;    // [kBlockRows, ckv + kpe]
  std::vector<double> q_;       // [heads of the unit, ckv + kpe]
  std::vector<double> scores_;  // [heads of the unit, n]: logits, then exp(logit - max)
  std::vector<double> inv_sum_;
};

// Rows [j0, j1) of request b as doubles; a page id outside the cache gives zero rows.
void UnitSolver::load_rows(int b, int64_t j0, int64_t j1, bool with_kpe) {
  const int C = p_.head_dim_ckv, R = p_.head_dim_kpe, D = C + R;
  rows_.resize(size_t(kBlockRows) * D);
  const int32_t* table = t_.block_table + int64_t(b) * t_.block_table_stride_b;
  for (int64_t j = j0; j < j1; ++j) {
    double* dst = rows_.data() + size_t(j - j0) * D;
    const int32_t page = table[j / p_.page_size];
    const int64_t row = j % p_.page_size;
    if (page < 0 || page >= p_.num_pages) {
      std::fill(dst, dst + D, 0.0);
      continue;
    }
    to_double(bf16(t_.ckv_cache, page * t_.ckv_stride_page + row * t_.ckv_stride_row), C, dst);
    if (with_kpe) to_double(bf16(t_.kpe_cache, page * t_.kpe_stride_page + row * t_.kpe_stride_row), R, dst + C);
  }
}

void UnitSolver::load_queries(const Unit& u) {
  const int C = p_.head_dim_ckv, R = p_.head_dim_kpe, D = C + R;
  q_.resize(size_t(u.h1 - u.h0) * D);
  for (int h = u.h0; h < u.h1; ++h) {
    double* dst = q_.data() + size_t(h - u.h0) * D;
    to_double(bf16(t_.q_nope, u.b * t_.q_nope_stride_b + u.i * t_.q_nope_stride_s + h * t_.q_nope_stride_h), C, dst);
    to_double(bf16(t_.q_pe, u.b * t_.q_pe_stride_b + u.i * t_.q_pe_stride_s + h * t_.q_pe_stride_h), R, dst + C);
  }
}

// s[h, j] = sm_scale * (q_nope . ckv_j + q_pe . kpe_j) for the unit's heads and rows [0, n).
void UnitSolver::score(const Unit& u, int64_t n) {
  const int D = p_.head_dim_ckv + p_.head_dim_kpe, G = u.h1 - u.h0;
  scores_.resize(size_t(G) * size_t(n));
  for (int64_t j0 = 0; j0 < n; j0 += kBlockRows) {
    const int64_t j1 = std::min<int64_t>(n, j0 + kBlockRows);
    load_rows(u.b, j0, j1, true);
    for (int g = 0; g < G; ++g) {
      double* s = scores_.data() + size_t(g) * size_t(n);
      for (int64_t j = j0; j < j1; ++j)
        s[j] = double(t_.sm_scale) * dot(q_.data() + size_t(g) * D, rows_.data() + size_t(j - j0) * D, D);
    }
  }
}

// Max-subtracted softmax numerators in place; lse in base 2; inv_sum_[g] = 1 / sum_j exp(s_j - max).
void UnitSolver::softmax(const Unit& u, int64_t n, double* lse) {
  const int G = u.h1 - u.h0;
  inv_sum_.assign(size_t(G), 0.0);
  for (int g = 0; g < G; ++g) {
    double* s = scores_.data() + size_t(g) * size_t(n);
    const double m = *std::max_element(s, s + n);
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) {
      s[j] = std::exp(s[j] - m);
      sum += s[j];
    }
    lse[g] = (m + std::log(sum)) * kLog2e;
    inv_sum_[size_t(g)] = 1.0 / sum;
  }
}

// o[h] = sum_j p[h, j] ckv_j / sum_h over rows [0, n).
void UnitSolver::weighted_sum(const Unit& u, int64_t n, double* o) {
  const int C = p_.head_dim_ckv, D = C + p_.head_dim_kpe, G = u.h1 - u.h0;
  std::fill(o, o + int64_t(G) * C, 0.0);
  for (int64_t j0 = 0; j0 < n; j0 += kBlockRows) {
    const int64_t j1 = std::min<int64_t>(n, j0 + kBlockRows);
    load_rows(u.b, j0, j1, false);
    for (int g = 0; g < G; ++g) {
      const double* s = scores_.data() + size_t(g) * size_t(n);
      for (int64_t j = j0; j < j1; ++j) axpy(o + int64_t(g) * C, s[j], rows_.data() + size_t(j - j0) * D, C);
    }
  }
  for (int g = 0; g < G; ++g)
    for (int d = 0; d < C; ++d) o[int64_t(g) * C + d] *= inv_sum_[size_t(g)];
}

void UnitSolver::solve(const Unit& u) {
  const int C = p_.head_dim_ckv, G = u.h1 - u.h0;
  const int64_t first = (int64_t(u.b) * p_.seq_q + u.i) * p_.num_heads + u.h0;  // (b, i, h0)
  double* o = out_->output.data() + first * C;
  double* lse = out_->lse.data() + first;
  const int64_t n = mla_query_rows(p_, mla_request_rows(p_, t_.cache_seqlens[u.b]), u.i);
  if (n == 0) {  // a query that sees no row: output 0, lse -inf
    std::fill(o, o + int64_t(G) * C, 0.0);
    std::fill(lse, lse + G, -std::numeric_limits<double>::infinity());
    return;
  }
  load_queries(u);
  score(u, n);
  softmax(u, n, lse);
  weighted_sum(u, n, o);
}

Status check_pointers(const MlaTensors& t) {
  const struct {
    const void* ptr;
    const char* name;
  } required[] = {{t.q_nope, "q_nope"},       {t.q_pe, "q_pe"},           {t.ckv_cache, "ckv_cache"},
                  {t.kpe_cache, "kpe_cache"}, {t.block_table, "block_table"}, {t.cache_seqlens, "cache_seqlens"}};
  for (const auto& r : required)
    if (r.ptr == nullptr) return Status::invalid_argument(std::string("mla_reference: inputs.") + r.name + " is null");
  return Status::ok();
}

}  // namespace

Status mla_reference(const MlaProblem& problem, const MlaTensors& inputs, MlaReferenceOutput* out,
                     int num_threads) {
  MLAKIT_RETURN_IF_ERROR(problem.validate());
  if (out == nullptr) return Status::invalid_argument("mla_reference: out is null");
  MLAKIT_RETURN_IF_ERROR(check_pointers(inputs));
  const MlaTensors t = mla_resolve_strides(problem, inputs);
  const int64_t queries = int64_t(problem.batch) * problem.seq_q * problem.num_heads;
  out->output.assign(size_t(queries) * problem.head_dim_ckv, 0.0);
  out->lse.assign(size_t(queries), -std::numeric_limits<double>::infinity());

  const int64_t units = int64_t(problem.batch) * problem.seq_q * ((problem.num_heads + kHeadGroup - 1) / kHeadGroup);
  run_claiming(units, worker_count(num_threads, units), [&](auto claim) {
    UnitSolver solver(problem, t, out);
    for (int64_t u = claim(); u < units; u = claim()) solver.solve(unit_of(problem, u));
  });
  return Status::ok();
}

}  // namespace mlakit
