// The chat templates synth writes as tokenizer.chat_template: the real published Jinja text of
// each model family (defined in chat_templates_qwen.cpp and chat_templates_llama.cpp).
#pragma once

#include <string>

#include "engine/synth/synth_spec.h"

namespace cellserve::engine::synth {

const std::string& qwen25_chat_template();
const std::string& qwen3_chat_template();
const std::string& qwen35_chat_template();
const std::string& llama32_chat_template();

// The text of `tmpl`; empty for ChatTemplate::None.
const std::string& chat_template_text(ChatTemplate tmpl);

}  // namespace cellserve::engine::synth
