#include "io/json.h"

#include <charconv>
#include <cmath>
#include <cstring>

#include "io/file.h"

namespace mlakit::json {

const char* type_name(Type type) {
  switch (type) {
    case Type::kNull: return "null";
    case Type::kBool: return "bool";
    case Type::kNumber: return "number";
    case Type::kString: return "string";
    case Type::kArray: return "array";
    case Type::kObject: return "object";
  }
  return "unknown";
}

// --- Value ------------------------------------------------------------------------------------

bool Value::is_integer() const {
  if (type_ != Type::kNumber) return false;
  if (is_int_) return true;
  // 2^63 is the first double past int64; doubles below it with no fraction convert exactly.
  return std::isfinite(double_) && double_ == std::trunc(double_) && double_ >= -9223372036854775808.0 &&
         double_ < 9223372036854775808.0;
}

int64_t Value::as_int() const {
  if (!is_integer()) return 0;
  return is_int_ ? int_ : int64_t(double_);
}

const std::string& Value::as_string() const {
  static const std::string empty;
  return type_ == Type::kString ? string_ : empty;
}

const Value::Array& Value::as_array() const {
  static const Array empty;
  return type_ == Type::kArray ? array_ : empty;
}

const Value::Object& Value::as_object() const {
  static const Object empty;
  return type_ == Type::kObject ? object_ : empty;
}

Value::Array& Value::as_array() {
  if (type_ == Type::kNull) type_ = Type::kArray;
  return array_;
}

Value::Object& Value::as_object() {
  if (type_ == Type::kNull) type_ = Type::kObject;
  return object_;
}

const Value* Value::find(std::string_view key) const {
  if (type_ != Type::kObject) return nullptr;
  // From the back: the last of repeated keys wins, as in Python.
  for (auto it = object_.rbegin(); it != object_.rend(); ++it)
    if (it->first == key) return &it->second;
  return nullptr;
}

Value* Value::find(std::string_view key) {
  return const_cast<Value*>(static_cast<const Value*>(this)->find(key));
}

Value& Value::member(std::string_view key) {
  if (Value* v = find(key)) return *v;
  Object& o = as_object();
  o.emplace_back(std::string(key), Value());
  return o.back().second;
}

Value& Value::set(std::string_view key, Value value) {
  member(key) = std::move(value);
  return *this;
}

Value& Value::push_back(Value value) {
  Array& a = as_array();
  a.push_back(std::move(value));
  return a.back();
}

const Value& Value::element(size_t i) const {
  if (type_ != Type::kArray || i >= array_.size()) return null_value();
  return array_[i];
}

const Value& Value::null_value() {
  static const Value null;
  return null;
}

size_t Value::size() const {
  if (type_ == Type::kArray) return array_.size();
  if (type_ == Type::kObject) return object_.size();
  return 0;
}

bool Value::operator==(const Value& other) const {
  if (type_ != other.type_) return false;
  switch (type_) {
    case Type::kNull: return true;
    case Type::kBool: return bool_ == other.bool_;
    case Type::kNumber:
      if (is_int_ && other.is_int_) return int_ == other.int_;
      return double_ == other.double_;
    case Type::kString: return string_ == other.string_;
    case Type::kArray: return array_ == other.array_;
    case Type::kObject: {
      if (object_.size() != other.object_.size()) return false;
      for (const Member& m : object_) {
        const Value* o = other.find(m.first);
        if (o == nullptr || !(*o == m.second)) return false;
      }
      return true;
    }
  }
  return false;
}

// --- writer -----------------------------------------------------------------------------------

namespace {

void dump_string(std::string_view s, std::string* out) {
  static const char* const kHex = "0123456789abcdef";
  out->push_back('"');
  for (char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      case '\b': out->append("\\b"); break;
      case '\f': out->append("\\f"); break;
      default:
        if (c < 0x20) {
          out->append("\\u00");
          out->push_back(kHex[c >> 4]);
          out->push_back(kHex[c & 15]);
        } else {
          out->push_back(ch);
        }
    }
  }
  out->push_back('"');
}

void dump_number(const Value& v, std::string* out) {
  char buf[32];
  std::to_chars_result r;
  if (v.is_integer()) {  // integers print exactly, whatever their size
    r = std::to_chars(buf, buf + sizeof buf, v.as_int());
  } else if (std::isfinite(v.as_double())) {
    r = std::to_chars(buf, buf + sizeof buf, v.as_double());  // shortest round-trip form
  } else {
    out->append("null");  // strict JSON has no NaN or infinity
    return;
  }
  out->append(buf, r.ptr);
}

void newline(int indent, int depth, std::string* out) {
  if (indent < 0) return;
  out->push_back('\n');
  out->append(size_t(indent) * size_t(depth), ' ');
}

void dump_value(const Value& v, int indent, int depth, std::string* out) {
  switch (v.type()) {
    case Type::kNull: out->append("null"); return;
    case Type::kBool: out->append(v.as_bool() ? "true" : "false"); return;
    case Type::kNumber: dump_number(v, out); return;
    case Type::kString: dump_string(v.as_string(), out); return;
    case Type::kArray: {
      const Value::Array& a = v.as_array();
      if (a.empty()) {
        out->append("[]");
        return;
      }
      out->push_back('[');
      for (size_t i = 0; i < a.size(); ++i) {
        if (i) out->push_back(',');
        newline(indent, depth + 1, out);
        dump_value(a[i], indent, depth + 1, out);
      }
      newline(indent, depth, out);
      out->push_back(']');
      return;
    }
    case Type::kObject: {
      const Value::Object& o = v.as_object();
      if (o.empty()) {
        out->append("{}");
        return;
      }
      out->push_back('{');
      for (size_t i = 0; i < o.size(); ++i) {
        if (i) out->push_back(',');
        newline(indent, depth + 1, out);
        dump_string(o[i].first, out);
        out->append(indent < 0 ? ":" : ": ");
        dump_value(o[i].second, indent, depth + 1, out);
      }
      newline(indent, depth, out);
      out->push_back('}');
      return;
    }
  }
}

}  // namespace

