#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "cli.h"

namespace mlakit::cli {

Args::Args(std::vector<std::string> argv, std::set<std::string> flags) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--help" || a == "-h") {
      help_ = true;
      continue;
    }
    if (a.rfind("--", 0) != 0 || a.size() == 2) {
      positional_.push_back(a);
      continue;
    }
    std::string key = a.substr(2), value;
    const size_t eq = key.find('=');
    if (eq != std::string::npos) {
      value = key.substr(eq + 1);
      key = key.substr(0, eq);
    } else if (flags.count(key)) {
      value = "1";
    } else if (i + 1 < argv.size()) {
      value = argv[++i];
    } else {
      errors_.push_back("option --" + key + " needs a value");
      continue;
    }
    options_[key] = value;
  }
}

bool Args::has(const std::string& name) const { return options_.count(name) > 0; }

std::optional<std::string> Args::get(const std::string& name) const {
  auto it = options_.find(name);
  if (it == options_.end()) return std::nullopt;
  return it->second;
}

std::string Args::get_or(const std::string& name, const std::string& fallback) const {
  return get(name).value_or(fallback);
}

long long Args::get_int(const std::string& name, long long fallback, long long lo, long long hi) {
  auto v = get(name);
  if (!v) return fallback;
  errno = 0;
  char* end = nullptr;
  const long long x = std::strtoll(v->c_str(), &end, 10);
  if (v->empty() || *end != '\0' || errno != 0) {
    error("--" + name + ": expected an integer, got '" + *v + "'");
    return fallback;
  }
  if (x < lo || x > hi) {
    error("--" + name + ": expected a value in [" + std::to_string(lo) + ", " + std::to_string(hi) +
          "], got " + *v);
    return fallback;
  }
  return x;
}

double Args::get_double(const std::string& name, double fallback) {
  auto v = get(name);
  if (!v) return fallback;
  char* end = nullptr;
  const double x = std::strtod(v->c_str(), &end);
  if (v->empty() || *end != '\0') {
    error("--" + name + ": expected a number, got '" + *v + "'");
    return fallback;
  }
  return x;
}

void Args::reject_unknown(const std::set<std::string>& known) {
  for (const auto& [k, v] : options_)
    if (!known.count(k)) error("unknown option --" + k);
}

int Args::fail_usage(const std::string& usage) const {
  for (const auto& e : errors_) std::fprintf(stderr, "mlakit: %s\n", e.c_str());
  std::fprintf(stderr, "\n%s\n", usage.c_str());
  return kExitUsage;
}

}  // namespace mlakit::cli
