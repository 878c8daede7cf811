// pattern, format and the number keywords through the matcher: exhaustive agreement with the
// reference validator on short documents, exact completion costs, JSON escapes inside patterned
// strings, the formats on hand-picked texts, and the compile-time refusals.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "exhaustive_check.h"

namespace cellserve::engine::grammar {
namespace {

namespace json = boost::json;
using testing::accepts;
using testing::check_exhaustively;
using testing::compile;
using testing::cost_after;
using testing::expect_agrees;

struct Case {
  const char* schema;
  const char* alphabet;
  size_t max_len;
  size_t max_string = 3;
  size_t max_digits = 3;
};

// Every number text of up to three digits, signed or not, with and without a fraction.
std::vector<std::string> number_texts() {
  std::vector<std::string> out;
  for (int i = -130; i <= 130; ++i) {
    out.push_back(std::to_string(i));
    for (const char* frac : {".5", ".25", ".0"}) out.push_back(std::to_string(i) + frac);
  }
  for (const char* t : {"-0", "-0.5", "0.75", "007", "1e1", "-", "1."}) out.push_back(t);
  return out;
}

class ValueKeywordsTest : public ::testing::TestWithParam<Case> {};

TEST_P(ValueKeywordsTest, AgreesWithTheValidator) {
  const Case& c = GetParam();
  const json::value schema = json::parse(c.schema);
  auto compiled = OutputConstraint::from_schema(schema);
  ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
  const auto stats = check_exhaustively(
      **compiled, schema,
      {.alphabet = c.alphabet, .max_len = c.max_len, .max_string = c.max_string, .max_digits = c.max_digits});
  EXPECT_GT(stats.documents, 0u);
  EXPECT_GT(stats.prefixes, 10u);
  // Candidates: numbers (the matcher writes no exponent and integers without a fraction, as
  // for integers with an integer multipleOf; those are left to the exhaustive direction above),
  // and short strings.
  const bool integer_steps =
      schema.as_object().contains("multipleOf") || std::string(c.schema).find("integer") != std::string::npos;
  for (const std::string& t : number_texts()) {
    if (t.find('e') != std::string::npos || (integer_steps && t.find('.') != std::string::npos)) continue;
    expect_agrees(**compiled, schema, t);
  }
  for (const char* t : {"\"\"", "\"a\"", "\"ab\"", "\"abc\"", "\"abd\"", "\"bd\"", "\"xx\"", "\"xab\"", "\"abcbcd\"",
                        "\"d\"", "\"ad\"", "\"acbd\"", "\"a b\"", "null"})
    expect_agrees(**compiled, schema, t);
}

INSTANTIATE_TEST_SUITE_P(
    Schemas, ValueKeywordsTest,
    ::testing::Values(
        // The mission's verdict.
        Case{R"({"type":"integer","minimum":1,"maximum":10})", "0123456789-", 4},
        Case{R"({"type":"integer","minimum":3,"maximum":127})", "0123456789-", 4},
        Case{R"({"type":"integer","exclusiveMinimum":-5,"exclusiveMaximum":12})", "0123456789-", 4},
        Case{R"({"type":"integer","minimum":0,"exclusiveMinimum":true,"maximum":30,"exclusiveMaximum":false})",
             "0123456789-", 3},
        Case{R"({"type":"integer","minimum":-7,"exclusiveMinimum":-3})", "0123456789-", 4, 3, 2},
        Case{R"({"type":"number","minimum":-1.5,"maximum":2.25})", "0123456789-.", 6, 3, 2},
        Case{R"({"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1})", "0123456789-.", 5, 3, 2},
        Case{R"({"type":"integer","multipleOf":7,"minimum":-20,"maximum":30})", "0123456789-", 4},
        Case{R"({"type":"number","multipleOf":4,"maximum":20})", "0123456789-.", 4, 3, 2},
        Case{R"({"type":"number","minimum":2,"maximum":4})", "0123456789-.", 4, 3, 1},
        Case{R"({"type":["integer","null"],"minimum":10,"maximum":99})", "0123456789-nul", 4},
        Case{R"({"type":"object","properties":{"risk":{"type":"integer","minimum":1,"maximum":5}},
               "required":["risk"]})",
             "{}\":,risk0123456789", 12, 4},
        Case{R"({"type":"array","items":{"type":"integer","minimum":-2,"maximum":2},"maxItems":3})", "[],0123-", 9, 3,
             1},
        Case{R"({"type":"string","pattern":"^a[bc]*d?$"})", "\"abcdx", 7, 5},
        Case{R"({"type":"string","pattern":"ab"})", "\"abc", 6, 4},
        Case{R"({"type":"string","pattern":"^[a-c]+$","minLength":2,"maxLength":3})", "\"abcd", 6, 4},
        Case{R"({"type":"string","pattern":"b|^x"})", "\"abx1", 5, 3, 1},
        Case{R"({"anyOf":[{"type":"integer","maximum":5},{"type":"string","pattern":"^x+$"}]})", "\"x0123456789-", 5, 3,
             2},
        Case{R"({"type":"object","additionalProperties":{"type":"string","pattern":"^[ab]$"},"maxProperties":1})",
             "{}\":,ab", 9, 1}));

