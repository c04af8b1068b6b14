#include "dsa_layout.h"

#include <string>

#include "call_args.h"
#include "mlakit/dsa_fp8.h"
#include "py_errors.h"
#include "runtime/dsa/layout.h"

namespace mlakit::python {

void expect_row_layout(const TensorArg& t, const char* name) {
  expect_contiguous_last_dim(t, name);
  const int64_t elem = t.view().dtype.bits / 8;
  for (int i = 0; i < t.ndim() - 1; ++i)
    if (t.size(i) > 1 && !dsa_layout::whole_rows(used_stride(t, i), elem))
      raise(PyExc_ValueError,
            std::string(name) + ": strides " + strides_string(t) + " (elements) for shape " +
                shape_string(t) + ": outer strides must be positive multiples of " +
                std::to_string(dsa_layout::stride_multiple(elem)) +
                " elements (16-byte rows); call .contiguous()");
}

void expect_aligned(const TensorArg& t, const char* name) {
  if (!dsa_layout::aligned(t.data()))
    raise_misaligned(t, name, int(dsa_layout::kRowAlignBytes),
                     "(rows are copied 16 bytes at a time); a view starting mid-row? call .clone()");
}

int64_t slot_stride(const TensorArg& t, const char* name) {
  const int64_t pages = t.size(0), page_size = t.size(1);
  if (pages > 1 && page_size > 1 && t.stride(0) != page_size * t.stride(1))
    raise(PyExc_ValueError, std::string(name) + ": pages must be contiguous runs of slots "
                                                "(stride[0] == page_size * stride[1]), got strides " +
                                strides_string(t) + " for shape " + shape_string(t));
  return page_size > 1 ? used_stride(t, 1) : used_stride(t, 0);
}

namespace {

constexpr int64_t kRowBytes = dsa_fp8::kRowBytes;  // 656; one element is one byte

std::string layout_of(const TensorArg& t) {
  return "got strides " + strides_string(t) + " (bytes) for shape " + shape_string(t);
}

}  // namespace

bool is_fp8_cache_dtype(const TensorArg& t) { return has_dtype(t, {kUInt8, kFloat8E4m3fn}); }

void expect_fp8_cache_dtype(const TensorArg& t, const char* name) {
  expect_dtype(t, name, {kUInt8, kFloat8E4m3fn});
}

void expect_fp8_cache_rank(const TensorArg& t, const char* name) {
  if (t.ndim() != 3 && t.ndim() != 4)
    raise(PyExc_ValueError, std::string(name) + ": expected 3 dimensions [num_pages, page_size, 656] "
                                                "or 4 [num_pages, page_size, 1, 656], got shape " +
                                shape_string(t));
}

void expect_fp8_cache_shape(const TensorArg& t, const char* name, int64_t pages, int64_t page_size,
                            const char* why) {
  if (t.ndim() == 3)
    expect_shape(t, name, {pages, page_size, kRowBytes}, why);
  else
    expect_shape(t, name, {pages, page_size, 1, kRowBytes}, why);
}

int64_t fp8_cache_page_stride(const TensorArg& t, const char* name) {
  expect_contiguous_last_dim(t, name);
  const int64_t page_size = t.size(1);
  if (page_size > 1 && t.stride(1) != kRowBytes)
    raise(PyExc_ValueError, std::string(name) + ": the rows of a page must be contiguous (stride[1] == "
                                                "656), " + layout_of(t));
  // One page: 0, which dsa_run reads as page_size * 656 = page_size * 41 * 16 bytes.
  const int64_t stride = used_stride(t, 0), page_bytes = page_size * kRowBytes;
  if (t.size(0) > 1 && stride < page_bytes)
    raise(PyExc_ValueError, std::string(name) + ": pages overlap: stride[0] must be at least page_size "
                                                "* 656 = " + std::to_string(page_bytes) + ", " + layout_of(t));
  if (t.size(0) > 1 && !dsa_layout::whole_rows(stride, 1))
    raise(PyExc_ValueError, std::string(name) + ": the page stride (stride[0]) must be a multiple of 16 "
                                                "bytes (rows are copied 16 bytes at a time), " + layout_of(t));
  expect_aligned(t, name);
  return stride;
}

}  // namespace mlakit::python
