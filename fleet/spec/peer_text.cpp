#include "fleet/spec/peer_text.h"

#include <algorithm>
#include <cstdint>

namespace cellserve::fleet {
namespace {

// The length of the UTF-8 sequence at `s[i]` and its code point; 0 when it is not one.
size_t decode_utf8(std::string_view s, size_t i, uint32_t* cp) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t b = byte(i);
  if (b < 0x80) {
    *cp = b;
    return 1;
  }
  // The lead byte gives the length and the top bits of the code point.
  size_t n = 0;
  uint32_t c = 0;
  if ((b & 0xE0) == 0xC0) {
    n = 2;
    c = b & 0x1F;
  } else if ((b & 0xF0) == 0xE0) {
    n = 3;
    c = b & 0x0F;
  } else if ((b & 0xF8) == 0xF0) {
    n = 4;
    c = b & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    c = (c << 6) | (byte(i + k) & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (c < kMin[n] || (c >= 0xD800 && c <= 0xDFFF) || c > 0x10FFFF) return 0;
  *cp = c;
  return n;
}

bool hidden(uint32_t c) {
  return c < 0x20 || c == 0x7F || (c >= 0x80 && c <= 0x9F) || c == 0x200E || c == 0x200F ||
         (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069);
}

}  // namespace

std::string peer_text(std::string_view text, size_t max_chars) {
  std::string out;
  out.reserve(std::min(text.size(), max_chars * 4));
  size_t chars = 0;
  for (size_t i = 0; i < text.size() && chars < max_chars;) {
    uint32_t c = 0;
    const size_t n = decode_utf8(text, i, &c);
    if (n == 0) {  // not UTF-8: dropped
      ++i;
      continue;
    }
    if (!hidden(c)) {
      out.append(text.substr(i, n));
      ++chars;
    }
    i += n;
  }
  return out;
}

}  // namespace cellserve::fleet
