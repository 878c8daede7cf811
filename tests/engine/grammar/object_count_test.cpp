// minProperties and maxProperties: exhaustive agreement with the validator on short documents,
// exact completion costs, and the compile-time errors.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "exhaustive_check.h"

namespace cellserve::engine::grammar {
namespace {

namespace json = boost::json;
using testing::check_exhaustively;
using testing::expect_agrees;

// Every object over keys `keys` (each at most twice, any order) with values from `values`, up to
// `max_entries` entries.
std::vector<std::string> candidate_objects(const std::vector<std::string>& keys, const std::vector<std::string>& values,
                                           size_t max_entries) {
  std::vector<std::string> out = {"{}"};
  std::vector<std::string> frontier = {""};
  for (size_t n = 1; n <= max_entries; ++n) {
    std::vector<std::string> grown;
    for (const std::string& body : frontier) {
      for (const std::string& k : keys) {
        for (const std::string& v : values) {
          grown.push_back(body + (body.empty() ? "" : ",") + "\"" + k + "\":" + v);
          out.push_back("{" + grown.back() + "}");
        }
      }
    }
    frontier = std::move(grown);
  }
  return out;
}

struct Case {
  const char* schema;
  const char* alphabet;
  size_t max_len;
};

class ObjectCountTest : public ::testing::TestWithParam<Case> {};

TEST_P(ObjectCountTest, AgreesWithTheValidator) {
  const Case& c = GetParam();
  const json::value schema = json::parse(c.schema);
  auto compiled = OutputConstraint::from_schema(schema);
  ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
  const auto stats = check_exhaustively(**compiled, schema, {.alphabet = c.alphabet, .max_len = c.max_len});
  EXPECT_GT(stats.documents, 0u);
  EXPECT_GT(stats.prefixes, 15u);
  for (const std::string& text : candidate_objects({"a", "b", "c", "x"}, {"1", "true", "null"}, 3)) {
    if (testing::repeats_a_key(text)) continue;
    expect_agrees(**compiled, schema, text);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Schemas, ObjectCountTest,
    ::testing::Values(
        Case{R"({"type":"object","minProperties":2,"properties":{"a":{"type":"integer"},"b":{"type":"integer"},
               "c":{"type":"integer"}}})",
             "{}\":,abc1", 22},
        Case{R"({"type":"object","maxProperties":1,"properties":{"a":{"type":"integer"},"b":{"type":"integer"}}})",
             "{}\":,ab1", 20},
        Case{R"({"type":"object","minProperties":1,"maxProperties":2,"properties":{"a":{"type":"integer"},
               "b":{"type":"integer"},"c":{"type":"integer"}},"required":["c"]})",
             "{}\":,abc1", 22},
        // Free keys: the shortest is "" (or "a" when "" is listed); one of them counts.
        Case{R"({"type":"object","minProperties":1,"maxProperties":2,"additionalProperties":{"type":"integer"}})",
             "{}\":,x1", 14},
        Case{R"({"type":"object","minProperties":2,"properties":{"b":{"type":"integer"}},
               "additionalProperties":{"type":"integer"}})",
             "{}\":,b1", 18},
        Case{R"({"type":"object","minProperties":3,"properties":{"a":{"type":"integer"},"b":{"type":"integer"}},
               "required":["b"],"additionalProperties":{"type":"integer"}})",
             "{}\":,abx1", 20},
        Case{R"({"minProperties":1,"maxProperties":1})", "{}\":,a1", 10}));

TEST(ObjectCount, ShortestDocuments) {
  using testing::compile;
  using testing::cost_after;
  auto two = compile(R"({"type":"object","minProperties":2,"properties":{"long":{"type":"integer"},
      "a":{"type":"integer"},"b":{"type":"integer"}}})");
  ASSERT_NE(two, nullptr);
  EXPECT_EQ(two->root().min_cost, static_cast<int64_t>(std::string(R"({"a":0,"b":0})").size()));
  EXPECT_EQ(cost_after(*two, R"({"long":1)"), static_cast<int64_t>(std::string(R"(,"a":0})").size()));
  EXPECT_FALSE(testing::accepts(*two, R"({"long":1})"));
  EXPECT_TRUE(testing::accepts(*two, R"({"long":1,"b":2})"));
  auto at_most = compile(R"({"type":"object","maxProperties":0,"additionalProperties":true})");
  ASSERT_NE(at_most, nullptr);
  EXPECT_TRUE(testing::accepts(*at_most, "{}"));
  EXPECT_FALSE(testing::accepts_prefix(*at_most, "{\""));
}

TEST(ObjectCount, CompileErrors) {
  for (const char* s : {R"({"type":"object","minProperties":3,"maxProperties":2})",
                        R"({"type":"object","properties":{"a":{},"b":{}},"required":["a","b"],"maxProperties":1})",
                        R"({"type":"object","properties":{"a":{}},"additionalProperties":false,"minProperties":2})"}) {
    auto c = OutputConstraint::from_schema(json::parse(s));
    ASSERT_FALSE(c.ok()) << s;
    EXPECT_EQ(c.status().code(), StatusCode::InvalidArgument) << s;
  }
  // Two free keys could repeat one key: refused, naming the keyword.
  auto free_keys = OutputConstraint::from_schema(json::parse(R"({"type":"object","minProperties":2})"));
  ASSERT_FALSE(free_keys.ok());
  EXPECT_EQ(free_keys.status().code(), StatusCode::Unimplemented);
  EXPECT_NE(free_keys.status().message().find("'minProperties'"), std::string::npos);
  auto negative = OutputConstraint::from_schema(json::parse(R"({"minProperties":-1})"));
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("minProperties"), std::string::npos);
}

}  // namespace
}  // namespace cellserve::engine::grammar
