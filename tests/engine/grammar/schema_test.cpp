// Schema compilation: errors for malformed schemas and for keywords outside the subset.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "engine/grammar/output_constraint.h"

namespace cellserve::engine::grammar {
namespace {

Status compile_status(std::string_view text) {
  auto c = OutputConstraint::from_schema(boost::json::parse(text));
  return c.ok() ? Status::ok_status() : c.status();
}

TEST(SchemaTest, Unsupported) {
  for (const char* kw : {"patternProperties", "not", "if", "uniqueItems", "contains", "propertyNames"}) {
    const std::string text = std::string(R"({"type":"string",")") + kw + R"(":1})";
    const Status s = compile_status(text);
    EXPECT_EQ(s.code(), StatusCode::Unimplemented) << text;
    EXPECT_NE(s.message().find(std::string("'") + kw + "'"), std::string::npos) << s.message();
  }
  EXPECT_EQ(compile_status(R"({"allOf":[{"type":"object"},{"type":"object"}]})").code(), StatusCode::Unimplemented);
  EXPECT_EQ(compile_status(R"({"$ref":"http://example.com/x"})").code(), StatusCode::Unimplemented);
  EXPECT_EQ(compile_status(R"({"type":"object","properties":{"a":{"type":"integer","not":{}}}})").code(),
            StatusCode::Unimplemented);
  // Keywords of another type than the schema's change nothing (JSON Schema): a string's minimum.
  EXPECT_TRUE(compile_status(R"({"type":"string","minimum":1,"multipleOf":0.5})").ok());
  EXPECT_TRUE(compile_status(R"({"type":"array","uniqueItems":false})").ok());
  EXPECT_TRUE(compile_status(R"({"allOf":[{"type":"object"}]})").ok());
}

TEST(SchemaTest, Malformed) {
  for (const char* text :
       {"1", "\"object\"", "[]", "null", R"({"type":"objekt"})", R"({"type":3})", R"({"properties":[]})",
        R"({"required":"a"})", R"({"required":[1]})", R"({"minLength":-1})", R"({"maxItems":"3"})", R"({"enum":"a"})",
        R"({"anyOf":[]})", R"({"anyOf":{}})", R"({"$ref":"#/$defs/missing"})", R"({"$ref":1})",
        R"({"additionalProperties":1})", R"({"items":[1]})", R"({"properties":{"a":3}})"}) {
    EXPECT_EQ(compile_status(text).code(), StatusCode::InvalidArgument) << text;
  }
}

TEST(SchemaTest, Unsatisfiable) {
  for (const char* text :
       {"false", R"({"enum":[]})", R"({"type":"string","enum":[1]})",
        R"({"type":"string","minLength":3,"maxLength":2})",
        R"({"type":"object","properties":{"a":false},"required":["a"]})",
        R"({"$defs":{"x":{"type":"array","items":{"$ref":"#/$defs/x"},"minItems":1}},"$ref":"#/$defs/x"})"}) {
    EXPECT_EQ(compile_status(text).code(), StatusCode::InvalidArgument) << text;
  }
}

TEST(SchemaTest, IgnoredAnnotations) {
  EXPECT_TRUE(compile_status(R"({"$schema":"https://json-schema.org/draft/2020-12/schema","title":"t",
      "description":"d","type":"object","properties":{"when":{"type":"string","format":"date-time",
      "default":"x","examples":["y"]}},"x-custom":1})")
                  .ok());
}

}  // namespace
}  // namespace cellserve::engine::grammar
