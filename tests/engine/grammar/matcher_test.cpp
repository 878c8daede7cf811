// Byte-level matcher tests: which prefixes and documents each schema shape admits.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grammar_test_util.h"

namespace cellserve::engine::grammar {
namespace {

using testing::accepts;
using testing::accepts_prefix;
using testing::compile;
using testing::cost_after;

TEST(MatcherTest, AnyObject) {
  auto c = OutputConstraint::any_object();
  for (const char* ok : {"{}", "{\"a\":1}", "{ \"a\" : [1, 2.5e-3, true, null, \"x\"], \"b\": {\"c\": {}} }",
                         "{\"\\u00e9\\ud83d\\ude00\":\"\\n\\\"\"}", "{\n  \"k\": -0\n}"}) {
    EXPECT_TRUE(accepts(*c, ok)) << ok;
  }
  for (const char* bad : {" {}", "[]", "1", "\"a\"", "{} ", "{,}", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "{\"a\" 1}",
                          "{\"a\":01}", "{\"a\":1.}", "{\"a\":-}", "{\"a\":tru}", "{\"a\":\"\\x\"}",
                          "{\"a\":\"\\ude00\"}", "{\"a\":\"\\ud83d\"}", "{\"a\":\"\x01\"}", "{'a':1}"}) {
    EXPECT_FALSE(accepts(*c, bad)) << bad;
  }
  EXPECT_TRUE(accepts_prefix(*c, "{\"a\":\"\\ud83d"));
  EXPECT_FALSE(accepts_prefix(*c, "{\"a\":\"\\ud83d\\u00"));  // a high surrogate needs a low one
  EXPECT_FALSE(accepts_prefix(*c, "{\"a\":\"\\udc"));
  EXPECT_FALSE(accepts_prefix(*c, "{\"a\":{}}x"));
}

TEST(MatcherTest, Utf8SplitAcrossSteps) {
  auto c = compile(R"({"type":"string"})");
  const std::string euro = "\xE2\x82\xAC", emoji = "\xF0\x9F\x98\x80";
  EXPECT_TRUE(accepts(*c, "\"" + euro + emoji + "\""));
  EXPECT_TRUE(accepts_prefix(*c, "\"\xE2"));
  EXPECT_TRUE(accepts_prefix(*c, "\"\xE2\x82"));
  EXPECT_FALSE(accepts_prefix(*c, "\"\xE2\""));    // truncated sequence
  EXPECT_FALSE(accepts_prefix(*c, "\"\xE0\x80"));  // overlong
  EXPECT_FALSE(accepts_prefix(*c, "\"\xED\xA0"));  // UTF-16 surrogate
  EXPECT_FALSE(accepts_prefix(*c, "\"\xF4\x90"));  // above U+10FFFF
  EXPECT_FALSE(accepts_prefix(*c, "\"\xC0"));      // overlong lead
  EXPECT_FALSE(accepts_prefix(*c, "\"\x80"));      // stray continuation
  EXPECT_EQ(cost_after(*c, "\"\xF0\x9F"), 3);      // two continuation bytes and the quote
}

TEST(MatcherTest, Whitespace) {
  auto c = OutputConstraint::any_object();
  const std::string gap(kMaxWhitespace, ' ');
  EXPECT_TRUE(accepts(*c, "{" + gap + "\"a\"" + gap + ":" + gap + "1" + gap + "}"));
  EXPECT_FALSE(accepts_prefix(*c, "{" + gap + " "));
  EXPECT_FALSE(accepts_prefix(*c, " "));
  EXPECT_TRUE(accepts(*c, "{\r\n\t\"a\": 1}"));
}

TEST(MatcherTest, Numbers) {
  auto num = compile(R"({"type":"number"})");
  for (const char* ok : {"0", "-0", "12", "-3.25", "1e5", "1E+5", "2.5e-10", "0.0"})
    EXPECT_TRUE(accepts(*num, ok)) << ok;
  for (const char* bad : {"01", "-", "1.", ".5", "1e", "1e+", "+1", "--1", "0x1", "1.2.3", "NaN"})
    EXPECT_FALSE(accepts(*num, bad)) << bad;
  auto integer = compile(R"({"type":"integer"})");
  EXPECT_TRUE(accepts(*integer, "-42"));
  EXPECT_FALSE(accepts_prefix(*integer, "4.")) << "integers have no fraction";
  EXPECT_FALSE(accepts_prefix(*integer, "4e"));
  EXPECT_TRUE(accepts(*num, "1e-999"));
  EXPECT_FALSE(accepts_prefix(*num, "1e1000"));  // at most three exponent digits
  EXPECT_EQ(cost_after(*num, "-"), 1);
  EXPECT_EQ(cost_after(*num, "1"), 0);
  EXPECT_EQ(cost_after(*num, "1.5e"), 1);
}

TEST(MatcherTest, ObjectPropertiesInOrder) {
  auto c = compile(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"},
                        "c":{"type":"boolean"}},"required":["b"]})");
  EXPECT_TRUE(accepts(*c, R"({"b":"x"})"));
  EXPECT_TRUE(accepts(*c, R"({"a":1,"b":"x"})"));
  EXPECT_TRUE(accepts(*c, R"({"a":1,"b":"x","c":true})"));
  EXPECT_TRUE(accepts(*c, R"({"b":"x","c":false})"));
  EXPECT_FALSE(accepts(*c, R"({})"));  // b is required
  EXPECT_FALSE(accepts(*c, R"({"a":1})"));
  EXPECT_FALSE(accepts_prefix(*c, R"({"c")"));          // c cannot skip the required b
  EXPECT_FALSE(accepts_prefix(*c, R"({"b":"x","a")"));  // declared order
  EXPECT_FALSE(accepts_prefix(*c, R"({"d")"));          // no additional properties
  EXPECT_FALSE(accepts_prefix(*c, R"({"a":"x")"));      // a's type
  EXPECT_FALSE(accepts_prefix(*c, R"({"b":"x","b")"));  // no repeats
  EXPECT_EQ(cost_after(*c, "{"), std::string(R"("b":"")").size() + 1);
  EXPECT_EQ(cost_after(*c, "{\""), std::string(R"(b":"")").size() + 1);
}

TEST(MatcherTest, AdditionalProperties) {
  auto c = compile(R"({"type":"object","properties":{"id":{"type":"integer"}},"required":["id"],
                        "additionalProperties":{"type":"boolean"}})");
  EXPECT_TRUE(accepts(*c, R"({"id":1,"x":true,"y":false})"));
  EXPECT_FALSE(accepts_prefix(*c, R"({"x")"));  // id first: it is required
  EXPECT_FALSE(accepts(*c, R"({"id":1,"x":1})"));
  EXPECT_FALSE(accepts(*c, R"({"id":1,"id":true})"));  // a listed key is never a free key
  EXPECT_TRUE(accepts(*c, R"({"id":1,"idx":true})"));
  EXPECT_FALSE(accepts_prefix(*c, R"({"id":1,"\u)"));  // free keys have no escapes here
  auto none = compile(R"({"type":"object","additionalProperties":false})");
  EXPECT_TRUE(accepts(*none, "{}"));
  EXPECT_FALSE(accepts_prefix(*none, "{\""));
  auto strings = compile(R"({"type":"object","additionalProperties":{"type":"string"}})");
  EXPECT_TRUE(accepts(*strings, R"({"\u0041":"b","":""})"));
  EXPECT_FALSE(accepts(*strings, R"({"a":1})"));
}

TEST(MatcherTest, ArraysAndTuples) {
  auto c = compile(R"({"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":3})");
  EXPECT_TRUE(accepts(*c, "[1,2]"));
  EXPECT_TRUE(accepts(*c, "[ 1 , 2 , 3 ]"));
  EXPECT_FALSE(accepts(*c, "[1]"));
  EXPECT_FALSE(accepts_prefix(*c, "[1,2,3,"));
  EXPECT_FALSE(accepts_prefix(*c, "[1]"));
  EXPECT_EQ(cost_after(*c, "["), 4);  // 1,1]
  auto tuple = compile(R"({"type":"array","prefixItems":[{"type":"string"},{"type":"null"}],"items":false})");
  EXPECT_TRUE(accepts(*tuple, "[]"));
  EXPECT_TRUE(accepts(*tuple, R"(["a",null])"));
  EXPECT_FALSE(accepts_prefix(*tuple, R"(["a",null,)"));
  EXPECT_FALSE(accepts_prefix(*tuple, R"([null)"));
}

TEST(MatcherTest, StringLength) {
  auto c = compile(R"({"type":"string","minLength":2,"maxLength":3})");
  EXPECT_TRUE(accepts(*c, "\"ab\""));
  EXPECT_TRUE(accepts(*c, "\"a\\n\xC3\xA9\""));     // escapes and multi-byte characters count once
  EXPECT_TRUE(accepts(*c, "\"\\ud83d\\ude00x\""));  // a surrogate pair is one character
  EXPECT_FALSE(accepts(*c, "\"a\""));
  EXPECT_FALSE(accepts_prefix(*c, "\"abcd"));
  EXPECT_EQ(cost_after(*c, "\""), 3);
}

TEST(MatcherTest, EnumAndConst) {
  auto c = compile(R"({"enum":["red","green",1,10,null,{"a":[1]}]})");
  for (const char* ok : {"\"red\"", "\"green\"", "1", "10", "null", "{\"a\":[1]}"}) EXPECT_TRUE(accepts(*c, ok)) << ok;
  for (const char* bad : {"\"re\"", "\"blue\"", "100", "2", "true", "{\"a\": [1]}"})
    EXPECT_FALSE(accepts(*c, bad)) << bad;
  auto k = compile(R"({"const":"x"})");
  EXPECT_TRUE(accepts(*k, "\"x\""));
  EXPECT_FALSE(accepts(*k, "\"y\""));
  auto typed = compile(R"({"type":"string","enum":["a",1]})");  // 1 is not a string
  EXPECT_FALSE(accepts(*typed, "1"));
  auto in_object = compile(R"({"type":"object","properties":{"n":{"enum":[1,12]}},"required":["n"]})");
  EXPECT_TRUE(accepts(*in_object, R"({"n":1})"));
  EXPECT_TRUE(accepts(*in_object, R"({"n":12 })"));
  EXPECT_FALSE(accepts(*in_object, R"({"n":123})"));
}

TEST(MatcherTest, AnyOfForksAndJoins) {
  auto c = compile(R"({"anyOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},
                                 {"type":"object","properties":{"b":{"type":"string"}},"required":["b"]},
                                 {"type":"null"}]})");
  EXPECT_TRUE(accepts(*c, R"({"a":1})"));
  EXPECT_TRUE(accepts(*c, R"({"b":"x"})"));
  EXPECT_TRUE(accepts(*c, "null"));
  EXPECT_FALSE(accepts(*c, R"({"a":"x"})"));
  EXPECT_FALSE(accepts(*c, R"({"b":1})"));
  EXPECT_EQ(cost_after(*c, "{"), 6);  // "a":1}
  auto nums = compile(R"({"type":"array","items":{"oneOf":[{"type":"integer"},{"type":"number"}]}})");
  EXPECT_TRUE(accepts(*nums, "[1,2.5,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20]"));
}

