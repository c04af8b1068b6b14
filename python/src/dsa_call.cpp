#include "dsa_call.h"

#include <cstdint>
#include <string>

#include <cuda_runtime_api.h>
#include <nanobind/stl/string.h>

#include "call_args.h"
#include "caches.h"
#include "dsa_layout.h"
#include "mlakit/dsa.h"
#include "mlakit/dsa_fp8.h"
#include "py_errors.h"
#include "tensor_arg.h"

namespace mlakit::python {
namespace {

// The FP8 cache's row holds a 512-wide latent and a 64-wide rope part (mlakit/dsa_fp8.h): the
// query's widths.
constexpr int64_t kFp8LatentWidth = dsa_fp8::kNopeBytes;      // 512 e4m3
constexpr int64_t kFp8RopeWidth = dsa_fp8::kRopeBytes / 2;    // 64 bf16

// The tensors of one call, read from Python and checked in the order the contract states. The
// bf16 cache is ckv and kpe; the FP8 cache (fp8) is kv alone.
struct DsaArgs {
  bool fp8 = false;
  TensorArg q_nope, q_pe, ckv, kpe, kv, indices, out, lse;
  bool have_out = false, have_lse = false;
  float sm_scale = 0.f;
  int64_t ckv_slot_stride = 0, kpe_slot_stride = 0, kv_page_stride = 0;
  int device = 0;

