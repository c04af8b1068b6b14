// The DSA CPU reference against hand-computed cases and an independent naive formula (long
// double, direct exp and sum), on fresh random inputs; padding anywhere, empty rows, repeated
// slots, out-of-range indices; and the split-K merge identity.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "base/bf16.h"
#include "reference/dsa/reference.h"
#include "reference/lse_merge.h"

namespace mlakit {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// Random inputs of one problem; the seed comes from std::random_device, so every run sees
// fresh values (it is printed on failure).
struct Case {
  DsaProblem p;
  float sm_scale = 0.1352337788608801f;
  std::vector<uint16_t> q_nope, q_pe, ckv, kpe;
  std::vector<int32_t> idx;

  DsaHostInputs inputs() const {
    return {q_nope.data(), q_pe.data(), ckv.data(), kpe.data(), idx.data(), sm_scale};
  }
  int32_t* row(int t) { return idx.data() + size_t(t) * size_t(p.topk); }
};

uint64_t fresh_seed() { return (uint64_t(std::random_device{}()) << 32) | std::random_device{}(); }

Case random_case(int T, int num_pages, int page_size, int topk, uint64_t seed) {
  Case c;
  c.p.num_tokens = T;
  c.p.num_pages = num_pages;
  c.p.page_size = page_size;
  c.p.topk = topk;
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> randn(0.f, 1.f);
  auto fill = [&](std::vector<uint16_t>& v, int64_t n) {
    v.resize(size_t(n));
    for (auto& x : v) x = float_to_bf16(randn(gen));
  };
  const int64_t slots = c.p.num_slots();
  fill(c.q_nope, int64_t(T) * c.p.num_heads * 512);
  fill(c.q_pe, int64_t(T) * c.p.num_heads * 64);
  fill(c.ckv, slots * 512);
  fill(c.kpe, slots * 64);
  c.idx.assign(size_t(T) * size_t(topk), -1);
  return c;
}

// Fills row t with `n` random valid slots at random positions (the rest stays -1).
void scatter_valid(Case& c, int t, int n, std::mt19937_64& gen) {
  std::vector<int> pos(size_t(c.p.topk));
  for (int k = 0; k < c.p.topk; ++k) pos[size_t(k)] = k;
  std::shuffle(pos.begin(), pos.end(), gen);
  std::uniform_int_distribution<int32_t> slot(0, int32_t(c.p.num_slots() - 1));
  for (int i = 0; i < n; ++i) c.row(t)[pos[size_t(i)]] = slot(gen);
}

// The independent formula: long double, exp and sum without max subtraction (inputs keep the
// logits small), valid = 0 <= idx < num_slots.
void naive(const Case& c, std::vector<long double>* out, std::vector<long double>* lse) {
  const DsaProblem& p = c.p;
  const int H = p.num_heads;
  out->assign(size_t(p.num_tokens) * H * 512, 0.0L);
  lse->assign(size_t(p.num_tokens) * H, -std::numeric_limits<long double>::infinity());
  for (int t = 0; t < p.num_tokens; ++t) {
    for (int h = 0; h < H; ++h) {
      const size_t qrow = size_t(t) * H + h;
      long double sum = 0;
      std::vector<long double> acc(512, 0.0L);
      for (int k = 0; k < p.topk; ++k) {
        const int32_t j = c.idx[size_t(t) * p.topk + k];
        if (j < 0 || j >= p.num_slots()) continue;
        long double s = 0;
        for (int d = 0; d < 512; ++d)
          s += (long double)bf16_to_float(c.q_nope[qrow * 512 + d]) * bf16_to_float(c.ckv[size_t(j) * 512 + d]);
        for (int d = 0; d < 64; ++d)
          s += (long double)bf16_to_float(c.q_pe[qrow * 64 + d]) * bf16_to_float(c.kpe[size_t(j) * 64 + d]);
        const long double w = std::exp((long double)c.sm_scale * s);
        sum += w;
        for (int d = 0; d < 512; ++d) acc[size_t(d)] += w * bf16_to_float(c.ckv[size_t(j) * 512 + d]);
      }
      if (sum == 0) continue;
      (*lse)[qrow] = std::log2(sum);
      for (int d = 0; d < 512; ++d) (*out)[qrow * 512 + d] = acc[size_t(d)] / sum;
    }
  }
}

void expect_matches_naive(const Case& c, const DsaReferenceOutput& r) {
  std::vector<long double> out, lse;
  naive(c, &out, &lse);
  ASSERT_EQ(r.output.size(), out.size());
  ASSERT_EQ(r.lse.size(), lse.size());
  for (size_t i = 0; i < lse.size(); ++i) {
    if (std::isinf(lse[i])) {
      EXPECT_EQ(r.lse[i], kNegInf) << "lse[" << i << "]";
    } else {
      EXPECT_NEAR(r.lse[i], double(lse[i]), 1e-11 * (1 + std::fabs(double(lse[i])))) << "lse[" << i << "]";
    }
  }
  int bad = 0;
  for (size_t i = 0; i < out.size() && bad < 5; ++i)
    if (!(std::fabs(r.output[i] - double(out[i])) <= 1e-11)) {
      ADD_FAILURE() << "output[" << i << "] = " << r.output[i] << ", naive " << double(out[i]);
      ++bad;
    }
}

Status run(const Case& c, DsaReferenceOutput* r, IndexPolicy policy = IndexPolicy::kTreatInvalidAsPadding,
           int threads = 0) {
  return dsa_reference(c.p, c.inputs(), policy, r, threads);
}

double dot_long(const Case& c, int t, int h, int32_t j) {
  const size_t qrow = size_t(t) * c.p.num_heads + h;
  long double s = 0;
  for (int d = 0; d < 512; ++d)
    s += (long double)bf16_to_float(c.q_nope[qrow * 512 + d]) * bf16_to_float(c.ckv[size_t(j) * 512 + d]);
  for (int d = 0; d < 64; ++d)
    s += (long double)bf16_to_float(c.q_pe[qrow * 64 + d]) * bf16_to_float(c.kpe[size_t(j) * 64 + d]);
  return double(s);
}

TEST(DsaReference, SingleSlotOutputIsThatRow) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Case c = random_case(2, 4, 64, 64, seed);
  const int32_t j0 = 77, j1 = 200;
  c.row(0)[5] = j0;    // one valid slot in the middle of the row
  c.row(1)[63] = j1;   // and one in the last position
  DsaReferenceOutput r;
  ASSERT_TRUE(run(c, &r).is_ok());
  for (int t = 0; t < 2; ++t) {
    const int32_t j = t == 0 ? j0 : j1;
    for (int h = 0; h < 16; ++h) {
      const size_t q = size_t(t) * 16 + h;
      for (int d = 0; d < 512; ++d)
        ASSERT_EQ(r.output[q * 512 + d], double(bf16_to_float(c.ckv[size_t(j) * 512 + d]))) << t << " " << h;
      const double s = double(c.sm_scale) * dot_long(c, t, h, j);
      EXPECT_NEAR(r.lse[q], s * 1.4426950408889634, 1e-12 * (1 + std::fabs(s)));
    }
  }
}

