// XmlParameters: QwenXml's parameters, after <function=NAME>, up to and including </function>,
// written as one compact JSON object {"P":VALUE,...} in the order the model wrote them.
//
// A value is the text between <parameter=P> and </parameter>, less one newline after the opening
// tag and one before the closing tag (the template puts them there). Its JSON form:
// - a parameter the tool's schema declares a string: that text, as a JSON string, streamed;
// - otherwise, the text when it is exactly one JSON value (Qwen's template writes numbers, objects
//   and arrays that way) or True / False / None (how it writes booleans and null: Python's str());
//   anything else is a string. Such a value waits until it is known not to be JSON, or is complete,
//   at most kMaxTypedValueBytes: a longer one is a string.
#pragma once

#include <cstddef>
#include <string>

#include "server/tool_calls/call_sink.h"
#include "server/tool_calls/json_scanner.h"
#include "server/tool_calls/json_string_writer.h"
#include "server/tool_calls/literal_matcher.h"
#include "server/tool_calls/scan_step.h"

namespace cellserve::server::tool_calls::detail {

class XmlParameters {
 public:
  static constexpr std::size_t kMaxTypedValueBytes = 16 * 1024;

  XmlParameters();
  // Starts the object: writes its '{'.
  void reset(CallSink& sink);
  Step feed(char c, CallSink& sink);
  // The bytes read but not yet written (for a call that breaks off).
  std::string unsent() const;

 private:
  enum class State { Between, Name, LeadingNewline, Value };
  enum class ValueMode { Text, Typed };

  void value_byte(char c, CallSink& sink);
  void finish_value(CallSink& sink);
  void write_as_text(CallSink& sink);  // a typed candidate turns out to be text

  State state_ = State::Between;
  LiteralMatcher tags_;
  TerminatorMatcher close_;
  std::string name_;
  bool first_ = true;
  ValueMode mode_ = ValueMode::Text;
  JsonStringWriter text_;
  std::string raw_;      // a typed candidate's text
  std::string compact_;  // ... and its compact JSON form, while it may be JSON
  JsonScanner json_{false};
  bool may_be_json_ = false;
};

}  // namespace cellserve::server::tool_calls::detail
