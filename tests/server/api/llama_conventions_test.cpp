// llama-server's conventions in the API layer: /completion bodies (n_predict, seed -1, wrong
// types), the server-wide sampling defaults and how a request's own fields win over them,
// "timings", /slots JSON and its query flag, and /completion and /slots end to end through a
// real Scheduler on the tiny Qwen3 model (skipped when shared/testdata is absent).
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "engine/models/model.h"
#include "server/api/completion_bodies.h"
#include "server/api/handlers.h"
#include "server/api/request_parsing.h"
#include "server/metrics.h"
#include "server/scheduler/scheduler.h"
#include "tests/server/api/client_error.h"
#include "tests/support/fake_response_writer.h"
#include "tests/support/testdata.h"

namespace cellserve::server {
namespace {

namespace json = boost::json;
using testing::FakeResponseWriter;
using testing::post;

ApiContext test_context() {
  ApiContext ctx;
  ctx.model_id = "tiny";
  ctx.n_vocab = 1000;
  ctx.n_ctx = 100;
  return ctx;
}

std::optional<net::ApiError> parse_llama(const std::string& body, LlamaCompletionRequest* out,
                                         const ApiContext& ctx = test_context()) {
  json::object o;
  if (auto e = client_error(parse_json_object(body, &o))) return e;
  return client_error(parse_llama_completion_request(o, ctx, out));
}

void expect_llama_error(const std::string& body, const std::string& param) {
  LlamaCompletionRequest r;
  const std::optional<net::ApiError> e = parse_llama(body, &r);
  ASSERT_TRUE(e.has_value()) << body;
  EXPECT_EQ(e->http_status, 400) << body;
  EXPECT_EQ(e->param, param) << body << ": " << e->message;
}

TEST(ParseLlamaCompletion, ReadsLlamaCppNames) {
  LlamaCompletionRequest r;
  ASSERT_FALSE(parse_llama(R"({"prompt":"hi","n_predict":7,"temperature":0.5,"top_k":3,"top_p":0.5,"min_p":0.1,)"
                           R"("seed":42,"stop":["\n"],"repeat_penalty":1.1,"repeat_last_n":8,"stream":true,)"
                           R"("ignore_eos":true,"return_tokens":true})",
                           &r));
  EXPECT_EQ(r.prompt_text, "hi");
  EXPECT_EQ(r.max_tokens, 7);
  EXPECT_FALSE(r.until_end);
  EXPECT_FLOAT_EQ(r.job.sampling.temperature, 0.5f);
  EXPECT_EQ(r.job.sampling.top_k, 3);
  EXPECT_FLOAT_EQ(r.job.sampling.top_p, 0.5f);
  EXPECT_FLOAT_EQ(r.job.sampling.min_p, 0.1f);
  EXPECT_EQ(r.job.sampling.seed, 42u);
  EXPECT_FLOAT_EQ(r.job.sampling.repeat_penalty, 1.1f);
  EXPECT_EQ(r.job.sampling.penalty_last_n, 8);
  EXPECT_EQ(r.job.stop, std::vector<std::string>{"\n"});
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.job.ignore_eos);
  EXPECT_TRUE(r.return_tokens);
}

TEST(ParseLlamaCompletion, NProbsAsksForTheTopLogprobs) {
  LlamaCompletionRequest r;
  ASSERT_FALSE(parse_llama(R"({"prompt":"hi","n_probs":4})", &r));
  EXPECT_EQ(r.n_probs, 4);
  EXPECT_EQ(r.job.logprobs, 4);
  LlamaCompletionRequest off;  // 0, as llama.cpp: none
  ASSERT_FALSE(parse_llama(R"({"prompt":"hi","n_probs":0,"post_sampling_probs":false})", &off));
  EXPECT_EQ(off.job.logprobs, -1);
  expect_llama_error(R"({"prompt":"hi","n_probs":21})", "n_probs");
  expect_llama_error(R"({"prompt":"hi","n_probs":-1})", "n_probs");
  expect_llama_error(R"({"prompt":"hi","n_probs":"3"})", "n_probs");
  expect_llama_error(R"({"prompt":"hi","n_probs":2,"post_sampling_probs":true})", "post_sampling_probs");
}

TEST(ParseLlamaCompletion, NPredictMinusOneMeansUntilTheEndAndWinsOverMaxTokens) {
  LlamaCompletionRequest r;
  ASSERT_FALSE(parse_llama(R"({"prompt":"hi","max_tokens":5,"n_predict":-1})", &r));
  EXPECT_TRUE(r.until_end);
  EXPECT_FALSE(r.max_tokens.has_value());
  LlamaCompletionRequest r2;
  ASSERT_FALSE(parse_llama(R"({"prompt":"hi","max_tokens":5,"n_predict":2})", &r2));
  EXPECT_EQ(r2.max_tokens, 2);
  LlamaCompletionRequest r3;  // max_tokens alone is accepted, as llama-server
  ASSERT_FALSE(parse_llama(R"({"prompt":"hi","max_tokens":5})", &r3));
  EXPECT_EQ(r3.max_tokens, 5);
  EXPECT_FALSE(r3.until_end);
}

TEST(ParseLlamaCompletion, TokenPromptsAndSeedMinusOne) {
  LlamaCompletionRequest r;
  ASSERT_FALSE(parse_llama(R"({"prompt":[1,2,3],"seed":-1})", &r));
  EXPECT_EQ(r.prompt_ids, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_FALSE(r.prompt_text.has_value());
  // -1 draws a random seed: two requests (almost surely) differ, and neither is 2^64-1.
  LlamaCompletionRequest r2;
  ASSERT_FALSE(parse_llama(R"({"prompt":[1],"seed":-1})", &r2));
  EXPECT_NE(r.job.sampling.seed, r2.job.sampling.seed);
}

TEST(ParseLlamaCompletion, WrongTypesAndValuesNameTheField) {
  expect_llama_error(R"({"prompt":"hi","n_predict":"x"})", "n_predict");
  expect_llama_error(R"({"prompt":"hi","n_predict":0})", "n_predict");
  expect_llama_error(R"({"prompt":"hi","n_predict":-2})", "n_predict");
  expect_llama_error(R"({"prompt":"hi","n_predict":1.5})", "n_predict");
  expect_llama_error(R"({"prompt":5})", "prompt");
  expect_llama_error(R"({"prompt":{"a":1}})", "prompt");
  expect_llama_error(R"({"n_predict":3})", "prompt");
  expect_llama_error(R"({"prompt":[1,1000]})", "prompt");
  expect_llama_error(R"({"prompt":"hi","temperature":"hot"})", "temperature");
  expect_llama_error(R"({"prompt":"hi","top_k":"3"})", "top_k");
  expect_llama_error(R"({"prompt":"hi","stream":1})", "stream");
  expect_llama_error(R"({"prompt":"hi","return_tokens":"yes"})", "return_tokens");
  expect_llama_error(R"({"prompt":"hi","json_schema":"object"})", "json_schema");
  expect_llama_error(R"({"prompt":"hi","grammar":"root ::= \"a"})", "grammar");
  expect_llama_error(R"({"prompt":"hi","grammar":7})", "grammar");
  expect_llama_error(R"({"prompt":"hi","grammar":"root ::= \"a\"","json_schema":{}})", "json_schema");
  expect_llama_error(R"({"prompt":"hi","stop":[1]})", "stop");
}

