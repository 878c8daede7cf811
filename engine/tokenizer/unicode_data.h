// Generated Unicode tables (engine/tokenizer/unicode_data.cpp, written by tools/gen_unicode_tables.py
// from Python's unicodedata). Use them through unicode.h; this header only declares the raw arrays.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cellserve::engine::tokenizer::unicode_data {

// The Unicode version the tables were generated from (e.g. "14.0.0").
extern const char* const kUnicodeVersion;

struct FlagRange {
  uint32_t first;  // first code point of the range
  uint16_t flags;  // CodepointFlags category bits (unicode.h)
};

struct CasePair {
  uint32_t from;
  uint32_t to;
};

// Ranges of equal category flags, sorted; entry i covers [first_i, first_{i+1}), the last runs to 0x10FFFF.
extern const FlagRange kFlagRanges[];
extern const size_t kFlagRangeCount;

// The White_Space property (PropList.txt), sorted.
extern const uint32_t kWhiteSpace[];
extern const size_t kWhiteSpaceCount;

// Simple lowercase mappings, sorted by `from`.
extern const CasePair kLowercase[];
extern const size_t kLowercaseCount;

}  // namespace cellserve::engine::tokenizer::unicode_data
