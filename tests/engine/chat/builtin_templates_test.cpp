// The built-in templates (engine/chat/builtin_templates.h) against the renderings of the
// published templates they follow (shared/testdata/templates/expected.json, Python's Jinja2):
// qwen3 matches Qwen3 on every conversation; chatml, llama3 and mistral match Qwen2.5, Llama 3.1
// and Mistral Small 3.2 once the parts those add on their own (a default system prompt, a date
// header, the BOS text) are accounted for, as each test states; and llama-server's renderings of
// its built-ins of the same formats.
#include "engine/chat/builtin_templates.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <boost/json.hpp>

#include "engine/chat/chat_template.h"
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

// One conversation of conversations.json and the reference rendering of `reference_template`.
struct Case {
  std::string name;
  ChatRequest request;    // with the README's bos/eos texts "<s>", "</s>"
  json::value reference;  // the rendered text, or null where the published template raised
  bool has_tools = false;
  bool has_system = false;
};

std::vector<Case> cases_for(const std::string& reference_template) {
  const json::value conversations = json::parse(read_file(testdata_path("templates/conversations.json")));
  const json::value expected = json::parse(read_file(testdata_path("templates/expected.json")));
  std::vector<Case> out;
  for (const json::value& v : conversations.as_array()) {
    const json::object& conv = v.as_object();
    Case c;
    c.name = std::string(conv.at("name").as_string());
    c.request.messages = conv.at("messages").as_array();
    if (const json::value* tools = conv.if_contains("tools")) c.request.tools = tools->as_array();
    if (const json::value* agp = conv.if_contains("add_generation_prompt")) {
      c.request.add_generation_prompt = agp->as_bool();
    }
    if (const json::value* vars = conv.if_contains("vars")) c.request.extra_vars = vars->as_object();
    c.request.bos_token = "<s>";
    c.request.eos_token = "</s>";
    c.has_tools = c.request.tools.has_value();
    c.has_system = c.request.messages.at(0).at("role").as_string() == "system";
    for (const json::value& e : expected.at("cases").as_array()) {
      if (e.at("template").as_string() == reference_template && e.at("conversation").as_string() == c.name) {
        c.reference = e.at("rendered");
      }
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::string render_builtin(std::string_view name, const ChatRequest& request) {
  const std::optional<std::string_view> source = builtin_chat_template(name);
  if (!source) return "<no such built-in>";
  auto tmpl = ChatTemplate::parse(*source);
  if (!tmpl.ok()) return "<parse error: " + tmpl.status().message() + ">";
  auto text = tmpl->apply(request);
  return text.ok() ? *text : "<render error: " + text.status().message() + ">";
}

// `request` with a system message of `content` in front, or prepended to the existing one.
ChatRequest with_system_prefix(ChatRequest request, const std::string& content) {
  json::array& m = request.messages;
  if (m.at(0).at("role").as_string() == "system") {
    m[0].as_object()["content"] = content + std::string(m[0].at("content").as_string());
  } else {
    m.insert(m.begin(), json::object{{"role", "system"}, {"content", content}});
  }
  return request;
}

TEST(BuiltinTemplates, NamesAreListedAndEveryTemplateParses) {
  const auto names = builtin_chat_template_names();
  ASSERT_EQ(names.size(), 4u);
  EXPECT_EQ(builtin_chat_template_list(), "chatml, llama3, mistral, qwen3");
  for (std::string_view name : names) {
    const auto source = builtin_chat_template(name);
    ASSERT_TRUE(source) << name;
    auto tmpl = ChatTemplate::parse(*source);
    EXPECT_TRUE(tmpl.ok()) << name << ": " << tmpl.status().to_string();
  }
  EXPECT_FALSE(builtin_chat_template("chatml2"));
  EXPECT_FALSE(builtin_chat_template(""));
  EXPECT_FALSE(builtin_chat_template("ChatML"));
  EXPECT_EQ(kFallbackTemplateName, "chatml");
}

TEST(BuiltinTemplates, ChatmlRendersPlainTurns) {
  ChatRequest r;
  r.messages = json::parse(R"([{"role":"system","content":"S"},{"role":"user","content":"U"},
                               {"role":"assistant","content":"A"},{"role":"tool","content":"T"}])")
                   .as_array();
  EXPECT_EQ(render_builtin("chatml", r),
            "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\nA<|im_end|>\n"
            "<|im_start|>tool\nT<|im_end|>\n<|im_start|>assistant\n");
  r.add_generation_prompt = false;
  EXPECT_EQ(render_builtin("chatml", r),
            "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\nA<|im_end|>\n"
            "<|im_start|>tool\nT<|im_end|>\n");
}

TEST(BuiltinTemplates, Qwen3MatchesThePublishedQwen3OnEveryConversation) {
  CS_REQUIRE_TESTDATA();
  int matched = 0;
  for (const Case& c : cases_for("Qwen-Qwen3-0.6B.jinja")) {
    SCOPED_TRACE(c.name);
    ASSERT_TRUE(c.reference.is_string());
    EXPECT_EQ(render_builtin("qwen3", c.request), std::string(c.reference.as_string()));
    matched += render_builtin("qwen3", c.request) == c.reference.as_string();
  }
  EXPECT_EQ(matched, 5);
}

TEST(BuiltinTemplates, Qwen3KeepsReasoningOnlyAfterTheLastUserTurn) {
  const std::string source = read_file(testdata_path("templates/Qwen-Qwen3-0.6B.jinja"));
  if (source.empty()) GTEST_SKIP() << "shared/testdata not found";
  auto published = ChatTemplate::parse(source);
  ASSERT_TRUE(published.ok());
  ChatRequest r;
  r.messages = json::parse(R"([{"role":"user","content":"Q1"},
      {"role":"assistant","content":"<think>\nold\n</think>\n\nA1"},
      {"role":"user","content":"Q2"},
      {"role":"assistant","content":"","reasoning_content":"why","tool_calls":[
        {"type":"function","function":{"name":"f","arguments":"{\"x\":1}"}},
        {"type":"function","function":{"name":"g","arguments":{"y":[1,2]}}}]},
      {"role":"tool","content":"r1"},{"role":"tool","content":"r2"},
      {"role":"assistant","content":"done"}])")
                   .as_array();
  for (bool agp : {true, false}) {
    r.add_generation_prompt = agp;
    auto reference = published->apply(r);
    ASSERT_TRUE(reference.ok()) << reference.status().to_string();
    EXPECT_EQ(render_builtin("qwen3", r), *reference) << "add_generation_prompt " << agp;
  }
}

TEST(BuiltinTemplates, ChatmlMatchesQwen25WithItsDefaultSystemMessage) {
  CS_REQUIRE_TESTDATA();
  int matched = 0;
  for (const Case& c : cases_for("Qwen-Qwen2.5-7B-Instruct.jinja")) {
    if (c.has_tools) continue;  // chatml renders no tools block
    SCOPED_TRACE(c.name);
    // Qwen2.5 writes its own system message when the conversation has none.
    const ChatRequest r =
        c.has_system
            ? c.request
            : with_system_prefix(c.request, "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.");
    EXPECT_EQ(render_builtin("chatml", r), std::string(c.reference.as_string()));
    matched += render_builtin("chatml", r) == c.reference.as_string();
  }
  EXPECT_EQ(matched, 4);
}

TEST(BuiltinTemplates, ChatmlGivesTheGoldenPromptOfQwen3Tiny) {
  CS_REQUIRE_TESTDATA();
  const json::value golden = json::parse(read_file(testdata_path("golden/qwen3-tiny-f32.json")));
  ChatRequest r;
  r.messages = json::parse(R"([{"role": "system", "content": "You are a helpful assistant."},
      {"role": "user", "content": "What is the capital of France? Answer in one word."}])")
                   .as_array();
  EXPECT_EQ(render_builtin("chatml", r), std::string(golden.at("prompt_text").as_string()));
  EXPECT_EQ(render_builtin("qwen3", r), std::string(golden.at("prompt_text").as_string()));
}

