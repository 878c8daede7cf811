// Tool calls in chat completions: what a request asks (`tools`, `tool_choice`,
// `parallel_tool_calls`), the grammar that forces a call, and the answer's calls as OpenAI
// shapes, whole (message.tool_calls) or streamed (delta.tool_calls). The parsing itself is
// server/tool_calls (docs/tool_calls.md).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/json/object.hpp>

#include "base/status.h"
#include "server/tool_calls/tool_call_format.h"
#include "server/tool_calls/tool_call_parser.h"
#include "server/tool_calls/tool_call_stream.h"
#include "server/tool_calls/tool_spec.h"

namespace cellserve::engine::grammar {
class OutputConstraint;
}

namespace cellserve::server {

struct ToolUse {
  tool_calls::ToolCallFormat format = tool_calls::ToolCallFormat::None;
  std::vector<tool_calls::ToolSpec> tools;  // the request's functions
  bool read_calls = false;  // the answer is read for calls: tools given, tool_choice not "none", a format known
  bool forced = false;      // tool_choice "required" or a named function: a grammar forces the calls
};

// Reads `tools` (each {"type": "function", "function": {"name", "parameters"?, ...}}),
// `tool_choice` ("none", "auto", "required" or {"type": "function", "function": {"name"}}) and
// `parallel_tool_calls` (default true). "none" asks the caller to render no tools
// (`*render_tools` false). A forced choice sets `*constraint` to the grammar of the calls (400
// when another constraint is already set, or when the template has no tool-call format).
Status parse_tool_use(const boost::json::object& body, tool_calls::ToolCallFormat format, ToolUse* out,
                      bool* render_tools, std::shared_ptr<const engine::grammar::OutputConstraint>* constraint);

// {"role": "assistant", "content": ..., "tool_calls": [...]}: content null when there are calls
// and no text, as OpenAI sends it.
boost::json::object assistant_message(const tool_calls::ParsedMessage& parsed);

// A whole answer's finish_reason: "tool_calls" when it ends with calls, else `plain`.
const char* tool_finish_reason(const tool_calls::ParsedMessage& parsed, const char* plain);

// The stream of one answer's chat deltas: content pieces, and for each call a first delta with
// index, id, type and name (arguments "") followed by argument pieces.
class ToolCallDeltas {
 public:
  explicit ToolCallDeltas(const ToolUse& use);
  std::vector<boost::json::object> feed(std::string_view text);
  std::vector<boost::json::object> finish();
  bool saw_calls() const { return calls_ > 0; }

 private:
  std::vector<boost::json::object> deltas(std::vector<tool_calls::StreamEvent> events);
  tool_calls::ToolCallStream stream_;
  size_t calls_ = 0;
};

}  // namespace cellserve::server
