#include "mla_call.h"

#include <cstdint>
#include <string>

#include <cuda_runtime_api.h>
#include <nanobind/stl/string.h>

#include "call_args.h"
#include "caches.h"
#include "mlakit/mla.h"
#include "py_errors.h"
#include "runtime/mla/layout.h"
#include "tensor_arg.h"

namespace mlakit::python {
namespace {

// The engines' combined layouts hold the latent then the rope part in one row:
// q [b, s_q, h, 576] and the cache [num_pages, page_size, 576] (mlakit/mla.h).
constexpr int64_t kLatentWidth = MlaProblem{}.head_dim_ckv;                   // 512
constexpr int64_t kCombinedWidth = kLatentWidth + MlaProblem{}.head_dim_kpe;  // 576

// ---- mla_decode's layout rules (runtime/mla/layout.h) on DLPack metadata --------------------
// dtype and shape come first, then strides and alignment, the device last (call_args.h): all
// but the device check read only metadata, so the same checks (and tests) hold for tensors of
// any device.

// Innermost dimension contiguous; every other stride (of a dimension of more than one element) a
// positive whole number of 16-byte rows and at least the row width, so that no two rows overlap.
// The nesting of the outer dimensions is mla_run's check (runtime/mla/layout.h), which names the
// stride.
void expect_row_layout(const TensorArg& t, const char* name) {
  expect_contiguous_last_dim(t, name);
  const int64_t elem = t.view().dtype.bits / 8, width = t.size(t.ndim() - 1);
  for (int i = 0; i < t.ndim() - 1; ++i) {
    if (t.size(i) <= 1) continue;
    if (!mla_layout::whole_rows(t.stride(i), elem))
      raise(PyExc_ValueError,
            std::string(name) + ": strides " + strides_string(t) + " (elements) for shape " +
                shape_string(t) + ": outer strides must be positive multiples of " +
                std::to_string(mla_layout::stride_multiple(elem)) +
                " elements (16-byte rows); call .contiguous()");
    if (t.stride(i) < width)
      raise(PyExc_ValueError,
            std::string(name) + ": strides " + strides_string(t) + " (elements) for shape " +
                shape_string(t) + ": rows overlap; outer strides must be at least the row width (" +
                std::to_string(width) + " elements); call .contiguous()");
  }
}

void expect_aligned(const TensorArg& t, const char* name) {
  if (!mla_layout::aligned(t.data()))
    raise_misaligned(t, name, int(mla_layout::kRowAlignBytes),
                     "(rows are copied 16 bytes at a time); a view starting mid-row? call .clone()");
}

// block_table [b, max_pages]: entries contiguous within a row, rows that do not overlap.
void expect_table_layout(const TensorArg& t, const char* name) {
  expect_contiguous_last_dim(t, name);
  if (t.size(0) > 1 && (t.stride(0) < 0 || t.stride(0) < t.size(1)))
    raise(PyExc_ValueError, std::string(name) + ": strides " + strides_string(t) + " for shape " +
                                shape_string(t) + ": the row stride must be at least max_pages (" +
                                std::to_string(t.size(1)) + "); call .contiguous()");
}

bool read_causal(nb::handle obj) {
  if (!PyBool_Check(obj.ptr()))
    raise(PyExc_TypeError, "causal: expected a bool, got " + py_type_name(obj));
  return obj.ptr() == Py_True;
}

// ---- the call's steps --------------------------------------------------------------------------

// The tensors of one call, read from Python and checked in the order the contract states. With
// q_pe None, q_nope and q_pe are the two parts of `q_whole` (the combined query); with kpe_cache
// None, ckv and kpe those of `cache_whole`. Names are those the caller sees.
struct MlaArgs {
  TensorArg q_whole, cache_whole;
  TensorArg q_nope, q_pe, ckv, kpe, block_table, seqlens, out, lse;
  bool q_combined = false, cache_combined = false, have_out = false, have_lse = false;
  const char* q_pe_name = "q_pe";
  const char* kpe_name = "kpe_cache";
  float sm_scale = 0.f;
  bool causal = false;
  int device = 0;
};

void import_args(MlaArgs& a, nb::handle q_nope, nb::handle q_pe, nb::handle ckv, nb::handle kpe,
                 nb::handle block_table, nb::handle seqlens, nb::handle scale, nb::handle causal,
                 nb::handle out, nb::handle lse) {
  a.q_combined = q_pe.is_none();
  a.cache_combined = kpe.is_none();
  import_tensor(a.q_combined ? a.q_whole : a.q_nope, "q_nope", q_nope);
  if (a.q_combined)
    a.q_pe_name = "q_nope[..., 512:]";
  else
    import_tensor(a.q_pe, "q_pe", q_pe);
  import_tensor(a.cache_combined ? a.cache_whole : a.ckv, "ckv_cache", ckv);
  if (a.cache_combined)
    a.kpe_name = "ckv_cache[..., 512:]";
  else
    import_tensor(a.kpe, "kpe_cache", kpe);
  import_tensor(a.block_table, "block_table", block_table);
  import_tensor(a.seqlens, "cache_seqlens", seqlens);
  a.sm_scale = float(read_scale(scale));
  a.causal = read_causal(causal);
  a.have_out = !out.is_none();
  a.have_lse = !lse.is_none();
  if (a.have_out) import_tensor(a.out, "out", out);
  if (a.have_lse) import_tensor(a.lse, "lse", lse);
}

void check_dtypes_and_ranks(const MlaArgs& a) {
  const TensorArg& q = a.q_combined ? a.q_whole : a.q_nope;
  const TensorArg& cache = a.cache_combined ? a.cache_whole : a.ckv;
  expect_dtype(q, "q_nope", kBf16);
  if (!a.q_combined) expect_dtype(a.q_pe, "q_pe", kBf16);
  expect_dtype(cache, "ckv_cache", kBf16);
  if (!a.cache_combined) expect_dtype(a.kpe, "kpe_cache", kBf16);
  expect_dtype(a.block_table, "block_table", kInt32);
  expect_dtype(a.seqlens, "cache_seqlens", kInt32);
  if (a.have_out) expect_dtype(a.out, "out", kBf16);
  if (a.have_lse) expect_dtype(a.lse, "lse", kFloat32);
  if (a.q_combined) {
    expect_ndim(q, "q_nope", 4, "[batch, seq_q, num_heads, 576] (q_pe is None: the combined query)");
  } else {
    expect_ndim(q, "q_nope", 4, "[batch, seq_q, num_heads, head_dim_ckv]");
    expect_ndim(a.q_pe, "q_pe", 4, "[batch, seq_q, num_heads, head_dim_kpe]");
  }
  if (a.cache_combined) {
    expect_ndim(cache, "ckv_cache", 3, "[num_pages, page_size, 576] (kpe_cache is None: the combined cache)");
  } else {
    expect_ndim(cache, "ckv_cache", 3, "[num_pages, page_size, head_dim_ckv]");
    expect_ndim(a.kpe, "kpe_cache", 3, "[num_pages, page_size, head_dim_kpe]");
  }
  expect_ndim(a.block_table, "block_table", 2, "[batch, max_pages]");
  expect_ndim(a.seqlens, "cache_seqlens", 1, "[batch]");
  if (a.have_out) expect_ndim(a.out, "out", 4, "[batch, seq_q, num_heads, head_dim_ckv]");
  if (a.have_lse) expect_ndim(a.lse, "lse", 3, "[batch, seq_q, num_heads]");
}

// The combined layouts become their latent and rope views: same strides, no copy.
void split_combined(MlaArgs& a) {
  if (a.q_combined) {
    expect_shape(a.q_whole, "q_nope", {-1, -1, -1, kCombinedWidth},
                 "q_pe is None: the combined query, 512 latent + 64 rope");
    a.q_nope.slice_last_dim(a.q_whole, 0, kLatentWidth);
    a.q_pe.slice_last_dim(a.q_whole, kLatentWidth, kCombinedWidth - kLatentWidth);
  }
  if (a.cache_combined) {
    expect_shape(a.cache_whole, "ckv_cache", {-1, -1, kCombinedWidth},
                 "kpe_cache is None: the combined cache, 512 latent + 64 rope");
    a.ckv.slice_last_dim(a.cache_whole, 0, kLatentWidth);
    a.kpe.slice_last_dim(a.cache_whole, kLatentWidth, kCombinedWidth - kLatentWidth);
  }
}

void check_shapes(const MlaArgs& a) {
  const int64_t b = a.q_nope.size(0), s = a.q_nope.size(1), h = a.q_nope.size(2);
  const int64_t d_ckv = a.q_nope.size(3), d_kpe = a.q_pe.size(3);
  const int64_t pages = a.ckv.size(0), page_size = a.ckv.size(1);
  if (!a.q_combined) expect_shape(a.q_pe, "q_pe", {b, s, h, -1}, "batch, seq_q and num_heads of q_nope");
  if (a.cache_combined) {  // the query's widths must be those of the combined cache
    expect_shape(a.q_nope, "q_nope", {-1, -1, -1, kLatentWidth}, "head_dim_ckv of the combined ckv_cache");
    expect_shape(a.q_pe, a.q_pe_name, {-1, -1, -1, kCombinedWidth - kLatentWidth},
                 "head_dim_kpe of the combined ckv_cache");
  } else {
    expect_shape(a.ckv, "ckv_cache", {-1, -1, d_ckv}, "head_dim_ckv of q_nope");
    const std::string why = std::string("num_pages and page_size of ckv_cache, head_dim_kpe of ") + a.q_pe_name;
    expect_shape(a.kpe, "kpe_cache", {pages, page_size, d_kpe}, why.c_str());
  }
  expect_shape(a.block_table, "block_table", {b, -1}, "batch of q_nope");
  expect_shape(a.seqlens, "cache_seqlens", {b}, "batch of q_nope");
  if (a.have_out)
    expect_shape(a.out, "out", {b, s, h, d_ckv}, "batch, seq_q and num_heads of q_nope, head_dim_ckv");
  if (a.have_lse) expect_shape(a.lse, "lse", {b, s, h}, "batch, seq_q and num_heads of q_nope");
}

void check_layout_and_devices(MlaArgs& a) {
  expect_row_layout(a.q_nope, "q_nope");
  expect_row_layout(a.q_pe, a.q_pe_name);
  expect_row_layout(a.ckv, "ckv_cache");
  expect_row_layout(a.kpe, a.kpe_name);
  expect_table_layout(a.block_table, "block_table");
  expect_contiguous(a.seqlens, "cache_seqlens");
  if (a.have_out) expect_contiguous(a.out, "out");
  if (a.have_lse) expect_contiguous(a.lse, "lse");
  expect_aligned(a.q_nope, "q_nope");
  expect_aligned(a.q_pe, a.q_pe_name);
  expect_aligned(a.ckv, "ckv_cache");
  expect_aligned(a.kpe, a.kpe_name);
  if (a.have_out) expect_aligned(a.out, "out");
  if (a.have_lse) expect_aligned(a.lse, "lse");
  expect_cuda(a.q_nope, "q_nope");
  a.device = a.q_nope.view().device.device_id;
  if (!a.q_combined) expect_device(a.q_pe, "q_pe", a.device, "q_nope");
  expect_device(a.ckv, "ckv_cache", a.device, "q_nope");
  if (!a.cache_combined) expect_device(a.kpe, "kpe_cache", a.device, "q_nope");
  expect_device(a.block_table, "block_table", a.device, "q_nope");
  expect_device(a.seqlens, "cache_seqlens", a.device, "q_nope");
  if (a.have_out) expect_device(a.out, "out", a.device, "q_nope");
  if (a.have_lse) expect_device(a.lse, "lse", a.device, "q_nope");
}

// Everything the plan needs is known: fail on an unsupported problem before allocating.
MlaProblem problem_of(const MlaArgs& a) {
  for (int64_t extent : {a.q_nope.size(0), a.q_nope.size(1), a.q_nope.size(2), a.q_nope.size(3),
                         a.q_pe.size(3), a.ckv.size(0), a.ckv.size(1), a.block_table.size(1)})
    if (extent > INT32_MAX)
      raise(PyExc_ValueError, "q_nope, ckv_cache, block_table: every extent must fit int32; got "
                              "shapes " + shape_string(a.q_nope) + ", " + shape_string(a.ckv) + ", " +
                              shape_string(a.block_table));
  MlaProblem p;
  p.batch = int(a.q_nope.size(0));
  p.seq_q = int(a.q_nope.size(1));
  p.num_heads = int(a.q_nope.size(2));
  p.head_dim_ckv = int(a.q_nope.size(3));
  p.head_dim_kpe = int(a.q_pe.size(3));
  p.num_pages = int(a.ckv.size(0));
  p.page_size = int(a.ckv.size(1));
  p.max_pages = int(a.block_table.size(1));
  p.causal = a.causal ? 1 : 0;
  return p;
}

// out and lse as given, or new tensors of the inputs' framework (read back as arguments).
nb::tuple outputs_of(MlaArgs& a, const dl::ExchangeApi* api, nb::handle out_obj, nb::handle lse_obj) {
  const int64_t b = a.q_nope.size(0), s = a.q_nope.size(1), h = a.q_nope.size(2), d = a.q_nope.size(3);
  const bool any = b * s * h > 0;
  nb::object out = a.have_out ? nb::borrow(out_obj) : new_tensor(api, {b, s, h, d}, kBf16, a.device, "out");
  nb::object lse = a.have_lse ? nb::borrow(lse_obj) : new_tensor(api, {b, s, h}, kFloat32, a.device, "lse");
  if (!a.have_out && any) import_tensor(a.out, "out", out);
  if (!a.have_lse && any) import_tensor(a.lse, "lse", lse);
  return nb::make_tuple(out, lse);
}

MlaTensors tensors_of(const MlaArgs& a) {
  MlaTensors x;
  x.q_nope = a.q_nope.data();
  x.q_pe = a.q_pe.data();
  x.ckv_cache = a.ckv.data();
  x.kpe_cache = a.kpe.data();
  x.block_table = static_cast<const int32_t*>(a.block_table.data());
  x.cache_seqlens = static_cast<const int32_t*>(a.seqlens.data());
  x.output = a.out.data();
  x.lse = static_cast<float*>(a.lse.data());
  x.sm_scale = a.sm_scale;
  x.q_nope_stride_b = used_stride(a.q_nope, 0);
  x.q_nope_stride_s = used_stride(a.q_nope, 1);
  x.q_nope_stride_h = used_stride(a.q_nope, 2);
  x.q_pe_stride_b = used_stride(a.q_pe, 0);
  x.q_pe_stride_s = used_stride(a.q_pe, 1);
  x.q_pe_stride_h = used_stride(a.q_pe, 2);
  x.ckv_stride_page = used_stride(a.ckv, 0);
  x.ckv_stride_row = used_stride(a.ckv, 1);
  x.kpe_stride_page = used_stride(a.kpe, 0);
  x.kpe_stride_row = used_stride(a.kpe, 1);
  x.block_table_stride_b = used_stride(a.block_table, 0);
  return x;
}

}  // namespace

nb::tuple mla_decode(nb::handle q_nope_obj, nb::handle q_pe_obj, nb::handle ckv_obj, nb::handle kpe_obj,
                     nb::handle block_table_obj, nb::handle seqlens_obj, nb::handle scale_obj,
                     nb::handle causal_obj, nb::handle out_obj, nb::handle lse_obj, nb::handle stream_obj) {
  MlaArgs a;
  import_args(a, q_nope_obj, q_pe_obj, ckv_obj, kpe_obj, block_table_obj, seqlens_obj, scale_obj,
              causal_obj, out_obj, lse_obj);
  check_dtypes_and_ranks(a);
  split_combined(a);
  check_shapes(a);
  check_layout_and_devices(a);
  const MlaProblem problem = problem_of(a);
  const dl::ExchangeApi* api = exchange_api_of(Py_TYPE(q_nope_obj.ptr()));
  if (problem.batch == 0 || problem.seq_q == 0) return outputs_of(a, api, out_obj, lse_obj);  // no query

  DeviceGuard guard(a.device);
  const std::shared_ptr<const MlaPlan> plan = cached_plan(problem, a.device);
  const cudaStream_t stream = resolve_stream(stream_obj, api, a.device);
  nb::tuple result = outputs_of(a, api, out_obj, lse_obj);
  const size_t workspace_bytes = plan->workspace_bytes();
  const std::shared_ptr<DeviceBuffer> workspace =
      workspace_bytes == 0 ? nullptr
                           : workspace_for(WorkspaceOp::kMla, api, a.device, stream, workspace_bytes,
                                           is_capturing(stream));
  if (Status s = mla_run(*plan, tensors_of(a), workspace ? workspace->data() : nullptr,
                         workspace ? workspace->bytes() : 0, stream);
      !s)
    raise_status(s);
  return result;
}

void mla_check_inputs(nb::handle block_table_obj, nb::handle seqlens_obj, nb::handle ckv_obj,
                      nb::handle stream_obj) {
  TensorArg block_table, seqlens, ckv;
  import_tensor(block_table, "block_table", block_table_obj);
  import_tensor(seqlens, "cache_seqlens", seqlens_obj);
  import_tensor(ckv, "ckv_cache", ckv_obj);
  expect_dtype(block_table, "block_table", kInt32);
  expect_dtype(seqlens, "cache_seqlens", kInt32);
  expect_ndim(block_table, "block_table", 2, "[batch, max_pages]");
  expect_ndim(seqlens, "cache_seqlens", 1, "[batch]");
  expect_ndim(ckv, "ckv_cache", 3, "[num_pages, page_size, head_dim_ckv]");
  expect_shape(seqlens, "cache_seqlens", {block_table.size(0)}, "batch of block_table");
  expect_table_layout(block_table, "block_table");
  expect_contiguous(seqlens, "cache_seqlens");
  expect_cuda(block_table, "block_table");
  const int device = block_table.view().device.device_id;
  expect_device(seqlens, "cache_seqlens", device, "block_table");
  if (block_table.size(0) == 0) return;
  for (int64_t extent : {block_table.size(0), block_table.size(1), ckv.size(0), ckv.size(1)})
    if (extent > INT32_MAX)
      raise(PyExc_ValueError, "block_table, ckv_cache: every extent must fit int32; got shapes " +
                                  shape_string(block_table) + ", " + shape_string(ckv));

  MlaProblem problem;
  problem.batch = int(block_table.size(0));
  problem.max_pages = int(block_table.size(1));
  problem.num_pages = int(ckv.size(0));
  problem.page_size = int(ckv.size(1));
  DeviceGuard guard(device);
  const cudaStream_t stream =
      resolve_stream(stream_obj, exchange_api_of(Py_TYPE(block_table_obj.ptr())), device);
  if (is_capturing(stream))
    raise(PyExc_RuntimeError, "mla_check_inputs synchronizes its stream, which is being captured "
                              "into a CUDA graph; check the inputs before the capture");
  if (Status s = mlakit::mla_check_inputs(problem, static_cast<const int32_t*>(block_table.data()),
                                          used_stride(block_table, 0),
                                          static_cast<const int32_t*>(seqlens.data()), stream);
      !s)
    raise_status(s);
}

nb::dict mla_plan_info(int batch, int seq_q, int num_heads, int num_pages, int page_size,
                       int max_pages, bool causal, int device, int head_dim_ckv, int head_dim_kpe) {
  MlaProblem problem;
  problem.batch = batch;
  problem.seq_q = seq_q;
  problem.num_heads = num_heads;
  problem.num_pages = num_pages;
  problem.page_size = page_size;
  problem.max_pages = max_pages;
  problem.causal = causal ? 1 : 0;
  problem.head_dim_ckv = head_dim_ckv;
  problem.head_dim_kpe = head_dim_kpe;
  MlaPlanOptions options;
  options.device = device;
  MlaPlan plan;
  if (Status s = mla_plan(problem, options, &plan); !s) raise_status(s);
  nb::dict d;
  d["problem"] = plan.problem().to_string();
  d["kernel_key"] = plan.kernel_key();
  d["tiling"] = plan.tiling();
  d["workspace_bytes"] = plan.workspace_bytes();
  return d;
}

}  // namespace mlakit::python
