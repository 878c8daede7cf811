#include "server/tool_calls/xml_parameters.h"

#include <array>
#include <string_view>

#include "server/tool_calls/call_syntax.h"

namespace cellserve::server::tool_calls::detail {
namespace {

constexpr std::string_view kOpenTag = "<parameter=";
constexpr std::string_view kFunctionEnd = "</function>";

// Python's str() of True, False and None, and the JSON each stands for.
constexpr std::array<std::pair<std::string_view, std::string_view>, 3> kPythonLiterals = {
    {{"True", "true"}, {"False", "false"}, {"None", "null"}}};

bool may_be_python_literal(std::string_view text) {
  for (const auto& [python, json] : kPythonLiterals) {
    if (python.substr(0, text.size()) == text) return true;
  }
  return false;
}

}  // namespace

XmlParameters::XmlParameters() : tags_({kOpenTag, kFunctionEnd}), close_({"\n</parameter>", "</parameter>"}) {}

void XmlParameters::reset(CallSink& sink) {
  state_ = State::Between;
  tags_.reset();
  close_.reset();
  name_.clear();
  first_ = true;
  sink.arguments += '{';
}

std::string XmlParameters::unsent() const {
  if (state_ == State::Name) return std::string(kOpenTag) + name_;
  if (state_ != State::Value) return {};
  return (mode_ == ValueMode::Typed ? raw_ : text_.pending()) + close_.held();
}

Step XmlParameters::feed(char c, CallSink& sink) {
  switch (state_) {
    case State::Between: {
      if (!tags_.partial() && is_json_space(c)) return Step::Consumed;
      const int tag = tags_.feed(c);
      if (tag == LiteralMatcher::kPartial) return Step::Consumed;
      if (tag == LiteralMatcher::kMismatch) return Step::Fail;
      if (tag == 1) {
        sink.arguments += '}';
        return Step::Done;
      }
      name_.clear();
      state_ = State::Name;
      return Step::Consumed;
    }
    case State::Name:
      if (c != '>') {
        if (c == '<' || static_cast<unsigned char>(c) < 0x20 || name_.size() == kMaxNameBytes) return Step::Fail;
        name_ += c;
        return Step::Consumed;
      }
      if (name_.empty()) return Step::Fail;
      if (!first_) sink.arguments += ',';
      first_ = false;
      sink.arguments += '"';
      append_json_string_body(name_, sink.arguments);
      sink.arguments += "\":";
      mode_ = sink.catalog->is_string_parameter(sink.name, name_) ? ValueMode::Text : ValueMode::Typed;
      text_.reset();
      if (mode_ == ValueMode::Text) sink.arguments += '"';
      raw_.clear();
      compact_.clear();
      json_.reset();
      may_be_json_ = true;
      close_.reset();
      state_ = State::LeadingNewline;
      return Step::Consumed;
    case State::LeadingNewline:
      state_ = State::Value;
      if (c == '\n') return Step::Consumed;
      return feed(c, sink);
    case State::Value: {
      std::string released;
      const int closed = close_.feed(c, released);
      for (char r : released) value_byte(r, sink);
      if (closed >= 0) {
        finish_value(sink);
        state_ = State::Between;
      }
      return Step::Consumed;
    }
  }
  return Step::Fail;
}

void XmlParameters::value_byte(char c, CallSink& sink) {
  if (mode_ == ValueMode::Text) {
    text_.feed(c, sink.arguments);
    return;
  }
  raw_ += c;
  if (may_be_json_) {
    // Bytes after a complete value (DoneBefore) mean the text is more than one JSON value.
    const Step step = json_.feed(c, &compact_);
    may_be_json_ = step == Step::Consumed || step == Step::Done;
  }
  if ((!may_be_json_ && !may_be_python_literal(raw_)) || raw_.size() > kMaxTypedValueBytes) write_as_text(sink);
}

void XmlParameters::write_as_text(CallSink& sink) {
  mode_ = ValueMode::Text;
  sink.arguments += '"';
  for (char r : raw_) text_.feed(r, sink.arguments);
  raw_.clear();
  compact_.clear();
}

void XmlParameters::finish_value(CallSink& sink) {
  if (mode_ == ValueMode::Typed) {
    if (may_be_json_ && json_.complete_at_end()) {
      sink.arguments += compact_;
      return;
    }
    for (const auto& [python, json] : kPythonLiterals) {
      if (raw_ == python) {
        sink.arguments += json;
        return;
      }
    }
    write_as_text(sink);
  }
  text_.finish(sink.arguments);
  sink.arguments += '"';
}

}  // namespace cellserve::server::tool_calls::detail
