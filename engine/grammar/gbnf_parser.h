// Internal to engine/grammar: llama.cpp's GBNF grammar syntax, parsed into a syntax tree
// (docs/grammar.md, "GBNF grammars"). gbnf.cpp compiles the tree into a byte-level program.
//
//   name ::= alternatives        # a rule; it ends where the next `name ::=` starts
//   "literal"  [a-z_]  [^"\\]  .  ( group )  a | b  x*  x+  x?  x{m}  x{m,}  x{m,n}  x{,n}
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "engine/grammar/grammar_limits.h"

namespace cellserve::engine::grammar {

// Where something is in the grammar text: 1-based line and column (columns count code points).
struct TextPosition {
  uint32_t line = 1, column = 1;
};
std::string describe(TextPosition p);  // "line 3, column 7"

// The largest count a repetition may name (llama.cpp's limit too): x{m,n} expands into about n
// copies of x, so larger counts are refused at parse time rather than after the expansion.
inline constexpr uint32_t kMaxGbnfRepetition = 2000;
inline constexpr uint32_t kGbnfUnbounded = UINT32_MAX;  // the maximum of x*, x+ and x{m,}
// Parenthesised groups may nest this deep: the parser and the compiler recurse once per level.
inline constexpr uint32_t kMaxGbnfNesting = 64;

// Inclusive range of Unicode code points.
struct CodePointRange {
  uint32_t first = 0, last = 0;
  bool operator==(const CodePointRange&) const = default;
  auto operator<=>(const CodePointRange&) const = default;
};

struct GbnfRepeat {
  uint32_t min = 0, max = kGbnfUnbounded;
  TextPosition at;  // the operator
};

struct GbnfAlternatives;

// One item of a sequence, with the repetitions written after it (applied in order: x?* is (x?)*).
struct GbnfItem {
  enum class Kind : uint8_t {
    Literal,  // code_points, in order ("" matches the empty string)
    Class,    // one code point in `ranges` (or, negated, any valid code point not in them); `.` is [^]
    RuleRef,  // `name`
    Group,    // `group`
  };
  Kind kind = Kind::Literal;
  TextPosition at;
  std::vector<uint32_t> code_points;
  bool negated = false;
  std::vector<CodePointRange> ranges;  // as written (unsorted, may overlap)
  std::string name;
  std::vector<GbnfAlternatives> group;  // exactly one element for a Group (a vector: the type is incomplete here)
  std::vector<GbnfRepeat> repeats;
};

struct GbnfSequence {
  std::vector<GbnfItem> items;  // empty: the empty string
};

struct GbnfAlternatives {
  std::vector<GbnfSequence> sequences;  // never empty
};

struct GbnfRuleDefinition {
  std::string name;
  TextPosition at;
  GbnfAlternatives body;
};

struct GbnfSyntax {
  std::vector<GbnfRuleDefinition> rules;  // in text order, names unique
};

// Parses `text`. InvalidArgument with the line and column for a syntax error, a rule defined
// twice, an unknown escape, an invalid code point, a repetition count above kMaxGbnfRepetition
// or {m,n} with m > n, groups nested deeper than kMaxGbnfNesting, and text that is not UTF-8;
// InvalidArgument naming max_grammar_bytes when the text is longer than limits.max_grammar_bytes.
// Unimplemented naming the construct for llama.cpp's token terminals (<[id]>, <token>, !<...>).
// Does not check rule references (gbnf.cpp does).
Result<GbnfSyntax> parse_gbnf(std::string_view text, const GrammarLimits& limits);

}  // namespace cellserve::engine::grammar
