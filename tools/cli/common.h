// Helpers shared by the CLI subcommands: kernel and tiling resolution, the GPU gate, tables.
#pragma once

#include <string>

#include "cli.h"
#include "mlakit/device.h"
#include "runtime/registry.h"

namespace mlakit::cli {

// The kernel named by --kernel (or a positional), default the registry default; null + error.
const DsaKernel* resolve_kernel(Args& args, const std::string& from_positional);

// Ok when a device is there and `kernel` can run on it; else the reason, e.g.
// "no CUDA device is visible" or "dsa_decode.v1_splitk.bf16 needs sm_90a; found sm_120 (...)".
Status gpu_gate(const DsaKernel& kernel, DeviceFacts* facts);

// --tiling NAME, validated for syntax; the kernel validates the rest.
bool parse_tiling_option(Args& args, DsaTiling* tiling, bool* given);

}  // namespace mlakit::cli
