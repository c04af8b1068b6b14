// DsaTiling's stable short name: s<splits>n<block_n>x<stages>m<merge head groups>, e.g. s16n64x2m4.
#include <cstdio>

#include "mlakit/dsa.h"

namespace mlakit {

std::string DsaTiling::name() const {
  char buf[64];
  std::snprintf(buf, sizeof buf, "s%dn%dx%dm%d", num_splits, block_n, stages, merge_head_groups);
  return buf;
}

Status DsaTiling::parse(const std::string& name, DsaTiling* out) {
  DsaTiling t;
  int consumed = 0;
  if (std::sscanf(name.c_str(), "s%dn%dx%dm%d%n", &t.num_splits, &t.block_n, &t.stages,
                  &t.merge_head_groups, &consumed) != 4 ||
      consumed != int(name.size()))
    return Status::invalid_argument("tiling: expected the form s<splits>n<block_n>x<stages>m<groups> "
                                    "(e.g. s16n64x2m4), got '" + name + "'");
  if (t.num_splits < 1 || t.block_n < 1 || t.stages < 1 || t.merge_head_groups < 1)
    return Status::invalid_argument("tiling: every field must be >= 1, got '" + name + "'");
  *out = t;
  return Status::ok();
}

}  // namespace mlakit
