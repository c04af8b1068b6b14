// Registry entry of dsa_decode.v2_fused.bf16 (listed in src/runtime/registry.cpp).
#pragma once

#include "plan/dsa/contract.h"

namespace mlakit::dsa_v2 {

const DsaKernel& entry();

}  // namespace mlakit::dsa_v2
