// A variant's tiling name from its own field table: each field is one lowercase letter and an
// integer, in the table's order; the `always` fields are always written, the others only where
// they differ from the struct's default ("s16n64x2m4", "s8n64x4m1p2g1h32"). A variant declares
// its Tiling struct (int members, defaults in-class) and one table (std::to_array<TilingField<
// Tiling>>({...})); name() and parse() follow, and a new knob is one member and one row. Plain C++.
#pragma once

#include <array>
#include <cstddef>
#include <cstdio>
#include <string>

#include "mlakit/status.h"
#include "plan/tiling_name.h"

namespace mlakit {

template <class T>
struct TilingField {
  char letter;
  int T::*member;
  bool always;       // written even at its default (the fields every choice moves)
  int min;           // the least value parse accepts
  const char* what;  // its name in messages: "s<splits>"
};

// The name of `t` under `fields`.
template <class T, size_t N>
std::string tiling_name(const T& t, const std::array<TilingField<T>, N>& fields) {
  const T defaults{};
  std::string out;
  char buf[16];
  for (const TilingField<T>& f : fields) {
    if (!f.always && t.*f.member == defaults.*f.member) continue;
    std::snprintf(buf, sizeof buf, "%c%d", f.letter, t.*f.member);
    out += buf;
  }
  return out;
}

// The form fields spell, for messages: "s<splits>n<block_n>[p<producers>]".
template <class T, size_t N>
std::string tiling_form(const std::array<TilingField<T>, N>& fields) {
  std::string out;
  for (const TilingField<T>& f : fields) {
    const std::string one = std::string(1, f.letter) + "<" + f.what + ">";
    out += f.always ? one : "[" + one + "]";
  }
  return out;
}

// Parses `name` under `fields` into `out` (the fields it leaves out at their defaults). The
// error names the form, an example and what was wrong; `out` is left alone on error.
template <class T, size_t N>
Status parse_tiling(const std::string& name, const std::array<TilingField<T>, N>& fields, const char* example, T* out) {
  const auto bad = [&](const std::string& why) {
    return Status::invalid_argument("tiling: " + why + ", got '" + name + "'");
  };
  const std::string form = "expected the form " + tiling_form(fields) + " (e.g. " + example + ")";
  if (out == nullptr) return Status::invalid_argument("tiling: out is null");
  if (!is_tiling_name(name)) return bad(form);
  T t{};
  size_t pos = 0, next = 0;  // next: the first table row the name may still use
  while (pos < name.size()) {
    size_t k = next;
    while (k < N && fields[k].letter != name[pos]) {
      if (fields[k].always) return bad(form);  // a required field skipped
      ++k;
    }
    if (k == N) {
      std::string optional;
      for (const TilingField<T>& f : fields)
        if (!f.always) optional += std::string(optional.empty() ? "" : ", ") + f.letter;
      return bad("unexpected '" + name.substr(pos) + "' (the optional fields, in this order: " + optional + ")");
    }
    size_t end = pos + 1;
    long value = 0;
    while (end < name.size() && name[end] >= '0' && name[end] <= '9' && value <= 1 << 24)
      value = value * 10 + (name[end++] - '0');
    if (end == pos + 1) return bad(form);
    if (value < fields[k].min)
      return bad(std::string(1, fields[k].letter) + " must be >= " + std::to_string(fields[k].min));
    if (value > 1 << 24) return bad(std::string(1, fields[k].letter) + " is out of range");
    t.*fields[k].member = int(value);
    pos = end;
    next = k + 1;
  }
  for (size_t k = next; k < N; ++k)
    if (fields[k].always) return bad(form);  // a required field missing at the end
  *out = t;
  return Status::ok();
}

}  // namespace mlakit
