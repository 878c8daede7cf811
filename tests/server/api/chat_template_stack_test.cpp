// The serve stack's chat template (the model's, a built-in by name, the chatml fallback for a model
// without one) as the log, /props and POST /apply-template report it; and the model-name check
// with and without --accept-any-model, through the real handlers on the tiny models of
// shared/testdata (skipped when absent).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <boost/json/parse.hpp>

#include "server/api/handlers.h"
#include "server/metrics.h"
#include "server/serve_stack.h"
#include "tests/support/fake_response_writer.h"
#include "tests/support/testdata.h"

namespace cellserve::server {
namespace {

namespace json = boost::json;
using testing::FakeResponseWriter;
using testing::post;

constexpr char kMessages[] = R"({"messages":[{"role":"system","content":"You are a helpful assistant."},)"
                             R"({"role":"user","content":"What is the capital of France? Answer in one word."}])";
constexpr char kChatml[] =
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nWhat is the capital of France? "
    "Answer in one word.<|im_end|>\n<|im_start|>assistant\n";

class ChatTemplateStack : public ::testing::Test {
 protected:
  // Loads `model` from shared/testdata with `o`'s template and model-name options.
  void load(const std::string& model, ServeStackOptions o = {}) {
    o.model_path = testing::testdata_path("models/" + model);
    o.parallel = 1;
    o.ctx_size = 512;
    o.threads = 1;
    log_.clear();
    auto stack = load_serve_stack(o, &metrics_, [this](const std::string& line) { log_.push_back(line); });
    ASSERT_TRUE(stack.ok()) << stack.status().to_string();
    stack_ = std::move(stack).value();
  }
  FakeResponseWriter apply(const std::string& body) {
    FakeResponseWriter w;
    handle_apply_template(stack_->api, post("/apply-template", body), w);
    return w;
  }
  FakeResponseWriter chat(const std::string& body) {
    FakeResponseWriter w;
    handle_chat_completions(stack_->api, post("/v1/chat/completions", body), w);
    return w;
  }
  // `kMessages` with `extra` fields after the messages.
  static std::string with(const std::string& extra) {
    std::string body = kMessages;
    return body + (extra.empty() ? "" : "," + extra) + "}";
  }

