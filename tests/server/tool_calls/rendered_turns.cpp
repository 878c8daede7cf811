#include "tests/server/tool_calls/rendered_turns.h"

#include <cctype>

#include "tests/server/tool_calls/tool_call_test_util.h"

namespace cellserve::server::tool_calls::testing {

namespace json = boost::json;
using engine::chat::ChatRequest;
using engine::chat::ChatTemplate;

const std::vector<TemplateCase>& template_cases() {
  static const std::vector<TemplateCase> cases = {
      {"Qwen-Qwen2.5-7B-Instruct.jinja", ToolCallFormat::Hermes, "<|im_start|>assistant\n", "<|im_end|>", true, false},
      {"Qwen-Qwen3-0.6B.jinja", ToolCallFormat::Hermes, "<|im_start|>assistant\n", "<|im_end|>", true, false},
      {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", ToolCallFormat::Hermes, "<|im_start|>assistant\n",
       "<|im_end|>", false, false},
      {"Qwen3-Coder.jinja", ToolCallFormat::QwenXml, "<|im_start|>assistant\n", "<|im_end|>", true, false},
      {"Qwen3.5-4B.jinja", ToolCallFormat::QwenXml, "<|im_start|>assistant\n", "<|im_end|>", true, false},
      {"meta-llama-Llama-3.1-8B-Instruct.jinja", ToolCallFormat::Llama3Json,
       "<|start_header_id|>assistant<|end_header_id|>\n\n", "<|eot_id|>", false, true},
      {"meta-llama-Llama-3.2-3B-Instruct.jinja", ToolCallFormat::Llama3Json,
       "<|start_header_id|>assistant<|end_header_id|>\n\n", "<|eot_id|>", false, true},
      {"mistralai-Mistral-Nemo-Instruct-2407.jinja", ToolCallFormat::MistralNemo, "", "</s>", false, false, "[/INST]"},
      {"Mistral-Small-3.2-24B-Instruct-2506.jinja", ToolCallFormat::MistralSmall, "", "</s>", false, false},
      // The template renders the content after the calls, in a turn of its own: not part of this one.
      {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", ToolCallFormat::DeepSeekR1, "<｜Assistant｜>",
       "<｜end▁of▁sentence｜>", false, false},
  };
  return cases;
}

std::string template_case_name(const TemplateCase& c) {
  std::string name;
  for (char ch : c.file.substr(0, c.file.size() - 6)) name += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return name;
}

std::optional<ChatTemplate> load_template(const std::string& file) {
  if (templates_dir().empty()) return std::nullopt;
  auto parsed = ChatTemplate::parse(read_file(templates_dir() / file));
  if (!parsed.ok()) return std::nullopt;
  return std::move(parsed).value();
}

json::object openai_tool_call(const std::string& id, const std::string& name, const char* arguments) {
  return {{"id", id},
          {"type", "function"},
          {"function", json::object{{"name", name}, {"arguments", json::parse(arguments)}}}};
}

namespace {

engine::chat::RenderOptions fixed_time() {
  engine::chat::RenderOptions options;
  std::tm t{};
  t.tm_year = 2026 - 1900;
  t.tm_mday = 15;
  t.tm_hour = 9;
  t.tm_min = 30;
  t.tm_wday = 4;
  t.tm_yday = 14;
  options.now = t;
  return options;
}

Result<std::string> render(const ChatTemplate& tmpl, json::array messages, const json::array& tools,
                           json::object vars) {
  ChatRequest request;
  request.messages = std::move(messages);
  request.tools = tools;
  request.add_generation_prompt = false;
  request.extra_vars = std::move(vars);
  request.bos_token = "<s>";
  request.eos_token = "</s>";
  return tmpl.apply(request, fixed_time());
}

}  // namespace

Result<std::string> assistant_turn(const TemplateCase& c, const ChatTemplate& tmpl, json::object assistant,
                                   const json::array& tools, json::object vars) {
  json::array before = {json::object{{"role", "system"}, {"content", "You are a test."}},
                        json::object{{"role", "user"}, {"content", "Weather in Paris, and search?"}}};
  json::array all = before;
  all.push_back(std::move(assistant));
  CS_ASSIGN_OR_RETURN(std::string prefix, render(tmpl, before, tools, vars));
  CS_ASSIGN_OR_RETURN(std::string full, render(tmpl, all, tools, vars));
  std::string turn;
  if (!c.turn_start_after.empty()) {
    const std::size_t start = full.rfind(c.turn_start_after);
    if (start == std::string::npos) return Status::internal("no turn start: " + full);
    turn = full.substr(start + c.turn_start_after.size());
  } else {
    if (full.compare(0, prefix.size(), prefix) != 0)
      return Status::internal("the rendering does not extend the prefix");
    turn = full.substr(prefix.size());
  }
  if (turn.compare(0, c.turn_header.size(), c.turn_header) != 0) return Status::internal("no turn header: " + turn);
  turn.erase(0, c.turn_header.size());
  const std::size_t end = turn.find(c.turn_end);
  if (end == std::string::npos) return Status::internal("no turn end: " + turn);
  return turn.substr(0, end);
}

std::string visible_content(std::string content) {
  if (const std::size_t think = content.find("</think>"); think != std::string::npos) content.erase(0, think + 8);
  const std::size_t first = content.find_first_not_of(" \n");
  if (first == std::string::npos) return "";
  return content.substr(first, content.find_last_not_of(" \n") - first + 1);
}

}  // namespace cellserve::server::tool_calls::testing