std::string Value::dump(int indent) const {
  std::string out;
  dump_value(*this, indent, 0, &out);
  return out;
}

// --- reader -----------------------------------------------------------------------------------

namespace {

// Deep enough for any file we read; shallow enough that recursion cannot exhaust the stack.
constexpr int kMaxDepth = 256;

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Status parse_document(Value* out) {
    skip_space();
    MLAKIT_RETURN_IF_ERROR(parse_value(out, 0));
    skip_space();
    if (pos_ < text_.size()) return error("unexpected " + quote_here() + " after the JSON value");
    return Status::ok();
  }

 private:
  Status parse_value(Value* out, int depth) {
    if (depth > kMaxDepth)
      return error("nesting deeper than " + std::to_string(kMaxDepth) + " levels");
    if (pos_ >= text_.size()) return error("unexpected end of input, expected a value");
    const char c = text_[pos_];
    switch (c) {
      case '{': return parse_object(out, depth);
      case '[': return parse_array(out, depth);
      case '"': {
        std::string s;
        MLAKIT_RETURN_IF_ERROR(parse_string(&s));
        *out = Value(std::move(s));
        return Status::ok();
      }
      case 't': return parse_literal("true", Value(true), out);
      case 'f': return parse_literal("false", Value(false), out);
      case 'n': return parse_literal("null", Value(), out);
      case 'N': return parse_literal("NaN", Value(std::nan("")), out);
      case 'I': return parse_literal("Infinity", Value(HUGE_VAL), out);
      default:
        if (c == '-' || (c >= '0' && c <= '9')) return parse_number(out);
        return error("expected a value, got " + quote_here());
    }
  }

