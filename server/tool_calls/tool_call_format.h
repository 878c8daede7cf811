// ToolCallFormat: how a model family writes a tool call into its answer, as its chat template
// renders assistant messages that carry "tool_calls" (docs/tool_calls.md has each format's text).
#pragma once

#include <string_view>

namespace cellserve::server::tool_calls {

enum class ToolCallFormat {
  None,          // the template renders no tool calls (Gemma 2, Phi-3.5, SmolLM3 as shipped here)
  Hermes,        // <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>: Qwen2.5, Qwen3, Hermes 3
  QwenXml,       // <tool_call>\n<function=NAME>\n<parameter=P>\nVALUE\n</parameter>\n</function>\n</tool_call>:
                 // Qwen3-Coder, Qwen3.5
  Llama3Json,    // a bare {"name": ..., "parameters": {...}} object, or <|python_tag|>NAME.call(k="v"): Llama 3.x
  MistralNemo,   // [TOOL_CALLS][{"name": ..., "arguments": {...}, "id": "..."}]
  MistralSmall,  // [TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{...}, [CALL_ID] optional: Mistral Small 3.2 and later
  Granite,       // <|tool_call|>[{"name": ..., "arguments": {...}}]: Granite 3.x
  DeepSeekR1,  // <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{...}\n```
               // <｜tool▁call▁end｜><｜tool▁calls▁end｜>: DeepSeek-R1 and its distills
};

// The format a chat template renders tool calls in, recognised by the format's own markers in the
// template text (so any GGUF carrying such a template is recognised). None when it has none.
ToolCallFormat detect_format(std::string_view template_source);

// A short stable name: "none", "hermes", "qwen-xml", "llama3-json", "mistral-nemo",
// "mistral-small", "granite", "deepseek-r1".
std::string_view format_name(ToolCallFormat format);

}  // namespace cellserve::server::tool_calls
