#include "server/tool_calls/json_call_object.h"

#include "server/tool_calls/call_syntax.h"

namespace cellserve::server::tool_calls::detail {
namespace {

constexpr std::size_t kMaxKeyBytes = 32;

bool is_arguments_key(const std::string& key) { return key == "arguments" || key == "parameters"; }

std::size_t max_value_bytes(const std::string& key) {
  if (key == "name") return kMaxNameBytes;
  if (key == "id") return kMaxIdBytes;
  if (key == "type") return 32;
  return 0;  // not a key a call object has before its arguments
}

}  // namespace

void JsonCallHead::reset() {
  state_ = State::MemberStart;
  after_comma_ = false;
  key_.clear();
  value_.clear();
  arguments_.reset();
}

Step JsonCallHead::close_without_arguments(CallSink& sink) {
  if (sink.name.empty() || after_comma_) return Step::Fail;
  sink.committed = true;
  sink.object_closed = true;
  sink.arguments += "{}";
  return Step::Done;
}

Step JsonCallHead::feed(char c, CallSink& sink) {
  switch (state_) {
    case State::MemberStart:
      if (is_json_space(c)) return Step::Consumed;
      if (c == '}') return close_without_arguments(sink);
      if (c != '"') return Step::Fail;
      key_.clear();
      state_ = State::Key;
      return Step::Consumed;
    case State::Key:
      if (c == '"') {
        state_ = State::Colon;
        return Step::Consumed;
      }
      if (c == '\\' || static_cast<unsigned char>(c) < 0x20 || key_.size() == kMaxKeyBytes) return Step::Fail;
      key_ += c;
      return Step::Consumed;
    case State::Colon:
      if (is_json_space(c)) return Step::Consumed;
      if (c != ':') return Step::Fail;
      state_ = State::Value;
      return Step::Consumed;
    case State::Value:
      if (is_json_space(c)) return Step::Consumed;
      if (is_arguments_key(key_)) {
        if (c != '{' || sink.name.empty()) return Step::Fail;
        sink.committed = true;
        state_ = State::Arguments;
        return arguments_.feed(c, &sink.arguments);
      }
      if (c != '"' || max_value_bytes(key_) == 0) return Step::Fail;
      if (key_ == "name" && !sink.name.empty()) return Step::Fail;
      value_.clear();
      state_ = State::StringValue;
      return Step::Consumed;
    case State::StringValue:
      if (c != '"') {
        // Names and ids are plain: an escape or a control character is not a tool's name.
        if (c == '\\' || static_cast<unsigned char>(c) < 0x20 || value_.size() == max_value_bytes(key_)) {
          return Step::Fail;
        }
        value_ += c;
        return Step::Consumed;
      }
      if (key_ == "name") {
        if (!sink.catalog->has_tool(value_)) return Step::Fail;
        sink.name = value_;
      } else if (key_ == "id") {
        sink.id = value_;
      }
      state_ = State::AfterMember;
      after_comma_ = false;
      return Step::Consumed;
    case State::AfterMember:
      if (is_json_space(c)) return Step::Consumed;
      if (c == '}') return close_without_arguments(sink);
      if (c != ',') return Step::Fail;
      after_comma_ = true;
      state_ = State::MemberStart;
      return Step::Consumed;
    case State::Arguments: {
      const Step step = arguments_.feed(c, &sink.arguments);
      return step == Step::DoneBefore ? Step::Fail : step;  // an object never ends before a byte
    }
  }
  return Step::Fail;
}

void JsonCallTail::reset() {
  state_ = State::Start;
  key_bytes_ = 0;
  value_.reset();
}

Step JsonCallTail::feed(char c, CallSink& sink) {
  switch (state_) {
    case State::Start:
      if (sink.object_closed) return Step::DoneBefore;
      state_ = State::AfterMember;
      return feed(c, sink);
    case State::AfterMember:
      if (is_json_space(c)) return Step::Consumed;
      if (c == '}') return Step::Done;
      // Models now and then forget the call object's '}': the arguments were complete, so is the call.
      if (c != ',') return Step::DoneBefore;
      state_ = State::KeyStart;
      return Step::Consumed;
    case State::KeyStart:
      if (is_json_space(c)) return Step::Consumed;
      if (c != '"') return Step::Fail;
      key_bytes_ = 0;
      state_ = State::Key;
      return Step::Consumed;
    case State::Key:
      if (c == '"') {
        state_ = State::Colon;
        return Step::Consumed;
      }
      if (c == '\\' || static_cast<unsigned char>(c) < 0x20 || ++key_bytes_ > kMaxKeyBytes) return Step::Fail;
      return Step::Consumed;
    case State::Colon:
      if (is_json_space(c)) return Step::Consumed;
      if (c != ':') return Step::Fail;
      value_.reset();
      state_ = State::Value;
      return Step::Consumed;
    case State::Value: {
      const Step step = value_.feed(c, nullptr);
      if (step == Step::Consumed || step == Step::Fail) return step;
      state_ = State::AfterMember;
      return step == Step::Done ? Step::Consumed : feed(c, sink);
    }
  }
  return Step::Fail;
}

}  // namespace cellserve::server::tool_calls::detail
