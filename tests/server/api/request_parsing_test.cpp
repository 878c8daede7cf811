// Request parsing: every field, wrong types and out-of-range values (400 naming the field), stop
// and logit_bias limits, response_format, completion prompt shapes, and the context arithmetic.
#include "server/api/request_parsing.h"
#include "tests/server/api/client_error.h"

#include <gtest/gtest.h>

#include <cmath>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace cellserve::server {
namespace {

namespace json = boost::json;

ApiContext test_context() {
  ApiContext ctx;
  ctx.model_id = "tiny";
  ctx.n_vocab = 1000;
  ctx.n_ctx = 100;
  return ctx;
}

std::optional<net::ApiError> parse_chat(const std::string& body, ChatCompletionRequest* out) {
  json::object o;
  if (auto e = client_error(parse_json_object(body, &o))) return e;
  return client_error(parse_chat_request(o, test_context(), out));
}

std::optional<net::ApiError> parse_completion(const std::string& body, CompletionRequest* out) {
  json::object o;
  if (auto e = client_error(parse_json_object(body, &o))) return e;
  return client_error(parse_completion_request(o, test_context(), out));
}

// The chat body with `extra` fields added after a minimal message list.
std::string chat_body(const std::string& extra) {
  return R"({"messages":[{"role":"user","content":"hi"}])" + (extra.empty() ? "" : "," + extra) + "}";
}

// Expects the chat body with `extra` to fail naming `param`.
void expect_chat_error(const std::string& extra, const std::string& param) {
  ChatCompletionRequest r;
  const std::optional<net::ApiError> e = parse_chat(chat_body(extra), &r);
  ASSERT_TRUE(e.has_value()) << extra;
  EXPECT_EQ(e->http_status, 400) << extra;
  EXPECT_EQ(e->type, "invalid_request_error");
  EXPECT_EQ(e->param, param) << extra << ": " << e->message;
}

TEST(ParseJson, RejectsInvalidJsonAndNonObjects) {
  json::object o;
  auto e = client_error(parse_json_object("{\"a\":", &o));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message.rfind("invalid JSON: ", 0), 0u) << e->message;
  e = client_error(parse_json_object("[1,2]", &o));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message, "the request body must be a JSON object");
  EXPECT_TRUE(parse_json_object(R"({"a":1})", &o).ok());
}

TEST(ParseChat, MinimalRequestHasDefaults) {
  ChatCompletionRequest r;
  ASSERT_FALSE(parse_chat(chat_body(""), &r));
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.include_usage);
  EXPECT_FALSE(r.max_tokens.has_value());
  EXPECT_EQ(r.job.logprobs, -1);
  EXPECT_TRUE(r.job.stop.empty());
  EXPECT_EQ(r.job.constraint, nullptr);
  ASSERT_EQ(r.chat.messages.size(), 1u);
  EXPECT_EQ(json::serialize(r.chat.messages[0]), R"({"role":"user","content":"hi"})");
  EXPECT_FALSE(r.chat.tools.has_value());
}

