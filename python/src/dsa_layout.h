// DSA's layout rules (runtime/dsa/layout.h) on DLPack metadata, for both caches: the bf16 rows and
// slot strides of q, ckv and kpe, and the FP8 cache's 656-byte rows (mlakit/dsa_fp8.h). Shared by
// the attention call and the FP8 quantizer. Every check raises the documented Python exception
// naming the argument (call_args.h); none reads a tensor's device, so the same checks (and tests)
// hold for tensors of any device.
#pragma once

#include <cstdint>

#include "tensor_arg.h"

namespace mlakit::python {

// ---- bf16 rows -------------------------------------------------------------------------------

// Innermost dimension contiguous; every outer stride positive and a whole number of 16-byte rows.
void expect_row_layout(const TensorArg& t, const char* name);
// The data pointer 16-byte aligned (rows are copied 16 bytes at a time).
void expect_aligned(const TensorArg& t, const char* name);
// The slot stride (elements) of a [num_pages, page_size, D] cache: slots must be evenly spaced
// across pages, because the kernels address slot j as base + j * stride.
int64_t slot_stride(const TensorArg& t, const char* name);

// ---- the FP8 cache ---------------------------------------------------------------------------
// uint8 or float8_e4m3fn, [num_pages, page_size, 656] or FlashMLA's [num_pages, page_size, 1, 656];
// the rows of a page contiguous, pages any multiple of 16 bytes apart (FlashMLA pads each page by
// one row). The checks come in the call's order: dtype, rank, shape, layout.

bool is_fp8_cache_dtype(const TensorArg& t);
void expect_fp8_cache_dtype(const TensorArg& t, const char* name);
void expect_fp8_cache_rank(const TensorArg& t, const char* name);
// Row width 656 (and the 1 of the 4-D form); num_pages and page_size equal to `pages` and
// `page_size` where those are >= 0, `why` saying where the expected sizes come from.
void expect_fp8_cache_shape(const TensorArg& t, const char* name, int64_t pages = -1,
                            int64_t page_size = -1,
                            const char* why = "656-byte rows of the FP8 cache");
// Rows contiguous, pages >= page_size * 656 bytes and a multiple of 16 bytes apart, the data
// pointer aligned. Returns DsaTensors::kv_stride_page: the page stride in bytes, 0 for one page.
int64_t fp8_cache_page_stride(const TensorArg& t, const char* name);

}  // namespace mlakit::python