TEST(ValueKeywords, ShortestCompletions) {
  auto risk = compile(R"({"type":"integer","minimum":10,"maximum":99})");
  ASSERT_NE(risk, nullptr);
  EXPECT_EQ(risk->root().min_cost, 2);
  EXPECT_EQ(cost_after(*risk, "1"), 1);
  EXPECT_EQ(cost_after(*risk, "10"), 0);
  EXPECT_EQ(cost_after(*risk, "100"), kInf);
  auto above = compile(R"({"type":"number","exclusiveMinimum":999.5})");
  ASSERT_NE(above, nullptr);
  EXPECT_EQ(above->root().min_cost, 4);  // 1000
  auto pattern = compile(R"({"type":"string","pattern":"^x{5}$"})");
  ASSERT_NE(pattern, nullptr);
  EXPECT_EQ(pattern->root().min_cost, 7);
  EXPECT_EQ(cost_after(*pattern, "\"xx"), 4);
}

TEST(ValueKeywords, EscapesFeedTheDecodedByte) {
  auto quote = compile(R"({"type":"string","pattern":"^a\"b\\\\c\nd/$"})");
  ASSERT_NE(quote, nullptr);
  // a " b \ c newline d /: the quote, the backslash and the newline take two bytes each.
  EXPECT_EQ(quote->root().min_cost, 2 + 8 + 3);
  EXPECT_TRUE(accepts(*quote, R"("a\"b\\c\nd/")"));
  EXPECT_TRUE(accepts(*quote, R"("a\"b\\c\nd\/")"));
  EXPECT_EQ(cost_after(*quote, R"("a\)"), 1 + 9);
  EXPECT_FALSE(accepts(*quote, R"("a\u0022b\\c\nd/")"));  // \u escapes are not taken here
  EXPECT_FALSE(testing::accepts_prefix(*quote, R"("a\n)"));
  // A control character without a short escape can never be written: the state after it is dead.
  auto control = compile(R"({"type":"string","pattern":"^(a|\u0001b)$"})");
  ASSERT_NE(control, nullptr);
  EXPECT_EQ(control->root().min_cost, 3);
  EXPECT_FALSE(testing::accepts_prefix(*control, "\"\\u"));
  // Multi-byte characters step the automaton byte by byte.
  auto accents = compile(R"({"type":"string","pattern":"^é+$","maxLength":2})");
  ASSERT_NE(accents, nullptr);
  EXPECT_TRUE(accepts(*accents, "\"éé\""));
  EXPECT_FALSE(accepts(*accents, "\"ééé\""));
  EXPECT_EQ(cost_after(*accents, "\"\xC3"), 2);
}

TEST(ValueKeywords, Formats) {
  struct FormatCase {
    const char* format;
    std::vector<const char*> texts;
  };
  const std::vector<FormatCase> cases = {
      {"date", {"2026-12-02", "2026-13-01", "2026-00-10", "2026-02-31", "2026-1-01", "20261202", "2026-12-32"}},
      {"time", {"23:59:60Z", "24:00:00Z", "12:30:00+02:00", "12:30:00.125z", "12:30:00", "12:30:00+2:00", "1:00:00Z"}},
      {"date-time", {"2026-12-02T21:30:00Z", "2026-12-02t21:30:00.5-05:30", "2026-12-02 21:30:00Z", "2026-12-02T"}},
      {"uuid",
       {"123e4567-e89b-12d3-a456-426614174000", "123E4567-E89B-12D3-A456-426614174000", "123e4567e89b12d3",
        "123e4567-e89b-12d3-a456-42661417400g"}},
      {"email",
       {"a@b.co", "first.last+tag@mail.example.org", "a..b@c.de", ".a@b.cd", "a@b", "a@-b.cd", "a@b-.cd", "a@b.c-d.ef",
        "a b@c.de", "@b.cd"}},
      {"ipv4", {"127.0.0.1", "255.255.255.255", "256.1.1.1", "01.2.3.4", "1.2.3", "1.2.3.4.5", "0.0.0.0"}},
      {"ipv6",
       {"::", "::1", "fe80::1", "2001:db8::8a2e:370:7334", "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8:9", "::ffff:192.168.0.1",
        "1::2::3", "12345::", "1:2:3:4:5:6:7::", "g::1"}},
  };
  for (const auto& fc : cases) {
    const json::value schema = json::parse(std::string(R"({"type":"string","format":")") + fc.format + "\"}");
    auto c = OutputConstraint::from_schema(schema);
    ASSERT_TRUE(c.ok()) << fc.format << ": " << c.status().to_string();
    size_t valid = 0;
    for (const char* t : fc.texts) {
      const std::string text = json::serialize(json::string(t));
      expect_agrees(**c, schema, text);
      valid += accepts(**c, text);
    }
    EXPECT_GT(valid, 0u) << fc.format;
    EXPECT_LT(valid, fc.texts.size()) << fc.format;
  }
  // An unknown format is an annotation: any string.
  auto unknown = compile(R"({"type":"string","format":"hostname"})");
  ASSERT_NE(unknown, nullptr);
  EXPECT_TRUE(accepts(*unknown, "\"not a host name!\""));
  // A known format implies the string type; with a type that has no strings it changes nothing.
  auto implied = compile(R"({"format":"date"})");
  ASSERT_NE(implied, nullptr);
  EXPECT_FALSE(accepts(*implied, "1"));
  EXPECT_TRUE(accepts(*implied, "\"2026-01-01\""));
  auto number = compile(R"({"minimum":2})");
  ASSERT_NE(number, nullptr);
  EXPECT_FALSE(accepts(*number, "\"a\""));
  EXPECT_TRUE(accepts(*number, "2.5"));
  auto integer = compile(R"({"type":"integer","format":"date"})");
  ASSERT_NE(integer, nullptr);
  EXPECT_TRUE(accepts(*integer, "12"));
}

TEST(ValueKeywords, Refusals) {
  struct Refusal {
    const char* schema;
    StatusCode code;
    const char* names;
  };
  for (const Refusal& r : {
           Refusal{R"({"type":"number","multipleOf":0.5})", StatusCode::Unimplemented, "'multipleOf'"},
           Refusal{R"({"type":"integer","multipleOf":0})", StatusCode::InvalidArgument, "'multipleOf'"},
           Refusal{R"({"type":"integer","minimum":"1"})", StatusCode::InvalidArgument, "'minimum'"},
           Refusal{R"({"type":"integer","minimum":5,"maximum":1})", StatusCode::InvalidArgument, "no number"},
           Refusal{R"({"type":"integer","minimum":1.2,"maximum":1.8})", StatusCode::InvalidArgument, "no number"},
           Refusal{R"({"type":"string","pattern":"(a)\\1"})", StatusCode::Unimplemented, "'pattern'"},
           Refusal{R"j({"type":"string","pattern":"(?=a)"})j", StatusCode::Unimplemented, "'pattern'"},
           Refusal{R"({"type":"string","pattern":"[a-"})", StatusCode::InvalidArgument, "'pattern'"},
           Refusal{R"({"type":"string","pattern":3})", StatusCode::InvalidArgument, "'pattern'"},
           Refusal{R"({"type":"string","format":1})", StatusCode::InvalidArgument, "'format'"},
           Refusal{R"({"enum":["a","b"],"pattern":"a"})", StatusCode::Unimplemented, "'pattern'"},
           Refusal{R"({"enum":[1,2],"maximum":1})", StatusCode::Unimplemented, "'maximum'"},
           Refusal{R"({"type":"string","pattern":"^a$","minLength":2})", StatusCode::InvalidArgument, "admits no"},
       }) {
    auto c = OutputConstraint::from_schema(json::parse(r.schema));
    ASSERT_FALSE(c.ok()) << r.schema;
    EXPECT_EQ(c.status().code(), r.code) << r.schema << ": " << c.status().to_string();
    EXPECT_NE(c.status().message().find(r.names), std::string::npos) << r.schema << ": " << c.status().to_string();
  }
  // The error names the subschema.
  const char* nested_schema = R"j({"properties":{"x":{"pattern":"(a)\\1"}}})j";
  auto nested = OutputConstraint::from_schema(json::parse(nested_schema));
  ASSERT_FALSE(nested.ok());
  EXPECT_NE(nested.status().message().find("#/properties/x"), std::string::npos) << nested.status().to_string();
}

TEST(ValueKeywords, AutomataLimits) {
  GrammarLimits limits;
  limits.max_schema_automata = 3;
  json::object props;
  for (int i = 0; i < 3; ++i)
    props["p" + std::to_string(i)] = {{"type", "string"}, {"pattern", "^a{" + std::to_string(i + 1) + "}$"}};
  props["same"] = {{"type", "string"}, {"pattern", "^a{1}$"}};  // equal to p0: built once
  json::object schema = {{"type", "object"}, {"properties", props}};
  EXPECT_TRUE(OutputConstraint::from_schema(schema, limits).ok());
  props["n"] = {{"type", "integer"}, {"maximum", 3}};
  schema["properties"] = props;
  auto over = OutputConstraint::from_schema(schema, limits);
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.status().message().find("max_schema_automata"), std::string::npos) << over.status().to_string();
  GrammarLimits small;
  small.max_automaton_transitions = 64;
  auto big = OutputConstraint::from_schema(json::parse(R"({"type":"string","pattern":"^[a-z]{40}$"})"), small);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("max_automaton_transitions"), std::string::npos) << big.status().to_string();
}

TEST(ValueKeywords, RegexDocument) {
  auto risk = OutputConstraint::from_regex("RISK_LEVEL: [1-9]");
  ASSERT_TRUE(risk.ok()) << risk.status().to_string();
  EXPECT_EQ((*risk)->root().min_cost, 13);
  EXPECT_TRUE(accepts(**risk, "RISK_LEVEL: 5"));
  EXPECT_FALSE(accepts(**risk, "RISK_LEVEL: 0"));
  EXPECT_FALSE(testing::accepts_prefix(**risk, "RISK_LEVEL: 55"));
  EXPECT_EQ(cost_after(**risk, "RISK"), 9);
  auto digits = OutputConstraint::from_regex("[0-9]+(\\.[0-9]+)?");
  ASSERT_TRUE(digits.ok());
  EXPECT_TRUE(accepts(**digits, "12"));
  EXPECT_EQ(cost_after(**digits, "12."), 1);
  for (const char* bad : {"(", "a{2,1}", "\\1", "[^\\s\\S]"}) {
    auto c = OutputConstraint::from_regex(bad);
    EXPECT_FALSE(c.ok()) << bad;
    if (!c.ok()) {
      EXPECT_NE(c.status().message().find("regex"), std::string::npos) << c.status().to_string();
    }
  }
}

}  // namespace
}  // namespace cellserve::engine::grammar