// q_nope[h] = e0, q_pe[h] = e0 for every head; row a = (2, 1, 0, ...) with kpe (0.5, 0, ...),
// row b = (-1, 0, 1, 0, ...) with kpe 0. With sm_scale 0.5: s_a = 0.5 (2 + 0.5) = 1.25 and
// s_b = -0.5.
TEST(DsaReference, TwoSlotsHandComputed) {
  Case c = random_case(1, 1, 8, 4, 1);
  c.sm_scale = 0.5f;
  std::fill(c.q_nope.begin(), c.q_nope.end(), 0);
  std::fill(c.q_pe.begin(), c.q_pe.end(), 0);
  std::fill(c.ckv.begin(), c.ckv.end(), 0);
  std::fill(c.kpe.begin(), c.kpe.end(), 0);
  for (int h = 0; h < 16; ++h) {
    c.q_nope[size_t(h) * 512] = float_to_bf16(1.f);
    c.q_pe[size_t(h) * 64] = float_to_bf16(1.f);
  }
  const int a = 3, b = 6;
  c.ckv[a * 512 + 0] = float_to_bf16(2.f);
  c.ckv[a * 512 + 1] = float_to_bf16(1.f);
  c.kpe[a * 64 + 0] = float_to_bf16(0.5f);
  c.ckv[b * 512 + 0] = float_to_bf16(-1.f);
  c.ckv[b * 512 + 2] = float_to_bf16(1.f);
  c.idx = {-1, b, a, -1};
  DsaReferenceOutput r;
  ASSERT_TRUE(run(c, &r).is_ok());
  const double ea = std::exp(1.25), eb = std::exp(-0.5), wa = ea / (ea + eb), wb = eb / (ea + eb);
  for (int h = 0; h < 16; ++h) {
    EXPECT_NEAR(r.lse[size_t(h)], std::log2(ea + eb), 1e-14);
    const double* o = r.output.data() + size_t(h) * 512;
    EXPECT_NEAR(o[0], 2 * wa - wb, 1e-14);
    EXPECT_NEAR(o[1], wa, 1e-14);
    EXPECT_NEAR(o[2], wb, 1e-14);
    for (int d = 3; d < 512; ++d) ASSERT_EQ(o[d], 0.0);
  }
}

