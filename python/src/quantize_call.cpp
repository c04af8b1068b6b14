#include "quantize_call.h"

#include <cstdint>
#include <optional>
#include <string>

#include <cuda_runtime_api.h>

#include "call_args.h"
#include "caches.h"
#include "dsa_layout.h"
#include "mlakit/dsa_fp8.h"
#include "op_call.h"
#include "py_errors.h"
#include "tensor_arg.h"

namespace mlakit::python {
namespace {

constexpr int64_t kLatentWidth = dsa_fp8::kNopeBytes;    // 512 channels, one e4m3 byte each
constexpr int64_t kRopeWidth = dsa_fp8::kRopeBytes / 2;  // 64 bf16

// The quantizer has no planner: its plan is its problem (extents and strides), and it takes no
// workspace.
struct QuantizePlan {
  DsaFp8QuantizeArgs args;
  size_t workspace_bytes() const { return 0; }
};

// One call, read from Python and checked in the order the contract states. cache is ckv and kpe,
// or the combined cache (kpe None).
struct QuantizeCall {
  using Problem = DsaFp8QuantizeArgs;
  static constexpr WorkspaceOp kWorkspace = WorkspaceOp::kDsa;  // never taken (no workspace)

  nb::handle lead;  // ckv
  LatentRopeArgs cache;
  OutputArg out;
  int64_t ckv_slot_stride = 0, kpe_slot_stride = 0, out_page_stride = 0;
  int device = 0;

  void import(nb::handle ckv_obj, nb::handle kpe_obj, nb::handle out_obj) {
    lead = ckv_obj;
    cache.import("ckv", ckv_obj, "kpe", kpe_obj, "ckv[..., 512:]");
    import_output(out, "out", out_obj);
  }

  void check() {
    check_dtypes_and_ranks();
    cache.split("ckv", kLatentWidth, kRopeWidth, "kpe is None: the combined cache, 512 latent + 64 rope");
    check_shapes();
    check_layout_and_devices();
  }

  void check_dtypes_and_ranks() const {
    expect_dtype(cache.given(), "ckv", kBf16);
    if (!cache.combined) expect_dtype(cache.rope, "kpe", kBf16);
    if (out.given) expect_fp8_cache_dtype(out.arg, "out");
    if (cache.combined) {
      expect_ndim(cache.whole, "ckv", 3, "[num_pages, page_size, 576] (kpe is None: the combined cache)");
    } else {
      expect_ndim(cache.latent, "ckv", 3, "[num_pages, page_size, 512]");
      expect_ndim(cache.rope, "kpe", 3, "[num_pages, page_size, 64]");
    }
    if (out.given) expect_fp8_cache_rank(out.arg, "out");
  }

  void check_shapes() const {
    const TensorArg& ckv = cache.latent;
    const int64_t pages = ckv.size(0), page_size = ckv.size(1);
    expect_shape(ckv, "ckv", {-1, -1, kLatentWidth}, "the latent width of the FP8 cache");
    expect_shape(cache.rope, cache.rope_name, {pages, page_size, kRopeWidth},
                 "num_pages and page_size of ckv, the rope width of the FP8 cache");
    if (out.given)
      expect_fp8_cache_shape(out.arg, "out", pages, page_size,
                             "656-byte rows of the FP8 cache; num_pages and page_size of ckv");
  }

  // Strides and alignment (dsa_layout.h), the devices last.
  void check_layout_and_devices() {
    expect_row_layout(cache.latent, "ckv");
    expect_row_layout(cache.rope, cache.rope_name);
    ckv_slot_stride = slot_stride(cache.latent, "ckv");
    kpe_slot_stride = slot_stride(cache.rope, cache.rope_name);
    if (out.given) out_page_stride = fp8_cache_page_stride(out.arg, "out");
    expect_aligned(cache.latent, "ckv");
    expect_aligned(cache.rope, cache.rope_name);
    const TensorArg* no = nullptr;
    const NamedArg args[] = {{&cache.latent, "ckv"},
                             {cache.combined ? no : &cache.rope, "kpe"},
                             {out.given ? &out.arg : no, "out"}};
    device = expect_one_device(args);
  }

  DsaFp8QuantizeArgs problem() const {
    const TensorArg& ckv = cache.latent;
    if (ckv.size(0) > INT32_MAX || ckv.size(1) > INT32_MAX)
      raise(PyExc_ValueError, "ckv: num_pages and page_size must fit int32; got shape " + shape_string(ckv));
    DsaFp8QuantizeArgs q;
    q.num_pages = int(ckv.size(0));
    q.page_size = int(ckv.size(1));
    q.ckv_stride_slot = ckv_slot_stride;
    q.kpe_stride_slot = kpe_slot_stride;
    q.kv_stride_page = out_page_stride;
    return q;
  }

  static bool empty(const DsaFp8QuantizeArgs& q) { return int64_t(q.num_pages) * q.page_size == 0; }
  static std::optional<QuantizePlan> plan(const DsaFp8QuantizeArgs& q, int) { return QuantizePlan{q}; }

  // out as given, or a new contiguous tensor of the inputs' framework.
  nb::object outputs(const NewTensors& fresh) {
    return output_of(out, fresh, {cache.latent.size(0), cache.latent.size(1), dsa_fp8::kRowBytes}, kUInt8, "out");
  }

  Status run(const QuantizePlan& plan, void*, size_t, uint32_t*, cudaStream_t stream) const {
    DsaFp8QuantizeArgs q = plan.args;
    q.ckv = cache.latent.data();
    q.kpe = cache.rope.data();
    q.kv_cache = out.data;
    return dsa_quantize_fp8(q, stream);
  }
};

}  // namespace

nb::object quantize_dsa_fp8(nb::handle ckv_obj, nb::handle kpe_obj, nb::handle out_obj,
                            nb::handle stream_obj) {
  QuantizeCall call;
  call.import(ckv_obj, kpe_obj, out_obj);
  return run_op(call, stream_obj);
}

}  // namespace mlakit::python