  Metrics metrics_;
  std::vector<std::string> log_;
  std::unique_ptr<ServeStack> stack_;
};

TEST_F(ChatTemplateStack, AModelWithoutATemplateChatsWithChatmlAndSaysSo) {
  CS_REQUIRE_TESTDATA();
  load("stories260K.gguf");
  int mentions = 0;
  for (const std::string& line : log_) mentions += line.find("chat template") != std::string::npos;
  EXPECT_EQ(mentions, 1);
  EXPECT_NE(std::find(log_.begin(), log_.end(),
                      "the model has no chat template; using the built-in chatml (choose another with "
                      "--chat-template NAME or --chat-template-file FILE)"),
            log_.end());
  EXPECT_EQ(stack_->props.at("chat_template_source"), "fallback");
  EXPECT_EQ(stack_->props.at("chat_template_name"), "chatml");
  EXPECT_EQ(stack_->props.at("bos_token"), "<s>");
  FakeResponseWriter w = apply(with(""));
  ASSERT_EQ(w.status, 200) << w.body;
  EXPECT_EQ(w.json_body().at("prompt"), kChatml);
  // A chat is answered (it used to be a 400), with chatml's prompt and the model's BOS.
  w = chat(with(R"("max_tokens":2,"temperature":0)"));
  ASSERT_EQ(w.status, 200) << w.body;
  const auto bos_and_prompt = stack_->tokenizer->tokenize(kChatml, /*add_special=*/true, /*parse_special=*/true);
  EXPECT_EQ(w.json_body().at("usage").at("prompt_tokens").as_int64(), static_cast<int64_t>(bos_and_prompt.size()));
}

TEST_F(ChatTemplateStack, ABuiltinByNameReplacesTheModelsTemplate) {
  CS_REQUIRE_TESTDATA();
  load("qwen3-tiny-f32.gguf");
  EXPECT_EQ(stack_->props.at("chat_template_source"), "model");
  EXPECT_TRUE(stack_->props.at("chat_template_name").is_null());
  FakeResponseWriter own = apply(with(""));
  EXPECT_EQ(own.json_body().at("prompt"), kChatml);

  ServeStackOptions o;
  o.chat_template.name = "llama3";
  load("qwen3-tiny-f32.gguf", o);
  EXPECT_EQ(stack_->props.at("chat_template_source"), "builtin");
  EXPECT_EQ(stack_->props.at("chat_template_name"), "llama3");
  FakeResponseWriter w = apply(with(R"("add_generation_prompt":false)"));
  ASSERT_EQ(w.status, 200) << w.body;
  EXPECT_EQ(w.json_body().at("prompt"),
            "<|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nWhat is the capital of France? Answer in one word.<|eot_id|>");
}

TEST_F(ChatTemplateStack, ApplyTemplateIgnoresTheGenerationFieldsAndCountsItself) {
  CS_REQUIRE_TESTDATA();
  load("qwen3-tiny-f32.gguf");
  // It generates nothing, so "model" and the sampling fields are not read.
  FakeResponseWriter w =
      apply(with(R"("model":"gpt-4o","temperature":"hot","chat_template_kwargs":{"enable_thinking":false})"));
  ASSERT_EQ(w.status, 200) << w.body;
  EXPECT_EQ(w.json_body().at("prompt").as_string(), std::string(kChatml) + "<think>\n\n</think>\n\n");
  w = apply(R"({"messages":"hi"})");
  EXPECT_EQ(w.status, 400);
  EXPECT_EQ(w.json_body().at("error").at("param"), "messages");
  const std::string text = metrics_.prometheus_text();
  EXPECT_NE(text.find(R"(endpoint="/apply-template",status="200"} 1)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(endpoint="/apply-template",status="400"} 1)"), std::string::npos) << text;
}

TEST_F(ChatTemplateStack, AnUnknownModelIs404UnlessAnyModelIsAccepted) {
  CS_REQUIRE_TESTDATA();
  load("qwen3-tiny-f32.gguf");
  FakeResponseWriter w = chat(with(R"("model":"gpt-4o","max_tokens":1)"));
  EXPECT_EQ(w.status, 404);
  EXPECT_EQ(w.json_body().at("error").at("code"), "model_not_found");
  EXPECT_EQ(chat(with(R"("model":"qwen3-tiny-f32","max_tokens":1)")).status, 200);

  ServeStackOptions o;
  o.accept_any_model = true;
  load("qwen3-tiny-f32.gguf", o);
  w = chat(with(R"("model":"gpt-4o","max_tokens":1)"));
  ASSERT_EQ(w.status, 200) << w.body;
  EXPECT_EQ(w.json_body().at("model"), "qwen3-tiny-f32");
  EXPECT_EQ(stack_->props.at("settings").at("accept_any_model"), true);
}

TEST_F(ChatTemplateStack, BadTemplateOptionsAreRefusedBeforeLoading) {
  ServeStackOptions o;
  o.model_path = "/nonexistent.gguf";
  o.chat_template.name = "vicuna";
  Status s = validate(o);
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_NE(s.message().find("chatml, llama3, mistral, qwen3"), std::string::npos) << s.message();
  o.chat_template = {.file = "/nonexistent/t.jinja", .name = ""};
  s = validate(o);
  EXPECT_EQ(s.message(), "--chat-template-file /nonexistent/t.jinja: No such file or directory");
  auto loaded = load_serve_stack(o, &metrics_, [](const std::string&) {});
  EXPECT_FALSE(loaded.ok());
}

}  // namespace
}  // namespace cellserve::server
