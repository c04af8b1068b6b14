// The ceilings: copy bandwidth and bf16 tensor peak, their measurement and per-device-name cache.
#include "workbench/ceiling.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include <cuda_runtime_api.h>

#include "base/bf16.h"
#include "base/cuda_status.h"
#include "base/run_info.h"
#include "io/file.h"
#include "io/json.h"
#include "mlakit/device.h"
#include "workbench/cublas_gemm.h"
#include "workbench/timer.h"

namespace mlakit {
namespace {

constexpr const char* kFormat = "mlakit.ceiling";
constexpr int64_t kVersion = 1;
// 1 GiB per buffer is ~20x a Hopper L2 (the copy cannot be served from cache) and long enough
// (~0.5 ms at 4 TB/s) for event timing to be exact to well under 1%.
constexpr size_t kMaxCopyBytes = size_t(1) << 30;
constexpr size_t kMinCopyBytes = size_t(64) << 20;
constexpr int kWarmup = 2;
constexpr int kRepeats = 10;

// The bf16 GEMMs of the tensor peak. Each has >= 8192 in every dimension: thousands of output
// tiles (a full wave on 132 SMs many times over) and a K loop long enough that the prologue and
// epilogue are a few % of the time, so the figure is the mainloop's rate. K = 16384 and the
// 16384^2 output shift that balance further; the best of the three is kept. The largest needs
// 1 GiB (A, B and C in bf16).
constexpr GemmShape kMatmulShapes[] = {{8192, 8192, 8192}, {8192, 8192, 16384}, {16384, 16384, 8192}};
// 5 warm-ups load cuBLAS's kernel and run its first-call work; 20 timed GEMMs of 1.5-6.5 ms
// each (at ~700 TFLOP/s) give a stable median. Each call starts after a synchronization, as a
// benchmarked kernel does: the figure is the rate at the clocks one call sees, not after seconds
// of sustained load (the clock and throttle reasons are kept with it).
constexpr int kMatmulWarmup = 5;
constexpr int kMatmulIters = 20;
// The member of a device's cache entry that holds the tensor peak.
constexpr const char* kMatmulKey = "bf16_matmul";
// NVIDIA's recommended cuBLAS workspace on Hopper; given once, so a timed call allocates nothing.
constexpr size_t kCublasWorkspaceBytes = size_t(32) << 20;
// Inputs repeat a random pattern of this many bf16 values (a prime, so that rows and tiles do
// not see the same values): random operands keep the tensor cores' datapath toggling as real
// data does (zeros or constants draw less power and would overstate a power-capped peak).
constexpr size_t kPatternElems = 1000003;

std::string resolve(const std::string& cache_path) {
  return cache_path.empty() ? default_ceiling_cache_path() : cache_path;
}

// The cache file as a JSON object; an empty one when missing. kIoError when unreadable.
Status read_cache(const std::string& path, json::Value* root) {
  *root = json::Value::object();
  if (!io::file_exists(path)) return Status::ok();
  json::Value v;
  MLAKIT_RETURN_IF_ERROR(json::parse_file(path, &v));
  std::string format;
  int64_t version = 0;
  if (!v.is_object() || !json::get_string(v, "format", &format) || format != kFormat ||
      !json::get_int(v, "version", &version) || version != kVersion || !json::member(v, "devices").is_object())
    return Status::io_error(path + ": not a version-1 mlakit.ceiling file");
  *root = std::move(v);
  return Status::ok();
}

// Reads the cache (started again when unreadable), lets `update` change the entry of `device`
// (an object, created when absent) and writes the file.
Status update_entry(const std::string& path, const std::string& device,
                    const std::function<void(json::Value&)>& update) {
  json::Value root;
  if (!read_cache(path, &root)) root = json::Value::object();  // unreadable: start it again
  root["format"] = kFormat;
  root["version"] = kVersion;
  json::Value& entry = root["devices"][device];
  if (!entry.is_object()) entry = json::Value::object();
  update(entry);
  return json::write_file(path, root, 2);
}

// The cache's entry of `device_name` (nullptr when absent) and the text that names it in messages.
Status find_entry(const std::string& path, const std::string& device_name, json::Value* root,
                  const json::Value** entry, std::string* where) {
  MLAKIT_RETURN_IF_ERROR(read_cache(path, root));
  *entry = json::find(json::member(*root, "devices"), device_name);
  *where = path + ": devices[\"" + device_name + "\"]";
  return Status::ok();
}

// Fills `elems` bf16 values at `dst` with `pattern` repeated: one upload, then device copies that
// double the filled prefix.
Status fill_with_pattern(void* dst, size_t elems, const std::vector<uint16_t>& pattern, cudaStream_t stream) {
  auto* p = static_cast<uint16_t*>(dst);
  size_t filled = std::min(elems, pattern.size());
  MLAKIT_RETURN_IF_ERROR(cuda_status(
      cudaMemcpyAsync(p, pattern.data(), filled * 2, cudaMemcpyHostToDevice, stream), "uploading GEMM inputs"));
  while (filled < elems) {
    const size_t n = std::min(filled, elems - filled);
    MLAKIT_RETURN_IF_ERROR(cuda_status(
        cudaMemcpyAsync(p + filled, p, n * 2, cudaMemcpyDeviceToDevice, stream), "filling GEMM inputs"));
    filled += n;
  }
  return cuda_status(cudaStreamSynchronize(stream), "filling GEMM inputs");
}

// What one measurement holds on the measured device: the device made current (the previous one is
// put back at the end, after everything below is released there), its buffers, one stream and
// its events.
class DeviceScratch {
 public:
  DeviceScratch() = default;
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
  ~DeviceScratch() {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
    if (stream_) cudaStreamDestroy(stream_);
    for (void* p : buffers_) cudaFree(p);
    if (previous_ >= 0) cudaSetDevice(previous_);
  }

