#include "mla_call.h"

#include <cstdint>
#include <string>

#include <cuda_runtime_api.h>
#include <nanobind/stl/string.h>

#include "call_args.h"
#include "caches.h"
#include "mlakit/mla.h"
#include "op_call.h"
#include "plan_cache.h"
#include "py_errors.h"
#include "runtime/mla/layout.h"
#include "tensor_arg.h"

namespace mlakit::python {
namespace {

// The engines' combined layouts hold the latent then the rope part in one row:
// q [b, s_q, h, 576] and the cache [num_pages, page_size, 576] (mlakit/mla.h).
constexpr int64_t kLatentWidth = MlaProblem{}.head_dim_ckv;  // 512
constexpr int64_t kRopeWidth = MlaProblem{}.head_dim_kpe;    // 64

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

// ---- the call ------------------------------------------------------------------------------------

// One call, read from Python and checked in the order the contract states. q is q_nope and q_pe,
// or the combined query (q_pe None); cache is ckv_cache and kpe_cache, or the combined cache
// (kpe_cache None).
struct MlaCall {
  using Problem = MlaProblem;
  static constexpr WorkspaceOp kWorkspace = WorkspaceOp::kMla;

  nb::handle lead;  // q_nope
  LatentRopeArgs q, cache;
  TensorArg block_table, seqlens;
  OutputArg out, lse;
  float sm_scale = 0.f;
  bool causal = false;
  int device = 0;

  void import(nb::handle q_nope_obj, nb::handle q_pe_obj, nb::handle ckv_obj, nb::handle kpe_obj,
              nb::handle block_table_obj, nb::handle seqlens_obj, nb::handle scale_obj,
              nb::handle causal_obj, nb::handle out_obj, nb::handle lse_obj) {
    lead = q_nope_obj;
    q.import("q_nope", q_nope_obj, "q_pe", q_pe_obj, "q_nope[..., 512:]");
    cache.import("ckv_cache", ckv_obj, "kpe_cache", kpe_obj, "ckv_cache[..., 512:]");
    import_tensor(block_table, "block_table", block_table_obj);
    import_tensor(seqlens, "cache_seqlens", seqlens_obj);
    sm_scale = float(read_scale(scale_obj));
    causal = read_causal(causal_obj);
    import_output(out, "out", out_obj);
    import_output(lse, "lse", lse_obj);
  }

  void check() {
    check_dtypes_and_ranks();
    q.split("q_nope", kLatentWidth, kRopeWidth, "q_pe is None: the combined query, 512 latent + 64 rope");
    cache.split("ckv_cache", kLatentWidth, kRopeWidth,
                "kpe_cache is None: the combined cache, 512 latent + 64 rope");
    check_shapes();
    check_layout_and_devices();
  }

  void check_dtypes_and_ranks() const {
    expect_dtype(q.given(), "q_nope", kBf16);
    if (!q.combined) expect_dtype(q.rope, "q_pe", kBf16);
    expect_dtype(cache.given(), "ckv_cache", kBf16);
    if (!cache.combined) expect_dtype(cache.rope, "kpe_cache", kBf16);
    expect_dtype(block_table, "block_table", kInt32);
    expect_dtype(seqlens, "cache_seqlens", kInt32);
    if (out.given) expect_dtype(out.arg, "out", kBf16);
    if (lse.given) expect_dtype(lse.arg, "lse", kFloat32);
    if (q.combined) {
      expect_ndim(q.whole, "q_nope", 4, "[batch, seq_q, num_heads, 576] (q_pe is None: the combined query)");
    } else {
      expect_ndim(q.latent, "q_nope", 4, "[batch, seq_q, num_heads, head_dim_ckv]");
      expect_ndim(q.rope, "q_pe", 4, "[batch, seq_q, num_heads, head_dim_kpe]");
    }
    if (cache.combined) {
      expect_ndim(cache.whole, "ckv_cache", 3,
                  "[num_pages, page_size, 576] (kpe_cache is None: the combined cache)");
    } else {
      expect_ndim(cache.latent, "ckv_cache", 3, "[num_pages, page_size, head_dim_ckv]");
      expect_ndim(cache.rope, "kpe_cache", 3, "[num_pages, page_size, head_dim_kpe]");
    }
    expect_ndim(block_table, "block_table", 2, "[batch, max_pages]");
    expect_ndim(seqlens, "cache_seqlens", 1, "[batch]");
    if (out.given) expect_ndim(out.arg, "out", 4, "[batch, seq_q, num_heads, head_dim_ckv]");
    if (lse.given) expect_ndim(lse.arg, "lse", 3, "[batch, seq_q, num_heads]");
  }

