// `mlakit ceiling`: the device-to-device copy bandwidth that bench reports compare against.
#include <cstdio>

#include "common.h"
#include "workbench/ceiling.h"

namespace mlakit::cli {
namespace {

const char* kCeilingUsage =
    "usage: mlakit ceiling [--device N] [--remeasure] [--cache PATH]\n\n"
    "Prints the copy-bandwidth ceiling of a CUDA device: cudaMemcpyAsync device to device of up to\n"
    "1 GiB, bytes read + written per second, median of 10 copies. Measured once per device name\n"
    "and cached (default <cache dir>/ceiling.json, next to the tune cache); --remeasure measures\n"
    "again and replaces the cached figure.";

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
    std::fprintf(stderr, "mlakit: ceiling: %s\n", st.to_string().c_str());
    return kExitFailure;
  }
  std::printf("copy ceiling of %s (device %lld): %.1f GB/s (read + write", c.device.c_str(), device, c.gbps);
  if (c.bytes > 0) std::printf("; %.0f MiB copies, median of %d", c.bytes / (1 << 20), c.repeats);
  std::printf(")\n%s %s%s\n", c.from_cache ? "cached in" : "measured now, cached in", c.path.c_str(),
              c.from_cache && !c.measured.empty() ? (" (measured " + c.measured + ")").c_str() : "");
  return kExitOk;
}

}  // namespace

MLAKIT_CLI_COMMAND(ceiling, "ceiling", "measure (once) and print the copy-bandwidth ceiling", run_ceiling);

}  // namespace mlakit::cli
