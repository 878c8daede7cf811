#include "server/autotune.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "server/autotune_cache.h"

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

// With the spec's [workload], every candidate is judged by that work: a request's time at the
// workload's prompt length (read in chunks, up to the probe), its answer, and the slots by the
// objective among 1, 2 and 4 for four requests at once.
TEST(Autotune, AWorkloadJudgesThreadsChunksKvAndSlotsByItsOwnWork) {
  CS_REQUIRE_TESTDATA();
  auto model = engine::load_model(testing::testdata_path("models/qwen3-tiny-f32.gguf"));
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  AutotuneOptions o;
  o.threads = {1, 2};
  o.prefill_chunks = {16, 64};
  o.workload = AutotuneWorkload{300, 8, 4, /*latency=*/false};
  o.parallels = {1, 2, 4};
  o.kv_types = {engine::GgmlType::F16, engine::GgmlType::Q8_0};
  o.max_probe_tokens = 128;
  o.max_seconds = 600;  // every candidate is measured
  std::vector<std::string> lines;
  auto r = autotune(*model, o, [&](const std::string& line) { lines.push_back(line); });
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(r->threads == 1 || r->threads == 2);
  EXPECT_TRUE(r->prefill_chunk == 16 || r->prefill_chunk == 64);
  EXPECT_TRUE(r->parallel == 1 || r->parallel == 2 || r->parallel == 4);
  EXPECT_TRUE(r->kv_type == engine::GgmlType::F16 || r->kv_type == engine::GgmlType::Q8_0);
  EXPECT_GT(r->workload_seconds, 0);
  EXPECT_GT(r->prompt_tok_s, 0);
  EXPECT_GT(r->decode_tok_s, 0);
  EXPECT_EQ(r->report.at("workload").at("prompt_tokens").as_int64(), 300);
  EXPECT_EQ(r->report.at("workload").at("probe_tokens").as_int64(), 128);
  EXPECT_EQ(r->report.at("threads").as_array().size(), 2u);
  EXPECT_EQ(r->report.at("prefill_chunk").as_array().size(), 2u);
  EXPECT_EQ(r->report.at("kv_type").as_array().size(), 2u);
  const auto& slots = r->report.at("parallel").as_array();
  ASSERT_EQ(slots.size(), 3u);
  // The chosen slot count is the one whose objective was lowest.
  double lowest = 1e300;
  int64_t lowest_at = 0;
  for (const auto& row : slots) {
    EXPECT_GT(row.at("request_seconds").as_double(), 0);
    if (row.at("objective_seconds").as_double() < lowest) {
      lowest = row.at("objective_seconds").as_double();
      lowest_at = row.at("parallel").as_int64();
    }
  }
  EXPECT_EQ(r->parallel, lowest_at);
  EXPECT_EQ(lines.size(), 2u + 2u + 2u + 3u + 1u);  // one per measurement, then the choice
}

TEST(Autotune, AWorkloadNeedsAPromptAnAnswerAndAConcurrency) {
  CS_REQUIRE_TESTDATA();
  auto model = engine::load_model(testing::testdata_path("models/qwen3-tiny-f32.gguf"));
  ASSERT_TRUE(model.ok());
  AutotuneOptions o;
  o.threads = {1};
  o.workload = AutotuneWorkload{100, 0, 1, false};
  EXPECT_EQ(autotune(*model, o, [](const std::string&) {}).status().code(), StatusCode::InvalidArgument);
  o.workload = AutotuneWorkload{100, 4, 1, false};
  o.parallels = {0, 2};
  EXPECT_EQ(autotune(*model, o, [](const std::string&) {}).status().code(), StatusCode::InvalidArgument);
}

// The kept choice is reused only for its own key, and a damaged file is ignored.
TEST(AutotuneCache, KeepsAChoiceForItsKeyOnly) {
  const std::string dir = ::testing::TempDir() + "autotune_cache_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/choice.json";
  AutotuneResult r;
  r.threads = 3;
  r.prefill_chunk = 64;
  r.parallel = 2;
  r.kv_type = engine::GgmlType::Q8_0;
  r.prompt_tok_s = 812.5;
  r.decode_tok_s = 41;
  r.report = boost::json::object{{"seconds", 1.5}};
  EXPECT_FALSE(read_autotune_cache(path, "model a").has_value()) << "no file yet";
  ASSERT_TRUE(write_autotune_cache(path, "model a", r).ok());
  const auto back = read_autotune_cache(path, "model a");
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->threads, 3);
  EXPECT_EQ(back->prefill_chunk, 64);
  EXPECT_EQ(back->parallel, 2);
  EXPECT_EQ(back->kv_type, engine::GgmlType::Q8_0);
  EXPECT_EQ(back->prompt_tok_s, 812.5);
  EXPECT_EQ(back->report.at("seconds").as_double(), 1.5);
  EXPECT_FALSE(read_autotune_cache(path, "model b").has_value()) << "another model or device measures again";
  EXPECT_FALSE(read_autotune_cache("", "model a").has_value());
  std::ofstream(path, std::ios::trunc)
      << R"({"key":"model a","threads":-4,"prefill_chunk":64,"parallel":2,"kv_type":"f16"})";
  EXPECT_FALSE(read_autotune_cache(path, "model a").has_value()) << "a value out of bounds";
  std::ofstream(path, std::ios::trunc) << "not json";
  EXPECT_FALSE(read_autotune_cache(path, "model a").has_value());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace cellserve::server
