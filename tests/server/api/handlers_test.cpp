// The handlers end to end with a fake net::ResponseWriter: /v1/models, /tokenize, /detokenize,
// parse errors, and chat/completions (whole and streamed) through a real Scheduler on the tiny
// Qwen3 model from shared/testdata (skipped when it is absent).
#include "server/api/handlers.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "engine/gguf/gguf_file.h"
#include "server/api/request_parsing.h"
#include "server/metrics.h"
#include "server/scheduler/scheduler.h"
#include "tests/support/fake_response_writer.h"
#include "tests/support/testdata.h"

namespace cellserve::server {
namespace {

namespace json = boost::json;
using testing::FakeResponseWriter;
using testing::post;

TEST(ModelsHandler, ListsTheModel) {
  ApiContext ctx;
  ctx.model_id = "tiny";
  ctx.n_ctx = 512;
  ctx.n_vocab = 1000;
  ctx.created = 1700000000;
  ctx.model_meta["architecture"] = "qwen3";
  Metrics metrics;
  ctx.metrics = &metrics;
  FakeResponseWriter w;
  net::HttpRequest req;
  req.method = "GET";
  req.path = "/v1/models";
  handle_models(ctx, req, w);
  EXPECT_EQ(w.status, 200);
  EXPECT_EQ(w.content_type, "application/json");
  EXPECT_EQ(w.body,
            R"({"object":"list","data":[{"id":"tiny","object":"model","created":1700000000,"owned_by":"cellserve",)"
            R"("meta":{"architecture":"qwen3","n_ctx_per_request":512,"n_vocab":1000}}]})");
  EXPECT_NE(metrics.prometheus_text().find(R"(endpoint="/v1/models",status="200"} 1)"), std::string::npos);
}

TEST(ChatHandler, WithoutAModelAnswers503) {
  ApiContext ctx;
  FakeResponseWriter w;
  handle_chat_completions(ctx, post("/v1/chat/completions", "{}"), w);
  EXPECT_EQ(w.status, 503);
}

// A server context over the tiny Qwen3 model: tokenizer, template and a running scheduler.
class ApiServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CS_REQUIRE_TESTDATA();
    auto model = engine::load_model(testing::testdata_path("models/qwen3-tiny-f32.gguf"));
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    model_ = *model;
    auto tok = engine::tokenizer::Tokenizer::from_gguf(model_->file());
    ASSERT_TRUE(tok.ok()) << tok.status().to_string();
    tok_ = std::make_unique<engine::tokenizer::Tokenizer>(std::move(tok).value());
    auto meta = engine::chat::read_gguf_chat_template(model_->file());
    ASSERT_TRUE(meta.ok()) << meta.status().to_string();
    auto tmpl = engine::chat::ChatTemplate::parse(meta->source);
    ASSERT_TRUE(tmpl.ok()) << tmpl.status().to_string();
    ctx_.tokenizer = tok_.get();
    ctx_.chat_template = std::move(tmpl).value();
    ctx_.chat_meta = std::move(meta).value();
    ctx_.model_id = "qwen3-tiny";
    ctx_.n_vocab = tok_->n_vocab();
    ctx_.metrics = &metrics_;
    start_scheduler(SchedulerOptions{.n_slots = 2, .max_queue = 8, .n_ctx_per_slot = 256});
  }

  void start_scheduler(const SchedulerOptions& o) {
    scheduler_.reset();
    engine::ContextParams p;
    p.n_ctx = o.n_ctx_per_slot * o.n_slots;
    p.n_seq_max = scheduler_seq_count(o.n_slots);
    p.n_threads = 2;
    auto c = engine::Context::create(model_, p);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    scheduler_ = std::make_unique<Scheduler>(std::move(c).value(), *tok_, o, &metrics_);
    ctx_.scheduler = scheduler_.get();
    ctx_.n_ctx = o.n_ctx_per_slot;
  }

  FakeResponseWriter chat(const std::string& body) {
    FakeResponseWriter w;
    handle_chat_completions(ctx_, post("/v1/chat/completions", body), w);
    return w;
  }
  FakeResponseWriter complete(const std::string& body) {
    FakeResponseWriter w;
    handle_completions(ctx_, post("/v1/completions", body), w);
    return w;
  }
  bool counted(const std::string& endpoint, int status) const {
    return metrics_.prompt_text_contains("endpoint=\"" + endpoint + "\",status=\"" + std::to_string(status) + "\"}");
  }

