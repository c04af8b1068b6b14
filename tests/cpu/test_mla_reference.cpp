// The MLA decode CPU reference against an independent naive formula (long double, one query and
// one head at a time, rows gathered by their definition) on fresh random inputs, and the contract's
// corners: queries that see no row, the causal rule, clamped lengths, page ids outside the cache,
// NaN in rows no request reads, layouts, thread counts; and the checked mode's messages.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "base/bf16.h"
#include "reference/mla/reference.h"

namespace mlakit {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();
constexpr int C = 512, R = 64, D = C + R;

uint64_t fresh_seed() { return (uint64_t(std::random_device{}()) << 32) | std::random_device{}(); }

// Separate contiguous tensors of one small problem.
struct Case {
  MlaProblem p;
  float sm_scale = 0.1352337788608801f;
  std::vector<uint16_t> q_nope, q_pe, ckv, kpe;
  std::vector<int32_t> table, seqlens;

  MlaTensors tensors() const {
    MlaTensors t;
    t.q_nope = q_nope.data();
    t.q_pe = q_pe.data();
    t.ckv_cache = ckv.data();
    t.kpe_cache = kpe.data();
    t.block_table = table.data();
    t.cache_seqlens = seqlens.data();
    t.sm_scale = sm_scale;
    return t;
  }
  int32_t* row(int b) { return table.data() + size_t(b) * size_t(p.max_pages); }
};

void fill(std::vector<uint16_t>& v, size_t n, std::mt19937_64& rng) {
  std::normal_distribution<float> normal(0.f, 1.f);
  v.resize(n);
  for (uint16_t& x : v) x = float_to_bf16(normal(rng));
}

Case random_case(int b, int s_q, int heads, int page_size, int max_pages, int num_pages, bool causal, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Case c;
  c.p.batch = b;
  c.p.seq_q = s_q;
  c.p.num_heads = heads;
  c.p.page_size = page_size;
  c.p.max_pages = max_pages;
  c.p.num_pages = num_pages;
  c.p.causal = causal;
  const size_t queries = size_t(b) * s_q * heads, rows = size_t(num_pages) * page_size;
  fill(c.q_nope, queries * C, rng);
  fill(c.q_pe, queries * R, rng);
  fill(c.ckv, rows * C, rng);
  fill(c.kpe, rows * R, rng);
  c.table.resize(size_t(b) * max_pages);
  for (int32_t& e : c.table) e = int32_t(rng() % uint64_t(num_pages));
  c.seqlens.resize(size_t(b));
  for (int32_t& n : c.seqlens) n = int32_t(rng() % uint64_t(max_pages * page_size + 1));
  return c;
}

struct Naive {
  std::vector<long double> out;  // [ckv]
  long double lse = 0;
};

// Query i, head h of request b, straight from mla.h's definition.
Naive naive(const Case& c, int b, int i, int h) {
  const MlaProblem& p = c.p;
  const long long n_b = std::min<long long>(std::max(c.seqlens[size_t(b)], 0), (long long)p.max_pages * p.page_size);
  const long long n = p.causal ? std::max<long long>(0, n_b - (p.seq_q - 1 - i)) : n_b;
  const size_t q = (size_t(b) * p.seq_q + size_t(i)) * p.num_heads + size_t(h);
  Naive r;
  r.out.assign(C, 0.0L);
  if (n == 0) {
    r.lse = -INFINITY;
    return r;
  }
  std::vector<long double> s(static_cast<size_t>(n));
  std::vector<std::vector<long double>> v(static_cast<size_t>(n), std::vector<long double>(C, 0.0L));
  for (long long j = 0; j < n; ++j) {
    const int32_t page = c.table[size_t(b) * p.max_pages + size_t(j / p.page_size)];
    long double dot = 0;
    if (page >= 0 && page < p.num_pages) {
      const size_t row = size_t(page) * p.page_size + size_t(j % p.page_size);
      for (int d = 0; d < C; ++d) {
        v[size_t(j)][size_t(d)] = bf16_to_float(c.ckv[row * C + d]);
        dot += (long double)bf16_to_float(c.q_nope[q * C + d]) * v[size_t(j)][size_t(d)];
      }
      for (int d = 0; d < R; ++d) dot += (long double)bf16_to_float(c.q_pe[q * R + d]) * bf16_to_float(c.kpe[row * R + d]);
    }
    s[size_t(j)] = (long double)c.sm_scale * dot;
  }
  long double sum = 0;
  for (long double x : s) sum += std::exp(x);
  r.lse = std::log2(sum);
  for (long long j = 0; j < n; ++j)
    for (int d = 0; d < C; ++d) r.out[size_t(d)] += std::exp(s[size_t(j)]) / sum * v[size_t(j)][size_t(d)];
  return r;
}

void expect_matches_naive(const Case& c, const MlaReferenceOutput& ref) {
  const MlaProblem& p = c.p;
  for (int b = 0; b < p.batch; ++b)
    for (int i = 0; i < p.seq_q; ++i)
      for (int h = 0; h < p.num_heads; ++h) {
        const Naive n = naive(c, b, i, h);
        const size_t q = (size_t(b) * p.seq_q + size_t(i)) * p.num_heads + size_t(h);
        if (std::isinf((double)n.lse)) {
          EXPECT_EQ(ref.lse[q], kNegInf) << b << " " << i << " " << h;
        } else {
          EXPECT_NEAR(ref.lse[q], (double)n.lse, 1e-9) << b << " " << i << " " << h;
        }
        for (int d = 0; d < C; ++d) ASSERT_NEAR(ref.output[q * C + d], (double)n.out[size_t(d)], 1e-9) << q << " " << d;
      }
}

TEST(MlaReference, MatchesTheNaiveFormulaOnRandomShapes) {
  const struct {
    int b, s_q, heads, page_size, max_pages, num_pages;
    bool causal;
  } shapes[] = {{3, 1, 16, 64, 3, 9, false}, {2, 4, 16, 3, 20, 31, true}, {4, 2, 32, 1, 50, 120, true},
                {2, 3, 16, 16, 5, 7, false}};
  for (const auto& s : shapes) {
    const uint64_t seed = fresh_seed();
    SCOPED_TRACE("seed " + std::to_string(seed));
    Case c = random_case(s.b, s.s_q, s.heads, s.page_size, s.max_pages, s.num_pages, s.causal, seed);
    c.seqlens[0] = 0;                                   // an empty request
    c.seqlens[1] = s.max_pages * s.page_size + 77;      // clamped
    if (s.b > 2) c.seqlens[2] = -3;                     // clamped to 0
    c.row(1)[0] = -1;                                   // page ids outside the cache read as zeros
    c.row(1)[s.max_pages - 1] = s.num_pages;
    MlaReferenceOutput ref;
    ASSERT_TRUE(mla_reference(c.p, c.tensors(), &ref).is_ok());
    expect_matches_naive(c, ref);
  }
}

TEST(MlaReference, OneRowGivesThatRowAndItsScore) {
  Case c = random_case(1, 1, 16, 64, 1, 1, false, fresh_seed());
  c.seqlens = {1};
  c.table = {0};
  MlaReferenceOutput ref;
  ASSERT_TRUE(mla_reference(c.p, c.tensors(), &ref).is_ok());
  for (int h = 0; h < 16; ++h) {
    double dot = 0;
    for (int d = 0; d < C; ++d) dot += double(bf16_to_float(c.q_nope[size_t(h) * C + d])) * bf16_to_float(c.ckv[size_t(d)]);
    for (int d = 0; d < R; ++d) dot += double(bf16_to_float(c.q_pe[size_t(h) * R + d])) * bf16_to_float(c.kpe[size_t(d)]);
    EXPECT_NEAR(ref.lse[size_t(h)], double(c.sm_scale) * dot / std::log(2.0), 1e-9) << h;
    for (int d = 0; d < C; ++d) EXPECT_EQ(ref.output[size_t(h) * C + d], double(bf16_to_float(c.ckv[size_t(d)])));
  }
}

TEST(MlaReference, QueriesThatSeeNoRowAreZeroAndMinusInfinity) {
  Case c = random_case(2, 4, 16, 64, 1, 2, true, fresh_seed());
  c.seqlens = {2, 0};  // causal s_q 4: queries 0 and 1 of request 0 see no row; request 1 none at all
  MlaReferenceOutput ref;
  ASSERT_TRUE(mla_reference(c.p, c.tensors(), &ref).is_ok());
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 4; ++i) {
      const bool empty = b == 1 || i < 2;
      for (int h = 0; h < 16; ++h) {
        const size_t q = (size_t(b) * 4 + size_t(i)) * 16 + size_t(h);
        EXPECT_EQ(std::isinf(ref.lse[q]), empty) << b << " " << i;
        if (empty)
          for (int d = 0; d < C; ++d) ASSERT_EQ(ref.output[q * C + d], 0.0);
      }
    }
}

