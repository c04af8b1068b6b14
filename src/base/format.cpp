#include "base/format.h"

#include <cmath>
#include <cstdio>

namespace mlakit {

std::string format_fixed(double x, int decimals) {
  if (!std::isfinite(x)) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
  return buf;
}

std::string format_sci(double x, int digits) {
  if (!std::isfinite(x)) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*e", digits, x);
  return buf;
}

std::string format_us(double us) { return format_fixed(us, 2) + " us"; }

std::string format_kb(size_t bytes) { return format_fixed(double(bytes) / 1024.0, 1) + " KB"; }

std::string format_bytes(double bytes) {
  static const char* const kUnits[] = {"KB", "MB", "GB", "TB"};
  if (bytes < 1024) return format_fixed(bytes, 0) + " B";
  int unit = 0;
  bytes /= 1024;
  while (bytes >= 1024 && unit < 3) {
    bytes /= 1024;
    ++unit;
  }
  return format_fixed(bytes, 1) + " " + kUnits[unit];
}

}  // namespace mlakit
