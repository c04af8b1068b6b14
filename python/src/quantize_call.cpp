#include "quantize_call.h"

#include <cstdint>
#include <string>

#include <cuda_runtime_api.h>

#include "call_args.h"
#include "caches.h"
#include "dsa_layout.h"
#include "mlakit/dsa_fp8.h"
#include "py_errors.h"
#include "tensor_arg.h"

namespace mlakit::python {
namespace {

constexpr int64_t kLatentWidth = dsa_fp8::kNopeBytes;        // 512 channels, one e4m3 byte each
constexpr int64_t kRopeWidth = dsa_fp8::kRopeBytes / 2;      // 64 bf16
constexpr int64_t kCombinedWidth = kLatentWidth + kRopeWidth;  // 576: the engines' combined cache

// The tensors of one call, read from Python and checked in the order the contract states. With
// kpe None, ckv and kpe are the two parts of `whole` (the combined cache); names are those the
// caller sees.
struct QuantizeArgs {
  TensorArg whole, ckv, kpe, out;
  bool combined = false, have_out = false;
  const char* kpe_name = "kpe";
  int64_t ckv_slot_stride = 0, kpe_slot_stride = 0, out_page_stride = 0;
  int device = 0;
};

void import_args(QuantizeArgs& a, nb::handle ckv, nb::handle kpe, nb::handle out) {
  a.combined = kpe.is_none();
  import_tensor(a.combined ? a.whole : a.ckv, "ckv", ckv);
  if (a.combined)
    a.kpe_name = "ckv[..., 512:]";
  else
    import_tensor(a.kpe, "kpe", kpe);
  a.have_out = !out.is_none();
  if (a.have_out) import_tensor(a.out, "out", out);
}

void check_dtypes_and_ranks(const QuantizeArgs& a) {
  const TensorArg& ckv = a.combined ? a.whole : a.ckv;
  expect_dtype(ckv, "ckv", kBf16);
  if (!a.combined) expect_dtype(a.kpe, "kpe", kBf16);
  if (a.have_out) expect_fp8_cache_dtype(a.out, "out");
  if (a.combined) {
    expect_ndim(ckv, "ckv", 3, "[num_pages, page_size, 576] (kpe is None: the combined cache)");
  } else {
    expect_ndim(ckv, "ckv", 3, "[num_pages, page_size, 512]");
    expect_ndim(a.kpe, "kpe", 3, "[num_pages, page_size, 64]");
  }
  if (a.have_out) expect_fp8_cache_rank(a.out, "out");
}

// The combined cache becomes its latent and rope views: same strides, no copy.
void split_combined(QuantizeArgs& a) {
  if (!a.combined) return;
  expect_shape(a.whole, "ckv", {-1, -1, kCombinedWidth},
               "kpe is None: the combined cache, 512 latent + 64 rope");
  a.ckv.slice_last_dim(a.whole, 0, kLatentWidth);
  a.kpe.slice_last_dim(a.whole, kLatentWidth, kRopeWidth);
}

void check_shapes(const QuantizeArgs& a) {
  const int64_t pages = a.ckv.size(0), page_size = a.ckv.size(1);
  expect_shape(a.ckv, "ckv", {-1, -1, kLatentWidth}, "the latent width of the FP8 cache");
  expect_shape(a.kpe, a.kpe_name, {pages, page_size, kRopeWidth},
               "num_pages and page_size of ckv, the rope width of the FP8 cache");
  if (a.have_out) expect_fp8_cache_shape(a.out, "out", pages, page_size, "num_pages and page_size of ckv");
}

// Strides and alignment (dsa_layout.h), the devices last.
void check_layout_and_devices(QuantizeArgs& a) {
  expect_row_layout(a.ckv, "ckv");
  expect_row_layout(a.kpe, a.kpe_name);
  a.ckv_slot_stride = slot_stride(a.ckv, "ckv");
  a.kpe_slot_stride = slot_stride(a.kpe, a.kpe_name);
  if (a.have_out) a.out_page_stride = fp8_cache_page_stride(a.out, "out");
  expect_aligned(a.ckv, "ckv");
  expect_aligned(a.kpe, a.kpe_name);
  expect_cuda(a.ckv, "ckv");
  a.device = a.ckv.view().device.device_id;
  if (!a.combined) expect_device(a.kpe, "kpe", a.device, "ckv");
  if (a.have_out) expect_device(a.out, "out", a.device, "ckv");
}

DsaFp8QuantizeArgs quantize_args_of(const QuantizeArgs& a) {
  DsaFp8QuantizeArgs q;
  q.num_pages = int(a.ckv.size(0));
  q.page_size = int(a.ckv.size(1));
  q.ckv = a.ckv.data();
  q.kpe = a.kpe.data();
  q.ckv_stride_slot = a.ckv_slot_stride;
  q.kpe_stride_slot = a.kpe_slot_stride;
  q.kv_cache = a.out.data();
  q.kv_stride_page = a.out_page_stride;
  return q;
}

}  // namespace

nb::object quantize_dsa_fp8(nb::handle ckv_obj, nb::handle kpe_obj, nb::handle out_obj,
                            nb::handle stream_obj) {
  QuantizeArgs a;
  import_args(a, ckv_obj, kpe_obj, out_obj);
  check_dtypes_and_ranks(a);
  split_combined(a);
  check_shapes(a);
  check_layout_and_devices(a);
  const int64_t pages = a.ckv.size(0), page_size = a.ckv.size(1);
  if (pages > INT32_MAX || page_size > INT32_MAX)
    raise(PyExc_ValueError, "ckv: num_pages and page_size must fit int32; got shape " + shape_string(a.ckv));
  const dl::ExchangeApi* api = exchange_api_of(Py_TYPE(ckv_obj.ptr()));
  // out as given, or a new contiguous tensor of the inputs' framework (read back as an argument).
  const auto output = [&] {
    if (a.have_out) return nb::borrow(out_obj);
    nb::object out = new_tensor(api, {pages, page_size, dsa_fp8::kRowBytes}, kUInt8, a.device, "out");
    if (pages * page_size > 0) import_tensor(a.out, "out", out);
    return out;
  };
  if (pages * page_size == 0) return output();  // nothing to launch

  DeviceGuard guard(a.device);
  const cudaStream_t stream = resolve_stream(stream_obj, api, a.device);
  nb::object out = output();
  if (Status s = dsa_quantize_fp8(quantize_args_of(a), stream); !s) raise_status(s);
  return out;
}

}  // namespace mlakit::python
