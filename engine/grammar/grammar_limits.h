// The bounds on what one response_format schema may cost (docs/security.md, "Structured output
// limits"). A schema is compiled on the request's own connection thread, but its mask runs on the
// scheduler thread, once per generated token, in the same step as every other request's token; so
// both the compiled size and the per-token work are bounded, and a request beyond them is refused
// (compile time) or ended (mask time) instead of slowing everyone.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cellserve::engine::grammar {

struct GrammarLimits {
  // Compile time (OutputConstraint::from_schema answers InvalidArgument naming the limit).

  // The schema written as compact JSON. Checked before anything is compiled.
  size_t max_schema_bytes = 256 * 1024;
  // Subschemas compiled (every object or boolean schema, each $defs entry once), counted before
  // identical ones are merged.
  size_t max_schema_nodes = 10'000;
  // Nesting of subschemas, counting each $ref followed while compiling as one level (the request
  // parser already stops JSON nesting at 64). Bounds the compiler's recursion.
  size_t max_schema_depth = 128;
  // The distinct alternatives one value may start as: the branches of an anyOf/oneOf after nested
  // anyOf/oneOf/$ref are flattened and identical subschemas are merged. One byte that all of them
  // accept forks this many matcher threads.
  size_t max_branches = 256;
  // Distinct values of one enum (or const). Enum values are matched by binary search, so this
  // bounds memory and compile time more than the mask.
  size_t max_enum_values = 1024;
  // The compiled graph: subschemas kept, plus every flattened alternative, property, tuple item
  // and enum value they hold. Catches fan-out (many $refs to one wide anyOf) that the counts
  // above allow one by one.
  size_t max_compiled_states = 65'536;

  // Mask time (ConstrainedSequence::mask_logits fails; the scheduler ends the request).

  // Live matcher threads (candidate parses, each a stack of frames) in one state, counted before
  // equal ones merge. Bounds the memory of a mask; the work limit below is usually hit first.
  size_t max_live_threads = 1024;
  // Matcher work of one mask computation (units of WorkMeter, matcher.h: stepping one thread over
  // one byte costs 16 + the frames of its stack). A plain mask is about (trie bytes of the
  // vocabulary the matcher enters) x (16 + open values + 1): inside a string of a shallow
  // document about 6 million units for a 151,936-token vocabulary, 6,000 for a 1,026-token one.
  // Measured 1.3-2.3 ns a unit on the project machine, so this caps one token's mask at about
  // 85-150 ms on the largest vocabularies: room for about ten candidate parses alive at once
  // inside a string there, or a document nested about 180 deep.
  int64_t max_mask_work = 64'000'000;

  // Regular expressions and their automata (regex_compiler.h, byte_dfa.h): JSON Schema
  // `pattern` and `format`, number bounds, and the regex response format.

  // The pattern's length in bytes.
  size_t max_regex_bytes = 4096;
  // States of one deterministic automaton, while it is built (subset construction,
  // intersections) and after minimisation. Each state holds one transition per byte class.
  size_t max_dfa_states = 4096;
  // Distinct automata one schema builds (each combination of pattern, format and lengths, and
  // each set of number bounds; equal ones are built once). Each may take up to about
  // max_dfa_states x 4096 steps to build, so this bounds compile time.
  size_t max_schema_automata = 16;
  // Their transitions together (states x byte classes, 4 bytes each): the memory they keep.
  size_t max_automaton_transitions = 2'097'152;

  // GBNF grammars (gbnf.h): the `grammar` request field and the grammars the server builds
  // (tool calls).

  // The grammar text in bytes.
  size_t max_grammar_bytes = 64 * 1024;
  // Elements of the compiled program (terminals, rule references and alternative ends, after
  // repetitions are expanded).
  size_t max_grammar_elements = 65'536;
  // Rule frames one candidate parse may hold (nesting of rules that are not in tail position);
  // a parse that would go deeper dies.
  size_t max_grammar_depth = 256;
};

}  // namespace cellserve::engine::grammar
