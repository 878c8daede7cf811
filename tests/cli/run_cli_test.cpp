// `cellserve run` and `cellserve logits` as a user runs them.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "tests/engine/models/golden.h"
#include "tests/support/run_command.h"
#include "tests/support/testdata.h"

namespace cellserve {
namespace {

using testing::cellserve_command;
using testing::run_command;

std::string join(const std::vector<int32_t>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) out += (i ? "," : "") + std::to_string(ids[i]);
  return out;
}

TEST(RunCli, StoriesGreedyTextIsTheGoldenText) {
  CS_REQUIRE_TESTDATA();
  const auto g = testing::read_golden(testing::testdata_path("golden/stories260K.once-upon-a-time.json"));
  const std::string model = testing::testdata_path("models/stories260K.gguf");
  auto r =
      run_command(cellserve_command() + " run -m " + model + " -p 'Once upon a time' -n 64 --temp 0 -t 2 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, g.greedy_text + "\n");
}

TEST(RunCli, TokensInIdsOut) {
  CS_REQUIRE_TESTDATA();
  const auto g = testing::read_golden(testing::testdata_path("golden/stories260K.once-upon-a-time.json"));
  const std::string model = testing::testdata_path("models/stories260K.gguf");
  auto r = run_command(cellserve_command() + " run -m " + model + " --tokens " + join(g.prompt_tokens) +
                       " --ids -n 64 --temp 0 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, join(g.greedy_tokens) + "\n");
}

TEST(RunCli, ReportsSpeedOnTheLastLine) {
  CS_REQUIRE_TESTDATA();
  const std::string model = testing::testdata_path("models/stories260K.gguf");
  auto r = run_command(cellserve_command() + " run -m " + model + " -p 'Once' -n 4 --seed 3 2>&1 >/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("prompt: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tok/s); generation: "), std::string::npos) << r.out;
}

TEST(RunCli, BadArgumentsGiveOneLineAndNonZeroExit) {
  auto r = run_command(cellserve_command() + " run -m /nonexistent.gguf -p hi 2>&1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  EXPECT_NE(r.out.find("/nonexistent.gguf"), std::string::npos);
  if (testing::testdata_dir().empty()) return;
  const std::string model = testing::testdata_path("models/stories260K.gguf");
  for (const std::string args : {" -p hi --tokens 1,2", " --tokens 1,x", " -p hi --temp -1", " -p hi --top-p 0",
                                 " -p hi -c 0", " --tokens 99999"}) {
    r = run_command(cellserve_command() + " run -m " + model + args + " 2>&1");
    EXPECT_NE(r.exit_code, 0) << args;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << args << ": " << r.out;
  }
}

TEST(LogitsCli, JsonMatchesTheGolden) {
  CS_REQUIRE_TESTDATA();
  const auto g = testing::read_golden(testing::testdata_path("golden/qwen3-tiny-f32.json"));
  const std::string model = testing::testdata_path("models/qwen3-tiny-f32.gguf");
  auto r = run_command(cellserve_command() + " logits -m " + model + " --kv-type f32 --tokens " +
                       join(g.prompt_tokens) + " --top 10 --full-last --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto j = boost::json::parse(r.out).as_object();
  EXPECT_EQ(j.at("n_vocab").to_number<int64_t>(), g.n_vocab);
  const auto& positions = j.at("positions").as_array();
  ASSERT_EQ(positions.size(), g.prompt_tokens.size());
  for (size_t i = 0; i < positions.size(); ++i) {
    const auto& p = positions[i].as_object();
    EXPECT_EQ(p.at("ids").as_array()[0].to_number<int64_t>(), g.prompt_top[i].ids[0]) << i;
    EXPECT_NEAR(p.at("logits").as_array()[0].to_number<double>(), g.prompt_top[i].logits[0], 1e-3) << i;
  }
  const auto& last = j.at("last_logits").as_array();
  ASSERT_EQ(last.size(), g.last_prompt_logits.size());
  for (size_t v = 0; v < last.size(); ++v) EXPECT_NEAR(last[v].to_number<double>(), g.last_prompt_logits[v], 1e-3);

  r = run_command(cellserve_command() + " logits -m " + model + " --tokens 1,2,3 --top 3");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 3) << r.out;
}

}  // namespace
}  // namespace cellserve

namespace cellserve {
namespace {

// --lora on `run`: the adapted model's greedy tokens are the llama.cpp golden's; a bad adapter
// is one line and a non-zero exit.
TEST(RunCli, LoraAdapterGivesTheGoldenTokens) {
  CS_REQUIRE_TESTDATA();
  const auto g = testing::read_golden(testing::testdata_path("golden/qwen3-tiny-f32+lora.json"));
  const std::string model = testing::testdata_path(g.model_file);
  const std::string adapter = testing::testdata_path(g.lora_file);
  std::string prompt;
  for (size_t i = 0; i < g.prompt_tokens.size(); ++i) prompt += (i ? "," : "") + std::to_string(g.prompt_tokens[i]);
  std::string greedy;
  for (size_t i = 0; i < g.greedy_tokens.size(); ++i) greedy += (i ? "," : "") + std::to_string(g.greedy_tokens[i]);
  const std::string common = " run -m " + model + " --tokens " + prompt + " --ids --temp 0 --kv-type f32 -n " +
                             std::to_string(g.greedy_tokens.size());
  auto r = testing::run_command(testing::cellserve_command() + common + " --lora " + adapter + ":" +
                                std::to_string(g.lora_scale) + " 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, greedy + "\n");
  r = testing::run_command(testing::cellserve_command() + common + " 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out, greedy + "\n") << "without the adapter the tokens differ";

  for (const std::string& bad : {model, adapter + ":x", std::string("/nonexistent-adapter.gguf"),
                                 testing::testdata_path("models/llama-tiny-f32.gguf")}) {
    r = testing::run_command(testing::cellserve_command() + common + " --lora " + bad + " 2>&1");
    EXPECT_NE(r.exit_code, 0) << bad;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  }
}

}  // namespace
}  // namespace cellserve
