#include "dsa_call.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include <cuda_runtime_api.h>
#include <nanobind/stl/string.h>

#include "base/cuda_status.h"
#include "caches.h"
#include "mlakit/dsa.h"
#include "py_errors.h"
#include "runtime/dsa/layout.h"
#include "tensor_arg.h"

namespace mlakit::python {
namespace {

constexpr dl::DataType kBf16{dl::kBfloat, 16, 1};
constexpr dl::DataType kInt32{dl::kInt, 32, 1};
constexpr dl::DataType kFloat32{dl::kFloat, 32, 1};


bool same_dtype(dl::DataType a, dl::DataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

std::string py_type_name(nb::handle obj) { return Py_TYPE(obj.ptr())->tp_name; }

// ---- per-argument checks, in the order the call applies them --------------------------------
// dtype and shape first, then strides and alignment (the C++ API's rules, runtime/dsa/layout.h),
// the device last: everything but the device reads only metadata, so the same checks (and tests)
// hold for tensors of any device.

void import_tensor(TensorArg& t, const char* name, nb::handle obj) {
  std::string why;
  if (t.import(obj, &why)) return;
  std::string msg = std::string(name) + ": expected a tensor (torch.Tensor or a DLPack producer), "
                                        "got " + py_type_name(obj);
  if (!why.empty()) msg += " that could not be read through DLPack (" + why + ")";
  raise(PyExc_TypeError, msg);
}

void expect_dtype(const TensorArg& t, const char* name, dl::DataType want) {
  if (!same_dtype(t.view().dtype, want))
    raise(PyExc_TypeError, std::string(name) + ": expected dtype " + dtype_name(want) + ", got " +
                               dtype_name(t.view().dtype));
}

void expect_ndim(const TensorArg& t, const char* name, int ndim, const char* dims) {
  if (t.ndim() != ndim)
    raise(PyExc_ValueError, std::string(name) + ": expected " + std::to_string(ndim) +
                                " dimensions " + dims + ", got shape " + shape_string(t));
}

// `want` holds -1 for dimensions that any size matches; `why` says where the sizes come from.
void expect_shape(const TensorArg& t, const char* name, std::initializer_list<int64_t> want,
                  const char* why) {
  int i = 0;
  bool ok = true;
  for (int64_t w : want) {
    ok &= w < 0 || t.size(i) == w;
    ++i;
  }
  if (ok) return;
  std::string expected = "[";
  i = 0;
  for (int64_t w : want)
    expected += (i++ > 0 ? ", " : "") + (w >= 0 ? std::to_string(w) : std::string("*"));
  raise(PyExc_ValueError, std::string(name) + ": expected shape " + expected + "] (" + why +
                              "), got " + shape_string(t));
}

// The stride the kernel uses for dimension i: 0 (= "contiguous", never used) for a dimension of
// one element, whose stride producers report as anything.
int64_t used_stride(const TensorArg& t, int i) { return t.size(i) > 1 ? t.stride(i) : 0; }

// Innermost dimension contiguous; every outer stride positive and a whole number of 16-byte rows.
void expect_row_layout(const TensorArg& t, const char* name) {
  const int last = t.ndim() - 1;
  if (used_stride(t, last) > 1 || used_stride(t, last) < 0)
    raise(PyExc_ValueError, std::string(name) + ": the last dimension must be contiguous (stride 1), "
                                                "got strides " + strides_string(t) +
                                " for shape " + shape_string(t) + "; call .contiguous()");
  const int64_t elem = t.view().dtype.bits / 8;
  for (int i = 0; i < last; ++i)
    if (t.size(i) > 1 && !dsa_layout::whole_rows(used_stride(t, i), elem))
      raise(PyExc_ValueError,
            std::string(name) + ": strides " + strides_string(t) + " (elements) for shape " +
                shape_string(t) + ": outer strides must be positive multiples of " +
                std::to_string(dsa_layout::stride_multiple(elem)) +
                " elements (16-byte rows); call .contiguous()");
}

// Row-major without gaps (outputs).
void expect_contiguous(const TensorArg& t, const char* name) {
  int64_t step = 1;
  for (int i = t.ndim() - 1; i >= 0; --i) {
    if (t.size(i) > 1 && t.stride(i) != step)
      raise(PyExc_ValueError, std::string(name) + ": expected a contiguous tensor, got strides " +
                                  strides_string(t) + " for shape " + shape_string(t));
    step *= t.size(i);
  }
}

void expect_aligned(const TensorArg& t, const char* name) {
  if (!dsa_layout::aligned(t.data())) {
    const auto address = reinterpret_cast<uintptr_t>(t.data());
    char hex[32];
    std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(address));
    raise(PyExc_ValueError, std::string(name) + ": data pointer " + hex +
                                " is not 16-byte aligned (rows are copied 16 bytes at a time); "
                                "a view starting mid-row? call .clone()");
  }
}

// The slot stride of a [num_pages, page_size, D] cache: slots must be evenly spaced across
// pages, because the kernel addresses slot j as base + j * stride.
int64_t slot_stride(const TensorArg& t, const char* name) {
  const int64_t pages = t.size(0), page_size = t.size(1);
  if (pages > 1 && page_size > 1 && t.stride(0) != page_size * t.stride(1))
    raise(PyExc_ValueError, std::string(name) + ": pages must be contiguous runs of slots "
                                                "(stride[0] == page_size * stride[1]), got strides " +
                                strides_string(t) + " for shape " + shape_string(t));
  return page_size > 1 ? used_stride(t, 1) : used_stride(t, 0);
}

void expect_cuda(const TensorArg& t, const char* name) {
  if (t.view().device.device_type != dl::kCUDA)
    raise(PyExc_ValueError, std::string(name) + ": expected a CUDA tensor, got a tensor on " +
                                device_name(t.view().device));
}

// Every tensor after q_nope must sit on q_nope's device; the message names that device.
void expect_device(const TensorArg& t, const char* name, int device) {
  if (t.view().device.device_type != dl::kCUDA || t.view().device.device_id != device)
    raise(PyExc_ValueError, std::string(name) + ": expected a tensor on cuda:" +
                                std::to_string(device) + " (the device of q_nope), got " +
                                device_name(t.view().device));
}

double read_scale(nb::handle obj) {
  double v;
  if (PyFloat_CheckExact(obj.ptr())) {
    v = PyFloat_AS_DOUBLE(obj.ptr());
  } else {
    v = PyBool_Check(obj.ptr()) ? -1.0 : PyFloat_AsDouble(obj.ptr());
    if (PyBool_Check(obj.ptr()) || (v == -1.0 && PyErr_Occurred())) {
      PyErr_Clear();
      raise(PyExc_TypeError, "sm_scale: expected a float, got " + py_type_name(obj));
    }
  }
  if (!std::isfinite(float(v)))
    raise(PyExc_ValueError, "sm_scale: expected a finite float32 value, got " + std::to_string(v));
  return v;
}

// ---- stream, device, capture -----------------------------------------------------------------

cudaStream_t resolve_stream(nb::handle stream, const dl::ExchangeApi* api, int device) {
  if (!stream.is_none()) {
    if (!PyLong_Check(stream.ptr()))
      raise(PyExc_TypeError, "stream: expected None or an int (a cudaStream_t), got " +
                                 py_type_name(stream));
    void* handle = PyLong_AsVoidPtr(stream.ptr());
    if (handle == nullptr && PyErr_Occurred()) {
      PyErr_Clear();
      raise(PyExc_ValueError, "stream: not a pointer-sized int");
    }
    return static_cast<cudaStream_t>(handle);
  }
  if (api == nullptr || api->current_work_stream == nullptr)
    raise(PyExc_ValueError,
          "stream: the inputs' framework publishes no current stream (DLPack exchange API); pass "
          "the stream explicitly");
  void* current = nullptr;
  if (api->current_work_stream(dl::kCUDA, device, &current) != 0)
    raise(PyExc_RuntimeError, "stream: the framework could not report its current stream: " +
                                  take_python_error());
  return static_cast<cudaStream_t>(current);
}

[[noreturn]] void raise_cuda(const char* what, cudaError_t e) {
  cudaGetLastError();  // a failed query is not a sticky error; leave no trace for the next call
  raise(PyExc_RuntimeError, cuda_status(e, what).message());
}

// Makes `device` current for the launch (kernels go to the current device's context) and puts
// the previous one back.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    int current = -1;
    if (cudaError_t e = cudaGetDevice(&current); e != cudaSuccess) raise_cuda("cudaGetDevice", e);
    if (current == device) return;
    if (cudaError_t e = cudaSetDevice(device); e != cudaSuccess) raise_cuda("cudaSetDevice", e);
    previous_ = current;
  }
  ~DeviceGuard() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

bool is_capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaError_t e = cudaStreamIsCapturing(stream, &status); e != cudaSuccess)
    raise_cuda("cudaStreamIsCapturing", e);
  return status != cudaStreamCaptureStatusNone;
}