TEST(ParseChat, ReadsEveryField) {
  ChatCompletionRequest r;
  ASSERT_FALSE(parse_chat(chat_body(R"("model":"tiny","stream":true,"stream_options":{"include_usage":true},
      "max_tokens":7,"temperature":0.5,"top_p":0.9,"top_k":20,"min_p":0.1,"presence_penalty":1.5,
      "frequency_penalty":-1,"repetition_penalty":1.1,"seed":42,"stop":["a","b"],"logit_bias":{"5":2,"7":-100},
      "logprobs":true,"top_logprobs":3,"n":1,"ignore_eos":true,"unknown_field":{"x":1},
      "chat_template_kwargs":{"enable_thinking":false},"tools":[{"type":"function","function":{"name":"f"}}])"),
                          &r));
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(r.max_tokens, 7);
  EXPECT_FLOAT_EQ(r.job.sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(r.job.sampling.top_p, 0.9f);
  EXPECT_EQ(r.job.sampling.top_k, 20);
  EXPECT_FLOAT_EQ(r.job.sampling.min_p, 0.1f);
  EXPECT_FLOAT_EQ(r.job.sampling.presence_penalty, 1.5f);
  EXPECT_FLOAT_EQ(r.job.sampling.frequency_penalty, -1.0f);
  EXPECT_FLOAT_EQ(r.job.sampling.repeat_penalty, 1.1f);
  EXPECT_EQ(r.job.sampling.seed, 42u);
  EXPECT_EQ(r.job.stop, (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(r.job.sampling.logit_bias.size(), 2u);
  EXPECT_EQ(r.job.sampling.logit_bias[0], (std::pair<int32_t, float>{5, 2.0f}));
  EXPECT_EQ(r.job.sampling.logit_bias[1].first, 7);
  EXPECT_TRUE(std::isinf(r.job.sampling.logit_bias[1].second) && r.job.sampling.logit_bias[1].second < 0);
  EXPECT_EQ(r.job.logprobs, 3);
  EXPECT_TRUE(r.job.ignore_eos);
  EXPECT_EQ(json::serialize(r.chat.extra_vars), R"({"enable_thinking":false})");
  ASSERT_TRUE(r.chat.tools.has_value());
  EXPECT_EQ(r.chat.tools->size(), 1u);
}

TEST(ParseChat, MaxCompletionTokensAndRepeatPenaltyAliases) {
  ChatCompletionRequest r;
  ASSERT_FALSE(parse_chat(chat_body(R"("max_completion_tokens":12,"repeat_penalty":1.3,"top_k":-1)"), &r));
  EXPECT_EQ(r.max_tokens, 12);
  EXPECT_FLOAT_EQ(r.job.sampling.repeat_penalty, 1.3f);
  EXPECT_EQ(r.job.sampling.top_k, 0);
}

TEST(ParseChat, NullMeansNotGiven) {
  ChatCompletionRequest r;
  ASSERT_FALSE(parse_chat(chat_body(R"("temperature":null,"stop":null,"max_tokens":null,"seed":null,
      "response_format":null,"stream_options":null,"logit_bias":null,"tools":null,"model":null)"),
                          &r));
  EXPECT_FALSE(r.max_tokens.has_value());
  EXPECT_FLOAT_EQ(r.job.sampling.temperature, engine::SamplingParams().temperature);
}

TEST(ParseChat, WrongTypesNameTheField) {
  expect_chat_error(R"("temperature":"hot")", "temperature");
  expect_chat_error(R"("stream":1)", "stream");
  expect_chat_error(R"("max_tokens":1.5)", "max_tokens");
  expect_chat_error(R"("max_tokens":"10")", "max_tokens");
  expect_chat_error(R"("top_k":0.5)", "top_k");
  expect_chat_error(R"("seed":"x")", "seed");
  expect_chat_error(R"("stop":5)", "stop");
  expect_chat_error(R"("stop":["a",1])", "stop");
  expect_chat_error(R"("logit_bias":[1])", "logit_bias");
  expect_chat_error(R"("logprobs":"yes")", "logprobs");
  expect_chat_error(R"("ignore_eos":"no")", "ignore_eos");
  expect_chat_error(R"("stream_options":{"include_usage":1})", "stream_options.include_usage");
  expect_chat_error(R"("stream_options":true)", "stream_options");
  expect_chat_error(R"("model":3)", "model");
  expect_chat_error(R"("response_format":"json")", "response_format");
  expect_chat_error(R"("tools":{})", "tools");
  expect_chat_error(R"("chat_template_kwargs":[])", "chat_template_kwargs");
}

TEST(ParseChat, OutOfRangeValuesNameTheField) {
  expect_chat_error(R"("temperature":2.5)", "temperature");
  expect_chat_error(R"("temperature":-0.1)", "temperature");
  expect_chat_error(R"("top_p":0)", "top_p");
  expect_chat_error(R"("top_p":1.01)", "top_p");
  expect_chat_error(R"("min_p":1.5)", "min_p");
  expect_chat_error(R"("presence_penalty":2.5)", "presence_penalty");
  expect_chat_error(R"("frequency_penalty":-3)", "frequency_penalty");
  expect_chat_error(R"("repetition_penalty":0)", "repetition_penalty");
  expect_chat_error(R"("max_tokens":0)", "max_tokens");
  expect_chat_error(R"("max_completion_tokens":-5)", "max_completion_tokens");
  expect_chat_error(R"("top_logprobs":21,"logprobs":true)", "top_logprobs");
  expect_chat_error(R"("top_logprobs":2)", "top_logprobs");  // requires logprobs
  expect_chat_error(R"("top_logprobs":2,"logprobs":false)", "top_logprobs");
}

TEST(ParseChat, TemperatureBoundsAreInclusive) {
  ChatCompletionRequest r;
  ASSERT_FALSE(parse_chat(chat_body(R"("temperature":0,"top_p":1)"), &r));
  EXPECT_EQ(r.job.sampling.temperature, 0.0f);
  ASSERT_FALSE(parse_chat(chat_body(R"("temperature":2)"), &r));
}

TEST(ParseChat, NChoicesUpToTheLimit) {
  ChatCompletionRequest r;
  EXPECT_FALSE(parse_chat(chat_body(R"("n":3)"), &r));
  EXPECT_EQ(r.n, 3);
  for (const char* bad : {R"("n":0)", R"("n":17)", R"("n":"2")", R"("n":1.5)"}) {
    auto e = parse_chat(chat_body(bad), &r);
    ASSERT_TRUE(e) << bad;
    EXPECT_EQ(e->param, "n") << bad;
  }
}

TEST(ParseChat, AnUnknownModelIs404ModelNotFoundAsOpenAI) {
  ChatCompletionRequest r;
  EXPECT_FALSE(parse_chat(chat_body(R"("model":"tiny")"), &r));
  auto e = parse_chat(chat_body(R"("model":"gpt-4o")"), &r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->http_status, 404);
  EXPECT_EQ(e->type, "invalid_request_error");
  EXPECT_EQ(e->param, "model");
  EXPECT_EQ(e->code, "model_not_found");
  EXPECT_EQ(e->message,
            "The model `gpt-4o` does not exist or you do not have access to it. This server serves `tiny`.");
  EXPECT_EQ(net::error_body(*e),
            R"({"error":{"message":"The model `gpt-4o` does not exist or you do not have access to it. )"
            R"(This server serves `tiny`.","type":"invalid_request_error","param":"model","code":"model_not_found"}})");
  // The completions endpoint shares the check.
  CompletionRequest c;
  e = parse_completion(R"({"prompt":"x","model":""})", &c);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->http_status, 404);
}