// Rows past a request's length and pages no request uses may hold NaN (sessions put it there):
// nothing changes.
TEST(MlaReference, RowsNoQueryReadsAreNeverRead) {
  Case c = random_case(2, 2, 16, 16, 4, 10, true, fresh_seed());
  c.seqlens = {21, 40};
  MlaReferenceOutput before, after;
  ASSERT_TRUE(mla_reference(c.p, c.tensors(), &before).is_ok());
  std::vector<bool> used(size_t(c.p.num_rows()), false);
  for (int b = 0; b < 2; ++b)
    for (int j = 0; j < c.seqlens[size_t(b)]; ++j) used[size_t(c.row(b)[j / 16]) * 16 + size_t(j % 16)] = true;
  for (size_t r = 0; r < used.size(); ++r)
    if (!used[r]) {
      std::fill(c.ckv.begin() + int64_t(r) * C, c.ckv.begin() + int64_t(r + 1) * C, uint16_t(0xFFFF));
      std::fill(c.kpe.begin() + int64_t(r) * R, c.kpe.begin() + int64_t(r + 1) * R, uint16_t(0xFFFF));
    }
  ASSERT_TRUE(mla_reference(c.p, c.tensors(), &after).is_ok());
  EXPECT_EQ(before.output, after.output);
  EXPECT_EQ(before.lse, after.lse);
}

