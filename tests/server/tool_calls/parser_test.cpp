// parse_tool_calls on hand-written answers: every format's markup with content around it and
// several calls, the variants models write, and output that must stay content (truncated,
// malformed, unknown tools, hostile).
#include <gtest/gtest.h>

#include <set>

#include "server/tool_calls/tool_call_parser.h"
#include "tests/server/tool_calls/tool_call_test_util.h"

namespace cellserve::server::tool_calls {
namespace {

namespace json = boost::json;
using testing::arguments_json;

const std::vector<std::string> kTools = {"get_weather", "search", "get_time"};

ParsedMessage parse(ToolCallFormat format, std::string_view text) { return parse_tool_calls(format, text, kTools); }

// The single call of `m`, as {"name": ..., "arguments": <JSON>}.
json::value only_call(const ParsedMessage& m) {
  EXPECT_EQ(m.tool_calls.size(), 1u) << m.content;
  if (m.tool_calls.size() != 1) return nullptr;
  return json::object{{"name", m.tool_calls[0].name}, {"arguments", arguments_json(m.tool_calls[0].arguments)}};
}

json::value call(const std::string& name, const char* arguments) {
  return json::object{{"name", name}, {"arguments", json::parse(arguments)}};
}

// Text that must come back unchanged, as content, with no call.
void expect_content_only(ToolCallFormat format, std::string_view text) {
  SCOPED_TRACE(std::string(text.substr(0, 200)));
  const ParsedMessage m = parse(format, text);
  EXPECT_TRUE(m.tool_calls.empty()) << m.tool_calls[0].name;
  EXPECT_EQ(m.content, text);
}

TEST(HermesParse, CallsBetweenContent) {
  const ParsedMessage m = parse(ToolCallFormat::Hermes,
                                "I'll look.\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                                "\"Paris\", \"n\": 1.50e+3}}\n</tool_call>\n<tool_call>\n{\"name\":\"search\","
                                "\"arguments\":{\"q\":[1, {\"a\" : null}]}}\n</tool_call>\nDone.");
  EXPECT_EQ(m.content, "I'll look.Done.");
  ASSERT_EQ(m.tool_calls.size(), 2u);
  EXPECT_EQ(m.tool_calls[0].name, "get_weather");
  EXPECT_EQ(m.tool_calls[0].arguments, R"({"city":"Paris","n":1.50e+3})");  // compact, the model's own number
  EXPECT_EQ(m.tool_calls[1].name, "search");
  EXPECT_EQ(m.tool_calls[1].arguments, R"({"q":[1,{"a":null}]})");
  EXPECT_NE(m.tool_calls[0].id, m.tool_calls[1].id);
  EXPECT_TRUE(testing::is_generated_id(m.tool_calls[0].id)) << m.tool_calls[0].id;
  EXPECT_EQ(m.tool_calls[0].id.size(), 29u);
}

TEST(HermesParse, ForgivesMissingClosings) {
  // No </tool_call> at the end of the answer; no '}' closing the call object.
  EXPECT_EQ(only_call(parse(ToolCallFormat::Hermes, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}")),
            call("get_time", "{}"));
  const ParsedMessage m =
      parse(ToolCallFormat::Hermes, "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": 1}\n</tool_call>");
  EXPECT_EQ(only_call(m), call("search", R"({"q": 1})"));
  EXPECT_EQ(m.content, "");
  // A known name and no arguments: a call without arguments.
  EXPECT_EQ(only_call(parse(ToolCallFormat::Hermes, "<tool_call>{\"name\": \"get_time\"}</tool_call>")),
            call("get_time", "{}"));
  // Members after the arguments are skipped.
  EXPECT_EQ(only_call(parse(ToolCallFormat::Hermes,
                            "<tool_call>{\"name\": \"get_time\", \"arguments\": {}, \"x\": [1, {}]}</tool_call>")),
            call("get_time", "{}"));
}

TEST(HermesParse, MalformedStaysContent) {
  for (const char* text : {
           "<tool_call>\n{\"name\": \"delete_all\", \"arguments\": {}}\n</tool_call>",        // unknown tool
           "<tool_call>\n{\"name\": \"get_time\", \"arguments\": \"{}\"}\n</tool_call>",      // arguments a string
           "<tool_call>\n{\"name\": \"get_time\", \"arguments\": [1]}\n</tool_call>",         // arguments an array
           "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": \"Par",                // truncated
           "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": Paris}}</tool_call>",  // not JSON
           "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": 1,}}</tool_call>",     // trailing comma
           "<tool_call>\n{\"arguments\": {}, \"name\": \"get_time\"}\n</tool_call>",          // name after arguments
           "<tool_call>\n{\"name\": \"get_time\", \"other\": 1, \"arguments\": {}}",          // unknown key first
           "<tool_call>\n{\"name\": \"get_\\u0074ime\", \"arguments\": {}}",                  // escaped name
           "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"a\": \"\\ud800\"}}",      // lone surrogate
           "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"a\": \"\xC3\x28\"}}",     // ill-formed UTF-8
           "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"a\": 01}}",               // leading zero
           "<tool_call>",
           "<tool_ca",
           "a <tool_call> b </tool_call> c",
       }) {
    expect_content_only(ToolCallFormat::Hermes, text);
  }
}

