// The FP8 cache on an sm_90a GPU. The GPU quantizer (dsa_quantize_fp8) equals the host one
// (reference/dsa/fp8.h) bit for bit on a contiguous cache, on FlashMLA's padded pages (pad bytes
// untouched) and on a strided 576-wide view; the registry's FP8 decode kernel reads padded pages
// (kv_stride_page = (page_size + 1) * 656) as it reads contiguous ones, against the fp64 reference
// on the dequantized cache. Skips without a device, and while the quantizer or an fp8 kernel is
// not part of the build.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "base/bf16.h"
#include "mlakit/device.h"
#include "mlakit/dsa.h"
#include "mlakit/dsa_fp8.h"
#include "reference/compare.h"
#include "reference/dsa/fp8.h"
#include "reference/dsa/reference.h"
#include "runtime/registry.h"
#include "workbench/device_buffer.h"
#include "workloads/dsa/suites.h"

namespace mlakit {

namespace {

using namespace dsa_fp8;

// Skips the test unless an sm_90a device is present (what every CUDA source here is built for).
#define REQUIRE_SM90A()                                                          \
  do {                                                                           \
    if (device_count() == 0) GTEST_SKIP() << "no CUDA device visible";           \
    DeviceFacts facts_;                                                          \
    ASSERT_TRUE(query_device(0, &facts_).is_ok());                               \
    Status gate_ = check_arch(ArchRequirement{}, facts_);                        \
    if (!gate_.is_ok()) GTEST_SKIP() << gate_.message();                         \
  } while (0)

uint64_t fresh_seed() { return std::random_device{}() | (uint64_t(std::random_device{}()) << 32); }

// bf16 caches of `num_pages` x `page_size` slots with every case of the scale rule: the tiles of
// dsa-edge's FP8 edges (+0, -0, tiny, amax on and above 448 * 2^-8, large), huge and very small
// tiles, and -0 in the rope part.
DsaHostData test_caches(int num_pages, int page_size, uint64_t seed) {
  DsaProblem p;
  p.num_pages = num_pages;
  p.page_size = page_size;
  DsaHostData d;
  make_dsa_caches(p, seed, &d, DsaCacheValues::kFp8Tiles);
  for (int64_t s = 0; s < p.num_slots(); ++s) {
    uint16_t* ckv = d.ckv.data() + s * kNopeBytes;
    const int64_t kind = s % 97;
    if (kind == 0 || kind == 1)  // amax about 2^102 (scale 2^94) or 2^-98 (the clamp)
      for (int c = 0; c < kTile; ++c) ckv[c] = float_to_bf16(std::ldexp(bf16_to_float(ckv[c]), kind == 0 ? 100 : -100));
    if (kind == 2) d.kpe[size_t(s) * 64 + 5] = 0x8000;
  }
  return d;
}

// Runs the GPU quantizer on host caches (ckv [slots, ckv_stride], kpe at `kpe_offset` elements
// into the same rows when `combined`, else its own [slots, 64]) into a cache of `stride` bytes per
// page, first filled with 0xA5; returns the cache's bytes.
std::vector<uint8_t> quantize_on_gpu(const DsaHostData& d, int num_pages, int page_size, int64_t stride,
                                     bool combined) {
  const int64_t slots = int64_t(num_pages) * page_size;
  DeviceBuffer ckv, kpe, kv;
  DsaFp8QuantizeArgs a;
  a.num_pages = num_pages;
  a.page_size = page_size;
  if (combined) {  // one [slots, 576] buffer: ckv its first 512 columns, kpe the last 64
    std::vector<uint16_t> rows(size_t(slots) * 576);
    for (int64_t s = 0; s < slots; ++s) {
      std::memcpy(&rows[size_t(s) * 576], &d.ckv[size_t(s) * 512], 512 * 2);
      std::memcpy(&rows[size_t(s) * 576 + 512], &d.kpe[size_t(s) * 64], 64 * 2);
    }
    EXPECT_TRUE(ckv.upload(rows, "ckv").is_ok());
    a.ckv = ckv.data();
    a.kpe = static_cast<const uint16_t*>(ckv.data()) + 512;
    a.ckv_stride_slot = a.kpe_stride_slot = 576;
  } else {
    EXPECT_TRUE(ckv.upload(d.ckv, "ckv").is_ok());
    EXPECT_TRUE(kpe.upload(d.kpe, "kpe").is_ok());
    a.ckv = ckv.data();
    a.kpe = kpe.data();
  }
  const size_t bytes = size_t(num_pages) * size_t(stride == 0 ? int64_t(page_size) * kRowBytes : stride);
  EXPECT_TRUE(kv.reserve(bytes, "kv_cache").is_ok());
  EXPECT_EQ(cudaMemset(kv.data(), 0xA5, bytes), cudaSuccess);
  a.kv_cache = kv.data();
  a.kv_stride_page = stride;
  const Status s = dsa_quantize_fp8(a, nullptr);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  std::vector<uint8_t> out(bytes);
  EXPECT_EQ(cudaMemcpy(out.data(), kv.data(), bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  return out;
}

// Every row of every page equals the host quantizer's; with a padded stride the rest of each page
// is still 0xA5.
void expect_rows(const std::vector<uint8_t>& got, const std::vector<uint8_t>& rows, int num_pages, int page_size,
                 int64_t stride) {
  const int64_t page_bytes = int64_t(page_size) * kRowBytes;
  if (stride == 0) stride = page_bytes;
  for (int page = 0; page < num_pages; ++page) {
    const uint8_t* g = got.data() + page * stride;
    for (int r = 0; r < page_size; ++r) {
      const int64_t slot = int64_t(page) * page_size + r;
      ASSERT_EQ(std::memcmp(g + r * kRowBytes, rows.data() + slot * kRowBytes, kRowBytes), 0)
          << "page " << page << " row " << r;
    }
    for (int64_t b = page_bytes; b < stride; ++b) ASSERT_EQ(g[b], 0xA5) << "page " << page << " pad byte " << b;
  }
}

TEST(DsaQuantizeFp8, EqualsTheHostQuantizerBitForBit) {
  REQUIRE_SM90A();
  const uint64_t seed = fresh_seed();
  for (const int page_size : {1, 16, 64}) {
    const int num_pages = 8192 / page_size + 3;
    SCOPED_TRACE("page_size " + std::to_string(page_size) + " seed " + std::to_string(seed));
    const DsaHostData d = test_caches(num_pages, page_size, seed);
    const int64_t slots = int64_t(num_pages) * page_size;
    std::vector<uint8_t> rows(size_t(slots) * kRowBytes);
    fp8::quantize_cache(d.ckv.data(), d.kpe.data(), slots, rows.data());
    const int64_t padded = int64_t(page_size + 1) * kRowBytes;  // FlashMLA's pages: one spare row
    expect_rows(quantize_on_gpu(d, num_pages, page_size, 0, false), rows, num_pages, page_size, 0);
    expect_rows(quantize_on_gpu(d, num_pages, page_size, padded, false), rows, num_pages, page_size, padded);
    expect_rows(quantize_on_gpu(d, num_pages, page_size, 0, true), rows, num_pages, page_size, 0);
  }
}

TEST(DsaQuantizeFp8, ErrorsNameTheArgument) {
  REQUIRE_SM90A();
  DeviceBuffer ckv, kpe, kv;
  ASSERT_TRUE(ckv.reserve(64 * 512 * 2, "ckv").is_ok());
  ASSERT_TRUE(kpe.reserve(64 * 64 * 2, "kpe").is_ok());
  ASSERT_TRUE(kv.reserve(2 * 64 * kRowBytes, "kv").is_ok());
  DsaFp8QuantizeArgs a;
  a.num_pages = 1;
  a.page_size = 64;
  a.kpe = kpe.data();
  a.kv_cache = kv.data();
  Status s = dsa_quantize_fp8(a, nullptr);
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("ckv"), std::string::npos) << s.message();
  a.ckv = ckv.data();
  a.kv_stride_page = 64 * kRowBytes + 8;  // not a multiple of 16
  s = dsa_quantize_fp8(a, nullptr);
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("kv_stride_page"), std::string::npos) << s.message();
  a.kv_stride_page = 64 * kRowBytes - 16;  // less than a page
  s = dsa_quantize_fp8(a, nullptr);
  EXPECT_NE(s.message().find("kv_stride_page"), std::string::npos) << s.message();
}

// ---- the FP8 decode kernel on padded pages ------------------------------------------------------

// One workload's device inputs, its FP8 cache both contiguous and with FlashMLA's padded pages (the
// spare row of each page filled with NaN codes), and its reference on the dequantized cache.
struct PaddedFp8Inputs {
  DeviceBuffer q_nope, q_pe, indices, kv, kv_padded, out, lse;
  DsaReferenceOutput ref;
  int64_t padded_stride = 0;

