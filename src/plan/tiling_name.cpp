#include "plan/tiling_name.h"

namespace mlakit {

bool is_tiling_name(std::string_view name) {
  size_t i = 0;
  const auto letter = [&] { return i < name.size() && name[i] >= 'a' && name[i] <= 'z'; };
  const auto digit = [&] { return i < name.size() && name[i] >= '0' && name[i] <= '9'; };
  if (name.empty()) return false;
  while (i < name.size()) {
    if (!letter()) return false;
    while (letter()) ++i;
    if (!digit()) return false;
    while (digit()) ++i;
  }
  return true;
}

}  // namespace mlakit
