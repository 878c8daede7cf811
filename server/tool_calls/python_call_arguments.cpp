#include "server/tool_calls/python_call_arguments.h"

namespace cellserve::server::tool_calls::detail {
namespace {

constexpr std::size_t kMaxArgumentKeyBytes = 64;
constexpr std::size_t kMaxSpaceAfterQuote = 16;

bool is_identifier_byte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

}  // namespace

void PythonCallArguments::reset(CallSink& sink) {
  state_ = State::BeforeKey;
  key_.clear();
  first_ = true;
  value_.reset();
  quote_.clear();
  sink.arguments += '{';
}

Step PythonCallArguments::feed(char c, CallSink& sink) {
  switch (state_) {
    case State::BeforeKey:
      if (is_json_space(c)) return Step::Consumed;
      if (c == ')') {
        sink.arguments += '}';
        return Step::Done;
      }
      if (!is_identifier_byte(c)) return Step::Fail;
      key_.assign(1, c);
      state_ = State::Key;
      return Step::Consumed;
    case State::Key:
      if (is_identifier_byte(c) && key_.size() < kMaxArgumentKeyBytes) {
        key_ += c;
        return Step::Consumed;
      }
      state_ = State::AfterKey;
      return feed(c, sink);
    case State::AfterKey:
      if (is_json_space(c)) return Step::Consumed;
      if (c != '=') return Step::Fail;
      if (!first_) sink.arguments += ',';
      first_ = false;
      sink.arguments += '"' + key_ + "\":";
      state_ = State::BeforeValue;
      return Step::Consumed;
    case State::BeforeValue:
      if (is_json_space(c)) return Step::Consumed;
      if (c != '"') return Step::Fail;
      sink.arguments += '"';
      value_.reset();
      state_ = State::Value;
      return Step::Consumed;
    case State::Value:
      if (c == '"') {
        quote_.assign(1, c);
        state_ = State::Quote;
        return Step::Consumed;
      }
      value_.feed(c, sink.arguments);
      return Step::Consumed;
    case State::Quote:
      if (c == ',' || c == ')') return end_value(c, sink);
      if (is_json_space(c) && quote_.size() <= kMaxSpaceAfterQuote) {
        quote_ += c;
        return Step::Consumed;
      }
      // The quote was part of the value.
      for (char q : quote_) value_.feed(q, sink.arguments);
      state_ = State::Value;
      return feed(c, sink);
  }
  return Step::Fail;
}

Step PythonCallArguments::end_value(char c, CallSink& sink) {
  value_.finish(sink.arguments);
  sink.arguments += '"';
  if (c == ',') {
    state_ = State::BeforeKey;
    return Step::Consumed;
  }
  sink.arguments += '}';
  return Step::Done;
}

}  // namespace cellserve::server::tool_calls::detail
