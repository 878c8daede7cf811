// Every parser on text the real chat templates render: a conversation whose last assistant message
// carries one or two tool calls is rendered with cs_chat, the assistant turn is cut out of the
// rendering (what the model would have generated), and parse_tool_calls must give back the
// template's input: the same names, the same arguments as JSON values, the same content.
#include <gtest/gtest.h>

#include "engine/chat/chat_template.h"
#include "server/tool_calls/tool_call_format.h"
#include "server/tool_calls/tool_call_parser.h"
#include "tests/server/tool_calls/rendered_turns.h"
#include "tests/server/tool_calls/tool_call_test_util.h"

namespace cellserve::server::tool_calls {
namespace {

namespace json = boost::json;
using engine::chat::ChatTemplate;
using testing::arguments_json;
using testing::assistant_turn;
using testing::read_file;
using testing::template_case_name;
using testing::template_cases;
using testing::TemplateCase;
using testing::templates_dir;
using testing::visible_content;

json::object tool_call(const std::string& id, const std::string& name, const char* arguments) {
  return testing::openai_tool_call(id, name, arguments);
}

// Arguments of every JSON type, strings with quotes, newlines, non-ASCII, and strings that only
// look like other types.
const char* const kWeatherArguments = R"({"city": "Paris \"Rive Gauche\"\nsecond line — ünïcødé 😀",
  "days": 3, "metric": true, "options": {"hourly": false, "levels": [1, 2.5, null]}, "tags": ["a", "b c"],
  "zip": "75001", "flag": "True"})";
const char* const kSearchArguments = R"({"query": "tool calls", "limit": 10, "ratio": -0.25, "note": null,
  "empty": "", "padded": "\nindented\n", "nested": {"deep": {"deeper": [[], {}]}}})";

std::vector<ToolSpec> tool_specs() {
  return {
      {"get_weather", json::parse(R"({"type": "object", "properties": {"city": {"type": "string"},
          "days": {"type": "integer"}, "metric": {"type": "boolean"}, "options": {"type": "object"},
          "tags": {"type": "array", "items": {"type": "string"}}, "zip": {"type": "string"},
          "flag": {"type": "string"}}, "required": ["city"]})")},
      {"search", json::parse(R"({"type": "object", "properties": {"query": {"type": "string"},
          "limit": {"type": "integer"}, "ratio": {"type": "number"}, "note": {"description": "any type"},
          "empty": {"type": "string"}, "padded": {"type": "string"}, "nested": {"type": "object"}}})")},
  };
}

json::array openai_tools() {
  json::array tools;
  for (const ToolSpec& spec : tool_specs()) {
    tools.push_back(json::object{
        {"type", "function"},
        {"function",
         json::object{{"name", spec.name}, {"description", "Test tool"}, {"parameters", spec.parameters}}}});
  }
  return tools;
}

void expect_calls(const ParsedMessage& parsed, const std::vector<std::pair<std::string, const char*>>& expected) {
  ASSERT_EQ(parsed.tool_calls.size(), expected.size()) << "content: " << parsed.content;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(parsed.tool_calls[i].name, expected[i].first);
    EXPECT_EQ(arguments_json(parsed.tool_calls[i].arguments), json::parse(expected[i].second))
        << parsed.tool_calls[i].arguments;
    EXPECT_TRUE(testing::is_compact_json(parsed.tool_calls[i].arguments)) << parsed.tool_calls[i].arguments;
  }
}

class RenderedCalls : public ::testing::TestWithParam<TemplateCase> {
 protected:
  void SetUp() override {
    if (templates_dir().empty()) return;
    auto parsed = ChatTemplate::parse(read_file(templates_dir() / GetParam().file));
    ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
    tmpl_.emplace(std::move(parsed).value());
    EXPECT_EQ(detect_format(read_file(templates_dir() / GetParam().file)), GetParam().format);
  }
  std::optional<ChatTemplate> tmpl_;
};

TEST_P(RenderedCalls, OneCall) {
  CS_REQUIRE_TEMPLATES();
  const TemplateCase& c = GetParam();
  json::object assistant = {{"role", "assistant"},
                            {"content", ""},
                            {"tool_calls", json::array{tool_call("abcDEF123", "get_weather", kWeatherArguments)}}};
  auto turn = assistant_turn(c, *tmpl_, assistant, openai_tools());
  ASSERT_TRUE(turn.ok()) << turn.status().to_string();
  const ParsedMessage parsed = parse_tool_calls(c.format, *turn, tool_specs());
  SCOPED_TRACE(*turn);
  expect_calls(parsed, {{"get_weather", kWeatherArguments}});
  EXPECT_EQ(visible_content(parsed.content), "");
  if (c.format == ToolCallFormat::MistralSmall) {
    EXPECT_EQ(parsed.tool_calls[0].id, "abcDEF123");
  }
}