TEST(ParseChat, AHugeUnknownModelNameIsCutInTheMessage) {
  // 300 two-byte characters: the cut must not split one.
  std::string name;
  for (int i = 0; i < 300; ++i) name += "\xc3\xa9";
  ChatCompletionRequest r;
  auto e = parse_chat(chat_body(R"("model":")" + name + "\""), &r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->http_status, 404);
  EXPECT_LT(e->message.size(), 400u);
  EXPECT_NE(e->message.find(name.substr(0, 256) + "..."), std::string::npos) << e->message;
}

TEST(ParseChat, AcceptAnyModelServesEveryName) {
  ApiContext ctx = test_context();
  ctx.accept_any_model = true;
  for (const char* model : {"gpt-4o", "", "tiny", "anything/at all"}) {
    json::object o;
    ASSERT_TRUE(parse_json_object(chat_body(std::string(R"("model":")") + model + "\""), &o).ok());
    ChatCompletionRequest r;
    EXPECT_TRUE(parse_chat_request(o, ctx, &r).ok()) << model;
    EXPECT_EQ(r.job.lora, nullptr) << model;  // the loaded model alone, no adapter
  }
  // The field's type is still checked.
  json::object o;
  ASSERT_TRUE(parse_json_object(chat_body(R"("model":5)"), &o).ok());
  ChatCompletionRequest r;
  auto e = client_error(parse_chat_request(o, ctx, &r));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->http_status, 400);
  EXPECT_EQ(e->param, "model");
}

