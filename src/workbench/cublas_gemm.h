// One bf16 GEMM through cuBLAS, for the workbench's tensor peak (workbench/ceiling.h). cuBLAS is
// opened with dlopen on first use, like NVML: nothing links libcublas, so a start of the CLI, the
// tests or the Python module does not map its 600 MB, and a machine without it builds and runs
// everything else.
#pragma once

#include <cstddef>
#include <string>

#include <cuda_runtime_api.h>

#include "mlakit/status.h"

namespace mlakit {

// Loads cuBLAS and resolves the entry points below (once per process; no GPU needed): ok, or
// kNotFound naming the library or the missing symbol.
Status load_cublas();

class CublasBf16Gemm {
 public:
  CublasBf16Gemm() = default;
  ~CublasBf16Gemm();
  CublasBf16Gemm(const CublasBf16Gemm&) = delete;
  CublasBf16Gemm& operator=(const CublasBf16Gemm&) = delete;

  // load_cublas(), then a handle on the current device that enqueues on `stream` and uses
  // `workspace` (so that a GEMM allocates nothing), in the default math mode (tensor ops allowed).
  Status init(cudaStream_t stream, void* workspace, size_t workspace_bytes);

  // C = A^T B in column-major terms, bf16 in and out, fp32 accumulation (CUBLAS_COMPUTE_32F):
  // A is stored k x m (lda = k), B k x n (ldb = k), C m x n (ldc = m). Both inputs K-contiguous,
  // the layout ("TN") the tensor cores read without a transpose. Enqueues only.
  Status gemm_tn(int m, int n, int k, const void* a, const void* b, void* c) const;

  // "cuBLAS 13.0.2" (the loaded library's version); "cuBLAS" before init.
  std::string version() const;

 private:
  void* handle_ = nullptr;  // cublasHandle_t
};

}  // namespace mlakit
