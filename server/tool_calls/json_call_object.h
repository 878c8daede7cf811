// The {"name": "f", "arguments": {...}} object of the JSON formats (Hermes, Llama 3, Mistral Nemo,
// Granite), read in two parts so that the call can be reported as soon as its arguments begin:
//
// JsonCallHead, after the '{': members "name" (a known tool), "id", "type" (strings), then
// "arguments" or "parameters" (an object; Llama writes "parameters"), which commits the call and
// streams compactly; Done at the arguments' '}'. A known name and '}' without arguments is a call
// with {}. Any other key before the arguments, a name after them, or arguments that are not an
// object fail: the markup then stays text.
// JsonCallTail: whatever members follow the arguments (Mistral's "id"), skipped, then '}' (or
// nothing: a missing '}' is forgiven).
#pragma once

#include <string>

#include "server/tool_calls/call_sink.h"
#include "server/tool_calls/json_scanner.h"
#include "server/tool_calls/scan_step.h"

namespace cellserve::server::tool_calls::detail {

class JsonCallHead {
 public:
  void reset();
  Step feed(char c, CallSink& sink);

 private:
  enum class State { MemberStart, Key, Colon, Value, StringValue, Arguments, AfterMember };
  Step close_without_arguments(CallSink& sink);

  State state_ = State::MemberStart;
  bool after_comma_ = false;
  std::string key_;
  std::string value_;
  JsonScanner arguments_;
};

class JsonCallTail {
 public:
  void reset();
  Step feed(char c, CallSink& sink);

 private:
  enum class State { Start, AfterMember, KeyStart, Key, Colon, Value };

  State state_ = State::Start;
  std::size_t key_bytes_ = 0;
  JsonScanner value_;
};

}  // namespace cellserve::server::tool_calls::detail
