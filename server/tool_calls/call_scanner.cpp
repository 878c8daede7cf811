#include "server/tool_calls/call_scanner.h"

#include "server/tool_calls/call_ids.h"

namespace cellserve::server::tool_calls::detail {
namespace {

// Ops that complete a call when they are done.
bool completes_call(OpKind kind) {
  return kind == OpKind::JsonCallHead || kind == OpKind::JsonArguments || kind == OpKind::XmlParameters ||
         kind == OpKind::PythonArguments;
}

}  // namespace

CallScanner::CallScanner(ToolCallFormat format, ToolCatalog catalog)
    : syntax_(call_syntax(format)), catalog_(std::move(catalog)) {
  sink_.catalog = &catalog_;
}

void CallScanner::feed(std::string_view text, std::vector<ScanEvent>& out) {
  out_ = &out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (mode_ == Mode::Text) {
      text_byte(text[i], offset_ + i);
    } else {
      call_byte(text[i], offset_ + i);
    }
  }
  offset_ += text.size();
  out_ = nullptr;
}

void CallScanner::finish(std::vector<ScanEvent>& out) {
  out_ = &out;
  if (mode_ == Mode::Call && phase_ == Phase::Streaming) {
    const std::string unsent = syntax_.ops[pc_].kind == OpKind::XmlParameters ? xml_.unsent() : std::string();
    out.push_back({.kind = ScanEvent::Kind::CallAbort, .text = unsent, .begin = region_begin_, .end = offset_});
  } else {
    emit_held_as_text();
  }
  held_.clear();
  space_run_ = 0;
  mode_ = Mode::Text;
  phase_ = Phase::Held;
  out_ = nullptr;
}

std::size_t CallScanner::buffered_bytes() const {
  std::size_t bytes = held_.size();
  if (mode_ == Mode::Call && syntax_.ops[pc_].kind == OpKind::XmlParameters) bytes += xml_.unsent().size();
  return bytes;
}

void CallScanner::push(ScanEvent::Kind kind, std::string_view text) {
  if (text.empty()) return;
  if (!out_->empty() && out_->back().kind == kind) {
    out_->back().text += text;
    return;
  }
  out_->push_back({.kind = kind, .text = std::string(text)});
}

void CallScanner::emit_content(std::string_view text) {
  if (after_call_) {
    std::size_t i = 0;
    while (i < text.size() && is_json_space(text[i])) ++i;
    text.remove_prefix(i);
    if (!text.empty()) after_call_ = false;
  }
  push(ScanEvent::Kind::Content, text);
}

void CallScanner::emit_held_as_text() {
  emit_content(held_);
  held_.clear();
  space_run_ = 0;
}

void CallScanner::hold(char c, std::size_t at) {
  if (held_.empty()) held_begin_ = at;
  held_ += c;
}

bool CallScanner::is_marker_prefix(std::string_view text) const {
  for (const StartMarker& marker : syntax_.markers) {
    if (marker.text.size() > text.size() && marker.text.compare(0, text.size(), text) == 0) return true;
  }
  return false;
}

void CallScanner::text_byte(char c, std::size_t at) {
  if (held_.size() == space_run_) {  // no marker prefix pending
    if (syntax_.markers.empty()) {
      emit_content(std::string_view(&c, 1));
      return;
    }
    if (is_json_space(c)) {
      if (after_call_) return;
      if (space_run_ == kMaxTrimmedSpace) {
        emit_content(std::string_view(held_).substr(0, 1));
        held_.erase(0, 1);
        ++held_begin_;
        --space_run_;
      }
      hold(c, at);
      ++space_run_;
      return;
    }
    bool starts = false;
    for (const StartMarker& marker : syntax_.markers) starts = starts || marker.text[0] == c;
    if (!starts) {
      emit_held_as_text();
      emit_content(std::string_view(&c, 1));
      return;
    }
  }
  hold(c, at);
  const std::string_view prefix = std::string_view(held_).substr(space_run_);
  for (const StartMarker& marker : syntax_.markers) {
    if (marker.text == prefix) {
      start_call(marker.first_op, at);
      return;
    }
  }
  if (is_marker_prefix(prefix)) return;
  // The prefix broke off: its first byte is text, the rest may begin a marker again.
  const std::string rest(prefix.substr(1));
  const std::size_t rest_at = held_begin_ + space_run_ + 1;
  emit_content(std::string_view(held_).substr(0, space_run_ + 1));
  held_.clear();
  space_run_ = 0;
  for (std::size_t i = 0; i < rest.size(); ++i) text_byte(rest[i], rest_at + i);
}

void CallScanner::start_call(int first_op, std::size_t at) {
  mode_ = Mode::Call;
  phase_ = Phase::Held;
  sink_.start_call();
  enter(first_op);
  run_plain_ops(at);
}

void CallScanner::call_byte(char c, std::size_t at) {
  for (;;) {
    const Phase before = phase_;
    if (before == Phase::Held && held_.size() >= kMaxHeldBytes) {
      fail(c, at);
      return;
    }
    next_pc_ = pc_ + 1;
    const Step step = step_op(c);
    if (step == Step::Fail) {
      fail(c, at);
      return;
    }
    after_step(at);
    const bool consumed = step != Step::DoneBefore;
    if (consumed && before == Phase::Held && phase_ == Phase::Held) hold(c, at);
    if (step == Step::Done || step == Step::DoneBefore) {
      if (completes_call(syntax_.ops[pc_].kind)) succeed();
      enter(next_pc_);
    }
    run_plain_ops(at);
    if (consumed) return;
    if (mode_ == Mode::Text) {
      text_byte(c, at);
      return;
    }
  }
}

