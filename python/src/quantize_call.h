// The binding's FP8 quantizer: argument checks on DLPack metadata, then dsa_quantize_fp8
// (mlakit/dsa_fp8.h) on the inputs' current stream. module.cpp gives it its Python name.
#pragma once

#include <nanobind/nanobind.h>

namespace mlakit::python {

namespace nb = nanobind;

// mlakit._C.quantize_dsa_fp8: writes DeepSeek-V3.2's FP8 cache from bf16 ckv [num_pages,
// page_size, 512] and kpe [num_pages, page_size, 64]; kpe None means ckv is the combined
// [num_pages, page_size, 576] cache (split into views, never copied). Returns `out` (uint8 or
// float8_e4m3fn, [num_pages, page_size, 656] or [num_pages, page_size, 1, 656], rows contiguous,
// pages a multiple of 16 bytes apart; bytes between pages are left as they are), or a new uint8
// [num_pages, page_size, 656] tensor when it is None. `stream` as for dsa_sparse_attention.
// Errors: TypeError (not a tensor, wrong dtype), ValueError (shapes, strides, alignment,
// devices, Status kInvalidArgument), NotImplementedError, RuntimeError (CUDA and other failures).
nb::object quantize_dsa_fp8(nb::handle ckv, nb::handle kpe, nb::handle out, nb::handle stream);

}  // namespace mlakit::python