TEST(MatcherTest, RecursiveRef) {
  auto c = compile(R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},
      "kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"]}},"$ref":"#/$defs/node"})");
  EXPECT_TRUE(accepts(*c, R"({"v":1,"kids":[{"v":2},{"v":3,"kids":[{"v":4,"kids":[]}]}]})"));
  EXPECT_FALSE(accepts(*c, R"({"v":1,"kids":[{}]})"));
  auto list = compile(R"({"definitions":{"l":{"anyOf":[{"type":"null"},{"type":"array","prefixItems":[
      {"type":"integer"},{"$ref":"#/definitions/l"}],"items":false,"minItems":2}]}},"$ref":"#/definitions/l"})");
  EXPECT_TRUE(accepts(*list, "[1,[2,[3,null]]]"));
  EXPECT_FALSE(accepts(*list, "[1,[2]]"));
  EXPECT_EQ(cost_after(*list, "[1,[2,[3,"), 7);  // null]]]
  auto cycle = compile(R"({"$defs":{"a":{"anyOf":[{"$ref":"#/$defs/a"},{"type":"null"}]}},"$ref":"#/$defs/a"})");
  EXPECT_TRUE(accepts(*cycle, "null"));
  EXPECT_FALSE(accepts_prefix(*cycle, "1"));
  auto root = compile(R"({"type":"array","items":{"$ref":"#"}})");
  EXPECT_TRUE(accepts(*root, "[[],[[]]]"));
}

TEST(MatcherTest, EmptySchemaIsAnyValue) {
  auto c = compile("{}");
  for (const char* ok : {"1", "\"s\"", "[1,{}]", "{\"a\":null}", "true", "null"}) EXPECT_TRUE(accepts(*c, ok)) << ok;
  auto t = compile("true");
  EXPECT_TRUE(accepts(*t, "false"));
}

}  // namespace
}  // namespace cellserve::engine::grammar
