// A small JSON reader/writer: definitions, JSONL workload files, safetensors headers, the tuner
// cache and bench JSON lines. RFC 8259 plus two tolerances of Python's json module on input
// (NaN, Infinity, -Infinity); output is strict JSON (non-finite numbers are written as null).
//
// Values form a tree. Objects keep their members in insertion order (dumps read like the
// code that built them); a repeated key on input keeps the last value, as Python does.
// Numbers written without fraction or exponent that fit int64 are held exactly as integers.
//
//   json::Value v;
//   MLAKIT_RETURN_IF_ERROR(json::parse_file("def.json", &v));  // "def.json: line 3, column 7: ..."
//   int64_t t;
//   MLAKIT_RETURN_IF_ERROR(json::get_int(v["axes"], "num_tokens", &t, "workload.axes"));
//
//   json::Value line = json::Value::object();
//   line.set("key", "dsa_decode.v1_splitk.bf16").set("median_us", 12.5).set("T", 8);
//   MLAKIT_RETURN_IF_ERROR(json::append_line("bench.jsonl", line));  // {"key":"...",...}\n
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "mlakit/status.h"

namespace mlakit::json {

enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };
const char* type_name(Type type);  // "null", "bool", "number", "string", "array", "object"

class Value {
  // Types usable as object keys: anything that converts to std::string_view, but not integers
  // (v[0] is element access, never a null const char*).
  template <class K>
  static constexpr bool is_key =
      std::is_convertible_v<const K&, std::string_view> && !std::is_integral_v<K>;

 public:
  using Array = std::vector<Value>;
  using Member = std::pair<std::string, Value>;
  using Object = std::vector<Member>;

  Value() = default;  // null
  Value(std::nullptr_t) {}
  Value(bool b) : type_(Type::kBool), bool_(b) {}
  template <class I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
  Value(I i) : type_(Type::kNumber) {
    if constexpr (std::is_unsigned_v<I> && sizeof(I) >= sizeof(int64_t)) {
      if (i > uint64_t(INT64_MAX)) {
        double_ = double(i);
        return;
      }
    }
    is_int_ = true;
    int_ = int64_t(i);
    double_ = double(i);
  }
  Value(double d) : type_(Type::kNumber), double_(d) {}
  Value(const char* s) : type_(Type::kString), string_(s) {}
  Value(std::string s) : type_(Type::kString), string_(std::move(s)) {}
  Value(std::string_view s) : type_(Type::kString), string_(s) {}
  Value(Array a) : type_(Type::kArray), array_(std::move(a)) {}
  Value(Object o) : type_(Type::kObject), object_(std::move(o)) {}

  static Value array() { return Value(Array{}); }
  static Value object() { return Value(Object{}); }

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::kNull; }
  bool is_bool() const { return type_ == Type::kBool; }
  bool is_number() const { return type_ == Type::kNumber; }
  // A number with an integral value that fits int64 (5, 5.0 and 5e0 all qualify).
  bool is_integer() const;
  bool is_string() const { return type_ == Type::kString; }
  bool is_array() const { return type_ == Type::kArray; }
  bool is_object() const { return type_ == Type::kObject; }

  // Unchecked accessors: on a type mismatch they return false / 0 / an empty string, array or
  // object. Readers of untrusted input use the get_* functions below, which name the problem.
  bool as_bool() const { return type_ == Type::kBool && bool_; }
  double as_double() const { return type_ == Type::kNumber ? double_ : 0.0; }
  int64_t as_int() const;  // the integral value; 0 when !is_integer()
  const std::string& as_string() const;
  const Array& as_array() const;
  const Object& as_object() const;
  Array& as_array();    // converts null to an empty array first
  Object& as_object();  // converts null to an empty object first

  // Objects. find() returns null when absent or when this is not an object.
  const Value* find(std::string_view key) const;
  Value* find(std::string_view key);
  bool contains(std::string_view key) const { return find(key) != nullptr; }
  // Member access that inserts null when absent (converts null to an object first).
  template <class K, std::enable_if_t<is_key<K>, int> = 0>
  Value& operator[](const K& key) { return member(std::string_view(key)); }
  // Read-only member access: a shared null value when absent.
  template <class K, std::enable_if_t<is_key<K>, int> = 0>
  const Value& operator[](const K& key) const {
    const Value* v = find(std::string_view(key));
    return v != nullptr ? *v : null_value();
  }
  // Sets (replaces or appends) a member; returns *this for chaining.
  Value& set(std::string_view key, Value value);

  // Arrays.
  Value& push_back(Value value);  // converts null to an array first; returns the new element
  // Read-only element access: a shared null value when out of range or not an array.
  template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
  const Value& operator[](I i) const { return element(size_t(i)); }
  // Mutable element access; precondition: is_array() and i < size().
  template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
  Value& operator[](I i) { return array_[size_t(i)]; }

  size_t size() const;  // elements of an array, members of an object, else 0

  // Compact (indent < 0) or pretty-printed with `indent` spaces per level.
  std::string dump(int indent = -1) const;

  // Structural equality; numbers compare by value (1 == 1.0).
  bool operator==(const Value& other) const;
  bool operator!=(const Value& other) const { return !(*this == other); }

 private:
  Value& member(std::string_view key);
  const Value& element(size_t i) const;
  static const Value& null_value();

  Type type_ = Type::kNull;
  bool bool_ = false;
  bool is_int_ = false;
  int64_t int_ = 0;
  double double_ = 0.0;
  std::string string_;
  Array array_;
  Object object_;
};

// Parses one JSON text. On error: invalid_argument "line L, column C: <what was expected>".
Status parse(std::string_view text, Value* out);
// Reads and parses a file; errors are prefixed with the path. Missing file: io_error.
Status parse_file(const std::string& path, Value* out);
// JSON Lines: one value per non-blank line. Errors name the line: "line 7, column 12: ...".
Status parse_lines(std::string_view text, std::vector<Value>* out);
Status parse_lines_file(const std::string& path, std::vector<Value>* out);

// Writes v.dump(indent) and a newline to `path` atomically (temporary file, then rename).
Status write_file(const std::string& path, const Value& v, int indent = 2);
// Appends v.dump() and a newline to `path` (a JSON Lines file), creating it when missing.
Status append_line(const std::string& path, const Value& v);

// Checked member lookups for readers. `where` names the object in messages, e.g.
// get_int(axes, "num_tokens", &t, "workload.axes") fails with
// "workload.axes.num_tokens: expected an integer, got string \"8\"" or
// "workload.axes: missing key \"num_tokens\"".
Status get_member(const Value& object, std::string_view key, const Value** out,
                  std::string_view where = "");
Status get_int(const Value& object, std::string_view key, int64_t* out, std::string_view where = "");
Status get_number(const Value& object, std::string_view key, double* out, std::string_view where = "");
Status get_string(const Value& object, std::string_view key, std::string* out,
                  std::string_view where = "");
Status get_bool(const Value& object, std::string_view key, bool* out, std::string_view where = "");
// The same for members that may be absent or null: then ok and `*out` untouched; a value of
// another type still fails.
Status get_optional_int(const Value& object, std::string_view key, int64_t* out,
                        std::string_view where = "");
Status get_optional_number(const Value& object, std::string_view key, double* out,
                           std::string_view where = "");
Status get_optional_string(const Value& object, std::string_view key, std::string* out,
                           std::string_view where = "");

// A short description of a value for error messages: `string "abc"`, `number 3.5`, `array`.
std::string describe(const Value& v);

}  // namespace mlakit::json
