// The public API around the interpreter: ChatRequest → template variables, the GGUF helper on an
// in-memory model, and concurrent renders of one parsed template.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "engine/chat/chat_template.h"
#include "engine/chat/gguf_chat_template.h"
#include "engine/gguf/gguf_writer.h"
#include "tests/engine/chat/chat_test_util.h"

namespace cellserve::engine::chat {
namespace {

namespace json = boost::json;

ChatRequest basic_request() {
  ChatRequest r;
  r.messages = json::parse(R"([{"role": "user", "content": "Hi"}])").as_array();
  r.bos_token = "<s>";
  r.eos_token = "</s>";
  return r;
}

TEST(ChatTemplateApi, RequestBecomesHuggingFaceVariables) {
  auto tmpl = ChatTemplate::parse(
      "{{ bos_token }}|{{ messages[0].content }}|{{ add_generation_prompt }}|{{ tools is defined }}|"
      "{{ enable_thinking is defined }}|{{ eos_token }}");
  ASSERT_TRUE(tmpl.ok()) << tmpl.status().to_string();
  ChatRequest r = basic_request();
  auto out = tmpl->apply(r);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(*out, "<s>|Hi|True|False|False|</s>");

  r.tools = json::array{json::object{{"type", "function"}}};
  r.add_generation_prompt = false;
  r.extra_vars = json::object{{"enable_thinking", false}, {"bos_token", "[BOS]"}};  // vars override
  out = tmpl->apply(r);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(*out, "[BOS]|Hi|False|True|True|</s>");
}

TEST(ChatTemplateApi, JsonObjectsKeepTheirKeyOrder) {
  auto tmpl = ChatTemplate::parse("{% for k, v in args|items %}{{ k }}={{ v }};{% endfor %}{{ args|tojson }}");
  ASSERT_TRUE(tmpl.ok());
  auto out = tmpl->render(json::parse(R"({"args": {"zeta": 1, "alpha": [true, null, 2.5], "mid": "é"}})").as_object());
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(*out, "zeta=1;alpha=[True, None, 2.5];mid=é;{\"zeta\": 1, \"alpha\": [true, null, 2.5], \"mid\": \"é\"}");
}

TEST(ChatTemplateApi, StrftimeNowUsesTheGivenClockOrTheLocalTime) {
  auto tmpl = ChatTemplate::parse("{{ strftime_now('%d %b %Y') }}");
  ASSERT_TRUE(tmpl.ok());
  auto fixed = tmpl->render({}, testing::fixed_time_options());
  ASSERT_TRUE(fixed.ok());
  EXPECT_EQ(*fixed, "15 Jan 2026");
  auto now = tmpl->render({});
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(now->size(), 11u) << *now;
}

TEST(ChatTemplateApi, ConcurrentRendersOfOneTemplate) {
  auto tmpl = ChatTemplate::parse(
      "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{{ m.content }}{% endfor %}={{ "
      "ns.n }}");
  ASSERT_TRUE(tmpl.ok());
  std::vector<std::thread> threads;
  std::vector<std::string> results(8);
  for (size_t t = 0; t < results.size(); ++t) {
    threads.emplace_back([&, t] {
      json::array messages;
      for (size_t i = 0; i <= t; ++i) messages.push_back(json::object{{"content", std::to_string(i)}});
      for (int rep = 0; rep < 50; ++rep) {
        auto out = tmpl->render(json::object{{"messages", messages}});
        results[t] = out.ok() ? *out : out.status().to_string();
      }
    });
  }
  for (auto& th : threads) th.join();
  for (size_t t = 0; t < results.size(); ++t) {
    std::string expected;
    for (size_t i = 0; i <= t; ++i) expected += std::to_string(i);
    EXPECT_EQ(results[t], expected + "=" + std::to_string(t + 1));
  }
}

GgufWriter vocab_writer() {
  GgufWriter w;
  w.set("general.architecture", GgufValue::string("llama"));
  w.set("tokenizer.ggml.tokens", GgufValue::string_array({"<unk>", "<s>", "</s>", "a"}));
  w.set("tokenizer.ggml.bos_token_id", GgufValue::u32(1));
  w.set("tokenizer.ggml.eos_token_id", GgufValue::u32(2));
  w.set("tokenizer.chat_template", GgufValue::string("{{ bos_token }}{{ messages[0].content }}{{ eos_token }}"));
  return w;
}

TEST(ChatTemplateGguf, ReadsTemplateAndSpecialTokenTexts) {
  const std::vector<std::byte> bytes = vocab_writer().to_bytes();
  auto file = GgufFile::parse(bytes);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  auto info = read_gguf_chat_template(*file);
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  EXPECT_EQ(info->bos_token, "<s>");
  EXPECT_EQ(info->eos_token, "</s>");
  auto tmpl = ChatTemplate::parse(info->source);
  ASSERT_TRUE(tmpl.ok());
  ChatRequest r = basic_request();
  r.bos_token = info->bos_token;
  r.eos_token = info->eos_token;
  auto out = tmpl->apply(r);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, "<s>Hi</s>");
}

TEST(ChatTemplateGguf, MissingTemplateAndBadTokenIds) {
  GgufWriter no_template = vocab_writer();
  no_template.remove("tokenizer.chat_template");
  const auto bytes1 = no_template.to_bytes();
  auto file1 = GgufFile::parse(bytes1);
  ASSERT_TRUE(file1.ok());
  EXPECT_EQ(read_gguf_chat_template(*file1).status().code(), StatusCode::NotFound);

  GgufWriter bad_id = vocab_writer();
  bad_id.set("tokenizer.ggml.eos_token_id", GgufValue::u32(99));
  const auto bytes2 = bad_id.to_bytes();
  auto file2 = GgufFile::parse(bytes2);
  ASSERT_TRUE(file2.ok());
  auto info = read_gguf_chat_template(*file2);
  EXPECT_EQ(info.status().code(), StatusCode::DataLoss);
  EXPECT_NE(info.status().message().find("outside the vocabulary"), std::string::npos) << info.status().message();

  GgufWriter no_bos = vocab_writer();
  no_bos.remove("tokenizer.ggml.bos_token_id");
  const auto bytes3 = no_bos.to_bytes();
  auto file3 = GgufFile::parse(bytes3);
  ASSERT_TRUE(file3.ok());
  auto info3 = read_gguf_chat_template(*file3);
  ASSERT_TRUE(info3.ok());
  EXPECT_EQ(info3->bos_token, "");
}

}  // namespace
}  // namespace cellserve::engine::chat
