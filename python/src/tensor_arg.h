// Python objects -> DLPack tensor views, for the binding's arguments. Two routes:
//
//  1. The DLPack C exchange API a tensor type publishes on itself (`__dlpack_c_exchange_api__`,
//     PyTorch >= 2.11): a C function fills a non-owning DLTensor (~0.1 us, no Python frames), and
//     the same table gives the producer's current stream and its allocator.
//  2. The `__dlpack__` protocol through nanobind's ndarray import: any DLPack producer (older
//     PyTorch, CuPy, JAX), about 2 us a tensor in PyTorch because `__dlpack__` is Python code.
//
// Set MLAKIT_NO_DLPACK_EXCHANGE=1 to force route 2 (tests and host-cost comparisons).
#pragma once

#include <cstdint>
#include <string>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

namespace mlakit::python {

namespace nb = nanobind;

// Layout-compatible declarations of the DLPack 1.x ABI (dlpack.h): the structs cross library
// boundaries as plain C data, so only their layout matters.
namespace dl {

enum DeviceType : int32_t { kCPU = 1, kCUDA = 2, kCUDAHost = 3, kROCM = 10, kCUDAManaged = 13 };
// kFloat8E4m3fn: DLPack 1.1's OCP E4M3, finite-only (torch.float8_e4m3fn).
enum TypeCode : uint8_t { kInt = 0, kUInt = 1, kFloat = 2, kBfloat = 4, kBool = 6, kFloat8E4m3fn = 10 };

struct Device {
  int32_t device_type;
  int32_t device_id;
};
struct DataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};
struct Tensor {
  void* data;
  Device device;
  int32_t ndim;
  DataType dtype;
  int64_t* shape;
  int64_t* strides;  // elements; may be null (compact row-major) on the legacy route
  uint64_t byte_offset;
};
struct Version {
  uint32_t major;
  uint32_t minor;
};
struct ManagedTensorVersioned {
  Version version;
  void* manager_ctx;
  void (*deleter)(ManagedTensorVersioned* self);
  uint64_t flags;
  Tensor dl_tensor;
};
struct ExchangeApiHeader {
  Version version;
  ExchangeApiHeader* prev_api;
};
struct ExchangeApi {
  ExchangeApiHeader header;
  int (*managed_tensor_allocator)(Tensor* prototype, ManagedTensorVersioned** out, void* error_ctx,
                                  void (*set_error)(void* error_ctx, const char* kind,
                                                    const char* message));
  int (*managed_tensor_from_py_object_no_sync)(void* py_object, ManagedTensorVersioned** out);
  int (*managed_tensor_to_py_object_no_sync)(ManagedTensorVersioned* tensor, void** out_py_object);
  int (*dltensor_from_py_object_no_sync)(void* py_object, Tensor* out);  // may be null
  int (*current_work_stream)(int32_t device_type, int32_t device_id, void** out_stream);
};

}  // namespace dl

// The exchange table of `type`, or null when it has none (or MLAKIT_NO_DLPACK_EXCHANGE is set).
// Looked up once per type; the type is kept alive so its address is never reused.
const dl::ExchangeApi* exchange_api_of(PyTypeObject* type);

// One tensor argument of a call: a DLTensor view of a Python object plus whatever keeps the view
// valid until the argument is destroyed. `data` already includes DLPack's byte_offset and
// `strides` is never null for ndim > 0.
class TensorArg {
 public:
  TensorArg() = default;
  ~TensorArg();
  TensorArg(const TensorArg&) = delete;
  TensorArg& operator=(const TensorArg&) = delete;

  // Reads `obj`. On failure returns false and sets `*why` (a producer's own error message, or
  // empty when `obj` is simply no tensor); no Python error is left set either way.
  bool import(nb::handle obj, std::string* why);

  // Makes this the view `whole[..., begin:begin + width]` (same strides, no copy): how the
  // engines' combined 576-wide q and cache split into their 512-wide latent and 64-wide rope
  // parts. `whole` (at most 8 dimensions) must outlive this view, and the slice must lie within
  // its last dimension.
  void slice_last_dim(const TensorArg& whole, int64_t begin, int64_t width);

  const dl::Tensor& view() const { return view_; }
  void* data() const { return view_.data; }
  int ndim() const { return view_.ndim; }
  int64_t size(int i) const { return view_.shape[i]; }
  int64_t stride(int i) const { return view_.strides[i]; }
  const char* route() const { return route_; }  // "exchange" / "dlpack" (for tests)

 private:
  dl::Tensor view_{};
  int64_t compact_strides_[8] = {};  // filled when a producer leaves strides null, or by a slice
  int64_t slice_shape_[8] = {};      // a slice's shape
  nb::ndarray<nb::ro> keep_;          // owner on the __dlpack__ route
  dl::ManagedTensorVersioned* managed_ = nullptr;  // owner on the managed exchange route
  const char* route_ = "";
};

// "bfloat16", "int32", "float32", "float8_e4m3fn", ... ; "dtype(code=.., bits=.., lanes=..)" for anything else.
std::string dtype_name(const dl::DataType& dtype);
// "cuda:0", "cpu", "cuda_host", ...
std::string device_name(const dl::Device& device);
// "[8, 16, 512]"
std::string shape_string(const TensorArg& t);
std::string strides_string(const TensorArg& t);

}  // namespace mlakit::python
