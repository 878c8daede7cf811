// detect_format on the real chat templates and on the markers alone; format_name.
#include <gtest/gtest.h>

#include <set>

#include "server/tool_calls/tool_call_format.h"
#include "tests/server/tool_calls/tool_call_test_util.h"

namespace cellserve::server::tool_calls {
namespace {

using testing::read_file;
using testing::templates_dir;

TEST(DetectFormat, EveryTemplateOfTheTestdata) {
  CS_REQUIRE_TEMPLATES();
  const std::map<std::string, ToolCallFormat> expected = {
      {"Qwen-Qwen2.5-7B-Instruct.jinja", ToolCallFormat::Hermes},
      {"Qwen-Qwen3-0.6B.jinja", ToolCallFormat::Hermes},
      {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", ToolCallFormat::Hermes},
      {"Qwen3-Coder.jinja", ToolCallFormat::QwenXml},
      {"Qwen3.5-4B.jinja", ToolCallFormat::QwenXml},
      {"meta-llama-Llama-3.1-8B-Instruct.jinja", ToolCallFormat::Llama3Json},
      {"meta-llama-Llama-3.2-3B-Instruct.jinja", ToolCallFormat::Llama3Json},
      {"mistralai-Mistral-Nemo-Instruct-2407.jinja", ToolCallFormat::MistralNemo},
      {"Mistral-Small-3.2-24B-Instruct-2506.jinja", ToolCallFormat::MistralSmall},
      {"ibm-granite-granite-3.3-2B-Instruct.jinja", ToolCallFormat::Granite},
      {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", ToolCallFormat::DeepSeekR1},
      {"google-gemma-2-2b-it.jinja", ToolCallFormat::None},
      {"microsoft-Phi-3.5-mini-instruct.jinja", ToolCallFormat::None},
      // This SmolLM3 template (Unsloth's edit) renders neither tools nor tool calls.
      {"HuggingFaceTB-SmolLM3-3B.jinja", ToolCallFormat::None},
  };
  std::size_t seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(templates_dir())) {
    if (entry.path().extension() != ".jinja") continue;
    const std::string name = entry.path().filename().string();
    SCOPED_TRACE(name);
    auto it = expected.find(name);
    ASSERT_NE(it, expected.end()) << "a template this test does not know: add its expected format";
    EXPECT_EQ(format_name(detect_format(read_file(entry.path()))), format_name(it->second));
    ++seen;
  }
  EXPECT_EQ(seen, expected.size());
}

TEST(DetectFormat, FromMarkersAlone) {
  EXPECT_EQ(detect_format("{{ '<tool_call>\\n' + tool_call.arguments | tojson }}"), ToolCallFormat::Hermes);
  EXPECT_EQ(detect_format("<tool_call>\n<function=x>\n<parameter=y>"), ToolCallFormat::QwenXml);
  EXPECT_EQ(detect_format("[TOOL_CALLS][{{ x }}]"), ToolCallFormat::MistralNemo);
  EXPECT_EQ(detect_format("[TOOL_CALLS]{{ name }}[ARGS]{{ args }}"), ToolCallFormat::MistralSmall);
  EXPECT_EQ(detect_format("respond with <|tool_call|> and a list"), ToolCallFormat::Granite);
  EXPECT_EQ(detect_format("<｜tool▁calls▁begin｜>"), ToolCallFormat::DeepSeekR1);
  EXPECT_EQ(detect_format("<|python_tag|>"), ToolCallFormat::Llama3Json);
  EXPECT_EQ(detect_format("<|start_header_id|>system<|end_header_id|>Environment: ipython"),
            ToolCallFormat::Llama3Json);
  EXPECT_EQ(detect_format("<|start_header_id|>user<|end_header_id|>{{ m.content }}"), ToolCallFormat::None);
  EXPECT_EQ(detect_format("<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>"), ToolCallFormat::None);
  EXPECT_EQ(detect_format(""), ToolCallFormat::None);
}

TEST(FormatName, DistinctAndStable) {
  const ToolCallFormat all[] = {ToolCallFormat::None,       ToolCallFormat::Hermes,      ToolCallFormat::QwenXml,
                                ToolCallFormat::Llama3Json, ToolCallFormat::MistralNemo, ToolCallFormat::MistralSmall,
                                ToolCallFormat::Granite,    ToolCallFormat::DeepSeekR1};
  std::set<std::string_view> names;
  for (ToolCallFormat f : all) names.insert(format_name(f));
  EXPECT_EQ(names.size(), std::size(all));
  EXPECT_EQ(format_name(ToolCallFormat::QwenXml), "qwen-xml");
  EXPECT_EQ(format_name(ToolCallFormat::DeepSeekR1), "deepseek-r1");
}

}  // namespace
}  // namespace cellserve::server::tool_calls
