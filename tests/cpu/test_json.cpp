// The JSON reader/writer: values, round trips, exact integers, escapes, error messages with line
// and column, JSON Lines, checked lookups, files.
#include <gtest/gtest.h>

#include "temp_dir.h"

#include <cmath>
#include <cstdlib>
#include <string>
#include <unistd.h>
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


TEST(Json, ParsesEveryType) {
  const Value v = parse_ok(R"( {"n": null, "t": true, "f": false, "i": -42, "d": 2.5e-3,
                              "s": "hi", "a": [1, [2], {}], "o": {"k": "v"}} )");
  ASSERT_TRUE(v.is_object());
  EXPECT_TRUE(v["n"].is_null());
  EXPECT_TRUE(v["t"].as_bool());
  EXPECT_TRUE(v["f"].is_bool());
  EXPECT_FALSE(v["f"].as_bool());
  EXPECT_TRUE(v["i"].is_integer());
  EXPECT_EQ(v["i"].as_int(), -42);
  EXPECT_DOUBLE_EQ(v["d"].as_double(), 2.5e-3);
  EXPECT_FALSE(v["d"].is_integer());
  EXPECT_EQ(v["s"].as_string(), "hi");
  EXPECT_EQ(v["a"].size(), 3u);
  EXPECT_EQ(v["a"][1][0].as_int(), 2);
  EXPECT_TRUE(v["a"][2].is_object());
  EXPECT_EQ(v["o"]["k"].as_string(), "v");
  EXPECT_TRUE(v["missing"].is_null());
  EXPECT_TRUE(v["a"][99].is_null());
  EXPECT_EQ(v.find("missing"), nullptr);
  EXPECT_TRUE(v.contains("n"));
}

TEST(Json, IntegersAreExact) {
  const Value v = parse_ok("[9007199254740993, -9223372036854775808, 9223372036854775807, 5.0, 1e3, 18446744073709551616]");
  EXPECT_EQ(v[0].as_int(), 9007199254740993LL);  // 2^53 + 1: not representable as double
  EXPECT_EQ(v[1].as_int(), INT64_MIN);
  EXPECT_EQ(v[2].as_int(), INT64_MAX);
  EXPECT_TRUE(v[3].is_integer());
  EXPECT_EQ(v[3].as_int(), 5);
  EXPECT_EQ(v[4].as_int(), 1000);
  EXPECT_FALSE(v[5].is_integer());  // 2^64: beyond int64, held as a double
  EXPECT_DOUBLE_EQ(v[5].as_double(), 18446744073709551616.0);
  EXPECT_EQ(v.dump(), "[9007199254740993,-9223372036854775808,9223372036854775807,5,1000,18446744073709551616]");
}

TEST(Json, DoublesRoundTripShortest) {
  for (double d : {0.1, 0.1352337788608801, -1.5e-300, 6.02214076e23, 1.0 / 3.0}) {
    const std::string text = Value(d).dump();
    const Value back = parse_ok(text);
    EXPECT_EQ(back.as_double(), d) << text;
  }
  EXPECT_EQ(Value(0.1).dump(), "0.1");
  EXPECT_EQ(Value(2.0).dump(), "2");
}

TEST(Json, NonFiniteNumbers) {
  // Accepted on input (Python's json writes them), written as null (strict JSON).
  const Value v = parse_ok("[NaN, Infinity, -Infinity]");
  EXPECT_TRUE(std::isnan(v[0].as_double()));
  EXPECT_EQ(v[1].as_double(), HUGE_VAL);
  EXPECT_EQ(v[2].as_double(), -HUGE_VAL);
  EXPECT_EQ(v.dump(), "[null,null,null]");
}

TEST(Json, StringEscapesAndUnicode) {
  const Value v = parse_ok(R"(["a\"b\\c\/d\n\t\r\b\f", "\u00e9\u4e2d", "\ud83d\ude00", "caf\u00E9"])");
  EXPECT_EQ(v[0].as_string(), "a\"b\\c/d\n\t\r\b\f");
  EXPECT_EQ(v[1].as_string(), "\xc3\xa9\xe4\xb8\xad");
  EXPECT_EQ(v[2].as_string(), "\xf0\x9f\x98\x80");  // U+1F600 from a surrogate pair
  EXPECT_EQ(v[3].as_string(), "caf\xc3\xa9");
  const Value ctl(std::string("x\x01y\"\n"));
  EXPECT_EQ(ctl.dump(), R"("x\u0001y\"\n")");
  EXPECT_EQ(parse_ok(ctl.dump()), ctl);
}

