#include "runtime/row_layout.h"

#include <string>

namespace mlakit::row_layout {

constexpr int64_t kBf16Bytes = 2;

bool aligned(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % kRowAlignBytes == 0; }

bool whole_rows(int64_t stride, int64_t elem_bytes) {
  return stride > 0 && (stride * elem_bytes) % kRowAlignBytes == 0;
}

Status check_row_pointer(const void* ptr, const char* name) {
  if (ptr == nullptr) return Status::invalid_argument(std::string(name) + ": null pointer");
  if (!aligned(ptr))
    return Status::invalid_argument(std::string(name) + ": must be " + std::to_string(kRowAlignBytes) +
                                    "-byte aligned (rows are read with 16-byte copies)");
  return Status::ok();
}

Status check_row_stride(int64_t stride, int64_t min_elems, const char* name) {
  if (stride < min_elems)
    return Status::invalid_argument(std::string(name) + ": expected >= " + std::to_string(min_elems) +
                                    " elements, got " + std::to_string(stride));
  if (!whole_rows(stride, kBf16Bytes))
    return Status::invalid_argument(std::string(name) + ": must be a multiple of " +
                                    std::to_string(stride_multiple(kBf16Bytes)) +
                                    " elements (16 bytes), got " + std::to_string(stride));
  return Status::ok();
}

}  // namespace mlakit::row_layout
