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
#include "op_call.h"
#include "plan_cache.h"
#include "py_errors.h"
#include "tensor_arg.h"

namespace mlakit::python {
namespace {

// The FP8 cache's row holds a 512-wide latent and a 64-wide rope part (mlakit/dsa_fp8.h): the
// query's widths.
constexpr int64_t kFp8LatentWidth = dsa_fp8::kNopeBytes;      // 512 e4m3
constexpr int64_t kFp8RopeWidth = dsa_fp8::kRopeBytes / 2;    // 64 bf16

// One call on either cache, read from Python and checked in the order the contract states. The
// bf16 cache is ckv and kpe; the FP8 cache (fp8) is kv alone.
struct DsaCall {
  using Problem = DsaProblem;
  static constexpr WorkspaceOp kWorkspace = WorkspaceOp::kDsa;

  bool fp8 = false;
  nb::handle lead;  // q_nope
  TensorArg q_nope, q_pe, ckv, kpe, kv, indices;
  OutputArg out, lse;
  TensorArg sink;  // attn_sink, when given (has_sink)
  bool has_sink = false;
  float sm_scale = 0.f;
  int64_t ckv_slot_stride = 0, kpe_slot_stride = 0, kv_page_stride = 0;
  int device = 0;

  // The cache tensor whose first two dimensions are [num_pages, page_size], and its name.
  const TensorArg& pages() const { return fp8 ? kv : ckv; }
  const char* pages_name() const { return fp8 ? "kv_cache" : "ckv_cache"; }

  // `cache` is ckv_cache, or kv_cache for the FP8 cache (then `kpe_obj` is unused).
  void import(nb::handle q_nope_obj, nb::handle q_pe_obj, nb::handle cache_obj, nb::handle kpe_obj,
              nb::handle indices_obj, nb::handle scale_obj, nb::handle out_obj, nb::handle lse_obj,
              nb::handle sink_obj) {
    lead = q_nope_obj;
    import_tensor(q_nope, "q_nope", q_nope_obj);
    import_tensor(q_pe, "q_pe", q_pe_obj);
    if (fp8) {
      import_tensor(kv, "kv_cache", cache_obj);
    } else {
      import_tensor(ckv, "ckv_cache", cache_obj);
      import_tensor(kpe, "kpe_cache", kpe_obj);
    }
    import_tensor(indices, "sparse_indices", indices_obj);
    sm_scale = float(read_scale(scale_obj));
    import_output(out, "out", out_obj);
    import_output(lse, "lse", lse_obj);
    has_sink = !sink_obj.is_none();
    if (has_sink) import_tensor(sink, "attn_sink", sink_obj);
  }

  void check() {
    check_dtypes_and_ranks();
    check_shapes();
    check_layout_and_devices();
  }

  void check_dtypes_and_ranks() const {
    expect_dtype(q_nope, "q_nope", kBf16);
    expect_dtype(q_pe, "q_pe", kBf16);
    if (fp8) {
      expect_fp8_cache_dtype(kv, "kv_cache");
    } else {
      expect_dtype(ckv, "ckv_cache", kBf16);
      expect_dtype(kpe, "kpe_cache", kBf16);
    }
    expect_dtype(indices, "sparse_indices", kInt32);
    if (out.given) expect_dtype(out.arg, "out", kBf16);
    if (lse.given) expect_dtype(lse.arg, "lse", kFloat32);
    if (has_sink) expect_dtype(sink, "attn_sink", kFloat32);
    expect_ndim(q_nope, "q_nope", 3, "[num_tokens, num_heads, head_dim_ckv]");
    expect_ndim(q_pe, "q_pe", 3, "[num_tokens, num_heads, head_dim_kpe]");
    if (fp8) {
      expect_fp8_cache_rank(kv, "kv_cache");
    } else {
      expect_ndim(ckv, "ckv_cache", 3, "[num_pages, page_size, head_dim_ckv]");
      expect_ndim(kpe, "kpe_cache", 3, "[num_pages, page_size, head_dim_kpe]");
    }
    expect_ndim(indices, "sparse_indices", 2, "[num_tokens, topk]");
    if (out.given) expect_ndim(out.arg, "out", 3, "[num_tokens, num_heads, head_dim_ckv]");
    if (lse.given) expect_ndim(lse.arg, "lse", 2, "[num_tokens, num_heads]");
    if (has_sink) expect_ndim(sink, "attn_sink", 1, "[num_heads]");
  }

