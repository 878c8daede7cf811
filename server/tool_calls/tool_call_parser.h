// parse_tool_calls: a whole generated answer -> its content and OpenAI tool calls.
//
// Text around the calls is content, less the whitespace the format puts around them. A call is
// taken only when its markup is complete and well-formed: the tool name is one of the request's,
// the arguments are one JSON object (QwenXml: parameters, converted as xml_parameters.h says).
// Anything else (truncated JSON, an unknown name, arguments that are not an object, markup past
// the scanner's bounds) stays in the content as the model wrote it. Calls come in the order
// written; ids are the model's where the format carries one (Mistral), else fresh random ones.
// ToolCallStream gives the same result from the same text in pieces (see tool_call_stream.h for
// the one exception: a call cut off after its arguments began).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "server/tool_calls/tool_call_format.h"
#include "server/tool_calls/tool_spec.h"

namespace cellserve::server::tool_calls {

struct ToolCall {
  std::string id{};
  std::string name{};
  std::string arguments{};  // a JSON object's text, compact, as OpenAI sends it
};

struct ParsedMessage {
  std::string content;
  std::vector<ToolCall> tool_calls;
};

ParsedMessage parse_tool_calls(ToolCallFormat format, std::string_view generated_text,
                               const std::vector<std::string>& tool_names);
// The same, with the tools' schemas: QwenXml parameters declared "type": "string" are then always
// strings (without the schema a value such as 42 or true is read as JSON). Prefer this overload.
ParsedMessage parse_tool_calls(ToolCallFormat format, std::string_view generated_text,
                               const std::vector<ToolSpec>& tools);

}  // namespace cellserve::server::tool_calls
