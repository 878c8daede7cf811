#include "server/tool_calls/utf8_sequence.h"

namespace cellserve::server::tool_calls::detail {

Utf8Sequence::Result Utf8Sequence::feed(unsigned char byte) {
  if (needed_ > 0) {
    if (byte < low_ || byte > high_) {
      reset();
      return Result::Invalid;
    }
    low_ = 0x80;
    high_ = 0xBF;
    return --needed_ == 0 ? Result::Complete : Result::Incomplete;
  }
  if (byte < 0x80) return Result::Complete;
  // The first continuation byte's range excludes overlong forms, surrogates and > U+10FFFF.
  low_ = 0x80;
  high_ = 0xBF;
  if (byte >= 0xC2 && byte <= 0xDF) {
    needed_ = 1;
  } else if (byte == 0xE0) {
    needed_ = 2, low_ = 0xA0;
  } else if ((byte >= 0xE1 && byte <= 0xEC) || byte == 0xEE || byte == 0xEF) {
    needed_ = 2;
  } else if (byte == 0xED) {
    needed_ = 2, high_ = 0x9F;
  } else if (byte == 0xF0) {
    needed_ = 3, low_ = 0x90;
  } else if (byte >= 0xF1 && byte <= 0xF3) {
    needed_ = 3;
  } else if (byte == 0xF4) {
    needed_ = 3, high_ = 0x8F;
  } else {
    return Result::Invalid;
  }
  return Result::Incomplete;
}

}  // namespace cellserve::server::tool_calls::detail