  void check_shapes() const {
    const int64_t T = q_nope.size(0), H = q_nope.size(1), D_ckv = q_nope.size(2);
    expect_shape(q_pe, "q_pe", {T, H, -1}, "num_tokens and num_heads of q_nope");
    if (fp8) {
      expect_shape(q_nope, "q_nope", {-1, -1, kFp8LatentWidth}, "the latent width of the FP8 cache");
      expect_shape(q_pe, "q_pe", {-1, -1, kFp8RopeWidth}, "the rope width of the FP8 cache");
      expect_fp8_cache_shape(kv, "kv_cache");
    } else {
      expect_shape(ckv, "ckv_cache", {-1, -1, D_ckv}, "head_dim_ckv of q_nope");
      expect_shape(kpe, "kpe_cache", {ckv.size(0), ckv.size(1), q_pe.size(2)},
                   "num_pages and page_size of ckv_cache, head_dim_kpe of q_pe");
    }
    expect_shape(indices, "sparse_indices", {T, -1}, "num_tokens of q_nope");
    if (out.given) expect_shape(out.arg, "out", {T, H, D_ckv}, "the shape of q_nope");
    if (lse.given) expect_shape(lse.arg, "lse", {T, H}, "num_tokens and num_heads of q_nope");
    if (has_sink) expect_shape(sink, "attn_sink", {H}, "num_heads of q_nope");
  }

  // Strides and alignment (dsa_layout.h), the devices last: all but the device check read only
  // metadata, so the same checks (and tests) hold for tensors of any device.
  void check_layout_and_devices() {
    expect_row_layout(q_nope, "q_nope");
    expect_row_layout(q_pe, "q_pe");
    if (fp8) {
      kv_page_stride = fp8_cache_page_stride(kv, "kv_cache");
    } else {
      expect_row_layout(ckv, "ckv_cache");
      expect_row_layout(kpe, "kpe_cache");
      ckv_slot_stride = slot_stride(ckv, "ckv_cache");
      kpe_slot_stride = slot_stride(kpe, "kpe_cache");
    }
    expect_row_layout(indices, "sparse_indices");
    if (out.given) expect_contiguous(out.arg, "out");
    if (lse.given) expect_contiguous(lse.arg, "lse");
    if (has_sink) expect_contiguous(sink, "attn_sink");
    const TensorArg* no = nullptr;
    const NamedArg args[] = {{&q_nope, "q_nope"},
                             {&q_pe, "q_pe"},
                             {fp8 ? &kv : &ckv, pages_name()},
                             {fp8 ? no : &kpe, "kpe_cache"},
                             {&indices, "sparse_indices"},
                             {out.given ? &out.arg : no, "out"},
                             {lse.given ? &lse.arg : no, "lse"},
                             {has_sink ? &sink : no, "attn_sink"}};
    for (const NamedArg& a : args)  // attn_sink is read a float at a time: any float's alignment
      if (a.t != nullptr && a.t != &sink) expect_aligned(*a.t, a.name);
    device = expect_one_device(args);
  }

