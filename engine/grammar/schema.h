// Internal to engine/grammar: the compiled form of a JSON Schema (schema_compiler.cpp builds it,
// matcher.cpp walks it). docs/grammar.md lists the supported subset.
//
// A compiled schema is a graph of SchemaNodes (cycles come from recursive $ref) owned by one
// SchemaGraph; every node is immutable once compilation finishes.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "engine/grammar/byte_dfa.h"
#include "engine/grammar/output_constraint.h"

namespace cellserve::engine::grammar {

struct GbnfProgram;  // gbnf.h

// "Cannot be completed": the cost of a schema no JSON text satisfies. Large enough to dominate
// every real cost, small enough that a few additions never overflow.
inline constexpr int64_t kInf = std::numeric_limits<int64_t>::max() / 8;
inline int64_t add_cost(int64_t a, int64_t b) { return (a >= kInf || b >= kInf || a + b >= kInf) ? kInf : a + b; }
inline int64_t mul_cost(int64_t a, int64_t n) {
  if (n == 0) return 0;
  return (a >= kInf || a > kInf / n) ? kInf : a * n;
}

namespace type_bit {
inline constexpr uint8_t kNull = 1u << 0;
inline constexpr uint8_t kBoolean = 1u << 1;
inline constexpr uint8_t kInteger = 1u << 2;
inline constexpr uint8_t kNumber = 1u << 3;  // also admits integers
inline constexpr uint8_t kString = 1u << 4;
inline constexpr uint8_t kArray = 1u << 5;
inline constexpr uint8_t kObject = 1u << 6;
inline constexpr uint8_t kAll = 0x7f;
}  // namespace type_bit

// A byte automaton that a string's decoded bytes, a number's text or a whole regex document
// follows (schema_automata.cpp builds them from pattern, format, lengths and number bounds).
struct Automaton {
  ByteDfa dfa;
  // Per state: the fewest bytes of output to an accepting state. For strings the bytes are
  // JSON-encoded (2 for '"', '\\' and the short escapes, kInf for other control characters,
  // which need \u escapes that strings with an automaton do not take); otherwise 1 each.
  std::vector<int64_t> dist;
  int64_t growth = 0;  // max_growth(dfa, dist): the most one byte raises the distance
  std::string key;     // what it was built from (signature() merges nodes by it)
  // A live state: one from which some output reaches acceptance.
  bool live(uint32_t s) const { return s != ByteDfa::kDead && dist[s] < kInf; }
};

struct SchemaNode {
  // anyOf / oneOf / $ref: when `alts` is non-empty the node is exactly the union of these leaves
  // (nodes with empty `alts`) and every other field is unused. `any_of` is the unflattened list
  // the compiler fills; `alts` is derived from it.
  std::vector<SchemaNode*> any_of;
  bool is_alias = false;  // has any_of (a $ref, anyOf or oneOf)
  std::vector<const SchemaNode*> alts;

  uint8_t types = 0;  // type_bit mask of the JSON types the node admits

  // enum / const: when set, the value must be exactly one of `literals` (compact JSON texts,
  // sorted bytewise, unique), whatever `types` says.
  bool has_literals = false;
  std::vector<std::string> literals;

  // Strings: length in code points.
  uint32_t min_length = 0;
  uint32_t max_length = std::numeric_limits<uint32_t>::max();
  // Strings with a pattern or a format: the automaton of their decoded bytes (lengths included);
  // nullptr for any string within the lengths.
  std::shared_ptr<const Automaton> string_automaton;
  // Numbers with bounds or multipleOf: the automaton of their text (number_dfa.h: no exponent);
  // nullptr for any JSON number (or integer, by `types`).
  std::shared_ptr<const Automaton> number_automaton;

  // Arrays: item i follows prefix_items[i], later items follow `items` (nullptr: none allowed).
  std::vector<const SchemaNode*> prefix_items;
  const SchemaNode* items = nullptr;
  uint32_t min_items = 0;
  uint32_t max_items = std::numeric_limits<uint32_t>::max();

  // Objects: listed properties are emitted in declared order; required ones may not be skipped.
  // Other keys ("free" keys) follow `additional` (nullptr: none), after every listed property.
  struct Property {
    std::string key_json;  // the key as a JSON string literal, quotes included
    const SchemaNode* value = nullptr;
    bool required = false;
    int64_t entry_cost = kInf;  // key_json + ':' + shortest value
  };
  std::vector<Property> props;
  std::vector<uint32_t> sorted_props;  // indices into props, by key_json bytewise
  const SchemaNode* additional = nullptr;