TEST(BuiltinTemplates, Llama3MatchesLlama31BesideItsDateHeader) {
  CS_REQUIRE_TESTDATA();
  // Llama 3.1 opens every prompt with a system turn holding these lines, then the system message.
  const std::string header = "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n";
  int matched = 0;
  for (const Case& c : cases_for("meta-llama-Llama-3.1-8B-Instruct.jinja")) {
    if (c.has_tools) continue;  // Llama 3.1 rewrites tool turns; llama3 does not
    SCOPED_TRACE(c.name);
    const std::string reference(c.reference.as_string());
    // Llama 3.1 writes the BOS text, which the built-in leaves to the tokenizer.
    ASSERT_EQ(reference.rfind("<s>", 0), 0u);
    if (c.has_system) {
      const std::string ours = render_builtin("llama3", with_system_prefix(c.request, header));
      EXPECT_EQ("<s>" + ours, reference);
      matched += "<s>" + ours == reference;
    } else {
      // Without a system message Llama 3.1 still writes the header turn; the rest is the same.
      const std::string eot = "<|eot_id|>";
      const std::string rest = reference.substr(reference.find(eot) + eot.size());
      EXPECT_EQ(render_builtin("llama3", c.request), rest);
      matched += render_builtin("llama3", c.request) == rest;
    }
  }
  EXPECT_EQ(matched, 4);
}

