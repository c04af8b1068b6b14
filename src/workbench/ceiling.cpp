// Copy-bandwidth ceiling: measurement and its per-device-name cache file.
#include "workbench/ceiling.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <cuda_runtime_api.h>

#include "base/cuda_status.h"
#include "base/run_info.h"
#include "io/file.h"
#include "io/json.h"
#include "mlakit/device.h"
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

}  // namespace

std::string default_ceiling_cache_path() { return user_cache_dir() + "/ceiling.json"; }

Status measure_copy_ceiling(int device, CopyCeiling* out) {
  *out = CopyCeiling{};
  DeviceFacts facts;
  MLAKIT_RETURN_IF_ERROR(query_device(device, &facts));
  int previous = 0;
  MLAKIT_RETURN_IF_ERROR(cuda_status(cudaGetDevice(&previous), "cudaGetDevice"));
  MLAKIT_RETURN_IF_ERROR(cuda_status(cudaSetDevice(device), "cudaSetDevice"));

  struct Resources {
    int restore;
    void* src = nullptr;
    void* dst = nullptr;
    cudaStream_t stream = nullptr;
    cudaEvent_t ev[2] = {nullptr, nullptr};
    ~Resources() {
      for (auto e : ev)
        if (e) cudaEventDestroy(e);
      if (stream) cudaStreamDestroy(stream);
      if (src) cudaFree(src);
      if (dst) cudaFree(dst);
      cudaSetDevice(restore);
    }
  } res{previous};

  size_t free_bytes = 0, total_bytes = 0;
  MLAKIT_RETURN_IF_ERROR(cuda_status(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo"));
  // Two buffers within a quarter of free memory each, rounded down to 2 MiB.
  size_t bytes = std::min(kMaxCopyBytes, free_bytes / 4) & ~((size_t(2) << 20) - 1);
  if (bytes < kMinCopyBytes)
    return Status::device_error("only " + std::to_string(free_bytes >> 20) +
                                " MiB free on the device; the copy ceiling needs 2 x " +
                                std::to_string(kMinCopyBytes >> 20) + " MiB");
  MLAKIT_RETURN_IF_ERROR(cuda_status(cudaMalloc(&res.src, bytes), "cudaMalloc (copy source)"));
  MLAKIT_RETURN_IF_ERROR(cuda_status(cudaMalloc(&res.dst, bytes), "cudaMalloc (copy destination)"));
  MLAKIT_RETURN_IF_ERROR(cuda_status(cudaStreamCreateWithFlags(&res.stream, cudaStreamNonBlocking),
                                     "cudaStreamCreate"));
  for (auto& e : res.ev) MLAKIT_RETURN_IF_ERROR(cuda_status(cudaEventCreate(&e), "cudaEventCreate"));
  MLAKIT_RETURN_IF_ERROR(cuda_status(cudaMemsetAsync(res.src, 1, bytes, res.stream), "cudaMemsetAsync"));

  std::vector<double> ms;
  for (int i = 0; i < kWarmup + kRepeats; ++i) {
    MLAKIT_RETURN_IF_ERROR(cuda_status(cudaEventRecord(res.ev[0], res.stream), "cudaEventRecord"));
    MLAKIT_RETURN_IF_ERROR(cuda_status(
        cudaMemcpyAsync(res.dst, res.src, bytes, cudaMemcpyDeviceToDevice, res.stream), "cudaMemcpyAsync"));
    MLAKIT_RETURN_IF_ERROR(cuda_status(cudaEventRecord(res.ev[1], res.stream), "cudaEventRecord"));
    MLAKIT_RETURN_IF_ERROR(cuda_status(cudaEventSynchronize(res.ev[1]), "copy"));
    float t = 0;
    MLAKIT_RETURN_IF_ERROR(cuda_status(cudaEventElapsedTime(&t, res.ev[0], res.ev[1]), "cudaEventElapsedTime"));
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
  MLAKIT_RETURN_IF_ERROR(read_cache(path, &root));
  const json::Value* entry = json::find(json::member(root, "devices"), device_name);
  if (!entry) return Status::not_found("no copy ceiling for " + device_name + " in " + path);
  const std::string where = path + ": devices[\"" + device_name + "\"]";
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
  const std::string path = resolve(cache_path);
  DeviceFacts facts;
  MLAKIT_RETURN_IF_ERROR(query_device(device, &facts));
  if (!remeasure) {
    const Status cached = cached_copy_ceiling(facts.name, out, path);
    if (cached) return cached;
  }
  MLAKIT_RETURN_IF_ERROR(measure_copy_ceiling(device, out));
  out->path = path;
  json::Value root;
  if (!read_cache(path, &root)) root = json::Value::object();  // unreadable: start it again
  root["format"] = kFormat;
  root["version"] = kVersion;
  root["devices"][out->device] = {{"copy_gbps", json::number(std::round(out->gbps * 10) / 10)},
                                  {"bytes", json::number(out->bytes)},
                                  {"repeats", out->repeats},
                                  {"measured", out->measured},
                                  {"git", git_revision()}};
  return json::write_file(path, root, 2);
}

}  // namespace mlakit
