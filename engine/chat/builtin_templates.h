// Chat templates built into cellserve, chosen by name (`serve --chat-template NAME`) for a model
// whose GGUF has no template, or a wrong one. They are Jinja text in the dialect ChatTemplate
// accepts, written for cellserve and checked against the published templates' renderings
// (tests/engine/chat/builtin_templates_test.cpp):
//
//   chatml   <|im_start|>ROLE\nCONTENT<|im_end|>\n per message; the fallback for a model without a template
//   llama3   Meta Llama 3 headers: <|start_header_id|>ROLE<|end_header_id|>\n\nCONTENT<|eot_id|>
//   mistral  Mistral's v7 format (Mistral Small 3.x): [SYSTEM_PROMPT]..[/SYSTEM_PROMPT], [INST]..[/INST], EOS
//   qwen3    Qwen3: chatml with its tools block, <tool_call>/<tool_response>, <think> and enable_thinking
//
// Only qwen3 renders `tools` and assistant tool calls; the others render each message's content.
// None writes the BOS text: the tokenizer adds BOS where the model asks for it.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace cellserve::engine::chat {

// The name of the template a model without one gets.
inline constexpr std::string_view kFallbackTemplateName = "chatml";

// The Jinja text of the built-in template `name`; nullopt for any other name. The text is static.
std::optional<std::string_view> builtin_chat_template(std::string_view name);

// Every built-in name, in alphabetical order.
std::span<const std::string_view> builtin_chat_template_names();

// "chatml, llama3, mistral, qwen3": the names for a message.
std::string builtin_chat_template_list();

}  // namespace cellserve::engine::chat
