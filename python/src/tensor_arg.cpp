#include "tensor_arg.h"

#include <cstdlib>
#include <cstring>

#include "py_errors.h"

namespace mlakit::python {
namespace {

bool exchange_disabled() {
  static const bool disabled = [] {
    const char* v = std::getenv("MLAKIT_NO_DLPACK_EXCHANGE");
    return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
  }();
  return disabled;
}

// The DLPack 1.3 attribute name first, then the name PyTorch 2.10 and tvm-ffi's add-on used.
constexpr const char* kExchangeAttributes[] = {"__dlpack_c_exchange_api__",
                                               "__c_dlpack_exchange_api__"};

const dl::ExchangeApi* read_exchange_api(PyTypeObject* type) {
  for (const char* attribute : kExchangeAttributes) {
    PyObject* value = PyObject_GetAttrString(reinterpret_cast<PyObject*>(type), attribute);
    if (value == nullptr) {
      PyErr_Clear();
      continue;
    }
    // A capsule (current producers) or an int holding the address (the first protocol draft).
    void* address = nullptr;
    if (PyCapsule_CheckExact(value))
      address = PyCapsule_GetPointer(value, PyCapsule_GetName(value));
    else if (PyLong_Check(value))
      address = PyLong_AsVoidPtr(value);
    Py_DECREF(value);
    if (address == nullptr) {
      PyErr_Clear();
      continue;
    }
    // A table of a newer major version links to older ones; this binding speaks major 1.
    auto* header = static_cast<dl::ExchangeApiHeader*>(address);
    while (header != nullptr && header->version.major > 1) header = header->prev_api;
    if (header == nullptr || header->version.major != 1) continue;
    auto* api = reinterpret_cast<const dl::ExchangeApi*>(header);
    if (api->dltensor_from_py_object_no_sync == nullptr &&
        api->managed_tensor_from_py_object_no_sync == nullptr)
      continue;
    return api;
  }
  return nullptr;
}

// Types seen so far and their tables (null: none). A call's arguments are a handful of types,
// so a short linear scan beats hashing; past the capacity lookups are simply not remembered.
struct TypeEntry {
  PyTypeObject* type;
  const dl::ExchangeApi* api;
};
constexpr int kTypeCapacity = 64;
TypeEntry g_types[kTypeCapacity];
int g_type_count = 0;

}  // namespace

const dl::ExchangeApi* exchange_api_of(PyTypeObject* type) {
  for (int i = 0; i < g_type_count; ++i)
    if (g_types[i].type == type) return g_types[i].api;
  const dl::ExchangeApi* api = exchange_disabled() ? nullptr : read_exchange_api(type);
  if (g_type_count < kTypeCapacity) {
    Py_INCREF(reinterpret_cast<PyObject*>(type));
    g_types[g_type_count++] = {type, api};
  }
  return api;
}

TensorArg::~TensorArg() {
  if (managed_ != nullptr && managed_->deleter != nullptr) managed_->deleter(managed_);
}

bool TensorArg::import(nb::handle obj, std::string* why) {
  why->clear();
  if (const dl::ExchangeApi* api = exchange_api_of(Py_TYPE(obj.ptr()))) {
    route_ = "exchange";
    int rc;
    if (api->dltensor_from_py_object_no_sync != nullptr) {
      rc = api->dltensor_from_py_object_no_sync(obj.ptr(), &view_);
    } else {
      rc = api->managed_tensor_from_py_object_no_sync(obj.ptr(), &managed_);
      if (rc == 0) view_ = managed_->dl_tensor;
    }
    if (rc != 0) {
      *why = take_python_error();
      return false;
    }
  } else {
    if (obj.is_none() || !nb::try_cast(obj, keep_, /*convert=*/false)) {
      PyErr_Clear();
      return false;
    }
    route_ = "dlpack";
    const auto dtype = keep_.dtype();
    view_.data = keep_.data_handle();
    view_.device = {int32_t(keep_.device_type()), int32_t(keep_.device_id())};
    view_.ndim = int32_t(keep_.ndim());
    view_.dtype = {dtype.code, dtype.bits, dtype.lanes};
    view_.shape = const_cast<int64_t*>(keep_.shape_ptr());
    view_.strides = const_cast<int64_t*>(keep_.stride_ptr());
    view_.byte_offset = keep_.byte_offset();
  }
  if (view_.byte_offset != 0) {
    view_.data = static_cast<char*>(view_.data) + view_.byte_offset;
    view_.byte_offset = 0;
  }
  if (view_.strides == nullptr && view_.ndim > 0) {
    if (view_.ndim > int(sizeof compact_strides_ / sizeof compact_strides_[0])) {
      *why = "a tensor of " + std::to_string(view_.ndim) + " dimensions without strides";
      return false;
    }
    int64_t step = 1;
    for (int i = view_.ndim - 1; i >= 0; --i) {
      compact_strides_[i] = step;
      step *= view_.shape[i];
    }
    view_.strides = compact_strides_;
  }
  return true;
}

void TensorArg::slice_last_dim(const TensorArg& whole, int64_t begin, int64_t width) {
  const int n = whole.ndim();
  view_ = whole.view_;
  for (int i = 0; i < n; ++i) {
    slice_shape_[i] = whole.size(i);
    compact_strides_[i] = whole.stride(i);
  }
  slice_shape_[n - 1] = width;
  view_.shape = slice_shape_;
  view_.strides = compact_strides_;
  view_.data = static_cast<char*>(whole.data()) + begin * whole.stride(n - 1) * (whole.view_.dtype.bits / 8);
  route_ = whole.route_;
}

std::string dtype_name(const dl::DataType& t) {
  if (t.lanes == 1) {
    switch (t.code) {
      case dl::kBfloat:
        if (t.bits == 16) return "bfloat16";
        break;
      case dl::kFloat:
        return "float" + std::to_string(t.bits);
      case dl::kInt:
        return "int" + std::to_string(t.bits);
      case dl::kUInt:
        return "uint" + std::to_string(t.bits);
      case dl::kBool:
        return "bool";
      case dl::kFloat8E4m3fn:
        if (t.bits == 8) return "float8_e4m3fn";
        break;
      default:
        break;
    }
  }
  return "dtype(code=" + std::to_string(t.code) + ", bits=" + std::to_string(t.bits) +
         ", lanes=" + std::to_string(t.lanes) + ")";
}

std::string device_name(const dl::Device& d) {
  switch (d.device_type) {
    case dl::kCPU: return "cpu";
    case dl::kCUDA: return "cuda:" + std::to_string(d.device_id);
    case dl::kCUDAHost: return "cuda_host (pinned host memory)";
    case dl::kCUDAManaged: return "cuda_managed";
    case dl::kROCM: return "rocm:" + std::to_string(d.device_id);
    default: return "device_type " + std::to_string(d.device_type);
  }
}

namespace {
std::string int_list(const int64_t* values, int n) {
  std::string s = "[";
  for (int i = 0; i < n; ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(values[i]);
  }
  return s + "]";
}
}  // namespace

std::string shape_string(const TensorArg& t) { return int_list(t.view().shape, t.ndim()); }
std::string strides_string(const TensorArg& t) { return int_list(t.view().strides, t.ndim()); }

}  // namespace mlakit::python
