// Registry entry of dsa_decode.floor_gather.bf16 (listed in src/runtime/registry.cpp).
#pragma once

#include "plan/dsa/contract.h"

namespace mlakit::dsa_floor {

const DsaKernel& entry();

}  // namespace mlakit::dsa_floor
