// Dense paged MLA decode as the generic layers see it: its OpContract (types, op name, dtype,
// heads, tune bucket) and its kernel interface, MlaKernel.
#pragma once

#include <string>

#include "mlakit/mla.h"
#include "plan/op_kernel.h"

namespace mlakit {

// The tune-cache shape bucket: the fields of MlaProblem that change which tiling wins, with b
// rounded up to a power of two; num_pages and max_pages are left out (they change where rows come
// from, not how many a call reads). "b<pow2>.s<s_q>.h<heads>.ckv<ckv>.kpe<kpe>.ps<page_size>.c<causal>".
std::string mla_shape_bucket(const MlaProblem& problem);

template <>
struct OpContract<MlaProblem> {
  using Tensors = MlaTensors;
  static constexpr const char* kOp = "mla_decode";
  static constexpr const char* kPlanFunction = "mla_plan";
  static std::string dtype(const MlaProblem&) { return "bf16"; }
  static int heads(const MlaProblem& p) { return p.num_heads; }
  static std::string bucket(const MlaProblem& p) { return mla_shape_bucket(p); }
};

using MlaKernel = OpKernel<MlaProblem>;

// The query-head counts dense MLA decode serves (128 heads over tensor parallelism 8..1): its
// kernels register them, a shape takes them.
inline constexpr int kMlaHeadCounts[] = {16, 32, 64, 128};

}  // namespace mlakit
