#include "engine/tokenizer/unicode.h"

#include <gtest/gtest.h>

#include <set>

namespace cellserve::engine::tokenizer {
namespace {

using F = CodepointFlags;

TEST(Unicode, CategoriesComeFromTheTables) {
  EXPECT_EQ(codepoint_flags('A').bits, F::kLetter);
  EXPECT_EQ(codepoint_flags('5').bits, F::kNumber);
  EXPECT_EQ(codepoint_flags(' ').bits, F::kSeparator | F::kWhitespace);
  EXPECT_EQ(codepoint_flags('\n').bits, F::kControl | F::kWhitespace);
  EXPECT_EQ(codepoint_flags(0x1C).bits, F::kControl);  // not White_Space (Python's isspace says it is)
  EXPECT_EQ(codepoint_flags('!').bits, F::kPunctuation);
  EXPECT_EQ(codepoint_flags('$').bits, F::kSymbol);
  EXPECT_EQ(codepoint_flags(0x0301).bits, F::kMark);    // combining acute accent
  EXPECT_EQ(codepoint_flags(0x00BD).bits, F::kNumber);  // ½
  EXPECT_EQ(codepoint_flags(0x3000).bits, F::kSeparator | F::kWhitespace);
  EXPECT_EQ(codepoint_flags(0x0085).bits, F::kControl | F::kWhitespace);
  EXPECT_EQ(codepoint_flags(0x4E00).bits, F::kLetter);     // CJK
  EXPECT_EQ(codepoint_flags(0x1F999).bits, F::kSymbol);    // 🦙
  EXPECT_EQ(codepoint_flags(0x0378).bits, F::kUndefined);  // unassigned
  EXPECT_EQ(codepoint_flags(0xE000).bits, F::kControl);    // private use
  EXPECT_EQ(codepoint_flags(0x110000).bits, F::kUndefined);
  EXPECT_STRNE(unicode_tables_version(), "");
}

TEST(Unicode, SimpleLowercase) {
  EXPECT_EQ(to_lower('A'), static_cast<uint32_t>('a'));
  EXPECT_EQ(to_lower('a'), static_cast<uint32_t>('a'));
  EXPECT_EQ(to_lower('5'), static_cast<uint32_t>('5'));
  EXPECT_EQ(to_lower(0x0130), static_cast<uint32_t>('i'));  // İ
  EXPECT_EQ(to_lower(0x212A), static_cast<uint32_t>('k'));  // KELVIN SIGN
  EXPECT_EQ(to_lower(0x0416), 0x0436u);                     // Ж -> ж
}

std::vector<uint32_t> decode(std::string_view s) {
  std::vector<uint32_t> out;
  decode_utf8_lenient(s, out);
  return out;
}

TEST(Unicode, LenientDecodingMatchesLlamaCpp) {
  EXPECT_EQ(decode("a\xC3\xA9"), (std::vector<uint32_t>{'a', 0xE9}));
  EXPECT_EQ(decode("\xF0\x9F\xA6\x99"), (std::vector<uint32_t>{0x1F999}));
  // Malformed: one U+FFFD per byte that cannot start a sequence.
  EXPECT_EQ(decode("\xFF"
                   "a"),
            (std::vector<uint32_t>{0xFFFD, 'a'}));
  EXPECT_EQ(decode("\xE2\x82"), (std::vector<uint32_t>{0xFFFD, 0xFFFD}));
  EXPECT_EQ(decode("\x80"), (std::vector<uint32_t>{0xFFFD}));
  // Overlong forms and surrogates decode as written (llama.cpp does not check them).
  EXPECT_EQ(decode("\xC0\x80"), (std::vector<uint32_t>{0}));
  EXPECT_EQ(decode("\xED\xA0\x80"), (std::vector<uint32_t>{0xD800}));
  std::string s;
  append_utf8(0x1F999, s);
  append_utf8(0x110000, s);  // out of range: U+FFFD
  EXPECT_EQ(s, "\xF0\x9F\xA6\x99\xEF\xBF\xBD");
  EXPECT_EQ(utf8_sequence_length(0x41), 1u);
  EXPECT_EQ(utf8_sequence_length(0x80), 1u);
  EXPECT_EQ(utf8_sequence_length(0xC3), 2u);
  EXPECT_EQ(utf8_sequence_length(0xE2), 3u);
  EXPECT_EQ(utf8_sequence_length(0xF0), 4u);
}

TEST(Unicode, ByteLevelMappingIsABijection) {
  EXPECT_EQ(byte_to_codepoint('A'), static_cast<uint32_t>('A'));
  EXPECT_EQ(byte_to_codepoint(' '), 0x120u);   // Ġ
  EXPECT_EQ(byte_to_codepoint('\n'), 0x10Au);  // Ċ
  EXPECT_EQ(byte_to_codepoint(0xAD), 0x143u);
  std::set<uint32_t> seen;
  for (int b = 0; b < 256; ++b) {
    const uint32_t cp = byte_to_codepoint(static_cast<uint8_t>(b));
    EXPECT_TRUE(seen.insert(cp).second);
    EXPECT_EQ(codepoint_to_byte(cp), static_cast<uint8_t>(b));
  }
  EXPECT_FALSE(codepoint_to_byte(0x20).has_value());
  EXPECT_FALSE(codepoint_to_byte(0x1F999).has_value());
}

}  // namespace
}  // namespace cellserve::engine::tokenizer
