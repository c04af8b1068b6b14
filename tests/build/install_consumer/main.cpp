// Links the installed library and calls its host API (no GPU needed): the version header agrees
// with the package config, and problem validation answers with the library's messages.
#include <cstdio>
#include <cstring>

#include "mlakit/dsa.h"
#include "mlakit/version.h"

int main() {
  if (std::strcmp(MLAKIT_VERSION_STRING, EXPECTED_VERSION) != 0) {
    std::printf("version.h says %s, the package config %s\n", MLAKIT_VERSION_STRING, EXPECTED_VERSION);
    return 1;
  }
  mlakit::DsaProblem p;
  p.num_tokens = 8;
  p.num_pages = 8462;
  if (!p.validate().is_ok()) {
    std::printf("the contest shape was rejected: %s\n", p.validate().to_string().c_str());
    return 1;
  }
  p.num_tokens = -1;
  const mlakit::Status bad = p.validate();
  if (bad.is_ok()) {
    std::printf("T = -1 was accepted\n");
    return 1;
  }
  std::printf("mlakit %s: %s; T = -1 -> %s\n", MLAKIT_VERSION_STRING, "contest shape valid",
              bad.to_string().c_str());
  return 0;
}
