// CallSyntax: each format's call markup as a small program that CallScanner runs byte by byte once
// one of the format's start markers has appeared in the text. Writing the formats as data keeps
// their differences in one place (call_syntax.cpp) and their mechanics in one (call_scanner.cpp).
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "server/tool_calls/tool_call_format.h"

namespace cellserve::server::tool_calls::detail {

enum class OpKind {
  Whitespace,       // skips [ \t\r\n]*
  Literal,          // exactly `text`
  Choice,           // one of `choices` (literal -> op); `fallback` when the byte starts none (-1: fail)
  Field,            // bytes up to `stop` (not consumed) into the call's name / id, or ignored
  JsonCallHead,     // after the '{' of {"name": ..., "arguments": {...}, ...}: up to the arguments' end
  JsonCallTail,     // the rest of that object, to its '}'
  JsonArguments,    // an arguments object
  Commit,           // the call is real: from here its arguments stream
  XmlParameters,    // QwenXml's <parameter=P>\nVALUE\n</parameter>... </function>
  PythonArguments,  // Llama's builtin-tool call: k="v", ... )
  Release,          // the markup read so far is accepted: it will not come back as text
  Jump,             // to `target`
  End,              // back to text
};

enum class FieldKind { Name, Id, Ignored };

struct Op {
  OpKind kind;
  std::string text{};                                  // Literal
  std::vector<std::pair<std::string, int>> choices{};  // Choice
  int fallback = -1;                                   // Choice
  FieldKind field = FieldKind::Ignored;                // Field
  char stop = 0;                                       // Field
  std::size_t max_length = 0;                          // Field
  int target = -1;                                     // Jump
};

struct StartMarker {
  std::string text;
  int first_op;
};

struct CallSyntax {
  std::vector<StartMarker> markers{};  // none of them a prefix of another; none for ToolCallFormat::None
  std::vector<Op> ops{};
  bool nine_character_ids = false;  // Mistral's templates accept only 9-character alphanumeric ids
};

const CallSyntax& call_syntax(ToolCallFormat format);

// The byte counts the markup may not exceed (the held-back text is bounded by them).
inline constexpr std::size_t kMaxNameBytes = 256;
inline constexpr std::size_t kMaxIdBytes = 64;

}  // namespace cellserve::server::tool_calls::detail