TEST(HermesParse, NestingIsBounded) {
  auto nested = [](int depth) {
    return "<tool_call>{\"name\": \"search\", \"arguments\": {\"q\": " + std::string(depth, '[') +
           std::string(depth, ']') + "}}</tool_call>";
  };
  EXPECT_EQ(parse(ToolCallFormat::Hermes, nested(60)).tool_calls.size(), 1u);
  expect_content_only(ToolCallFormat::Hermes, nested(64));      // 65 levels with the object
  expect_content_only(ToolCallFormat::Hermes, nested(200000));  // no recursion, no crash
}

TEST(QwenXmlParse, ValuesByWhatTheTemplateWrites) {
  const ParsedMessage m = parse(ToolCallFormat::QwenXml,
                                "Checking.\n\n<tool_call>\n<function=search>\n"
                                "<parameter=n>\n42\n</parameter>\n"
                                "<parameter=f>\n-0.5e3\n</parameter>\n"
                                "<parameter=yes>\nTrue\n</parameter>\n"
                                "<parameter=no>\nfalse\n</parameter>\n"
                                "<parameter=none>\nNone\n</parameter>\n"
                                "<parameter=obj>\n{\"a\": [1, 2], \"b\": {}}\n</parameter>\n"
                                "<parameter=text>\n3 apples\n</parameter>\n"
                                "<parameter=empty>\n\n</parameter>\n"
                                "<parameter=broken>\n[1, 2\n</parameter>\n"
                                "<parameter=spaced>\n 42\n</parameter>\n"
                                "<parameter=lines>\n\nline 1\n\nline \"2\" </param> x\n\n</parameter>\n"
                                "</function>\n</tool_call>");
  EXPECT_EQ(m.content, "Checking.");
  EXPECT_EQ(only_call(m), call("search", R"({"n": 42, "f": -0.5e3, "yes": true, "no": false, "none": null,
      "obj": {"a": [1, 2], "b": {}}, "text": "3 apples", "empty": "", "broken": "[1, 2", "spaced": " 42",
      "lines": "\nline 1\n\nline \"2\" </param> x\n"})"));
  EXPECT_EQ(m.tool_calls[0].arguments.substr(0, 24), R"({"n":42,"f":-0.5e3,"yes")");
}

