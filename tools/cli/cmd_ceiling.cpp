// `mlakit ceiling`: the two ceilings bench reports compare against, the device-to-device copy
// bandwidth and the bf16 dense tensor-core peak.
#include <cstdio>

#include "common.h"
#include "workbench/ceiling.h"

namespace mlakit::cli {
namespace {

const char* kCeilingUsage =
    "usage: mlakit ceiling [--device N] [--remeasure] [--cache PATH]\n\n"
    "Prints the two ceilings of a CUDA device:\n"
    "  copy ceiling           cudaMemcpyAsync device to device of up to 1 GiB, bytes read + written\n"
    "                         per second (GB/s), median of 10 copies;\n"
    "  bf16 dense tensor peak cuBLAS bf16 GEMMs with fp32 accumulation (8192x8192x8192,\n"
    "                         8192x8192x16384, 16384x16384x8192), 2*M*N*K / GPU span in TFLOP/s,\n"
    "                         median of 20 calls (warm L2), the best shape kept.\n"
    "Each is measured once per device name and cached (default <cache dir>/ceiling.json, next to\n"
    "the tune cache); --remeasure measures both again and replaces the cached figures.";

// "measured now" or "cached, measured <time>".
std::string provenance(bool from_cache, const std::string& measured) {
  if (!from_cache) return "measured now";
  return measured.empty() ? "cached" : "cached, measured " + measured;
}

int run_ceiling(Args& args) {
  long long device = 0;
  bool remeasure = false;
  std::string cache;
  args.integer("--device", &device, 0, 1023);
  args.flag("--remeasure", &remeasure);
  args.text("--cache", &cache);
  if (!args.parse()) return args.finish(kCeilingUsage);
  if (args.given("--cache") && cache.empty()) args.error("--cache: expected a file path, got ''");
  if (!args.ok()) return args.finish(kCeilingUsage);

  const int n = device_count();
  if (n == 0) {
    std::fprintf(stderr, "mlakit: ceiling: no CUDA device is visible; nothing to measure\n");
    return kExitFailure;
  }
  if (device >= n) {
    std::fprintf(stderr, "mlakit: --device: expected 0..%d, got %lld\n", n - 1, device);
    return kExitUsage;
  }
  CopyCeiling c;
  if (Status st = copy_ceiling(int(device), &c, cache, remeasure); !st) {
    std::fprintf(stderr, "mlakit: ceiling: copy ceiling: %s\n", st.to_string().c_str());
    return kExitFailure;
  }
  std::printf("copy ceiling of %s (device %lld): %.1f GB/s (read + write", c.device.c_str(), device, c.gbps);
  if (c.bytes > 0) std::printf("; %.0f MiB copies, median of %d", c.bytes / (1 << 20), c.repeats);
  std::printf("; %s)\n", provenance(c.from_cache, c.measured).c_str());
  std::fflush(stdout);

  MatmulCeiling m;
  if (Status st = matmul_ceiling(int(device), &m, cache, remeasure); !st) {
    std::fprintf(stderr, "mlakit: ceiling: bf16 dense tensor peak: %s\n", st.to_string().c_str());
    return kExitFailure;
  }
  std::printf("bf16 dense tensor peak of %s (device %lld): %.1f TFLOP/s (%s, %lldx%lldx%lld bf16 GEMM, fp32 "
              "accumulate, median of %d",
              m.device.c_str(), device, m.tflops, m.library.empty() ? "cuBLAS" : m.library.c_str(),
              (long long)m.m, (long long)m.n, (long long)m.k, m.iters);
  if (m.sm_clock_mhz > 0) std::printf(" at %d MHz", m.sm_clock_mhz);
  if (!m.throttle.empty() && m.throttle != "none") std::printf(", throttle: %s", m.throttle.c_str());
  std::printf("; %s)\n", provenance(m.from_cache, m.measured).c_str());
  std::printf("cached in %s\n", m.path.c_str());
  return kExitOk;
}

}  // namespace

MLAKIT_CLI_COMMAND(ceiling, "ceiling", "measure (once) and print the copy ceiling and the bf16 tensor peak",
                   run_ceiling);

}  // namespace mlakit::cli