TEST(ParseChat, AddGenerationPromptDefaultsToTrue) {
  ChatCompletionRequest r;
  ASSERT_FALSE(parse_chat(chat_body(""), &r));
  EXPECT_TRUE(r.chat.add_generation_prompt);
  ASSERT_FALSE(parse_chat(chat_body(R"("add_generation_prompt":false)"), &r));
  EXPECT_FALSE(r.chat.add_generation_prompt);
  expect_chat_error(R"("add_generation_prompt":"no")", "add_generation_prompt");
}

TEST(ParseChat, StopLimits) {
  ChatCompletionRequest r;
  ASSERT_FALSE(parse_chat(chat_body(R"("stop":"END")"), &r));
  EXPECT_EQ(r.job.stop, std::vector<std::string>{"END"});
  ASSERT_FALSE(parse_chat(chat_body(R"("stop":["a","b","c","d"])"), &r));
  EXPECT_EQ(r.job.stop.size(), 4u);
  ASSERT_FALSE(parse_chat(chat_body(R"("stop":[])"), &r));
  expect_chat_error(R"("stop":["a","b","c","d","e"])", "stop");
  expect_chat_error(R"("stop":"")", "stop");
  expect_chat_error(R"("stop":["a",""])", "stop");
}

TEST(ParseChat, LogitBiasKeysAndValues) {
  expect_chat_error(R"("logit_bias":{"abc":1})", "logit_bias");
  expect_chat_error(R"("logit_bias":{"12x":1})", "logit_bias");
  expect_chat_error(R"("logit_bias":{"-1":1})", "logit_bias");
  expect_chat_error(R"("logit_bias":{"1000":1})", "logit_bias");  // n_vocab is 1000
  expect_chat_error(R"("logit_bias":{"5":101})", "logit_bias");
  expect_chat_error(R"("logit_bias":{"5":-100.5})", "logit_bias");
  expect_chat_error(R"("logit_bias":{"5":"1"})", "logit_bias");
  ChatCompletionRequest r;
  ASSERT_FALSE(parse_chat(chat_body(R"("logit_bias":{"999":100,"0":-99.5})"), &r));
  ASSERT_EQ(r.job.sampling.logit_bias.size(), 2u);
  EXPECT_FLOAT_EQ(r.job.sampling.logit_bias[0].second, 100.0f);
  EXPECT_FLOAT_EQ(r.job.sampling.logit_bias[1].second, -99.5f);
}

TEST(ParseChat, LogitBiasThatBansEveryTokenIs400) {
  auto bans = [](int first, int last) {
    std::string out = R"("logit_bias":{)";
    for (int id = first; id < last; ++id) out += (id > first ? "," : "") + ("\"" + std::to_string(id) + "\":-100");
    return out + "}";
  };
  expect_chat_error(bans(0, 1000), "logit_bias");  // n_vocab is 1000
  ChatCompletionRequest r;
  const std::optional<net::ApiError> e = parse_chat(chat_body(bans(0, 1000)), &r);
  ASSERT_TRUE(e);
  EXPECT_NE(e->message.find("bans every token"), std::string::npos) << e->message;
  EXPECT_FALSE(parse_chat(chat_body(bans(1, 1000)), &r));  // token 0 is left
  EXPECT_EQ(r.job.sampling.logit_bias.size(), 999u);
}

TEST(ParseChat, SeedIsRandomWhenNotGiven) {
  ChatCompletionRequest a, b;
  ASSERT_FALSE(parse_chat(chat_body(""), &a));
  ASSERT_FALSE(parse_chat(chat_body(""), &b));
  EXPECT_NE(a.job.sampling.seed, b.job.sampling.seed);
}

