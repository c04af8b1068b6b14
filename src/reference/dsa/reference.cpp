// The DSA CPU reference in fp64. Per token: gather the valid rows once, convert them to double,
// then for every head compute the scaled logits, a max-subtracted softmax and the weighted sum of
// the latent rows. Rows are visited in blocks small enough to stay in the core's L2 while all
// heads use them. Tokens are spread over threads (base/parallel.h); each token is computed by one thread in a
// fixed order, so the result does not depend on the thread count.
#include "reference/dsa/reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "base/bf16.h"
#include "base/parallel.h"
#include "plan/dsa/indices.h"
#include "reference/dot.h"

namespace mlakit {

namespace {

// 32 rows x 576 doubles = 144 KiB: one block of gathered rows stays in L2 while every head uses it.
constexpr int kBlockRows = 32;
constexpr double kLog2e = 1.4426950408889634074;

using reference::axpy;
using reference::dot;

struct Workspace {
  std::vector<int64_t> slots;  // valid slots of the token, in row order (repeats kept)
  std::vector<double> rows;    // [n, ckv + kpe] gathered rows as double
  std::vector<double> q;       // [H, ckv + kpe]
  std::vector<double> scores;  // [H, n]: logits, then exp(logit - max)
};

// The valid slots of token t and their rows, and the token's queries, as doubles.
void gather_token(const DsaProblem& p, const DsaHostInputs& in, int t, Workspace& ws) {
  const int H = p.num_heads, C = p.head_dim_ckv, R = p.head_dim_kpe, D = C + R;
  const int64_t num_slots = p.num_slots();
  ws.slots.clear();
  const int32_t* row = in.indices + int64_t(t) * p.topk;
  for (int k = 0; k < p.topk; ++k)
    if (row[k] >= 0 && row[k] < num_slots) ws.slots.push_back(row[k]);
  const int n = int(ws.slots.size());
  ws.rows.resize(size_t(n) * D);
  for (int j = 0; j < n; ++j) {
    const uint16_t* ckv = in.ckv + ws.slots[j] * C;
    const uint16_t* kpe = in.kpe + ws.slots[j] * R;
    double* dst = ws.rows.data() + size_t(j) * D;
    for (int d = 0; d < C; ++d) dst[d] = bf16_to_float(ckv[d]);
    for (int d = 0; d < R; ++d) dst[C + d] = bf16_to_float(kpe[d]);
  }
  ws.q.resize(size_t(H) * D);
  for (int h = 0; h < H; ++h) {
    const uint16_t* qn = in.q_nope + (int64_t(t) * H + h) * C;
    const uint16_t* qp = in.q_pe + (int64_t(t) * H + h) * R;
    double* dst = ws.q.data() + size_t(h) * D;
    for (int d = 0; d < C; ++d) dst[d] = bf16_to_float(qn[d]);
    for (int d = 0; d < R; ++d) dst[C + d] = bf16_to_float(qp[d]);
  }
}

// Logits s[h, j] = sm_scale * (q_nope . ckv_j + q_pe . kpe_j), then the max-subtracted softmax
// numerators in place; lse in base 2; inv_sum[h] = 1 / sum_j exp(s_j - max).
void softmax_token(const DsaProblem& p, double sm_scale, Workspace& ws, double* out_lse,
                   std::vector<double>* inv_sum) {
  const int H = p.num_heads, D = p.head_dim_ckv + p.head_dim_kpe, n = int(ws.slots.size());
  ws.scores.resize(size_t(H) * n);
  for (int j0 = 0; j0 < n; j0 += kBlockRows) {
    const int j1 = std::min(n, j0 + kBlockRows);
    for (int h = 0; h < H; ++h) {
      const double* q = ws.q.data() + size_t(h) * D;
      double* s = ws.scores.data() + size_t(h) * n;
      for (int j = j0; j < j1; ++j) s[j] = sm_scale * dot(q, ws.rows.data() + size_t(j) * D, D);
    }
  }
  inv_sum->assign(size_t(H), 0.0);
  for (int h = 0; h < H; ++h) {
    double* s = ws.scores.data() + size_t(h) * n;
    double m = s[0];
    for (int j = 1; j < n; ++j) m = std::max(m, s[j]);
    double sum = 0;
    for (int j = 0; j < n; ++j) {
      s[j] = std::exp(s[j] - m);
      sum += s[j];
    }
    out_lse[h] = (m + std::log(sum)) * kLog2e;
    (*inv_sum)[size_t(h)] = 1.0 / sum;
  }
}

void reference_token(const DsaProblem& p, const DsaHostInputs& in, int t, Workspace& ws, double* out_o,
                     double* out_lse) {
  const int H = p.num_heads, C = p.head_dim_ckv, D = C + p.head_dim_kpe;
  gather_token(p, in, t, ws);
  const int n = int(ws.slots.size());
  if (n == 0) {  // empty row: output 0, lse -inf
    std::fill(out_o, out_o + int64_t(H) * C, 0.0);
    std::fill(out_lse, out_lse + H, -std::numeric_limits<double>::infinity());
    return;
  }
  std::vector<double> inv_sum;
  softmax_token(p, double(in.sm_scale), ws, out_lse, &inv_sum);
  // output[h] = sum_j p[h, j] ckv_j / sum_h.
  std::fill(out_o, out_o + int64_t(H) * C, 0.0);
  for (int j0 = 0; j0 < n; j0 += kBlockRows) {
    const int j1 = std::min(n, j0 + kBlockRows);
    for (int h = 0; h < H; ++h) {
      const double* s = ws.scores.data() + size_t(h) * n;
      double* o = out_o + int64_t(h) * C;
      for (int j = j0; j < j1; ++j) axpy(o, s[j], ws.rows.data() + size_t(j) * D, C);
    }
  }
  for (int h = 0; h < H; ++h) {
    double* o = out_o + int64_t(h) * C;
    for (int d = 0; d < C; ++d) o[d] *= inv_sum[size_t(h)];
  }
}

}  // namespace

Status dsa_check_indices_host(const DsaProblem& problem, const int32_t* indices, int64_t* num_invalid) {
  MLAKIT_RETURN_IF_ERROR(problem.validate());
  if (indices == nullptr) return Status::invalid_argument("sparse_indices is null");
  const int64_t num_slots = problem.num_slots();
  int64_t count = 0, first = -1;
  const int64_t total = int64_t(problem.num_tokens) * problem.topk;
  for (int64_t i = 0; i < total; ++i) {
    const int32_t v = indices[i];
    if (v == -1 || (v >= 0 && v < num_slots)) continue;
    if (first < 0) first = i;
    ++count;
  }
  if (num_invalid != nullptr) *num_invalid = count;
  if (count == 0) return Status::ok();
  return invalid_indices_error(problem, count, first, indices[first]);
}

Status dsa_reference(const DsaProblem& problem, const DsaHostInputs& inputs, IndexPolicy policy,
                     DsaReferenceOutput* out, int num_threads) {
  MLAKIT_RETURN_IF_ERROR(problem.validate());
  if (out == nullptr) return Status::invalid_argument("dsa_reference: out is null");
  const struct {
    const void* ptr;
    const char* name;
  } required[] = {{inputs.q_nope, "q_nope"}, {inputs.q_pe, "q_pe"}, {inputs.ckv, "ckv"},
                  {inputs.kpe, "kpe"},       {inputs.indices, "indices"}};
  for (const auto& r : required)
    if (r.ptr == nullptr) return Status::invalid_argument(std::string("dsa_reference: inputs.") + r.name + " is null");
  if (policy == IndexPolicy::kReject) MLAKIT_RETURN_IF_ERROR(dsa_check_indices_host(problem, inputs.indices));

  const int T = problem.num_tokens, H = problem.num_heads, C = problem.head_dim_ckv;
  out->output.assign(size_t(T) * H * C, 0.0);
  out->lse.assign(size_t(T) * H, -std::numeric_limits<double>::infinity());

  run_claiming(T, worker_count(num_threads, T), [&](auto claim) {
    Workspace ws;
    for (int64_t t = claim(); t < T; t = claim())
      reference_token(problem, inputs, int(t), ws, out->output.data() + size_t(t) * H * C,
                      out->lse.data() + size_t(t) * H);
  });
  return Status::ok();
}

}  // namespace mlakit
