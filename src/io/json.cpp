#include "io/json.h"

#include <algorithm>
#include <cmath>

#include "io/file.h"

namespace mlakit::json {

namespace {

// "line L, column C" of the byte at `offset` (0-based) of `text`.
std::string position(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  const size_t line = 1 + size_t(std::count(text.begin(), text.begin() + std::ptrdiff_t(offset), '\n'));
  const size_t line_start = offset == 0 ? std::string_view::npos : text.rfind('\n', offset - 1);
  const size_t column = line_start == std::string_view::npos ? offset + 1 : offset - line_start;
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

// nlohmann's reason without its "[json.exception.parse_error.101] parse error at line 1, column
// 7: " prefix: its own line and column count the byte after a token, so the position is taken
// from the exception's byte index instead.
std::string reason(const nlohmann::json::exception& e) {
  std::string what = e.what();
  const size_t column = what.find(", column ");
  const size_t colon = column == std::string::npos ? what.find("] ") : what.find(": ", column);
  if (colon != std::string::npos) what = what.substr(colon + 2);
  return what;
}

Status with_prefix(const std::string& prefix, Status s, Code code) {
  if (s.is_ok()) return s;
  return Status(code, prefix + ": " + s.message());
}

}  // namespace

Status parse(std::string_view text, Value* out) {
  if (out == nullptr) return Status::invalid_argument("json::parse: out is null");
  try {
    *out = Value::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte: 1-based index of the last byte read, the one that made the text invalid.
    return Status::invalid_argument(position(text, e.byte == 0 ? 0 : e.byte - 1) + ": " + reason(e));
  } catch (const nlohmann::json::exception& e) {  // e.g. a number beyond double's range
    return Status::invalid_argument(reason(e));
  }
  return Status::ok();
}

Status parse_file(const std::string& path, Value* out) {
  std::string text;
  MLAKIT_RETURN_IF_ERROR(io::read_file(path, &text));
  return with_prefix(path, parse(text, out), Code::kIoError);
}

Status parse_lines(std::string_view text, std::vector<Value>* out, std::vector<int>* line_numbers) {
  if (out == nullptr) return Status::invalid_argument("json::parse_lines: out is null");
  out->clear();
  if (line_numbers) line_numbers->clear();
  size_t start = 0;
  int line = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    ++line;
    const std::string_view row = text.substr(start, end - start);
    start = end + 1;
    if (row.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    Value v;
    if (Status s = parse(row, &v); !s.is_ok()) {
      // The row is parsed alone ("line 1, column C"); name the line of the text instead.
      std::string m = s.message();
      const std::string one = "line 1, ";
      if (m.rfind(one, 0) == 0) m = m.substr(one.size());
      return Status::invalid_argument("line " + std::to_string(line) + ", " + m);
    }
    out->push_back(std::move(v));
    if (line_numbers) line_numbers->push_back(line);
  }
  return Status::ok();
}

Status parse_lines_file(const std::string& path, std::vector<Value>* out) {
  std::string text;
  MLAKIT_RETURN_IF_ERROR(io::read_file(path, &text));
  return with_prefix(path, parse_lines(text, out), Code::kIoError);
}

Value number(double x) {
  if (!std::isfinite(x)) return nullptr;
  // 2^63 is the first double past int64; integral doubles below it convert exactly.
  if (x == std::trunc(x) && x >= -9223372036854775808.0 && x < 9223372036854775808.0) return int64_t(x);
  return x;
}

std::string dump(const Value& v, int indent) {
  return v.dump(indent, ' ', false, Value::error_handler_t::replace);
}

Status write_file(const std::string& path, const Value& v, int indent) {
  return io::write_file_atomic(path, dump(v, indent) + "\n");
}

// --- lookups ------------------------------------------------------------------------------------

const Value* find(const Value& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(std::string(key));
  return it == object.end() ? nullptr : &*it;
}

const Value& member(const Value& object, std::string_view key) {
  static const Value null;
  const Value* v = find(object, key);
  return v != nullptr ? *v : null;
}

std::string string_or(const Value& object, std::string_view key, const std::string& fallback) {
  const Value* v = find(object, key);
  return v != nullptr && v->is_string() ? v->get_ref<const std::string&>() : fallback;
}

bool is_integer(const Value& v) {
  if (v.is_number_integer()) return !v.is_number_unsigned() || v.get<uint64_t>() <= uint64_t(INT64_MAX);
  if (!v.is_number_float()) return false;
  const double d = v.get<double>();
  return std::isfinite(d) && d == std::trunc(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0;
}

int64_t as_int(const Value& v) {
  if (!is_integer(v)) return 0;
  return v.is_number_float() ? int64_t(v.get<double>()) : v.get<int64_t>();
}

std::string describe(const Value& v) {
  switch (v.type()) {
    case Value::value_t::null: return "null";
    case Value::value_t::boolean: return v.get<bool>() ? "bool true" : "bool false";
    case Value::value_t::number_integer:
    case Value::value_t::number_unsigned:
    case Value::value_t::number_float: return "number " + dump(v);
    case Value::value_t::string: {
      std::string s = v.get<std::string>();
      if (s.size() > 40) s = s.substr(0, 37) + "...";
      return "string " + dump(Value(s));
    }
    case Value::value_t::array: return "array of " + std::to_string(v.size());
    case Value::value_t::object: return "object";
    default: return "binary";
  }
}

namespace {

std::string path_of(std::string_view where, std::string_view key) {
  std::string p(where);
  if (!p.empty()) p.push_back('.');
  p.append(key);
  return p;
}

Status mismatch(std::string_view where, std::string_view key, const char* expected, const Value& got) {
  return Status::invalid_argument(path_of(where, key) + ": expected " + expected + ", got " + describe(got));
}

bool absent(const Value& object, std::string_view key) {
  const Value* v = find(object, key);
  return v == nullptr || v->is_null();
}

}  // namespace

Status get_member(const Value& object, std::string_view key, const Value** out, std::string_view where) {
  const std::string here = where.empty() ? std::string("JSON value") : std::string(where);
  if (!object.is_object()) return Status::invalid_argument(here + ": expected an object, got " + describe(object));
  const Value* v = find(object, key);
  if (v == nullptr) return Status::invalid_argument(here + ": missing key \"" + std::string(key) + "\"");
  *out = v;
  return Status::ok();
}

namespace {

// The member `key` of `object` read by `read` when `fits` it, else the mismatch naming `kind`.
template <class T, class Fits, class Read>
Status get_as(const Value& object, std::string_view key, T* out, std::string_view where, const char* kind,
              Fits fits, Read read) {
  const Value* v = nullptr;
  MLAKIT_RETURN_IF_ERROR(get_member(object, key, &v, where));
  if (!fits(*v)) return mismatch(where, key, kind, *v);
  *out = read(*v);
  return Status::ok();
}

}  // namespace

Status get_int(const Value& object, std::string_view key, int64_t* out, std::string_view where) {
  return get_as(object, key, out, where, "an integer", is_integer, as_int);
}

Status get_number(const Value& object, std::string_view key, double* out, std::string_view where) {
  return get_as(object, key, out, where, "a number", [](const Value& v) { return v.is_number(); },
                [](const Value& v) { return v.get<double>(); });
}

Status get_string(const Value& object, std::string_view key, std::string* out, std::string_view where) {
  return get_as(object, key, out, where, "a string", [](const Value& v) { return v.is_string(); },
                [](const Value& v) { return v.get<std::string>(); });
}

Status get_bool(const Value& object, std::string_view key, bool* out, std::string_view where) {
  return get_as(object, key, out, where, "a bool", [](const Value& v) { return v.is_boolean(); },
                [](const Value& v) { return v.get<bool>(); });
}

Status get_optional_int(const Value& object, std::string_view key, int64_t* out, std::string_view where) {
  return absent(object, key) ? Status::ok() : get_int(object, key, out, where);
}

Status get_optional_number(const Value& object, std::string_view key, double* out, std::string_view where) {
  return absent(object, key) ? Status::ok() : get_number(object, key, out, where);
}

Status get_optional_string(const Value& object, std::string_view key, std::string* out,
                           std::string_view where) {
  return absent(object, key) ? Status::ok() : get_string(object, key, out, where);
}

}  // namespace mlakit::json
