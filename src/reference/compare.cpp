#include "reference/compare.h"

#include <cmath>
#include <cstdio>

#include "base/bf16.h"
#include "base/format.h"

namespace mlakit {

namespace {

// One element of the contest rule; true when it passes.
bool check_element(double a, double e, const Tolerance& tol, bool allow_neg_inf, CompareReport* r) {
  if (std::isnan(a)) return false;
  if (std::isinf(a)) return allow_neg_inf && a < 0 && std::isinf(e) && e < 0;
  if (!std::isfinite(e)) return false;  // finite where the reference is -inf (or not finite)
  const double err = std::fabs(a - e);
  const double rel = err / (std::fabs(e) + 1e-8);
  if (err > r->max_abs_err) r->max_abs_err = err;
  if (rel > r->max_rel_err) r->max_rel_err = rel;
  return !(err > tol.atol && rel > tol.rtol);
}

template <class Load>
CompareReport compare_impl(Load load, const double* expected, int64_t n, const Tolerance& tol,
                           bool allow_neg_inf) {
  CompareReport r;
  r.count = n;
  for (int64_t i = 0; i < n; ++i) {
    const double a = load(i);
    if (check_element(a, expected[i], tol, allow_neg_inf, &r)) continue;
    if (r.num_failed++ == 0) {
      r.first_failure = i;
      char buf[96];
      std::snprintf(buf, sizeof buf, "[%lld] got %.6g, expected %.6g", static_cast<long long>(i), a, expected[i]);
      r.first_failure_detail = buf;
    }
  }
  return r;
}

}  // namespace

std::string CompareReport::summary() const {
  const std::string errs = "max abs " + format_sci(max_abs_err, 1) + ", max rel " + format_sci(max_rel_err, 1);
  if (ok()) return "ok: " + std::to_string(count) + " elements, " + errs;
  return "FAILED " + std::to_string(num_failed) + " of " + std::to_string(count) + " elements (first " +
         first_failure_detail + "), " + errs;
}

CompareReport compare_contest(const float* actual, const double* expected, int64_t n, Tolerance tol,
                              bool allow_matching_neg_inf) {
  return compare_impl([actual](int64_t i) { return double(actual[i]); }, expected, n, tol,
                      allow_matching_neg_inf);
}

CompareReport compare_contest_bf16(const uint16_t* actual, const double* expected, int64_t n, Tolerance tol) {
  return compare_impl([actual](int64_t i) { return double(bf16_to_float(actual[i])); }, expected, n, tol,
                      false);
}

}  // namespace mlakit