  std::shared_ptr<const engine::Model> model_;
  std::unique_ptr<engine::tokenizer::Tokenizer> tok_;
  struct CountingMetrics : Metrics {
    bool prompt_text_contains(const std::string& s) const { return prometheus_text().find(s) != std::string::npos; }
  } metrics_;
  std::unique_ptr<Scheduler> scheduler_;
  ApiContext ctx_;
};

constexpr char kHello[] = R"("messages":[{"role":"user","content":"Hello"}])";

TEST_F(ApiServerTest, ChatParseErrorsAre400) {
  FakeResponseWriter w = chat("{not json");
  EXPECT_EQ(w.status, 400);
  EXPECT_EQ(w.content_type, "application/json");
  EXPECT_EQ(w.json_body().at("error").at("type"), "invalid_request_error");
  EXPECT_EQ(w.json_body().at("error").at("message").as_string().find("invalid JSON: "), 0u);
  w = chat(std::string("{") + kHello + R"(,"temperature":"x"})");
  EXPECT_EQ(w.status, 400);
  EXPECT_EQ(w.json_body().at("error").at("param"), "temperature");
  w = chat(R"({"messages":[]})");
  EXPECT_EQ(w.status, 400);
  EXPECT_TRUE(counted("/v1/chat/completions", 400));
}

TEST_F(ApiServerTest, ContextLengthExceeded) {
  FakeResponseWriter w = chat(std::string("{") + kHello + R"(,"max_tokens":1000})");
  EXPECT_EQ(w.status, 400);
  const json::value e = w.json_body().at("error");
  EXPECT_EQ(e.at("code"), "context_length_exceeded");
  EXPECT_EQ(e.at("param"), "messages");
  EXPECT_NE(e.at("message").as_string().find("maximum context length is 256 tokens"), std::string::npos);
}

TEST_F(ApiServerTest, ChatCompletionWhole) {
  FakeResponseWriter w = chat(std::string("{") + kHello +
                              R"(,"max_tokens":5,"temperature":0,"ignore_eos":true,"logprobs":true,"top_logprobs":2})");
  ASSERT_EQ(w.status, 200) << w.body;
  EXPECT_EQ(w.content_type, "application/json");
  const json::value v = w.json_body();
  EXPECT_EQ(v.at("object"), "chat.completion");
  EXPECT_EQ(v.at("model"), "qwen3-tiny");
  EXPECT_EQ(v.at("id").as_string().find("chatcmpl-"), 0u);
  const json::value& choice = v.at("choices").at(0);
  EXPECT_EQ(choice.at("message").at("role"), "assistant");
  EXPECT_TRUE(choice.at("message").at("content").is_string());
  EXPECT_EQ(choice.at("finish_reason"), "length");
  const json::array& lp = choice.at("logprobs").at("content").as_array();
  EXPECT_EQ(lp.size(), 5u);
  EXPECT_EQ(lp[0].at("top_logprobs").as_array().size(), 2u);
  EXPECT_EQ(v.at("usage").at("completion_tokens"), 5);
  EXPECT_GT(v.at("usage").at("prompt_tokens").as_int64(), 5);
  EXPECT_TRUE(counted("/v1/chat/completions", 200));
}

