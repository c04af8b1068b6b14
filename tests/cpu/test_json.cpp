// src/io/json.h, mlakit's layer over nlohmann/json: error messages with line and column, strict
// input, numbers written as the files always had them, JSON Lines with their line numbers,
// checked lookups naming the field, lookups that never throw, files.
#include <gtest/gtest.h>

#include "temp_dir.h"

#include <cmath>
#include <string>
#include <vector>

#include "io/file.h"
#include "io/json.h"

namespace mlakit {
namespace {

using json::Value;

Value parse_ok(const std::string& text) {
  Value v;
  const Status s = json::parse(text, &v);
  EXPECT_TRUE(s.is_ok()) << text << ": " << s.to_string();
  return v;
}

std::string parse_error(const std::string& text) {
  Value v;
  const Status s = json::parse(text, &v);
  EXPECT_FALSE(s.is_ok()) << text;
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << text;
  return s.message();
}

// The message starts with the position and names what was wrong.
void expect_error(const std::string& text, const std::string& position, const std::string& what) {
  const std::string m = parse_error(text);
  EXPECT_EQ(m.rfind(position + ": ", 0), 0u) << text << " -> " << m;
  EXPECT_NE(m.find(what), std::string::npos) << text << " -> " << m;
  EXPECT_EQ(m.find("json.exception"), std::string::npos) << m;  // nlohmann's prefix is dropped
}

TEST(Json, ErrorsNameTheLineAndColumnOfTheOffendingByte) {
  const struct {
    const char* text;
    const char* position;
    const char* what;
  } kCases[] = {
      {"{\n  \"a\": 1,\n  \"b\" 2\n}", "line 3, column 7", "expected ':'"},
      {"[1, 2,]", "line 1, column 7", "unexpected ']'"},
      {"{\"a\": 1,}", "line 1, column 9", "expected string literal"},
      {"[1 2]", "line 1, column 4", "expected ']'"},
      {"{\"a\": 1", "line 1, column 8", "unexpected end of input"},
      {"\"abc", "line 1, column 5", "missing closing quote"},
      {"{} x", "line 1, column 4", "expected end of input"},
      {"", "line 1, column 1", "unexpected end of input"},
      {"1.", "line 1, column 3", "expected digit after '.'"},
      {"\"a\nb\"", "line 1, column 3", "control character U+000A (LF) must be escaped"},
      {"\"\\ud800\"", "line 1, column 8", "surrogate"},
      {"01", "line 1, column 2", "expected end of input"},
  };
  for (const auto& c : kCases) expect_error(c.text, c.position, c.what);
}

TEST(Json, InputIsStrict) {
  // Python writes NaN and Infinity; mlakit's files never hold them, and a reader meeting one says where.
  expect_error("[NaN]", "line 1, column 2", "invalid literal");
  expect_error("[1, -Infinity]", "line 1, column 6", "invalid number");
  expect_error("\"caf\xe9\"", "line 1, column 6", "ill-formed UTF-8");  // seen at the byte after
}

TEST(Json, DeepNestingIsNoCrash) {
  EXPECT_NE(parse_error(std::string(100000, '[')).find("unexpected end of input"), std::string::npos);
  const Value v = parse_ok(std::string(10000, '[') + std::string(10000, ']'));
  EXPECT_TRUE(v.is_array());
}

TEST(Json, IntegersAreExactAndIntegralDoublesQualify) {
  const Value v = parse_ok("[9007199254740993, -9223372036854775808, 9223372036854775807, 5.0, 1e3, "
                           "18446744073709551615, 1.5]");
  EXPECT_EQ(json::as_int(v[0]), 9007199254740993LL);  // 2^53 + 1: not representable as double
  EXPECT_EQ(json::as_int(v[1]), INT64_MIN);
  EXPECT_EQ(json::as_int(v[2]), INT64_MAX);
  EXPECT_TRUE(json::is_integer(v[3]));
  EXPECT_EQ(json::as_int(v[3]), 5);
  EXPECT_EQ(json::as_int(v[4]), 1000);
  EXPECT_FALSE(json::is_integer(v[5]));  // 2^64 - 1: beyond int64
  EXPECT_FALSE(json::is_integer(v[6]));
  EXPECT_EQ(json::as_int(v[6]), 0);
}

TEST(Json, NumbersAreWrittenAsTheFilesHadThem) {
  EXPECT_EQ(json::dump(json::number(2359296.0)), "2359296");  // integral: no ".0"
  EXPECT_EQ(json::dump(json::number(-0.0)), "0");
  EXPECT_EQ(json::dump(json::number(0.1)), "0.1");
  EXPECT_EQ(json::dump(json::number(12.346)), "12.346");
  EXPECT_EQ(json::dump(json::number(1e19)), "1e+19");  // past int64: a double
  for (double d : {0.1, 0.1352337788608801, -1.5e-300, 6.02214076e23, 1.0 / 3.0}) {
    const std::string text = json::dump(json::number(d));
    EXPECT_EQ(parse_ok(text).get<double>(), d) << text;
  }
  const Value v = {json::number(std::nan("")), json::number(HUGE_VAL), json::number(-HUGE_VAL)};
  EXPECT_EQ(json::dump(v), "[null,null,null]");  // strict JSON has no NaN or infinity
}

TEST(Json, DumpKeepsOrderEscapesAndNeverThrows) {
  const std::string text =
      R"({"definition":"dsa","workload":{"uuid":"0c23","axes":{"num_tokens":8,"num_pages":8462}},)"
      R"("solution":null,"list":[true,false,[],{}],"e":"\u00e9"})";
  const Value v = parse_ok(text);
  EXPECT_EQ(json::dump(v), std::string(text).replace(text.find("\\u00e9"), 6, "\xc3\xa9"));
  const std::string pretty = json::dump(v, 2);
  EXPECT_NE(pretty.find("\n  \"workload\": {\n    \"uuid\": \"0c23\""), std::string::npos) << pretty;
  EXPECT_EQ(parse_ok(pretty), v);
  EXPECT_EQ(v.begin().key(), "definition");  // insertion order
  EXPECT_EQ(json::dump(Value(std::string("x\x01y\"\n"))), R"("x\u0001y\"\n")");
  EXPECT_EQ(json::dump(Value(std::string("a\xff"))), "\"a\xef\xbf\xbd\"");  // U+FFFD, no exception
}

TEST(Json, RepeatedKeyKeepsTheLast) {
  const Value v = parse_ok(R"({"a": 1, "a": 2})");
  EXPECT_EQ(v.size(), 1u);
  EXPECT_EQ(json::as_int(v["a"]), 2);
}

TEST(Json, LinesNameTheLineOfTheText) {
  std::vector<Value> rows;
  std::vector<int> lines;
  ASSERT_TRUE(json::parse_lines("{\"a\":1}\n\n  \n[2]\r\n3", &rows, &lines).is_ok());
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(json::as_int(rows[0]["a"]), 1);
  EXPECT_EQ(json::as_int(rows[1][0]), 2);
  EXPECT_EQ(json::as_int(rows[2]), 3);
  EXPECT_EQ(lines, (std::vector<int>{1, 4, 5}));
  const Status s = json::parse_lines("{\"a\":1}\n\n{\"b\":}\n", &rows);
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.message().rfind("line 3, column 6: ", 0), 0u) << s.message();
}

TEST(Json, LookupsNeverThrow) {
  const Value v = parse_ok(R"({"name": "d", "n": 3, "o": {"k": "v"}})");
  EXPECT_EQ(json::find(v, "missing"), nullptr);
  EXPECT_EQ(json::find(v["n"], "k"), nullptr);  // not an object
  EXPECT_TRUE(json::member(json::member(v, "missing"), "deeper").is_null());
  EXPECT_EQ(json::string_or(json::member(v, "o"), "k"), "v");
  EXPECT_EQ(json::string_or(v, "n", "fallback"), "fallback");  // not a string
  EXPECT_EQ(json::string_or(v, "absent"), "");
}

TEST(Json, CheckedLookupsNameTheField) {
  const Value v = parse_ok(R"({"axes": {"num_tokens": "8", "num_pages": 8462, "x": 1.5}, "name": "d", "z": null})");
  const Value& axes = json::member(v, "axes");
  int64_t i = 0;
  Status s = json::get_int(axes, "num_tokens", &i, "workload.axes");
  EXPECT_EQ(s.message(), "workload.axes.num_tokens: expected an integer, got string \"8\"");
  s = json::get_int(axes, "num_heads", &i, "workload.axes");
  EXPECT_EQ(s.message(), "workload.axes: missing key \"num_heads\"");
  s = json::get_int(axes, "x", &i, "workload.axes");
  EXPECT_EQ(s.message(), "workload.axes.x: expected an integer, got number 1.5");
  ASSERT_TRUE(json::get_int(axes, "num_pages", &i, "workload.axes").is_ok());
  EXPECT_EQ(i, 8462);
  double d = 0;
  ASSERT_TRUE(json::get_number(axes, "x", &d).is_ok());
  EXPECT_EQ(d, 1.5);
  std::string str;
  ASSERT_TRUE(json::get_string(v, "name", &str).is_ok());
  EXPECT_EQ(str, "d");
  s = json::get_string(json::member(v, "name"), "k", &str, "definition.name");
  EXPECT_EQ(s.message(), "definition.name: expected an object, got string \"d\"");
  bool b = false;
  EXPECT_FALSE(json::get_bool(v, "name", &b).is_ok());
  // Optional members: absent or null leave the output alone; another type still fails.
  i = 7;
  EXPECT_TRUE(json::get_optional_int(v, "z", &i).is_ok());
  EXPECT_TRUE(json::get_optional_int(v, "absent", &i).is_ok());
  EXPECT_EQ(i, 7);
  EXPECT_FALSE(json::get_optional_string(v, "axes", &str).is_ok());
}

TEST(Json, Files) {
  const test::TempDir dir;
  const std::string path = dir.file("sub/cache.json");
  const Value v = {{"kernel", "k"}, {"tiling", "s16n64x2m4"}, {"us", 11.25}};
  ASSERT_TRUE(json::write_file(path, v).is_ok());
  Value back;
  ASSERT_TRUE(json::parse_file(path, &back).is_ok());
  EXPECT_EQ(back, v);

  const std::string lines = dir.file("bench.jsonl");
  Value w = v;
  w["us"] = 12;
  ASSERT_TRUE(io::write_file_atomic(lines, json::dump(v) + "\n" + json::dump(w) + "\n").is_ok());
  std::vector<Value> rows;
  ASSERT_TRUE(json::parse_lines_file(lines, &rows).is_ok());
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(json::as_int(rows[1]["us"]), 12);

  Status s = json::parse_file(dir.file("missing.json"), &back);
  EXPECT_EQ(s.code(), Code::kIoError);
  EXPECT_NE(s.message().find("missing.json"), std::string::npos) << s.message();
  ASSERT_TRUE(io::write_file_atomic(dir.file("bad.json"), "{\n\"a\": tru\n}").is_ok());
  s = json::parse_file(dir.file("bad.json"), &back);
  EXPECT_EQ(s.code(), Code::kIoError);
  // nlohmann knows "tru" is no literal when it reads the newline after it.
  EXPECT_EQ(s.message().rfind(dir.file("bad.json") + ": line 2, column 9: ", 0), 0u) << s.message();
}

}  // namespace
}  // namespace mlakit
