// Qualifiers for code that the host planners and the device kernels share.
#pragma once

#if defined(__CUDACC__)
#define MLAKIT_HOST_DEVICE __host__ __device__
#else
#define MLAKIT_HOST_DEVICE
#endif
// Unrolled in device code (per-thread arrays stay in registers), a plain loop on the host.
#if defined(__CUDA_ARCH__)
#define MLAKIT_UNROLL _Pragma("unroll")
#else
#define MLAKIT_UNROLL
#endif
