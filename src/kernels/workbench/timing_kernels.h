// Device helpers of the workbench (timer, tests): the cold-L2 flush, the busy-wait that hides the
// host's launch work, and a stand-in "workload" kernel of known duration for the timer's tests.
// Host-safe declarations; the device code is in workbench_kernels.cu (nvcc, mlakit_kernels).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace mlakit::kernels {

// Kernel names as profilers and CUPTI records show them (extern "C", so unmangled). The timer
// treats the first two as markers of its own and never counts them in a call's span.
inline constexpr const char* kL2FlushKernelName = "mlakit_wb_l2_flush";
inline constexpr const char* kBusyWaitKernelName = "mlakit_wb_busy_wait";
inline constexpr const char* kSpinKernelName = "mlakit_wb_spin";

// Writes `bytes` (rounded down to 16) of `buffer` with a pattern derived from `salt`: enough
// fresh lines (2x the L2) evict whatever a previous call left in L2. `buffer` 16-byte aligned.
cudaError_t launch_l2_flush(void* buffer, size_t bytes, uint32_t salt, int num_sms,
                            cudaStream_t stream);

// One warp that spins on %globaltimer for `ns` nanoseconds: keeps the stream busy while the host
// enqueues the timed call behind it, so the call starts with all its launches already queued.
cudaError_t launch_busy_wait(uint64_t ns, cudaStream_t stream);

// `blocks` CTAs of one warp, each spinning `ns` nanoseconds on %globaltimer (a kernel of known
// span for the timer's tests; not a marker, so it counts like any workload kernel).
cudaError_t launch_spin(uint64_t ns, int blocks, cudaStream_t stream);

}  // namespace mlakit::kernels
