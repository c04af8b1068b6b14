// The contest comparator: an element fails only when both the absolute and the relative error
// exceed their tolerance; NaN and inf fail, except lse = -inf where the reference is -inf.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "base/bf16.h"
#include "reference/compare.h"

namespace mlakit {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

TEST(Compare, ExactMatchPasses) {
  const std::vector<float> a = {0.5f, -2.f, 3.25f};
  const std::vector<double> e = {0.5, -2.0, 3.25};
  const CompareReport r = compare_contest(a.data(), e.data(), 3);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.count, 3);
  EXPECT_EQ(r.max_abs_err, 0.0);
  EXPECT_EQ(r.first_failure, -1);
  EXPECT_EQ(r.summary(), "ok: 3 elements, max abs 0.0e+00, max rel 0.0e+00");
}

TEST(Compare, OnlyAbsoluteOverToleranceStillPasses) {
  // |err| = 0.5 > 1e-2, but rel = 0.5 / 1000 = 5e-4 <= 1e-2.
  const float a[] = {1000.5f};
  const double e[] = {1000.0};
  const CompareReport r = compare_contest(a, e, 1);
  EXPECT_TRUE(r.ok()) << r.summary();
  EXPECT_DOUBLE_EQ(r.max_abs_err, 0.5);
}

TEST(Compare, OnlyRelativeOverToleranceStillPasses) {
  // rel = 0.005 / 1e-4 = 50 > 1e-2, but |err| = 0.005 <= 1e-2.
  const float a[] = {0.0051f};
  const double e[] = {0.0001};
  const CompareReport r = compare_contest(a, e, 1);
  EXPECT_TRUE(r.ok()) << r.summary();
  EXPECT_GT(r.max_rel_err, 1.0);
}

TEST(Compare, BothOverToleranceFails) {
  const float a[] = {0.5f, 1.2f, 0.5f};
  const double e[] = {0.5, 1.0, 0.5};  // err 0.2, rel 0.2
  const CompareReport r = compare_contest(a, e, 3);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.num_failed, 1);
  EXPECT_EQ(r.first_failure, 1);
  EXPECT_EQ(r.first_failure_detail, "[1] got 1.2, expected 1");
  EXPECT_EQ(r.summary().rfind("FAILED 1 of 3 elements (first [1] got 1.2, expected 1)", 0), 0u) << r.summary();
}

TEST(Compare, TolerancesAreExclusive) {
  // err = 2^-7 exactly: "err > atol" is false at atol = 2^-7, so the element passes even with
  // rtol = 0; one ulp of tolerance less and it fails.
  const float a[] = {1.0f};
  const double e[] = {1.0 - 1.0 / 128};
  EXPECT_TRUE(compare_contest(a, e, 1, Tolerance{1.0 / 128, 0.0}).ok());
  EXPECT_FALSE(compare_contest(a, e, 1, Tolerance{1.0 / 256, 0.0}).ok());
  EXPECT_TRUE(compare_contest(a, e, 1).ok());  // the contest's 1e-2 / 1e-2
}

TEST(Compare, NaNAndInfFail) {
  const float a[] = {kNaN, float(kInf), -float(kInf), 1.f};
  const double e[] = {0.5, 1.0, 1.0, 1.0};
  const CompareReport r = compare_contest(a, e, 4, {}, /*allow_matching_neg_inf=*/true);
  EXPECT_EQ(r.num_failed, 3);
  EXPECT_EQ(r.first_failure, 0);
  EXPECT_EQ(r.first_failure_detail, "[0] got nan, expected 0.5");
}

TEST(Compare, NegInfMatchesOnlyWhereExpectedAndAllowed) {
  const float a[] = {-float(kInf), 2.f};
  const double e[] = {-kInf, 2.0};
  EXPECT_TRUE(compare_contest(a, e, 2, {}, true).ok());
  EXPECT_FALSE(compare_contest(a, e, 2, {}, false).ok());  // not allowed: inf fails

  const float finite[] = {-1e30f};
  const double neg_inf[] = {-kInf};
  EXPECT_FALSE(compare_contest(finite, neg_inf, 1, {}, true).ok());  // finite where -inf expected
  const float pos_inf[] = {float(kInf)};
  EXPECT_FALSE(compare_contest(pos_inf, neg_inf, 1, {}, true).ok());  // +inf never matches
}

TEST(Compare, Bf16Side) {
  // 3.0 and 3.015625 are adjacent bf16 values; bf16 rounding of a 1e-2 relative error passes.
  const uint16_t a[] = {float_to_bf16(3.0f), float_to_bf16(-0.25f), float_to_bf16(kNaN)};
  const double e[] = {3.01, -0.25, 1.0};
  const CompareReport r = compare_contest_bf16(a, e, 3);
  EXPECT_EQ(r.num_failed, 1);
  EXPECT_EQ(r.first_failure, 2);
  EXPECT_NEAR(r.max_abs_err, 0.01, 1e-12);
  const uint16_t off[] = {float_to_bf16(3.5f)};
  EXPECT_FALSE(compare_contest_bf16(off, e, 1).ok());
}

TEST(Compare, EmptyInputIsOk) {
  const CompareReport r = compare_contest(nullptr, nullptr, 0);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.count, 0);
}

}  // namespace
}  // namespace mlakit