TEST(Json, RoundTripCompactAndPretty) {
  const std::string text =
      R"({"definition":"dsa","workload":{"uuid":"0c23","axes":{"num_tokens":8,"num_pages":8462},)"
      R"("inputs":{"sm_scale":{"type":"scalar","value":0.1352337788608801},"q":{"type":"random"}}},)"
      R"("solution":null,"list":[true,false,[],{}],"e":"\u00e9"})";
  const Value v = parse_ok(text);
  EXPECT_EQ(v.dump(), std::string(text).replace(text.find("\\u00e9"), 6, "\xc3\xa9"));
  const std::string pretty = v.dump(2);
  EXPECT_NE(pretty.find("\n  \"workload\": {\n    \"uuid\": \"0c23\""), std::string::npos) << pretty;
  EXPECT_EQ(parse_ok(pretty), v);
  // Insertion order is kept.
  EXPECT_EQ(v.as_object()[0].first, "definition");
  EXPECT_EQ(v.as_object()[1].first, "workload");
}

TEST(Json, BuildAndEdit) {
  Value line = Value::object();
  line.set("key", "dsa_decode.v1_splitk.bf16").set("median_us", 12.5).set("T", 8).set("ok", true);
  line["shape"]["pages"] = 8462;   // operator[] creates nested objects
  line["samples"].push_back(1.5);  // and arrays
  line["samples"].push_back(2);
  line.set("T", 16);  // replaces in place
  EXPECT_EQ(line.dump(),
            R"({"key":"dsa_decode.v1_splitk.bf16","median_us":12.5,"T":16,"ok":true,"shape":{"pages":8462},)"
            R"("samples":[1.5,2]})");
  Value arr = Value::array();
  arr.push_back("x");
  arr[0] = Value(3);
  EXPECT_EQ(arr.dump(), "[3]");
  EXPECT_EQ(Value(int64_t(-7)).as_int(), -7);
  EXPECT_FALSE(Value(uint64_t(1) << 63).is_integer());  // beyond int64: a double
  EXPECT_EQ(Value(uint64_t(1) << 63).dump(), "9223372036854775808");
  EXPECT_NE(Value(1), Value("1"));
  EXPECT_EQ(Value(1), Value(1.0));
}

TEST(Json, RepeatedKeyKeepsTheLast) {
  const Value v = parse_ok(R"({"a": 1, "a": 2})");
  EXPECT_EQ(v["a"].as_int(), 2);
}

TEST(Json, ErrorsNameLineAndColumn) {
  EXPECT_EQ(parse_error("{\n  \"a\": 1,\n  \"b\" 2\n}"), "line 3, column 7: expected ':' after object key \"b\", got '2'");
  EXPECT_EQ(parse_error("[1, 2,]"), "line 1, column 7: expected a value, got ']'");
  EXPECT_EQ(parse_error("{\"a\": 1,}"), "line 1, column 9: expected a string key in object, got '}'");
  EXPECT_EQ(parse_error("[1 2]"), "line 1, column 4: expected ',' or ']' in array, got '2'");
  EXPECT_EQ(parse_error("{\"a\": 1"), "line 1, column 8: expected ',' or '}' in object, got end of input");
  EXPECT_EQ(parse_error("\"abc"), "line 1, column 5: unterminated string");
  EXPECT_EQ(parse_error("tru"), "line 1, column 1: expected a value, got 't'");
  EXPECT_EQ(parse_error("{} x"), "line 1, column 4: unexpected 'x' after the JSON value");
  EXPECT_EQ(parse_error(""), "line 1, column 1: unexpected end of input, expected a value");
  EXPECT_EQ(parse_error("-"), "line 1, column 2: expected a digit in number, got end of input");
  EXPECT_EQ(parse_error("1."), "line 1, column 3: expected a digit after '.', got end of input");
  EXPECT_EQ(parse_error("\"a\\x\""), "line 1, column 3: invalid escape '\\x' in string");
  EXPECT_EQ(parse_error("\"a\nb\""), "line 1, column 3: control character in string (escape it as \\u00XX)");
  EXPECT_EQ(parse_error("\"\\ud800\""), "line 1, column 8: lone high surrogate in \\u escape");
  EXPECT_EQ(parse_error("01"), "line 1, column 2: unexpected '1' after the JSON value");
  EXPECT_NE(parse_error(std::string(1000, '[')).find("nesting deeper than"), std::string::npos);
}

