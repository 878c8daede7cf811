// JSON numbers within bounds (minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf)
// as a ByteDfa over the number's text.
//
// Built digit by digit, never by enumerating values: one comparator automaton per bound (x >= L,
// x > L, x <= U or x < U, read from the decimal text; it also checks the syntax), one remainder
// automaton for multipleOf, intersected. Bounds are parsed as exact decimals; there is no binary
// floating point anywhere.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"
#include "engine/grammar/byte_dfa.h"
#include "engine/grammar/grammar_limits.h"

namespace cellserve::engine::grammar {

struct NumberBounds {
  bool integer = false;  // only -?(0|[1-9][0-9]*); otherwise a fraction .[0-9]+ may follow
  // JSON number texts as Boost.JSON serializes them ("5", "-3", "18446744073709551615", "2.5E0",
  // "1E-1", "-1.25E2"); any JSON number text is read exactly.
  std::optional<std::string> minimum, maximum;
  bool exclusive_minimum = false, exclusive_maximum = false;
  uint64_t multiple_of = 0;  // 0: none; otherwise `integer` must be true
};

// The texts `-?(0|[1-9][0-9]*)(\.[0-9]+)?` (without the fraction when bounds.integer; never an
// exponent) whose exact value lies within the bounds and is a multiple of multiple_of (negative
// multiples count; -0 and -0.0 are 0). InvalidArgument: a bound that is not a JSON number,
// multiple_of without `integer`, "no number satisfies ..." when the language is empty (also for
// an integer type between 1.2 and 1.8), and naming max_dfa_states when an automaton would be too
// big (a bound whose decimal expansion has more digits than limits.max_dfa_states is refused
// before anything is built).
Result<ByteDfa> number_dfa(const NumberBounds& bounds, const GrammarLimits& limits);

}  // namespace cellserve::engine::grammar
