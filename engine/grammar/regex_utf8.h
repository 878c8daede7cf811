// Internal to engine/grammar (regex_syntax.cpp, regex_compiler.cpp): the code point sets a regex
// matches (classes, escapes, `.`) and their UTF-8 forms as sequences of byte ranges, so that each
// admits exactly the UTF-8 encodings of its code points (RFC 3629: no overlong forms, no
// surrogates, nothing above U+10FFFF) and never a partial or invalid sequence.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace cellserve::engine::grammar::regex_internal {

inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;
inline constexpr uint32_t kSurrogateLo = 0xD800, kSurrogateHi = 0xDFFF;

// ---- Code point sets: sorted, disjoint, non-adjacent ranges, never containing a surrogate. ----

struct CodeRange {
  uint32_t lo, hi;
};
using CodeSet = std::vector<CodeRange>;

// Any ranges of code points up to kMaxCodePoint -> a set in the form above.
void normalize(CodeSet& set);
// The code points not in `set` (sorted and disjoint), surrogates excluded.
CodeSet complement(const CodeSet& set);

CodeSet any_code_point();
CodeSet digits();      // \d
CodeSet word_chars();  // \w
// ECMA-262 WhiteSpace and LineTerminator.
CodeSet space_chars();
// `.` without the s flag: anything but a line terminator.
CodeSet dot_chars();

// ---- UTF-8: a code point range as sequences of byte ranges (RE2's and Russ Cox's method). ----

struct ByteRange {
  uint8_t lo, hi;
};
// The encodings whose byte k is in r[k], for k < len.
struct Utf8Seq {
  uint8_t len = 0;
  ByteRange r[4];
};

// The UTF-8 encodings of the code points in `set` (as normalize() leaves it), as disjoint
// sequences.
std::vector<Utf8Seq> utf8_sequences(const CodeSet& set);

// The offset of the first byte that is not part of well-formed UTF-8 (RFC 3629), or npos.
size_t invalid_utf8_at(std::string_view s);

}  // namespace cellserve::engine::grammar::regex_internal