// The tensors of one call, read from Python and checked in the order the contract states.
struct DsaArgs {
  TensorArg q_nope, q_pe, ckv, kpe, indices, out, lse;
  bool have_out = false, have_lse = false;
  float sm_scale = 0.f;
  int64_t ckv_slot_stride = 0, kpe_slot_stride = 0;
  int device = 0;
};

void import_args(DsaArgs& a, nb::handle q_nope, nb::handle q_pe, nb::handle ckv, nb::handle kpe,
                 nb::handle indices, nb::handle scale, nb::handle out, nb::handle lse) {
  import_tensor(a.q_nope, "q_nope", q_nope);
  import_tensor(a.q_pe, "q_pe", q_pe);
  import_tensor(a.ckv, "ckv_cache", ckv);
  import_tensor(a.kpe, "kpe_cache", kpe);
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
  expect_dtype(a.ckv, "ckv_cache", kBf16);
  expect_dtype(a.kpe, "kpe_cache", kBf16);
  expect_dtype(a.indices, "sparse_indices", kInt32);
  if (a.have_out) expect_dtype(a.out, "out", kBf16);
  if (a.have_lse) expect_dtype(a.lse, "lse", kFloat32);
  expect_ndim(a.q_nope, "q_nope", 3, "[num_tokens, num_heads, head_dim_ckv]");
  expect_ndim(a.q_pe, "q_pe", 3, "[num_tokens, num_heads, head_dim_kpe]");
  expect_ndim(a.ckv, "ckv_cache", 3, "[num_pages, page_size, head_dim_ckv]");
  expect_ndim(a.kpe, "kpe_cache", 3, "[num_pages, page_size, head_dim_kpe]");
  expect_ndim(a.indices, "sparse_indices", 2, "[num_tokens, topk]");
  if (a.have_out) expect_ndim(a.out, "out", 3, "[num_tokens, num_heads, head_dim_ckv]");
  if (a.have_lse) expect_ndim(a.lse, "lse", 2, "[num_tokens, num_heads]");
}

