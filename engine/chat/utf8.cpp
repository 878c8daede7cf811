#include "engine/chat/utf8.h"

#include <algorithm>

namespace cellserve::engine::chat {

char32_t utf8_decode(std::string_view s, size_t* pos) {
  const auto b0 = static_cast<unsigned char>(s[*pos]);
  if (b0 < 0x80) {
    ++*pos;
    return b0;
  }
  int len = 0;
  char32_t cp = 0;
  if ((b0 & 0xE0) == 0xC0)
    len = 2, cp = b0 & 0x1F;
  else if ((b0 & 0xF0) == 0xE0)
    len = 3, cp = b0 & 0x0F;
  else if ((b0 & 0xF8) == 0xF0)
    len = 4, cp = b0 & 0x07;
  if (len == 0 || *pos + static_cast<size_t>(len) > s.size()) {
    ++*pos;
    return b0;
  }
  for (int i = 1; i < len; ++i) {
    const auto b = static_cast<unsigned char>(s[*pos + static_cast<size_t>(i)]);
    if ((b & 0xC0) != 0x80) {
      ++*pos;
      return b0;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  // Overlong forms and out-of-range values are invalid: keep the lead byte as is.
  static constexpr char32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[len] || cp > 0x10FFFF) {
    ++*pos;
    return b0;
  }
  *pos += static_cast<size_t>(len);
  return cp;
}

void utf8_append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::vector<std::string_view> utf8_chars(std::string_view s) {
  std::vector<std::string_view> out;
  out.reserve(s.size());
  size_t pos = 0;
  while (pos < s.size()) {
    const size_t start = pos;
    utf8_decode(s, &pos);
    out.push_back(s.substr(start, pos - start));
  }
  return out;
}

size_t utf8_length(std::string_view s) {
  size_t n = 0;
  size_t pos = 0;
  while (pos < s.size()) {
    utf8_decode(s, &pos);
    ++n;
  }
  return n;
}

bool is_py_space(char32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

bool is_line_break(char32_t cp) {
  return cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || (cp >= 0x1C && cp <= 0x1E) || cp == 0x85 ||
         cp == 0x2028 || cp == 0x2029;
}

namespace {

// Latin Extended-A pairs: upper case at even code points in [0x100, 0x137] and [0x14A, 0x177], at
// odd code points in [0x139, 0x148] and [0x179, 0x17E].
bool latin_ext_upper(char32_t cp) {
  if ((cp >= 0x100 && cp <= 0x12F) || (cp >= 0x132 && cp <= 0x137) || (cp >= 0x14A && cp <= 0x177)) return cp % 2 == 0;
  if ((cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17E)) return cp % 2 == 1;
  return false;
}
bool latin_ext_lower(char32_t cp) {
  if ((cp >= 0x100 && cp <= 0x12F) || (cp >= 0x132 && cp <= 0x137) || (cp >= 0x14A && cp <= 0x177)) return cp % 2 == 1;
  if ((cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17E)) return cp % 2 == 0;
  return false;
}

// Greek letters with tonos: lower U+03AC..U+03AF and U+03CC..U+03CE, upper U+0386, U+0388..U+038A,
// U+038C, U+038E, U+038F.
char32_t greek_tonos_upper(char32_t cp) {
  switch (cp) {
    case 0x3AC:
      return 0x386;
    case 0x3AD:
      return 0x388;
    case 0x3AE:
      return 0x389;
    case 0x3AF:
      return 0x38A;
    case 0x3CC:
      return 0x38C;
    case 0x3CD:
      return 0x38E;
    case 0x3CE:
      return 0x38F;
    default:
      return 0;
  }
}
char32_t greek_tonos_lower(char32_t cp) {
  for (char32_t lower : {0x3AC, 0x3AD, 0x3AE, 0x3AF, 0x3CC, 0x3CD, 0x3CE}) {
    if (greek_tonos_upper(lower) == cp) return lower;
  }
  return 0;
}

}  // namespace

bool is_upper_cp(char32_t cp) {
  return (cp >= 'A' && cp <= 'Z') || (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) || latin_ext_upper(cp) || cp == 0x178 ||
         (cp >= 0x391 && cp <= 0x3A9 && cp != 0x3A2) || greek_tonos_lower(cp) != 0 || (cp >= 0x400 && cp <= 0x42F);
}

bool is_lower_cp(char32_t cp) {
  return (cp >= 'a' && cp <= 'z') || (cp >= 0xDF && cp <= 0xFF && cp != 0xF7) || latin_ext_lower(cp) ||
         (cp >= 0x3B1 && cp <= 0x3C9) || greek_tonos_upper(cp) != 0 || (cp >= 0x430 && cp <= 0x45F);
}

bool is_cased(char32_t cp) { return is_upper_cp(cp) || is_lower_cp(cp); }

char32_t to_upper_cp(char32_t cp) {
  if (cp >= 'a' && cp <= 'z') return cp - 32;
  if (cp < 0x80) return cp;
  if (cp >= 0xE0 && cp <= 0xFE && cp != 0xF7) return cp - 32;
  if (cp == 0xFF) return 0x178;
  if (latin_ext_lower(cp)) return cp - 1;
  if (cp == 0x3C2) return 0x3A3;  // final sigma
  if (const char32_t t = greek_tonos_upper(cp)) return t;
  if (cp >= 0x3B1 && cp <= 0x3C9) return cp - 32;
  if (cp >= 0x430 && cp <= 0x44F) return cp - 32;
  if (cp >= 0x450 && cp <= 0x45F) return cp - 80;
  return cp;
}

char32_t to_lower_cp(char32_t cp) {
  if (cp >= 'A' && cp <= 'Z') return cp + 32;
  if (cp < 0x80) return cp;
  if (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) return cp + 32;
  if (cp == 0x178) return 0xFF;
  if (latin_ext_upper(cp)) return cp + 1;
  if (cp >= 0x391 && cp <= 0x3A9 && cp != 0x3A2) return cp + 32;
  if (const char32_t t = greek_tonos_lower(cp)) return t;
  if (cp >= 0x410 && cp <= 0x42F) return cp + 32;
  if (cp >= 0x400 && cp <= 0x40F) return cp + 80;
  return cp;
}

bool is_alpha_cp(char32_t cp) {
  return is_cased(cp) || cp == 0xAA || cp == 0xBA || (cp >= 0x3040 && cp <= 0x30FF) || (cp >= 0x4E00 && cp <= 0x9FFF) ||
         (cp >= 0xAC00 && cp <= 0xD7A3);
}

bool is_digit_cp(char32_t cp) { return cp >= '0' && cp <= '9'; }

std::string py_upper(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  while (pos < s.size()) {
    const size_t start = pos;
    const char32_t cp = utf8_decode(s, &pos);
    if (cp == 0xDF) {
      out += "SS";
    } else if (cp >= 0x80 && pos - start == 1) {
      out += s[start];  // invalid byte: unchanged
    } else {
      utf8_append(out, to_upper_cp(cp));
    }
  }
  return out;
}

std::string py_lower(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  while (pos < s.size()) {
    const size_t start = pos;
    const char32_t cp = utf8_decode(s, &pos);
    if (cp >= 0x80 && pos - start == 1)
      out += s[start];
    else
      utf8_append(out, to_lower_cp(cp));
  }
  return out;
}

std::string py_strip(std::string_view s, const std::string* chars, bool left, bool right) {
  const std::vector<std::string_view> cs = utf8_chars(s);
  std::vector<std::string_view> strip_set;
  if (chars != nullptr) strip_set = utf8_chars(*chars);
  auto strippable = [&](std::string_view c) {
    if (chars != nullptr) return std::find(strip_set.begin(), strip_set.end(), c) != strip_set.end();
    size_t pos = 0;
    return is_py_space(utf8_decode(c, &pos));
  };
  size_t begin = 0;
  size_t end = cs.size();
  if (left) {
    while (begin < end && strippable(cs[begin])) ++begin;
  }
  if (right) {
    while (end > begin && strippable(cs[end - 1])) --end;
  }
  if (begin == end) return {};
  const char* first = cs[begin].data();
  const char* last = cs[end - 1].data() + cs[end - 1].size();
  return std::string(first, static_cast<size_t>(last - first));
}

}  // namespace cellserve::engine::chat
