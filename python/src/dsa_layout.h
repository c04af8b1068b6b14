// DSA's layout rules (runtime/dsa/layout.h) on DLPack metadata: the bf16 rows and slot strides of
// q, ckv and kpe. Every check raises the documented Python exception naming the argument
// (call_args.h); none reads a tensor's device, so the same checks (and tests) hold for tensors of
// any device.
#pragma once

#include <cstdint>

#include "tensor_arg.h"

namespace mlakit::python {

// Innermost dimension contiguous; every outer stride positive and a whole number of 16-byte rows.
void expect_row_layout(const TensorArg& t, const char* name);
// The data pointer 16-byte aligned (rows are copied 16 bytes at a time).
void expect_aligned(const TensorArg& t, const char* name);
// The slot stride (elements) of a [num_pages, page_size, D] cache: slots must be evenly spaced
// across pages, because the kernels address slot j as base + j * stride.
int64_t slot_stride(const TensorArg& t, const char* name);

}  // namespace mlakit::python