TEST(QwenXmlParse, SchemaKeepsStringsStrings) {
  const std::string text =
      "<tool_call>\n<function=get_weather>\n<parameter=zip>\n75001\n</parameter>\n<parameter=days>\n3\n"
      "</parameter>\n<parameter=flag>\nTrue\n</parameter>\n</function>\n</tool_call>";
  EXPECT_EQ(only_call(parse(ToolCallFormat::QwenXml, text)),
            call("get_weather", R"({"zip": 75001, "days": 3, "flag": true})"));
  const std::vector<ToolSpec> specs = {
      {"get_weather", json::parse(R"({"type": "object", "properties": {"zip": {"type": "string"},
          "days": {"type": "integer"}, "flag": {"type": "string"}}})")}};
  EXPECT_EQ(only_call(parse_tool_calls(ToolCallFormat::QwenXml, text, specs)),
            call("get_weather", R"({"zip": "75001", "days": 3, "flag": "True"})"));
}

TEST(QwenXmlParse, TextValues) {
  // Ill-formed UTF-8 in a raw value becomes U+FFFD (the arguments stay valid JSON); long typed-looking
  // values are strings.
  const std::string long_array = "[" + std::string(20000, '1') + "]";
  const ParsedMessage m = parse(ToolCallFormat::QwenXml,
                                "<tool_call>\n<function=search>\n<parameter=q>\nab\xFF\xC3\n</parameter>\n"
                                "<parameter=big>\n" +
                                    long_array + "\n</parameter>\n</function>\n</tool_call>");
  EXPECT_EQ(only_call(m), json::value(json::object{
                              {"name", "search"},
                              {"arguments", json::object{{"q", "ab\xEF\xBF\xBD\xEF\xBF\xBD"}, {"big", long_array}}}}));
}

TEST(QwenXmlParse, TwoCallsAndForgivenEnd) {
  const ParsedMessage m = parse(ToolCallFormat::QwenXml,
                                "<tool_call>\n<function=get_time>\n</function>\n</tool_call>\n<tool_call>\n"
                                "<function=search>\n<parameter=q>\nx\n</parameter>\n</function>");
  ASSERT_EQ(m.tool_calls.size(), 2u);
  EXPECT_EQ(m.tool_calls[0].arguments, "{}");
  EXPECT_EQ(m.tool_calls[1].arguments, R"({"q":"x"})");
  EXPECT_EQ(m.content, "");
}

TEST(QwenXmlParse, MalformedStaysContent) {
  for (const char* text : {
           "<tool_call>\n<function=rm_rf>\n</function>\n</tool_call>",
           "<tool_call>\n<function=search>\n<parameter=q>\nunterminated",
           "<tool_call>\n<function=search>\n<parameter=q>\nx\n</parameter>\n",  // no </function>
           "<tool_call>\n<function=search>\n<parameter=q>\nx\n</parameter>\n<oops>",
           "<tool_call>\n<function=search>\n<parameter=>\nx\n</parameter>\n</function>",
           "<tool_call>\n<function=search>\n<parameter=a\nb>\nx\n</parameter>\n</function>",
           "<tool_call>\n<function=search",
           "<tool_call>{\"name\": \"search\", \"arguments\": {}}</tool_call>",  // Hermes markup
       }) {
    expect_content_only(ToolCallFormat::QwenXml, text);
  }
}

TEST(Llama3Parse, BareJsonAndPythonTag) {
  EXPECT_EQ(only_call(parse(ToolCallFormat::Llama3Json, R"({"name": "get_weather", "parameters": {"city": "Oslo"}})")),
            call("get_weather", R"({"city": "Oslo"})"));
  EXPECT_EQ(only_call(parse(ToolCallFormat::Llama3Json,
                            R"({"type": "function", "name": "search", "arguments": {"q": [true]}})")),
            call("search", R"({"q": [true]})"));
  EXPECT_EQ(only_call(parse(ToolCallFormat::Llama3Json, R"(<|python_tag|>{"name": "get_time", "parameters": {}})")),
            call("get_time", "{}"));
  EXPECT_EQ(only_call(parse(ToolCallFormat::Llama3Json, R"(<|python_tag|>search.call(q="a "b"", lang = "en"))")),
            call("search", R"({"q": "a \"b\"", "lang": "en"})"));
  const ParsedMessage two = parse(ToolCallFormat::Llama3Json,
                                  "{\"name\": \"get_time\", \"parameters\": {}}\n{\"name\": \"search\", "
                                  "\"parameters\": {\"q\": 1}}");
  ASSERT_EQ(two.tool_calls.size(), 2u);
  EXPECT_EQ(two.content, "");
}