TEST(DsaReference, StableForLargeLogits) {
  // s_a = 20 * 64 = 1280 and s_b = 20 * 63 = 1260: exp overflows a double, the
  // max-subtracted form does not.
  Case c = random_case(1, 1, 8, 2, 1);
  c.sm_scale = 20.f;
  std::fill(c.q_nope.begin(), c.q_nope.end(), 0);
  std::fill(c.q_pe.begin(), c.q_pe.end(), 0);
  std::fill(c.ckv.begin(), c.ckv.end(), 0);
  std::fill(c.kpe.begin(), c.kpe.end(), 0);
  for (int h = 0; h < 16; ++h) c.q_nope[size_t(h) * 512] = float_to_bf16(1.f);
  c.ckv[1 * 512] = float_to_bf16(64.f);
  c.ckv[2 * 512] = float_to_bf16(63.f);
  c.idx = {1, 2};
  DsaReferenceOutput r;
  ASSERT_TRUE(run(c, &r).is_ok());
  const double e = std::exp(-20.0);
  for (int h = 0; h < 16; ++h) {
    EXPECT_NEAR(r.lse[size_t(h)], (1280 + std::log1p(e)) / std::log(2.0), 1e-9);
    EXPECT_NEAR(r.output[size_t(h) * 512], (64 + 63 * e) / (1 + e), 1e-12);
  }
}

TEST(DsaReference, MatchesNaiveFormulaWithPaddingAnywhere) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Case c = random_case(5, 40, 64, 300, seed);
  std::mt19937_64 gen(seed ^ 0x5eed);
  const int counts[] = {300, 1, 0, 137, 299};  // full, single, empty, scattered, one hole
  for (int t = 0; t < 5; ++t) scatter_valid(c, t, counts[t], gen);
  DsaReferenceOutput r;
  ASSERT_TRUE(run(c, &r).is_ok());
  expect_matches_naive(c, r);
}

TEST(DsaReference, MatchesNaiveFormulaPageSize1AndEightHeads) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Case c = random_case(3, 500, 1, 256, seed);
  c.p.num_heads = 8;
  c.q_nope.resize(size_t(3) * 8 * 512);
  c.q_pe.resize(size_t(3) * 8 * 64);
  std::mt19937_64 gen(seed ^ 0xabc);
  for (int t = 0; t < 3; ++t) scatter_valid(c, t, 64 * (t + 1), gen);
  DsaReferenceOutput r;
  ASSERT_TRUE(run(c, &r).is_ok());
  expect_matches_naive(c, r);
}

TEST(DsaReference, FirstAndLastSlotOfTheCache) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Case c = random_case(2, 6, 64, 8, seed);
  const int32_t last = int32_t(c.p.num_slots() - 1);
  c.idx = {0, last, -1, 17, -1, -1, -1, -1,   // both ends of the cache and one slot between
           last, -1, -1, -1, -1, -1, -1, 0};  // and at both ends of the row
  DsaReferenceOutput r;
  ASSERT_TRUE(run(c, &r).is_ok());
  expect_matches_naive(c, r);
}

