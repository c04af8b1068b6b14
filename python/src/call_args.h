// What every op's entry point shares: reading a Python argument as a tensor, the checks that read
// only DLPack metadata (dtype, rank, shape, strides, device), the scale, and the call plumbing
// (stream, device guard, capture status). Each op keeps its own layout checks, which state its
// C++ API's rules (runtime/<op>/layout.h). Every check raises the documented Python exception
// with a message that names the argument, the expected and the actual value.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>

#include <cuda_runtime_api.h>
#include <nanobind/nanobind.h>

#include "tensor_arg.h"

namespace mlakit::python {

inline constexpr dl::DataType kBf16{dl::kBfloat, 16, 1};
inline constexpr dl::DataType kInt32{dl::kInt, 32, 1};
inline constexpr dl::DataType kFloat32{dl::kFloat, 32, 1};
inline constexpr dl::DataType kUInt8{dl::kUInt, 8, 1};
inline constexpr dl::DataType kFloat8E4m3fn{dl::kFloat8E4m3fn, 8, 1};

std::string py_type_name(nb::handle obj);

// TypeError unless `obj` reads as a tensor.
void import_tensor(TensorArg& t, const char* name, nb::handle obj);
// TypeError for another dtype.
void expect_dtype(const TensorArg& t, const char* name, dl::DataType want);
// TypeError unless the dtype is one of `any_of` ("expected dtype uint8 or float8_e4m3fn, got ...").
void expect_dtype(const TensorArg& t, const char* name, std::initializer_list<dl::DataType> any_of);
bool has_dtype(const TensorArg& t, std::initializer_list<dl::DataType> any_of);
// ValueError for another rank; `dims` names the dimensions ("[num_tokens, topk]").
void expect_ndim(const TensorArg& t, const char* name, int ndim, const char* dims);
// ValueError unless the sizes match `want`, where -1 matches any size; `why` says where the
// expected sizes come from.
void expect_shape(const TensorArg& t, const char* name, std::initializer_list<int64_t> want,
                  const char* why);
// expect_shape with every size but the last one free.
void expect_last_dim(const TensorArg& t, const char* name, int64_t size, const char* why);

// The stride the kernel uses for dimension i: 0 (= "contiguous", never used) for a dimension of
// one element, whose stride producers report as anything.
inline int64_t used_stride(const TensorArg& t, int i) { return t.size(i) > 1 ? t.stride(i) : 0; }
// ValueError unless the last dimension is contiguous (stride 1, or a single element).
void expect_contiguous_last_dim(const TensorArg& t, const char* name);
// ValueError unless row-major without gaps (outputs).
void expect_contiguous(const TensorArg& t, const char* name);
// The ValueError for a data pointer that is not `bytes`-aligned: "<name>: data pointer 0x...
// is not 16-byte aligned <detail>".
[[noreturn]] void raise_misaligned(const TensorArg& t, const char* name, int bytes, const char* detail);

// ValueError unless on a CUDA device.
void expect_cuda(const TensorArg& t, const char* name);
// ValueError unless on cuda:`device`, the device of the argument `reference`.
void expect_device(const TensorArg& t, const char* name, int device, const char* reference);

// A tensor argument and the name the caller knows it by; a null tensor is an argument left out.
struct NamedArg {
  const TensorArg* t;
  const char* name;
};
// ValueError unless the first tensor is a CUDA tensor and each other one is on its device,
// checked in order; returns that device. Null tensors are skipped. Inline, so that the exception
// of a failed check unwinds no extra frame: unwinding is most of what a failed call costs.
inline int expect_one_device(std::span<const NamedArg> args) {
  const NamedArg& lead = args[0];
  expect_cuda(*lead.t, lead.name);
  const int device = lead.t->view().device.device_id;
  for (const NamedArg& a : args.subspan(1))
    if (a.t != nullptr) expect_device(*a.t, a.name, device, lead.name);
  return device;
}

// sm_scale as a finite float32 value: TypeError for what is no number, ValueError otherwise.
double read_scale(nb::handle obj);

// None = the inputs' framework's current stream on `device` (through the exchange API), else a
// raw cudaStream_t passed as an int.
cudaStream_t resolve_stream(nb::handle stream, const dl::ExchangeApi* api, int device);

[[noreturn]] void raise_cuda(const char* what, cudaError_t e);

// Makes `device` current for the launch (kernels go to the current device's context) and puts
// the previous one back.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

bool is_capturing(cudaStream_t stream);

// An output argument: the caller's tensor, or None for one the call allocates (op_call.h).
struct OutputArg {
  bool given = false;
  nb::handle obj;
  TensorArg arg;          // the caller's tensor, read and checked like an input
  void* data = nullptr;   // where the kernel writes: the caller's tensor or the new one
};
// TypeError unless `obj` is None or reads as a tensor.
void import_output(OutputArg& o, const char* name, nb::handle obj);

// A latent and a rope tensor, or the engines' combined tensor whose rows hold the latent then the
// rope part, taken as two views of it (same strides, no copy). Names are those the caller sees:
// with the combined form, errors about the rope part name it "<latent>[..., 512:]".
struct LatentRopeArgs {
  TensorArg whole, latent, rope;
  bool combined = false;
  const char* rope_name = "";

  // `rope_obj` None: `latent_obj` is the combined tensor, whose rope part errors call
  // `combined_rope_name`.
  void import(const char* latent_name, nb::handle latent_obj, const char* rope_name_given,
              nb::handle rope_obj, const char* combined_rope_name);
  // The tensor the caller passed for the latent argument (the combined one, or the latent).
  const TensorArg& given() const { return combined ? whole : latent; }
  // The combined form: ValueError unless its rows are latent_width + rope_width wide (`why`
  // says so), then the two views.
  void split(const char* latent_name, int64_t latent_width, int64_t rope_width, const char* why);
};

}  // namespace mlakit::python
