// String automata: well-formed UTF-8 of a bounded length, and the JSON Schema `format`s as
// regexes (regex_compiler.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "engine/grammar/byte_dfa.h"
#include "engine/grammar/grammar_limits.h"

namespace cellserve::engine::grammar {

// Well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF) of
// min_code_points to max_code_points code points (UINT32_MAX: no maximum). min > max is the
// empty language. InvalidArgument naming max_dfa_states when the automaton would be too big
// (about 8 states per code point counted).
Result<ByteDfa> utf8_length_dfa(uint32_t min_code_points, uint32_t max_code_points, const GrammarLimits& limits);

// A FullMatch regex (regex_compiler.h syntax) for the JSON Schema formats "date", "time",
// "date-time" (RFC 3339 full-date, full-time, date-time; T and Z in either case), "uuid",
// "email" (a practical ASCII subset), "ipv4" and "ipv6"; nullopt for any other format.
std::optional<std::string> format_regex(std::string_view format);

}  // namespace cellserve::engine::grammar