TEST(DsaReference, PaddingPositionDoesNotMatter) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Case c = random_case(2, 16, 64, 128, seed);
  std::mt19937_64 gen(seed);
  scatter_valid(c, 0, 40, gen);  // valid entries scattered among -1
  int k = 0;
  for (int i = 0; i < 128; ++i)  // row 1: the same slots in the same order, as a prefix
    if (c.row(0)[i] != -1) c.row(1)[k++] = c.row(0)[i];
  ASSERT_EQ(k, 40);
  for (int i = 0; i < 40; ++i) ASSERT_NE(c.row(1)[i], -1);
  // Row 1 uses the same q as row 0, so the two rows compare directly.
  std::copy(c.q_nope.begin(), c.q_nope.begin() + 16 * 512, c.q_nope.begin() + 16 * 512);
  std::copy(c.q_pe.begin(), c.q_pe.begin() + 16 * 64, c.q_pe.begin() + 16 * 64);
  DsaReferenceOutput r;
  ASSERT_TRUE(run(c, &r).is_ok());
  for (size_t i = 0; i < 16 * 512; ++i) ASSERT_EQ(r.output[i], r.output[16 * 512 + i]) << i;
  for (size_t i = 0; i < 16; ++i) ASSERT_EQ(r.lse[i], r.lse[16 + i]) << i;
  expect_matches_naive(c, r);
}

TEST(DsaReference, EmptyRowGivesZeroAndNegInf) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Case c = random_case(3, 8, 64, 64, seed);
  std::mt19937_64 gen(seed);
  scatter_valid(c, 0, 10, gen);
  // Row 1: all -1. Row 2: only out-of-range values, which are padding too.
  for (int k = 0; k < 64; ++k) c.row(2)[k] = k % 2 ? int32_t(c.p.num_slots()) : -2;
  DsaReferenceOutput r;
  ASSERT_TRUE(run(c, &r).is_ok());
  for (int t = 1; t < 3; ++t)
    for (int h = 0; h < 16; ++h) {
      EXPECT_EQ(r.lse[size_t(t) * 16 + h], kNegInf);
      for (int d = 0; d < 512; ++d) ASSERT_EQ(r.output[(size_t(t) * 16 + h) * 512 + d], 0.0);
    }
  for (int h = 0; h < 16; ++h) EXPECT_TRUE(std::isfinite(r.lse[size_t(h)]));
}

TEST(DsaReference, RepeatedSlotCountsEachTime) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Case c = random_case(4, 8, 64, 4, seed);
  // All four tokens share one q, so the rows compare directly.
  for (int t = 1; t < 4; ++t) {
    std::copy(c.q_nope.begin(), c.q_nope.begin() + 16 * 512, c.q_nope.begin() + t * 16 * 512);
    std::copy(c.q_pe.begin(), c.q_pe.begin() + 16 * 64, c.q_pe.begin() + t * 16 * 64);
  }
  const int32_t a = 11, b = 300;
  c.idx = {a, -1, -1, -1,   // [a]
           a, a, -1, -1,    // [a, a]
           a, b, -1, -1,    // [a, b]
           a, -1, b, a};    // [a, b, a]: a weighs twice
  DsaReferenceOutput r;
  ASSERT_TRUE(run(c, &r).is_ok());
  expect_matches_naive(c, r);
  for (int h = 0; h < 16; ++h) {
    // Two copies of one slot: the same output, lse + log2(2).
    EXPECT_NEAR(r.lse[16 + size_t(h)], r.lse[size_t(h)] + 1.0, 1e-12);
    for (int d = 0; d < 512; ++d)
      ASSERT_NEAR(r.output[(16 + size_t(h)) * 512 + d], r.output[size_t(h) * 512 + d], 1e-12);
    // [a, b, a] is not [a, b]: the weights are 2 e^sa : e^sb.
    const double sa = double(c.sm_scale) * dot_long(c, 0, h, a), sb = double(c.sm_scale) * dot_long(c, 0, h, b);
    const double wa = 2 * std::exp(sa) / (2 * std::exp(sa) + std::exp(sb));
    const double va = bf16_to_float(c.ckv[a * 512 + 7]), vb = bf16_to_float(c.ckv[b * 512 + 7]);
    EXPECT_NEAR(r.output[(48 + size_t(h)) * 512 + 7], wa * va + (1 - wa) * vb, 1e-12);
    EXPECT_NEAR(r.lse[48 + size_t(h)], std::log2(2 * std::exp(sa) + std::exp(sb)), 1e-12);
  }
}