Step CallScanner::step_op(char c) {
  const Op& op = syntax_.ops[pc_];
  switch (op.kind) {
    case OpKind::Whitespace:
      return is_json_space(c) ? Step::Consumed : Step::DoneBefore;
    case OpKind::Literal:
      if (c != op.text[literal_pos_]) return Step::Fail;
      return ++literal_pos_ == op.text.size() ? Step::Done : Step::Consumed;
    case OpKind::Choice: {
      const int matched = choice_.feed(c);
      if (matched >= 0) {
        next_pc_ = op.choices[static_cast<std::size_t>(matched)].second;
        return Step::Done;
      }
      if (matched == LiteralMatcher::kPartial) return Step::Consumed;
      if (choice_.partial() || op.fallback < 0) return Step::Fail;
      next_pc_ = op.fallback;
      return Step::DoneBefore;
    }
    case OpKind::Field:
      if (c == op.stop) {
        if (field_.empty()) return Step::Fail;
        if (op.field == FieldKind::Name) {
          if (!catalog_.has_tool(field_)) return Step::Fail;
          sink_.name = field_;
        } else if (op.field == FieldKind::Id) {
          sink_.id = field_;
        }
        return Step::DoneBefore;
      }
      if (static_cast<unsigned char>(c) < 0x20 || field_.size() == op.max_length) return Step::Fail;
      field_ += c;
      return Step::Consumed;
    case OpKind::JsonCallHead:
      return head_.feed(c, sink_);
    case OpKind::JsonCallTail:
      return tail_.feed(c, sink_);
    case OpKind::JsonArguments: {
      if (!sink_.committed) {
        if (c != '{') return Step::Fail;
        sink_.committed = true;
      }
      const Step step = arguments_.feed(c, &sink_.arguments);
      return step == Step::DoneBefore ? Step::Fail : step;
    }
    case OpKind::XmlParameters:
      return xml_.feed(c, sink_);
    case OpKind::PythonArguments:
      return python_.feed(c, sink_);
    case OpKind::Commit:
    case OpKind::Release:
    case OpKind::Jump:
    case OpKind::End:
      break;  // run by run_plain_ops, never given a byte
  }
  return Step::Fail;
}

void CallScanner::enter(int pc) {
  pc_ = pc;
  const Op& op = syntax_.ops[pc_];
  switch (op.kind) {
    case OpKind::Literal:
      literal_pos_ = 0;
      break;
    case OpKind::Choice: {
      std::vector<std::string_view> literals;
      for (const auto& [text, target] : op.choices) literals.emplace_back(text);
      choice_.reset(std::move(literals));
      break;
    }
    case OpKind::Field:
      field_.clear();
      break;
    case OpKind::JsonCallHead:
      sink_.start_call();
      head_.reset();
      break;
    case OpKind::JsonCallTail:
      tail_.reset();
      break;
    case OpKind::JsonArguments:
      arguments_.reset();
      break;
    case OpKind::XmlParameters:
      xml_.reset(sink_);
      break;
    case OpKind::PythonArguments:
      python_.reset(sink_);
      break;
    default:
      break;
  }
}

void CallScanner::run_plain_ops(std::size_t at) {
  while (mode_ == Mode::Call) {
    const Op& op = syntax_.ops[pc_];
    switch (op.kind) {
      case OpKind::Commit:
        sink_.committed = true;
        after_step(at);
        enter(pc_ + 1);
        after_step(at);  // the opening '{' an argument reader writes
        break;
      case OpKind::Release:
        held_.clear();
        enter(pc_ + 1);
        break;
      case OpKind::Jump:
        enter(op.target);
        break;
      case OpKind::End:
        held_.clear();
        mode_ = Mode::Text;
        return;
      default:
        return;
    }
  }
}

void CallScanner::after_step(std::size_t at) {
  if (sink_.committed && phase_ == Phase::Held) {
    region_begin_ = held_.empty() ? at : held_begin_;
    if (after_call_) {  // the format's whitespace after the previous call is not this call's
      for (std::size_t i = 0; i < held_.size() && is_json_space(held_[i]); ++i) ++region_begin_;
    }
    const bool nine = syntax_.nine_character_ids;
    std::string id = usable_call_id(sink_.id, nine) ? sink_.id : make_call_id(nine);
    out_->push_back({.kind = ScanEvent::Kind::CallStart, .text = sink_.name, .id = std::move(id)});
    held_.clear();
    space_run_ = 0;
    phase_ = Phase::Streaming;
  }
  if (!sink_.arguments.empty()) {
    push(ScanEvent::Kind::Arguments, sink_.arguments);
    sink_.arguments.clear();
  }
}

void CallScanner::succeed() {
  out_->push_back({.kind = ScanEvent::Kind::CallEnd});
  phase_ = Phase::Held;
  after_call_ = true;
  sink_.committed = false;
  sink_.name.clear();
  sink_.id.clear();
}

void CallScanner::fail(char c, std::size_t at) {
  if (phase_ == Phase::Streaming) {
    const std::string unsent = syntax_.ops[pc_].kind == OpKind::XmlParameters ? xml_.unsent() : std::string();
    out_->push_back({.kind = ScanEvent::Kind::CallAbort, .text = unsent, .begin = region_begin_, .end = at});
    after_call_ = false;
  } else {
    emit_held_as_text();
  }
  held_.clear();
  space_run_ = 0;
  mode_ = Mode::Text;
  phase_ = Phase::Held;
  sink_.start_call();
  text_byte(c, at);
}

}  // namespace cellserve::server::tool_calls::detail
