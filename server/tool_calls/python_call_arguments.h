// PythonCallArguments: the arguments of Llama 3.1's builtin-tool call, <|python_tag|>NAME.call(
// k="v", ...), from after the '(' to the ')', as a compact JSON object of strings. The template
// writes every value as "value" with nothing escaped, so a '"' ends the value only when what
// follows it (after at most 16 bytes of whitespace) is ',' or ')'.
#pragma once

#include <cstddef>
#include <string>

#include "server/tool_calls/call_sink.h"
#include "server/tool_calls/json_string_writer.h"
#include "server/tool_calls/scan_step.h"

namespace cellserve::server::tool_calls::detail {

class PythonCallArguments {
 public:
  // Starts the object: writes its '{'.
  void reset(CallSink& sink);
  Step feed(char c, CallSink& sink);

 private:
  enum class State { BeforeKey, Key, AfterKey, BeforeValue, Value, Quote };
  Step end_value(char c, CallSink& sink);

  State state_ = State::BeforeKey;
  std::string key_;
  bool first_ = true;
  JsonStringWriter value_;
  std::string quote_;  // a quote and the whitespace after it, while they may end the value
};

}  // namespace cellserve::server::tool_calls::detail
