// JsonScanner: an incremental JSON (RFC 8259) validator that also writes the value compactly: every
// byte of the value except the whitespace between tokens, exactly as the model wrote it (numbers and
// string escapes are not rewritten, duplicate keys stay). Fed one byte at a time, it decides on each
// byte alone, so any split of the text gives the same output. Nesting is bounded (an explicit stack,
// no recursion), strings must be well-formed UTF-8 without raw control characters, \u escapes must
// pair surrogates.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "server/tool_calls/scan_step.h"
#include "server/tool_calls/utf8_sequence.h"

namespace cellserve::server::tool_calls::detail {

class JsonScanner {
 public:
  static constexpr std::size_t kMaxDepth = 64;

  // allow_outer_whitespace: whitespace before the value is skipped (otherwise it fails).
  explicit JsonScanner(bool allow_outer_whitespace = true) : allow_outer_whitespace_(allow_outer_whitespace) {}
  void reset();

  // Feeds one byte; appends the value's bytes to `out` when it is not null. Once the value is
  // complete, every further byte is DoneBefore. A top-level number completes at the byte after it
  // (DoneBefore) or at the end of the input (complete_at_end).
  Step feed(char c, std::string* out);
  // Whether the bytes fed so far are exactly one complete value.
  bool complete_at_end() const;

 private:
  enum class State {
    Value,         // a value is expected
    ObjectOpen,    // after '{': a key or '}'
    ArrayOpen,     // after '[': a value or ']'
    Key,           // after ',' in an object: a key
    Colon,         // after a key
    AfterValue,    // in a container after a value: ',' or the closing bracket
    String,        // inside a string (key or value)
    Escape,        // after a backslash
    Hex,           // inside \uXXXX
    LowBackslash,  // after a high surrogate escape: '\' of the low one
    LowU,          // 'u' of the low surrogate
    Number,        // inside a number (number_ says where)
    Literal,       // inside true / false / null
    Done,
  };
  enum class NumberPart { Minus, Zero, Integer, Dot, Fraction, Exponent, ExponentSign, ExponentDigits };

  Step start_value(char c, std::string* out);
  Step end_value();  // a value (not a top-level number) just ended
  Step string_byte(char c, std::string* out);
  Step hex_byte(char c, std::string* out);
  Step number_byte(char c, std::string* out);
  bool number_can_end() const;

  bool allow_outer_whitespace_;
  State state_ = State::Value;
  std::vector<char> stack_;  // '{' or '[' per open container
  bool string_is_key_ = false;
  Utf8Sequence utf8_;
  int hex_left_ = 0;
  unsigned code_unit_ = 0;
  bool expect_low_surrogate_ = false;
  NumberPart number_ = NumberPart::Minus;
  const char* literal_ = nullptr;  // the rest of the literal still expected
};

}  // namespace cellserve::server::tool_calls::detail