TEST(Json, Lines) {
  std::vector<Value> rows;
  ASSERT_TRUE(json::parse_lines("{\"a\":1}\n\n  \n[2]\r\n3", &rows).is_ok());
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0]["a"].as_int(), 1);
  EXPECT_EQ(rows[1][0].as_int(), 2);
  EXPECT_EQ(rows[2].as_int(), 3);
  const Status s = json::parse_lines("{\"a\":1}\n\n{\"b\":}\n", &rows);
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.message(), "line 3, column 6: expected a value, got '}'");
}

TEST(Json, CheckedLookups) {
  const Value v = parse_ok(R"({"axes": {"num_tokens": "8", "num_pages": 8462, "x": 1.5}, "name": "d"})");
  int64_t i = 0;
  Status s = json::get_int(v["axes"], "num_tokens", &i, "workload.axes");
  EXPECT_EQ(s.message(), "workload.axes.num_tokens: expected an integer, got string \"8\"");
  s = json::get_int(v["axes"], "num_heads", &i, "workload.axes");
  EXPECT_EQ(s.message(), "workload.axes: missing key \"num_heads\"");
  s = json::get_int(v["axes"], "x", &i, "workload.axes");
  EXPECT_EQ(s.message(), "workload.axes.x: expected an integer, got number 1.5");
  ASSERT_TRUE(json::get_int(v["axes"], "num_pages", &i, "workload.axes").is_ok());
  EXPECT_EQ(i, 8462);
  double d = 0;
  ASSERT_TRUE(json::get_number(v["axes"], "x", &d).is_ok());
  EXPECT_EQ(d, 1.5);
  std::string str;
  ASSERT_TRUE(json::get_string(v, "name", &str).is_ok());
  EXPECT_EQ(str, "d");
  s = json::get_string(v["name"], "k", &str, "definition.name");
  EXPECT_EQ(s.message(), "definition.name: expected an object, got string \"d\"");
  bool b = false;
  EXPECT_FALSE(json::get_bool(v, "name", &b).is_ok());
}

TEST(Json, Files) {
  const test::TempDir dir;
  const std::string path = dir.file("sub/cache.json");
  Value v = Value::object();
  v.set("kernel", "k").set("tiling", "s16n64x2m4").set("us", 11.25);
  ASSERT_TRUE(json::write_file(path, v).is_ok());
  Value back;
  ASSERT_TRUE(json::parse_file(path, &back).is_ok());
  EXPECT_EQ(back, v);

  const std::string lines = dir.file("bench.jsonl");
  ASSERT_TRUE(json::append_line(lines, v).is_ok());
  v.set("us", 12);
  ASSERT_TRUE(json::append_line(lines, v).is_ok());
  std::vector<Value> rows;
  ASSERT_TRUE(json::parse_lines_file(lines, &rows).is_ok());
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1]["us"].as_int(), 12);

  Status s = json::parse_file(dir.file("missing.json"), &back);
  EXPECT_EQ(s.code(), Code::kIoError);
  EXPECT_NE(s.message().find("missing.json"), std::string::npos) << s.message();
  ASSERT_TRUE(io::write_file_atomic(dir.file("bad.json"), "{\n\"a\": tru\n}").is_ok());
  s = json::parse_file(dir.file("bad.json"), &back);
  EXPECT_EQ(s.code(), Code::kIoError);
  EXPECT_EQ(s.message(), dir.file("bad.json") + ": line 2, column 6: expected a value, got 't'");
}

}  // namespace
}  // namespace mlakit
