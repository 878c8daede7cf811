// `cellserve chat` driven through a pipe: the rendered, tokenized prompt is exactly llama.cpp's
// (the golden prompt tokens), and a second turn follows.
#include <gtest/gtest.h>

#include "tests/engine/models/golden.h"
#include "tests/support/run_command.h"
#include "tests/support/testdata.h"

namespace cellserve {
namespace {

using testing::cellserve_command;
using testing::run_command;

std::string prompt_line(const std::vector<int32_t>& ids) {
  std::string out = "[prompt tokens:";
  for (int32_t id : ids) out += " " + std::to_string(id);
  return out + "]";
}

TEST(ChatCli, FirstTurnPromptIsTheGoldenPromptAndASecondTurnFollows) {
  CS_REQUIRE_TESTDATA();
  for (const std::string name : {"qwen3-tiny-f32", "qwen35-tiny-f32"}) {
    const auto g = testing::read_golden(testing::testdata_path("golden/" + name + ".json"));
    const std::string model = testing::testdata_path("models/" + name + ".gguf");
    auto r = run_command("printf 'What is the capital of France? Answer in one word.\\nAnd of Spain?\\n' | " +
                         cellserve_command() + " chat -m " + model +
                         " --system 'You are a helpful assistant.' --temp 0 -n 8 --verbose 2>&1");
    if (r.out.find("architecture 'qwen35' is not supported") != std::string::npos) continue;
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find(prompt_line(g.prompt_tokens)), std::string::npos) << name << ": " << r.out;
    // A second turn is rendered and answered (templates may re-render history, so its tokens
    // need not extend the first prompt's).
    const size_t second = r.out.find("[prompt tokens:", r.out.find(prompt_line(g.prompt_tokens)) + 1);
    EXPECT_NE(second, std::string::npos) << name << ": " << r.out;
  }
}

TEST(ChatCli, AModelWithoutATemplateChatsWithChatmlOrTheChosenOne) {
  CS_REQUIRE_TESTDATA();
  const std::string model = testing::testdata_path("models/stories260K.gguf");
  auto r =
      run_command("echo 'Once upon a time' | " + cellserve_command() + " chat -m " + model + " --temp 0 -n 4 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("cellserve chat: the model has no chat template; using the built-in chatml"), std::string::npos)
      << r.out;
  r = run_command("echo hi | " + cellserve_command() + " chat -m " + model +
                  " --chat-template mistral --temp 0 -n 2 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("cellserve chat: chat template: the built-in mistral (--chat-template)"), std::string::npos)
      << r.out;
  // The golden prompt of qwen3-tiny also comes out of the built-in qwen3.
  const auto g = testing::read_golden(testing::testdata_path("golden/qwen3-tiny-f32.json"));
  r = run_command("echo 'What is the capital of France? Answer in one word.' | " + cellserve_command() + " chat -m " +
                  testing::testdata_path("models/qwen3-tiny-f32.gguf") +
                  " --chat-template qwen3 --system 'You are a helpful assistant.' --temp 0 -n 2 --verbose 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find(prompt_line(g.prompt_tokens)), std::string::npos) << r.out;
}

TEST(ChatCli, BadOptionsFailWithOneLine) {
  CS_REQUIRE_TESTDATA();
  const std::string model = testing::testdata_path("models/qwen3-tiny-f32.gguf");
  auto r = run_command("echo hi | " + cellserve_command() + " chat -m " + model + " --var novalue 2>&1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("expected KEY=JSON"), std::string::npos) << r.out;
  r = run_command("echo hi | " + cellserve_command() + " chat -m " + model + " -n 0 2>&1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  r = run_command("echo hi | " + cellserve_command() + " chat -m " + model + " --chat-template vicuna 2>&1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  EXPECT_NE(r.out.find("chatml, llama3, mistral, qwen3"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace cellserve