TEST(ParseLlamaCompletion, JsonSchemaConstrains) {
  LlamaCompletionRequest r;
  ASSERT_FALSE(parse_llama(R"({"prompt":"hi","json_schema":{"type":"object"}})", &r));
  EXPECT_NE(r.job.constraint, nullptr);
}

TEST(ParseLlamaCompletion, GrammarConstrains) {
  LlamaCompletionRequest r;
  ASSERT_FALSE(parse_llama(R"({"prompt":"hi","grammar":"root ::= \"RISK_LEVEL: \" [1-9]"})", &r));
  ASSERT_NE(r.job.constraint, nullptr);
  LlamaCompletionRequest empty;
  ASSERT_FALSE(parse_llama(R"({"prompt":"hi","grammar":""})", &empty));
  EXPECT_EQ(empty.job.constraint, nullptr);  // llama-server: an empty grammar is none
}

TEST(GenerationDefaults, FillFieldsTheRequestLeavesOut) {
  ApiContext ctx = test_context();
  ctx.defaults.sampling.temperature = 0;
  ctx.defaults.sampling.top_k = 7;
  ctx.defaults.sampling.top_p = 0.5f;
  ctx.defaults.seed = 99;
  ctx.defaults.n_predict = 3;
  LlamaCompletionRequest r;
  ASSERT_FALSE(parse_llama(R"({"prompt":"hi"})", &r, ctx));
  EXPECT_FLOAT_EQ(r.job.sampling.temperature, 0.0f);
  EXPECT_EQ(r.job.sampling.top_k, 7);
  EXPECT_FLOAT_EQ(r.job.sampling.top_p, 0.5f);
  EXPECT_EQ(r.job.sampling.seed, 99u);
  EXPECT_FLOAT_EQ(r.job.sampling.min_p, engine::SamplingParams{}.min_p);  // no flag: the engine's
  EXPECT_EQ(default_max_tokens(ctx, 16), 3);

  // The request's own value wins, field by field.
  LlamaCompletionRequest own;
  ASSERT_FALSE(parse_llama(R"({"prompt":"hi","temperature":1.5,"seed":5,"top_k":0})", &own, ctx));
  EXPECT_FLOAT_EQ(own.job.sampling.temperature, 1.5f);
  EXPECT_EQ(own.job.sampling.seed, 5u);
  EXPECT_EQ(own.job.sampling.top_k, 0);
  EXPECT_FLOAT_EQ(own.job.sampling.top_p, 0.5f);

  // The OpenAI endpoints take the same defaults.
  CompletionRequest c;
  json::object body = json::parse(R"({"prompt":"hi"})").as_object();
  ASSERT_TRUE(parse_completion_request(body, ctx, &c).ok());
  EXPECT_FLOAT_EQ(c.job.sampling.temperature, 0.0f);
  EXPECT_EQ(c.job.sampling.seed, 99u);
}