  void prepare(const DsaWorkload& w, uint64_t seed) {
    const DsaProblem& p = w.problem;
    DsaHostData h;
    make_dsa_queries(w, seed, &h);
    make_dsa_caches(p, seed, &h, w.cache_values);
    quantize_dsa_caches(p, &h);
    const DsaHostInputs in{h.q_nope.data(), h.q_pe.data(), h.ckv.data(), h.kpe.data(), w.indices.data(), w.sm_scale};
    ASSERT_TRUE(dsa_reference(p, in, IndexPolicy::kTreatInvalidAsPadding, &ref).is_ok());
    const int64_t page_bytes = int64_t(p.page_size) * kRowBytes;
    padded_stride = page_bytes + kRowBytes;
    std::vector<uint8_t> padded(size_t(p.num_pages) * size_t(padded_stride), 0x7f);  // e4m3 NaN
    for (int page = 0; page < p.num_pages; ++page)
      std::memcpy(&padded[size_t(page * padded_stride)], &h.kv[size_t(page * page_bytes)], size_t(page_bytes));
    const size_t rows = size_t(p.num_tokens) * p.num_heads;
    ASSERT_TRUE(q_nope.upload(h.q_nope, "q_nope").is_ok());
    ASSERT_TRUE(q_pe.upload(h.q_pe, "q_pe").is_ok());
    ASSERT_TRUE(indices.upload(w.indices, "indices").is_ok());
    ASSERT_TRUE(kv.upload(h.kv, "kv_cache").is_ok());
    ASSERT_TRUE(kv_padded.upload(padded, "padded kv_cache").is_ok());
    ASSERT_TRUE(out.reserve(rows * p.head_dim_ckv * 2, "output").is_ok());
    ASSERT_TRUE(lse.reserve(rows * sizeof(float), "lse").is_ok());
  }