TEST(ParseChat, LogprobsWithoutTopIsZero) {
  ChatCompletionRequest r;
  ASSERT_FALSE(parse_chat(chat_body(R"("logprobs":true)"), &r));
  EXPECT_EQ(r.job.logprobs, 0);
  ASSERT_FALSE(parse_chat(chat_body(R"("logprobs":false)"), &r));
  EXPECT_EQ(r.job.logprobs, -1);
}

TEST(ParseChat, ResponseFormat) {
  ChatCompletionRequest r;
  ASSERT_FALSE(parse_chat(chat_body(R"("response_format":{"type":"text"})"), &r));
  EXPECT_EQ(r.job.constraint, nullptr);
  ASSERT_FALSE(parse_chat(chat_body(R"("response_format":{"type":"json_object"})"), &r));
  EXPECT_NE(r.job.constraint, nullptr);
  ASSERT_FALSE(parse_chat(chat_body(R"("response_format":{"type":"json_schema","json_schema":{"name":"x",
      "strict":true,"schema":{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}}})"),
                          &r));
  EXPECT_NE(r.job.constraint, nullptr);
  expect_chat_error(R"("response_format":{"type":"xml"})", "response_format");
  expect_chat_error(R"("response_format":{"type":"json_schema"})", "response_format");
  expect_chat_error(R"("response_format":{"type":"json_schema","json_schema":{"schema":5}})", "response_format");
  expect_chat_error(R"("response_format":{"type":3})", "response_format.type");
}

TEST(ParseChat, SchemaErrorsAre400NamingTheProblem) {
  ChatCompletionRequest r;
  auto e = parse_chat(chat_body(R"("response_format":{"type":"json_schema","json_schema":{"schema":
      {"type":"object","properties":{"a":{"type":"frobnicate"}}}}})"),
                      &r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->http_status, 400);
  EXPECT_EQ(e->param, "response_format");
  EXPECT_NE(e->message.find("response_format json_schema: "), std::string::npos) << e->message;
}

// {"anyOf": [branch(0), ..., branch(n - 1)]} as a json_schema response_format field.
std::string any_of_format(int n, bool distinct) {
  std::string schema = R"({"anyOf":[)";
  for (int i = 0; i < n; ++i) {
    schema += (i > 0 ? "," : "") + (distinct ? R"({"type":"string","maxLength":)" + std::to_string(1000 + i) + "}"
                                             : std::string(R"({"type":"string"})"));
  }
  return R"("response_format":{"type":"json_schema","json_schema":{"name":"x","schema":)" + schema + "]}}}";
}

TEST(ParseChat, SchemaLimitsAre400NamingTheLimit) {
  ChatCompletionRequest r;
  auto e = parse_chat(chat_body(any_of_format(2000, true)), &r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->http_status, 400);
  EXPECT_EQ(e->type, "invalid_request_error");
  EXPECT_EQ(e->param, "response_format");
  EXPECT_NE(e->message.find("more than 256 distinct branches"), std::string::npos) << e->message;
  EXPECT_NE(e->message.find("the limit (max_branches) is 256"), std::string::npos) << e->message;

  std::string big(300 * 1024, 'x');  // one long description: 300 KiB of schema
  e = parse_chat(chat_body(R"("response_format":{"type":"json_schema","json_schema":{"schema":
      {"type":"string","description":")" +
                           big + R"("}}})"),
                 &r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "response_format");
  EXPECT_NE(e->message.find("the limit (max_schema_bytes) is 262144"), std::string::npos) << e->message;
}

// 2,000 identical branches are one (tests/engine/grammar/limits_test.cpp checks the merge).
TEST(ParseChat, IdenticalSchemaBranchesAreAccepted) {
  ChatCompletionRequest r;
  ASSERT_FALSE(parse_chat(chat_body(any_of_format(2000, false)), &r));
  EXPECT_NE(r.job.constraint, nullptr);
}