TEST(GenerationDefaults, WithoutNPredictEachEndpointKeepsItsOwn) {
  const ApiContext ctx = test_context();
  EXPECT_EQ(default_max_tokens(ctx, 16), 16);
  EXPECT_EQ(default_max_tokens(ctx, -1), -1);
  // Without --seed every request draws its own.
  LlamaCompletionRequest a, b;
  ASSERT_FALSE(parse_llama(R"({"prompt":"hi"})", &a));
  ASSERT_FALSE(parse_llama(R"({"prompt":"hi"})", &b));
  EXPECT_NE(a.job.sampling.seed, b.job.sampling.seed);
}

TEST(QueryFlag, ParsesOneZeroTrueFalse) {
  bool v = false;
  EXPECT_TRUE(query_flag("fail_on_no_slot=1", "fail_on_no_slot", &v).ok());
  EXPECT_TRUE(v);
  EXPECT_TRUE(query_flag("a=b&fail_on_no_slot=false", "fail_on_no_slot", &v).ok());
  EXPECT_FALSE(v);
  EXPECT_TRUE(query_flag("x=1", "fail_on_no_slot", &v).ok());  // absent: unchanged
  EXPECT_FALSE(v);
  EXPECT_TRUE(query_flag("", "fail_on_no_slot", &v).ok());
  const auto e = client_error(query_flag("fail_on_no_slot=maybe", "fail_on_no_slot", &v));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->param, "fail_on_no_slot");
}

