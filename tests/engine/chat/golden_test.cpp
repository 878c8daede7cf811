// Real chat templates rendered byte-identically to Python's Jinja2 under Hugging Face's settings
// (shared/testdata/templates/expected.json), and the templates embedded in the tiny Qwen GGUFs
// rendered to llama.cpp's golden prompt text.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <boost/json.hpp>

#include "engine/chat/chat_template.h"
#include "engine/chat/gguf_chat_template.h"
#include "engine/gguf/gguf_file.h"
#include "tests/support/testdata.h"

namespace cellserve::engine::chat {
namespace {

namespace json = boost::json;
using cellserve::testing::testdata_path;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The clock expected.json was rendered with: strftime_now() returns 2026-01-15 09:30:00.
RenderOptions fixed_time_options() {
  RenderOptions options;
  std::tm t{};
  t.tm_year = 2026 - 1900;
  t.tm_mon = 0;
  t.tm_mday = 15;
  t.tm_hour = 9;
  t.tm_min = 30;
  t.tm_wday = 4;  // Thursday
  t.tm_yday = 14;
  options.now = t;
  return options;
}

// The request a conversations.json entry describes, with the README's bos/eos tokens.
ChatRequest request_from_conversation(const json::object& conv) {
  ChatRequest r;
  r.messages = conv.at("messages").as_array();
  if (const json::value* tools = conv.if_contains("tools")) r.tools = tools->as_array();
  if (const json::value* agp = conv.if_contains("add_generation_prompt")) r.add_generation_prompt = agp->as_bool();
  if (const json::value* vars = conv.if_contains("vars")) r.extra_vars = vars->as_object();
  r.bos_token = "<s>";
  r.eos_token = "</s>";
  return r;
}

TEST(ChatTemplateGolden, AllTemplatesAndConversationsMatchJinja2) {
  CS_REQUIRE_TESTDATA();
  const json::value conversations = json::parse(read_file(testdata_path("templates/conversations.json")));
  const json::value expected = json::parse(read_file(testdata_path("templates/expected.json")));
  const json::array& cases = expected.at("cases").as_array();
  ASSERT_EQ(cases.size(), 70u);
  int matched = 0;
  for (const json::value& c : cases) {
    const std::string name(c.at("template").as_string());
    const std::string conv_name(c.at("conversation").as_string());
    SCOPED_TRACE(name + " x " + conv_name);
    const json::object* conv = nullptr;
    for (const json::value& v : conversations.as_array()) {
      if (v.at("name").as_string() == conv_name) conv = &v.as_object();
    }
    ASSERT_NE(conv, nullptr);
    auto tmpl = ChatTemplate::parse(read_file(testdata_path("templates/" + name)));
    ASSERT_TRUE(tmpl.ok()) << tmpl.status().to_string();
    auto rendered = tmpl->apply(request_from_conversation(*conv), fixed_time_options());
    if (c.at("rendered").is_null()) {
      // The template raised; expected.json records "TemplateError: <message>".
      std::string error(c.at("error").as_string());
      const std::string prefix = "TemplateError: ";
      if (error.rfind(prefix, 0) == 0) error = error.substr(prefix.size());
      ASSERT_FALSE(rendered.ok()) << "expected the template to raise: " << error;
      EXPECT_EQ(rendered.status().message(), error);
      if (rendered.status().message() == error) ++matched;
    } else {
      ASSERT_TRUE(rendered.ok()) << rendered.status().to_string();
      EXPECT_EQ(*rendered, std::string(c.at("rendered").as_string()));
      if (*rendered == c.at("rendered").as_string()) ++matched;
    }
  }
  EXPECT_EQ(matched, 70);
}

void expect_gguf_prompt(const std::string& model) {
  auto file = GgufFile::open(testdata_path("models/" + model + ".gguf"));
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  auto info = read_gguf_chat_template(*file);
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  EXPECT_EQ(info->bos_token, "<|endoftext|>");
  EXPECT_EQ(info->eos_token, "<|im_end|>");
  auto tmpl = ChatTemplate::parse(info->source);
  ASSERT_TRUE(tmpl.ok()) << tmpl.status().to_string();
  ChatRequest request;
  request.messages = json::parse(R"([{"role": "system", "content": "You are a helpful assistant."},
      {"role": "user", "content": "What is the capital of France? Answer in one word."}])")
                         .as_array();
  request.add_generation_prompt = true;
  request.bos_token = info->bos_token;
  request.eos_token = info->eos_token;
  auto prompt = tmpl->apply(request);
  ASSERT_TRUE(prompt.ok()) << prompt.status().to_string();
  const json::value golden = json::parse(read_file(testdata_path("golden/" + model + ".json")));
  EXPECT_EQ(*prompt, std::string(golden.at("prompt_text").as_string()));
}

TEST(ChatTemplateGolden, Qwen3TinyGgufTemplateGivesGoldenPrompt) {
  CS_REQUIRE_TESTDATA();
  expect_gguf_prompt("qwen3-tiny-f32");
}

TEST(ChatTemplateGolden, Qwen35TinyGgufTemplateGivesGoldenPrompt) {
  CS_REQUIRE_TESTDATA();
  expect_gguf_prompt("qwen35-tiny-f32");
}

TEST(ChatTemplateGolden, ModelWithoutTemplateIsNotFound) {
  CS_REQUIRE_TESTDATA();
  auto file = GgufFile::open(testdata_path("models/stories260K.gguf"));
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  auto info = read_gguf_chat_template(*file);
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.status().code(), StatusCode::NotFound);
}

}  // namespace
}  // namespace cellserve::engine::chat