  // The cache tensor whose first two dimensions are [num_pages, page_size], and its name.
  const TensorArg& pages() const { return fp8 ? kv : ckv; }
  const char* pages_name() const { return fp8 ? "kv_cache" : "ckv_cache"; }
};

// Calls f(tensor, name) for the inputs, in argument order.
template <class F>
void for_each_input(const DsaArgs& a, F&& f) {
  f(a.q_nope, "q_nope");
  f(a.q_pe, "q_pe");
  if (a.fp8) {
    f(a.kv, "kv_cache");
  } else {
    f(a.ckv, "ckv_cache");
    f(a.kpe, "kpe_cache");
  }
  f(a.indices, "sparse_indices");
}

// `cache` is ckv_cache, or kv_cache for the FP8 cache (then `kpe` is unused).
void import_args(DsaArgs& a, nb::handle q_nope, nb::handle q_pe, nb::handle cache, nb::handle kpe,
                 nb::handle indices, nb::handle scale, nb::handle out, nb::handle lse) {
  import_tensor(a.q_nope, "q_nope", q_nope);
  import_tensor(a.q_pe, "q_pe", q_pe);
  if (a.fp8) {
    import_tensor(a.kv, "kv_cache", cache);
  } else {
    import_tensor(a.ckv, "ckv_cache", cache);
    import_tensor(a.kpe, "kpe_cache", kpe);
  }
  import_tensor(a.indices, "sparse_indices", indices);
  a.sm_scale = float(read_scale(scale));
  a.have_out = !out.is_none();
  a.have_lse = !lse.is_none();
  if (a.have_out) import_tensor(a.out, "out", out);
  if (a.have_lse) import_tensor(a.lse, "lse", lse);
}

void check_dtypes_and_ranks(const DsaArgs& a) {
  expect_dtype(a.q_nope, "q_nope", kBf16);
  expect_dtype(a.q_pe, "q_pe", kBf16);
  if (a.fp8) {
    expect_fp8_cache_dtype(a.kv, "kv_cache");
  } else {
    expect_dtype(a.ckv, "ckv_cache", kBf16);
    expect_dtype(a.kpe, "kpe_cache", kBf16);
  }
  expect_dtype(a.indices, "sparse_indices", kInt32);
  if (a.have_out) expect_dtype(a.out, "out", kBf16);
  if (a.have_lse) expect_dtype(a.lse, "lse", kFloat32);
  expect_ndim(a.q_nope, "q_nope", 3, "[num_tokens, num_heads, head_dim_ckv]");
  expect_ndim(a.q_pe, "q_pe", 3, "[num_tokens, num_heads, head_dim_kpe]");
  if (a.fp8) {
    expect_fp8_cache_rank(a.kv, "kv_cache");
  } else {
    expect_ndim(a.ckv, "ckv_cache", 3, "[num_pages, page_size, head_dim_ckv]");
    expect_ndim(a.kpe, "kpe_cache", 3, "[num_pages, page_size, head_dim_kpe]");
  }
  expect_ndim(a.indices, "sparse_indices", 2, "[num_tokens, topk]");
  if (a.have_out) expect_ndim(a.out, "out", 3, "[num_tokens, num_heads, head_dim_ckv]");
  if (a.have_lse) expect_ndim(a.lse, "lse", 2, "[num_tokens, num_heads]");
}

void check_shapes(const DsaArgs& a) {
  const int64_t T = a.q_nope.size(0), H = a.q_nope.size(1), D_ckv = a.q_nope.size(2);
  expect_shape(a.q_pe, "q_pe", {T, H, -1}, "num_tokens and num_heads of q_nope");
  if (a.fp8) {
    expect_shape(a.q_nope, "q_nope", {-1, -1, kFp8LatentWidth}, "the latent width of the FP8 cache");
    expect_shape(a.q_pe, "q_pe", {-1, -1, kFp8RopeWidth}, "the rope width of the FP8 cache");
    expect_fp8_cache_shape(a.kv, "kv_cache");
  } else {
    expect_shape(a.ckv, "ckv_cache", {-1, -1, D_ckv}, "head_dim_ckv of q_nope");
    expect_shape(a.kpe, "kpe_cache", {a.ckv.size(0), a.ckv.size(1), a.q_pe.size(2)},
                 "num_pages and page_size of ckv_cache, head_dim_kpe of q_pe");
  }
  expect_shape(a.indices, "sparse_indices", {T, -1}, "num_tokens of q_nope");
  if (a.have_out) expect_shape(a.out, "out", {T, H, D_ckv}, "the shape of q_nope");
  if (a.have_lse) expect_shape(a.lse, "lse", {T, H}, "num_tokens and num_heads of q_nope");
}

// Strides and alignment (dsa_layout.h), the devices last: all but the device check read only
// metadata, so the same checks (and tests) hold for tensors of any device.
void check_layout_and_devices(DsaArgs& a) {
  expect_row_layout(a.q_nope, "q_nope");
  expect_row_layout(a.q_pe, "q_pe");
  if (a.fp8) {
    a.kv_page_stride = fp8_cache_page_stride(a.kv, "kv_cache");
  } else {
    expect_row_layout(a.ckv, "ckv_cache");
    expect_row_layout(a.kpe, "kpe_cache");
    a.ckv_slot_stride = slot_stride(a.ckv, "ckv_cache");
    a.kpe_slot_stride = slot_stride(a.kpe, "kpe_cache");
  }
  expect_row_layout(a.indices, "sparse_indices");
  if (a.have_out) expect_contiguous(a.out, "out");
  if (a.have_lse) expect_contiguous(a.lse, "lse");
  for_each_input(a, [](const TensorArg& t, const char* name) { expect_aligned(t, name); });
  if (a.have_out) expect_aligned(a.out, "out");
  if (a.have_lse) expect_aligned(a.lse, "lse");
  expect_cuda(a.q_nope, "q_nope");
  a.device = a.q_nope.view().device.device_id;
  for_each_input(a, [&](const TensorArg& t, const char* name) { expect_device(t, name, a.device, "q_nope"); });
  if (a.have_out) expect_device(a.out, "out", a.device, "q_nope");
  if (a.have_lse) expect_device(a.lse, "lse", a.device, "q_nope");
}

// Everything the plan needs is known: fail on an unsupported problem before allocating.
DsaProblem problem_of(const DsaArgs& a) {
  const TensorArg& pages = a.pages();
  for (int64_t extent : {a.q_nope.size(0), a.q_nope.size(1), a.q_nope.size(2), a.q_pe.size(2), pages.size(0),
                         pages.size(1), a.indices.size(1)})
    if (extent > INT32_MAX)
      raise(PyExc_ValueError, std::string("q_nope, ") + a.pages_name() + ", sparse_indices: every extent must "
                              "fit int32; got shapes " + shape_string(a.q_nope) + ", " + shape_string(pages) +
                              ", " + shape_string(a.indices));
  DsaProblem p;
  p.num_tokens = int(a.q_nope.size(0));
  p.num_heads = int(a.q_nope.size(1));
  p.head_dim_ckv = int(a.q_nope.size(2));
  p.head_dim_kpe = int(a.q_pe.size(2));
  p.num_pages = int(pages.size(0));
  p.page_size = int(pages.size(1));
  p.topk = int(a.indices.size(1));
  p.kv = a.fp8 ? DsaKv::kFp8 : DsaKv::kBf16;
  return p;
}

// out and lse as given, or new tensors of the inputs' framework (read back as arguments).
nb::tuple outputs_of(DsaArgs& a, const dl::ExchangeApi* api, nb::handle out_obj, nb::handle lse_obj) {
  const int64_t T = a.q_nope.size(0), H = a.q_nope.size(1), D_ckv = a.q_nope.size(2);
  nb::object out = a.have_out ? nb::borrow(out_obj) : new_tensor(api, {T, H, D_ckv}, kBf16, a.device, "out");
  nb::object lse = a.have_lse ? nb::borrow(lse_obj) : new_tensor(api, {T, H}, kFloat32, a.device, "lse");
  if (!a.have_out && T > 0) import_tensor(a.out, "out", out);
  if (!a.have_lse && T > 0) import_tensor(a.lse, "lse", lse);
  return nb::make_tuple(out, lse);
}

DsaTensors tensors_of(const DsaArgs& a) {
  DsaTensors x;
  x.q_nope = a.q_nope.data();
  x.q_pe = a.q_pe.data();
  if (a.fp8) {
    x.kv_cache = a.kv.data();
    x.kv_stride_page = a.kv_page_stride;
  } else {
    x.ckv_cache = a.ckv.data();
    x.kpe_cache = a.kpe.data();
    x.ckv_stride_slot = a.ckv_slot_stride;
    x.kpe_stride_slot = a.kpe_slot_stride;
  }
  x.sparse_indices = static_cast<const int32_t*>(a.indices.data());
  x.output = a.out.data();
  x.lse = static_cast<float*>(a.lse.data());
  x.sm_scale = a.sm_scale;
  x.q_nope_stride_t = used_stride(a.q_nope, 0);
  x.q_nope_stride_h = used_stride(a.q_nope, 1);
  x.q_pe_stride_t = used_stride(a.q_pe, 0);
  x.q_pe_stride_h = used_stride(a.q_pe, 1);
  x.indices_stride_t = used_stride(a.indices, 0);
  return x;
}

// The rest of a call once its arguments are read: checks, the cached plan, the outputs, the
// workspace and the launch on the stream.
nb::tuple check_and_run(DsaArgs& a, nb::handle q_nope_obj, nb::handle out_obj, nb::handle lse_obj,
                        nb::handle stream_obj) {
  check_dtypes_and_ranks(a);
  check_shapes(a);
  check_layout_and_devices(a);
  const DsaProblem problem = problem_of(a);
  const dl::ExchangeApi* api = exchange_api_of(Py_TYPE(q_nope_obj.ptr()));
  if (problem.num_tokens == 0) return outputs_of(a, api, out_obj, lse_obj);  // nothing to launch

  DeviceGuard guard(a.device);
  const std::shared_ptr<const DsaPlan> plan = cached_plan(problem, a.device);
  const cudaStream_t stream = resolve_stream(stream_obj, api, a.device);
  nb::tuple result = outputs_of(a, api, out_obj, lse_obj);
  const size_t workspace_bytes = plan->workspace_bytes();
  const std::shared_ptr<DeviceBuffer> workspace =
      workspace_bytes == 0 ? nullptr
                           : workspace_for(WorkspaceOp::kDsa, api, a.device, stream, workspace_bytes,
                                          is_capturing(stream));
  if (Status s = dsa_run(*plan, tensors_of(a), workspace ? workspace->data() : nullptr,
                         workspace ? workspace->bytes() : 0, stream);
      !s)
    raise_status(s);
  return result;
}

}  // namespace

nb::tuple dsa_sparse_attention(nb::handle q_nope_obj, nb::handle q_pe_obj, nb::handle ckv_obj,
                               nb::handle kpe_obj, nb::handle indices_obj, nb::handle scale_obj,
                               nb::handle out_obj, nb::handle lse_obj, nb::handle stream_obj) {
  DsaArgs a;
  import_args(a, q_nope_obj, q_pe_obj, ckv_obj, kpe_obj, indices_obj, scale_obj, out_obj, lse_obj);
  return check_and_run(a, q_nope_obj, out_obj, lse_obj, stream_obj);
}

nb::tuple dsa_sparse_attention_fp8(nb::handle q_nope_obj, nb::handle q_pe_obj, nb::handle kv_obj,
                                   nb::handle indices_obj, nb::handle scale_obj, nb::handle out_obj,
                                   nb::handle lse_obj, nb::handle stream_obj) {
  DsaArgs a;
  a.fp8 = true;
  import_args(a, q_nope_obj, q_pe_obj, kv_obj, nb::none(), indices_obj, scale_obj, out_obj, lse_obj);
  return check_and_run(a, q_nope_obj, out_obj, lse_obj, stream_obj);
}

void check_indices(nb::handle indices_obj, nb::handle cache_obj, nb::handle stream_obj) {
  TensorArg indices, cache;
  import_tensor(indices, "sparse_indices", indices_obj);
  import_tensor(cache, "ckv_cache", cache_obj);
  expect_dtype(indices, "sparse_indices", kInt32);
  expect_ndim(indices, "sparse_indices", 2, "[num_tokens, topk]");
  if (is_fp8_cache_dtype(cache))  // the FP8 cache: only its [num_pages, page_size] matter here
    expect_fp8_cache_rank(cache, "ckv_cache");
  else
    expect_ndim(cache, "ckv_cache", 3, "[num_pages, page_size, head_dim_ckv]");
  expect_row_layout(indices, "sparse_indices");
  expect_aligned(indices, "sparse_indices");
  expect_cuda(indices, "sparse_indices");
  const int device = indices.view().device.device_id;
  if (indices.size(0) == 0 || indices.size(1) == 0) return;

  DsaProblem problem;
  problem.num_tokens = int(indices.size(0));
  problem.topk = int(indices.size(1));
  problem.num_pages = int(cache.size(0));
  problem.page_size = int(cache.size(1));
  DeviceGuard guard(device);
  const cudaStream_t stream =
      resolve_stream(stream_obj, exchange_api_of(Py_TYPE(indices_obj.ptr())), device);
  if (is_capturing(stream))
    raise(PyExc_RuntimeError, "check_indices synchronizes its stream, which is being captured into "
                              "a CUDA graph; check the indices before the capture");
  if (Status s = dsa_check_indices(problem, static_cast<const int32_t*>(indices.data()),
                                   used_stride(indices, 0), stream);
      !s)
    raise_status(s);
}

nb::dict plan_info(int num_tokens, int num_pages, int page_size, int topk, int device,
                   int num_heads, int head_dim_ckv, int head_dim_kpe, const std::string& kv) {
  if (kv != "bf16" && kv != "fp8")
    raise(PyExc_ValueError, "kv: expected 'bf16' or 'fp8', got '" + kv + "'");
  DsaProblem problem;
  problem.kv = kv == "fp8" ? DsaKv::kFp8 : DsaKv::kBf16;
  problem.num_tokens = num_tokens;
  problem.num_pages = num_pages;
  problem.page_size = page_size;
  problem.topk = topk;
  problem.num_heads = num_heads;
  problem.head_dim_ckv = head_dim_ckv;
  problem.head_dim_kpe = head_dim_kpe;
  DsaPlanOptions options;
  options.device = device;
  DsaPlan plan;
  if (Status s = dsa_plan(problem, options, &plan); !s) raise_status(s);
  nb::dict d;
  d["problem"] = plan.problem().to_string();
  d["kernel_key"] = plan.kernel_key();
  d["tiling"] = plan.tiling();
  d["workspace_bytes"] = plan.workspace_bytes();
  return d;
}

nb::dict describe_tensor(nb::handle obj) {
  TensorArg t;
  import_tensor(t, "tensor", obj);
  nb::list shape, strides;
  for (int i = 0; i < t.ndim(); ++i) {
    shape.append(t.size(i));
    strides.append(t.stride(i));
  }
  nb::dict d;
  d["route"] = t.route();
  d["dtype"] = dtype_name(t.view().dtype);
  d["device"] = device_name(t.view().device);
  d["shape"] = nb::steal(PyList_AsTuple(shape.ptr()));
  d["strides"] = nb::steal(PyList_AsTuple(strides.ptr()));
  d["data_ptr"] = reinterpret_cast<uintptr_t>(t.data());
  return d;
}

}  // namespace mlakit::python