TEST(TimingsJson, RatesFromMeasuredTimes) {
  Timings t;
  t.prompt_n = 4;
  t.cache_n = 2;
  t.prompt_ms = 2.0;
  t.predicted_n = 10;
  t.predicted_ms = 5.0;
  const json::object o = timings_json(t);
  EXPECT_EQ(o.at("prompt_n"), 4);
  EXPECT_EQ(o.at("cache_n"), 2);
  EXPECT_DOUBLE_EQ(o.at("prompt_per_token_ms").as_double(), 0.5);
  EXPECT_DOUBLE_EQ(o.at("prompt_per_second").as_double(), 2000.0);
  EXPECT_DOUBLE_EQ(o.at("predicted_per_token_ms").as_double(), 0.5);
  EXPECT_DOUBLE_EQ(o.at("predicted_per_second").as_double(), 2000.0);
  // Nothing generated: rates are 0, never inf or NaN (JSON has neither).
  const json::object zero = timings_json(Timings{});
  EXPECT_DOUBLE_EQ(zero.at("predicted_per_second").as_double(), 0.0);
  EXPECT_DOUBLE_EQ(zero.at("predicted_per_token_ms").as_double(), 0.0);
}

TEST(SlotsJson, IdleAndBusySlots) {
  std::vector<SlotState> states(2);
  states[0].id = 0;
  states[0].n_ctx = 256;
  states[1].id = 1;
  states[1].n_ctx = 256;
  states[1].is_processing = true;
  states[1].id_task = 3;
  states[1].n_prompt_tokens = 10;
  states[1].n_prompt_tokens_processed = 6;
  states[1].n_prompt_tokens_cache = 4;
  states[1].n_decoded = 5;
  states[1].n_predict = 8;
  const json::array a = slots_json(states);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(json::serialize(a[0]), R"({"id":0,"n_ctx":256,"is_processing":false})");
  const json::object& busy = a[1].as_object();
  EXPECT_EQ(busy.at("is_processing"), true);
  EXPECT_EQ(busy.at("id_task"), 3u);
  EXPECT_EQ(busy.at("n_prompt_tokens_processed"), 6);
  EXPECT_EQ(busy.at("params").at("n_predict"), 8);
  EXPECT_EQ(busy.at("next_token").at(0).at("n_remain"), 3);
  EXPECT_EQ(busy.at("next_token").at(0).at("n_decoded"), 5);
  EXPECT_EQ(busy.at("next_token").at(0).at("has_next_token"), true);
}

TEST(LlamaStopType, EosWordLimit) {
  EXPECT_STREQ(llama_stop_type(FinishReason::Stop, ""), "eos");
  EXPECT_STREQ(llama_stop_type(FinishReason::Stop, "\n"), "word");
  EXPECT_STREQ(llama_stop_type(FinishReason::Length, ""), "limit");
}

// /completion and /slots through a real Scheduler.
class LlamaEndpointsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CS_REQUIRE_TESTDATA();
    auto model = engine::load_model(testing::testdata_path("models/qwen3-tiny-f32.gguf"));
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    auto tok = engine::tokenizer::Tokenizer::from_gguf((*model)->file());
    ASSERT_TRUE(tok.ok()) << tok.status().to_string();
    tok_ = std::make_unique<engine::tokenizer::Tokenizer>(std::move(tok).value());
    engine::ContextParams p;
    p.n_ctx = 512;
    p.n_seq_max = scheduler_seq_count(2);
    p.n_threads = 2;
    auto c = engine::Context::create(*model, p);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    scheduler_ = std::make_unique<Scheduler>(
        std::move(c).value(), *tok_, SchedulerOptions{.n_slots = 2, .max_queue = 8, .n_ctx_per_slot = 256}, &metrics_);
    ctx_.tokenizer = tok_.get();
    ctx_.scheduler = scheduler_.get();
    ctx_.metrics = &metrics_;
    ctx_.model_id = "qwen3-tiny";
    ctx_.n_vocab = tok_->n_vocab();
    ctx_.n_ctx = 256;
  }
  FakeResponseWriter complete(const std::string& body) {
    FakeResponseWriter w;
    handle_llama_completion(ctx_, post("/completion", body), w);
    return w;
  }

  std::unique_ptr<engine::tokenizer::Tokenizer> tok_;
  Metrics metrics_;
  std::unique_ptr<Scheduler> scheduler_;
  ApiContext ctx_;
};

