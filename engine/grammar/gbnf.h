// Internal to engine/grammar: a GBNF grammar compiled to a byte-level program (gbnf.cpp builds it,
// gbnf_matcher.cpp walks it; docs/grammar.md, "GBNF grammars").
//
// Rules have alternatives; an alternative is a run of elements in `elements` ending with an End
// element. Terminals are byte ranges: a literal is one element per UTF-8 byte, a character class
// a rule whose alternatives are the edges of its UTF-8 byte trie (gbnf_utf8.h). Repetitions are
// helper rules: x* is R ::= x R | "" (right-recursive, so the reference to R is in tail position and
// the matcher does not grow its stack), x{m,n} is m copies of x then n - m nested optional rules.
// A grammar may refer to external rules, each one JSON value that validates against a compiled
// JSON Schema (OutputConstraint::from_gbnf).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "engine/grammar/grammar_limits.h"
#include "engine/grammar/output_constraint.h"

namespace cellserve::engine::grammar {

struct GbnfElement {
  enum class Kind : uint8_t {
    Bytes,     // one byte in [lo, hi]
    Rule,      // rule `index`
    External,  // one JSON value of external `index`
    End,       // the end of the alternative
  };
  Kind kind = Kind::End;
  uint8_t lo = 0, hi = 0;
  uint32_t index = 0;
};

// 256 bits: the bytes that may come first.
struct ByteSet {
  std::array<uint64_t, 4> bits{};
  bool has(uint8_t b) const { return (bits[b >> 6] >> (b & 63)) & 1; }
  void add(uint8_t b) { bits[b >> 6] |= uint64_t{1} << (b & 63); }
  void add_range(uint8_t lo, uint8_t hi) {
    for (unsigned b = lo; b <= hi; ++b) add(static_cast<uint8_t>(b));
  }
  // Adds `o`; true when that added a byte.
  bool merge(const ByteSet& o) {
    bool changed = false;
    for (size_t i = 0; i < 4; ++i) {
      const uint64_t next = bits[i] | o.bits[i];
      changed |= next != bits[i];
      bits[i] = next;
    }
    return changed;
  }
};

struct GbnfRule {
  uint32_t first_alt = 0, alt_count = 0;  // its alternatives: starts[first_alt, first_alt + alt_count)
  // Every alternative starts with a Bytes element and those ranges are sorted and disjoint (a
  // character class): the matcher finds the one alternative a byte can take by binary search.
  bool dispatch = false;
  int64_t min_cost = 0;     // the shortest string it generates, in bytes (kInf: none)
  uint32_t depth_need = 0;  // the fewest frames above its own that some string of it needs
};

inline constexpr uint32_t kNoDepth = UINT32_MAX / 2;  // depth_need of what cannot finish

struct GbnfProgram {
  std::vector<GbnfElement> elements;
  std::vector<uint32_t> starts;  // the first element of each alternative, grouped by rule
  std::vector<GbnfRule> rules;
  // Per element position p (the next element of an alternative), from p to the alternative's End:
  std::vector<int64_t> rest_cost;  // the fewest bytes that finish it (kInf: impossible)
  std::vector<ByteSet> first;      // the bytes its strings may start with
  std::vector<uint8_t> nullable;   // it may generate the empty string
  // The fewest Rule frames above this one that finishing it needs (a reference in tail position
  // replaces its frame; others push one): the matcher enters an alternative only if the thread's
  // depth leaves room for it, so no thread ever needs more than limits.max_grammar_depth frames.
  std::vector<uint32_t> depth_need;
  // External rules, by index: the constraint (held alive) and its root.
  std::vector<std::shared_ptr<const OutputConstraint>> externals;
  std::vector<const SchemaNode*> external_roots;
  uint32_t start = 0;  // the position where a document starts: a reference to root, then End
  GrammarLimits limits;
};

// Compiles GBNF `text` (gbnf_parser.h) under `limits`. A rule name used in the text but not defined
// there is looked up in `externals`: there it is one JSON value validating against that
// constraint's schema. InvalidArgument with the line and column: parse errors, references to rules
// that are neither defined nor external (naming them), left recursion (a rule that can reach
// itself before reading a byte, also through an empty-matching prefix or a repetition of an item
// that can be empty; naming the rule), a root that generates no string, more than
// limits.max_grammar_elements elements (naming the limit); InvalidArgument when there is no
// `root` rule. Unimplemented as parse_gbnf says.
Result<std::shared_ptr<const GbnfProgram>> compile_gbnf(
    std::string_view text, const GrammarLimits& limits,
    const std::map<std::string, std::shared_ptr<const OutputConstraint>>& externals = {});

// The analysis of a program whose elements, starts and rules are filled (gbnf_analysis.cpp):
// rule min_cost and depth_need, rest_cost, first, nullable and depth_need per position. Linear in
// the program (first sets: times 256) up to a logarithm.
void analyse_gbnf(GbnfProgram& p);

// A rule cycle that reads no byte (left recursion), as rule indices r0 -> r1 -> ... -> r0 (the
// first rule repeated at the end); empty when there is none. REQUIRES: analyse_gbnf ran. Linear.
std::vector<uint32_t> find_left_recursion(const GbnfProgram& p);

}  // namespace cellserve::engine::grammar
