// dsa_quantize_fp8: checks the arguments by the row rules (runtime/row_layout.h) and launches the
// quantizer (kernels/dsa_decode/quantize_fp8).
#include <cstdint>
#include <string>

#include "base/cuda_status.h"
#include "kernels/dsa_decode/quantize_fp8/launch.h"
#include "mlakit/dsa_fp8.h"
#include "runtime/dsa/layout.h"

namespace mlakit {

Status dsa_quantize_fp8(const DsaFp8QuantizeArgs& a, cudaStream_t stream) {
  using dsa_layout::check_row_pointer;
  using dsa_layout::check_row_stride;
  if (a.num_pages < 1) return Status::invalid_argument("num_pages: expected >= 1, got " + std::to_string(a.num_pages));
  if (a.page_size < 1) return Status::invalid_argument("page_size: expected >= 1, got " + std::to_string(a.page_size));
  const int64_t num_slots = int64_t(a.num_pages) * a.page_size;
  if (num_slots > INT32_MAX)
    return Status::invalid_argument("num_pages * page_size: " + std::to_string(num_slots) +
                                    " slots; expected at most 2147483647 (indices are int32)");
  MLAKIT_RETURN_IF_ERROR(check_row_pointer(a.ckv, "ckv"));
  MLAKIT_RETURN_IF_ERROR(check_row_pointer(a.kpe, "kpe"));
  MLAKIT_RETURN_IF_ERROR(check_row_pointer(a.kv_cache, "kv_cache"));
  constexpr int kCkv = dsa_fp8::kNopeBytes, kKpe = dsa_fp8::kRopeBytes / 2;
  const int64_t ckv_stride = a.ckv_stride_slot == 0 ? kCkv : a.ckv_stride_slot;
  const int64_t kpe_stride = a.kpe_stride_slot == 0 ? kKpe : a.kpe_stride_slot;
  MLAKIT_RETURN_IF_ERROR(check_row_stride(ckv_stride, kCkv, "ckv_stride_slot"));
  MLAKIT_RETURN_IF_ERROR(check_row_stride(kpe_stride, kKpe, "kpe_stride_slot"));
  int64_t stride_page = 0;
  MLAKIT_RETURN_IF_ERROR(dsa_layout::resolve_fp8_page_stride(a.kv_stride_page, a.page_size, &stride_page));
  const dsa_fp8_quant::Params p{static_cast<const uint16_t*>(a.ckv), static_cast<const uint16_t*>(a.kpe),
                                ckv_stride,
                                kpe_stride,
                                static_cast<uint8_t*>(a.kv_cache),
                                stride_page,
                                num_slots,
                                a.page_size};
  return cuda_status(dsa_fp8_quant::launch(p, stream), "dsa_quantize_fp8");
}

}  // namespace mlakit
