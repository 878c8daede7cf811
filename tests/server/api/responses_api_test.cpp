// The Responses API's pure parts: a Responses request read as a chat body (every input item
// kind, tools, tool_choice, text.format, the fields refused), chat errors renamed to the
// Responses fields, and the output builder's items and stream events.
#include <gtest/gtest.h>

#include <string>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "server/api/responses_output.h"
#include "server/api/responses_request.h"
#include "tests/server/api/client_error.h"

namespace cellserve::server {
namespace {

namespace json = boost::json;

json::object to_chat(const std::string& body) {
  json::object chat;
  const std::optional<net::ApiError> e = client_error(responses_to_chat(json::parse(body).as_object(), &chat));
  EXPECT_FALSE(e.has_value()) << body << ": " << (e ? e->message : "");
  return chat;
}

void expect_refused(const std::string& body, const std::string& param) {
  json::object chat;
  const std::optional<net::ApiError> e = client_error(responses_to_chat(json::parse(body).as_object(), &chat));
  ASSERT_TRUE(e.has_value()) << body;
  EXPECT_EQ(e->http_status, 400) << body;
  EXPECT_EQ(e->param, param) << body << ": " << e->message;
}

TEST(ResponsesToChat, StringInputAndInstructionsBecomeSystemAndUser) {
  const json::object chat =
      to_chat(R"({"model":"m","instructions":"Be brief.","input":"Hi","max_output_tokens":7,"temperature":0.5})");
  EXPECT_EQ(json::serialize(chat.at("messages")),
            R"([{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}])");
  EXPECT_EQ(chat.at("max_completion_tokens"), 7);
  EXPECT_EQ(chat.at("temperature"), 0.5);
  EXPECT_EQ(chat.at("model"), "m");
  EXPECT_FALSE(chat.contains("max_output_tokens"));
  EXPECT_FALSE(chat.contains("instructions"));
}

TEST(ResponsesToChat, MessageItemsKeepRolesAndJoinTextParts) {
  const json::object chat = to_chat(R"({"input":[
      {"role":"developer","content":"Rules."},
      {"type":"message","role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_text","text":"b"}]},
      {"type":"message","role":"assistant","content":[{"type":"output_text","text":"c"}]}]})");
  const json::array& m = chat.at("messages").as_array();
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].at("role"), "developer");
  EXPECT_EQ(m[1].at("role"), "user");
  EXPECT_EQ(m[2].at("role"), "assistant");
  EXPECT_EQ(json::serialize(m[2].at("content")), R"([{"type":"text","text":"c"}])");
}

TEST(ResponsesToChat, CallsJoinTheAssistantTurnAndOutputsBecomeToolMessages) {
  const json::object chat = to_chat(R"({"input":[
      {"role":"user","content":"Weather?"},
      {"type":"function_call","call_id":"c1","name":"w","arguments":"{\"city\":\"Paris\"}"},
      {"type":"function_call","call_id":"c2","name":"w","arguments":"{\"city\":\"Oslo\"}"},
      {"type":"function_call_output","call_id":"c1","output":"sunny"},
      {"type":"function_call_output","call_id":"c2","output":"rain"}]})");
  const json::array& m = chat.at("messages").as_array();
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[1].at("role"), "assistant");
  const json::array& calls = m[1].at("tool_calls").as_array();
  ASSERT_EQ(calls.size(), 2u);  // two calls in a row are one turn, as the model made them
  EXPECT_EQ(calls[0].at("id"), "c1");
  EXPECT_EQ(calls[0].at("type"), "function");
  EXPECT_EQ(calls[1].at("function").at("arguments"), R"({"city":"Oslo"})");
  EXPECT_EQ(m[2].at("role"), "tool");
  EXPECT_EQ(m[2].at("tool_call_id"), "c1");
  EXPECT_EQ(m[2].at("name"), "w");
  EXPECT_EQ(m[3].at("content"), "rain");
}

TEST(ResponsesToChat, FlatToolsToolChoiceAndTextFormatTakeTheChatShapes) {
  const json::object chat = to_chat(R"({"input":"x",
      "tools":[{"type":"function","name":"w","description":"d","parameters":{"type":"object"},"strict":true}],
      "tool_choice":{"type":"function","name":"w"},
      "text":{"format":{"type":"json_schema","name":"v","schema":{"type":"integer"},"strict":true}}})");
  EXPECT_EQ(
      json::serialize(chat.at("tools")),
      R"([{"type":"function","function":{"name":"w","description":"d","parameters":{"type":"object"},"strict":true}}])");
  EXPECT_EQ(json::serialize(chat.at("tool_choice")), R"({"type":"function","function":{"name":"w"}})");
  const json::object& rf = chat.at("response_format").as_object();
  EXPECT_EQ(rf.at("type"), "json_schema");
  EXPECT_EQ(rf.at("json_schema").at("name"), "v");
  EXPECT_EQ(json::serialize(rf.at("json_schema").at("schema")), R"({"type":"integer"})");
  // The regex format passes as it is; "required" and "none" too.
  EXPECT_EQ(json::serialize(
                to_chat(R"({"input":"x","text":{"format":{"type":"regex","pattern":"[0-9]"}}})").at("response_format")),
            R"({"type":"regex","pattern":"[0-9]"})");
  EXPECT_EQ(to_chat(R"({"input":"x","tool_choice":"required"})").at("tool_choice"), "required");
}

