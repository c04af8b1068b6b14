#include "call_args.h"

#include <cmath>
#include <cstdio>

#include "base/cuda_status.h"
#include "py_errors.h"

namespace mlakit::python {
namespace {

bool same_dtype(dl::DataType a, dl::DataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

}  // namespace

std::string py_type_name(nb::handle obj) { return Py_TYPE(obj.ptr())->tp_name; }

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

bool has_dtype(const TensorArg& t, std::initializer_list<dl::DataType> any_of) {
  for (dl::DataType want : any_of)
    if (same_dtype(t.view().dtype, want)) return true;
  return false;
}

void expect_dtype(const TensorArg& t, const char* name, std::initializer_list<dl::DataType> any_of) {
  if (has_dtype(t, any_of)) return;
  std::string expected;
  for (dl::DataType want : any_of) expected += (expected.empty() ? "" : " or ") + dtype_name(want);
  raise(PyExc_TypeError, std::string(name) + ": expected dtype " + expected + ", got " +
                             dtype_name(t.view().dtype));
}

void expect_ndim(const TensorArg& t, const char* name, int ndim, const char* dims) {
  if (t.ndim() != ndim)
    raise(PyExc_ValueError, std::string(name) + ": expected " + std::to_string(ndim) +
                                " dimensions " + dims + ", got shape " + shape_string(t));
}

namespace {

// `want` holds `n` sizes; -1 matches any size.
void expect_sizes(const TensorArg& t, const char* name, const int64_t* want, int n, const char* why) {
  bool ok = true;
  for (int i = 0; i < n; ++i) ok &= want[i] < 0 || t.size(i) == want[i];
  if (ok) return;
  std::string expected = "[";
  for (int i = 0; i < n; ++i)
    expected += (i > 0 ? ", " : "") + (want[i] >= 0 ? std::to_string(want[i]) : std::string("*"));
  raise(PyExc_ValueError, std::string(name) + ": expected shape " + expected + "] (" + why +
                              "), got " + shape_string(t));
}

}  // namespace

void expect_shape(const TensorArg& t, const char* name, std::initializer_list<int64_t> want,
                  const char* why) {
  expect_sizes(t, name, want.begin(), int(want.size()), why);
}

void expect_last_dim(const TensorArg& t, const char* name, int64_t size, const char* why) {
  int64_t want[8];
  const int n = t.ndim();  // the caller has checked the rank: 1 to 8 dimensions
  for (int i = 0; i < n - 1; ++i) want[i] = -1;
  want[n - 1] = size;
  expect_sizes(t, name, want, n, why);
}

void expect_contiguous_last_dim(const TensorArg& t, const char* name) {
  const int last = t.ndim() - 1;
  if (used_stride(t, last) > 1 || used_stride(t, last) < 0)
    raise(PyExc_ValueError, std::string(name) + ": the last dimension must be contiguous (stride 1), "
                                                "got strides " + strides_string(t) +
                                " for shape " + shape_string(t) + "; call .contiguous()");
}

void expect_contiguous(const TensorArg& t, const char* name) {
  int64_t step = 1;
  for (int i = t.ndim() - 1; i >= 0; --i) {
    if (t.size(i) > 1 && t.stride(i) != step)
      raise(PyExc_ValueError, std::string(name) + ": expected a contiguous tensor, got strides " +
                                  strides_string(t) + " for shape " + shape_string(t));
    step *= t.size(i);
  }
}

void raise_misaligned(const TensorArg& t, const char* name, int bytes, const char* detail) {
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%llx",
                static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(t.data())));
  raise(PyExc_ValueError, std::string(name) + ": data pointer " + hex + " is not " +
                              std::to_string(bytes) + "-byte aligned " + detail);
}

void expect_cuda(const TensorArg& t, const char* name) {
  if (t.view().device.device_type != dl::kCUDA)
    raise(PyExc_ValueError, std::string(name) + ": expected a CUDA tensor, got a tensor on " +
                                device_name(t.view().device));
}

void expect_device(const TensorArg& t, const char* name, int device, const char* reference) {
  if (t.view().device.device_type != dl::kCUDA || t.view().device.device_id != device)
    raise(PyExc_ValueError, std::string(name) + ": expected a tensor on cuda:" +
                                std::to_string(device) + " (the device of " + reference +
                                "), got " + device_name(t.view().device));
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

void raise_cuda(const char* what, cudaError_t e) {
  cudaGetLastError();  // a failed query is not a sticky error; leave no trace for the next call
  raise(PyExc_RuntimeError, cuda_status(e, what).message());
}

DeviceGuard::DeviceGuard(int device) {
  int current = -1;
  if (cudaError_t e = cudaGetDevice(&current); e != cudaSuccess) raise_cuda("cudaGetDevice", e);
  if (current == device) return;
  if (cudaError_t e = cudaSetDevice(device); e != cudaSuccess) raise_cuda("cudaSetDevice", e);
  previous_ = current;
}

DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0) cudaSetDevice(previous_);
}

bool is_capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaError_t e = cudaStreamIsCapturing(stream, &status); e != cudaSuccess)
    raise_cuda("cudaStreamIsCapturing", e);
  return status != cudaStreamCaptureStatusNone;
}

void import_output(OutputArg& o, const char* name, nb::handle obj) {
  o.obj = obj;
  o.given = !obj.is_none();
  if (!o.given) return;
  import_tensor(o.arg, name, obj);
  o.data = o.arg.data();
}

void LatentRopeArgs::import(const char* latent_name, nb::handle latent_obj,
                            const char* rope_name_given, nb::handle rope_obj,
                            const char* combined_rope_name) {
  combined = rope_obj.is_none();
  import_tensor(combined ? whole : latent, latent_name, latent_obj);
  rope_name = combined ? combined_rope_name : rope_name_given;
  if (!combined) import_tensor(rope, rope_name_given, rope_obj);
}

void LatentRopeArgs::split(const char* latent_name, int64_t latent_width, int64_t rope_width,
                           const char* why) {
  if (!combined) return;
  expect_last_dim(whole, latent_name, latent_width + rope_width, why);
  latent.slice_last_dim(whole, 0, latent_width);
  rope.slice_last_dim(whole, latent_width, rope_width);
}

}  // namespace mlakit::python
