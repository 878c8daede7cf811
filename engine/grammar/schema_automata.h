// Internal to engine/grammar: the automata of a schema's string and number keywords (pattern,
// format, minLength/maxLength with either; minimum, maximum, exclusiveMinimum, exclusiveMaximum,
// multipleOf) and of the regex response format, with their completion distances.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "engine/grammar/grammar_limits.h"
#include "engine/grammar/number_dfa.h"
#include "engine/grammar/schema.h"

namespace cellserve::engine::grammar {

// Builds the automata of one schema, each distinct one once, within the limits on their number
// (max_schema_automata) and their transitions together (max_automaton_transitions). Errors are
// prefixed with the subschema's path.
class AutomatonBuilder {
 public:
  explicit AutomatonBuilder(const GrammarLimits& limits) : limits_(limits) {}

  // A string's decoded bytes: matching `pattern` somewhere (ECMA-262, JSON Schema's semantics;
  // nullptr: no pattern), a whole `format` regex (format_regex(); nullptr: none) and
  // min_length..max_length code points.
  Result<std::shared_ptr<const Automaton>> string_automaton(const std::string* pattern, const std::string* format,
                                                            uint32_t min_length, uint32_t max_length,
                                                            const std::string& path);
  // A number's text within `bounds` (number_dfa.h).
  Result<std::shared_ptr<const Automaton>> number_automaton(const NumberBounds& bounds, const std::string& path);

 private:
  Result<std::shared_ptr<const Automaton>> keep(std::string key, ByteDfa dfa, bool json_string,
                                                const std::string& path);

  const GrammarLimits& limits_;
  std::map<std::string, std::shared_ptr<const Automaton>> built_;  // by key
  size_t transitions_ = 0;
};

// The regex response format's document: the whole output matches `pattern` (FullMatch), one
// byte costing 1. Errors as compile_regex's, prefixed "regex response format: ".
Result<std::shared_ptr<const Automaton>> regex_document_automaton(std::string_view pattern,
                                                                  const GrammarLimits& limits);

}  // namespace cellserve::engine::grammar
