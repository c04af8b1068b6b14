#include "plan/dsa/cost.h"

#include "mlakit/dsa_fp8.h"

namespace mlakit {

double dsa_slot_bytes(const DsaProblem& p) {
  if (p.kv == DsaKv::kFp8)
    return double(p.head_dim_ckv) + 4.0 * (p.head_dim_ckv / dsa_fp8::kTile) + 2.0 * p.head_dim_kpe;
  return 2.0 * (p.head_dim_ckv + p.head_dim_kpe);
}

Cost dsa_cost(const DsaProblem& p, const std::vector<int>& valid_per_row) {
  Cost c;
  for (int v : valid_per_row) c.rows += v;
  const double q_row_bytes = 2.0 * (p.head_dim_ckv + p.head_dim_kpe);  // q is bf16 for every cache
  const double per_slot_flops = 2.0 * p.num_heads * (p.head_dim_ckv + p.head_dim_kpe) +  // QK
                                2.0 * p.num_heads * p.head_dim_ckv;                      // PV
  c.flops = per_slot_flops * double(c.rows);
  c.gathered_bytes = dsa_slot_bytes(p) * double(c.rows);
  const double T = p.num_tokens, H = p.num_heads;
  c.bytes = c.gathered_bytes + T * H * q_row_bytes    // q_nope + q_pe
            + 4.0 * T * p.topk                        // indices
            + T * H * 2.0 * p.head_dim_ckv + T * H * 4.0;  // output + lse
  return c;
}

}  // namespace mlakit
