// DsaTiling's stable short name: s<splits>n<block_n>x<stages>m<merge head groups>, then the
// single-launch fields p<producers>, g<gather>, w<mma>, h<heads per CTA>, c<cluster merge>,
// b<pooled rows> where they differ from their defaults: "s16n64x2m4" (v1), "s8n64x4m1p2" (v2),
// "s8n64x4m1p2g1w1", "s2n64x4m1p1h32", "s8n64x8m1p4g1c1", "s8n64x4m1p2b1".
#include <cstdio>

#include "mlakit/dsa.h"

namespace mlakit {

std::string DsaTiling::name() const {
  const DsaTiling defaults;
  char buf[96];
  int n = std::snprintf(buf, sizeof buf, "s%dn%dx%dm%d", num_splits, block_n, stages, merge_head_groups);
  if (producers != defaults.producers) n += std::snprintf(buf + n, sizeof buf - n, "p%d", producers);
  if (gather != defaults.gather) n += std::snprintf(buf + n, sizeof buf - n, "g%d", gather);
  if (mma != defaults.mma) n += std::snprintf(buf + n, sizeof buf - n, "w%d", mma);
  if (cta_heads != defaults.cta_heads) n += std::snprintf(buf + n, sizeof buf - n, "h%d", cta_heads);
  if (cluster != defaults.cluster) n += std::snprintf(buf + n, sizeof buf - n, "c%d", cluster);
  if (pool != defaults.pool) std::snprintf(buf + n, sizeof buf - n, "b%d", pool);
  return buf;
}

Status DsaTiling::parse(const std::string& name, DsaTiling* out) {
  const auto bad = [&](const std::string& why) {
    return Status::invalid_argument("tiling: " + why + ", got '" + name + "'");
  };
  DsaTiling t;
  int consumed = 0;
  if (std::sscanf(name.c_str(), "s%dn%dx%dm%d%n", &t.num_splits, &t.block_n, &t.stages,
                  &t.merge_head_groups, &consumed) != 4)
    return bad("expected the form s<splits>n<block_n>x<stages>m<groups>[p<producers>][g<gather>][w<mma>][h<heads>][c<cluster>][b<pool>] "
               "(e.g. s16n64x2m4)");
  // The optional fields, each at most once and in this order.
  const struct {
    char letter;
    int* field;
  } optional[] = {{'p', &t.producers}, {'g', &t.gather}, {'w', &t.mma}, {'h', &t.cta_heads}, {'c', &t.cluster},
                  {'b', &t.pool}};
  size_t pos = size_t(consumed);
  for (const auto& f : optional) {
    if (pos >= name.size() || name[pos] != f.letter) continue;
    int used = 0;
    if (std::sscanf(name.c_str() + pos + 1, "%d%n", f.field, &used) != 1) return bad(std::string("expected a number after '") + f.letter + "'");
    pos += 1 + size_t(used);
  }
  if (pos != name.size()) return bad("unexpected '" + name.substr(pos) + "' (optional fields come as p, g, w, h, c, b)");
  if (t.num_splits < 1 || t.block_n < 1 || t.stages < 1 || t.merge_head_groups < 1 || t.producers < 1 ||
      t.cta_heads < 1)
    return bad("s, n, x, m, p and h must be >= 1");
  if (t.gather < 0 || t.mma < 0 || t.cluster < 0 || t.pool < 0) return bad("g, w, c and b must be >= 0");
  *out = t;
  return Status::ok();
}

}  // namespace mlakit
