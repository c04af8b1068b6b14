// The grammar every op's tiling names follow, so layers that carry tilings as strings (the tune
// cache, bench records, the CLI) can reject garbage without knowing the op: one or more fields of
// lowercase letters followed by a number, "s16n64x2m4". Each op's Tiling::parse checks its own
// fields on top of this.
#pragma once

#include <string_view>

namespace mlakit {

bool is_tiling_name(std::string_view name);

}  // namespace mlakit
