#include "plan/kernel_entry.h"

#include <algorithm>

namespace mlakit {

bool KernelInfo::runs(const std::string& want_dtype, int want_heads) const {
  return dtype == want_dtype && std::find(heads.begin(), heads.end(), want_heads) != heads.end();
}

std::string KernelInfo::heads_string() const {
  std::string s;
  for (int h : heads) s += (s.empty() ? "" : ", ") + std::to_string(h);
  return s;
}

}  // namespace mlakit
