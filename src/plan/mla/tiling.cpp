// MlaTiling's stable short name: c<ctas>x<stages>p<producers>, then g<gather>, m<rows> and
// w<whole> where they differ from their defaults (1, 16 and 8): "c132x4p2", "c132x4p2g0",
// "c132x4p4g2m64", "c132x4p2w0". The fields always written are the ones every variant's choice
// moves; gather, rows and whole are code paths and a schedule rule most tilings leave at the
// default.
#include <cstdio>

#include "mlakit/mla.h"
#include "plan/tiling_name.h"

namespace mlakit {

namespace {
constexpr int kMaxWhole = 1 << 20;  // past any request's length in units: always whole
}  // namespace

std::string MlaTiling::name() const {
  char buf[80];
  const int n = std::snprintf(buf, sizeof buf, "c%dx%dp%d", ctas, stages, producers);
  int m = n;
  if (gather != MlaTiling{}.gather) m += std::snprintf(buf + m, sizeof buf - m, "g%d", gather);
  if (rows != MlaTiling{}.rows) m += std::snprintf(buf + m, sizeof buf - m, "m%d", rows);
  if (whole != MlaTiling{}.whole) m += std::snprintf(buf + m, sizeof buf - m, "w%d", whole);
  if (order != MlaTiling{}.order) std::snprintf(buf + m, sizeof buf - m, "o%d", order);
  return buf;
}

Status MlaTiling::parse(const std::string& name, MlaTiling* out) {
  const auto bad = [&](const std::string& why) {
    return Status::invalid_argument("tiling: " + why + ", got '" + name + "'");
  };
  const char* form =
      "expected the form c<ctas>x<stages>p<producers>[g<gather>][m<rows>][w<whole>][o<order>] (e.g. c132x4p2)";
  if (out == nullptr) return Status::invalid_argument("tiling: out is null");
  if (!is_tiling_name(name)) return bad(form);
  MlaTiling t;
  int consumed = 0;
  if (std::sscanf(name.c_str(), "c%dx%dp%d%n", &t.ctas, &t.stages, &t.producers, &consumed) != 3) return bad(form);
  size_t pos = size_t(consumed);
  if (pos < name.size() && name[pos] == 'g') {
    int used = 0;
    if (std::sscanf(name.c_str() + pos + 1, "%d%n", &t.gather, &used) != 1) return bad(form);
    pos += 1 + size_t(used);
  }
  if (pos < name.size() && name[pos] == 'm') {
    int used = 0;
    if (std::sscanf(name.c_str() + pos + 1, "%d%n", &t.rows, &used) != 1) return bad(form);
    pos += 1 + size_t(used);
  }
  if (pos < name.size() && name[pos] == 'w') {
    int used = 0;
    if (std::sscanf(name.c_str() + pos + 1, "%d%n", &t.whole, &used) != 1) return bad(form);
    pos += 1 + size_t(used);
  }
  if (pos < name.size() && name[pos] == 'o') {
    int used = 0;
    if (std::sscanf(name.c_str() + pos + 1, "%d%n", &t.order, &used) != 1) return bad(form);
    pos += 1 + size_t(used);
  }
  if (pos != name.size()) return bad("unexpected '" + name.substr(pos) + "' (the optional fields are g, m, w and o)");
  if (t.ctas < 1 || t.stages < 1 || t.producers < 1) return bad("c, x and p must be >= 1");
  if (t.gather < 0 || t.gather > 3) return bad("g must be 0, 1, 2 or 3");
  if (t.rows != 16 && t.rows != 64) return bad("m must be 16 or 64");
  if (t.whole < 0 || t.whole > kMaxWhole) return bad("w must be 0.." + std::to_string(kMaxWhole));
  if (t.order != 0 && t.order != 1) return bad("o must be 0 (lockstep pair) or 1 (seesaw)");
  *out = t;
  return Status::ok();
}

}  // namespace mlakit
