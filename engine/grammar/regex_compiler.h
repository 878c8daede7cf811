// ECMA-262 regular expressions (the subset JSON Schema `pattern` users write) -> ByteDfa over the
// UTF-8 bytes of the string. docs/grammar.md lists the syntax.
//
// The pattern is UTF-8 and its characters are code points (U+0000..U+10FFFF without the
// surrogates), each matched as its UTF-8 bytes; so `.`, \W and negated classes never accept
// invalid UTF-8. Pipeline: parse to a tree (the Thompson NFA's size is computed, and refused past
// the limit, before any of it is built) -> NFA over byte ranges -> subset construction, the state
// limit checked as it goes -> minimize().
#pragma once

#include <string_view>

#include "base/status.h"
#include "engine/grammar/byte_dfa.h"
#include "engine/grammar/grammar_limits.h"

namespace cellserve::engine::grammar {

enum class RegexMode {
  // The whole string must match (the regex response format).
  FullMatch,
  // JSON Schema `pattern`: a match anywhere in the string. `^` at the start of a top-level
  // alternative anchors it to the start of the string, `$` at its end to the end ("abc" is
  // ".*abc.*", "^a|b$" is "starts with a or ends with b").
  Search,
};

// Unimplemented, naming the construct, for backreferences, lookaround, \b \B, \p{...}, flags and
// group modifiers, and ^ or $ anywhere but the start or end of a top-level alternative (in both
// modes; there they are allowed and, in FullMatch mode, change nothing). InvalidArgument, with
// the byte offset, for a malformed pattern; and naming the limit for a pattern longer than
// limits.max_regex_bytes or an automaton beyond limits.max_dfa_states.
Result<ByteDfa> compile_regex(std::string_view pattern, RegexMode mode, const GrammarLimits& limits);

}  // namespace cellserve::engine::grammar
