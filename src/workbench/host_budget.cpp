#include "workbench/host_budget.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "base/format.h"

namespace mlakit {
namespace {

double physical_memory() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? double(pages) * double(page) : 0;
}

// The memory limit of the cgroup the process runs in (v2, then v1); 0 when none is set.
double cgroup_limit() {
  for (const char* path : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream f(path);
    std::string text;
    if (!(f >> text) || text == "max") continue;
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (end != text.c_str() && *end == '\0' && v > 0) return v;
  }
  return 0;
}

}  // namespace

bool parse_memory_size(const std::string& text, double* bytes) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end == text.c_str() || !std::isfinite(v) || v <= 0) return false;
  const std::string suffix(end);
  static const char kUnits[] = "KMGT";
  if (!suffix.empty()) {
    const char* u = suffix.size() == 1 ? std::strchr(kUnits, std::toupper(suffix[0])) : nullptr;
    if (u == nullptr || *u == '\0') return false;
    v *= std::pow(1024.0, double(u - kUnits + 1));
  }
  *bytes = v;
  return true;
}

Status host_memory_limit(HostMemoryLimit* out) {
  *out = {physical_memory(), "physical memory"};
  if (const double c = cgroup_limit(); c > 0 && (out->bytes == 0 || c < out->bytes)) *out = {c, "cgroup memory limit"};
  const char* env = std::getenv("MLAKIT_HOST_MEMORY_LIMIT");
  if (env == nullptr || *env == '\0') return Status::ok();
  double v = 0;
  if (!parse_memory_size(env, &v))
    return Status::invalid_argument(std::string("MLAKIT_HOST_MEMORY_LIMIT: expected a size such as 16G, 512M or "
                                                "17179869184, got '") + env + "'");
  if (out->bytes == 0 || v < out->bytes) *out = {v, std::string("MLAKIT_HOST_MEMORY_LIMIT=") + env};
  return Status::ok();
}

Status check_host_footprint(const HostFootprint& f, const std::string& who) {
  HostMemoryLimit limit;
  MLAKIT_RETURN_IF_ERROR(host_memory_limit(&limit));
  if (limit.bytes <= 0 || f.bytes <= limit.bytes) return Status::ok();
  return Status::invalid_argument(who + ": the run needs about " + format_bytes(f.bytes) + " of host memory (" +
                                  f.detail + "), more than the limit of " + format_bytes(limit.bytes) + " (" +
                                  limit.source + ")");
}

HostFootprint session_footprint(const std::vector<HostFootprint>& footprints) {
  HostFootprint total;
  const std::string* key = nullptr;
  for (const HostFootprint& f : footprints) {
    total.bytes = std::max(total.bytes, f.bytes);
    total.synth_seconds += f.synth_seconds;
    if (key != nullptr && !f.shared_key.empty() && f.shared_key == *key) total.synth_seconds -= f.shared_synth_seconds;
    key = &f.shared_key;
    total.reference_seconds += f.reference_seconds;
  }
  return total;
}

std::string long_run_warning(const HostFootprint& total, bool reference, const std::string& who) {
  const double seconds = total.synth_seconds + (reference ? total.reference_seconds : 0);
  if (seconds < kLongHostSeconds) return "";
  const std::string about = seconds < 90 ? format_fixed(seconds, 0) + " s" : format_fixed(seconds / 60, 0) + " min";
  return who + ": the host work takes about " + about + " (synthesizing the inputs" +
         (reference ? ", the fp64 CPU reference" : "") + "; up to " + format_bytes(total.bytes) +
         " of host memory); a smaller shape runs sooner";
}

}  // namespace mlakit