TEST_F(ApiServerTest, ChatCompletionStreamed) {
  FakeResponseWriter w = chat(std::string("{") + kHello +
                              R"(,"max_tokens":6,"temperature":0,"ignore_eos":true,"stream":true,)"
                              R"("stream_options":{"include_usage":true}})");
  ASSERT_TRUE(w.streamed) << w.body;
  EXPECT_EQ(w.status, 200);
  EXPECT_EQ(w.content_type, "text/event-stream");
  EXPECT_EQ(w.header("Cache-Control"), "no-cache");
  EXPECT_TRUE(w.ended);
  const std::vector<std::string> events = w.events();
  ASSERT_GE(events.size(), 4u);
  EXPECT_EQ(events.back(), "[DONE]");
  const json::value first = json::parse(events[0]);
  EXPECT_EQ(json::serialize(first.at("choices").at(0).at("delta")), R"({"role":"assistant","content":""})");
  EXPECT_TRUE(first.at("usage").is_null());
  std::string id = std::string(first.at("id").as_string());
  std::string text;
  for (size_t i = 1; i + 3 < events.size(); ++i) {
    const json::value c = json::parse(events[i]);
    EXPECT_EQ(c.at("id").as_string(), id);
    EXPECT_EQ(c.at("object"), "chat.completion.chunk");
    EXPECT_TRUE(c.at("usage").is_null());
    EXPECT_TRUE(c.at("choices").at(0).at("finish_reason").is_null());
    text += c.at("choices").at(0).at("delta").at("content").as_string();
  }
  const json::value fin = json::parse(events[events.size() - 3]);
  EXPECT_EQ(json::serialize(fin.at("choices").at(0).at("delta")), "{}");
  EXPECT_EQ(fin.at("choices").at(0).at("finish_reason"), "length");
  const json::value usage = json::parse(events[events.size() - 2]);
  EXPECT_TRUE(usage.at("choices").as_array().empty());
  EXPECT_EQ(usage.at("usage").at("completion_tokens"), 6);

  // The same request whole gives the same greedy text.
  FakeResponseWriter whole = chat(std::string("{") + kHello + R"(,"max_tokens":6,"temperature":0,"ignore_eos":true})");
  EXPECT_EQ(whole.json_body().at("choices").at(0).at("message").at("content").as_string(), text);
}

// A schema the token budget cannot hold: the (empty) fragment is not a complete answer.
TEST_F(ApiServerTest, JsonSchemaBeyondTheBudgetFinishesWithLength) {
  const std::string format = R"("response_format":{"type":"json_schema","json_schema":{"name":"v","schema":
      {"type":"object","properties":{"risk_level_of_this_transaction":{"type":"integer"}},
       "required":["risk_level_of_this_transaction"]}}})";
  FakeResponseWriter w = chat(std::string("{") + kHello + R"(,"max_tokens":2,"temperature":0,)" + format + "}");
  ASSERT_EQ(w.status, 200) << w.body;
  const json::value body = w.json_body();
  EXPECT_EQ(body.at("choices").at(0).at("finish_reason"), "length");
  EXPECT_LE(body.at("usage").at("completion_tokens").as_int64(), 2);
  FakeResponseWriter s =
      chat(std::string("{") + kHello + R"(,"max_tokens":2,"temperature":0,"stream":true,)" + format + "}");
  const std::vector<std::string> events = s.events();
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(json::parse(events[events.size() - 2]).at("choices").at(0).at("finish_reason"), "length");
}

TEST_F(ApiServerTest, LogitBiasBanningEveryTokenIs400) {
  std::string bias;
  for (int32_t id = 0; id < tok_->n_vocab(); ++id)
    bias += (id > 0 ? "," : "") + ("\"" + std::to_string(id) + "\":-100");
  FakeResponseWriter w = chat(std::string("{") + kHello + R"(,"logit_bias":{)" + bias + "}}");
  EXPECT_EQ(w.status, 400) << w.body;
  EXPECT_EQ(w.json_body().at("error").at("param"), "logit_bias");
}

TEST_F(ApiServerTest, StreamWithoutUsageHasNoUsageKey) {
  FakeResponseWriter w = chat(std::string("{") + kHello + R"(,"max_tokens":2,"stream":true})");
  const std::vector<std::string> events = w.events();
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.back(), "[DONE]");
  for (size_t i = 0; i + 1 < events.size(); ++i) EXPECT_FALSE(json::parse(events[i]).as_object().contains("usage"));
}

TEST_F(ApiServerTest, ClientGoneMidStreamCancels) {
  FakeResponseWriter w;
  w.writes_before_gone = 2;
  handle_chat_completions(
      ctx_,
      post("/v1/chat/completions", std::string("{") + kHello + R"(,"max_tokens":200,"ignore_eos":true,"stream":true})"),
      w);
  EXPECT_EQ(w.writes.size(), 2u);
  EXPECT_TRUE(w.ended);
  // The slot is free again: a new request completes.
  FakeResponseWriter next = chat(std::string("{") + kHello + R"(,"max_tokens":2})");
  EXPECT_EQ(next.status, 200);
}

