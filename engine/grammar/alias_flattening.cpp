// Alias flattening (schema.h): each anyOf/oneOf/$ref node's `alts` becomes the leaves it reaches.
//
// Aliases reach each other through any_of, with cycles where $refs recurse without a value in
// between (A = anyOf[$ref B, ...], B = anyOf[$ref A, ...]). Every alias on one cycle reaches the
// same leaves, so the aliases are grouped into strongly connected components (Tarjan's
// algorithm, iterative so that a long $ref chain cannot overflow the stack) and each component
// is flattened once, after the components it points into. The work is therefore linear in the
// alternatives written, which the limits bound; a naive walk per alias is quadratic in a chain
// and exponential in a lattice of shared $refs.
#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "engine/grammar/schema.h"

namespace cellserve::engine::grammar {

Status flatten_aliases(SchemaGraph& g, const GrammarLimits& limits, size_t states,
                       const std::function<std::string(const SchemaNode*)>& describe) {
  const size_t max_branches = limits.max_branches;
  std::unordered_map<const SchemaNode*, uint32_t> id;
  std::vector<SchemaNode*> aliases;
  for (auto& n : g.nodes) {
    if (!n->is_alias) continue;
    id.emplace(n.get(), static_cast<uint32_t>(aliases.size()));
    aliases.push_back(n.get());
  }
  constexpr int32_t kUnvisited = -1;
  std::vector<int32_t> index(aliases.size(), kUnvisited), low(aliases.size(), 0), component(aliases.size(), -1);
  std::vector<uint32_t> open;  // Tarjan's stack: visited aliases whose component is not yet known
  std::vector<uint8_t> on_open(aliases.size(), 0);
  struct Call {
    uint32_t v;
    size_t next;  // the next any_of entry to look at
  };
  std::vector<Call> calls;
  int32_t counter = 0, n_components = 0;

  // All members of a component reach the leaves their any_of lists do directly, plus the
  // (already flattened) alts of aliases in other components, in list order, each leaf once.
  auto flatten_component = [&](const std::vector<uint32_t>& members) -> Status {
    std::vector<const SchemaNode*> leaves;
    std::unordered_set<const SchemaNode*> seen;
    auto add = [&](const SchemaNode* leaf) {
      if (seen.insert(leaf).second) leaves.push_back(leaf);
    };
    for (uint32_t m : members) {
      for (const SchemaNode* child : aliases[m]->any_of) {
        if (!child->is_alias) {
          add(child);
        } else if (component[id.at(child)] != component[m]) {
          for (const SchemaNode* leaf : child->alts) add(leaf);
        }
        if (leaves.size() > max_branches) {
          return Status::invalid_argument(describe(aliases[m]) + ": more than " + std::to_string(max_branches) +
                                          " distinct branches (nested anyOf/oneOf/$ref flattened, identical "
                                          "subschemas merged); the limit (max_branches) is " +
                                          std::to_string(max_branches));
        }
      }
    }
    states += leaves.size() * members.size();
    if (states > limits.max_compiled_states) return compiled_states_error(limits);
    for (uint32_t m : members) aliases[m]->alts = leaves;
    return Status::ok_status();
  };

  auto visit = [&](uint32_t v) {
    index[v] = low[v] = counter++;
    open.push_back(v);
    on_open[v] = 1;
    calls.push_back({v, 0});
  };
  for (uint32_t root = 0; root < aliases.size(); ++root) {
    if (index[root] != kUnvisited) continue;
    visit(root);
    while (!calls.empty()) {
      const uint32_t v = calls.back().v;
      const auto& kids = aliases[v]->any_of;
      if (calls.back().next < kids.size()) {
        const SchemaNode* child = kids[calls.back().next++];
        if (!child->is_alias) continue;
        const uint32_t w = id.at(child);
        if (index[w] == kUnvisited) {
          visit(w);
        } else if (on_open[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      calls.pop_back();
      if (!calls.empty()) low[calls.back().v] = std::min(low[calls.back().v], low[v]);
      if (low[v] != index[v]) continue;
      // v roots a component: its members are v and everything above it on `open`.
      size_t first = open.size();
      while (open[--first] != v) {}
      std::vector<uint32_t> members(open.begin() + static_cast<std::ptrdiff_t>(first), open.end());
      open.resize(first);
      for (uint32_t m : members) {
        on_open[m] = 0;
        component[m] = n_components;
      }
      ++n_components;
      CS_RETURN_IF_ERROR(flatten_component(members));
    }
  }
  return Status::ok_status();
}

}  // namespace cellserve::engine::grammar
