// cuBLAS through dlopen (workbench/shared_library.h): the entry points one bf16 GEMM needs, typed
// from the toolkit's cublas_api.h and resolved on first use.
#include "workbench/cublas_gemm.h"

#include <mutex>
#include <type_traits>

#include <cublas_api.h>

#include "workbench/shared_library.h"

namespace mlakit {
namespace {

#define MLAKIT_STR2(x) #x
#define MLAKIT_STR(x) MLAKIT_STR2(x)
// The soname of the cuBLAS this was compiled against: its ABI is the one the types below assume.
constexpr const char* kCublasSoname = "libcublas.so." MLAKIT_STR(CUBLAS_VER_MAJOR);
#undef MLAKIT_STR
#undef MLAKIT_STR2

// cublasGemmEx has a C++ overload (a cudaDataType compute type); the cast picks the C entry point
// and fails to compile if the header's signature ever differs.
using GemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                    const void*, const void*, cudaDataType, int, const void*, cudaDataType, int,
                                    const void*, void*, cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
static_assert(std::is_same_v<decltype(static_cast<GemmExFn>(&cublasGemmEx)), GemmExFn>);

struct Cublas {
  Status loaded;
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSetWorkspace_v2) set_workspace = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  decltype(&cublasGetProperty) get_property = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
  GemmExFn gemm_ex = nullptr;

  Status check(cublasStatus_t rc, const char* what) const {
    if (rc == CUBLAS_STATUS_SUCCESS) return Status::ok();
    const char* s = status_string ? status_string(rc) : nullptr;
    return Status::device_error(std::string(what) + ": " + (s ? s : "cuBLAS status " + std::to_string(int(rc))));
  }
};

const Cublas& cublas() {
  static Cublas lib;
  static std::once_flag once;
  std::call_once(once, [] {
    // The loader's search path first (LD_LIBRARY_PATH, the binary's RUNPATH, ld.so.cache), then
    // the toolkit's library folder of the build.
    SharedLibrary so;
#ifdef MLAKIT_CUDA_LIBRARY_DIR
    const bool opened = so.open({kCublasSoname, std::string(MLAKIT_CUDA_LIBRARY_DIR) + "/" + kCublasSoname});
#else
    const bool opened = so.open({kCublasSoname});
#endif
    if (!opened) {
      lib.loaded = Status::not_found(std::string("cannot load ") + kCublasSoname +
                                     " (cuBLAS of the CUDA toolkit, needed for the bf16 tensor peak): " + so.error());
      return;
    }
    so.bind(&lib.create, "cublasCreate_v2");
    so.bind(&lib.destroy, "cublasDestroy_v2");
    so.bind(&lib.set_stream, "cublasSetStream_v2");
    so.bind(&lib.set_workspace, "cublasSetWorkspace_v2");
    so.bind(&lib.set_math_mode, "cublasSetMathMode");
    so.bind(&lib.get_property, "cublasGetProperty");
    so.bind(&lib.status_string, "cublasGetStatusString");
    so.bind(&lib.gemm_ex, "cublasGemmEx");
    if (!lib.create || !lib.destroy || !lib.set_stream || !lib.set_workspace || !lib.set_math_mode ||
        !lib.get_property || !lib.gemm_ex)
      lib.loaded = Status::not_found(std::string(kCublasSoname) +
                                     " lacks one of cublasCreate_v2, cublasDestroy_v2, cublasSetStream_v2, "
                                     "cublasSetWorkspace_v2, cublasSetMathMode, cublasGetProperty, cublasGemmEx");
  });
  return lib;
}

}  // namespace

Status load_cublas() { return cublas().loaded; }

CublasBf16Gemm::~CublasBf16Gemm() {
  if (handle_) cublas().destroy(static_cast<cublasHandle_t>(handle_));
}

Status CublasBf16Gemm::init(cudaStream_t stream, void* workspace, size_t workspace_bytes) {
  const Cublas& lib = cublas();
  MLAKIT_RETURN_IF_ERROR(lib.loaded);
  if (handle_) {
    lib.destroy(static_cast<cublasHandle_t>(handle_));
    handle_ = nullptr;
  }
  cublasHandle_t h = nullptr;
  MLAKIT_RETURN_IF_ERROR(lib.check(lib.create(&h), "cublasCreate"));
  handle_ = h;
  MLAKIT_RETURN_IF_ERROR(lib.check(lib.set_stream(h, stream), "cublasSetStream"));
  MLAKIT_RETURN_IF_ERROR(lib.check(lib.set_workspace(h, workspace, workspace_bytes), "cublasSetWorkspace"));
  // Default math with CUBLAS_COMPUTE_32F: tensor ops, fp32 accumulation, no reduced-precision
  // shortcuts (CUBLAS_PEDANTIC_MATH would keep the tensor cores out).
  return lib.check(lib.set_math_mode(h, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
}

Status CublasBf16Gemm::gemm_tn(int m, int n, int k, const void* a, const void* b, void* c) const {
  const Cublas& lib = cublas();
  if (!handle_) return Status::internal("CublasBf16Gemm::gemm_tn before a successful init");
  const float alpha = 1.0f, beta = 0.0f;  // host scalars of the fp32 compute type
  return lib.check(lib.gemm_ex(static_cast<cublasHandle_t>(handle_), CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, a,
                               CUDA_R_16BF, k, b, CUDA_R_16BF, k, &beta, c, CUDA_R_16BF, m, CUBLAS_COMPUTE_32F,
                               CUBLAS_GEMM_DEFAULT),
                   "cublasGemmEx");
}

std::string CublasBf16Gemm::version() const {
  const Cublas& lib = cublas();
  if (!handle_ || !lib.get_property) return "cuBLAS";
  int v[3] = {0, 0, 0};
  const libraryPropertyType parts[3] = {MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL};
  for (int i = 0; i < 3; ++i)
    if (lib.get_property(parts[i], &v[i]) != CUBLAS_STATUS_SUCCESS) return "cuBLAS";
  return "cuBLAS " + std::to_string(v[0]) + "." + std::to_string(v[1]) + "." + std::to_string(v[2]);
}

}  // namespace mlakit