  void check_shapes() const {
    const TensorArg &q_nope = q.latent, &q_pe = q.rope, &ckv = cache.latent;
    const int64_t b = q_nope.size(0), s = q_nope.size(1), h = q_nope.size(2);
    const int64_t d_ckv = q_nope.size(3), d_kpe = q_pe.size(3);
    if (!q.combined) expect_shape(q_pe, "q_pe", {b, s, h, -1}, "batch, seq_q and num_heads of q_nope");
    if (cache.combined) {  // the query's widths must be those of the combined cache
      expect_shape(q_nope, "q_nope", {-1, -1, -1, kLatentWidth}, "head_dim_ckv of the combined ckv_cache");
      expect_shape(q_pe, q.rope_name, {-1, -1, -1, kRopeWidth}, "head_dim_kpe of the combined ckv_cache");
    } else {
      expect_shape(ckv, "ckv_cache", {-1, -1, d_ckv}, "head_dim_ckv of q_nope");
      expect_shape(cache.rope, "kpe_cache", {ckv.size(0), ckv.size(1), d_kpe},
                   q.combined ? "num_pages and page_size of ckv_cache, head_dim_kpe of q_nope[..., 512:]"
                              : "num_pages and page_size of ckv_cache, head_dim_kpe of q_pe");
    }
    expect_shape(block_table, "block_table", {b, -1}, "batch of q_nope");
    expect_shape(seqlens, "cache_seqlens", {b}, "batch of q_nope");
    if (out.given)
      expect_shape(out.arg, "out", {b, s, h, d_ckv}, "batch, seq_q and num_heads of q_nope, head_dim_ckv");
    if (lse.given) expect_shape(lse.arg, "lse", {b, s, h}, "batch, seq_q and num_heads of q_nope");
  }

  void check_layout_and_devices() {
    expect_row_layout(q.latent, "q_nope");
    expect_row_layout(q.rope, q.rope_name);
    expect_row_layout(cache.latent, "ckv_cache");
    expect_row_layout(cache.rope, cache.rope_name);
    expect_table_layout(block_table, "block_table");
    expect_contiguous(seqlens, "cache_seqlens");
    if (out.given) expect_contiguous(out.arg, "out");
    if (lse.given) expect_contiguous(lse.arg, "lse");
    expect_aligned(q.latent, "q_nope");
    expect_aligned(q.rope, q.rope_name);
    expect_aligned(cache.latent, "ckv_cache");
    expect_aligned(cache.rope, cache.rope_name);
    if (out.given) expect_aligned(out.arg, "out");
    if (lse.given) expect_aligned(lse.arg, "lse");
    // A combined tensor's second view is on the device of its first.
    const TensorArg* no = nullptr;
    const NamedArg args[] = {{&q.latent, "q_nope"},
                             {q.combined ? no : &q.rope, "q_pe"},
                             {&cache.latent, "ckv_cache"},
                             {cache.combined ? no : &cache.rope, "kpe_cache"},
                             {&block_table, "block_table"},
                             {&seqlens, "cache_seqlens"},
                             {out.given ? &out.arg : no, "out"},
                             {lse.given ? &lse.arg : no, "lse"}};
    device = expect_one_device(args);
  }