// A page id outside the cache is a page of zero rows: the same as pointing at one.
TEST(MlaReference, BadPageIdsReadAsZeroRows) {
  Case c = random_case(1, 1, 16, 8, 3, 4, false, fresh_seed());
  c.seqlens = {20};
  c.table = {2, 1, 3};
  std::fill(c.ckv.begin() + 3 * 8 * C, c.ckv.end(), uint16_t(0));  // page 3: zeros
  std::fill(c.kpe.begin() + 3 * 8 * R, c.kpe.end(), uint16_t(0));
  MlaReferenceOutput zeros_page, bad_ids;
  ASSERT_TRUE(mla_reference(c.p, c.tensors(), &zeros_page).is_ok());
  for (int32_t bad : {-1, 4, INT32_MAX, INT32_MIN}) {
    c.table[2] = bad;
    ASSERT_TRUE(mla_reference(c.p, c.tensors(), &bad_ids).is_ok());
    EXPECT_EQ(zeros_page.output, bad_ids.output) << bad;
    EXPECT_EQ(zeros_page.lse, bad_ids.lse) << bad;
  }
}

// The combined 576-wide layout (views with strides) and any thread count give the same bits.
TEST(MlaReference, LayoutAndThreadCountDoNotChangeABit) {
  Case c = random_case(3, 2, 32, 16, 4, 12, true, fresh_seed());
  MlaReferenceOutput separate, one_thread, combined;
  ASSERT_TRUE(mla_reference(c.p, c.tensors(), &separate, 3).is_ok());
  ASSERT_TRUE(mla_reference(c.p, c.tensors(), &one_thread, 1).is_ok());
  EXPECT_EQ(separate.output, one_thread.output);
  EXPECT_EQ(separate.lse, one_thread.lse);
  const size_t queries = size_t(3) * 2 * 32, rows = size_t(c.p.num_rows());
  std::vector<uint16_t> q(queries * D), cache(rows * D);
  for (size_t k = 0; k < queries; ++k) {
    std::copy_n(c.q_nope.begin() + int64_t(k * C), C, q.begin() + int64_t(k * D));
    std::copy_n(c.q_pe.begin() + int64_t(k * R), R, q.begin() + int64_t(k * D + C));
  }
  for (size_t r = 0; r < rows; ++r) {
    std::copy_n(c.ckv.begin() + int64_t(r * C), C, cache.begin() + int64_t(r * D));
    std::copy_n(c.kpe.begin() + int64_t(r * R), R, cache.begin() + int64_t(r * D + C));
  }
  MlaTensors t = c.tensors();
  t.q_nope = q.data();
  t.q_pe = q.data() + C;
  t.q_nope_stride_h = t.q_pe_stride_h = D;
  t.q_nope_stride_s = t.q_pe_stride_s = 32 * D;
  t.q_nope_stride_b = t.q_pe_stride_b = 2 * 32 * D;
  t.ckv_cache = cache.data();
  t.kpe_cache = cache.data() + C;
  t.ckv_stride_row = t.kpe_stride_row = D;
  t.ckv_stride_page = t.kpe_stride_page = 16 * D;
  ASSERT_TRUE(mla_reference(c.p, t, &combined, 2).is_ok());
  EXPECT_EQ(separate.output, combined.output);
  EXPECT_EQ(separate.lse, combined.lse);
}