// The regression for a slot leak: a non-streamed request whose client left was checked only when
// no token came for 50 ms, so a fast generation ran to max_tokens, holding its slot, and was
// counted 200. Now it is cancelled within a token and counted 499.
TEST_F(ApiServerTest, ClientGoneBeforeAWholeAnswerCancelsAndCounts499) {
  FakeResponseWriter w;
  w.checks_before_gone = 3;
  handle_chat_completions(
      ctx_, post("/v1/chat/completions", std::string("{") + kHello + R"(,"max_tokens":200,"ignore_eos":true})"), w);
  EXPECT_EQ(w.sends, 0);
  EXPECT_LE(w.checks, 5);
  EXPECT_TRUE(counted("/v1/chat/completions", 499));
  EXPECT_FALSE(counted("/v1/chat/completions", 200));
  FakeResponseWriter next = chat(std::string("{") + kHello + R"(,"max_tokens":2})");
  EXPECT_EQ(next.status, 200);
}

TEST_F(ApiServerTest, QueueFullIs429WithRetryAfter) {
  start_scheduler(SchedulerOptions{.n_slots = 1, .max_queue = 1, .n_ctx_per_slot = 4096});
  // Long jobs until one is refused: the slot is busy and the queue full (the tiny model is fast,
  // so fill it right before the request).
  std::vector<std::shared_ptr<JobEvents>> busy;
  for (int i = 0; i < 16; ++i) {
    GenerationJob j;
    j.prompt = tok_->tokenize("Once upon a time", true, true);
    j.max_tokens = 4000;
    j.ignore_eos = true;
    auto r = scheduler_->submit(std::move(j));
    if (!r.ok()) break;
    busy.push_back(*r);
    // Wait until the first job holds the slot, so the next one waits in the queue.
    while (i == 0 && scheduler_->busy_slots() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  FakeResponseWriter w = chat(std::string("{") + kHello + R"(,"max_tokens":2})");
  EXPECT_EQ(w.status, 429);
  EXPECT_EQ(w.header("Retry-After"), "1");
  EXPECT_EQ(w.json_body().at("error").at("type"), "rate_limit_error");
  for (auto& e : busy) e->cancel();
}

TEST_F(ApiServerTest, CompletionWithEchoAndDefaults) {
  FakeResponseWriter w = complete(R"({"prompt":"Once upon a time","echo":true,"temperature":0,"ignore_eos":true})");
  ASSERT_EQ(w.status, 200) << w.body;
  const json::value v = w.json_body();
  EXPECT_EQ(v.at("object"), "text_completion");
  EXPECT_EQ(v.at("id").as_string().find("cmpl-"), 0u);
  const json::value& choice = v.at("choices").at(0);
  EXPECT_EQ(choice.at("text").as_string().find("Once upon a time"), 0u);
  EXPECT_EQ(v.at("usage").at("completion_tokens"), 16);  // OpenAI's default max_tokens
  EXPECT_EQ(choice.at("finish_reason"), "length");
}

TEST_F(ApiServerTest, CompletionFromTokenIdsWithLegacyLogprobs) {
  const std::vector<int32_t> ids = tok_->tokenize("The capital of France is", false, false);
  json::array prompt;
  for (int32_t id : ids) prompt.push_back(id);
  FakeResponseWriter w = complete(R"({"prompt":)" + json::serialize(prompt) +
                                  R"(,"max_tokens":3,"temperature":0,"ignore_eos":true,"logprobs":2})");
  ASSERT_EQ(w.status, 200) << w.body;
  const json::value v = w.json_body();
  EXPECT_EQ(v.at("usage").at("prompt_tokens"), static_cast<int64_t>(ids.size()));
  const json::value& lp = v.at("choices").at(0).at("logprobs");
  EXPECT_EQ(lp.at("tokens").as_array().size(), 3u);
  EXPECT_EQ(lp.at("token_logprobs").as_array().size(), 3u);
  EXPECT_EQ(lp.at("top_logprobs").at(0).as_object().size(), 2u);
  EXPECT_EQ(lp.at("text_offset").at(0), 0);
}

TEST_F(ApiServerTest, CompletionStreamed) {
  FakeResponseWriter w = complete(R"({"prompt":"Once","max_tokens":4,"temperature":0,"ignore_eos":true,"stream":true,)"
                                  R"("echo":true,"stream_options":{"include_usage":true}})");
  const std::vector<std::string> events = w.events();
  ASSERT_GE(events.size(), 4u);
  EXPECT_EQ(json::parse(events[0]).at("choices").at(0).at("text"), "Once");
  EXPECT_EQ(events.back(), "[DONE]");
  const json::value fin = json::parse(events[events.size() - 3]);
  EXPECT_EQ(fin.at("object"), "text_completion");
  EXPECT_EQ(fin.at("choices").at(0).at("finish_reason"), "length");
  EXPECT_EQ(json::parse(events[events.size() - 2]).at("usage").at("completion_tokens"), 4);
}

TEST_F(ApiServerTest, CompletionErrors) {
  FakeResponseWriter w = complete(R"({"prompt":["a","b"]})");
  EXPECT_EQ(w.status, 400);
  EXPECT_EQ(w.json_body().at("error").at("message"), "batched prompts are not supported; send one request per prompt");
  w = complete(R"({"prompt":"x","max_tokens":300})");
  EXPECT_EQ(w.status, 400);
  EXPECT_EQ(w.json_body().at("error").at("code"), "context_length_exceeded");
  EXPECT_EQ(w.json_body().at("error").at("param"), "prompt");
  w = complete(R"({"prompt":[)" + std::to_string(tok_->n_vocab()) + "]}");
  EXPECT_EQ(w.status, 400);
  EXPECT_TRUE(counted("/v1/completions", 400));
}

TEST_F(ApiServerTest, ChatWithToolCallsRendersArgumentsAsAnObject) {
  FakeResponseWriter w = chat(R"({"messages":[{"role":"user","content":"weather?"},
      {"role":"assistant","content":null,"tool_calls":[{"id":"1","type":"function",
       "function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}}]},
      {"role":"tool","tool_call_id":"1","content":"sunny"}],
      "tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}],
      "max_tokens":2})");
  EXPECT_EQ(w.status, 200) << w.body;
}

TEST_F(ApiServerTest, ToolCallArgumentsRenderAsJsonInTheQwenTemplate) {
  json::object body;
  ASSERT_TRUE(parse_json_object(R"({"messages":[{"role":"user","content":"weather?"},
      {"role":"assistant","content":null,"tool_calls":[{"id":"1","type":"function",
       "function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}}]}]})",
                                &body)
                  .ok());
  ChatCompletionRequest r;
  ASSERT_TRUE(parse_chat_request(body, ctx_, &r).ok());
  r.chat.bos_token = ctx_.chat_meta.bos_token;
  r.chat.eos_token = ctx_.chat_meta.eos_token;
  auto text = ctx_.chat_template->apply(r.chat);
  ASSERT_TRUE(text.ok()) << text.status().to_string();
  EXPECT_NE(text->find(R"({"name": "get_weather", "arguments": {"city": "Paris"}})"), std::string::npos) << *text;
  ASSERT_TRUE(build_chat_prompt(ctx_, &r).ok());
  EXPECT_FALSE(r.job.prompt.empty());
}

TEST_F(ApiServerTest, TokenizeAndDetokenize) {
  FakeResponseWriter w;
  handle_tokenize(ctx_, post("/tokenize", R"({"content":"Hello world"})"), w);
  ASSERT_EQ(w.status, 200) << w.body;
  const json::array tokens = w.json_body().at("tokens").as_array();
  const std::vector<int32_t> expected = tok_->tokenize("Hello world", false, true);
  ASSERT_EQ(tokens.size(), expected.size());
  for (size_t i = 0; i < tokens.size(); ++i) EXPECT_EQ(tokens[i], expected[i]);

  FakeResponseWriter p;
  handle_tokenize(ctx_, post("/tokenize", R"({"content":"Hello","with_pieces":true})"), p);
  const json::value first = p.json_body().at("tokens").at(0);
  EXPECT_TRUE(first.at("id").is_int64());
  EXPECT_TRUE(first.at("piece").is_string());

  FakeResponseWriter d;
  handle_detokenize(ctx_, post("/detokenize", R"({"tokens":)" + json::serialize(tokens) + "}"), d);
  ASSERT_EQ(d.status, 200) << d.body;
  EXPECT_EQ(d.json_body().at("content"), "Hello world");

  FakeResponseWriter bad;
  handle_detokenize(ctx_, post("/detokenize", R"({"tokens":[-1]})"), bad);
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.json_body().at("error").at("param"), "tokens");
  FakeResponseWriter missing;
  handle_tokenize(ctx_, post("/tokenize", R"({"add_special":true})"), missing);
  EXPECT_EQ(missing.status, 400);
  EXPECT_EQ(missing.json_body().at("error").at("param"), "content");
  EXPECT_TRUE(counted("/tokenize", 200));
  EXPECT_TRUE(counted("/detokenize", 400));
}

}  // namespace
}  // namespace cellserve::server