void check_shapes(const DsaArgs& a) {
  const int64_t T = a.q_nope.size(0), H = a.q_nope.size(1), D_ckv = a.q_nope.size(2);
  const int64_t P = a.ckv.size(0), page_size = a.ckv.size(1);
  expect_shape(a.q_pe, "q_pe", {T, H, -1}, "num_tokens and num_heads of q_nope");
  expect_shape(a.ckv, "ckv_cache", {-1, -1, D_ckv}, "head_dim_ckv of q_nope");
  expect_shape(a.kpe, "kpe_cache", {P, page_size, a.q_pe.size(2)},
               "num_pages and page_size of ckv_cache, head_dim_kpe of q_pe");
  expect_shape(a.indices, "sparse_indices", {T, -1}, "num_tokens of q_nope");
  if (a.have_out) expect_shape(a.out, "out", {T, H, D_ckv}, "the shape of q_nope");
  if (a.have_lse) expect_shape(a.lse, "lse", {T, H}, "num_tokens and num_heads of q_nope");
}

// Strides and alignment (dsa_layout's rules), the devices last: all but the device check read
// only metadata, so the same checks (and tests) hold for tensors of any device.
void check_layout_and_devices(DsaArgs& a) {
  expect_row_layout(a.q_nope, "q_nope");
  expect_row_layout(a.q_pe, "q_pe");
  expect_row_layout(a.ckv, "ckv_cache");
  expect_row_layout(a.kpe, "kpe_cache");
  expect_row_layout(a.indices, "sparse_indices");
  a.ckv_slot_stride = slot_stride(a.ckv, "ckv_cache");
  a.kpe_slot_stride = slot_stride(a.kpe, "kpe_cache");
  if (a.have_out) expect_contiguous(a.out, "out");
  if (a.have_lse) expect_contiguous(a.lse, "lse");
  for (auto [t, name] : {std::pair<const TensorArg*, const char*>{&a.q_nope, "q_nope"}, {&a.q_pe, "q_pe"},
                         {&a.ckv, "ckv_cache"}, {&a.kpe, "kpe_cache"}, {&a.indices, "sparse_indices"}})
    expect_aligned(*t, name);
  if (a.have_out) expect_aligned(a.out, "out");
  if (a.have_lse) expect_aligned(a.lse, "lse");
  expect_cuda(a.q_nope, "q_nope");
  a.device = a.q_nope.view().device.device_id;
  expect_device(a.q_pe, "q_pe", a.device);
  expect_device(a.ckv, "ckv_cache", a.device);
  expect_device(a.kpe, "kpe_cache", a.device);
  expect_device(a.indices, "sparse_indices", a.device);
  if (a.have_out) expect_device(a.out, "out", a.device);
  if (a.have_lse) expect_device(a.lse, "lse", a.device);
}

