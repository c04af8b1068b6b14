// Registry entries of mla_decode.v1_paged.bf16 and of the op's gather floor (listed in
// src/runtime/registry.cpp).
#pragma once

#include "plan/mla/contract.h"

namespace mlakit::mla_v1 {

const MlaKernel& entry();
// mla_decode.floor_stream.bf16, the op's gather floor: this kernel with the math left out.
const MlaKernel& floor_entry();

}  // namespace mlakit::mla_v1
