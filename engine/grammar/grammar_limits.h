// The bounds on what one response_format schema may cost (docs/security.md, "Structured output
// limits"). A schema is compiled on the request's own connection thread, but its mask runs on the
// scheduler thread, once per generated token, in the same step as every other request's token; so
// the compiled size is bounded, and a schema beyond it is refused before the job is queued.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cellserve::engine::grammar {

struct GrammarLimits {
  // Compile time (JsonConstraint::from_schema answers InvalidArgument naming the limit).

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
};

}  // namespace cellserve::engine::grammar