  Status parse_object(Value* out, int depth) {
    ++pos_;  // '{'
    Value obj = Value::object();
    Value::Object& members = obj.as_object();
    skip_space();
    if (peek() == '}') {
      ++pos_;
      *out = std::move(obj);
      return Status::ok();
    }
    while (true) {
      skip_space();
      if (peek() != '"') return error("expected a string key in object, got " + quote_here());
      std::string key;
      MLAKIT_RETURN_IF_ERROR(parse_string(&key));
      skip_space();
      if (peek() != ':') return error("expected ':' after object key \"" + key + "\", got " + quote_here());
      ++pos_;
      skip_space();
      Value v;
      MLAKIT_RETURN_IF_ERROR(parse_value(&v, depth + 1));
      members.emplace_back(std::move(key), std::move(v));
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == '}') {
        ++pos_;
        *out = std::move(obj);
        return Status::ok();
      }
      return error("expected ',' or '}' in object, got " + quote_here());
    }
  }

  Status parse_array(Value* out, int depth) {
    ++pos_;  // '['
    Value arr = Value::array();
    Value::Array& elems = arr.as_array();
    skip_space();
    if (peek() == ']') {
      ++pos_;
      *out = std::move(arr);
      return Status::ok();
    }
    while (true) {
      skip_space();
      Value v;
      MLAKIT_RETURN_IF_ERROR(parse_value(&v, depth + 1));
      elems.push_back(std::move(v));
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == ']') {
        ++pos_;
        *out = std::move(arr);
        return Status::ok();
      }
      return error("expected ',' or ']' in array, got " + quote_here());
    }
  }

  Status parse_literal(std::string_view word, Value value, Value* out) {
    if (text_.substr(pos_, word.size()) != word)
      return error("expected a value, got " + quote_here());
    pos_ += word.size();
    *out = std::move(value);
    return Status::ok();
  }

  Status parse_number(Value* out) {
    const size_t start = pos_;
    bool integral = true;
    if (peek() == '-') {
      ++pos_;
      if (text_.substr(pos_, 8) == "Infinity") {
        pos_ += 8;
        *out = Value(-HUGE_VAL);
        return Status::ok();
      }
    }
    if (peek() == '0') {
      ++pos_;
    } else if (is_digit(peek())) {
      while (is_digit(peek())) ++pos_;
    } else {
      return error("expected a digit in number, got " + quote_here());
    }
    if (peek() == '.') {
      integral = false;
      ++pos_;
      if (!is_digit(peek())) return error("expected a digit after '.', got " + quote_here());
      while (is_digit(peek())) ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      integral = false;
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!is_digit(peek())) return error("expected a digit in exponent, got " + quote_here());
      while (is_digit(peek())) ++pos_;
    }
    const char* first = text_.data() + start;
    const char* last = text_.data() + pos_;
    if (integral) {
      int64_t i = 0;
      const auto r = std::from_chars(first, last, i);
      if (r.ec == std::errc() && r.ptr == last) {
        *out = Value(i);
        return Status::ok();
      }
      // Beyond int64: fall through to double.
    }
    double d = 0;
    const auto r = std::from_chars(first, last, d);
    if (r.ec == std::errc::result_out_of_range) {
      // Overflow saturates to infinity, underflow to zero, as strtod does.
      d = std::strtod(std::string(first, last).c_str(), nullptr);
    } else if (r.ec != std::errc() || r.ptr != last) {
      pos_ = start;
      return error("malformed number");
    }
    *out = Value(d);
    return Status::ok();
  }

  Status parse_string(std::string* out) {
    ++pos_;  // opening quote
    out->clear();
    while (true) {
      if (pos_ >= text_.size()) return error("unterminated string");
      const char c = text_[pos_];
      if (c == '"') {
        ++pos_;
        return Status::ok();
      }
      if (static_cast<unsigned char>(c) < 0x20)
        return error("control character in string (escape it as \\u00XX)");
      if (c != '\\') {
        out->push_back(c);
        ++pos_;
        continue;
      }
      ++pos_;
      if (pos_ >= text_.size()) return error("unterminated string");
      const char e = text_[pos_++];
      switch (e) {
        case '"': out->push_back('"'); break;
        case '\\': out->push_back('\\'); break;
        case '/': out->push_back('/'); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'n': out->push_back('\n'); break;
        case 'r': out->push_back('\r'); break;
        case 't': out->push_back('\t'); break;
        case 'u': MLAKIT_RETURN_IF_ERROR(parse_unicode_escape(out)); break;
        default:
          pos_ -= 2;  // point at the backslash
          return error("invalid escape '\\" + std::string(1, e) + "' in string");
      }
    }
  }

  Status parse_hex4(uint32_t* out) {
    if (pos_ + 4 > text_.size()) return error("expected 4 hex digits after \\u");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[pos_];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= uint32_t(c - '0');
      else if (c >= 'a' && c <= 'f') v |= uint32_t(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= uint32_t(c - 'A' + 10);
      else return error("expected 4 hex digits after \\u, got " + quote_here());
      ++pos_;
    }
    *out = v;
    return Status::ok();
  }

  Status parse_unicode_escape(std::string* out) {
    uint32_t cp = 0;
    MLAKIT_RETURN_IF_ERROR(parse_hex4(&cp));
    if (cp >= 0xD800 && cp <= 0xDBFF) {  // high surrogate: a low one must follow
      if (text_.substr(pos_, 2) != "\\u") return error("lone high surrogate in \\u escape");
      pos_ += 2;
      uint32_t lo = 0;
      MLAKIT_RETURN_IF_ERROR(parse_hex4(&lo));
      if (lo < 0xDC00 || lo > 0xDFFF) return error("invalid low surrogate in \\u escape");
      cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
      return error("lone low surrogate in \\u escape");
    }
    append_utf8(cp, out);
    return Status::ok();
  }

  static void append_utf8(uint32_t cp, std::string* out) {
    if (cp < 0x80) {
      out->push_back(char(cp));
    } else if (cp < 0x800) {
      out->push_back(char(0xC0 | (cp >> 6)));
      out->push_back(char(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out->push_back(char(0xE0 | (cp >> 12)));
      out->push_back(char(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(char(0x80 | (cp & 0x3F)));
    } else {
      out->push_back(char(0xF0 | (cp >> 18)));
      out->push_back(char(0x80 | ((cp >> 12) & 0x3F)));
      out->push_back(char(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(char(0x80 | (cp & 0x3F)));
    }
  }

  static bool is_digit(char c) { return c >= '0' && c <= '9'; }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

  void skip_space() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
      ++pos_;
    }
  }

  // The character at the error position, for messages: 'x', end of input, or a byte code.
  std::string quote_here() const {
    if (pos_ >= text_.size()) return "end of input";
    const unsigned char c = static_cast<unsigned char>(text_[pos_]);
    if (c >= 0x20 && c < 0x7f) return std::string("'") + char(c) + "'";
    return "byte 0x" + std::string(1, "0123456789abcdef"[c >> 4]) + "0123456789abcdef"[c & 15];
  }

  Status error(const std::string& what) const {
    int line = 1, column = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return Status::invalid_argument("line " + std::to_string(line) + ", column " +
                                    std::to_string(column) + ": " + what);
  }

  std::string_view text_;
  size_t pos_ = 0;
};

Status with_prefix(const std::string& prefix, Status s, Code code) {
  if (s.is_ok()) return s;
  return Status(code, prefix + ": " + s.message());
}

}  // namespace

Status parse(std::string_view text, Value* out) {
  if (out == nullptr) return Status::invalid_argument("json::parse: out is null");
  Value v;
  MLAKIT_RETURN_IF_ERROR(Parser(text).parse_document(&v));
  *out = std::move(v);
  return Status::ok();
}

Status parse_file(const std::string& path, Value* out) {
  std::string text;
  MLAKIT_RETURN_IF_ERROR(io::read_file(path, &text));
  return with_prefix(path, parse(text, out), Code::kIoError);
}

Status parse_lines(std::string_view text, std::vector<Value>* out) {
  if (out == nullptr) return Status::invalid_argument("json::parse_lines: out is null");
  out->clear();
  size_t start = 0;
  int line = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    ++line;
    std::string_view row = text.substr(start, end - start);
    start = end + 1;
    if (row.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    Value v;
    Status s = parse(row, &v);
    if (!s.is_ok()) {
      // The single-line parser reports "line 1, column C"; name the line of the file instead.
      std::string m = s.message();
      const std::string one = "line 1, ";
      if (m.rfind(one, 0) == 0) m = m.substr(one.size());
      return Status::invalid_argument("line " + std::to_string(line) + ", " + m);
    }
    out->push_back(std::move(v));
  }
  return Status::ok();
}

Status parse_lines_file(const std::string& path, std::vector<Value>* out) {
  std::string text;
  MLAKIT_RETURN_IF_ERROR(io::read_file(path, &text));
  return with_prefix(path, parse_lines(text, out), Code::kIoError);
}

Status write_file(const std::string& path, const Value& v, int indent) {
  return io::write_file_atomic(path, v.dump(indent) + "\n");
}

Status append_line(const std::string& path, const Value& v) {
  return io::append_file(path, v.dump(-1) + "\n");
}

// --- checked lookups --------------------------------------------------------------------------

std::string describe(const Value& v) {
  switch (v.type()) {
    case Type::kNull: return "null";
    case Type::kBool: return v.as_bool() ? "bool true" : "bool false";
    case Type::kNumber: return "number " + v.dump();
    case Type::kString: {
      std::string s = v.as_string();
      if (s.size() > 40) s = s.substr(0, 37) + "...";
      return "string " + Value(s).dump();
    }
    case Type::kArray: return "array of " + std::to_string(v.size());
    case Type::kObject: return "object";
  }
  return "unknown";
}

namespace {

std::string path_of(std::string_view where, std::string_view key) {
  std::string p(where);
  if (!p.empty()) p.push_back('.');
  p.append(key);
  return p;
}

Status mismatch(std::string_view where, std::string_view key, const char* expected, const Value& got) {
  return Status::invalid_argument(path_of(where, key) + ": expected " + expected + ", got " +
                                  describe(got));
}

}  // namespace

Status get_member(const Value& object, std::string_view key, const Value** out, std::string_view where) {
  const std::string here = where.empty() ? std::string("JSON value") : std::string(where);
  if (!object.is_object())
    return Status::invalid_argument(here + ": expected an object, got " + describe(object));
  const Value* v = object.find(key);
  if (v == nullptr) return Status::invalid_argument(here + ": missing key \"" + std::string(key) + "\"");
  *out = v;
  return Status::ok();
}

Status get_int(const Value& object, std::string_view key, int64_t* out, std::string_view where) {
  const Value* v = nullptr;
  MLAKIT_RETURN_IF_ERROR(get_member(object, key, &v, where));
  if (!v->is_integer()) return mismatch(where, key, "an integer", *v);
  *out = v->as_int();
  return Status::ok();
}

Status get_number(const Value& object, std::string_view key, double* out, std::string_view where) {
  const Value* v = nullptr;
  MLAKIT_RETURN_IF_ERROR(get_member(object, key, &v, where));
  if (!v->is_number()) return mismatch(where, key, "a number", *v);
  *out = v->as_double();
  return Status::ok();
}

Status get_string(const Value& object, std::string_view key, std::string* out, std::string_view where) {
  const Value* v = nullptr;
  MLAKIT_RETURN_IF_ERROR(get_member(object, key, &v, where));
  if (!v->is_string()) return mismatch(where, key, "a string", *v);
  *out = v->as_string();
  return Status::ok();
}

Status get_bool(const Value& object, std::string_view key, bool* out, std::string_view where) {
  const Value* v = nullptr;
  MLAKIT_RETURN_IF_ERROR(get_member(object, key, &v, where));
  if (!v->is_bool()) return mismatch(where, key, "a bool", *v);
  *out = v->as_bool();
  return Status::ok();
}

namespace {
bool absent(const Value& object, std::string_view key) {
  const Value* v = object.find(key);
  return v == nullptr || v->is_null();
}
}  // namespace

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
