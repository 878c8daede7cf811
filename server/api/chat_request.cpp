// /v1/chat/completions bodies: messages, tools and template variables, and the rendered prompt.
#include <span>

#include <boost/json/parse.hpp>

#include "base/text_spans.h"
#include "server/api/json_fields.h"
#include "server/api/request_parsing.h"

namespace cellserve::server {

namespace json = boost::json;

namespace {

constexpr int64_t kMaxTopLogprobs = 20;  // as OpenAI

// The text of `content` (a string or an array of {"type": "text", "text": ...} parts; parts are
// joined with '\n' as llama.cpp does for templates that take string content).
Status content_text(const json::value& content, const std::string& param, std::string* out) {
  if (content.is_string()) {
    *out = std::string(content.get_string());
    return {};
  }
  if (!content.is_array()) {
    return Status::invalid_param(
        param, "'" + param + "' must be a string or an array of content parts, got " + json_kind_name(content));
  }
  out->clear();
  const json::array& parts = content.get_array();
  for (size_t j = 0; j < parts.size(); ++j) {
    const std::string part_param = param + "[" + std::to_string(j) + "]";
    if (!parts[j].is_object()) return Status::invalid_param(part_param, "'" + part_param + "' must be an object");
    const json::object& part = parts[j].get_object();
    std::string type;
    CS_RETURN_IF_ERROR(read_string(part, "type", &type));
    if (type != "text") {
      return Status::invalid_param(part_param + ".type",
                                   "content part type '" + type + "' is not supported; only 'text' parts are");
    }
    const json::value* text = field(part, "text");
    if (text == nullptr || !text->is_string()) {
      return Status::invalid_param(part_param + ".text", "'" + part_param + ".text' must be a string");
    }
    if (j > 0) *out += '\n';
    *out += text->get_string();
  }
  return {};
}

// A copy of `calls` where each function.arguments that is a JSON string holding an object is
// that object: templates such as Qwen's print a mapping with tojson and a string verbatim.
Status normalise_tool_calls(const json::value& calls, const std::string& param, json::array* out) {
  if (!calls.is_array()) return Status::invalid_param(param, "'" + param + "' must be an array");
  *out = calls.get_array();
  for (size_t k = 0; k < out->size(); ++k) {
    json::value& call = (*out)[k];
    const std::string call_param = param + "[" + std::to_string(k) + "]";
    if (!call.is_object()) return Status::invalid_param(call_param, "'" + call_param + "' must be an object");
    json::value* fn = call.get_object().if_contains("function");
    if (fn == nullptr) continue;
    if (!fn->is_object()) return Status::invalid_param(call_param + ".function", "'function' must be an object");
    json::value* args = fn->get_object().if_contains("arguments");
    if (args == nullptr || !args->is_string()) continue;
    boost::system::error_code ec;
    json::value parsed = json::parse(args->get_string(), ec);
    if (!ec && parsed.is_object()) *args = std::move(parsed);
  }
  return {};
}

Status parse_message(const json::value& v, size_t i, json::array* out) {
  const std::string param = "messages[" + std::to_string(i) + "]";
  if (!v.is_object()) return Status::invalid_param(param, "'" + param + "' must be an object");
  const json::object& m = v.get_object();
  std::string role;
  if (Status s = read_string(m, "role", &role); !s.ok()) return s.with_param(param + ".role");
  if (role == "developer") role = "system";
  if (role != "system" && role != "user" && role != "assistant" && role != "tool") {
    return Status::invalid_param(param + ".role", "'" + param +
                                                      ".role' must be one of system, developer, user, "
                                                      "assistant, tool; got '" +
                                                      role + "'");
  }
  json::object msg;
  msg["role"] = role;
  std::string text;
  if (const json::value* content = field(m, "content")) {
    CS_RETURN_IF_ERROR(content_text(*content, param + ".content", &text));
  } else if (role != "assistant") {
    return Status::invalid_param(param + ".content", "'" + param + ".content' is required for role '" + role + "'");
  }
  // An assistant turn with only tool calls renders with "" content: templates test and split it.
  msg["content"] = text;
  for (const char* key : {"name", "tool_call_id", "reasoning_content"}) {
    std::string s;
    if (Status e = read_string(m, key, &s); !e.ok()) return e.with_param(param + "." + key);
    if (has_field(m, key)) msg[key] = s;
  }
  if (const json::value* calls = field(m, "tool_calls")) {
    json::array normalised;
    CS_RETURN_IF_ERROR(normalise_tool_calls(*calls, param + ".tool_calls", &normalised));
    if (!normalised.empty()) msg["tool_calls"] = std::move(normalised);
  }
  out->push_back(std::move(msg));
  return {};
}

}  // namespace

Status parse_chat_messages(const json::object& body, engine::chat::ChatRequest* out) {
  const json::value* messages = field(body, "messages");
  if (messages == nullptr) return Status::invalid_param("messages", "'messages' is required");
  if (!messages->is_array()) {
    return Status::invalid_param("messages",
                                 std::string("'messages' must be an array, got ") + json_kind_name(*messages));
  }
  if (messages->get_array().empty()) return Status::invalid_param("messages", "'messages' must not be empty");
  out->messages.clear();
  for (size_t i = 0; i < messages->get_array().size(); ++i)
    CS_RETURN_IF_ERROR(parse_message(messages->get_array()[i], i, &out->messages));

  if (const json::value* tools = field(body, "tools")) {
    if (!tools->is_array()) return Status::invalid_param("tools", "'tools' must be an array");
    for (const json::value& t : tools->get_array()) {
      if (!t.is_object()) return Status::invalid_param("tools", "'tools' must be an array of objects");
    }
    if (!tools->get_array().empty()) out->tools = tools->get_array();
  }
  if (const json::value* kwargs = field(body, "chat_template_kwargs")) {
    if (!kwargs->is_object())
      return Status::invalid_param("chat_template_kwargs", "'chat_template_kwargs' must be an object");
    out->extra_vars = kwargs->get_object();
  }
  CS_RETURN_IF_ERROR(read_bool(body, "add_generation_prompt", &out->add_generation_prompt));
  return {};
}

Status parse_chat_request(const json::object& body, const ApiContext& ctx, ChatCompletionRequest* out) {
  CS_RETURN_IF_ERROR(parse_generation_fields(body, ctx, out));

  bool logprobs = false;
  int64_t top = -1;
  CS_RETURN_IF_ERROR(read_bool(body, "logprobs", &logprobs));
  CS_RETURN_IF_ERROR(read_int(body, "top_logprobs", 0, kMaxTopLogprobs, &top));
  if (top >= 0 && !logprobs)
    return Status::invalid_param("top_logprobs", "'top_logprobs' requires 'logprobs' to be true");
  out->job.logprobs = logprobs ? static_cast<int32_t>(std::max<int64_t>(top, 0)) : -1;
  CS_RETURN_IF_ERROR(parse_chat_messages(body, &out->chat));
  bool render_tools = true;
  CS_RETURN_IF_ERROR(parse_tool_use(body, ctx.tool_format, &out->tool_use, &render_tools, &out->job.constraint));
  if (!render_tools) out->chat.tools.reset();
  out->job.special_text = out->tool_use.read_calls;
  return {};
}

Status render_chat_prompt(const ApiContext& ctx, engine::chat::ChatRequest* chat, engine::chat::MarkedText* out) {
  if (!ctx.chat_template) {
    return Status::invalid_param("messages",
                                 "this server has no chat template; use /v1/completions with a prompt instead");
  }
  chat->bos_token = ctx.chat_meta.bos_token;
  chat->eos_token = ctx.chat_meta.eos_token;
  Result<engine::chat::MarkedText> prompt = ctx.chat_template->apply_marked(*chat);
  if (!prompt.ok()) return Status::invalid_param("messages", "the chat template failed: " + prompt.status().message());
  *out = std::move(prompt).value();
  return {};
}

Status build_chat_prompt(const ApiContext& ctx, ChatCompletionRequest* req) {
  engine::chat::MarkedText prompt;
  CS_RETURN_IF_ERROR(render_chat_prompt(ctx, &req->chat, &prompt));
  const std::string& text = prompt.text;
  // Special-token text from the messages stays text, so a message cannot forge a turn; only the
  // template's own markers become control tokens (unless --special-in-content).
  const std::span<const TextSpan> data = ctx.special_in_content ? std::span<const TextSpan>() : prompt.user_spans;
  // A template that writes the BOS text itself must not get a second BOS from the tokenizer.
  const std::string& bos = ctx.chat_meta.bos_token;
  const bool template_has_bos = !bos.empty() && text.rfind(bos, 0) == 0 && !overlaps(data, 0, bos.size());
  req->job.prompt = ctx.tokenizer->tokenize_prompt(text, /*add_special=*/!template_has_bos, data);
  if (req->job.prompt.empty()) return Status::invalid_param("messages", "the rendered prompt is empty");
  return {};
}

}  // namespace cellserve::server
