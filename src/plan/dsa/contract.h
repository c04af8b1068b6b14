// DSA decode as the generic layers see it: its OpContract (types, op name, dtype, heads, tune
// bucket) and its kernel interface, DsaKernel.
#pragma once

#include <string>

#include "mlakit/dsa.h"
#include "plan/op_kernel.h"

namespace mlakit {

// The smallest power of two >= num_tokens (1 for num_tokens <= 1).
int dsa_bucket_tokens(int num_tokens);
// The tune-cache shape bucket: every field of DsaProblem that changes which tiling wins, with T
// rounded up to a power of two; num_pages is left out (it moves no more bytes per call, only
// where they come from). "T<pow2>.h<heads>.ckv<ckv>.kpe<kpe>.ps<page_size>.k<topk>", then ".fp8"
// for the FP8 cache.
std::string dsa_shape_bucket(const DsaProblem& problem);

template <>
struct OpContract<DsaProblem> {
  using Tensors = DsaTensors;
  static constexpr const char* kOp = "dsa_decode";
  static constexpr const char* kPlanFunction = "dsa_plan";
  // The cache format: "bf16", or "fp8" (DeepSeek-V3.2's 656-byte rows).
  static std::string dtype(const DsaProblem& p) { return p.kv == DsaKv::kFp8 ? "fp8" : "bf16"; }
  static int heads(const DsaProblem& p) { return p.num_heads; }
  static std::string bucket(const DsaProblem& p) { return dsa_shape_bucket(p); }
};

using DsaKernel = OpKernel<DsaProblem>;

// The query-head counts DSA decode serves (128 heads over tensor parallelism 8..1): its kernels
// register them, its suites come in them, a shape takes them.
inline constexpr int kDsaHeadCounts[] = {16, 32, 64, 128};

}  // namespace mlakit
