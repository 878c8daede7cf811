// Batch output lines keep what `cellserve verify --batch-output` needs: the device's signature
// record, and its exact bytes whenever the parsed body would not reproduce them.
#include "fleet/batch/batch_json.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace cellserve::fleet {
namespace {

namespace json = boost::json;

json::object response_of(const std::string& line) { return json::parse(line).as_object().at("response").as_object(); }

TEST(BatchResultLine, KeepsTheSignatureAndTheExactBytesOnlyWhenNeeded) {
  const std::string record = R"({"v":1,"device":"ab"})";
  // Compact JSON as the device wrote it: the body alone reproduces the signed bytes.
  const std::string compact = R"({"choices":[{"index":0}],"n":1})";
  json::object r = response_of(batch_result_line("c1", 200, compact, record));
  EXPECT_EQ(json::serialize(r.at("body")), compact);
  EXPECT_EQ(json::serialize(r.at("cellserve_signature")), record);
  EXPECT_FALSE(r.contains("cellserve_body"));
  // Spaces (or any other spelling) the parse would lose: the bytes are kept as a string.
  const std::string spaced = R"({"choices": [{"index": 0}]})";
  r = response_of(batch_result_line("c2", 200, spaced, record));
  EXPECT_EQ(r.at("cellserve_body").as_string(), spaced);
  EXPECT_EQ(json::serialize(r.at("body")), json::serialize(batch_body_value(spaced)));
  // Not JSON: the body is the text, and the bytes are kept.
  r = response_of(batch_result_line("c3", 200, "plain text", record));
  EXPECT_EQ(r.at("body").as_string(), "plain text");
  EXPECT_EQ(r.at("cellserve_body").as_string(), "plain text");
  // No record (an unsigned answer), or one that is not a JSON object: nothing is added.
  for (const std::string& none : {std::string(), std::string("not json"), std::string("[1]")}) {
    r = response_of(batch_result_line("c4", 200, spaced, none));
    EXPECT_FALSE(r.contains("cellserve_signature")) << none;
    EXPECT_FALSE(r.contains("cellserve_body")) << none;
  }
}

}  // namespace
}  // namespace cellserve::fleet