TEST_F(LlamaEndpointsTest, WholeAnswerHasLlamaServerFields) {
  const FakeResponseWriter w =
      complete(R"({"prompt":"Once upon a time","n_predict":4,"temperature":0,"return_tokens":true})");
  ASSERT_EQ(w.status, 200) << w.body;
  const json::object o = w.json_body().as_object();
  EXPECT_EQ(o.at("stop"), true);
  EXPECT_EQ(o.at("tokens_predicted"), 4);
  EXPECT_EQ(o.at("tokens").as_array().size(), 4u);
  EXPECT_EQ(o.at("stop_type"), "limit");
  EXPECT_EQ(o.at("generation_settings").at("n_predict"), 4);
  const json::object& t = o.at("timings").as_object();
  EXPECT_EQ(t.at("predicted_n"), 4);
  EXPECT_EQ(t.at("prompt_n").as_int64() + t.at("cache_n").as_int64(), o.at("tokens_evaluated").as_int64());
  EXPECT_GT(t.at("prompt_ms").as_double(), 0.0);
  EXPECT_GT(t.at("predicted_ms").as_double(), 0.0);
  // The same prompt and settings again: the same text (greedy), with the prompt now cached.
  const FakeResponseWriter again = complete(R"({"prompt":"Once upon a time","n_predict":4,"temperature":0})");
  ASSERT_EQ(again.status, 200);
  EXPECT_EQ(again.json_body().at("content"), o.at("content"));
  EXPECT_GT(again.json_body().at("timings").at("cache_n").as_int64(), 0);
  EXPECT_EQ(again.json_body().at("tokens").as_array().size(), 0u);  // without return_tokens
}

TEST_F(LlamaEndpointsTest, StreamEndsWithStopTrueAndNoDone) {
  const FakeResponseWriter w = complete(R"({"prompt":"Once upon a time","n_predict":3,"temperature":0,"stream":true})");
  ASSERT_TRUE(w.streamed);
  const std::vector<std::string> events = w.events();
  ASSERT_GE(events.size(), 2u);
  std::string text;
  int64_t last_predicted = 0;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    const json::object c = json::parse(events[i]).as_object();
    EXPECT_EQ(c.at("stop"), false);
    text += c.at("content").as_string();
    EXPECT_GE(c.at("tokens_predicted").as_int64(), last_predicted);
    last_predicted = c.at("tokens_predicted").as_int64();
  }
  const json::object last = json::parse(events.back()).as_object();
  EXPECT_EQ(last.at("stop"), true);
  EXPECT_EQ(last.at("content"), "");
  EXPECT_EQ(last.at("tokens_predicted"), 3);
  EXPECT_EQ(last.at("timings").at("predicted_n"), 3);
  for (const std::string& e : events) EXPECT_NE(e, "[DONE]");
  const FakeResponseWriter whole = complete(R"({"prompt":"Once upon a time","n_predict":3,"temperature":0})");
  EXPECT_EQ(whole.json_body().at("content").as_string(), text);
}

TEST_F(LlamaEndpointsTest, StopStringIsReportedAsWord) {
  // Greedy " wh wh wh ..." from this model: stop at the second " wh".
  const FakeResponseWriter w =
      complete(R"({"prompt":"Once upon a time","n_predict":8,"temperature":0,"stop":[" wh wh"]})");
  ASSERT_EQ(w.status, 200) << w.body;
  EXPECT_EQ(w.json_body().at("content"), "");
  EXPECT_EQ(w.json_body().at("stop_type"), "word");
  EXPECT_EQ(w.json_body().at("stopping_word"), " wh wh");
}

TEST_F(LlamaEndpointsTest, SlotsListEveryIdleSlotAndFailOnNoSlotPassesWhenOneIsFree) {
  FakeResponseWriter w;
  net::HttpRequest req;
  req.method = "GET";
  req.path = "/slots";
  req.query = "fail_on_no_slot=1";
  handle_slots(ctx_, req, w);
  ASSERT_EQ(w.status, 200) << w.body;
  const json::array a = w.json_body().as_array();
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].at("is_processing"), false);
  EXPECT_EQ(a[1].at("n_ctx"), 256);
}

}  // namespace
}  // namespace cellserve::server
