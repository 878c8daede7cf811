#include "server/tool_calls/json_scanner.h"

namespace cellserve::server::tool_calls::detail {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void put(char c, std::string* out) {
  if (out != nullptr) *out += c;
}

}  // namespace

void JsonScanner::reset() { *this = JsonScanner(allow_outer_whitespace_); }

bool JsonScanner::complete_at_end() const {
  if (state_ == State::Done) return true;
  return state_ == State::Number && stack_.empty() && number_can_end();
}

Step JsonScanner::feed(char c, std::string* out) {
  switch (state_) {
    case State::Done:
      return Step::DoneBefore;
    case State::Value:
      if (is_json_space(c)) return stack_.empty() && !allow_outer_whitespace_ ? Step::Fail : Step::Consumed;
      return start_value(c, out);
    case State::ArrayOpen:
      if (is_json_space(c)) return Step::Consumed;
      if (c != ']') return start_value(c, out);
      put(c, out);
      stack_.pop_back();
      return end_value();
    case State::ObjectOpen:
    case State::Key:
      if (is_json_space(c)) return Step::Consumed;
      if (c == '}' && state_ == State::ObjectOpen) {
        put(c, out);
        stack_.pop_back();
        return end_value();
      }
      if (c != '"') return Step::Fail;
      put(c, out);
      state_ = State::String;
      string_is_key_ = true;
      return Step::Consumed;
    case State::Colon:
      if (is_json_space(c)) return Step::Consumed;
      if (c != ':') return Step::Fail;
      put(c, out);
      state_ = State::Value;
      return Step::Consumed;
    case State::AfterValue:
      if (is_json_space(c)) return Step::Consumed;
      if (c == ',') {
        put(c, out);
        state_ = stack_.back() == '{' ? State::Key : State::Value;
        return Step::Consumed;
      }
      if ((c == '}' && stack_.back() == '{') || (c == ']' && stack_.back() == '[')) {
        put(c, out);
        stack_.pop_back();
        return end_value();
      }
      return Step::Fail;
    case State::String:
      return string_byte(c, out);
    case State::Escape:
      switch (c) {
        case '"':
        case '\\':
        case '/':
        case 'b':
        case 'f':
        case 'n':
        case 'r':
        case 't':
          if (expect_low_surrogate_) return Step::Fail;
          put(c, out);
          state_ = State::String;
          return Step::Consumed;
        case 'u':
          put(c, out);
          state_ = State::Hex;
          hex_left_ = 4;
          code_unit_ = 0;
          return Step::Consumed;
        default:
          return Step::Fail;
      }
    case State::Hex:
      return hex_byte(c, out);
    case State::LowBackslash:
      if (c != '\\') return Step::Fail;
      put(c, out);
      state_ = State::LowU;
      return Step::Consumed;
    case State::LowU:
      if (c != 'u') return Step::Fail;
      put(c, out);
      state_ = State::Hex;
      hex_left_ = 4;
      code_unit_ = 0;
      return Step::Consumed;
    case State::Number:
      return number_byte(c, out);
    case State::Literal:
      if (c != *literal_) return Step::Fail;
      put(c, out);
      if (*++literal_ == 0) return end_value();
      return Step::Consumed;
  }
  return Step::Fail;
}

Step JsonScanner::start_value(char c, std::string* out) {
  switch (c) {
    case '{':
    case '[':
      if (stack_.size() >= kMaxDepth) return Step::Fail;
      put(c, out);
      stack_.push_back(c);
      state_ = c == '{' ? State::ObjectOpen : State::ArrayOpen;
      return Step::Consumed;
    case '"':
      put(c, out);
      state_ = State::String;
      string_is_key_ = false;
      return Step::Consumed;
    case 't':
      literal_ = "rue";
      break;
    case 'f':
      literal_ = "alse";
      break;
    case 'n':
      literal_ = "ull";
      break;
    case '-':
      put(c, out);
      state_ = State::Number;
      number_ = NumberPart::Minus;
      return Step::Consumed;
    default:
      if (!is_digit(c)) return Step::Fail;
      put(c, out);
      state_ = State::Number;
      number_ = c == '0' ? NumberPart::Zero : NumberPart::Integer;
      return Step::Consumed;
  }
  put(c, out);
  state_ = State::Literal;
  return Step::Consumed;
}

Step JsonScanner::end_value() {
  if (stack_.empty()) {
    state_ = State::Done;
    return Step::Done;
  }
  state_ = State::AfterValue;
  return Step::Consumed;
}

Step JsonScanner::string_byte(char c, std::string* out) {
  const auto b = static_cast<unsigned char>(c);
  if (utf8_.in_character() || b >= 0x80) {
    if (utf8_.feed(b) == Utf8Sequence::Result::Invalid) return Step::Fail;
    put(c, out);
    return Step::Consumed;
  }
  if (b < 0x20) return Step::Fail;
  put(c, out);
  if (c == '\\') {
    state_ = State::Escape;
    return Step::Consumed;
  }
  if (c != '"') return Step::Consumed;
  if (string_is_key_) {
    state_ = State::Colon;
    return Step::Consumed;
  }
  return end_value();
}

Step JsonScanner::hex_byte(char c, std::string* out) {
  const int v = hex_value(c);
  if (v < 0) return Step::Fail;
  put(c, out);
  code_unit_ = code_unit_ * 16 + static_cast<unsigned>(v);
  if (--hex_left_ > 0) return Step::Consumed;
  const bool high = code_unit_ >= 0xD800 && code_unit_ <= 0xDBFF;
  const bool low = code_unit_ >= 0xDC00 && code_unit_ <= 0xDFFF;
  if (expect_low_surrogate_ != low) return Step::Fail;  // a lone surrogate half
  expect_low_surrogate_ = high;
  state_ = high ? State::LowBackslash : State::String;
  return Step::Consumed;
}

bool JsonScanner::number_can_end() const {
  return number_ == NumberPart::Zero || number_ == NumberPart::Integer || number_ == NumberPart::Fraction ||
         number_ == NumberPart::ExponentDigits;
}

Step JsonScanner::number_byte(char c, std::string* out) {
  NumberPart next = number_;
  if (is_digit(c)) {
    switch (number_) {
      case NumberPart::Minus:
        next = c == '0' ? NumberPart::Zero : NumberPart::Integer;
        break;
      case NumberPart::Zero:
        return Step::Fail;  // no leading zeros
      case NumberPart::Integer:
        break;
      case NumberPart::Dot:
        next = NumberPart::Fraction;
        break;
      case NumberPart::Fraction:
        break;
      case NumberPart::Exponent:
      case NumberPart::ExponentSign:
        next = NumberPart::ExponentDigits;
        break;
      case NumberPart::ExponentDigits:
        break;
    }
  } else if (c == '.' && (number_ == NumberPart::Zero || number_ == NumberPart::Integer)) {
    next = NumberPart::Dot;
  } else if ((c == 'e' || c == 'E') &&
             (number_ == NumberPart::Zero || number_ == NumberPart::Integer || number_ == NumberPart::Fraction)) {
    next = NumberPart::Exponent;
  } else if ((c == '+' || c == '-') && number_ == NumberPart::Exponent) {
    next = NumberPart::ExponentSign;
  } else {
    // The number ended before `c`.
    if (!number_can_end()) return Step::Fail;
    if (stack_.empty()) {
      state_ = State::Done;
      return Step::DoneBefore;
    }
    state_ = State::AfterValue;
    return feed(c, out);
  }
  put(c, out);
  number_ = next;
  return Step::Consumed;
}

}  // namespace cellserve::server::tool_calls::detail