TEST(ParseChat, MessagesShapes) {
  ChatCompletionRequest r;
  ASSERT_FALSE(parse_chat(R"({"messages":[
      {"role":"developer","content":"be brief"},
      {"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
      {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function",
          "function":{"name":"f","arguments":"{\"x\":1}"}}]},
      {"role":"tool","tool_call_id":"c1","content":"42"},
      {"role":"assistant","content":"ok","tool_calls":[{"id":"c2","type":"function",
          "function":{"name":"g","arguments":"not json"}}]}]})",
                          &r));
  const json::array& m = r.chat.messages;
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(json::serialize(m[0]), R"({"role":"system","content":"be brief"})");
  EXPECT_EQ(json::serialize(m[1]), R"({"role":"user","content":"a\nb"})");
  EXPECT_EQ(json::serialize(m[2]), R"({"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function",)"
                                   R"("function":{"name":"f","arguments":{"x":1}}}]})");
  EXPECT_EQ(json::serialize(m[3]), R"({"role":"tool","content":"42","tool_call_id":"c1"})");
  EXPECT_EQ(m[4].at("tool_calls").at(0).at("function").at("arguments"), "not json");
}

TEST(ParseChat, BadMessages) {
  ChatCompletionRequest r;
  auto expect = [&](const std::string& body, const std::string& param) {
    auto e = parse_chat(body, &r);
    ASSERT_TRUE(e) << body;
    EXPECT_EQ(e->http_status, 400);
    EXPECT_EQ(e->param, param) << body << ": " << e->message;
  };
  expect(R"({})", "messages");
  expect(R"({"messages":[]})", "messages");
  expect(R"({"messages":{}})", "messages");
  expect(R"({"messages":["hi"]})", "messages[0]");
  expect(R"({"messages":[{"content":"hi"}]})", "messages[0].role");
  expect(R"({"messages":[{"role":"wizard","content":"hi"}]})", "messages[0].role");
  expect(R"({"messages":[{"role":"user"}]})", "messages[0].content");
  expect(R"({"messages":[{"role":"user","content":5}]})", "messages[0].content");
  expect(R"({"messages":[{"role":"user","content":"a"},{"role":"user","content":[{"type":"image_url",
      "image_url":{"url":"http://x"}}]}]})",
         "messages[1].content[0].type");
  expect(R"({"messages":[{"role":"user","content":[{"type":"text"}]}]})", "messages[0].content[0].text");
  expect(R"({"messages":[{"role":"assistant","content":"","tool_calls":{}}]})", "messages[0].tool_calls");
  expect(R"({"messages":[{"role":"tool","content":"x","tool_call_id":7}]})", "messages[0].tool_call_id");
}

TEST(ParseCompletion, PromptShapes) {
  CompletionRequest r;
  ASSERT_FALSE(parse_completion(R"({"prompt":"hello"})", &r));
  EXPECT_EQ(r.prompt_text, "hello");
  r = {};
  ASSERT_FALSE(parse_completion(R"({"prompt":["hello"]})", &r));
  EXPECT_EQ(r.prompt_text, "hello");
  r = {};
  ASSERT_FALSE(parse_completion(R"({"prompt":[1,2,999]})", &r));
  EXPECT_FALSE(r.prompt_text.has_value());
  EXPECT_EQ(r.prompt_ids, (std::vector<int32_t>{1, 2, 999}));
  r = {};
  ASSERT_FALSE(parse_completion(R"({"prompt":[[4,5]]})", &r));
  EXPECT_EQ(r.prompt_ids, (std::vector<int32_t>{4, 5}));
}

TEST(ParseCompletion, BadPrompts) {
  CompletionRequest r;
  auto expect = [&](const std::string& body, const std::string& needle) {
    auto e = parse_completion(body, &r);
    ASSERT_TRUE(e) << body;
    EXPECT_EQ(e->param, "prompt") << body;
    EXPECT_NE(e->message.find(needle), std::string::npos) << body << ": " << e->message;
  };
  expect(R"({})", "required");
  expect(R"({"prompt":["a","b"]})", "batched prompts are not supported; send one request per prompt");
  expect(R"({"prompt":[[1],[2]]})", "batched prompts");
  expect(R"({"prompt":[1000]})", "out of range");
  expect(R"({"prompt":[-1]})", "out of range");
  expect(R"({"prompt":[1,"a"]})", "only integers");
  expect(R"({"prompt":[]})", "must not be empty");
  expect(R"({"prompt":5})", "must be a string");
}

