#include "dsa_layout.h"

#include <string>

#include "call_args.h"
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

}  // namespace mlakit::python