TEST(DsaReference, OutOfRangeIsPaddingOrRejected) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Case c = random_case(2, 10, 64, 6, seed);
  const int32_t n = int32_t(c.p.num_slots());  // 640
  std::copy(c.q_nope.begin(), c.q_nope.begin() + 16 * 512, c.q_nope.begin() + 16 * 512);
  std::copy(c.q_pe.begin(), c.q_pe.begin() + 16 * 64, c.q_pe.begin() + 16 * 64);
  c.idx = {5, 100, -1, -1, -1, -1,               // the valid slots alone
           5, n, -7, 100, INT32_MAX, INT32_MIN};  // the same, with invalid values between
  DsaReferenceOutput r;
  ASSERT_TRUE(run(c, &r).is_ok());
  for (size_t i = 0; i < 16 * 512; ++i) ASSERT_EQ(r.output[i], r.output[16 * 512 + i]);
  for (size_t i = 0; i < 16; ++i) ASSERT_EQ(r.lse[i], r.lse[16 + i]);

  const Status s = run(c, &r, IndexPolicy::kReject);
  ASSERT_EQ(s.code(), Code::kInvalidArgument);
  // The same message as the device check (dsa_check_indices): count, range, first position, value.
  EXPECT_EQ(s.message(), "sparse_indices: 4 entries are neither -1 nor a slot in [0, 640); first at [1, 1] = 640");
  int64_t count = 0;
  EXPECT_FALSE(dsa_check_indices_host(c.p, c.idx.data(), &count).is_ok());
  EXPECT_EQ(count, 4);

  // Only -1 and slots of the cache (the last one included): the checked mode accepts it.
  c.idx = {5, 100, -1, -1, -1, -1, 5, -1, -1, 100, 639, 0};
  EXPECT_TRUE(run(c, &r, IndexPolicy::kReject).is_ok());
  EXPECT_TRUE(dsa_check_indices_host(c.p, c.idx.data(), &count).is_ok());
  EXPECT_EQ(count, 0);
}

// Split-K: per-slice (O_i normalized, lse_i) merged with merge_lse_partials equals the unsplit
// row. Slices are computed by the reference itself on rows where every other entry is -1.
TEST(DsaReference, SplitKMergeEqualsUnsplit) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Case whole = random_case(1, 32, 64, 1024, seed);
  std::mt19937_64 gen(seed);
  scatter_valid(whole, 0, 700, gen);
  DsaReferenceOutput full;
  ASSERT_TRUE(run(whole, &full).is_ok());

  const int cuts[] = {0, 128, 128, 512, 900, 1000, 1024};  // [128, 128) and [900, 1000) may be empty
  const int num_parts = 6;
  std::vector<double> part_lse(size_t(num_parts) * 16), part_o(size_t(num_parts) * 16 * 512);
  for (int s = 0; s < num_parts; ++s) {
    Case slice = whole;
    for (int k = 0; k < 1024; ++k)
      if (k < cuts[s] || k >= cuts[s + 1]) slice.idx[size_t(k)] = -1;
    DsaReferenceOutput r;
    ASSERT_TRUE(run(slice, &r).is_ok());
    for (int h = 0; h < 16; ++h) {
      part_lse[size_t(h) * num_parts + s] = r.lse[size_t(h)];
      double* o = part_o.data() + (size_t(h) * num_parts + s) * 512;
      std::copy(r.output.begin() + h * 512, r.output.begin() + (h + 1) * 512, o);
      // An empty slice's O is never read: poison it.
      if (std::isinf(r.lse[size_t(h)])) std::fill(o, o + 512, std::nan(""));
    }
  }
  // Slice [128, 128) is empty by construction, so the merge sees at least one -inf partial.
  EXPECT_EQ(part_lse[1], kNegInf);
  for (int h = 0; h < 16; ++h) {
    double lse = 0;
    std::vector<double> o(512);
    merge_lse_partials(num_parts, 512, part_lse.data() + size_t(h) * num_parts,
                       part_o.data() + size_t(h) * num_parts * 512, &lse, o.data());
    EXPECT_NEAR(lse, full.lse[size_t(h)], 1e-12 * (1 + std::fabs(lse)));
    for (int d = 0; d < 512; ++d) ASSERT_NEAR(o[size_t(d)], full.output[size_t(h) * 512 + d], 1e-12) << h << " " << d;
  }
}

