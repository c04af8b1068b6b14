// Shared memory filled with non-finite bit patterns before a verified call: a kernel that reads a
// shared row nobody wrote in its own launch (a masked softmax weight times a stale row: 0 x NaN =
// NaN) then fails verification every time instead of only when an earlier kernel happened to
// leave such bits behind. Shared memory keeps its contents between kernels, so one CTA per SM
// holding the largest dynamic allocation writes every byte any later CTA can be given.
#include "kernels/workbench/poison_shared.h"

extern "C" __global__ void mlakit_wb_poison_shared(uint32_t pattern, int below_dynamic) {
  extern __shared__ uint4 smem[];
  // The allocation of this launch (the compiler cannot see it otherwise), and where it starts in
  // the CTA's shared window: below it lie the bytes the system reserves per CTA, which a pointer
  // computed from null lands in.
  uint32_t bytes, base;
  asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(bytes));
  base = uint32_t(__cvta_generic_to_shared(smem));
  const uint32_t w = pattern;
  for (uint32_t a = base + 16 * threadIdx.x; a < base + bytes; a += 16 * blockDim.x)
    asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};" ::"r"(a), "r"(w) : "memory");
  if (below_dynamic)
    for (uint32_t a = 16 * threadIdx.x; a + 16 <= base; a += 16 * blockDim.x)
      asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};" ::"r"(a), "r"(w) : "memory");
}

// Where a null generic pointer and the dynamic allocation land in the shared window (a probe).
extern "C" __global__ void mlakit_wb_shared_window(uint32_t* out) {
  extern __shared__ uint4 smem[];
  const void* null_ptr = nullptr;
  asm volatile("" : "+l"(null_ptr));  // not folded at compile time
  out[0] = uint32_t(__cvta_generic_to_shared(null_ptr));
  out[1] = uint32_t(__cvta_generic_to_shared(smem));
}

namespace mlakit::kernels {

cudaError_t launch_poison_shared(uint32_t pattern, bool below_dynamic, cudaStream_t stream) {
  int device = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e != cudaSuccess) return e;
  int optin = 0, sms = 0;
  if ((e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device)) != cudaSuccess) return e;
  if ((e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device)) != cudaSuccess) return e;
  // Once per process is enough, but the attribute is per device and cheap to set again.
  if ((e = cudaFuncSetAttribute(mlakit_wb_poison_shared, cudaFuncAttributeMaxDynamicSharedMemorySize, optin)) !=
      cudaSuccess)
    return e;
  // The whole carveout for shared memory, so that the allocation reaches the bytes a kernel with
  // the largest carveout is given.
  if ((e = cudaFuncSetAttribute(mlakit_wb_poison_shared, cudaFuncAttributePreferredSharedMemoryCarveout,
                                int(cudaSharedmemCarveoutMaxShared))) != cudaSuccess)
    return e;
  // One CTA fits per SM at this size: as many CTAs as SMs land one on each (twice that covers an
  // SM the scheduler gives two in a row while another is busy).
  mlakit_wb_poison_shared<<<2 * sms, 512, size_t(optin), stream>>>(pattern, below_dynamic ? 1 : 0);
  return cudaGetLastError();
}

}  // namespace mlakit::kernels

namespace mlakit::kernels {

cudaError_t shared_window(uint32_t* null_offset, uint32_t* dynamic_offset) {
  uint32_t* d = nullptr;
  cudaError_t e = cudaMalloc(&d, 2 * sizeof(uint32_t));
  if (e != cudaSuccess) return e;
  mlakit_wb_shared_window<<<1, 1, 16>>>(d);
  uint32_t h[2] = {0, 0};
  if ((e = cudaGetLastError()) == cudaSuccess) e = cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost);
  cudaFree(d);
  *null_offset = h[0];
  *dynamic_offset = h[1];
  return e;
}

}  // namespace mlakit::kernels