TEST(Llama3Parse, JsonThatIsNotACallStaysContent) {
  for (const char* text : {
           R"(Use {"name": "Bob", "age": 3} as the record.)",
           R"({"a": 1})",
           "{}",
           "{ not json",
           R"({"name": "get_time", "parameters": [1]})",
           R"(<|python_tag|>import os; os.system("ls"))",
           R"(<|python_tag|>search.call(q=1))",
           "function f() { return 1; }",
       }) {
    expect_content_only(ToolCallFormat::Llama3Json, text);
  }
  const ParsedMessage m = parse(ToolCallFormat::Llama3Json, R"(x {"name": "get_time", "parameters": {}} y)");
  EXPECT_EQ(m.content, "xy");
  EXPECT_EQ(m.tool_calls.size(), 1u);
}

TEST(MistralNemoParse, ArrayOfCalls) {
  const ParsedMessage m =
      parse(ToolCallFormat::MistralNemo,
            R"([TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "abc123XYZ"},)"
            R"( {"id": "def456UVW", "name": "get_time", "arguments": {}}])");
  ASSERT_EQ(m.tool_calls.size(), 2u);
  EXPECT_EQ(m.tool_calls[0].arguments, R"({"city":"Paris"})");
  // The id written after the arguments comes too late for a stream: a fresh 9-character one.
  EXPECT_EQ(m.tool_calls[0].id.size(), 9u);
  EXPECT_NE(m.tool_calls[0].id, "abc123XYZ");
  EXPECT_EQ(m.tool_calls[1].id, "def456UVW");
  EXPECT_EQ(m.content, "");
  // An id the template would reject next turn is replaced.
  EXPECT_EQ(parse(ToolCallFormat::MistralNemo, R"([TOOL_CALLS][{"id": "x", "name": "get_time", "arguments": {}}])")
                .tool_calls[0]
                .id.size(),
            9u);
}

TEST(MistralNemoParse, BadSecondCallStaysContent) {
  const ParsedMessage m =
      parse(ToolCallFormat::MistralNemo,
            R"([TOOL_CALLS][{"name": "get_time", "arguments": {}}, {"name": "nope", "arguments": {}}])");
  ASSERT_EQ(m.tool_calls.size(), 1u);
  EXPECT_EQ(m.content, R"({"name": "nope", "arguments": {}}])");
  expect_content_only(ToolCallFormat::MistralNemo, R"([TOOL_CALLS][{"name": "nope", "arguments": {}}])");
  expect_content_only(ToolCallFormat::MistralNemo, R"([TOOL_CALLS]{"name": "get_time", "arguments": {}})");
}

TEST(MistralSmallParse, NameArgsAndOptionalId) {
  const ParsedMessage m = parse(ToolCallFormat::MistralSmall,
                                "Sure.[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}"
                                "[TOOL_CALLS]search[CALL_ID]abc123XYZ[ARGS]{}");
  EXPECT_EQ(m.content, "Sure.");
  ASSERT_EQ(m.tool_calls.size(), 2u);
  EXPECT_EQ(m.tool_calls[0].arguments, R"({"city":"Paris"})");
  EXPECT_EQ(m.tool_calls[0].id.size(), 9u);
  EXPECT_EQ(m.tool_calls[1].id, "abc123XYZ");
  for (const char* text : {"[TOOL_CALLS]nope[ARGS]{}", "[TOOL_CALLS]get_time[ARGS][]", "[TOOL_CALLS]get_time{}",
                           "[TOOL_CALLS]get_time[ARGS]{\"a\":", "[TOOL_CALLS]"}) {
    expect_content_only(ToolCallFormat::MistralSmall, text);
  }
}

