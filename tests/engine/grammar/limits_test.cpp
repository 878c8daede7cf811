// GrammarLimits at compile time: each limit refuses a schema with a message that names it and
// its value, and identical subschemas (anyOf branches above all) compile to one node.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include <boost/json.hpp>

#include "engine/grammar/matcher.h"
#include "engine/grammar/output_constraint.h"
#include "grammar_test_util.h"

namespace cellserve::engine::grammar {
namespace {

namespace json = boost::json;

// {"<keyword>": [branch(0), ..., branch(n - 1)]}
std::string alternatives(size_t n, const std::function<std::string(size_t)>& branch, const char* keyword = "anyOf") {
  std::string s = std::string(R"({")") + keyword + R"(":[)";
  for (size_t i = 0; i < n; ++i) s += (i > 0 ? "," : "") + branch(i);
  return s + "]}";
}
std::string plain_string(size_t) { return R"({"type":"string"})"; }
std::string string_up_to(size_t i) { return R"({"type":"string","maxLength":)" + std::to_string(1000 + i) + "}"; }

Status compile_status(const std::string& text, const GrammarLimits& limits = {}) {
  auto c = OutputConstraint::from_schema(json::parse(text), limits);
  return c.ok() ? Status::ok_status() : c.status();
}

// Expects `text` refused under `limits`, the message naming `limit` and `value`.
void expect_refused(const std::string& text, const GrammarLimits& limits, const std::string& limit, size_t value) {
  const Status s = compile_status(text, limits);
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument) << s.to_string();
  EXPECT_NE(s.message().find("the limit (" + limit + ") is " + std::to_string(value)), std::string::npos)
      << s.message();
}

TEST(GrammarLimits, SchemaBytes) {
  GrammarLimits limits;
  limits.max_schema_bytes = 100;
  const std::string text = alternatives(10, string_up_to);
  ASSERT_EQ(text.size(), 361u);
  expect_refused(text, limits, "max_schema_bytes", 100);
  EXPECT_NE(compile_status(text, limits).message().find("the schema is 361 bytes"), std::string::npos);
  // Whitespace does not count: the size is the compact JSON.
  limits.max_schema_bytes = 361;
  EXPECT_TRUE(compile_status(R"({ "anyOf" : [ )" + text.substr(10), limits).ok());
}

TEST(GrammarLimits, SchemaNodes) {
  GrammarLimits limits;
  limits.max_schema_nodes = 10;
  std::string props;
  for (int i = 0; i < 20; ++i) props += (i > 0 ? "," : "") + std::string(R"("p)") + std::to_string(i) + R"(":{})";
  expect_refused(R"({"type":"object","properties":{)" + props + "}}", limits, "max_schema_nodes", 10);
}

TEST(GrammarLimits, SchemaDepthCountsRefs) {
  // A chain of 200 definitions, each an array of the next: JSON nesting stays shallow, the
  // compiler's recursion would not.
  std::string defs;
  for (int i = 0; i < 200; ++i) {
    defs += (i > 0 ? "," : "") + std::string(R"("d)") + std::to_string(i) + R"(":)" +
            (i + 1 < 200 ? R"({"type":"array","items":{"$ref":"#/$defs/d)" + std::to_string(i + 1) + R"("}})"
                         : R"({"type":"string"})");
  }
  const std::string text = R"({"$defs":{)" + defs + R"(},"$ref":"#/$defs/d0"})";
  expect_refused(text, GrammarLimits{}, "max_schema_depth", 128);
  GrammarLimits deep;
  deep.max_schema_depth = 1000;
  EXPECT_TRUE(compile_status(text, deep).ok());
}

TEST(GrammarLimits, DistinctBranches) {
  const std::string text = alternatives(2000, string_up_to);
  expect_refused(text, GrammarLimits{}, "max_branches", 256);
  EXPECT_NE(compile_status(text).message().find("#/anyOf: more than 256 distinct branches"), std::string::npos)
      << compile_status(text).message();
  expect_refused(alternatives(300, string_up_to, "oneOf"), GrammarLimits{}, "max_branches", 256);
  EXPECT_TRUE(compile_status(alternatives(256, string_up_to)).ok());
}

TEST(GrammarLimits, BranchesCountAfterFlattening) {
  // Two anyOfs of 200 within one: one byte may fork all 400.
  const std::string low = alternatives(200, string_up_to);
  const std::string high = alternatives(200, [](size_t i) { return string_up_to(200 + i); });
  EXPECT_TRUE(compile_status(low).ok());
  expect_refused(R"({"anyOf":[)" + low + "," + high + "]}", GrammarLimits{}, "max_branches", 256);
  // The same through $refs.
  expect_refused(R"({"$defs":{"low":)" + low + R"(,"high":)" + high +
                     R"(},"anyOf":[{"$ref":"#/$defs/low"},{"$ref":"#/$defs/high"}]})",
                 GrammarLimits{}, "max_branches", 256);
}

TEST(GrammarLimits, EnumValues) {
  std::string values;
  for (int i = 0; i < 2000; ++i) values += (i > 0 ? "," : "") + std::to_string(i);
  const std::string text = R"({"enum":[)" + values + "]}";
  expect_refused(text, GrammarLimits{}, "max_enum_values", 1024);
  EXPECT_NE(compile_status(text).message().find("'enum' has 2000 distinct values"), std::string::npos);
  std::string repeated;  // duplicates count once
  for (int i = 0; i < 2000; ++i) repeated += (i > 0 ? "," : "") + std::to_string(i % 3);
  EXPECT_TRUE(compile_status(R"({"enum":[)" + repeated + "]}").ok());
}

TEST(GrammarLimits, CompiledStatesCatchRefFanOut) {
  // 400 properties, each one more value or a 200-branch anyOf: 80,400 flattened alternatives,
  // though each count alone is within its limit.
  std::string props;
  for (int i = 0; i < 400; ++i) {
    props += (i > 0 ? "," : "") + std::string(R"("p)") + std::to_string(i) + R"(":{"anyOf":[{"const":)" +
             std::to_string(i) + R"(},{"$ref":"#/$defs/wide"}]})";
  }
  const std::string text =
      R"({"$defs":{"wide":)" + alternatives(200, string_up_to) + R"(},"type":"object","properties":{)" + props + "}}";
  expect_refused(text, GrammarLimits{}, "max_compiled_states", 65536);
  GrammarLimits roomy;
  roomy.max_compiled_states = 200'000;
  EXPECT_TRUE(compile_status(text, roomy).ok());
}

TEST(SchemaDedup, IdenticalBranchesAreOneAlternative) {
  auto c = testing::compile(alternatives(400, plain_string));
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->root().alts.size(), 1u);
  // 2,000 identical branches are within every limit: they are one.
  EXPECT_TRUE(compile_status(alternatives(2000, plain_string)).ok());
  EXPECT_TRUE(compile_status(alternatives(2000, plain_string, "oneOf")).ok());
}

TEST(SchemaDedup, AnnotationsDoNotMakeBranchesDistinct) {
  auto c = testing::compile(R"({"anyOf":[{"type":"string","description":"a"},{"title":"b","type":"string"},
                                         {"type":"string","maxLength":3}]})");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->root().alts.size(), 2u);
  EXPECT_TRUE(testing::accepts(*c, R"("abcdef")"));
}

TEST(SchemaDedup, IdenticalObjectsMergeDistinctOnesStay) {
  const char* person = R"({"type":"object","properties":{"name":{"type":"string"},"tags":{"type":"array",
                            "items":{"enum":["a","b"]}}},"required":["name"]})";
  auto same = testing::compile(std::string(R"({"anyOf":[)") + person + "," + person + "," + person + "]}");
  ASSERT_NE(same, nullptr);
  EXPECT_EQ(same->root().alts.size(), 1u);
  auto different = testing::compile(std::string(R"({"anyOf":[)") + person +
                                    R"(,{"type":"object","properties":{"name":{"type":"integer"}}}]})");
  ASSERT_NE(different, nullptr);
  EXPECT_EQ(different->root().alts.size(), 2u);
  EXPECT_TRUE(testing::accepts(*different, R"({"name":"x","tags":["a"]})"));
  EXPECT_TRUE(testing::accepts(*different, R"({"name":1})"));
  EXPECT_FALSE(testing::accepts(*different, R"({"name":"x","tags":["c"]})"));
}

