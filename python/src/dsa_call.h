// The binding's DSA entry points: argument checks on DLPack metadata, then dsa_plan (cached) and
// dsa_run on the inputs' current stream. module.cpp gives them their Python names.
#pragma once

#include <string>

#include <nanobind/nanobind.h>

namespace mlakit::python {

namespace nb = nanobind;

// mlakit._C.dsa_sparse_attention: returns (out, lse); allocates whichever of them is None.
// `stream`: None = the inputs' framework's current stream on their device, else a raw
// cudaStream_t as an int. `attn_sink`: None, or fp32 [num_heads] contiguous (DsaTensors::attn_sink).
// Errors: TypeError (not a tensor, wrong dtype, sm_scale not a number),
// ValueError (shapes, strides, alignment, devices, Status kInvalidArgument), NotImplementedError
// (kUnsupported), RuntimeError (CUDA and other failures).
nb::tuple dsa_sparse_attention(nb::handle q_nope, nb::handle q_pe, nb::handle ckv_cache,
                               nb::handle kpe_cache, nb::handle sparse_indices,
                               nb::handle sm_scale, nb::handle out, nb::handle lse,
                               nb::handle stream, nb::handle attn_sink);

// mlakit._C.dsa_sparse_attention_fp8: the same call on DeepSeek-V3.2's FP8 cache (mlakit/dsa_fp8.h):
// kv_cache uint8 or float8_e4m3fn, [num_pages, page_size, 656] or FlashMLA's
// [num_pages, page_size, 1, 656], rows contiguous, pages a multiple of 16 bytes apart (FlashMLA's
// padded pages included). Same returns, streams and errors.
nb::tuple dsa_sparse_attention_fp8(nb::handle q_nope, nb::handle q_pe, nb::handle kv_cache,
                                   nb::handle sparse_indices, nb::handle sm_scale, nb::handle out,
                                   nb::handle lse, nb::handle stream, nb::handle attn_sink);

// mlakit._C.check_indices: raises ValueError naming the first index that is neither -1 nor a
// slot of the cache (bf16 ckv_cache, or the FP8 cache). Synchronizes the stream; refuses to run
// inside a stream capture.
void check_indices(nb::handle sparse_indices, nb::handle ckv_cache, nb::handle stream);

// mlakit._C.plan_info: what a call of this shape would run (kernel key, tiling, workspace); `kv`
// is the cache format, "bf16" or "fp8".
nb::dict plan_info(int num_tokens, int num_pages, int page_size, int topk, int device,
                   int num_heads, int head_dim_ckv, int head_dim_kpe, const std::string& kv);

// mlakit._C.describe_tensor: the DLPack view the binding reads of `obj` (route, dtype, shape,
// strides, device, data pointer). For tests and debugging.
nb::dict describe_tensor(nb::handle obj);

}  // namespace mlakit::python