TEST(MlaReference, RefusesNullInputs) {
  Case c = random_case(1, 1, 16, 64, 1, 1, false, 1);
  MlaTensors t = c.tensors();
  t.block_table = nullptr;
  MlaReferenceOutput ref;
  EXPECT_EQ(mla_reference(c.p, t, &ref).message(), "mla_reference: inputs.block_table is null");
  EXPECT_EQ(mla_reference(c.p, c.tensors(), nullptr).code(), Code::kInvalidArgument);
}

TEST(MlaCheckInputs, NamesTheFirstBadValueAndCounts) {
  MlaProblem p;
  p.batch = 3;
  p.max_pages = 4;  // lengths up to 256
  p.num_pages = 10;
  std::vector<int32_t> table = {0, 1, 2, 3, /**/ 4, 99, -7, 5, /**/ 6, 7, 8, 9};
  std::vector<int32_t> seqlens = {256, 65, 300};
  int64_t bad = 0;
  Status s = mla_check_inputs_host(p, table.data(), 0, seqlens.data(), &bad);
  // Request 1 uses 2 pages: 99 is bad, -7 is past them; request 2's length is past 256.
  EXPECT_EQ(bad, 2);
  EXPECT_EQ(s.message(),
            "block_table[1, 1] = 99: expected a page id in [0, 10) (num_pages); request 1 uses its first 2 entries; "
            "2 bad values in all");
  seqlens[1] = 64;
  s = mla_check_inputs_host(p, table.data(), 0, seqlens.data(), &bad);
  EXPECT_EQ(s.message(), "cache_seqlens[2] = 300: expected a length in [0, 256] (max_pages * page_size)");
  EXPECT_EQ(bad, 1);
  seqlens[2] = -1;
  EXPECT_EQ(mla_check_inputs_host(p, table.data(), 0, seqlens.data()).message().rfind("cache_seqlens[2] = -1", 0), 0u);
  seqlens[2] = 0;
  EXPECT_TRUE(mla_check_inputs_host(p, table.data(), 0, seqlens.data(), &bad).is_ok());
  EXPECT_EQ(bad, 0);
  // A row stride: request 1 starts 5 entries after request 0.
  std::vector<int32_t> strided = {0, 1, 2, 3, -1, 4, 5, 6, 7, -1, 8, 9, 9, 9, -1};
  seqlens = {256, 256, 256};
  EXPECT_TRUE(mla_check_inputs_host(p, strided.data(), 5, seqlens.data()).is_ok());
  EXPECT_NE(mla_check_inputs_host(p, strided.data(), 0, seqlens.data()).message().find("block_table[1, 0] = -1"),
            std::string::npos);
}

}  // namespace
}  // namespace mlakit
