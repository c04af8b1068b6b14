// Registry entry of dsa_decode.v1_splitk.bf16 (listed in src/runtime/registry.cpp).
#pragma once

#include "plan/dsa/contract.h"

namespace mlakit::dsa_v1 {

const DsaKernel& entry();

}  // namespace mlakit::dsa_v1
