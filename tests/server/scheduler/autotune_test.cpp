#include "server/autotune.h"

#include <gtest/gtest.h>

#include "tests/support/testdata.h"

namespace cellserve::server {
namespace {

TEST(Autotune, MeasuresEveryCandidateAndKeepsOne) {
  CS_REQUIRE_TESTDATA();
  auto model = engine::load_model(testing::testdata_path("models/qwen3-tiny-f32.gguf"));
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  AutotuneOptions o;
  o.threads = {1, 2};
  o.prefill_chunks = {8, 16, 32};
  std::vector<std::string> lines;
  auto r = autotune(*model, o, [&](const std::string& line) { lines.push_back(line); });
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(r->threads == 1 || r->threads == 2);
  EXPECT_TRUE(r->prefill_chunk == 8 || r->prefill_chunk == 16 || r->prefill_chunk == 32);
  EXPECT_EQ(r->report.at("threads").as_array().size(), 2u);
  EXPECT_EQ(r->report.at("prefill_chunk").as_array().size(), 3u);
  for (const auto& row : r->report.at("threads").as_array()) {
    EXPECT_GT(row.at("generation_tok_s").as_double(), 0);
    EXPECT_GT(row.at("prompt_tok_s").as_double(), 0);
  }
  EXPECT_EQ(lines.size(), 6u);  // one per measurement, then the choice
}

TEST(Autotune, RejectsBadCandidates) {
  CS_REQUIRE_TESTDATA();
  auto model = engine::load_model(testing::testdata_path("models/qwen3-tiny-f32.gguf"));
  ASSERT_TRUE(model.ok());
  AutotuneOptions o;
  o.threads = {0};
  EXPECT_EQ(autotune(*model, o, [](const std::string&) {}).status().code(), StatusCode::InvalidArgument);
  o.threads = {1};
  o.prefill_chunks = {};
  EXPECT_EQ(autotune(*model, o, [](const std::string&) {}).status().code(), StatusCode::InvalidArgument);
}

}  // namespace
}  // namespace cellserve::server