  // Everything the plan needs is known: fail on an unsupported problem before allocating.
  DsaProblem problem() const {
    for (int64_t extent : {q_nope.size(0), q_nope.size(1), q_nope.size(2), q_pe.size(2),
                           pages().size(0), pages().size(1), indices.size(1)})
      if (extent > INT32_MAX)
        raise(PyExc_ValueError, std::string("q_nope, ") + pages_name() + ", sparse_indices: every "
                                "extent must fit int32; got shapes " + shape_string(q_nope) + ", " +
                                shape_string(pages()) + ", " + shape_string(indices));
    DsaProblem p;
    p.num_tokens = int(q_nope.size(0));
    p.num_heads = int(q_nope.size(1));
    p.head_dim_ckv = int(q_nope.size(2));
    p.head_dim_kpe = int(q_pe.size(2));
    p.num_pages = int(pages().size(0));
    p.page_size = int(pages().size(1));
    p.topk = int(indices.size(1));
    p.kv = fp8 ? DsaKv::kFp8 : DsaKv::kBf16;
    return p;
  }

  static bool empty(const DsaProblem& p) { return p.num_tokens == 0; }
  static std::shared_ptr<const DsaPlan> plan(const DsaProblem& p, int device) {
    return cached_plan(p, device, dsa_plan);
  }

  nb::tuple outputs(const NewTensors& fresh) {
    const int64_t T = q_nope.size(0), H = q_nope.size(1), D_ckv = q_nope.size(2);
    nb::object o = output_of(out, fresh, {T, H, D_ckv}, kBf16, "out");
    nb::object l = output_of(lse, fresh, {T, H}, kFloat32, "lse");
    return nb::make_tuple(o, l);
  }

  Status run(const DsaPlan& plan, void* workspace, size_t bytes, uint32_t* counters, cudaStream_t stream) const {
    DsaTensors x;
    x.counters = counters;
    x.q_nope = q_nope.data();
    x.q_pe = q_pe.data();
    if (fp8) {
      x.kv_cache = kv.data();
      x.kv_stride_page = kv_page_stride;
    } else {
      x.ckv_cache = ckv.data();
      x.kpe_cache = kpe.data();
      x.ckv_stride_slot = ckv_slot_stride;
      x.kpe_stride_slot = kpe_slot_stride;
    }
    x.sparse_indices = static_cast<const int32_t*>(indices.data());
    x.output = out.data;
    x.lse = static_cast<float*>(lse.data);
    x.attn_sink = has_sink ? static_cast<const float*>(sink.data()) : nullptr;
    x.sm_scale = sm_scale;
    x.q_nope_stride_t = used_stride(q_nope, 0);
    x.q_nope_stride_h = used_stride(q_nope, 1);
    x.q_pe_stride_t = used_stride(q_pe, 0);
    x.q_pe_stride_h = used_stride(q_pe, 1);
    x.indices_stride_t = used_stride(indices, 0);
    return dsa_run(plan, x, workspace, bytes, stream);
  }
};

}  // namespace

nb::tuple dsa_sparse_attention(nb::handle q_nope_obj, nb::handle q_pe_obj, nb::handle ckv_obj,
                               nb::handle kpe_obj, nb::handle indices_obj, nb::handle scale_obj,
                               nb::handle out_obj, nb::handle lse_obj, nb::handle stream_obj,
                               nb::handle sink_obj) {
  DsaCall call;
  call.import(q_nope_obj, q_pe_obj, ckv_obj, kpe_obj, indices_obj, scale_obj, out_obj, lse_obj, sink_obj);
  return run_op(call, stream_obj);
}

nb::tuple dsa_sparse_attention_fp8(nb::handle q_nope_obj, nb::handle q_pe_obj, nb::handle kv_obj,
                                   nb::handle indices_obj, nb::handle scale_obj, nb::handle out_obj,
                                   nb::handle lse_obj, nb::handle stream_obj, nb::handle sink_obj) {
  DsaCall call;
  call.fp8 = true;
  call.import(q_nope_obj, q_pe_obj, kv_obj, nb::none(), indices_obj, scale_obj, out_obj, lse_obj, sink_obj);
  return run_op(call, stream_obj);
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
  run_synchronizing("check_indices", "indices", device, indices_obj, stream_obj, [&](cudaStream_t s) {
    return dsa_check_indices(problem, static_cast<const int32_t*>(indices.data()),
                             used_stride(indices, 0), s);
  });
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
  return plan_dict(plan);
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
