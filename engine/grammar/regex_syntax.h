// Internal to engine/grammar (regex_compiler.cpp): the ECMA-262 subset of regex_compiler.h parsed
// into a syntax tree whose characters are already UTF-8 byte-range sequences (regex_utf8.h), and
// the size of the Thompson NFA that regex_compiler.cpp builds from a tree, so that a pattern too
// large is refused before any of it is built.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "engine/grammar/regex_compiler.h"
#include "engine/grammar/regex_utf8.h"

namespace cellserve::engine::grammar::regex_internal {

inline constexpr uint32_t kUnbounded = UINT32_MAX;  // a repetition's max
inline constexpr int kMaxNesting = 256;             // groups within groups

// ---- Syntax tree. ----

struct Node {
  enum class Kind : uint8_t { Chars, Concat, Alt, Repeat };
  Kind kind = Kind::Concat;
  std::vector<uint32_t> children;  // Concat, Alt; Repeat: its one operand
  uint32_t min = 0, max = 0;       // Repeat
  std::vector<Utf8Seq> seqs;       // Chars: the UTF-8 forms of the code points
};

// A parsed pattern: nodes[root] is the whole of it.
struct RegexSyntax {
  std::vector<Node> nodes;
  uint32_t root = 0;
};

// The NFA states Nfa::build() (regex_compiler.cpp) makes for the tree (saturating).
size_t nfa_size(const std::vector<Node>& nodes, uint32_t id);

// " at offset N", for messages about the pattern.
std::string offset_text(size_t at);

// The whole pattern, which must be valid UTF-8 (compile_regex checks it first); in Search mode
// each top-level alternative is padded with any-string on the sides where it is not anchored.
// Refuses what compile_regex does (regex_compiler.h), except the pattern length and the automaton
// sizes, which compile_regex checks itself; and groups nested more than kMaxNesting deep
// (InvalidArgument).
Result<RegexSyntax> parse_regex(std::string_view pattern, RegexMode mode);

}  // namespace cellserve::engine::grammar::regex_internal