// Everything the plan needs is known: fail on an unsupported problem before allocating.
DsaProblem problem_of(const DsaArgs& a) {
  for (int64_t extent : {a.q_nope.size(0), a.q_nope.size(1), a.q_nope.size(2), a.q_pe.size(2), a.ckv.size(0),
                         a.ckv.size(1), a.indices.size(1)})
    if (extent > INT32_MAX)
      raise(PyExc_ValueError, "q_nope, ckv_cache, sparse_indices: every extent must fit int32; got "
                              "shapes " + shape_string(a.q_nope) + ", " + shape_string(a.ckv) + ", " +
                              shape_string(a.indices));
  DsaProblem p;
  p.num_tokens = int(a.q_nope.size(0));
  p.num_heads = int(a.q_nope.size(1));
  p.head_dim_ckv = int(a.q_nope.size(2));
  p.head_dim_kpe = int(a.q_pe.size(2));
  p.num_pages = int(a.ckv.size(0));
  p.page_size = int(a.ckv.size(1));
  p.topk = int(a.indices.size(1));
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
  x.ckv_cache = a.ckv.data();
  x.kpe_cache = a.kpe.data();
  x.sparse_indices = static_cast<const int32_t*>(a.indices.data());
  x.output = a.out.data();
  x.lse = static_cast<float*>(a.lse.data());
  x.sm_scale = a.sm_scale;
  x.q_nope_stride_t = used_stride(a.q_nope, 0);
  x.q_nope_stride_h = used_stride(a.q_nope, 1);
  x.q_pe_stride_t = used_stride(a.q_pe, 0);
  x.q_pe_stride_h = used_stride(a.q_pe, 1);
  x.ckv_stride_slot = a.ckv_slot_stride;
  x.kpe_stride_slot = a.kpe_slot_stride;
  x.indices_stride_t = used_stride(a.indices, 0);
  return x;
}

}  // namespace

nb::tuple dsa_sparse_attention(nb::handle q_nope_obj, nb::handle q_pe_obj, nb::handle ckv_obj,
                               nb::handle kpe_obj, nb::handle indices_obj, nb::handle scale_obj,
                               nb::handle out_obj, nb::handle lse_obj, nb::handle stream_obj) {
  DsaArgs a;
  import_args(a, q_nope_obj, q_pe_obj, ckv_obj, kpe_obj, indices_obj, scale_obj, out_obj, lse_obj);
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
                           : workspace_for(api, a.device, stream, workspace_bytes, is_capturing(stream));
  if (Status s = dsa_run(*plan, tensors_of(a), workspace ? workspace->data() : nullptr,
                         workspace ? workspace->bytes() : 0, stream);
      !s)
    raise_status(s);
  return result;
}

void check_indices(nb::handle indices_obj, nb::handle ckv_obj, nb::handle stream_obj) {
  TensorArg indices, ckv;
  import_tensor(indices, "sparse_indices", indices_obj);
  import_tensor(ckv, "ckv_cache", ckv_obj);
  expect_dtype(indices, "sparse_indices", kInt32);
  expect_ndim(indices, "sparse_indices", 2, "[num_tokens, topk]");
  expect_ndim(ckv, "ckv_cache", 3, "[num_pages, page_size, head_dim_ckv]");
  expect_row_layout(indices, "sparse_indices");
  expect_aligned(indices, "sparse_indices");
  expect_cuda(indices, "sparse_indices");
  const int device = indices.view().device.device_id;
  if (indices.size(0) == 0 || indices.size(1) == 0) return;

  DsaProblem problem;
  problem.num_tokens = int(indices.size(0));
  problem.topk = int(indices.size(1));
  problem.num_pages = int(ckv.size(0));
  problem.page_size = int(ckv.size(1));
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
                   int num_heads, int head_dim_ckv, int head_dim_kpe) {
  DsaProblem problem;
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
  d["tiling"] = plan.tiling().name();
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
