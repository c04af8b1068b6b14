#include "kernels/common/tensor_map.h"

#include <cstring>
#include <mutex>

#include <cuda.h>
#include <cuda_runtime_api.h>

namespace mlakit::kernels {
namespace {

static_assert(sizeof(CUtensorMap) == sizeof(TensorMapBytes) && alignof(CUtensorMap) == alignof(TensorMapBytes),
              "TensorMapBytes mirrors CUtensorMap");

using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                 const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                 CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// cuTensorMapEncodeTiled through the runtime's driver entry point (once per process).
EncodeTiled encoder() {
  static EncodeTiled fn = nullptr;
  static std::once_flag once;
  std::call_once(once, [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &found) ==
            cudaSuccess &&
        found == cudaDriverEntryPointSuccess)
      fn = reinterpret_cast<EncodeTiled>(p);
    else
      cudaGetLastError();  // not sticky: the callers fall back to another copy path
  });
  return fn;
}

bool same(const PagedRows& a, const PagedRows& b) {
  return a.base == b.base && a.cols == b.cols && a.page_rows == b.page_rows && a.pages == b.pages &&
         a.row_stride == b.row_stride && a.page_stride == b.page_stride && a.box_cols == b.box_cols &&
         a.box_rows == b.box_rows;
}

// The last maps this thread encoded: a decode step calls the op once per layer with the same few
// caches, and an encode costs about as much host time as the rest of the launch.
struct Recent {
  static constexpr int kSlots = 4;
  PagedRows rows[kSlots] = {};
  TensorMapBytes maps[kSlots] = {};
  int next = 0;
};

bool encode_uncached(const PagedRows& r, TensorMapBytes* out) {
  const EncodeTiled encode = encoder();
  if (encode == nullptr || r.base == nullptr || r.cols < 1 || r.page_rows < 1 || r.pages < 1) return false;
  constexpr int64_t kElem = 2;  // bf16
  const cuuint64_t dims[3] = {cuuint64_t(r.cols), cuuint64_t(r.page_rows), cuuint64_t(r.pages)};
  const cuuint64_t strides[2] = {cuuint64_t(r.row_stride * kElem), cuuint64_t(r.page_stride * kElem)};
  const cuuint32_t box[3] = {cuuint32_t(r.box_cols), cuuint32_t(r.box_rows), 1};
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  CUtensorMap map;
  const CUresult e = encode(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, const_cast<void*>(r.base), dims, strides, box,
                            elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (e != CUDA_SUCCESS) return false;
  std::memcpy(out, &map, sizeof map);
  return true;
}

}  // namespace

bool encode_paged_rows(const PagedRows& r, TensorMapBytes* out) {
  thread_local Recent recent;
  for (int i = 0; i < Recent::kSlots; ++i)
    if (recent.rows[i].base != nullptr && same(recent.rows[i], r)) {
      *out = recent.maps[i];
      return true;
    }
  if (!encode_uncached(r, out)) return false;
  recent.rows[recent.next] = r;
  recent.maps[recent.next] = *out;
  recent.next = (recent.next + 1) % Recent::kSlots;
  return true;
}

}  // namespace mlakit::kernels
