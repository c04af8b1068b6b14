// The contest comparator: an element fails only if |x - y| > atol AND |x - y| / (|y| + 1e-8) > rtol.
// NaN or inf in `actual` fails, except -inf exactly where the reference is -inf (when allowed).
#pragma once

#include <cstdint>
#include <string>

namespace mlakit {

struct Tolerance {
  double atol = 1e-2;
  double rtol = 1e-2;
};

struct CompareReport {
  int64_t count = 0;
  int64_t num_failed = 0;
  double max_abs_err = 0;  // over finite pairs
  double max_rel_err = 0;
  int64_t first_failure = -1;  // flat index
  std::string first_failure_detail;  // "[1234] got nan, expected 0.5"
  bool ok() const { return num_failed == 0; }
  std::string summary() const;  // "ok: 131072 elements, max abs 1.6e-02, max rel 3.1e-03"
};

CompareReport compare_contest(const float* actual, const double* expected, int64_t n,
                              Tolerance tol = {}, bool allow_matching_neg_inf = false);
// Same, for bf16 bits on the actual side.
CompareReport compare_contest_bf16(const uint16_t* actual, const double* expected, int64_t n,
                                   Tolerance tol = {});

}  // namespace mlakit
