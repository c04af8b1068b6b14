// Shared memory poisoned before a verified call (workbench/verify.cpp, the binding's stress
// tests). Host-safe declaration; the device code is in poison_shared.cu.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace mlakit::kernels {

inline constexpr const char* kPoisonSharedKernelName = "mlakit_wb_poison_shared";

// Non-finite in bf16 (each half: 0xFF80 -inf / 0x7FC0 NaN) and in fp32 (NaN): catches a stale bf16
// or fp32 row.
inline constexpr uint32_t kPoisonBf16 = 0x7FC0FF80u;
// NaN in e4m3 (0x7F) in every byte: catches a stale FP8 row.
inline constexpr uint32_t kPoisonE4m3 = 0x7F7F7F7Fu;

// Fills the dynamic shared memory of one maximal CTA per SM (twice over) with `pattern` on
// `stream`, on the current device; `below_dynamic`: the bytes of the CTA's shared window below
// its dynamic allocation too (the per-CTA reserve).
cudaError_t launch_poison_shared(uint32_t pattern, bool below_dynamic, cudaStream_t stream);

// The shared-window offsets of a null generic pointer and of a kernel's dynamic allocation
// (synchronous; for tests).
cudaError_t shared_window(uint32_t* null_offset, uint32_t* dynamic_offset);

}  // namespace mlakit::kernels