TEST(ParseCompletion, EchoLogprobsSuffix) {
  CompletionRequest r;
  ASSERT_FALSE(parse_completion(R"({"prompt":"x","echo":true,"logprobs":null,"suffix":null})", &r));
  EXPECT_TRUE(r.echo);
  EXPECT_EQ(r.job.logprobs, -1);
  r = {};
  ASSERT_FALSE(parse_completion(R"({"prompt":"x","logprobs":5})", &r));
  EXPECT_EQ(r.job.logprobs, 5);
  ASSERT_FALSE(parse_completion(R"({"prompt":"x","logprobs":0})", &r));
  EXPECT_EQ(r.job.logprobs, 0);
  auto e = parse_completion(R"({"prompt":"x","logprobs":6})", &r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "logprobs");
  e = parse_completion(R"({"prompt":"x","logprobs":true})", &r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "logprobs");
  e = parse_completion(R"({"prompt":"x","logprobs":1,"echo":true})", &r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "echo");
  e = parse_completion(R"({"prompt":"x","suffix":"tail"})", &r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "suffix");
}

TEST(ParseCompletion, SharesTheSamplingFields) {
  CompletionRequest r;
  ASSERT_FALSE(parse_completion(R"({"prompt":"x","max_tokens":5,"temperature":0,"stop":"\n","stream":true})", &r));
  EXPECT_EQ(r.max_tokens, 5);
  EXPECT_EQ(r.job.sampling.temperature, 0.0f);
  EXPECT_EQ(r.job.stop, std::vector<std::string>{"\n"});
  EXPECT_TRUE(r.stream);
  ASSERT_FALSE(parse_completion(R"({"prompt":"x","n":3})", &r));
  EXPECT_EQ(r.n, 3);
  auto e = parse_completion(R"({"prompt":"x","n":17})", &r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "n");
}

TEST(FitContext, RequestedTokensMustFit) {
  int64_t max_tokens = 0;
  EXPECT_TRUE(fit_context(60, 40, -1, 100, "messages", &max_tokens).ok());
  EXPECT_EQ(max_tokens, 40);
  auto e = client_error(fit_context(60, 41, -1, 100, "messages", &max_tokens));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->http_status, 400);
  EXPECT_EQ(e->code, "context_length_exceeded");
  EXPECT_EQ(e->param, "messages");
  EXPECT_EQ(e->message,
            "This model's maximum context length is 100 tokens. However, you requested 101 tokens (60 in the "
            "messages, 41 in the completion). Please reduce the length of the messages or completion.");
  e = client_error(fit_context(90, 20, 16, 100, "prompt", &max_tokens));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "prompt");
  EXPECT_NE(e->message.find("110 tokens (90 in your prompt, 20 in the completion)"), std::string::npos) << e->message;
}

TEST(FitContext, DefaultFillsOrClampsToTheRoomLeft) {
  int64_t max_tokens = 0;
  EXPECT_TRUE(fit_context(60, std::nullopt, -1, 100, "messages", &max_tokens).ok());
  EXPECT_EQ(max_tokens, 40);
  EXPECT_TRUE(fit_context(99, std::nullopt, -1, 100, "messages", &max_tokens).ok());
  EXPECT_EQ(max_tokens, 1);
  EXPECT_TRUE(fit_context(10, std::nullopt, 16, 100, "prompt", &max_tokens).ok());
  EXPECT_EQ(max_tokens, 16);
  EXPECT_TRUE(fit_context(90, std::nullopt, 16, 100, "prompt", &max_tokens).ok());
  EXPECT_EQ(max_tokens, 10);
  auto e = client_error(fit_context(100, std::nullopt, -1, 100, "messages", &max_tokens));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, "context_length_exceeded");
  EXPECT_NE(e->message.find("your messages resulted in 100 tokens"), std::string::npos) << e->message;
}

}  // namespace
}  // namespace cellserve::server
