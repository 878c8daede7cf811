// Internal to engine/grammar: a set of code points as byte-level alternatives, so that a GBNF
// character class (or `.`) admits exactly the UTF-8 encodings of its code points (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF) and never a partial or invalid sequence.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/grammar/gbnf_parser.h"

namespace cellserve::engine::grammar {

// The class as sorted, disjoint, non-adjacent ranges of valid code points (surrogates removed);
// `negated`: every valid code point not in `ranges`.
std::vector<CodePointRange> normalize_class(std::vector<CodePointRange> ranges, bool negated);

// One byte of an encoding: a byte in [lo, hi], then node `next` (-1: the encoding ends here).
struct Utf8Edge {
  uint8_t lo = 0, hi = 0;
  int32_t next = -1;
};

// The encodings of a set as a deterministic byte trie whose nodes share equal suffixes: nodes[0]
// reads the first byte. A node's edges are sorted and disjoint, so one byte selects at most one.
// For n ranges the trie has O(n) nodes and edges (each range adds at most two partial paths of
// at most four bytes; the bytes between them share one full-continuation node per length).
struct Utf8Trie {
  std::vector<std::vector<Utf8Edge>> nodes;
};
Utf8Trie utf8_trie(const std::vector<CodePointRange>& set);  // set as normalize_class returns

}  // namespace cellserve::engine::grammar