// Regression (issue 19): 400 identical branches forked 400 matcher threads at the first byte,
// and every byte of every later mask stepped (and compared pairwise) all of them.
TEST(SchemaDedup, IdenticalBranchesForkOneThread) {
  auto c = testing::compile(alternatives(400, plain_string));
  ASSERT_NE(c, nullptr);
  ThreadSet state, scratch;
  initial_state(c->root(), state);
  ASSERT_TRUE(step_bytes(state, R"("ab)", scratch));
  EXPECT_EQ(state.size(), 1u);
}

TEST(SchemaDedup, RecursiveAliasCyclesStillFlatten) {
  // a and b reach each other through anyOf alone; both reach both leaves.
  auto c = testing::compile(R"({"$defs":{"a":{"anyOf":[{"$ref":"#/$defs/b"},{"type":"integer"}]},
                                         "b":{"anyOf":[{"$ref":"#/$defs/a"},{"type":"boolean"}]}},
                                "$ref":"#/$defs/a"})");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->root().alts.size(), 2u);
  EXPECT_TRUE(testing::accepts(*c, "12"));
  EXPECT_TRUE(testing::accepts(*c, "true"));
  EXPECT_FALSE(testing::accepts(*c, "null"));
}

}  // namespace
}  // namespace cellserve::engine::grammar
