// Whole-graph helpers of the schema compiler (schema.h): node signatures, which merge identical
// subschemas, and dropping the nodes merging left unreachable.
#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "engine/grammar/schema.h"

namespace cellserve::engine::grammar {

std::string signature(const SchemaNode& n) {
  std::string s;
  auto put = [&s](uint64_t v) { s.append(reinterpret_cast<const char*>(&v), sizeof v); };
  auto node = [&put](const SchemaNode* p) { put(reinterpret_cast<uintptr_t>(p)); };
  auto text = [&](const std::string& t) {
    put(t.size());
    s += t;
  };
  put(n.is_alias);
  put(n.any_of.size());
  for (const SchemaNode* a : n.any_of) node(a);
  put(n.types);
  put(n.has_literals);
  put(n.literals.size());
  for (const std::string& l : n.literals) text(l);
  put(n.min_length);
  put(n.max_length);
  text(n.string_automaton ? n.string_automaton->key : std::string());
  text(n.number_automaton ? n.number_automaton->key : std::string());
  put(n.prefix_items.size());
  for (const SchemaNode* item : n.prefix_items) node(item);
  node(n.items);
  put(n.min_items);
  put(n.max_items);
  put(n.props.size());
  for (const auto& p : n.props) {
    text(p.key_json);
    node(p.value);
    put(p.required);
  }
  node(n.additional);
  put(n.min_props);
  put(n.max_props);
  return s;
}

// The nodes left unreachable are the duplicates compile() merged away.
size_t prune_unreachable(SchemaGraph& g) {
  std::unordered_set<const SchemaNode*> reached = {g.nodes[0].get()};
  std::vector<const SchemaNode*> todo = {g.nodes[0].get()};
  auto reach = [&](const SchemaNode* n) {
    if (n != nullptr && reached.insert(n).second) todo.push_back(n);
  };
  size_t states = 0;
  while (!todo.empty()) {
    const SchemaNode* n = todo.back();
    todo.pop_back();
    states += 1 + n->props.size() + n->prefix_items.size() + n->literals.size();
    // minProperties keeps, for every next-property index, the sorted optional entry costs.
    if (n->min_props > 0) states += n->props.size() * (n->props.size() + 1) / 2;
    for (const SchemaNode* a : n->any_of) reach(a);
    for (const SchemaNode* item : n->prefix_items) reach(item);
    for (const auto& p : n->props) reach(p.value);
    reach(n->items);
    reach(n->additional);
  }
  std::erase_if(g.nodes, [&](const std::unique_ptr<SchemaNode>& n) { return !reached.count(n.get()); });
  return states;
}

}  // namespace cellserve::engine::grammar
