// mlakit._C: the compiled half of the mlakit package. The Python package (python/mlakit/) wraps
// these entry points; docs/python.md is the user-facing reference.
#include <cuda_runtime_api.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "caches.h"
#include "kernels/workbench/poison_shared.h"
#include "dsa_call.h"
#include "mla_call.h"
#include "py_errors.h"
#include "quantize_call.h"

namespace nb = nanobind;
using namespace nb::literals;
namespace py = mlakit::python;

NB_MODULE(_C, m) {
  m.doc() = "mlakit's compiled entry points (DeepSeek-V3.2 sparse attention and dense paged MLA "
            "decode on Hopper).";
  m.attr("__version__") = MLAKIT_VERSION;
  m.attr("cuda_runtime_version") = CUDART_VERSION;

  // .none(): None reaches the entry points, which name the argument in their TypeError.
  m.def("dsa_sparse_attention", &py::dsa_sparse_attention, "q_nope"_a.none(), "q_pe"_a.none(),
        "ckv_cache"_a.none(), "kpe_cache"_a.none(), "sparse_indices"_a.none(),
        "sm_scale"_a.none(), "out"_a.none() = nb::none(), "lse"_a.none() = nb::none(),
        "stream"_a.none() = nb::none(), "attn_sink"_a.none() = nb::none(),
        "Runs DSA sparse attention decode; returns (out, lse), allocating whichever is None.\n"
        "stream: None = the inputs' framework's current stream, else a cudaStream_t as int.\n"
        "attn_sink: None, or fp32 [num_heads]: a zero-valued logit per head in the denominator.");
  m.def("dsa_sparse_attention_fp8", &py::dsa_sparse_attention_fp8, "q_nope"_a.none(), "q_pe"_a.none(),
        "kv_cache"_a.none(), "sparse_indices"_a.none(), "sm_scale"_a.none(),
        "out"_a.none() = nb::none(), "lse"_a.none() = nb::none(), "stream"_a.none() = nb::none(),
        "attn_sink"_a.none() = nb::none(),
        "Runs DSA sparse attention decode on the FP8 cache (uint8 or float8_e4m3fn\n"
        "[num_pages, page_size, 656] or [num_pages, page_size, 1, 656]); returns (out, lse),\n"
        "allocating whichever is None. stream: None = the inputs' framework's current stream, else\n"
        "a cudaStream_t as int. attn_sink: as dsa_sparse_attention's.");
  m.def("quantize_dsa_fp8", &py::quantize_dsa_fp8, "ckv"_a.none(), "kpe"_a.none() = nb::none(),
        "out"_a.none() = nb::none(), "stream"_a.none() = nb::none(),
        "Writes the FP8 cache of bf16 ckv [num_pages, page_size, 512] and kpe [.., 64] (kpe None: ckv\n"
        "is the combined [.., 576] cache) into out, or a new uint8 [num_pages, page_size, 656]\n"
        "tensor; returns it. stream: None = the inputs' framework's current stream, else a\n"
        "cudaStream_t as int.");
  m.def("check_indices", &py::check_indices, "sparse_indices"_a.none(), "ckv_cache"_a.none(),
        "stream"_a.none() = nb::none(),
        "Raises ValueError for an index that is neither -1 nor a slot of the cache (bf16 or FP8).\n"
        "Synchronizes.");
  m.def("plan_info", &py::plan_info, "num_tokens"_a, "num_pages"_a, "page_size"_a = 64,
        "topk"_a = 2048, "device"_a = -1, "num_heads"_a = 16, "head_dim_ckv"_a = 512,
        "head_dim_kpe"_a = 64, "kv"_a = "bf16",
        "The plan a call of this shape would use (kernel, tiling, workspace); kv: 'bf16' or 'fp8'.");
  m.def("mla_decode", &py::mla_decode, "q_nope"_a.none(), "q_pe"_a.none(), "ckv_cache"_a.none(),
        "kpe_cache"_a.none(), "block_table"_a.none(), "cache_seqlens"_a.none(), "sm_scale"_a.none(),
        "causal"_a.none() = false, "out"_a.none() = nb::none(), "lse"_a.none() = nb::none(),
        "stream"_a.none() = nb::none(),
        "Runs dense paged MLA decode; returns (out, lse), allocating whichever is None.\n"
        "q_pe None: q_nope is the combined [b, s_q, h, 576] query; kpe_cache None: ckv_cache is the\n"
        "combined [num_pages, page_size, 576] cache. stream: None = the inputs' framework's current\n"
        "stream, else a cudaStream_t as int.");
  m.def("mla_check_inputs", &py::mla_check_inputs, "block_table"_a.none(), "cache_seqlens"_a.none(),
        "ckv_cache"_a.none(), "stream"_a.none() = nb::none(),
        "Raises ValueError for a seqlen or a used page id outside the cache. Synchronizes.");
  m.def("mla_plan_info", &py::mla_plan_info, "batch"_a, "seq_q"_a, "num_heads"_a, "num_pages"_a,
        "page_size"_a, "max_pages"_a, "causal"_a = false, "device"_a = -1, "head_dim_ckv"_a = 512,
        "head_dim_kpe"_a = 64, "The plan an mla_decode call of this shape would use.");
  m.def("describe_tensor", &py::describe_tensor, "tensor"_a.none(),
        "The DLPack view the binding reads of a tensor (route, dtype, shape, strides, device).");
  m.def("set_allocator", &py::set_python_allocator, "allocator"_a.none(),
        "Registers (shape, dtype_name, device_index) -> tensor for frameworks without a DLPack "
        "allocator; None clears it.");
  // Test support: the stress tests poison shared memory between calls, as `mlakit verify` does.
  m.def("_poison_shared_memory", [](uint32_t pattern, bool below_dynamic, uintptr_t stream) {
    const cudaError_t e = mlakit::kernels::launch_poison_shared(pattern, below_dynamic,
                                                                reinterpret_cast<cudaStream_t>(stream));
    if (e != cudaSuccess) py::raise(PyExc_RuntimeError, std::string("poison shared memory: ") + cudaGetErrorString(e));
  }, "pattern"_a, "below_dynamic"_a = true, "stream"_a = 0,
        "Fills every SM's shared memory (the current device) with the 32-bit `pattern` on `stream`.");
  m.attr("_POISON_BF16") = mlakit::kernels::kPoisonBf16;
  m.attr("_POISON_E4M3") = mlakit::kernels::kPoisonE4m3;
  m.def("_shared_window", [] {
    uint32_t null_offset = 0, dynamic_offset = 0;
    const cudaError_t e = mlakit::kernels::shared_window(&null_offset, &dynamic_offset);
    if (e != cudaSuccess) py::raise(PyExc_RuntimeError, std::string("shared window: ") + cudaGetErrorString(e));
    return nb::make_tuple(null_offset, dynamic_offset);
  }, "(shared offset of a null pointer, of the dynamic allocation) on the current device.");
  m.def("empty_cache", &py::release_caches, "Frees cached workspaces and forgets cached plans.");
  m.def("cache_stats", [] {
    const py::CacheStats s = py::cache_stats();
    nb::dict d;
    d["plans"] = s.plans;
    d["workspaces"] = s.workspaces;
    d["workspace_bytes"] = s.workspace_bytes;
    return d;
  }, "Counts of cached plans and workspaces, and the workspaces' bytes.");
}