TEST(DsaReference, MergeOfOnlyEmptyPartialsIsTheEmptyRow) {
  const double lse_parts[] = {kNegInf, kNegInf};
  const double o_parts[] = {std::nan(""), 1.0, 2.0, std::nan("")};
  double lse = 0, o[2] = {5, 5};
  merge_lse_partials(2, 2, lse_parts, o_parts, &lse, o);
  EXPECT_EQ(lse, kNegInf);
  EXPECT_EQ(o[0], 0.0);
  EXPECT_EQ(o[1], 0.0);
  // One part: the merge is the identity.
  const double one_lse[] = {3.5}, one_o[] = {0.25, -2.0};
  merge_lse_partials(1, 2, one_lse, one_o, &lse, o);
  EXPECT_DOUBLE_EQ(lse, 3.5);
  EXPECT_DOUBLE_EQ(o[0], 0.25);
  EXPECT_DOUBLE_EQ(o[1], -2.0);
  // Two equal parts: lse + 1, O unchanged.
  const double two_lse[] = {3.5, 3.5}, two_o[] = {0.25, -2.0, 0.25, -2.0};
  merge_lse_partials(2, 2, two_lse, two_o, &lse, o);
  EXPECT_DOUBLE_EQ(lse, 4.5);
  EXPECT_DOUBLE_EQ(o[0], 0.25);
}

TEST(DsaReference, ThreadCountDoesNotChangeResult) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Case c = random_case(7, 20, 64, 256, seed);
  std::mt19937_64 gen(seed);
  for (int t = 0; t < 7; ++t) scatter_valid(c, t, 30 * t, gen);
  DsaReferenceOutput r1, r2, r5;
  ASSERT_TRUE(run(c, &r1, IndexPolicy::kTreatInvalidAsPadding, 1).is_ok());
  ASSERT_TRUE(run(c, &r2, IndexPolicy::kTreatInvalidAsPadding, 2).is_ok());
  ASSERT_TRUE(run(c, &r5, IndexPolicy::kTreatInvalidAsPadding, 5).is_ok());
  EXPECT_EQ(r1.output, r2.output);
  EXPECT_EQ(r1.output, r5.output);
  EXPECT_EQ(r1.lse, r2.lse);
  EXPECT_EQ(r1.lse, r5.lse);
}

TEST(DsaReference, RejectsBadProblemsAndNullPointers) {
  Case c = random_case(1, 2, 64, 8, 1);
  DsaReferenceOutput r;
  DsaHostInputs in = c.inputs();
  in.kpe = nullptr;
  Status s = dsa_reference(c.p, in, IndexPolicy::kTreatInvalidAsPadding, &r);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_NE(s.message().find("kpe"), std::string::npos) << s.message();
  in = c.inputs();
  in.indices = nullptr;
  s = dsa_reference(c.p, in, IndexPolicy::kTreatInvalidAsPadding, &r);
  EXPECT_NE(s.message().find("indices"), std::string::npos) << s.message();
  EXPECT_EQ(dsa_reference(c.p, c.inputs(), IndexPolicy::kTreatInvalidAsPadding, nullptr).code(),
            Code::kInvalidArgument);
  DsaProblem bad = c.p;
  bad.head_dim_ckv = 256;
  s = dsa_reference(bad, c.inputs(), IndexPolicy::kTreatInvalidAsPadding, &r);
  EXPECT_NE(s.message().find("head_dim_ckv"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace mlakit
