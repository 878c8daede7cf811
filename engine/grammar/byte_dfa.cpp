// ByteDfa: minimisation (trim, Hopcroft, coarsest byte classes), products and distances.
#include "engine/grammar/byte_dfa.h"

#include <algorithm>
#include <map>
#include <queue>
#include <string>
#include <unordered_map>
#include <utility>

#include "engine/grammar/schema.h"

namespace cellserve::engine::grammar {
namespace {

// The distinct classes some byte maps to, in order of their first byte. Classes no byte maps to
// are never taken, whatever their transitions say.
std::vector<uint32_t> used_classes(const ByteDfa& dfa) {
  std::vector<uint8_t> seen(dfa.n_classes, 0);
  std::vector<uint32_t> used;
  for (int b = 0; b < 256; ++b) {
    const uint32_t c = dfa.byte_class[b];
    if (!seen[c]) {
      seen[c] = 1;
      used.push_back(c);
    }
  }
  return used;
}

// The states reachable from raw.start that can reach an accepting state.
std::vector<uint8_t> live_states(const ByteDfa& raw, const std::vector<uint32_t>& classes) {
  const uint32_t n = raw.states(), k = raw.n_classes;
  std::vector<uint8_t> reachable(n, 0);
  std::vector<uint32_t> queue = {raw.start};
  reachable[raw.start] = 1;
  for (size_t i = 0; i < queue.size(); ++i) {
    for (uint32_t c : classes) {
      const uint32_t t = raw.next[static_cast<size_t>(queue[i]) * k + c];
      if (!reachable[t]) {
        reachable[t] = 1;
        queue.push_back(t);
      }
    }
  }
  // Predecessor lists among the reachable states (compressed rows), then a backward search.
  std::vector<uint32_t> begin(n + 1, 0);
  for (uint32_t s : queue) {
    for (uint32_t c : classes) ++begin[raw.next[static_cast<size_t>(s) * k + c] + 1];
  }
  for (uint32_t i = 0; i < n; ++i) begin[i + 1] += begin[i];
  std::vector<uint32_t> fill(begin.begin(), begin.end() - 1), preds(begin[n]);
  for (uint32_t s : queue) {
    for (uint32_t c : classes) preds[fill[raw.next[static_cast<size_t>(s) * k + c]]++] = s;
  }
  std::vector<uint8_t> live(n, 0);
  std::vector<uint32_t> back;
  for (uint32_t s : queue) {
    if (raw.accepting[s]) {
      live[s] = 1;
      back.push_back(s);
    }
  }
  for (size_t i = 0; i < back.size(); ++i) {
    for (uint32_t j = begin[back[i]]; j < begin[back[i] + 1]; ++j) {
      if (!live[preds[j]]) {
        live[preds[j]] = 1;
        back.push_back(preds[j]);
      }
    }
  }
  return live;
}

// Hopcroft's partition refinement on a complete automaton of n states over k classes: returns
// each state's block; two states share a block exactly when they accept the same strings.
// A block that splits puts its smaller part on the worklist, so each state enters a splitter
// O(log n) times.
std::vector<uint32_t> equivalence_blocks(uint32_t n, uint32_t k, const std::vector<uint32_t>& next,
                                         const std::vector<uint8_t>& accepting) {
  // preds of (class c, target t): preds[begin[c * n + t] .. begin[c * n + t + 1]).
  const size_t cells = static_cast<size_t>(k) * n;
  std::vector<uint32_t> begin(cells + 1, 0);
  for (uint32_t s = 0; s < n; ++s) {
    for (uint32_t c = 0; c < k; ++c) ++begin[static_cast<size_t>(c) * n + next[static_cast<size_t>(s) * k + c] + 1];
  }
  for (size_t i = 0; i < cells; ++i) begin[i + 1] += begin[i];
  std::vector<uint32_t> fill(begin.begin(), begin.end() - 1), preds(cells);
  for (uint32_t s = 0; s < n; ++s) {
    for (uint32_t c = 0; c < k; ++c)
      preds[fill[static_cast<size_t>(c) * n + next[static_cast<size_t>(s) * k + c]]++] = s;
  }

  // Blocks are ranges [first, end) of `elems`; the marked members of a block are moved to its
  // front, so marked[b] members from first[b] on are marked.
  std::vector<uint32_t> elems, pos(n), block(n, 0), first, end, marked, work, splitter, touched;
  std::vector<uint8_t> in_work;
  for (int pass = 0; pass < 2; ++pass) {
    const size_t from = elems.size();
    for (uint32_t s = 0; s < n; ++s) {
      if ((accepting[s] != 0) == (pass == 0)) elems.push_back(s);
    }
    if (elems.size() == from) continue;
    const uint32_t b = static_cast<uint32_t>(first.size());
    for (size_t i = from; i < elems.size(); ++i) block[elems[i]] = b;
    first.push_back(static_cast<uint32_t>(from));
    end.push_back(static_cast<uint32_t>(elems.size()));
    marked.push_back(0);
    in_work.push_back(1);
    work.push_back(b);
  }
  for (uint32_t i = 0; i < n; ++i) pos[elems[i]] = i;

  while (!work.empty()) {
    const uint32_t split_by = work.back();
    work.pop_back();
    in_work[split_by] = 0;
    splitter.assign(elems.begin() + first[split_by], elems.begin() + end[split_by]);
    for (uint32_t c = 0; c < k; ++c) {
      touched.clear();
      for (uint32_t t : splitter) {
        const size_t cell = static_cast<size_t>(c) * n + t;
        for (uint32_t j = begin[cell]; j < begin[cell + 1]; ++j) {
          const uint32_t p = preds[j], b = block[p];
          const uint32_t m = first[b] + marked[b];
          if (pos[p] < m) continue;  // already marked
          if (marked[b] == 0) touched.push_back(b);
          const uint32_t q = elems[m];
          elems[m] = p;
          elems[pos[p]] = q;
          pos[q] = pos[p];
          pos[p] = m;
          ++marked[b];
        }
      }
      for (uint32_t b : touched) {
        const uint32_t n_marked = marked[b], size = end[b] - first[b];
        marked[b] = 0;
        if (n_marked == size) continue;
        const uint32_t mid = first[b] + n_marked, nb = static_cast<uint32_t>(first.size());
        if (n_marked <= size - n_marked) {  // the marked part is the smaller: it becomes the new block
          first.push_back(first[b]);
          end.push_back(mid);
          first[b] = mid;
        } else {
          first.push_back(mid);
          end.push_back(end[b]);
          end[b] = mid;
        }
        marked.push_back(0);
        // If b was waiting, both halves must wait; if not, the smaller half suffices.
        in_work.push_back(1);
        work.push_back(nb);
        for (uint32_t j = first[nb]; j < end[nb]; ++j) block[elems[j]] = nb;
      }
    }
  }
  return block;
}

}  // namespace

bool ByteDfa::accepts(std::string_view bytes) const {
  uint32_t s = start;
  for (char ch : bytes) {
    s = step(s, static_cast<uint8_t>(ch));
    if (s == kDead) return false;
  }
  return accepting[s] != 0;
}

ByteDfa empty_dfa() {
  ByteDfa d;
  d.next = {ByteDfa::kDead};
  d.accepting = {0};
  return d;
}

ByteDfa raw_dfa(const std::array<uint8_t, 256>& byte_class, uint32_t n_classes) {
  ByteDfa d;
  d.byte_class = byte_class;
  d.n_classes = n_classes;
  d.next.assign(n_classes, ByteDfa::kDead);
  d.accepting = {0};
  return d;
}

uint32_t add_state(ByteDfa& dfa, bool accepting) {
  const uint32_t s = dfa.states();
  dfa.next.resize(dfa.next.size() + dfa.n_classes, ByteDfa::kDead);
  dfa.accepting.push_back(accepting ? 1 : 0);
  return s;
}

ByteDfa minimize(const ByteDfa& raw) {
  const std::vector<uint32_t> classes = used_classes(raw);
  const std::vector<uint8_t> live = live_states(raw, classes);
  if (!live[raw.start]) return empty_dfa();

  // Compact: kDead first, then the live states; the used classes only.
  const uint32_t k = static_cast<uint32_t>(classes.size()), raw_k = raw.n_classes;
  std::vector<uint32_t> id(raw.states(), ByteDfa::kDead);
  uint32_t n = 1;
  for (uint32_t s = 0; s < raw.states(); ++s) {
    if (live[s]) id[s] = n++;
  }
  std::vector<uint32_t> next(static_cast<size_t>(n) * k, ByteDfa::kDead);
  std::vector<uint8_t> accepting(n, 0);
  for (uint32_t s = 0; s < raw.states(); ++s) {
    if (!live[s]) continue;
    accepting[id[s]] = raw.accepting[s];
    for (uint32_t c = 0; c < k; ++c) {
      next[static_cast<size_t>(id[s]) * k + c] = id[raw.next[static_cast<size_t>(s) * raw_k + classes[c]]];
    }
  }

  // Merge equivalent states; number the blocks breadth-first from the start, kDead's block 0.
  const std::vector<uint32_t> block = equivalence_blocks(n, k, next, accepting);
  const uint32_t n_blocks = *std::max_element(block.begin(), block.end()) + 1;
  std::vector<uint32_t> member(n_blocks, 0), out_id(n_blocks, UINT32_MAX);
  for (uint32_t s = n; s-- > 0;) member[block[s]] = s;
  out_id[block[ByteDfa::kDead]] = ByteDfa::kDead;
  std::vector<uint32_t> order = {block[ByteDfa::kDead], block[id[raw.start]]};
  out_id[order[1]] = 1;
  for (size_t i = 1; i < order.size(); ++i) {
    for (uint32_t c = 0; c < k; ++c) {
      const uint32_t t = block[next[static_cast<size_t>(member[order[i]]) * k + c]];
      if (out_id[t] == UINT32_MAX) {
        out_id[t] = static_cast<uint32_t>(order.size());
        order.push_back(t);
      }
    }
  }
  const uint32_t states = static_cast<uint32_t>(order.size());
  std::vector<uint32_t> table(static_cast<size_t>(states) * k, ByteDfa::kDead);
  std::vector<uint8_t> out_accepting(states, 0);
  for (uint32_t i = 1; i < states; ++i) {
    const uint32_t s = member[order[i]];
    out_accepting[i] = accepting[s];
    for (uint32_t c = 0; c < k; ++c)
      table[static_cast<size_t>(i) * k + c] = out_id[block[next[static_cast<size_t>(s) * k + c]]];
  }

  // Coarsest classes: classes whose columns are equal merge, numbered by their first byte.
  std::vector<uint32_t> compact_class(raw_k, 0);
  for (uint32_t c = 0; c < k; ++c) compact_class[classes[c]] = c;
  std::map<std::vector<uint32_t>, uint32_t> by_column;
  std::vector<uint32_t> merged(k, UINT32_MAX), representative;
  std::vector<uint32_t> column(states);
  ByteDfa out;
  for (int b = 0; b < 256; ++b) {
    const uint32_t c = compact_class[raw.byte_class[b]];
    if (merged[c] == UINT32_MAX) {
      for (uint32_t s = 0; s < states; ++s) column[s] = table[static_cast<size_t>(s) * k + c];
      auto [it, inserted] = by_column.emplace(column, static_cast<uint32_t>(representative.size()));
      if (inserted) representative.push_back(c);
      merged[c] = it->second;
    }
    out.byte_class[b] = static_cast<uint8_t>(merged[c]);
  }
  out.n_classes = static_cast<uint32_t>(representative.size());
  out.next.resize(static_cast<size_t>(states) * out.n_classes);
  for (uint32_t s = 0; s < states; ++s) {
    for (uint32_t c = 0; c < out.n_classes; ++c) {
      out.next[static_cast<size_t>(s) * out.n_classes + c] = table[static_cast<size_t>(s) * k + representative[c]];
    }
  }
  out.accepting = std::move(out_accepting);
  out.start = 1;
  return out;
}

Result<ByteDfa> intersect(const ByteDfa& a, const ByteDfa& b, const GrammarLimits& limits) {
  if (a.start == ByteDfa::kDead || b.start == ByteDfa::kDead) return empty_dfa();
  // A joint class for each pair of classes some byte has.
  std::array<uint8_t, 256> byte_class{};
  std::vector<uint32_t> pair_class(static_cast<size_t>(a.n_classes) * b.n_classes, UINT32_MAX);
  std::vector<uint32_t> class_a, class_b;
  for (int x = 0; x < 256; ++x) {
    const size_t key = static_cast<size_t>(a.byte_class[x]) * b.n_classes + b.byte_class[x];
    if (pair_class[key] == UINT32_MAX) {
      pair_class[key] = static_cast<uint32_t>(class_a.size());
      class_a.push_back(a.byte_class[x]);
      class_b.push_back(b.byte_class[x]);
    }
    byte_class[x] = static_cast<uint8_t>(pair_class[key]);
  }
  const uint32_t k = static_cast<uint32_t>(class_a.size());
  ByteDfa raw = raw_dfa(byte_class, k);
  std::unordered_map<uint64_t, uint32_t> ids;
  std::vector<std::pair<uint32_t, uint32_t>> pairs = {{ByteDfa::kDead, ByteDfa::kDead}};
  auto state_of = [&](uint32_t x, uint32_t y) -> uint32_t {
    if (x == ByteDfa::kDead || y == ByteDfa::kDead) return ByteDfa::kDead;
    auto [it, inserted] = ids.emplace((static_cast<uint64_t>(x) << 32) | y, 0);
    if (inserted) {
      it->second = add_state(raw, a.accepting[x] && b.accepting[y]);
      pairs.emplace_back(x, y);
    }
    return it->second;
  };
  raw.start = state_of(a.start, b.start);
  for (uint32_t s = 1; s < raw.states(); ++s) {
    const auto [x, y] = pairs[s];
    for (uint32_t c = 0; c < k; ++c) {
      const uint32_t t = state_of(a.next[static_cast<size_t>(x) * a.n_classes + class_a[c]],
                                  b.next[static_cast<size_t>(y) * b.n_classes + class_b[c]]);
      if (raw.states() - 1 > limits.max_dfa_states) return dfa_states_error("the intersection", limits);
      set_transition(raw, s, c, t);
    }
  }
  return minimize(raw);
}

std::vector<int64_t> accept_distances(const ByteDfa& dfa, const std::array<int64_t, 256>& byte_cost) {
  const uint32_t n = dfa.states(), k = dfa.n_classes;
  std::vector<int64_t> class_cost(k, kInf);
  for (int b = 0; b < 256; ++b) class_cost[dfa.byte_class[b]] = std::min(class_cost[dfa.byte_class[b]], byte_cost[b]);
  // Reversed edges t <- s labelled with the cheapest byte of their class.
  std::vector<uint32_t> begin(n + 1, 0);
  for (uint32_t s = 1; s < n; ++s) {
    for (uint32_t c = 0; c < k; ++c) {
      if (class_cost[c] < kInf) ++begin[dfa.next[static_cast<size_t>(s) * k + c] + 1];
    }
  }
  for (uint32_t i = 0; i < n; ++i) begin[i + 1] += begin[i];
  std::vector<uint32_t> fill(begin.begin(), begin.end() - 1), from(begin[n]);
  std::vector<int64_t> cost(begin[n]);
  for (uint32_t s = 1; s < n; ++s) {
    for (uint32_t c = 0; c < k; ++c) {
      if (class_cost[c] >= kInf) continue;
      const uint32_t j = fill[dfa.next[static_cast<size_t>(s) * k + c]]++;
      from[j] = s;
      cost[j] = class_cost[c];
    }
  }
  std::vector<int64_t> dist(n, kInf);
  using Entry = std::pair<int64_t, uint32_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
  for (uint32_t s = 1; s < n; ++s) {
    if (dfa.accepting[s]) {
      dist[s] = 0;
      queue.emplace(0, s);
    }
  }
  while (!queue.empty()) {
    const auto [d, t] = queue.top();
    queue.pop();
    if (d > dist[t]) continue;
    for (uint32_t j = begin[t]; j < begin[t + 1]; ++j) {
      const int64_t via = add_cost(d, cost[j]);
      if (via < dist[from[j]]) {
        dist[from[j]] = via;
        queue.emplace(via, from[j]);
      }
    }
  }
  dist[ByteDfa::kDead] = kInf;
  return dist;
}

int64_t max_growth(const ByteDfa& dfa, const std::vector<int64_t>& dist) {
  int64_t growth = 0;
  for (uint32_t s = 1; s < dfa.states(); ++s) {
    if (dist[s] >= kInf) continue;
    for (uint32_t c = 0; c < dfa.n_classes; ++c) {
      const uint32_t t = dfa.next[static_cast<size_t>(s) * dfa.n_classes + c];
      if (t != ByteDfa::kDead && dist[t] < kInf) growth = std::max(growth, dist[t] - dist[s]);
    }
  }
  return growth;
}

Status dfa_states_error(std::string_view what, const GrammarLimits& limits) {
  const std::string n = std::to_string(limits.max_dfa_states);
  return Status::invalid_argument(std::string(what) + " needs more than " + n +
                                  " automaton states; the limit (max_dfa_states) is " + n);
}

}  // namespace cellserve::engine::grammar