  // Derived costs (shortest texts, in bytes), filled once the graph is complete.
  int64_t min_cost = kInf;  // the shortest value of the node
  int64_t object_min = kInf, array_min = kInf, string_min = kInf;
  // Objects, for next-property index a in [0, props.size()]:
  std::vector<int64_t> req_sum;        // sum of entry_cost of the required properties >= a
  std::vector<uint32_t> req_count;     // their number
  std::vector<uint32_t> first_req;     // the first required property >= a (props.size() if none)
  std::vector<int64_t> opt_entry_min;  // min entry_cost over the properties >= a
  std::vector<uint32_t> next_viable;   // the first property >= a whose value can be produced
  int64_t free_entry = kInf;           // shortest free key + ':' + shortest additional value
  bool empty_key_listed = false;       // a listed key is "" (so the shortest free key is 3 bytes)
  // minProperties / maxProperties. maxProperties counts every entry; minProperties counts the
  // listed ones and at most one free one, since free keys are not checked against each other
  // (two equal ones would be one property once parsed).
  uint32_t min_props = 0;
  uint32_t max_props = std::numeric_limits<uint32_t>::max();
  // Only when min_props > 0, for next-property index a: the entry costs of the optional listed
  // properties >= a that can be produced, cheapest first, as prefix sums (opt_prefix[a][j]: the j
  // cheapest together).
  std::vector<std::vector<int64_t>> opt_prefix;

  // Root only: an upper bound on how much one byte can raise the completion cost (see
  // ConstrainedSequence::mask_logits).
  int64_t growth_bound = 0;

  // Root only, for a GBNF grammar (OutputConstraint::from_gbnf, gbnf.h): the compiled program.
  // The document is then the grammar's: the matcher starts with a Rule frame (matcher.h) and every
  // other field but min_cost and growth_bound is unused.
  std::shared_ptr<const GbnfProgram> grammar;
  // Root only, for a regex document (OutputConstraint::from_regex): the document is the whole
  // output, which must match; the matcher starts with a Regex frame. Other fields as for grammars.
  std::shared_ptr<const Automaton> regex;

  // Helpers for objects.
  bool free_viable() const { return additional != nullptr && additional->min_cost < kInf; }
  bool free_allowed(uint32_t a) const { return free_viable() && first_req[a] == props.size(); }
  // The fewest bytes of `k` more optional entries counted by minProperties: listed ones >= a,
  // and a free one after them when `free_slot`.
  int64_t cheapest_optional(uint32_t a, uint32_t k, bool free_slot) const;
  // Where an object's rest starts: after a value (or an entry's key, counted by the caller),
  // after a comma (an entry must follow), or just after the opening brace.
  enum class Rest { AfterValue, AfterComma, Open };
  // The rest of an object that holds `listed` listed and `free` free entries and whose next
  // listed property is `a`: the required entries, the cheapest entries minProperties still
  // needs, commas and the closing brace. kInf when minProperties or maxProperties cannot be met.
  int64_t object_rest(uint32_t a, uint32_t listed, uint32_t free, Rest where) const;
  // Array item i's schema (nullptr: no such item).
  const SchemaNode* item(uint32_t i) const {
    if (i >= max_items) return nullptr;
    return i < prefix_items.size() ? prefix_items[i] : items;
  }
};

// Owns the nodes of one compiled schema; nodes[0] is the root.
struct SchemaGraph {
  std::vector<std::unique_ptr<SchemaNode>> nodes;
};

// Every field the compiler fills, child nodes by address: two nodes with the same signature admit
// the same values (their children are the same nodes). Derived fields are not part of it.
std::string signature(const SchemaNode& n);

// Drops the nodes the root (nodes[0]) cannot reach, keeping the order; returns the compiled
// states left (GrammarLimits::max_compiled_states before flattening): every node plus its
// properties, tuple items and enum values.
size_t prune_unreachable(SchemaGraph& g);

// Fills the `alts` of every alias node: the leaves it reaches through any_of, each once, in list
// order (aliases on a cycle share the leaves of the whole cycle; a cycle of aliases alone reaches
// nothing). Linear in the alternatives written. InvalidArgument when one alias would reach more
// than limits.max_branches leaves (naming describe(alias)), or when `states` (the graph's states
// before flattening) plus the alternatives written would pass limits.max_compiled_states; the
// graph is then half-flattened and must be dropped.
Status flatten_aliases(SchemaGraph& g, const GrammarLimits& limits, size_t states,
                       const std::function<std::string(const SchemaNode*)>& describe);

// The error for a graph beyond limits.max_compiled_states.
Status compiled_states_error(const GrammarLimits& limits);

// Shared static leaves for true/false and null (their literal sets).
const SchemaNode& boolean_literals();
const SchemaNode& null_literal();

}  // namespace cellserve::engine::grammar