TEST_P(RenderedCalls, TwoCallsAndContent) {
  CS_REQUIRE_TEMPLATES();
  const TemplateCase& c = GetParam();
  json::object assistant = {{"role", "assistant"},
                            {"content", "Let me check."},
                            {"tool_calls", json::array{tool_call("abcDEF123", "get_weather", kWeatherArguments),
                                                       tool_call("xyz789ABC", "search", kSearchArguments)}}};
  auto turn = assistant_turn(c, *tmpl_, assistant, openai_tools());
  if (c.one_call_per_message) {
    ASSERT_FALSE(turn.ok());
    EXPECT_EQ(turn.status().message(), "This model only supports single tool-calls at once!");
    return;
  }
  ASSERT_TRUE(turn.ok()) << turn.status().to_string();
  SCOPED_TRACE(*turn);
  const ParsedMessage parsed = parse_tool_calls(c.format, *turn, tool_specs());
  expect_calls(parsed, {{"get_weather", kWeatherArguments}, {"search", kSearchArguments}});
  EXPECT_EQ(visible_content(parsed.content), c.renders_content ? "Let me check." : "");
  for (const ToolCall& call : parsed.tool_calls) {
    const bool mistral = c.format == ToolCallFormat::MistralNemo || c.format == ToolCallFormat::MistralSmall;
    EXPECT_TRUE(testing::is_generated_id(call.id) || c.format == ToolCallFormat::MistralSmall) << call.id;
    EXPECT_EQ(call.id.size(), mistral ? 9u : 29u) << call.id;
  }
  if (c.format == ToolCallFormat::MistralSmall) {
    EXPECT_EQ(parsed.tool_calls[1].id, "xyz789ABC");
  }
}

// The same turn, parsed in random pieces by ToolCallStream.
TEST_P(RenderedCalls, StreamedInPieces) {
  CS_REQUIRE_TEMPLATES();
  const TemplateCase& c = GetParam();
  json::array calls = {tool_call("abcDEF123", "get_weather", kWeatherArguments)};
  if (!c.one_call_per_message) calls.push_back(tool_call("xyz789ABC", "search", kSearchArguments));
  auto turn = assistant_turn(c, *tmpl_, {{"role", "assistant"}, {"content", "Let me check."}, {"tool_calls", calls}},
                             openai_tools());
  ASSERT_TRUE(turn.ok()) << turn.status().to_string();
  const ParsedMessage whole = parse_tool_calls(c.format, *turn, tool_specs());
  ASSERT_EQ(whole.tool_calls.size(), calls.size());
  std::mt19937 rng(7);
  for (int round = 0; round < 20; ++round) {
    ToolCallStream stream(c.format, tool_specs());
    testing::expect_same_message(whole, testing::stream_in_pieces(stream, testing::random_split(*turn, rng, 9)));
    EXPECT_EQ(stream.cut_call_count(), 0u);
  }
}

std::string case_name(const ::testing::TestParamInfo<TemplateCase>& info) { return template_case_name(info.param); }

INSTANTIATE_TEST_SUITE_P(Templates, RenderedCalls, ::testing::ValuesIn(template_cases()), case_name);

// Llama 3.1's builtin tools render as <|python_tag|>NAME.call(k="v").
TEST(RenderedCallsLlama31, BuiltinToolPythonTag) {
  CS_REQUIRE_TEMPLATES();
  auto tmpl = ChatTemplate::parse(read_file(templates_dir() / "meta-llama-Llama-3.1-8B-Instruct.jinja"));
  ASSERT_TRUE(tmpl.ok());
  const TemplateCase c = {
      "", ToolCallFormat::Llama3Json, "<|start_header_id|>assistant<|end_header_id|>\n\n", "<|eom_id|>", false, true};
  // Quotes stay (the template does not escape them); only '", ' or '")' would end the value early.
  const char* arguments = R"({"query": "weather \"Paris\" today — ünï"})";
  auto turn = assistant_turn(
      c, *tmpl,
      {{"role", "assistant"}, {"content", ""}, {"tool_calls", json::array{tool_call("c1", "brave_search", arguments)}}},
      openai_tools(), {{"builtin_tools", json::array{"brave_search", "wolfram_alpha"}}});
  ASSERT_TRUE(turn.ok()) << turn.status().to_string();
  EXPECT_EQ(turn->rfind("<|python_tag|>brave_search.call(", 0), 0u) << *turn;
  const ParsedMessage parsed = parse_tool_calls(ToolCallFormat::Llama3Json, *turn, {"brave_search"});
  expect_calls(parsed, {{"brave_search", arguments}});
  EXPECT_EQ(parsed.content, "");
}

}  // namespace
}  // namespace cellserve::server::tool_calls
