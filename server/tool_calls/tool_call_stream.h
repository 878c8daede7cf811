// ToolCallStream: tool calls out of an answer that arrives in pieces, as OpenAI streams them.
//
//   ToolCallStream stream(format, tool_names);
//   for each piece of generated text:  send(stream.feed(piece));
//   at the end:                        send(stream.finish());
//
// Content is released as soon as it cannot be the start of a call marker (only a possible marker
// prefix, and the whitespace before it, wait). A call is announced (CallStart) once its name is
// known and its arguments begin; the arguments then stream as compact JSON: the ArgumentsDelta
// texts of a call, concatenated, are its final `arguments`, byte for byte. finish() releases what is
// held back: an unfinished marker or call header is content.
//
// For every text and every split into pieces, the events add up to exactly parse_tool_calls() of
// the whole text, with one exception that streaming cannot avoid: a call cut off (or broken) after
// its arguments began. parse_tool_calls() then returns that markup as content; the stream has
// already sent the call's start and arguments so far, so it ends the call there (its arguments are
// incomplete JSON, as OpenAI's are when max_tokens cuts a call) and sends the rest as content.
// cut_call_count() tells how many calls ended that way.
//
// Memory: at most CallScanner::kMaxHeldBytes of call markup, kMaxTrimmedSpace of whitespace and
// XmlParameters::kMaxTypedValueBytes of a QwenXml value are held, whatever the model writes.
// Not thread-safe (one per answer).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "server/tool_calls/tool_call_format.h"
#include "server/tool_calls/tool_spec.h"

namespace cellserve::server::tool_calls {

namespace detail {
class CallScanner;
}

struct ContentDelta {
  std::string text;
};
struct CallStart {
  std::size_t index;  // 0, 1, ... in the order of the answer's calls
  std::string id;
  std::string name;
};
struct ArgumentsDelta {
  std::size_t index;
  std::string text;
};
using StreamEvent = std::variant<ContentDelta, CallStart, ArgumentsDelta>;

class ToolCallStream {
 public:
  ToolCallStream(ToolCallFormat format, std::vector<std::string> tool_names);
  // With the tools' schemas (see parse_tool_calls: QwenXml string parameters). Prefer this one.
  ToolCallStream(ToolCallFormat format, const std::vector<ToolSpec>& tools);
  ~ToolCallStream();
  ToolCallStream(ToolCallStream&&) noexcept;
  ToolCallStream& operator=(ToolCallStream&&) noexcept;

  std::vector<StreamEvent> feed(std::string_view text_piece);
  // The end of the answer. feed() and finish() after it return nothing.
  std::vector<StreamEvent> finish();

  // Bytes read but not yet sent (bounded, see above).
  std::size_t buffered_bytes() const;
  // Calls started but cut off before their arguments were complete.
  std::size_t cut_call_count() const { return cut_calls_; }

 private:
  std::vector<StreamEvent> run(std::string_view text, bool at_end);

  std::unique_ptr<detail::CallScanner> scanner_;
  std::size_t next_index_ = 0;
  std::size_t cut_calls_ = 0;
  bool finished_ = false;
};

}  // namespace cellserve::server::tool_calls
