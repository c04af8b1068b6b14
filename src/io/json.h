// JSON through nlohmann/json (pinned in .deps/, docs/building.md): every JSON file mlakit reads or
// writes — trace definitions and workload lines, safetensors headers, the tune and ceiling caches,
// bench JSON lines. This header adds what nlohmann leaves to the caller: Status errors naming the
// file, line and column; checked member lookups naming the field; a writer that never throws.
//
// Values are nlohmann::ordered_json: objects keep their members in insertion order (dumps read like
// the code that built them); a repeated key on input keeps the last value, as Python does.
// Input is strict RFC 8259 (no NaN or Infinity); output is strict JSON (non-finite numbers are
// written as null).
//
//   json::Value v;
//   MLAKIT_RETURN_IF_ERROR(json::parse_file("def.json", &v));  // "def.json: line 3, column 7: ..."
//   int64_t t;
//   MLAKIT_RETURN_IF_ERROR(json::get_int(json::member(v, "axes"), "num_tokens", &t, "workload.axes"));
//
//   json::Value line = {{"key", "dsa_decode.v1_splitk.bf16"}, {"median_us", json::number(12.5)}};
//   std::string text = json::dump(line);  // {"key":"dsa_decode.v1_splitk.bf16","median_us":12.5}
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "mlakit/status.h"

namespace mlakit::json {

using Value = nlohmann::ordered_json;

// Parses one JSON text. On error: invalid_argument "line L, column C: <what nlohmann expected>".
Status parse(std::string_view text, Value* out);
// Reads and parses a file; errors are prefixed with the path. Missing file: io_error.
Status parse_file(const std::string& path, Value* out);
// JSON Lines: one value per non-blank line. Errors name the line of the text ("line 7, column
// 12: ..."); `line_numbers`, when given, receives the line of each value.
Status parse_lines(std::string_view text, std::vector<Value>* out, std::vector<int>* line_numbers = nullptr);
Status parse_lines_file(const std::string& path, std::vector<Value>* out);

// A number as mlakit writes it: integral values within int64 as integers (2359296, not
// 2359296.0, as the files always had them), others in their shortest round-trip form; NaN and
// infinities as null.
Value number(double x);
// Compact (indent < 0) or pretty-printed; never throws (bytes that are not UTF-8 become U+FFFD).
std::string dump(const Value& v, int indent = -1);
// Writes dump(v, indent) and a newline to `path` atomically (temporary file, then rename).
Status write_file(const std::string& path, const Value& v, int indent = 2);

// Lookups that never throw (nlohmann's const operator[] must not see a missing key).
// find(): the member, or nullptr when absent or `object` is no object. member(): the member, or
// a shared null value then, so that member(member(def, "inputs"), "q") is safe.
const Value* find(const Value& object, std::string_view key);
const Value& member(const Value& object, std::string_view key);
// The member when it is a string; `fallback` when absent or of another type.
std::string string_or(const Value& object, std::string_view key, const std::string& fallback = "");
// A number with an integral value that fits int64 (5, 5.0 and 5e0 all qualify).
bool is_integer(const Value& v);
int64_t as_int(const Value& v);  // the integral value; 0 when !is_integer(v)

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

// A short description of a value for error messages: `string "abc"`, `number 3.5`, `array of 2`.
std::string describe(const Value& v);

}  // namespace mlakit::json
