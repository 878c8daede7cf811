// Utf8Sequence: well-formedness of UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing
// above U+10FFFF), one byte at a time, so that a character split across pieces is still checked.
#pragma once

namespace cellserve::server::tool_calls::detail {

class Utf8Sequence {
 public:
  enum class Result { Complete, Incomplete, Invalid };

  // Feeds one byte. Invalid: it cannot start or continue a character (the state is then reset).
  Result feed(unsigned char byte);
  bool in_character() const { return needed_ > 0; }
  void reset() { needed_ = 0; }

 private:
  int needed_ = 0;            // continuation bytes still expected
  unsigned char low_ = 0x80;  // the range the next continuation byte must lie in
  unsigned char high_ = 0xBF;
};

}  // namespace cellserve::server::tool_calls::detail
