// GBNF program analysis (gbnf.h): shortest strings, first bytes, left recursion. Every pass is
// linear in the program (first sets at most 257 times, once per byte a rule's set can gain), so an
// untrusted grammar cannot make compilation quadratic.
#include <algorithm>
#include <functional>
#include <queue>
#include <utility>

#include "engine/grammar/gbnf.h"
#include "engine/grammar/schema.h"

namespace cellserve::engine::grammar {

namespace {

using Kind = GbnfElement::Kind;

// The bytes a JSON value may start with (a superset for any schema: only used to skip work).
ByteSet json_value_first() {
  ByteSet s;
  for (char c : std::string_view("{[\"-tfn")) s.add(static_cast<uint8_t>(c));
  s.add_range('0', '9');
  return s;
}

int64_t element_cost(const GbnfProgram& p, const GbnfElement& e) {
  switch (e.kind) {
    case Kind::Bytes:
      return 1;
    case Kind::Rule:
      return p.rules[e.index].min_cost;
    case Kind::External:
      return p.external_roots[e.index]->min_cost;
    case Kind::End:
      return 0;
  }
  return kInf;
}

// The alternative of each start, and the End position of each.
struct AltIndex {
  std::vector<uint32_t> rule_of;
  std::vector<uint32_t> end_of;
};
AltIndex index_alternatives(const GbnfProgram& p) {
  AltIndex ix;
  ix.rule_of.resize(p.starts.size());
  ix.end_of.resize(p.starts.size());
  for (uint32_t r = 0; r < p.rules.size(); ++r) {
    for (uint32_t k = p.rules[r].first_alt; k < p.rules[r].first_alt + p.rules[r].alt_count; ++k) {
      ix.rule_of[k] = r;
      uint32_t e = p.starts[k];
      while (p.elements[e].kind != Kind::End) ++e;
      ix.end_of[k] = e;
    }
  }
  return ix;
}

// Knuth's generalisation of Dijkstra's algorithm: a rule's shortest string is final once popped
// from the queue; an alternative's length is known once all the rules it names are final.
void compute_min_costs(GbnfProgram& p, const AltIndex& ix) {
  const size_t n_alts = p.starts.size();
  std::vector<uint32_t> pending(n_alts, 0);
  std::vector<int64_t> sum(n_alts, 0);
  std::vector<std::vector<uint32_t>> uses(p.rules.size());  // rule -> alternatives naming it (repeats kept)
  using Entry = std::pair<int64_t, uint32_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
  for (size_t k = 0; k < n_alts; ++k) {
    for (uint32_t e = p.starts[k]; e < ix.end_of[k]; ++e) {
      const GbnfElement& el = p.elements[e];
      if (el.kind == Kind::Rule) {
        ++pending[k];
        uses[el.index].push_back(static_cast<uint32_t>(k));
      } else {
        sum[k] = add_cost(sum[k], element_cost(p, el));
      }
    }
    if (pending[k] == 0 && sum[k] < kInf) queue.emplace(sum[k], ix.rule_of[k]);
  }
  std::vector<uint8_t> final(p.rules.size(), 0);
  for (GbnfRule& r : p.rules) r.min_cost = kInf;
  while (!queue.empty()) {
    const auto [cost, r] = queue.top();
    queue.pop();
    if (final[r]) continue;
    final[r] = 1;
    p.rules[r].min_cost = cost;
    for (uint32_t k : uses[r]) {
      sum[k] = add_cost(sum[k], cost);
      if (--pending[k] == 0 && sum[k] < kInf) queue.emplace(sum[k], ix.rule_of[k]);
    }
  }
}

bool is_tail(const GbnfProgram& p, uint32_t position) { return p.elements[position + 1].kind == Kind::End; }

// The same algorithm for depth_need: an alternative needs the most of (1 + a rule's need) over
// its references, except that a reference in tail position needs only the rule's need (its frame
// replaces the alternative's). Max and +1 are monotone and never below their argument, which is
// what the algorithm needs.
void compute_depth_needs(GbnfProgram& p, const AltIndex& ix) {
  const size_t n_alts = p.starts.size();
  std::vector<uint32_t> pending(n_alts, 0), need(n_alts, 0);
  struct Use {
    uint32_t alt;
    uint32_t extra;  // 1, or 0 in tail position
  };
  std::vector<std::vector<Use>> uses(p.rules.size());
  using Entry = std::pair<uint32_t, uint32_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
  for (size_t k = 0; k < n_alts; ++k) {
    bool finishes = true;  // every external value in it can be finished
    for (uint32_t e = p.starts[k]; e < ix.end_of[k]; ++e) {
      const GbnfElement& el = p.elements[e];
      if (el.kind == Kind::External) finishes &= p.external_roots[el.index]->min_cost < kInf;
      if (el.kind != Kind::Rule) continue;
      ++pending[k];
      uses[el.index].push_back({static_cast<uint32_t>(k), is_tail(p, e) ? 0u : 1u});
    }
    if (!finishes) pending[k] = UINT32_MAX;  // never completes
    if (pending[k] == 0) queue.emplace(0, ix.rule_of[k]);
  }
  std::vector<uint8_t> final(p.rules.size(), 0);
  for (GbnfRule& r : p.rules) r.depth_need = kNoDepth;
  while (!queue.empty()) {
    const auto [value, r] = queue.top();
    queue.pop();
    if (final[r]) continue;
    final[r] = 1;
    p.rules[r].depth_need = value;
    for (const Use& u : uses[r]) {
      need[u.alt] = std::max(need[u.alt], value + u.extra);
      if (pending[u.alt] != UINT32_MAX && --pending[u.alt] == 0) queue.emplace(need[u.alt], ix.rule_of[u.alt]);
    }
  }
}

bool element_nullable(const GbnfProgram& p, const GbnfElement& e) {
  return e.kind == Kind::End || (e.kind == Kind::Rule && p.rules[e.index].min_cost == 0);
}

// The rules an alternative may enter before reading a byte: those named before (and at) its
// first element that cannot be empty.
template <typename Visit>
void leftmost_rules(const GbnfProgram& p, uint32_t start, const Visit& visit) {
  for (uint32_t e = start; p.elements[e].kind != Kind::End; ++e) {
    const GbnfElement& el = p.elements[e];
    if (el.kind == Kind::Rule) visit(el.index);
    if (!element_nullable(p, el)) return;
  }
}

void compute_first_sets(GbnfProgram& p, const AltIndex& ix) {
  const ByteSet json_first = json_value_first();
  const size_t n_rules = p.rules.size();
  std::vector<ByteSet> rule_first(n_rules);
  std::vector<std::vector<uint32_t>> users(n_rules);  // r' -> rules whose first set includes r''s
  for (size_t k = 0; k < p.starts.size(); ++k) {
    const uint32_t r = ix.rule_of[k];
    for (uint32_t e = p.starts[k]; p.elements[e].kind != Kind::End; ++e) {
      const GbnfElement& el = p.elements[e];
      if (el.kind == Kind::Bytes) rule_first[r].add_range(el.lo, el.hi);
      if (el.kind == Kind::External) rule_first[r].merge(json_first);
      if (el.kind == Kind::Rule) users[el.index].push_back(r);
      if (!element_nullable(p, el)) break;
    }
  }
  std::vector<uint8_t> queued(n_rules, 1);
  std::queue<uint32_t> work;
  for (uint32_t r = 0; r < n_rules; ++r) work.push(r);
  while (!work.empty()) {
    const uint32_t r = work.front();
    work.pop();
    queued[r] = 0;
    for (uint32_t u : users[r]) {
      if (rule_first[u].merge(rule_first[r]) && !queued[u]) {
        queued[u] = 1;
        work.push(u);
      }
    }
  }
  const size_t n = p.elements.size();
  p.first.assign(n, ByteSet{});
  p.nullable.assign(n, 0);
  p.rest_cost.assign(n, kInf);
  p.depth_need.assign(n, kNoDepth);
  for (size_t k = 0; k < p.starts.size(); ++k) {
    const uint32_t end = ix.end_of[k];
    p.rest_cost[end] = 0;
    p.nullable[end] = 1;
    p.depth_need[end] = 0;
    for (uint32_t e = end; e-- > p.starts[k];) {
      const GbnfElement& el = p.elements[e];
      p.rest_cost[e] = add_cost(element_cost(p, el), p.rest_cost[e + 1]);
      ByteSet f;
      if (el.kind == Kind::Bytes) f.add_range(el.lo, el.hi);
      if (el.kind == Kind::External) f = json_first;
      if (el.kind == Kind::Rule) f = rule_first[el.index];
      const bool null = element_nullable(p, el);
      if (null) f.merge(p.first[e + 1]);
      p.first[e] = f;
      p.nullable[e] = null && p.nullable[e + 1];
      uint32_t need = p.depth_need[e + 1];
      if (el.kind == Kind::Rule) {
        const uint32_t inner = p.rules[el.index].depth_need;
        need = inner >= kNoDepth ? kNoDepth : std::max(need, inner + (is_tail(p, e) ? 0 : 1));
      }
      if (el.kind == Kind::External && p.external_roots[el.index]->min_cost >= kInf) need = kNoDepth;
      p.depth_need[e] = need;
    }
  }
}

}  // namespace

void analyse_gbnf(GbnfProgram& p) {
  const AltIndex ix = index_alternatives(p);
  compute_min_costs(p, ix);
  compute_depth_needs(p, ix);
  compute_first_sets(p, ix);
}

std::vector<uint32_t> find_left_recursion(const GbnfProgram& p) {
  const size_t n = p.rules.size();
  std::vector<std::vector<uint32_t>> next(n);
  for (uint32_t r = 0; r < n; ++r) {
    for (uint32_t k = p.rules[r].first_alt; k < p.rules[r].first_alt + p.rules[r].alt_count; ++k)
      leftmost_rules(p, p.starts[k], [&](uint32_t to) { next[r].push_back(to); });
  }
  // Depth-first search without recursion; a rule on the current path reached again is a cycle.
  enum : uint8_t { kNew, kOnPath, kDone };
  std::vector<uint8_t> color(n, kNew);
  std::vector<std::pair<uint32_t, size_t>> path;  // (rule, next edge to follow)
  for (uint32_t root = 0; root < n; ++root) {
    if (color[root] != kNew) continue;
    color[root] = kOnPath;
    path.emplace_back(root, 0);
    while (!path.empty()) {
      auto& [r, i] = path.back();
      if (i == next[r].size()) {
        color[r] = kDone;
        path.pop_back();
        continue;
      }
      const uint32_t to = next[r][i++];
      if (color[to] == kOnPath) {
        std::vector<uint32_t> cycle;
        size_t from = 0;
        while (path[from].first != to) ++from;
        for (size_t j = from; j < path.size(); ++j) cycle.push_back(path[j].first);
        cycle.push_back(to);
        return cycle;
      }
      if (color[to] == kNew) {
        color[to] = kOnPath;
        path.emplace_back(to, 0);
      }
    }
  }
  return {};
}

}  // namespace cellserve::engine::grammar
