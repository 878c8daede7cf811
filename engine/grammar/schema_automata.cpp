// AutomatonBuilder and the regex response format's automaton (schema_automata.h).
#include "engine/grammar/schema_automata.h"

#include <array>
#include <utility>

#include "engine/grammar/regex_compiler.h"
#include "engine/grammar/string_dfa.h"

namespace cellserve::engine::grammar {
namespace {

// What one decoded byte of a string costs as JSON text: '"' and '\' are escaped (2 bytes), and so
// are the control characters with a short escape; the other control characters would need \u,
// which strings with an automaton do not take (matcher.cpp), so they cannot be written.
std::array<int64_t, 256> json_string_byte_costs() {
  std::array<int64_t, 256> cost;
  cost.fill(1);
  for (int b = 0; b < 0x20; ++b) cost[b] = kInf;
  for (uint8_t b : {'\b', '\f', '\n', '\r', '\t', '"', '\\'}) cost[b] = 2;
  return cost;
}

std::array<int64_t, 256> unit_byte_costs() {
  std::array<int64_t, 256> cost;
  cost.fill(1);
  return cost;
}

std::shared_ptr<Automaton> with_distances(ByteDfa dfa, const std::array<int64_t, 256>& costs) {
  auto a = std::make_shared<Automaton>();
  a->dist = accept_distances(dfa, costs);
  a->growth = max_growth(dfa, a->dist);
  a->dfa = std::move(dfa);
  return a;
}

Status prefixed(const std::string& prefix, const Status& s) { return Status(s.code(), prefix + s.message()); }

std::string count_text(uint32_t n) { return n == UINT32_MAX ? "inf" : std::to_string(n); }

}  // namespace

Result<std::shared_ptr<const Automaton>> AutomatonBuilder::keep(std::string key, ByteDfa dfa, bool json_string,
                                                                const std::string& path) {
  const size_t transitions = static_cast<size_t>(dfa.states()) * dfa.n_classes;
  if (transitions_ + transitions > limits_.max_automaton_transitions) {
    return Status::invalid_argument(path + ": the schema's automata need more than " +
                                    std::to_string(limits_.max_automaton_transitions) +
                                    " transitions together; the limit (max_automaton_transitions) is " +
                                    std::to_string(limits_.max_automaton_transitions));
  }
  transitions_ += transitions;
  auto a = with_distances(std::move(dfa), json_string ? json_string_byte_costs() : unit_byte_costs());
  a->key = key;
  built_.emplace(std::move(key), a);
  return std::shared_ptr<const Automaton>(std::move(a));
}

Result<std::shared_ptr<const Automaton>> AutomatonBuilder::string_automaton(const std::string* pattern,
                                                                            const std::string* format,
                                                                            uint32_t min_length, uint32_t max_length,
                                                                            const std::string& path) {
  std::string key = "string";
  if (pattern != nullptr) key += " pattern " + std::to_string(pattern->size()) + ":" + *pattern;
  if (format != nullptr) key += " format " + *format;
  key += " length " + count_text(min_length) + ".." + count_text(max_length);
  if (auto it = built_.find(key); it != built_.end()) return it->second;
  if (built_.size() >= limits_.max_schema_automata) {
    return Status::invalid_argument(path + ": the schema needs more than " +
                                    std::to_string(limits_.max_schema_automata) +
                                    " distinct automata (patterns, formats and number bounds); the limit "
                                    "(max_schema_automata) is " +
                                    std::to_string(limits_.max_schema_automata));
  }
  ByteDfa dfa;
  bool have = false;
  auto meet = [&](Result<ByteDfa> next, const std::string& what) -> Status {
    if (!next.ok()) return prefixed(path + ": " + what + ": ", next.status());
    if (!have) {
      dfa = std::move(*next);
      have = true;
      return Status::ok_status();
    }
    auto both = intersect(dfa, *next, limits_);
    if (!both.ok()) return prefixed(path + ": " + what + ": ", both.status());
    dfa = std::move(*both);
    return Status::ok_status();
  };
  if (pattern != nullptr) CS_RETURN_IF_ERROR(meet(compile_regex(*pattern, RegexMode::Search, limits_), "'pattern'"));
  if (format != nullptr) {
    const std::optional<std::string> regex = format_regex(*format);
    if (!regex) return Status::unimplemented(path + ": unsupported 'format' \"" + *format + "\"");
    CS_RETURN_IF_ERROR(meet(compile_regex(*regex, RegexMode::FullMatch, limits_), "'format' " + *format));
  }
  if (min_length > 0 || max_length != UINT32_MAX || !have)
    CS_RETURN_IF_ERROR(meet(utf8_length_dfa(min_length, max_length, limits_), "'minLength'/'maxLength'"));
  return keep(std::move(key), std::move(dfa), /*json_string=*/true, path);
}

Result<std::shared_ptr<const Automaton>> AutomatonBuilder::number_automaton(const NumberBounds& bounds,
                                                                            const std::string& path) {
  std::string key = bounds.integer ? "integer" : "number";
  if (bounds.minimum) key += (bounds.exclusive_minimum ? " > " : " >= ") + *bounds.minimum;
  if (bounds.maximum) key += (bounds.exclusive_maximum ? " < " : " <= ") + *bounds.maximum;
  if (bounds.multiple_of != 0) key += " multipleOf " + std::to_string(bounds.multiple_of);
  if (auto it = built_.find(key); it != built_.end()) return it->second;
  if (built_.size() >= limits_.max_schema_automata) {
    return Status::invalid_argument(path + ": the schema needs more than " +
                                    std::to_string(limits_.max_schema_automata) +
                                    " distinct automata (patterns, formats and number bounds); the limit "
                                    "(max_schema_automata) is " +
                                    std::to_string(limits_.max_schema_automata));
  }
  auto dfa = number_dfa(bounds, limits_);
  if (!dfa.ok()) return prefixed(path + ": ", dfa.status());
  return keep(std::move(key), std::move(*dfa), /*json_string=*/false, path);
}

Result<std::shared_ptr<const Automaton>> regex_document_automaton(std::string_view pattern,
                                                                  const GrammarLimits& limits) {
  auto dfa = compile_regex(pattern, RegexMode::FullMatch, limits);
  if (!dfa.ok()) return prefixed("regex response format: ", dfa.status());
  if (dfa->start == ByteDfa::kDead)
    return Status::invalid_argument("regex response format: the pattern matches no text");
  auto a = with_distances(std::move(*dfa), unit_byte_costs());
  a->key = "regex";
  return std::shared_ptr<const Automaton>(std::move(a));
}

}  // namespace cellserve::engine::grammar
