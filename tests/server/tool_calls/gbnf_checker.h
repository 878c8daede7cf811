// A small, independent reader of GBNF (llama.cpp's grammar syntax) for the tests: parse() checks the
// text is well-formed as llama.cpp's parser requires (rule names [a-zA-Z0-9-]+, escapes it knows,
// balanced groups, every rule referenced defined or external); matches() runs the grammar on a text
// by backtracking, with each external rule matched as one JSON value (no surrounding whitespace)
// valid against a subset of JSON Schema (type, const, enum, properties, required, items, anyOf,
// $ref to $defs).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json.hpp>

namespace cellserve::server::tool_calls::testing {

struct GbnfNode {
  enum class Kind { Literal, Class, Ref, Sequence, Alternatives, Repeat };
  Kind kind = Kind::Sequence;
  std::vector<std::uint32_t> literal{};                           // Literal: code points
  std::vector<std::pair<std::uint32_t, std::uint32_t>> ranges{};  // Class
  bool negated = false;                                           // Class
  std::string name{};                                             // Ref
  char repeat = 0;                                                // Repeat: '?', '*' or '+'
  std::vector<GbnfNode> children{};
};

struct GbnfGrammar {
  std::map<std::string, GbnfNode> rules;
  std::set<std::string> referenced;
};

// Empty `error` on success.
GbnfGrammar parse_gbnf(std::string_view text, std::string& error);

// The names the grammar references but does not define.
std::set<std::string> undefined_rules(const GbnfGrammar& grammar);

// Whether `text` as a whole matches rule `root`.
bool gbnf_matches(const GbnfGrammar& grammar, const std::map<std::string, boost::json::value>& externals,
                  std::string_view text);

// Whether `value` is valid against `schema` (the subset above; `root` resolves $refs).
bool schema_accepts(const boost::json::value& schema, const boost::json::value& value, const boost::json::value& root);

}  // namespace cellserve::server::tool_calls::testing
