#include "server/tool_calls/call_syntax.h"

namespace cellserve::server::tool_calls::detail {
namespace {

Op op(OpKind kind) { return Op{.kind = kind}; }
Op ws() { return op(OpKind::Whitespace); }
Op lit(std::string text) { return Op{.kind = OpKind::Literal, .text = std::move(text)}; }
Op choice(std::vector<std::pair<std::string, int>> choices, int fallback = -1) {
  return Op{.kind = OpKind::Choice, .choices = std::move(choices), .fallback = fallback};
}
Op field(FieldKind kind, char stop, std::size_t max_length) {
  return Op{.kind = OpKind::Field, .field = kind, .stop = stop, .max_length = max_length};
}
Op jump(int target) { return Op{.kind = OpKind::Jump, .target = target}; }

// <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>
CallSyntax hermes() {
  return {.markers = {{"<tool_call>", 0}},
          .ops = {ws(), lit("{"), op(OpKind::JsonCallHead), op(OpKind::JsonCallTail), op(OpKind::Release), ws(),
                  lit("</tool_call>"), op(OpKind::End)}};
}

// <tool_call>\n<function=f>\n<parameter=p>\nvalue\n</parameter>\n</function>\n</tool_call>
CallSyntax qwen_xml() {
  return {.markers = {{"<tool_call>", 0}},
          .ops = {ws(), lit("<function="), field(FieldKind::Name, '>', kMaxNameBytes), lit(">"), op(OpKind::Commit),
                  op(OpKind::XmlParameters), ws(), lit("</tool_call>"), op(OpKind::End)}};
}

// {"name": "f", "parameters": {...}} anywhere in the text; <|python_tag|>{...} or
// <|python_tag|>f.call(k="v") for Llama 3.1's builtin tools.
CallSyntax llama3_json() {
  return {.markers = {{"{", 0}, {"<|python_tag|>", 4}},
          .ops = {op(OpKind::JsonCallHead), op(OpKind::JsonCallTail), op(OpKind::Release), op(OpKind::End),
                  /*4*/ ws(), choice({{"{", 0}}, 6), /*6*/ field(FieldKind::Name, '.', kMaxNameBytes), lit(".call("),
                  op(OpKind::Commit), op(OpKind::PythonArguments), op(OpKind::End)}};
}

// MARKER[{"name": "f", "arguments": {...}, "id": "..."}, {...}]
CallSyntax json_array(std::string marker, bool nine_character_ids) {
  return {.markers = {{std::move(marker), 0}},
          .ops = {ws(), lit("["), /*2*/ ws(), lit("{"), op(OpKind::JsonCallHead), op(OpKind::JsonCallTail),
                  op(OpKind::Release), ws(), /*8*/ choice({{",", 9}, {"]", 11}}), /*9*/ op(OpKind::Release), jump(2),
                  /*11*/ op(OpKind::End)},
          .nine_character_ids = nine_character_ids};
}

// [TOOL_CALLS]f[CALL_ID]abcdefghi[ARGS]{...}, [CALL_ID] optional
CallSyntax mistral_small() {
  return {.markers = {{"[TOOL_CALLS]", 0}},
          .ops = {ws(), field(FieldKind::Name, '[', kMaxNameBytes), /*2*/ choice({{"[ARGS]", 5}, {"[CALL_ID]", 3}}),
                  /*3*/ field(FieldKind::Id, '[', kMaxIdBytes), lit("[ARGS]"), /*5*/ ws(), op(OpKind::JsonArguments),
                  op(OpKind::End)},
          .nine_character_ids = true};
}

// <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{...}\n```<｜tool▁call▁end｜>
// (\n<｜tool▁call▁begin｜>...)*<｜tool▁calls▁end｜>; the outer begin marker may be missing.
CallSyntax deepseek_r1() {
  const std::string call_begin = "<｜tool▁call▁begin｜>";
  return {.markers = {{"<｜tool▁calls▁begin｜>", 0}, {call_begin, 2}},
          .ops = {ws(), lit(call_begin), /*2*/ field(FieldKind::Ignored, '<', 32), lit("<｜tool▁sep｜>"),
                  field(FieldKind::Name, '\n', kMaxNameBytes), ws(), lit("```"), /*7*/ choice({{"json", 8}}, 8),
                  /*8*/ ws(), op(OpKind::JsonArguments), ws(), lit("```"), op(OpKind::Release), ws(),
                  lit("<｜tool▁call▁end｜>"), op(OpKind::Release), ws(),
                  /*17*/ choice({{call_begin, 2}, {"<｜tool▁calls▁end｜>", 18}}), /*18*/ op(OpKind::End)}};
}

}  // namespace

const CallSyntax& call_syntax(ToolCallFormat format) {
  static const CallSyntax kNone;
  static const CallSyntax kHermes = hermes();
  static const CallSyntax kQwenXml = qwen_xml();
  static const CallSyntax kLlama = llama3_json();
  static const CallSyntax kNemo = json_array("[TOOL_CALLS]", true);
  static const CallSyntax kSmall = mistral_small();
  static const CallSyntax kGranite = json_array("<|tool_call|>", false);
  static const CallSyntax kDeepSeek = deepseek_r1();
  switch (format) {
    case ToolCallFormat::None:
      return kNone;
    case ToolCallFormat::Hermes:
      return kHermes;
    case ToolCallFormat::QwenXml:
      return kQwenXml;
    case ToolCallFormat::Llama3Json:
      return kLlama;
    case ToolCallFormat::MistralNemo:
      return kNemo;
    case ToolCallFormat::MistralSmall:
      return kSmall;
    case ToolCallFormat::Granite:
      return kGranite;
    case ToolCallFormat::DeepSeekR1:
      return kDeepSeek;
  }
  return kNone;
}

}  // namespace cellserve::server::tool_calls::detail
