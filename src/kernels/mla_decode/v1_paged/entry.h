// Registry entry of mla_decode.v1_paged.bf16 (listed in src/runtime/registry.cpp).
#pragma once

#include "plan/mla/contract.h"

namespace mlakit::mla_v1 {

const MlaKernel& entry();

}  // namespace mlakit::mla_v1