  // Everything the plan needs is known: fail on an unsupported problem before allocating.
  MlaProblem problem() const {
    const TensorArg &q_nope = q.latent, &ckv = cache.latent;
    for (int64_t extent : {q_nope.size(0), q_nope.size(1), q_nope.size(2), q_nope.size(3),
                           q.rope.size(3), ckv.size(0), ckv.size(1), block_table.size(1)})
      if (extent > INT32_MAX)
        raise(PyExc_ValueError, "q_nope, ckv_cache, block_table: every extent must fit int32; got "
                                "shapes " + shape_string(q_nope) + ", " + shape_string(ckv) + ", " +
                                shape_string(block_table));
    MlaProblem p;
    p.batch = int(q_nope.size(0));
    p.seq_q = int(q_nope.size(1));
    p.num_heads = int(q_nope.size(2));
    p.head_dim_ckv = int(q_nope.size(3));
    p.head_dim_kpe = int(q.rope.size(3));
    p.num_pages = int(ckv.size(0));
    p.page_size = int(ckv.size(1));
    p.max_pages = int(block_table.size(1));
    p.causal = causal ? 1 : 0;
    return p;
  }

  static bool empty(const MlaProblem& p) { return p.batch == 0 || p.seq_q == 0; }  // no query
  static std::shared_ptr<const MlaPlan> plan(const MlaProblem& p, int device) {
    return cached_plan(p, device, mla_plan);
  }

  nb::tuple outputs(const NewTensors& fresh) {
    const TensorArg& q_nope = q.latent;
    const int64_t b = q_nope.size(0), s = q_nope.size(1), h = q_nope.size(2), d = q_nope.size(3);
    nb::object o = output_of(out, fresh, {b, s, h, d}, kBf16, "out");
    nb::object l = output_of(lse, fresh, {b, s, h}, kFloat32, "lse");
    return nb::make_tuple(o, l);
  }

  Status run(const MlaPlan& plan, void* workspace, size_t bytes, uint32_t* counters, cudaStream_t stream) const {
    const TensorArg &q_nope = q.latent, &q_pe = q.rope, &ckv = cache.latent, &kpe = cache.rope;
    MlaTensors x;
    x.counters = counters;
    x.q_nope = q_nope.data();
    x.q_pe = q_pe.data();
    x.ckv_cache = ckv.data();
    x.kpe_cache = kpe.data();
    x.block_table = static_cast<const int32_t*>(block_table.data());
    x.cache_seqlens = static_cast<const int32_t*>(seqlens.data());
    x.output = out.data;
    x.lse = static_cast<float*>(lse.data);
    x.sm_scale = sm_scale;
    x.q_nope_stride_b = used_stride(q_nope, 0);
    x.q_nope_stride_s = used_stride(q_nope, 1);
    x.q_nope_stride_h = used_stride(q_nope, 2);
    x.q_pe_stride_b = used_stride(q_pe, 0);
    x.q_pe_stride_s = used_stride(q_pe, 1);
    x.q_pe_stride_h = used_stride(q_pe, 2);
    x.ckv_stride_page = used_stride(ckv, 0);
    x.ckv_stride_row = used_stride(ckv, 1);
    x.kpe_stride_page = used_stride(kpe, 0);
    x.kpe_stride_row = used_stride(kpe, 1);
    x.block_table_stride_b = used_stride(block_table, 0);
    return mla_run(plan, x, workspace, bytes, stream);
  }
};

}  // namespace

nb::tuple mla_decode(nb::handle q_nope_obj, nb::handle q_pe_obj, nb::handle ckv_obj, nb::handle kpe_obj,
                     nb::handle block_table_obj, nb::handle seqlens_obj, nb::handle scale_obj,
                     nb::handle causal_obj, nb::handle out_obj, nb::handle lse_obj, nb::handle stream_obj) {
  MlaCall call;
  call.import(q_nope_obj, q_pe_obj, ckv_obj, kpe_obj, block_table_obj, seqlens_obj, scale_obj,
              causal_obj, out_obj, lse_obj);
  return run_op(call, stream_obj);
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
  const NamedArg on_device[] = {{&block_table, "block_table"}, {&seqlens, "cache_seqlens"}};
  const int device = expect_one_device(on_device);
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
  run_synchronizing("mla_check_inputs", "inputs", device, block_table_obj, stream_obj, [&](cudaStream_t s) {
    return mlakit::mla_check_inputs(problem, static_cast<const int32_t*>(block_table.data()),
                                    used_stride(block_table, 0),
                                    static_cast<const int32_t*>(seqlens.data()), s);
  });
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
  return plan_dict(plan);
}

}  // namespace mlakit::python
