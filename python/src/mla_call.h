// The binding's mla_decode entry points: argument checks on DLPack metadata, then mla_plan
// (cached) and mla_run on the inputs' current stream. module.cpp gives them their Python names.
#pragma once

#include <nanobind/nanobind.h>

namespace mlakit::python {

namespace nb = nanobind;

// mlakit._C.mla_decode: returns (out, lse); allocates whichever of them is None. q_pe None means
// q_nope is the combined [b, s_q, h, 576] query; kpe_cache None means ckv_cache is the combined
// [num_pages, page_size, 576] cache (both split into views, never copied). `causal` a bool.
// `stream`: None = the inputs' framework's current stream on their device, else a raw
// cudaStream_t as an int. Errors: TypeError (not a tensor, wrong dtype, sm_scale not a number,
// causal not a bool), ValueError (shapes, strides, alignment, devices, Status kInvalidArgument),
// NotImplementedError (kUnsupported), RuntimeError (CUDA and other failures).
nb::tuple mla_decode(nb::handle q_nope, nb::handle q_pe, nb::handle ckv_cache, nb::handle kpe_cache,
                     nb::handle block_table, nb::handle cache_seqlens, nb::handle sm_scale,
                     nb::handle causal, nb::handle out, nb::handle lse, nb::handle stream);

// mlakit._C.mla_check_inputs: raises ValueError naming the first cache_seqlens entry outside
// [0, max_pages * page_size] or the first page id outside [0, num_pages) among the pages a request
// uses. Synchronizes the stream; refuses to run inside a stream capture.
void mla_check_inputs(nb::handle block_table, nb::handle cache_seqlens, nb::handle ckv_cache,
                      nb::handle stream);

// mlakit._C.mla_plan_info: what a call of this shape would run (kernel key, tiling, workspace).
nb::dict mla_plan_info(int batch, int seq_q, int num_heads, int num_pages, int page_size,
                       int max_pages, bool causal, int device, int head_dim_ckv, int head_dim_kpe);

}  // namespace mlakit::python
