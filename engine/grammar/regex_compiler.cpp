// compile_regex: pattern -> syntax tree -> Thompson NFA over byte ranges -> subset construction
// -> minimize(). Each stage is bounded before it runs: the pattern's length, group nesting, the
// NFA's size (computed from the tree before it is built, so {1000}{1000} is refused at once),
// and the DFA's states and work while the subsets are built.
// The parser and its tree are in regex_syntax.h, the code point sets and UTF-8 in regex_utf8.h.
#include "engine/grammar/regex_compiler.h"

#include <algorithm>
#include <array>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/grammar/regex_syntax.h"
#include "engine/grammar/regex_utf8.h"

namespace cellserve::engine::grammar {
namespace {

using regex_internal::invalid_utf8_at;
using regex_internal::kUnbounded;
using regex_internal::nfa_size;
using regex_internal::Node;
using regex_internal::offset_text;
using regex_internal::parse_regex;
using regex_internal::RegexSyntax;
using regex_internal::Utf8Seq;

// The NFA may have this many states per allowed DFA state (plus a little for tiny limits), and
// the subset construction this many steps: both keep compile time proportional to the limit.
constexpr size_t kNfaStatesPerDfaState = 16;
constexpr size_t kWorkPerDfaState = 4096;

// ---- Thompson NFA over byte ranges, built backwards from its match state. ----

struct Nfa {
  enum class Kind : uint8_t { Range, Fork, Match };
  struct State {
    Kind kind = Kind::Fork;
    uint8_t lo = 0, hi = 0;       // Range
    uint32_t out = 0;             // Range
    uint32_t begin = 0, end = 0;  // Fork: targets[begin, end)
  };
  std::vector<State> states;
  std::vector<uint32_t> targets;

  uint32_t add(State s) {
    states.push_back(s);
    return static_cast<uint32_t>(states.size() - 1);
  }
  uint32_t range(uint8_t lo, uint8_t hi, uint32_t out) { return add({Kind::Range, lo, hi, out, 0, 0}); }
  uint32_t fork(const std::vector<uint32_t>& to) {
    const auto begin = static_cast<uint32_t>(targets.size());
    targets.insert(targets.end(), to.begin(), to.end());
    return add({Kind::Fork, 0, 0, 0, begin, static_cast<uint32_t>(targets.size())});
  }

  // The states that match the tree and then continue at `next`; returns the entry state.
  uint32_t build(const std::vector<Node>& nodes, uint32_t id, uint32_t next) {
    const Node& n = nodes[id];
    switch (n.kind) {
      case Node::Kind::Chars: {
        std::vector<uint32_t> starts;
        for (const Utf8Seq& s : n.seqs) {
          uint32_t cur = next;
          for (int k = s.len; k-- > 0;) cur = range(s.r[k].lo, s.r[k].hi, cur);
          starts.push_back(cur);
        }
        return starts.size() == 1 ? starts[0] : fork(starts);  // no sequence: a dead end
      }
      case Node::Kind::Concat:
        for (size_t k = n.children.size(); k-- > 0;) next = build(nodes, n.children[k], next);
        return next;
      case Node::Kind::Alt: {
        std::vector<uint32_t> starts;
        for (uint32_t c : n.children) starts.push_back(build(nodes, c, next));
        return fork(starts);
      }
      case Node::Kind::Repeat: {
        uint32_t cur = next;
        if (n.max == kUnbounded) {
          const uint32_t loop = fork({0, next});
          const uint32_t body = build(nodes, n.children[0], loop);
          targets[states[loop].begin] = body;
          cur = loop;
        } else {
          // Nested optionals, (x(x(x)?)?)?: a subset holds one of them at a time, not all.
          for (uint32_t k = n.min; k < n.max; ++k) cur = fork({build(nodes, n.children[0], cur), next});
        }
        for (uint32_t k = 0; k < n.min; ++k) cur = build(nodes, n.children[0], cur);
        return cur;
      }
    }
    return next;
  }
};

// Subset construction: DFA states are the sets of NFA Range/Match states reachable through forks.
class Determinizer {
 public:
  Determinizer(const Nfa& nfa, const GrammarLimits& limits) : nfa_(nfa), limits_(limits), mark_(nfa.states.size(), 0) {
    max_work_ =
        limits.max_dfa_states > SIZE_MAX / kWorkPerDfaState ? SIZE_MAX : limits.max_dfa_states * kWorkPerDfaState;
  }