TEST(GraniteParse, ListOfCalls) {
  const ParsedMessage m = parse(ToolCallFormat::Granite,
                                "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}, "
                                "{\"name\": \"get_time\", \"arguments\": {}}]");
  ASSERT_EQ(m.tool_calls.size(), 2u);
  EXPECT_EQ(m.tool_calls[1].name, "get_time");
  EXPECT_EQ(m.content, "");
  EXPECT_EQ(m.tool_calls[0].id.size(), 29u);
  expect_content_only(ToolCallFormat::Granite, "<|tool_call|>[{\"name\": \"get_time\", \"arguments\": ");
}

TEST(DeepSeekR1Parse, CallsAfterReasoning) {
  const std::string calls =
      "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": "
      "\"Paris\"}\n```"
      "<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n```\n{}\n```<｜tool▁call▁end｜>"
      "<｜tool▁calls▁end｜>";
  const ParsedMessage m = parse(ToolCallFormat::DeepSeekR1, "<think>\nhmm\n</think>\n\n" + calls);
  EXPECT_EQ(m.content, "<think>\nhmm\n</think>");
  ASSERT_EQ(m.tool_calls.size(), 2u);
  EXPECT_EQ(m.tool_calls[0].arguments, R"({"city":"Paris"})");
  EXPECT_EQ(m.tool_calls[1].name, "get_time");
  // Without the outer begin marker.
  EXPECT_EQ(
      parse(ToolCallFormat::DeepSeekR1, calls.substr(std::string("<｜tool▁calls▁begin｜>").size())).tool_calls.size(),
      2u);
  expect_content_only(ToolCallFormat::DeepSeekR1, calls.substr(0, 90));
  expect_content_only(ToolCallFormat::DeepSeekR1,
                      "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>nope\n```json\n{}\n```");
}

TEST(NoFormatParse, EverythingIsContent) {
  const std::string text = "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>  \n";
  const ParsedMessage m = parse_tool_calls(ToolCallFormat::None, text, kTools);
  EXPECT_EQ(m.content, text);
  EXPECT_TRUE(m.tool_calls.empty());
}

TEST(HostileParse, StaysContentInLinearTime) {
  std::string markers;
  for (int i = 0; i < 100000; ++i) markers += "<tool_call>";
  expect_content_only(ToolCallFormat::Hermes, markers);
  expect_content_only(ToolCallFormat::Hermes, "<tool_call>\n{\"name\": \"" + std::string(1 << 20, 'a'));
  expect_content_only(ToolCallFormat::Hermes, "<tool_call>" + std::string(1 << 20, '\n'));
  expect_content_only(ToolCallFormat::Llama3Json, std::string(1 << 20, '{'));
  expect_content_only(ToolCallFormat::QwenXml, "<tool_call>\n<function=" + std::string(1 << 20, 'x'));
  expect_content_only(ToolCallFormat::MistralSmall, std::string(100000, '[') + "TOOL_CALLS]");
  std::string nul("a\0b<tool_call>\0", 15);
  expect_content_only(ToolCallFormat::Hermes, nul);
}

TEST(HostileParse, WhitespaceBeforeACallIsTrimmedOnlySoFar) {
  const ParsedMessage m =
      parse(ToolCallFormat::Hermes, std::string(1000, ' ') + "<tool_call>{\"name\": \"get_time\", \"arguments\": {}}");
  EXPECT_EQ(m.tool_calls.size(), 1u);
  EXPECT_EQ(m.content, std::string(1000 - 256, ' '));
}

}  // namespace
}  // namespace cellserve::server::tool_calls