TEST(BuiltinTemplates, MistralMatchesMistralSmall32BesideItsDefaultSystemPrompt) {
  CS_REQUIRE_TESTDATA();
  int matched = 0;
  for (const Case& c : cases_for("Mistral-Small-3.2-24B-Instruct-2506.jinja")) {
    if (c.has_tools) continue;  // Mistral Small requires 9-character tool call ids and raises
    SCOPED_TRACE(c.name);
    std::string reference(c.reference.as_string());
    // Mistral Small writes the BOS text, which the built-in leaves to the tokenizer.
    ASSERT_EQ(reference.rfind("<s>", 0), 0u);
    reference.erase(0, 3);
    if (!c.has_system) {
      // Mistral Small writes its long default system prompt; the built-in writes none.
      const size_t open = reference.find("[SYSTEM_PROMPT]");
      const size_t close = reference.find("[/SYSTEM_PROMPT]");
      ASSERT_NE(close, std::string::npos);
      reference.erase(open, close + std::string("[/SYSTEM_PROMPT]").size() - open);
    }
    EXPECT_EQ(render_builtin("mistral", c.request), reference);
    matched += render_builtin("mistral", c.request) == reference;
  }
  EXPECT_EQ(matched, 4);
}

// What llama-server (the testdata's llama.cpp build) answers on POST /apply-template for this
// conversation with `--no-jinja --chat-template llama3 | mistral-v7-tekken | chatml`; its
// mistral-v7-tekken writes "</s>", which is Mistral's eos_token.
TEST(BuiltinTemplates, MatchLlamaServersBuiltinsOfTheSameFormat) {
  ChatRequest r;
  r.messages = json::parse(R"([{"role":"system","content":" Be brief. "},{"role":"user","content":"Hi"},
                               {"role":"assistant","content":"Hello!"},{"role":"user","content":"Bye\n"}])")
                   .as_array();
  r.bos_token = "<s>";
  r.eos_token = "</s>";
  EXPECT_EQ(render_builtin("llama3", r),
            "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>"
            "\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|><|start_header_id|>user"
            "<|end_header_id|>\n\nBye<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(render_builtin("mistral", r),
            "[SYSTEM_PROMPT] Be brief. [/SYSTEM_PROMPT][INST]Hi[/INST]Hello!</s>[INST]Bye\n[/INST]");
  EXPECT_EQ(render_builtin("chatml", r),
            "<|im_start|>system\n Be brief. <|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
            "Hello!<|im_end|>\n<|im_start|>user\nBye\n<|im_end|>\n<|im_start|>assistant\n");
}

TEST(BuiltinTemplates, Llama3TrimsWritesNoBosAndMapsToolResultsToIpython) {
  ChatRequest r;
  r.messages = json::parse(R"([{"role":"user","content":"  hi \n"},{"role":"tool","content":"42"}])").as_array();
  r.bos_token = "<|begin_of_text|>";
  r.add_generation_prompt = false;
  EXPECT_EQ(render_builtin("llama3", r),
            "<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>"
            "<|start_header_id|>ipython<|end_header_id|>\n\n42<|eot_id|>");
}

}  // namespace
}  // namespace cellserve::engine::chat
