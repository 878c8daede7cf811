// A Responses API request as a chat completion body (responses_request.h).
#include "server/api/responses_request.h"

#include <array>
#include <string>
#include <string_view>

#include "server/api/json_fields.h"

namespace cellserve::server {

namespace json = boost::json;

namespace {

// Fields that mean the same in both APIs (the sampling extensions llama-server accepts on chat
// included), copied as they are; the chat parser checks them.
constexpr std::array<std::string_view, 16> kSameFields = {"model",
                                                          "temperature",
                                                          "top_p",
                                                          "top_k",
                                                          "min_p",
                                                          "seed",
                                                          "presence_penalty",
                                                          "frequency_penalty",
                                                          "repeat_penalty",
                                                          "repetition_penalty",
                                                          "repeat_last_n",
                                                          "stop",
                                                          "logit_bias",
                                                          "chat_template_kwargs",
                                                          "grammar",
                                                          "ignore_eos"};

// Fields that need what this server does not keep, or does not have.
Status refuse_unsupported(const json::object& body) {
  if (has_field(body, "previous_response_id")) {
    return Status::invalid_param("previous_response_id",
                                 "responses are not stored here: send the whole conversation in 'input' instead of "
                                 "'previous_response_id'");
  }
  if (has_field(body, "conversation")) {
    return Status::invalid_param("conversation",
                                 "conversations are not stored here: send the whole conversation in 'input'");
  }
  if (const json::value* b = field(body, "background"); b != nullptr && !(b->is_bool() && !b->as_bool())) {
    return Status::invalid_param("background", "background responses are not supported");
  }
  if (const json::value* t = field(body, "truncation");
      t != nullptr && !(t->is_string() && t->as_string() == "disabled")) {
    return Status::invalid_param("truncation",
                                 "only 'disabled' truncation is supported: a prompt that does not fit is a 400");
  }
  if (const json::value* inc = field(body, "include");
      inc != nullptr && !(inc->is_array() && inc->as_array().empty())) {
    return Status::invalid_param("include", "no additional output data ('include') is supported");
  }
  return {};
}

// A message's content: a string, or parts of text ("input_text", "output_text", "text") joined by
// the chat parser. Other parts (images, files, audio) are refused by name.
Status convert_content(const json::value& content, const std::string& param, json::value* out) {
  if (content.is_string()) {
    *out = content;
    return {};
  }
  if (!content.is_array()) {
    return Status::invalid_param(
        param, "'" + param + "' must be a string or an array of content parts, got " + json_kind_name(content));
  }
  json::array parts;
  const json::array& in = content.as_array();
  for (size_t j = 0; j < in.size(); ++j) {
    const std::string part_param = param + "[" + std::to_string(j) + "]";
    if (!in[j].is_object()) return Status::invalid_param(part_param, "'" + part_param + "' must be an object");
    const json::object& part = in[j].as_object();
    std::string type;
    CS_RETURN_IF_ERROR(read_string(part, "type", &type));
    if (type != "input_text" && type != "output_text" && type != "text") {
      return Status::invalid_param(
          part_param + ".type",
          "content parts of type '" + type + "' are not supported; only input_text and output_text are");
    }
    const json::value* text = field(part, "text");
    if (text == nullptr || !text->is_string()) {
      return Status::invalid_param(part_param + ".text", "'" + part_param + ".text' must be a string");
    }
    parts.push_back(json::object{{"type", "text"}, {"text", *text}});
  }
  *out = std::move(parts);
  return {};
}

Status required_string(const json::object& o, std::string_view key, const std::string& param, std::string* out) {
  const json::value* v = field(o, key);
  if (v == nullptr || !v->is_string()) {
    return Status::invalid_param(param + "." + std::string(key),
                                 "'" + param + "." + std::string(key) + "' must be a string");
  }
  *out = std::string(v->as_string());
  return {};
}

// The assistant message a function_call item joins: the previous message when it is the
// assistant's (its text, or earlier calls of the same turn), else a new one.
json::object& assistant_turn(json::array& messages) {
  if (!messages.empty()) {
    json::object& last = messages.back().as_object();
    if (const json::value* role = last.if_contains("role"); role != nullptr && *role == "assistant") return last;
  }
  messages.push_back(json::object{{"role", "assistant"}, {"content", nullptr}});
  return messages.back().as_object();
}

Status convert_item(const json::value& v, const std::string& param, json::array& messages) {
  if (!v.is_object()) return Status::invalid_param(param, "'" + param + "' must be an object");
  const json::object& item = v.as_object();
  std::string type = "message";
  CS_RETURN_IF_ERROR(read_string(item, "type", &type));
  if (type == "message") {
    std::string role;
    CS_RETURN_IF_ERROR(required_string(item, "role", param, &role));
    if (role != "user" && role != "assistant" && role != "system" && role != "developer") {
      return Status::invalid_param(
          param + ".role", "'" + param + ".role' must be user, assistant, system or developer, got '" + role + "'");
    }
    const json::value* content = field(item, "content");
    if (content == nullptr) return Status::invalid_param(param + ".content", "'" + param + ".content' is required");
    json::value converted;
    CS_RETURN_IF_ERROR(convert_content(*content, param + ".content", &converted));
    messages.push_back(json::object{{"role", role}, {"content", std::move(converted)}});
    return {};
  }
  if (type == "function_call") {
    std::string call_id, name, arguments;
    CS_RETURN_IF_ERROR(required_string(item, "call_id", param, &call_id));
    CS_RETURN_IF_ERROR(required_string(item, "name", param, &name));
    CS_RETURN_IF_ERROR(required_string(item, "arguments", param, &arguments));
    json::object& turn = assistant_turn(messages);
    json::value& calls = turn["tool_calls"];
    if (!calls.is_array()) calls = json::array{};
    calls.as_array().push_back(json::object{
        {"id", call_id}, {"type", "function"}, {"function", json::object{{"name", name}, {"arguments", arguments}}}});
    return {};
  }
  if (type == "function_call_output") {
    std::string call_id;
    CS_RETURN_IF_ERROR(required_string(item, "call_id", param, &call_id));
    const json::value* output = field(item, "output");
    if (output == nullptr) return Status::invalid_param(param + ".output", "'" + param + ".output' is required");
    json::value content;
    CS_RETURN_IF_ERROR(convert_content(*output, param + ".output", &content));
    json::object tool{{"role", "tool"}, {"tool_call_id", call_id}, {"content", std::move(content)}};
    // Templates that print the function's name beside its result find it on the call. A result
    // of no call before it is refused, as OpenAI does: the model would read an answer to nothing.
    for (const json::value& m : messages) {
      const json::value* calls = m.as_object().if_contains("tool_calls");
      if (calls == nullptr) continue;
      for (const json::value& c : calls->as_array()) {
        if (c.as_object().at("id").as_string() == call_id)
          tool["name"] = c.as_object().at("function").as_object().at("name");
      }
    }
    if (!tool.contains("name")) {
      return Status::invalid_param(param + ".call_id",
                                   "no function_call item before " + param + " has call_id '" + call_id + "'");
    }
    messages.push_back(std::move(tool));
    return {};
  }
  return Status::invalid_param(param + ".type", "input items of type '" + type +
                                                    "' are not supported; only message, function_call and "
                                                    "function_call_output are");
}

Status convert_input(const json::object& body, json::array& messages) {
  const json::value* input = field(body, "input");
  if (input == nullptr) return Status::invalid_param("input", "'input' is required");
  if (input->is_string()) {
    messages.push_back(json::object{{"role", "user"}, {"content", *input}});
    return {};
  }
  if (!input->is_array()) {
    return Status::invalid_param(
        "input", std::string("'input' must be a string or an array of items, got ") + json_kind_name(*input));
  }
  if (input->as_array().empty()) return Status::invalid_param("input", "'input' must not be empty");
  const json::array& items = input->as_array();
  for (size_t i = 0; i < items.size(); ++i) {
    CS_RETURN_IF_ERROR(convert_item(items[i], "input[" + std::to_string(i) + "]", messages));
  }
  return {};
}

// {"type": "function", "name", "description", "parameters", "strict"} -> the chat shape.
Status convert_tools(const json::object& body, json::object& chat) {
  const json::value* tools = field(body, "tools");
  if (tools == nullptr) return {};
  if (!tools->is_array()) return Status::invalid_param("tools", "'tools' must be an array");
  json::array out;
  const json::array& in = tools->as_array();
  for (size_t i = 0; i < in.size(); ++i) {
    const std::string param = "tools[" + std::to_string(i) + "]";
    if (!in[i].is_object()) return Status::invalid_param(param, "'" + param + "' must be an object");
    const json::object& tool = in[i].as_object();
    std::string type;
    CS_RETURN_IF_ERROR(required_string(tool, "type", param, &type));
    if (type != "function") {
      return Status::invalid_param(param + ".type",
                                   "tools of type '" + type + "' are not supported; only function tools are");
    }
    json::object function;
    for (const char* key : {"name", "description", "parameters", "strict"}) {
      if (const json::value* v = field(tool, key)) function[key] = *v;
    }
    out.push_back(json::object{{"type", "function"}, {"function", std::move(function)}});
  }
  chat["tools"] = std::move(out);
  return {};
}

// "none" / "auto" / "required" as they are; {"type": "function", "name"} -> the chat shape.
Status convert_tool_choice(const json::object& body, json::object& chat) {
  const json::value* choice = field(body, "tool_choice");
  if (choice == nullptr) return {};
  if (choice->is_string()) {
    chat["tool_choice"] = *choice;
    return {};
  }
  if (!choice->is_object()) return Status::invalid_param("tool_choice", "'tool_choice' must be a string or an object");
  const json::object& o = choice->as_object();
  std::string type;
  CS_RETURN_IF_ERROR(required_string(o, "type", "tool_choice", &type));
  if (type != "function") {
    return Status::invalid_param("tool_choice.type", "only function tool choices are supported, got '" + type + "'");
  }
  std::string name;
  CS_RETURN_IF_ERROR(required_string(o, "name", "tool_choice", &name));
  chat["tool_choice"] = json::object{{"type", "function"}, {"function", json::object{{"name", name}}}};
  return {};
}

// text.format: {"type": "text"}, {"type": "json_object"}, {"type": "json_schema", "name",
// "schema", "strict", "description"}, or this server's {"type": "regex", "pattern"}.
Status convert_text_format(const json::object& body, json::object& chat) {
  const json::value* text = field(body, "text");
  if (text == nullptr) return {};
  if (!text->is_object()) return Status::invalid_param("text", "'text' must be an object");
  const json::value* format = field(text->as_object(), "format");
  if (format == nullptr) return {};
  if (!format->is_object()) return Status::invalid_param("text.format", "'text.format' must be an object");
  const json::object& f = format->as_object();
  std::string type;
  CS_RETURN_IF_ERROR(required_string(f, "type", "text.format", &type));
  if (type == "json_schema") {
    json::object schema;
    for (const char* key : {"name", "schema", "strict", "description"}) {
      if (const json::value* v = field(f, key)) schema[key] = *v;
    }
    chat["response_format"] = json::object{{"type", "json_schema"}, {"json_schema", std::move(schema)}};
  } else {
    chat["response_format"] = f;  // text, json_object, regex: the same shape; the chat parser checks it
  }
  return {};
}

}  // namespace

Status responses_to_chat(const json::object& body, json::object* chat) {
  CS_RETURN_IF_ERROR(refuse_unsupported(body));
  json::object out;
  json::array messages;
  if (const json::value* instructions = field(body, "instructions")) {
    if (!instructions->is_string()) return Status::invalid_param("instructions", "'instructions' must be a string");
    messages.push_back(json::object{{"role", "system"}, {"content", *instructions}});
  }
  CS_RETURN_IF_ERROR(convert_input(body, messages));
  out["messages"] = std::move(messages);
  for (std::string_view key : kSameFields) {
    if (const json::value* v = field(body, key)) out[key] = *v;
  }
  if (const json::value* v = field(body, "max_output_tokens")) out["max_completion_tokens"] = *v;
  if (const json::value* v = field(body, "parallel_tool_calls")) out["parallel_tool_calls"] = *v;
  bool stream = false;
  CS_RETURN_IF_ERROR(read_bool(body, "stream", &stream));
  out["stream"] = stream;
  CS_RETURN_IF_ERROR(convert_tools(body, out));
  CS_RETURN_IF_ERROR(convert_tool_choice(body, out));
  CS_RETURN_IF_ERROR(convert_text_format(body, out));
  if (const json::value* m = field(body, "metadata"); m != nullptr && !m->is_object()) {
    return Status::invalid_param("metadata", "'metadata' must be an object");
  }
  if (const json::value* u = field(body, "user"); u != nullptr && !u->is_string()) {
    return Status::invalid_param("user", "'user' must be a string");
  }
  *chat = std::move(out);
  return {};
}

Status responses_error(const Status& chat_error) {
  const std::string_view p = chat_error.param();
  if (p.starts_with("messages")) return chat_error.with_param("input");
  if (p == "max_completion_tokens" || p == "max_tokens") return chat_error.with_param("max_output_tokens");
  if (p.starts_with("response_format")) return chat_error.with_param("text.format");
  return chat_error;
}

}  // namespace cellserve::server
