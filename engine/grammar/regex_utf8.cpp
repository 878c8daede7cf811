// Code point sets and their UTF-8 byte-range sequences for regexes (regex_utf8.h).
#include "engine/grammar/regex_utf8.h"

#include <algorithm>

namespace cellserve::engine::grammar::regex_internal {

void normalize(CodeSet& set) {
  std::sort(set.begin(), set.end(), [](const CodeRange& a, const CodeRange& b) { return a.lo < b.lo; });
  CodeSet merged;
  for (const CodeRange& r : set) {
    if (!merged.empty() && r.lo <= merged.back().hi + 1) {
      merged.back().hi = std::max(merged.back().hi, r.hi);
    } else {
      merged.push_back(r);
    }
  }
  set.clear();
  for (const CodeRange& r : merged) {  // cut out the surrogates
    if (r.hi < kSurrogateLo || r.lo > kSurrogateHi) {
      set.push_back(r);
      continue;
    }
    if (r.lo < kSurrogateLo) set.push_back({r.lo, kSurrogateLo - 1});
    if (r.hi > kSurrogateHi) set.push_back({kSurrogateHi + 1, r.hi});
  }
}

CodeSet complement(const CodeSet& set) {
  CodeSet out;
  uint32_t from = 0;
  for (const CodeRange& r : set) {
    if (r.lo > from) out.push_back({from, r.lo - 1});
    from = r.hi + 1;
  }
  if (from <= kMaxCodePoint) out.push_back({from, kMaxCodePoint});
  normalize(out);
  return out;
}

CodeSet any_code_point() { return complement({}); }
CodeSet digits() { return {{'0', '9'}}; }
CodeSet word_chars() { return {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}; }
CodeSet space_chars() {
  CodeSet s = {{0x09, 0x0D},     {0x20, 0x20},     {0xA0, 0xA0},     {0x1680, 0x1680}, {0x2000, 0x200A},
               {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
  normalize(s);
  return s;
}
CodeSet dot_chars() { return complement({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}}); }

namespace {

int encode_utf8(uint32_t cp, uint8_t out[4]) {
  if (cp < 0x80) {
    out[0] = static_cast<uint8_t>(cp);
    return 1;
  }
  if (cp < 0x800) {
    out[0] = static_cast<uint8_t>(0xC0 | (cp >> 6));
    out[1] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = static_cast<uint8_t>(0xE0 | (cp >> 12));
    out[1] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
    out[2] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = static_cast<uint8_t>(0xF0 | (cp >> 18));
  out[1] = static_cast<uint8_t>(0x80 | ((cp >> 12) & 0x3F));
  out[2] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
  out[3] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
  return 4;
}

// [lo, hi] with encodings of one length: split until every byte position of the range is a
// plain byte range, i.e. until the code points differ only in a suffix of whole 6-bit groups
// that runs from all zeros to all ones. Each split halves one position, so this ends quickly.
void split_same_length(uint32_t lo, uint32_t hi, int len, std::vector<Utf8Seq>& out) {
  for (int i = 1; i < len; ++i) {
    const uint32_t m = (1u << (6 * i)) - 1;
    if ((lo & ~m) == (hi & ~m)) continue;
    if ((lo & m) != 0) {
      split_same_length(lo, lo | m, len, out);
      split_same_length((lo | m) + 1, hi, len, out);
      return;
    }
    if ((hi & m) != m) {
      split_same_length(lo, (hi & ~m) - 1, len, out);
      split_same_length(hi & ~m, hi, len, out);
      return;
    }
  }
  uint8_t a[4], b[4];
  encode_utf8(lo, a);
  encode_utf8(hi, b);
  Utf8Seq seq;
  seq.len = static_cast<uint8_t>(len);
  for (int i = 0; i < len; ++i) seq.r[i] = {a[i], b[i]};
  out.push_back(seq);
}

}  // namespace

std::vector<Utf8Seq> utf8_sequences(const CodeSet& set) {
  static constexpr uint32_t kLengthEnds[4] = {0x7F, 0x7FF, 0xFFFF, kMaxCodePoint};
  std::vector<Utf8Seq> out;
  for (const CodeRange& r : set) {
    uint32_t lo = r.lo;
    for (int len = 1; len <= 4 && lo <= r.hi; ++len) {
      if (lo > kLengthEnds[len - 1]) continue;
      const uint32_t hi = std::min(r.hi, kLengthEnds[len - 1]);
      split_same_length(lo, hi, len, out);
      lo = hi + 1;
    }
  }
  return out;
}

size_t invalid_utf8_at(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<uint8_t>(s[i]);
    int len = 0;
    uint8_t lo = 0x80, hi = 0xBF;  // the second byte's range
    if (b < 0x80) {
      ++i;
      continue;
    } else if (b >= 0xC2 && b <= 0xDF) {
      len = 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
      len = 3;
      if (b == 0xE0) lo = 0xA0;
      if (b == 0xED) hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
      len = 4;
      if (b == 0xF0) lo = 0x90;
      if (b == 0xF4) hi = 0x8F;
    } else {
      return i;
    }
    if (i + static_cast<size_t>(len) > s.size()) return i;
    for (int k = 1; k < len; ++k) {
      const auto c = static_cast<uint8_t>(s[i + static_cast<size_t>(k)]);
      if (c < (k == 1 ? lo : 0x80) || c > (k == 1 ? hi : 0xBF)) return i;
    }
    i += static_cast<size_t>(len);
  }
  return std::string_view::npos;
}

}  // namespace cellserve::engine::grammar::regex_internal
