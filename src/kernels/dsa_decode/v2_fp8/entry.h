// Registry entries of dsa_decode.v2_fp8.fp8 and its gather floor dsa_decode.floor_fp8.fp8 (listed
// in src/runtime/registry.cpp).
#pragma once

#include "plan/dsa/contract.h"

namespace mlakit::dsa_v2_fp8 {

const DsaKernel& entry();
const DsaKernel& floor_entry();

}  // namespace mlakit::dsa_v2_fp8