  // The device's facts, then the device made current and its free memory, which bounds what a
  // measurement allocates.
  Status enter(int device, DeviceFacts* facts, size_t* free_bytes) {
    MLAKIT_RETURN_IF_ERROR(query_device(device, facts));
    int previous = 0;
    MLAKIT_RETURN_IF_ERROR(cuda_status(cudaGetDevice(&previous), "cudaGetDevice"));
    MLAKIT_RETURN_IF_ERROR(cuda_status(cudaSetDevice(device), "cudaSetDevice"));
    previous_ = previous;
    size_t total_bytes = 0;
    return cuda_status(cudaMemGetInfo(free_bytes, &total_bytes), "cudaMemGetInfo");
  }
  Status buffer(size_t bytes, void** p, const char* what) {
    MLAKIT_RETURN_IF_ERROR(cuda_status(cudaMalloc(p, bytes), what));
    buffers_.push_back(*p);
    return Status::ok();
  }
  // A non-blocking stream: the measurement waits for nothing else on the device.
  Status stream(cudaStream_t* s) {
    MLAKIT_RETURN_IF_ERROR(
        cuda_status(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate"));
    *s = stream_;
    return Status::ok();
  }
  Status event(cudaEvent_t* e) {
    MLAKIT_RETURN_IF_ERROR(cuda_status(cudaEventCreate(e), "cudaEventCreate"));
    events_.push_back(*e);
    return Status::ok();
  }

 private:
  int previous_ = -1;
  std::vector<void*> buffers_;
  cudaStream_t stream_ = nullptr;
  std::vector<cudaEvent_t> events_;
};

// What copy_ceiling and matmul_ceiling share: the cached figure of the device's name, else (or
// when `remeasure`) a measurement stored in the cache.
template <class Ceiling>
Status cached_or_measured(int device, Ceiling* out, const std::string& cache_path, bool remeasure,
                          Status (*cached)(const std::string&, Ceiling*, const std::string&),
                          Status (*measure)(int, Ceiling*),
                          Status (*store)(const Ceiling&, const std::string&)) {
  const std::string path = resolve(cache_path);
  DeviceFacts facts;
  MLAKIT_RETURN_IF_ERROR(query_device(device, &facts));
  if (!remeasure) {
    const Status from_cache = cached(facts.name, out, path);
    if (from_cache) return from_cache;
  }
  MLAKIT_RETURN_IF_ERROR(measure(device, out));
  out->path = path;
  return store(*out, path);
}

}  // namespace

std::string default_ceiling_cache_path() { return user_cache_dir() + "/ceiling.json"; }

Status measure_copy_ceiling(int device, CopyCeiling* out) {
  *out = CopyCeiling{};
  DeviceFacts facts;
  DeviceScratch scratch;
  size_t free_bytes = 0;
  MLAKIT_RETURN_IF_ERROR(scratch.enter(device, &facts, &free_bytes));
  // Two buffers within a quarter of free memory each, rounded down to 2 MiB.
  size_t bytes = std::min(kMaxCopyBytes, free_bytes / 4) & ~((size_t(2) << 20) - 1);
  if (bytes < kMinCopyBytes)
    return Status::device_error("only " + std::to_string(free_bytes >> 20) +
                                " MiB free on the device; the copy ceiling needs 2 x " +
                                std::to_string(kMinCopyBytes >> 20) + " MiB");
  void *src = nullptr, *dst = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t ev[2] = {nullptr, nullptr};
  MLAKIT_RETURN_IF_ERROR(scratch.buffer(bytes, &src, "cudaMalloc (copy source)"));
  MLAKIT_RETURN_IF_ERROR(scratch.buffer(bytes, &dst, "cudaMalloc (copy destination)"));
  MLAKIT_RETURN_IF_ERROR(scratch.stream(&stream));
  for (cudaEvent_t& e : ev) MLAKIT_RETURN_IF_ERROR(scratch.event(&e));
  MLAKIT_RETURN_IF_ERROR(cuda_status(cudaMemsetAsync(src, 1, bytes, stream), "cudaMemsetAsync"));

  std::vector<double> ms;
  for (int i = 0; i < kWarmup + kRepeats; ++i) {
    MLAKIT_RETURN_IF_ERROR(cuda_status(cudaEventRecord(ev[0], stream), "cudaEventRecord"));
    MLAKIT_RETURN_IF_ERROR(
        cuda_status(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync"));
    MLAKIT_RETURN_IF_ERROR(cuda_status(cudaEventRecord(ev[1], stream), "cudaEventRecord"));
    MLAKIT_RETURN_IF_ERROR(cuda_status(cudaEventSynchronize(ev[1]), "copy"));
    float t = 0;
    MLAKIT_RETURN_IF_ERROR(cuda_status(cudaEventElapsedTime(&t, ev[0], ev[1]), "cudaEventElapsedTime"));
    if (i >= kWarmup) ms.push_back(t);
  }
  const double median_ms = summarize_samples(ms).median;
  if (median_ms <= 0) return Status::device_error("copy timing returned " + std::to_string(median_ms) + " ms");
  out->device = facts.name;
  out->bytes = double(bytes);
  out->repeats = kRepeats;
  out->gbps = 2.0 * double(bytes) / (median_ms * 1e-3) / 1e9;
  out->measured = utc_timestamp();
  return Status::ok();
}

Status cached_copy_ceiling(const std::string& device_name, CopyCeiling* out,
                           const std::string& cache_path) {
  *out = CopyCeiling{};
  const std::string path = resolve(cache_path);
  json::Value root;
  const json::Value* entry = nullptr;
  std::string where;
  MLAKIT_RETURN_IF_ERROR(find_entry(path, device_name, &root, &entry, &where));
  if (!entry || !json::find(*entry, "copy_gbps"))
    return Status::not_found("no copy ceiling for " + device_name + " in " + path);
  MLAKIT_RETURN_IF_ERROR(json::get_number(*entry, "copy_gbps", &out->gbps, where));
  if (!(out->gbps > 0)) return Status::io_error(where + ".copy_gbps: expected > 0");
  double repeats = 0;
  MLAKIT_RETURN_IF_ERROR(json::get_optional_number(*entry, "bytes", &out->bytes, where));
  MLAKIT_RETURN_IF_ERROR(json::get_optional_number(*entry, "repeats", &repeats, where));
  MLAKIT_RETURN_IF_ERROR(json::get_optional_string(*entry, "measured", &out->measured, where));
  out->repeats = int(repeats);
  out->device = device_name;
  out->path = path;
  out->from_cache = true;
  return Status::ok();
}

Status copy_ceiling(int device, CopyCeiling* out, const std::string& cache_path, bool remeasure) {
  return cached_or_measured(device, out, cache_path, remeasure, cached_copy_ceiling, measure_copy_ceiling,
                            store_copy_ceiling);
}

Status store_copy_ceiling(const CopyCeiling& c, const std::string& cache_path) {
  return update_entry(resolve(cache_path), c.device, [&](json::Value& e) {
    e["copy_gbps"] = json::number(std::round(c.gbps * 10) / 10);
    e["bytes"] = json::number(c.bytes);
    e["repeats"] = c.repeats;
    e["measured"] = c.measured;
    e["git"] = git_revision();
  });
}

// --- the bf16 dense tensor peak ------------------------------------------------------------------

const GemmShape* matmul_ceiling_shapes(int* count) {
  *count = int(std::size(kMatmulShapes));
  return kMatmulShapes;
}

Status measure_matmul_ceiling(int device, MatmulCeiling* out) {
  *out = MatmulCeiling{};
  DeviceFacts facts;
  DeviceScratch scratch;
  size_t free_bytes = 0;
  MLAKIT_RETURN_IF_ERROR(scratch.enter(device, &facts, &free_bytes));
  // The shapes whose A, B and C fit in half the free memory; the buffers fit the largest of each.
  std::vector<GemmShape> shapes;
  size_t a_elems = 0, b_elems = 0, c_elems = 0;
  for (const GemmShape& s : kMatmulShapes) {
    const size_t a = size_t(s.m * s.k), b = size_t(s.k * s.n), c = size_t(s.m * s.n);
    if (2 * (a + b + c) + kCublasWorkspaceBytes > free_bytes / 2) continue;
    shapes.push_back(s);
    a_elems = std::max(a_elems, a);
    b_elems = std::max(b_elems, b);
    c_elems = std::max(c_elems, c);
  }
  if (shapes.empty()) {
    const GemmShape& s = kMatmulShapes[0];
    const size_t need = 2 * (2 * size_t(s.m * s.k + s.k * s.n + s.m * s.n) + kCublasWorkspaceBytes);
    return Status::device_error("only " + std::to_string(free_bytes >> 20) + " MiB free on the device; the bf16 " +
                                "tensor peak needs " + std::to_string(need >> 20) + " MiB (twice the operands of a " +
                                std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) +
                                " GEMM and the cuBLAS workspace)");
  }
  void *a = nullptr, *b = nullptr, *c = nullptr, *workspace = nullptr;
  cudaStream_t stream = nullptr;
  MLAKIT_RETURN_IF_ERROR(scratch.buffer(a_elems * 2, &a, "cudaMalloc (GEMM A)"));
  MLAKIT_RETURN_IF_ERROR(scratch.buffer(b_elems * 2, &b, "cudaMalloc (GEMM B)"));
  MLAKIT_RETURN_IF_ERROR(scratch.buffer(c_elems * 2, &c, "cudaMalloc (GEMM C)"));
  MLAKIT_RETURN_IF_ERROR(scratch.buffer(kCublasWorkspaceBytes, &workspace, "cudaMalloc (cuBLAS workspace)"));
  MLAKIT_RETURN_IF_ERROR(scratch.stream(&stream));

  std::vector<uint16_t> pattern(kPatternElems);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (uint16_t& x : pattern) x = float_to_bf16(uniform(rng));
  MLAKIT_RETURN_IF_ERROR(fill_with_pattern(a, a_elems, pattern, stream));
  MLAKIT_RETURN_IF_ERROR(fill_with_pattern(b, b_elems, pattern, stream));

  CublasBf16Gemm cublas;  // declared after `scratch`: its handle goes before the stream it uses
  MLAKIT_RETURN_IF_ERROR(cublas.init(stream, workspace, kCublasWorkspaceBytes));

  TimingConfig config;
  config.warmup = kMatmulWarmup;
  config.iters = kMatmulIters;
  // Warm L2: a compute peak. The 0.4-1 GiB of operands dwarf the 50-60 MB L2 anyway; only the
  // last tiles of one call could still be cached when the next starts.
  config.cold_l2 = false;
  config.label = "cublas_bf16_gemm";
  for (const GemmShape& s : shapes) {
    // The handle enqueues on `stream`, the stream the timer is given.
    const GpuCall gemm = [&](cudaStream_t) {
      return cublas.gemm_tn(int(s.m), int(s.n), int(s.k), a, b, c);
    };
    TimingResult t;
    const std::string shape = std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
    if (Status st = time_gpu_call(gemm, stream, config, &t); !st)
      return Status(st.code(), "bf16 GEMM " + shape + ": " + st.message());
    if (!(t.median_us > 0)) return Status::device_error("bf16 GEMM " + shape + ": timed at 0 us");
    const double tflops = 2.0 * double(s.m) * double(s.n) * double(s.k) / (t.median_us * 1e6);
    if (tflops > out->tflops) {
      out->tflops = tflops;
      out->m = s.m;
      out->n = s.n;
      out->k = s.k;
      out->method = t.method;
      out->sm_clock_mhz = t.sm_clock_mhz;
      out->throttle = t.throttle;
    }
  }
  out->device = facts.name;
  out->library = cublas.version();
  out->iters = kMatmulIters;
  out->measured = utc_timestamp();
  return Status::ok();
}

Status cached_matmul_ceiling(const std::string& device_name, MatmulCeiling* out, const std::string& cache_path) {
  *out = MatmulCeiling{};
  const std::string path = resolve(cache_path);
  json::Value root;
  const json::Value* entry = nullptr;
  std::string where;
  MLAKIT_RETURN_IF_ERROR(find_entry(path, device_name, &root, &entry, &where));
  const json::Value* m = entry ? json::find(*entry, kMatmulKey) : nullptr;
  if (!m) return Status::not_found("no bf16 tensor peak for " + device_name + " in " + path);
  where += std::string(".") + kMatmulKey;
  MLAKIT_RETURN_IF_ERROR(json::get_number(*m, "tflops", &out->tflops, where));
  if (!(out->tflops > 0)) return Status::io_error(where + ".tflops: expected > 0");
  int64_t iters = 0, mhz = 0;
  for (Status st : {json::get_optional_int(*m, "m", &out->m, where), json::get_optional_int(*m, "n", &out->n, where),
                    json::get_optional_int(*m, "k", &out->k, where),
                    json::get_optional_string(*m, "library", &out->library, where),
                    json::get_optional_string(*m, "method", &out->method, where),
                    json::get_optional_int(*m, "iters", &iters, where),
                    json::get_optional_int(*m, "sm_clock_mhz", &mhz, where),
                    json::get_optional_string(*m, "throttle", &out->throttle, where),
                    json::get_optional_string(*m, "measured", &out->measured, where)})
    MLAKIT_RETURN_IF_ERROR(st);
  out->iters = int(iters);
  out->sm_clock_mhz = int(mhz);
  out->device = device_name;
  out->path = path;
  out->from_cache = true;
  return Status::ok();
}

Status store_matmul_ceiling(const MatmulCeiling& c, const std::string& cache_path) {
  return update_entry(resolve(cache_path), c.device, [&](json::Value& e) {
    e[kMatmulKey] = {{"tflops", json::number(std::round(c.tflops * 10) / 10)},
                     {"m", c.m},
                     {"n", c.n},
                     {"k", c.k},
                     {"library", c.library},
                     {"method", c.method},
                     {"iters", c.iters},
                     {"sm_clock_mhz", c.sm_clock_mhz},
                     {"throttle", c.throttle},
                     {"measured", c.measured},
                     {"git", git_revision()}};
  });
}

Status matmul_ceiling(int device, MatmulCeiling* out, const std::string& cache_path, bool remeasure) {
  return cached_or_measured(device, out, cache_path, remeasure, cached_matmul_ceiling, measure_matmul_ceiling,
                            store_matmul_ceiling);
}

}  // namespace mlakit
