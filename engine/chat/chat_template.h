// ChatTemplate: the Jinja chat template a GGUF carries in `tokenizer.chat_template`, parsed once
// and rendered per request into the prompt text, byte-identical to what Hugging Face's
// apply_chat_template renders with Python's Jinja2 (see docs/chat_templates.md for the supported
// subset and the semantics).
//
// Thread safety: a ChatTemplate is immutable after parse(); render() and apply() may run
// concurrently on one instance from any number of threads.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include "base/status.h"
#include "engine/chat/marked_text.h"
#include "engine/chat/render_options.h"

namespace cellserve::engine::chat {

struct Template;

// One chat completion request, as Hugging Face's apply_chat_template receives it.
struct ChatRequest {
  boost::json::array messages;              // [{"role": ..., "content": ..., "tool_calls": [...]}, ...]
  std::optional<boost::json::array> tools;  // absent: `tools` is undefined in the template
  bool add_generation_prompt = true;
  boost::json::object extra_vars;  // more template variables, e.g. {"enable_thinking": false}
  std::string bos_token;           // the texts of the model's BOS / EOS tokens
  std::string eos_token;
};

// The template variables for `request`: bos_token, eos_token, messages, tools (when given),
// add_generation_prompt, then extra_vars (which override any of the former).
boost::json::object chat_request_context(const ChatRequest& request);

class ChatTemplate {
 public:
  // Parses `source`. Errors carry the line: InvalidArgument for malformed template text,
  // Unimplemented for valid Jinja2 outside the supported subset ("line 3: unsupported filter
  // 'groupby'"), ResourceExhausted for nesting deeper than the parser allows.
  static Result<ChatTemplate> parse(std::string_view source);

  // Renders with `context` as the template's variables (JSON values; object key order is kept,
  // as in a Python dict). Errors: InvalidArgument whose message is exactly the text of the
  // template's raise_exception() (e.g. "System role not supported"); InvalidArgument
  // "line N: <message>" for an error while rendering (undefined value used, type error, ...);
  // ResourceExhausted when a limit of `options` is exceeded.
  Result<std::string> render(const boost::json::object& context, const RenderOptions& options = {}) const;

  // render(chat_request_context(request), options).
  Result<std::string> apply(const ChatRequest& request, const RenderOptions& options = {}) const;

  // apply(), and which bytes of the text came from the request's data rather than from the
  // template: every string under messages, tools and extra_vars (object keys included) is marked,
  // and the marks follow it through the template's string operations (engine/chat/user_data.h
  // has the rules; where a byte's origin is unclear it is marked). bos_token, eos_token and the
  // template's own text are not marked. The text is exactly apply()'s.
  Result<MarkedText> apply_marked(const ChatRequest& request, const RenderOptions& options = {}) const;

 private:
  explicit ChatTemplate(std::shared_ptr<const Template> t) : template_(std::move(t)) {}
  // Renders with the variables of `context` and of `data` (which override them); the strings of
  // `data` are marked as request data.
  Result<MarkedText> render_marked(const boost::json::object& context, const boost::json::object& data,
                                   const RenderOptions& options) const;

  std::shared_ptr<const Template> template_;
};

}  // namespace cellserve::engine::chat
