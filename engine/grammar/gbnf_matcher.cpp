// GBNF threads of the byte matcher (gbnf_matcher.h): rule expansion, byte terminals, external
// JSON values. Every loop here is bounded by the meter: one unit per element looked at.
#include "engine/grammar/gbnf_matcher.h"

#include "engine/grammar/gbnf.h"

namespace cellserve::engine::grammar {

namespace {

using Kind = GbnfElement::Kind;

Frame rule_frame(const SchemaNode* root, uint32_t position) {
  Frame f;
  f.kind = FrameKind::Rule;
  f.node = root;
  f.a = position;
  return f;
}

// The alternatives [lo, hi) of `rule` worth following with byte `b`: for a character class the one
// whose first byte range holds `b` (binary search), otherwise all of them (filtered by the caller).
void candidate_alternatives(const GbnfProgram& p, const GbnfRule& rule, uint8_t b, uint32_t& lo, uint32_t& hi) {
  lo = rule.first_alt;
  hi = rule.first_alt + rule.alt_count;
  if (!rule.dispatch) return;
  uint32_t l = lo, h = hi;  // the first alternative whose range ends at or after b
  while (l < h) {
    const uint32_t m = l + (h - l) / 2;
    if (p.elements[p.starts[m]].hi < b)
      l = m + 1;
    else
      h = m;
  }
  if (l < hi && p.elements[p.starts[l]].lo <= b) {
    lo = l;
    hi = l + 1;
  } else {
    lo = hi;
  }
}

// Whether a thread may take `b` at `position` (an alternative's next element) with the frames
// below[0, count) under it: the rest of the alternative can start with `b`, or can be empty and the
// frames below (where it returns to) can take `b`. Read-only, so an alternative that matches the
// empty string costs no fork when what follows it cannot take the byte (x* before a literal).
// `walked` counts the frames looked at.
bool may_take(const GbnfProgram& p, const Stack& below, size_t count, uint32_t position, uint8_t b, size_t& walked) {
  if (p.rest_cost[position] >= kInf) return false;
  for (size_t j = count;; --j) {
    if (p.first[position].has(b)) return true;
    if (!p.nullable[position] || j == 0) return false;  // at the bottom: the document ends here
    position = below[j - 1].a;
    ++walked;
  }
}

// Pops the frames whose alternative has ended, except the bottom one (its end is the document's).
void pop_finished(const GbnfProgram& p, Stack& s) {
  while (s.size() > 1 && s.back().kind == FrameKind::Rule && p.elements[s.back().a].kind == Kind::End) s.pop_back();
}

enum class Path { Took, Dead, External, OverBudget };

// Follows `cur` (a thread of `out`, changed in place) until it takes `b`, dies or reaches an
// external JSON value (its index in `external`); at a rule with several alternatives that may take
// `b`, all but the last go to `forks` (each charged as a thread).
Path follow(const GbnfProgram& p, Stack& cur, uint8_t b, ThreadSet& forks, WorkMeter& meter, uint32_t& external) {
  for (;;) {
    if (!meter.charge(1)) return Path::OverBudget;
    Frame& top = cur.back();
    const GbnfElement& e = p.elements[top.a];
    switch (e.kind) {
      case Kind::End:
        if (cur.size() == 1) return Path::Dead;  // the document is complete: nothing may follow
        cur.pop_back();
        continue;
      case Kind::Bytes:
        if (b < e.lo || b > e.hi) return Path::Dead;
        ++top.a;
        pop_finished(p, cur);
        return Path::Took;
      case Kind::External:
        ++top.a;  // where the grammar goes on once the value is complete
        pop_finished(p, cur);
        external = e.index;
        return Path::External;
      case Kind::Rule:
        break;
    }
    size_t walked = 0;
    if (!may_take(p, cur, cur.size() - 1, top.a, b, walked)) return Path::Dead;
    const GbnfRule& rule = p.rules[e.index];
    ++top.a;
    // In tail position the rule's frame replaces this one; otherwise it goes above.
    const bool tail = p.elements[top.a].kind == Kind::End;
    const size_t below = tail ? cur.size() - 1 : cur.size();
    // The new frame's depth (1 = the bottom) must leave room for the frames finishing it needs, so
    // that no thread reaches a state it cannot finish within the limit.
    const size_t depth = below + 1;
    uint32_t lo = 0, hi = 0, chosen = UINT32_MAX;
    candidate_alternatives(p, rule, b, lo, hi);
    // The alternative's frame: a copy of the top one (every Rule frame differs only in `a`), which
    // is also cheaper than building one field by field.
    auto enter = [&](Stack& s, uint32_t start) {
      if (tail) {
        s.back().a = start;
      } else {
        Frame f = s.back();
        f.a = start;
        s.push_back(f);
      }
    };
    for (uint32_t k = lo; k < hi; ++k) {
      const uint32_t start = p.starts[k];
      if (depth + p.depth_need[start] > p.limits.max_grammar_depth) continue;
      if (!may_take(p, cur, below, start, b, walked)) continue;
      if (chosen != UINT32_MAX) {
        if (!meter.charge(WorkMeter::kStepCost + depth)) return Path::OverBudget;
        enter(forks[forks.push(cur)], chosen);
      }
      chosen = start;
    }
    if (!meter.charge(walked + (hi - lo))) return Path::OverBudget;
    if (chosen == UINT32_MAX) return Path::Dead;
    enter(cur, chosen);
  }
}

}  // namespace

void initial_grammar_state(const SchemaNode& root, ThreadSet& out) {
  out.clear();
  out.push(Stack{rule_frame(&root, root.grammar->start)});
}

int64_t grammar_frame_cost(const Frame& f) { return f.node->grammar->rest_cost[f.a]; }

bool step_grammar(const Stack& thread, uint8_t b, ThreadSet& out, WorkMeter* meter, StartJsonValue start_value) {
  const SchemaNode* root = thread.back().node;
  const GbnfProgram& p = *root->grammar;
  WorkMeter local;  // without a meter: only the work of this call is bounded, as one mask's would be
  if (meter == nullptr) {
    local.max_work = p.limits.max_mask_work;
    meter = &local;
  }
  thread_local ThreadSet forks;  // alternatives not followed yet
  forks.clear();
  auto fail = [&] {
    out.clear();
    forks.clear();
    return false;
  };
  // Appends a thread to `out`, where it is followed in place; false once over a limit.
  auto add = [&](const Stack& s, size_t& idx) {
    if (out.size() >= meter->max_threads) meter->over_threads = true;
    if (meter->exhausted()) return false;
    idx = out.push(s);
    return true;
  };
  size_t idx = 0;
  if (!meter->charge(WorkMeter::kStepCost + thread.size()) || !add(thread, idx)) return fail();
  for (;;) {
    uint32_t external = 0;
    switch (follow(p, out[idx], b, forks, *meter, external)) {
      case Path::Took:
        break;
      case Path::Dead:
        out.pop_back();
        break;
      case Path::External:
        if (!start_value(out, idx, p.external_roots[external], b, meter)) return fail();
        break;
      case Path::OverBudget:
        return fail();
    }
    if (forks.empty()) return true;
    if (!add(forks[forks.size() - 1], idx)) return fail();
    forks.pop_back();
  }
}

}  // namespace cellserve::engine::grammar