TEST(ResponsesToChat, RefusesWhatAStatelessServerCannotDoNamingTheField) {
  expect_refused(R"({"model":"m"})", "input");
  expect_refused(R"({"input":[]})", "input");
  expect_refused(R"({"input":7})", "input");
  expect_refused(R"({"input":"x","previous_response_id":"resp_1"})", "previous_response_id");
  expect_refused(R"({"input":"x","conversation":"conv_1"})", "conversation");
  expect_refused(R"({"input":"x","background":true})", "background");
  expect_refused(R"({"input":"x","truncation":"auto"})", "truncation");
  expect_refused(R"({"input":"x","include":["reasoning.encrypted_content"]})", "include");
  expect_refused(R"({"input":[{"role":"user","content":[{"type":"input_image","image_url":"u"}]}]})",
                 "input[0].content[0].type");
  expect_refused(R"({"input":[{"type":"reasoning","summary":[]}]})", "input[0].type");
  expect_refused(R"({"input":[{"type":"function_call_output","call_id":"c9","output":"x"}]})", "input[0].call_id");
  expect_refused(R"({"input":"x","tools":[{"type":"web_search"}]})", "tools[0].type");
  expect_refused(R"({"input":"x","tool_choice":{"type":"file_search"}})", "tool_choice.type");
  expect_refused(R"({"input":"x","text":{"format":"json"}})", "text.format");
  expect_refused(R"({"input":"x","metadata":[1]})", "metadata");
  expect_refused(R"({"input":"x","user":5})", "user");
  // Accepted as OpenAI's defaults.
  to_chat(R"({"input":"x","truncation":"disabled","include":[],"background":false,"store":false})");
}

TEST(ResponsesError, NamesTheResponsesFields) {
  auto chat_error = [](const char* param) { return Status::invalid_param(param, "bad"); };
  EXPECT_EQ(responses_error(chat_error("messages[2].content")).param(), "input");
  EXPECT_EQ(responses_error(chat_error("max_completion_tokens")).param(), "max_output_tokens");
  EXPECT_EQ(responses_error(chat_error("response_format.json_schema.schema")).param(), "text.format");
  EXPECT_EQ(responses_error(chat_error("temperature")).param(), "temperature");
}

TEST(ResponseOutputTest, TextThenCallGivesAMessageAndACallItemWithTheirEvents) {
  ResponseOutput out;
  std::vector<std::string> types;
  const auto record = [&](const std::vector<json::object>& events) {
    for (const json::object& e : events) types.push_back(std::string(e.at("type").as_string()));
  };
  record(out.text("Let me "));
  record(out.text("check."));
  record(out.call_start("call_1", "w"));
  record(out.call_arguments("{\"city\":"));
  record(out.call_arguments("\"Paris\"}"));
  record(out.finish("completed"));
  const std::vector<std::string> expected = {"response.output_item.added",
                                             "response.content_part.added",
                                             "response.output_text.delta",
                                             "response.output_text.delta",
                                             "response.output_text.done",
                                             "response.content_part.done",
                                             "response.output_item.done",
                                             "response.output_item.added",
                                             "response.function_call_arguments.delta",
                                             "response.function_call_arguments.delta",
                                             "response.function_call_arguments.done",
                                             "response.output_item.done"};
  EXPECT_EQ(types, expected);
  const json::array& items = out.items();
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].at("type"), "message");
  EXPECT_EQ(items[0].at("status"), "completed");
  EXPECT_EQ(items[0].at("content").at(0).at("text"), "Let me check.");
  EXPECT_EQ(items[1].at("type"), "function_call");
  EXPECT_EQ(items[1].at("call_id"), "call_1");
  EXPECT_EQ(items[1].at("arguments"), R"({"city":"Paris"})");
  EXPECT_NE(items[0].at("id"), items[1].at("id"));
}

TEST(ResponseOutputTest, AnEmptyAnswerStillHasItsMessage) {
  ResponseOutput out;
  const std::vector<json::object> events = out.finish("incomplete");
  ASSERT_EQ(events.size(), 5u);  // added, part added, text done, part done, item done
  ASSERT_EQ(out.items().size(), 1u);
  EXPECT_EQ(out.items()[0].at("status"), "incomplete");
  EXPECT_EQ(out.items()[0].at("content").at(0).at("text"), "");
}

TEST(ResponseEvent, IsANamedServerSentEventWithItsSequenceNumber) {
  const std::string e = response_event(json::object{{"type", "response.in_progress"}}, 3);
  EXPECT_EQ(e, "event: response.in_progress\ndata: {\"type\":\"response.in_progress\",\"sequence_number\":3}\n\n");
}

}  // namespace
}  // namespace cellserve::server
