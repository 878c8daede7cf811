#include "engine/tokenizer/streaming_decoder.h"

namespace cellserve::engine::tokenizer {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

enum class Scan { Complete, Incomplete, Invalid };

// Examines the UTF-8 sequence starting at s[0] (Unicode Table 3-7, well-formed byte sequences).
// Complete: `len` is its length. Incomplete: every byte present is valid but the input ends early.
// Invalid: s[0] can start no well-formed sequence with the bytes that follow.
Scan scan_sequence(std::string_view s, size_t& len) {
  const auto b0 = static_cast<uint8_t>(s[0]);
  uint8_t lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (b0 < 0x80) {
    len = 1;
    return Scan::Complete;
  } else if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;  // no overlong forms
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;  // no overlong forms
    if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return Scan::Invalid;  // 0x80..0xC1, 0xF5..0xFF
  }
  for (size_t i = 1; i < len; ++i) {
    if (i >= s.size()) return Scan::Incomplete;
    const auto b = static_cast<uint8_t>(s[i]);
    if (i == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) return Scan::Invalid;
  }
  return Scan::Complete;
}

// Moves the valid prefix of `pending` to the result; with `final`, nothing is held back.
std::string drain(std::string& pending, bool final) {
  std::string out;
  size_t pos = 0;
  while (pos < pending.size()) {
    size_t len = 0;
    const Scan scan = scan_sequence(std::string_view(pending).substr(pos), len);
    if (scan == Scan::Complete) {
      out.append(pending, pos, len);
      pos += len;
    } else if (scan == Scan::Incomplete && !final) {
      break;  // wait for the next token
    } else {
      out.append(kReplacement);
      pos += 1;
    }
  }
  pending.erase(0, pos);
  return out;
}

}  // namespace

std::string StreamingDecoder::push(int32_t id) { return push_bytes(tokenizer_->token_to_piece(id, special_)); }

std::string StreamingDecoder::push_bytes(std::string_view bytes) {
  pending_.append(bytes);
  return drain(pending_, /*final=*/false);
}

std::string StreamingDecoder::flush() { return drain(pending_, /*final=*/true); }

}  // namespace cellserve::engine::tokenizer