  DsaTensors tensors(const DsaWorkload& w, bool padded) const {
    DsaTensors t;
    t.q_nope = q_nope.data();
    t.q_pe = q_pe.data();
    t.kv_cache = padded ? kv_padded.data() : kv.data();
    t.kv_stride_page = padded ? padded_stride : 0;
    t.sparse_indices = static_cast<const int32_t*>(indices.data());
    t.output = out.data();
    t.lse = static_cast<float*>(lse.data());
    t.sm_scale = w.sm_scale;
    return t;
  }
};

// Poisons the outputs, runs the plan, returns output (bf16 bits) and lse.
void run_once(const DsaPlan& plan, const DsaTensors& t, DeviceBuffer& workspace, std::vector<uint16_t>* out,
              std::vector<float>* lse) {
  const DsaProblem& p = plan.problem();
  const size_t rows = size_t(p.num_tokens) * p.num_heads;
  out->resize(rows * p.head_dim_ckv);
  lse->resize(rows);
  ASSERT_EQ(cudaMemset(t.output, 0xFF, out->size() * 2), cudaSuccess);
  ASSERT_EQ(cudaMemset(t.lse, 0xFF, lse->size() * 4), cudaSuccess);
  const Status s = dsa_run(plan, t, workspace.data(), workspace.bytes(), nullptr);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  ASSERT_EQ(cudaMemcpy(out->data(), t.output, out->size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(lse->data(), t.lse, lse->size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
}

TEST(DsaFp8Kernel, PaddedPagesMatchTheReferenceAndTheContiguousCache) {
  const KernelEntry* kernel = default_kernel("dsa_decode", "fp8", 16);
  if (kernel == nullptr) GTEST_SKIP() << "no dsa_decode kernel is registered for fp8 with 16 heads";
  REQUIRE_SM90A();
  const uint64_t seed = fresh_seed();
  DsaSuite suite;
  ASSERT_TRUE(make_dsa_suite("dsa-edge", seed, &suite, 16, DsaKv::kFp8).is_ok());
  DeviceBuffer workspace;  // zero-filled once, reused for every plan (mlakit/dsa.h)
  for (const DsaWorkload& w : suite.workloads) {
    SCOPED_TRACE(w.name + " seed " + std::to_string(seed));
    PaddedFp8Inputs in;
    ASSERT_NO_FATAL_FAILURE(in.prepare(w, seed));
    DsaPlan plan;
    const Status s = dsa_plan(w.problem, {}, &plan);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    ASSERT_TRUE(workspace.reserve(plan.workspace_bytes(), "workspace").is_ok());
    std::vector<uint16_t> out, out_padded;
    std::vector<float> lse, lse_padded;
    ASSERT_NO_FATAL_FAILURE(run_once(plan, in.tensors(w, false), workspace, &out, &lse));
    ASSERT_NO_FATAL_FAILURE(run_once(plan, in.tensors(w, true), workspace, &out_padded, &lse_padded));
    const int64_t rows = int64_t(lse.size());
    const CompareReport o = compare_contest_bf16(out_padded.data(), in.ref.output.data(), int64_t(out.size()));
    const CompareReport l = compare_contest(lse_padded.data(), in.ref.lse.data(), rows, Tolerance{}, true);
    EXPECT_TRUE(o.ok()) << "output: " << o.summary();
    EXPECT_TRUE(l.ok()) << "lse: " << l.summary();
    EXPECT_EQ(out_padded, out) << "padded pages change the output";
    EXPECT_EQ(std::memcmp(lse_padded.data(), lse.data(), lse.size() * 4), 0) << "padded pages change lse";
  }
}

}  // namespace
}  // namespace mlakit
