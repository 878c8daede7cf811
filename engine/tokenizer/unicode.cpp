#include "engine/tokenizer/unicode.h"

#include <algorithm>
#include <array>

#include "engine/tokenizer/unicode_data.h"

namespace cellserve::engine::tokenizer {
namespace {

constexpr uint32_t kMaxCodepoints = 0x110000;
constexpr uint32_t kReplacement = 0xFFFD;

// One uint16 per code point (2.2 MB), built once on first use: the pre-tokenizers look up every
// code point of the input, so the lookup must be a single load.
const std::vector<uint16_t>& flag_table() {
  static const std::vector<uint16_t> table = [] {
    std::vector<uint16_t> t(kMaxCodepoints, CodepointFlags::kUndefined);
    using unicode_data::kFlagRanges;
    for (size_t i = 0; i < unicode_data::kFlagRangeCount; ++i) {
      const uint32_t end = i + 1 < unicode_data::kFlagRangeCount ? kFlagRanges[i + 1].first : kMaxCodepoints;
      std::fill(t.begin() + kFlagRanges[i].first, t.begin() + end, kFlagRanges[i].flags);
    }
    for (size_t i = 0; i < unicode_data::kWhiteSpaceCount; ++i)
      t[unicode_data::kWhiteSpace[i]] |= CodepointFlags::kWhitespace;
    return t;
  }();
  return table;
}

struct ByteMap {
  std::array<uint32_t, 256> to_cp{};
  std::array<std::string, 256> to_utf8;
  std::vector<int16_t> from_cp;  // indexed by code point < 512; -1 when no byte maps there
};

const ByteMap& byte_map() {
  static const ByteMap map = [] {
    ByteMap m;
    std::array<bool, 256> self{};
    for (int b = 0x21; b <= 0x7E; ++b) self[b] = true;
    for (int b = 0xA1; b <= 0xAC; ++b) self[b] = true;
    for (int b = 0xAE; b <= 0xFF; ++b) self[b] = true;
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) m.to_cp[b] = self[b] ? static_cast<uint32_t>(b) : next++;
    m.from_cp.assign(512, -1);
    for (int b = 0; b < 256; ++b) {
      append_utf8(m.to_cp[b], m.to_utf8[b]);
      m.from_cp[m.to_cp[b]] = static_cast<int16_t>(b);
    }
    return m;
  }();
  return map;
}

bool is_continuation(uint8_t b) { return (b & 0xC0) == 0x80; }

}  // namespace

CodepointFlags codepoint_flags(uint32_t cp) {
  if (cp >= kMaxCodepoints) return CodepointFlags{CodepointFlags::kUndefined};
  return CodepointFlags{flag_table()[cp]};
}

uint32_t to_lower(uint32_t cp) {
  const auto* begin = unicode_data::kLowercase;
  const auto* end = begin + unicode_data::kLowercaseCount;
  const auto* it =
      std::lower_bound(begin, end, cp, [](const unicode_data::CasePair& p, uint32_t v) { return p.from < v; });
  return (it != end && it->from == cp) ? it->to : cp;
}

size_t utf8_sequence_length(uint8_t lead) {
  static constexpr std::array<uint8_t, 16> kLengths = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLengths[lead >> 4];
}

uint32_t next_codepoint_lenient(std::string_view text, size_t& pos) {
  const auto* s = reinterpret_cast<const uint8_t*>(text.data());
  const size_t n = text.size();
  const size_t i = pos;
  const uint8_t b0 = s[i];
  if ((b0 & 0x80) == 0) {
    pos += 1;
    return b0;
  }
  if ((b0 & 0x40) != 0 && (b0 & 0x20) == 0 && i + 1 < n && is_continuation(s[i + 1])) {
    pos += 2;
    return (uint32_t{b0 & 0x1Fu} << 6) | (s[i + 1] & 0x3Fu);
  }
  if ((b0 & 0x60) == 0x60 && (b0 & 0x10) == 0 && i + 2 < n && is_continuation(s[i + 1]) && is_continuation(s[i + 2])) {
    pos += 3;
    return (uint32_t{b0 & 0x0Fu} << 12) | ((s[i + 1] & 0x3Fu) << 6) | (s[i + 2] & 0x3Fu);
  }
  if ((b0 & 0x70) == 0x70 && (b0 & 0x08) == 0 && i + 3 < n && is_continuation(s[i + 1]) && is_continuation(s[i + 2]) &&
      is_continuation(s[i + 3])) {
    pos += 4;
    return (uint32_t{b0 & 0x07u} << 18) | ((s[i + 1] & 0x3Fu) << 12) | ((s[i + 2] & 0x3Fu) << 6) | (s[i + 3] & 0x3Fu);
  }
  // llama.cpp: the sequence is malformed (or truncated); replace one byte and go on.
  pos += 1;
  return kReplacement;
}

void decode_utf8_lenient(std::string_view text, std::vector<uint32_t>& out) {
  out.reserve(out.size() + text.size());
  for (size_t pos = 0; pos < text.size();) out.push_back(next_codepoint_lenient(text, pos));
}

void append_utf8(uint32_t cp, std::string& out) {
  if (cp >= kMaxCodepoints) cp = kReplacement;
  if (cp <= 0x7F) {
    out.push_back(static_cast<char>(cp));
  } else if (cp <= 0x7FF) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp <= 0xFFFF) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

uint32_t byte_to_codepoint(uint8_t byte) { return byte_map().to_cp[byte]; }

const std::string& byte_to_utf8(uint8_t byte) { return byte_map().to_utf8[byte]; }

std::optional<uint8_t> codepoint_to_byte(uint32_t cp) {
  const ByteMap& m = byte_map();
  if (cp >= m.from_cp.size() || m.from_cp[cp] < 0) return std::nullopt;
  return static_cast<uint8_t>(m.from_cp[cp]);
}

const char* unicode_tables_version() { return unicode_data::kUnicodeVersion; }

}  // namespace cellserve::engine::tokenizer
