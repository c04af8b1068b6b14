// Linked only into the ring diagnosis executables (build/mlakit-math-alone, -gather-alone,
// -issue-only; CMake target mlakit_ring_diag): says on every start that this is not the kernel
// the project ships, so a table printed by one of them is never taken for a measurement of it.
#include <cstdio>
#include <string_view>

#ifndef MLAKIT_RING_DIAG_NAME
#error "MLAKIT_RING_DIAG_NAME names the experiment (math-alone, gather-alone or issue-only)"
#endif

namespace {

struct Banner {
  Banner() {
    std::fprintf(stderr,
                 "mlakit: diagnosis build '%s' of dsa_decode's 64-head kernel (h64)%s: its outputs are not valid, "
                 "time it with --no-verify (docs/workbench.md)\n",
                 MLAKIT_RING_DIAG_NAME,
                 std::string_view(MLAKIT_RING_DIAG_NAME) == "math-alone" ? " and FP8 kernel (v2_fp8)" : "");
  }
};
const Banner banner;

}  // namespace
