// ToolCallStream against parse_tool_calls: the same result for any split of the text; content and
// arguments released early; bounded memory on hostile output; calls cut off mid-arguments.
#include <gtest/gtest.h>

#include "server/tool_calls/tool_call_parser.h"
#include "server/tool_calls/tool_call_stream.h"
#include "tests/server/tool_calls/tool_call_test_util.h"

namespace cellserve::server::tool_calls {
namespace {

using testing::expect_same_message;
using testing::fold;
using testing::random_split;
using testing::stream_in_pieces;

const std::vector<std::string> kTools = {"get_weather", "search", "get_time"};

struct Sample {
  ToolCallFormat format;
  std::string text;
};

// Answers of every format: well-formed, with content, several calls, variants, and malformed markup
// that fails before a call commits (all of which must stream to exactly what parse_tool_calls gives).
std::vector<Sample> samples() {
  const std::string hermes_call =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Pa\\\"ris\", "
      "\"days\": [1, 2.5e-3, {\"x\": null}], \"ok\": true}}\n</tool_call>";
  const std::string qwen_call =
      "<tool_call>\n<function=search>\n<parameter=q>\nmulti\nline \"quoted\" ünï 😀\n</parameter>\n<parameter=n>\n"
      "-12.5\n</parameter>\n<parameter=o>\n{\"a\": [true, None]}\n</parameter>\n<parameter=b>\nTrue\n</parameter>\n"
      "</function>\n</tool_call>";
  const std::string deepseek_call =
      "<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜>";
  return {
      {ToolCallFormat::Hermes, "Let me see.\n\n" + hermes_call + "\n" + hermes_call + "\nThat's all."},
      {ToolCallFormat::Hermes, "<tool_call>\n{\"name\": \"get_time\"}\n</tool_call>   "},
      {ToolCallFormat::Hermes, "a < b <tool_ and <tool_call> no, <tool_call>\n{\"name\": \"nope\"} {} </tool_call>"},
      {ToolCallFormat::Hermes, "<tool_call>{\"name\": \"get_time\", \"arguments\": {}, \"id\": 5}</tool_cal"},
      {ToolCallFormat::Hermes, "<tool_call>{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>x</tool_call>"},
      {ToolCallFormat::Hermes, std::string(300, ' ') + "\n<tool_call>{\"name\": \"get_time\", \"arguments\": {}}"},
      {ToolCallFormat::QwenXml, "Checking:\n\n" + qwen_call + "\n" + qwen_call},
      {ToolCallFormat::QwenXml, "<tool_call>\n<function=get_time>\n</function>\n</tool_call>\n\n\nok"},
      {ToolCallFormat::QwenXml, "<tool_call>\n<function=nope>\n</function>\n</tool_call><tool_call>\n<fun"},
      {ToolCallFormat::Llama3Json, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}"},
      {ToolCallFormat::Llama3Json,
       "x {\"a\": {\"name\": \"get_time\"}} {\"name\": \"get_time\", \"parameters\": {}} y"},
      {ToolCallFormat::Llama3Json, "<|python_tag|>search.call(q=\"a \"b\" c\", lang=\"en\")"},
      {ToolCallFormat::Llama3Json, "<|python_tag|>{\"name\": \"get_time\", \"parameters\": {}}{{}"},
      {ToolCallFormat::MistralNemo,
       "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, "
       "\"id\": \"abc123XYZ\"}, {\"id\": \"def456UVW\", \"name\": \"get_time\", "
       "\"arguments\": {}}]"},
      {ToolCallFormat::MistralNemo,
       "[TOOL_CALLS][{\"name\": \"get_time\", \"arguments\": {}}, {\"name\": \"x\"}] [TOOL"},
      {ToolCallFormat::MistralSmall,
       "Sure.[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}[TOOL_CALLS]search"
       "[CALL_ID]abc123XYZ[ARGS]{\"q\": [1]} done"},
      {ToolCallFormat::MistralSmall, "[TOOL_CALLS]nope[ARGS]{}[TOOL_CALLS]get_time[ARGS][]"},
      {ToolCallFormat::Granite,
       "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}, "
       "{\"name\": \"get_time\", \"arguments\": {}}]"},
      {ToolCallFormat::DeepSeekR1, "<think>\nhmm\n</think>\n\n<｜tool▁calls▁begin｜>" + deepseek_call + "\n" +
                                       deepseek_call + "<｜tool▁calls▁end｜>"},
      {ToolCallFormat::DeepSeekR1, deepseek_call + "<｜tool▁calls▁end｜>\n<｜tool▁calls▁begin｜><｜tool"},
      {ToolCallFormat::None, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"},
  };
}

TEST(ToolCallStream, SameAsParseForAnySplit) {
  std::mt19937 rng(12345);
  for (const Sample& sample : samples()) {
    SCOPED_TRACE(std::string(format_name(sample.format)) + ": " + sample.text);
    const ParsedMessage whole = parse_tool_calls(sample.format, sample.text, kTools);
    for (int round = 0; round < 60; ++round) {
      ToolCallStream stream(sample.format, kTools);
      const std::size_t max_piece = round < 10 ? 1 : round < 40 ? 7 : 40;
      expect_same_message(whole, stream_in_pieces(stream, random_split(sample.text, rng, max_piece)));
      EXPECT_EQ(stream.cut_call_count(), 0u);
      EXPECT_EQ(stream.buffered_bytes(), 0u);
    }
  }
}

// Random answers built from markup fragments: any split streams to the same events as the whole
// text at once; unless a call was cut, that is parse_tool_calls(); every call's arguments are one
// compact JSON object.
TEST(ToolCallStream, RandomMarkupProperties) {
  const std::vector<std::string> fragments = {"<tool_call>",
                                              "</tool_call>",
                                              "\n",
                                              " ",
                                              "{",
                                              "}",
                                              "[",
                                              "]",
                                              ",",
                                              ":",
                                              "\"name\"",
                                              "\"arguments\"",
                                              "\"parameters\"",
                                              "\"id\"",
                                              "\"get_time\"",
                                              "\"search\"",
                                              "\"q\"",
                                              "\"x y\"",
                                              "1",
                                              "-2.5e3",
                                              "true",
                                              "null",
                                              "text",
                                              "\"",
                                              "\\",
                                              "<function=",
                                              "search",
                                              "get_time",
                                              ">",
                                              "<parameter=",
                                              "q",
                                              "</parameter>",
                                              "</function>",
                                              "True",
                                              "None",
                                              "[TOOL_CALLS]",
                                              "[ARGS]",
                                              "[CALL_ID]",
                                              "abc123XYZ",
                                              "<|tool_call|>",
                                              "<|python_tag|>",
                                              ".call(",
                                              "=",
                                              ")",
                                              "<｜tool▁calls▁begin｜>",
                                              "<｜tool▁call▁begin｜>",
                                              "function",
                                              "<｜tool▁sep｜>",
                                              "```json",
                                              "```",
                                              "<｜tool▁call▁end｜>",
                                              "<｜tool▁calls▁end｜>",
                                              "ü",
                                              "\xFF"};
  // Whole calls too, so that the random texts are not all failures.
  const std::vector<std::string> calls = {
      "<tool_call>{\"name\": \"search\", \"arguments\": {\"q\": [1]}}</tool_call>",
      "<tool_call>\n<function=search>\n<parameter=q>\n1\n</parameter>\n</function>\n</tool_call>",
      "{\"name\": \"get_time\", \"parameters\": {}}",
      "[TOOL_CALLS]search[ARGS]{\"q\": 1}",
      "[TOOL_CALLS][{\"name\": \"get_time\", \"arguments\": {}}]",
      "<|tool_call|>[{\"name\": \"get_time\", \"arguments\": {}}]",
      "<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n```json\n{}\n```<｜tool▁call▁end｜>"};
  const ToolCallFormat formats[] = {
      ToolCallFormat::Hermes,       ToolCallFormat::QwenXml, ToolCallFormat::Llama3Json, ToolCallFormat::MistralNemo,
      ToolCallFormat::MistralSmall, ToolCallFormat::Granite, ToolCallFormat::DeepSeekR1};
  std::mt19937 rng(99);
  std::size_t total_calls = 0, cut = 0;
  for (ToolCallFormat format : formats) {
    SCOPED_TRACE(format_name(format));
    for (int round = 0; round < 300; ++round) {
      std::string text;
      const int pieces = std::uniform_int_distribution<int>(0, 30)(rng);
      for (int i = 0; i < pieces; ++i) {
        const std::string& call = calls[rng() % calls.size()];
        const unsigned pick = rng() % 12;
        text += pick == 0   ? call
                : pick == 1 ? call.substr(0, rng() % call.size())
                            : fragments[rng() % fragments.size()];
      }
      SCOPED_TRACE(text);
      ToolCallStream at_once(format, kTools);
      const ParsedMessage whole_stream = stream_in_pieces(at_once, {text});
      ToolCallStream split(format, kTools);
      expect_same_message(whole_stream, stream_in_pieces(split, random_split(text, rng, 6)));
      EXPECT_EQ(split.cut_call_count(), at_once.cut_call_count());
      const ParsedMessage parsed = parse_tool_calls(format, text, kTools);
      if (at_once.cut_call_count() == 0) {
        expect_same_message(parsed, whole_stream);
      } else {
        ++cut;
        EXPECT_LT(parsed.tool_calls.size(), whole_stream.tool_calls.size());
      }
      for (const ToolCall& call : parsed.tool_calls) {
        EXPECT_TRUE(testing::arguments_json(call.arguments).is_object()) << call.arguments;
        EXPECT_TRUE(testing::is_compact_json(call.arguments)) << call.arguments;
      }
      total_calls += parsed.tool_calls.size();
    }
  }
  EXPECT_GT(total_calls, 300u);
  EXPECT_GT(cut, 10u);
}

TEST(ToolCallStream, SamplesCoverCallsAndContent) {
  // Guards the test above against a corpus that parses to nothing.
  std::size_t calls = 0, with_content = 0;
  for (const Sample& sample : samples()) {
    const ParsedMessage m = parse_tool_calls(sample.format, sample.text, kTools);
    calls += m.tool_calls.size();
    with_content += !m.content.empty();
  }
  EXPECT_GE(calls, 20u);
  EXPECT_GE(with_content, 10u);
}

TEST(ToolCallStream, ContentIsReleasedUnlessItMayStartAMarker) {
  ToolCallStream stream(ToolCallFormat::Hermes, kTools);
  ParsedMessage m = fold(stream.feed("Hello there <tool"));
  EXPECT_EQ(m.content, "Hello there");  // " <tool" may still become a call
  EXPECT_EQ(stream.buffered_bytes(), 6u);
  m = fold(stream.feed("box> ok"), std::move(m));
  EXPECT_EQ(m.content, "Hello there <toolbox> ok");
  EXPECT_EQ(stream.buffered_bytes(), 0u);
  m = fold(stream.feed("\n\n"), std::move(m));
  EXPECT_EQ(m.content, "Hello there <toolbox> ok");
  m = fold(stream.finish(), std::move(m));
  EXPECT_EQ(m.content, "Hello there <toolbox> ok\n\n");  // whitespace at the end is content
  EXPECT_TRUE(stream.feed("more").empty());
  EXPECT_TRUE(stream.finish().empty());
}

// Feeds `text` one byte at a time; returns how many bytes had been fed when each event came out.
std::vector<std::pair<std::size_t, StreamEvent>> byte_by_byte(ToolCallStream& stream, std::string_view text) {
  std::vector<std::pair<std::size_t, StreamEvent>> timeline;
  for (std::size_t i = 0; i < text.size(); ++i) {
    for (StreamEvent& e : stream.feed(text.substr(i, 1))) timeline.emplace_back(i + 1, std::move(e));
  }
  for (StreamEvent& e : stream.finish()) timeline.emplace_back(text.size(), std::move(e));
  return timeline;
}

TEST(ToolCallStream, JsonArgumentsStreamCompactly) {
  const std::string head = "<tool_call>\n{\"name\": \"search\", \"arguments\": ";
  const std::string arguments_text = "{\"q\": \"a long query\",\n  \"n\": [1, 2, 3]}";
  const std::string text = head + arguments_text + "}\n</tool_call>";
  ToolCallStream stream(ToolCallFormat::Hermes, kTools);
  const auto timeline = byte_by_byte(stream, text);
  std::size_t starts = 0, deltas = 0;
  std::string arguments;
  for (const auto& [fed, event] : timeline) {
    if (const auto* s = std::get_if<CallStart>(&event)) {
      ++starts;
      EXPECT_EQ(fed, head.size() + 1);  // announced at the arguments' '{'
      EXPECT_EQ(s->name, "search");
      EXPECT_EQ(s->index, 0u);
    } else if (const auto* a = std::get_if<ArgumentsDelta>(&event)) {
      ++deltas;
      arguments += a->text;
      EXPECT_LE(fed, head.size() + arguments_text.size());  // as they come, none after the arguments end
    } else {
      ADD_FAILURE() << "content: " << std::get<ContentDelta>(event).text;
    }
  }
  EXPECT_EQ(starts, 1u);
  EXPECT_GT(deltas, 20u);
  EXPECT_EQ(arguments, R"({"q":"a long query","n":[1,2,3]})");
}

TEST(ToolCallStream, QwenStringParameterStreams) {
  const std::vector<ToolSpec> specs = {
      {"write_file", boost::json::parse(R"({"type": "object", "properties": {"path": {"type": "string"},
          "content": {"type": "string"}, "mode": {"type": "integer"}}})")}};
  const std::string body(5000, 'x');
  const std::string text =
      "<tool_call>\n<function=write_file>\n<parameter=path>\n/tmp/a\n</parameter>\n"
      "<parameter=content>\n" +
      body +
      "\n</parameter>\n<parameter=mode>\n420\n</parameter>\n"
      "</function>\n</tool_call>";
  ToolCallStream stream(ToolCallFormat::QwenXml, specs);
  const auto timeline = byte_by_byte(stream, text);
  const std::size_t body_start = text.find(body);
  std::size_t deltas_inside_body = 0;
  std::string arguments;
  for (const auto& [fed, event] : timeline) {
    if (const auto* a = std::get_if<ArgumentsDelta>(&event)) {
      arguments += a->text;
      deltas_inside_body += fed > body_start && fed < body_start + body.size();
    }
  }
  EXPECT_GT(deltas_inside_body, 4000u);  // the value streams as the model writes it
  EXPECT_EQ(arguments, "{\"path\":\"/tmp/a\",\"content\":\"" + body + "\",\"mode\":420}");
  EXPECT_LE(stream.buffered_bytes(), 0u);
}

TEST(ToolCallStream, MemoryStaysBoundedOnHostileOutput) {
  const std::size_t bound =
      4096 + 256 + 16 * 1024 + 64;  // held markup + trimmed whitespace + a QwenXml typed value + a marker
  const std::vector<Sample> hostile = {
      {ToolCallFormat::Hermes, "<tool_call>\n{\"name\": \"" + std::string(1 << 20, 'a')},
      {ToolCallFormat::Hermes, std::string(1 << 20, ' ')},
      {ToolCallFormat::Hermes, "<tool_call>" + std::string(1 << 20, '\n')},
      {ToolCallFormat::Llama3Json, std::string(1 << 20, '{')},
      {ToolCallFormat::QwenXml, "<tool_call>\n<function=search>\n<parameter=q>\n" + std::string(1 << 20, '[')},
      {ToolCallFormat::QwenXml, "<tool_call>\n<function=search>\n<parameter=q>\n" + std::string(1 << 20, '7')},
      {ToolCallFormat::MistralNemo,
       "[TOOL_CALLS][{\"name\": \"get_time\", \"arguments\": {}, \"x\": \"" + std::string(1 << 20, 'y')},
      {ToolCallFormat::DeepSeekR1, "<｜tool▁call▁begin｜>" + std::string(1 << 20, 'f')},
  };
  for (const Sample& sample : hostile) {
    SCOPED_TRACE(sample.text.substr(0, 60));
    ToolCallStream stream(sample.format, kTools);
    std::size_t most = 0;
    ParsedMessage m;
    for (std::size_t i = 0; i < sample.text.size(); i += 1000) {
      m = fold(stream.feed(std::string_view(sample.text).substr(i, 1000)), std::move(m));
      most = std::max(most, stream.buffered_bytes());
    }
    m = fold(stream.finish(), std::move(m));
    EXPECT_LE(most, bound);
    // It came out as text or arguments, not swallowed.
    std::size_t out = m.content.size();
    for (const ToolCall& call : m.tool_calls) out += call.arguments.size();
    EXPECT_GT(out + 1000, sample.text.size() / 2);
  }
}

TEST(ToolCallStream, CallCutOffAfterItsArgumentsBegan) {
  // The one case where a stream cannot match parse_tool_calls: the call was announced already.
  const std::string text = "Sure.\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": \"Par";
  const ParsedMessage whole = parse_tool_calls(ToolCallFormat::Hermes, text, kTools);
  EXPECT_EQ(whole.content, text);
  EXPECT_TRUE(whole.tool_calls.empty());
  std::mt19937 rng(3);
  for (int round = 0; round < 20; ++round) {
    ToolCallStream stream(ToolCallFormat::Hermes, kTools);
    const ParsedMessage streamed = stream_in_pieces(stream, random_split(text, rng, 5));
    EXPECT_EQ(streamed.content, "Sure.");
    ASSERT_EQ(streamed.tool_calls.size(), 1u);
    EXPECT_EQ(streamed.tool_calls[0].arguments, R"({"q":"Par)");
    EXPECT_EQ(stream.cut_call_count(), 1u);
  }
  // Broken JSON mid-arguments: the call ends, the rest is content again, the next call still counts.
  const std::string broken =
      "<tool_call>{\"name\": \"search\", \"arguments\": {\"q\" 1}}</tool_call>"
      "<tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call>";
  ToolCallStream stream(ToolCallFormat::Hermes, kTools);
  const ParsedMessage streamed = stream_in_pieces(stream, {broken});
  ASSERT_EQ(streamed.tool_calls.size(), 2u);
  EXPECT_EQ(streamed.tool_calls[0].arguments, R"({"q")");
  EXPECT_EQ(streamed.tool_calls[1].name, "get_time");
  EXPECT_EQ(streamed.content, "1}}</tool_call>");
  const ParsedMessage parsed = parse_tool_calls(ToolCallFormat::Hermes, broken, kTools);
  ASSERT_EQ(parsed.tool_calls.size(), 1u);
  EXPECT_EQ(parsed.tool_calls[0].name, "get_time");
  EXPECT_EQ(parsed.content, "<tool_call>{\"name\": \"search\", \"arguments\": {\"q\" 1}}</tool_call>");
}

}  // namespace
}  // namespace cellserve::server::tool_calls
