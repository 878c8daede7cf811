#include "server/tool_calls/tool_call_format.h"

namespace cellserve::server::tool_calls {
namespace {

bool contains(std::string_view text, std::string_view marker) { return text.find(marker) != std::string_view::npos; }

}  // namespace

ToolCallFormat detect_format(std::string_view source) {
  // Most specific first: QwenXml and Hermes share <tool_call>; Mistral Small and Nemo share
  // [TOOL_CALLS]; Hermes 3 is a Llama 3.1 fine-tune, so <tool_call> is tested before Llama's markers.
  if (contains(source, "<｜tool▁calls▁begin｜>")) return ToolCallFormat::DeepSeekR1;
  if (contains(source, "[TOOL_CALLS]")) {
    return contains(source, "[ARGS]") ? ToolCallFormat::MistralSmall : ToolCallFormat::MistralNemo;
  }
  if (contains(source, "<tool_call>")) {
    return contains(source, "<function=") && contains(source, "<parameter=") ? ToolCallFormat::QwenXml
                                                                             : ToolCallFormat::Hermes;
  }
  if (contains(source, "<|tool_call|>")) return ToolCallFormat::Granite;
  // Llama 3.1 names <|python_tag|>; 3.2 (and 3.3) only announce "Environment: ipython" and ask for
  // {"name": ..., "parameters": ...}.
  if (contains(source, "<|python_tag|>")) return ToolCallFormat::Llama3Json;
  if (contains(source, "<|start_header_id|>") && contains(source, "ipython")) return ToolCallFormat::Llama3Json;
  return ToolCallFormat::None;
}

std::string_view format_name(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::None:
      return "none";
    case ToolCallFormat::Hermes:
      return "hermes";
    case ToolCallFormat::QwenXml:
      return "qwen-xml";
    case ToolCallFormat::Llama3Json:
      return "llama3-json";
    case ToolCallFormat::MistralNemo:
      return "mistral-nemo";
    case ToolCallFormat::MistralSmall:
      return "mistral-small";
    case ToolCallFormat::Granite:
      return "granite";
    case ToolCallFormat::DeepSeekR1:
      return "deepseek-r1";
  }
  return "unknown";
}

}  // namespace cellserve::server::tool_calls