  Result<ByteDfa> run(uint32_t start) {
    // Byte classes: the bytes between two consecutive range boundaries behave alike.
    std::array<bool, 257> boundary{};
    boundary[0] = true;
    for (const Nfa::State& s : nfa_.states) {
      if (s.kind != Nfa::Kind::Range) continue;
      boundary[s.lo] = true;
      boundary[s.hi + 1] = true;
    }
    std::array<uint8_t, 256> cls{};
    int k = -1;
    for (int b = 0; b < 256; ++b) {
      if (boundary[b]) ++k;
      cls[b] = static_cast<uint8_t>(k);
    }
    const auto n_classes = static_cast<uint32_t>(k + 1);
    raw_ = raw_dfa(cls, n_classes);
    sets_.emplace_back();  // kDead: the empty set

    CS_ASSIGN_OR_RETURN(raw_.start, intern(closure({start})));
    std::vector<std::vector<uint32_t>> buckets(n_classes);
    std::vector<uint32_t> current;
    for (uint32_t d = 1; d < raw_.states(); ++d) {
      current = sets_[d];
      for (auto& b : buckets) b.clear();
      for (uint32_t q : current) {
        const Nfa::State& s = nfa_.states[q];
        if (s.kind != Nfa::Kind::Range) continue;
        for (uint32_t c = cls[s.lo]; c <= cls[s.hi]; ++c) buckets[c].push_back(s.out);
        work_ += cls[s.hi] - cls[s.lo] + 1u;
      }
      uint32_t previous = ByteDfa::kDead;
      for (uint32_t c = 0; c < n_classes; ++c) {
        if (c == 0 || buckets[c] != buckets[c - 1]) {
          CS_ASSIGN_OR_RETURN(previous, intern(closure(buckets[c])));
        }
        set_transition(raw_, d, c, previous);
        if (work_ > max_work_) return work_error();
      }
    }
    return minimize(raw_);
  }

 private:
  Status work_error() const {
    return Status::invalid_argument("regex: the pattern needs more than " + std::to_string(max_work_) +
                                    " steps to compile; the limit (max_dfa_states) is " +
                                    std::to_string(limits_.max_dfa_states) + ", which allows " +
                                    std::to_string(kWorkPerDfaState) + " steps each");
  }

  // The sorted Range/Match states reachable from `seeds` through forks.
  std::vector<uint32_t> closure(const std::vector<uint32_t>& seeds) {
    ++stamp_;
    std::vector<uint32_t> out, stack(seeds.rbegin(), seeds.rend());
    while (!stack.empty()) {
      const uint32_t q = stack.back();
      stack.pop_back();
      if (mark_[q] == stamp_) continue;
      mark_[q] = stamp_;
      ++work_;
      const Nfa::State& s = nfa_.states[q];
      if (s.kind != Nfa::Kind::Fork) {
        out.push_back(q);
        continue;
      }
      for (uint32_t j = s.end; j-- > s.begin;) stack.push_back(nfa_.targets[j]);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  Result<uint32_t> intern(std::vector<uint32_t> set) {
    if (set.empty()) return ByteDfa::kDead;
    std::string key(reinterpret_cast<const char*>(set.data()), set.size() * sizeof(uint32_t));
    auto it = ids_.find(key);
    if (it != ids_.end()) return it->second;
    bool accepting = false;
    for (uint32_t q : set) accepting |= nfa_.states[q].kind == Nfa::Kind::Match;
    if (raw_.states() > limits_.max_dfa_states) return dfa_states_error("regex: the pattern", limits_);
    const uint32_t id = add_state(raw_, accepting);
    work_ += set.size();
    ids_.emplace(std::move(key), id);
    sets_.push_back(std::move(set));
    return id;
  }

  const Nfa& nfa_;
  const GrammarLimits& limits_;
  std::vector<uint32_t> mark_;
  uint32_t stamp_ = 0;
  size_t work_ = 0, max_work_ = 0;
  ByteDfa raw_;
  std::vector<std::vector<uint32_t>> sets_;
  std::unordered_map<std::string, uint32_t> ids_;
};

}  // namespace

Result<ByteDfa> compile_regex(std::string_view pattern, RegexMode mode, const GrammarLimits& limits) {
  if (pattern.size() > limits.max_regex_bytes) {
    return Status::invalid_argument("regex: the pattern is " + std::to_string(pattern.size()) +
                                    " bytes; the limit (max_regex_bytes) is " + std::to_string(limits.max_regex_bytes));
  }
  if (const size_t bad = invalid_utf8_at(pattern); bad != std::string_view::npos) {
    return Status::invalid_argument("regex: the pattern is not valid UTF-8" + offset_text(bad));
  }
  CS_ASSIGN_OR_RETURN(const RegexSyntax tree, parse_regex(pattern, mode));
  const size_t max_nfa = limits.max_dfa_states > SIZE_MAX / kNfaStatesPerDfaState - 256
                             ? SIZE_MAX
                             : limits.max_dfa_states * kNfaStatesPerDfaState + 256;
  // The tree's states and the match state; >= rather than + 1 >, as a saturated SIZE_MAX + 1 is 0.
  if (nfa_size(tree.nodes, tree.root) >= max_nfa) {
    return Status::invalid_argument("regex: the pattern needs more than " + std::to_string(max_nfa) +
                                    " NFA states (repetitions expanded); the limit (max_dfa_states) is " +
                                    std::to_string(limits.max_dfa_states) + ", which allows " +
                                    std::to_string(kNfaStatesPerDfaState) + " NFA states each");
  }
  Nfa nfa;
  const uint32_t match = nfa.add({Nfa::Kind::Match, 0, 0, 0, 0, 0});
  const uint32_t start = nfa.build(tree.nodes, tree.root, match);
  return Determinizer(nfa, limits).run(start);
}

}  // namespace cellserve::engine::grammar
