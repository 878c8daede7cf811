// Deterministic byte automata: the compiled form of regexes (regex_compiler.h), number bounds
// (number_dfa.h) and string lengths (string_dfa.h), which the JSON matcher steps byte by byte.
//
// Every ByteDfa a public function returns is canonical:
//  * trimmed: every state other than kDead can reach an accepting state (the states that cannot
//    are merged into kDead), so "the next state is not kDead" means "this prefix can still be
//    completed";
//  * minimal (Hopcroft's algorithm), its states numbered breadth-first from `start`;
//  * its byte classes as coarse as possible: two bytes share a class exactly when every state
//    sends them to the same state.
// The empty language is a valid result (start == kDead); callers decide whether that is an error.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "engine/grammar/grammar_limits.h"

namespace cellserve::engine::grammar {

struct ByteDfa {
  static constexpr uint32_t kDead = 0;  // state 0: not accepting, every transition to itself

  std::array<uint8_t, 256> byte_class{};  // byte -> equivalence class
  uint32_t n_classes = 1;
  std::vector<uint32_t> next;      // [states() * n_classes]
  std::vector<uint8_t> accepting;  // [states()]
  uint32_t start = kDead;

  uint32_t states() const { return static_cast<uint32_t>(accepting.size()); }
  uint32_t step(uint32_t s, uint8_t b) const { return next[s * n_classes + byte_class[b]]; }
  // The whole of `bytes` is in the language.
  bool accepts(std::string_view bytes) const;
};

// The automaton of the empty language: kDead alone, one byte class.
ByteDfa empty_dfa();

// For building an automaton by hand before minimize(): kDead alone, with the given byte classes
// (which need not be coarse; every entry must be < n_classes).
ByteDfa raw_dfa(const std::array<uint8_t, 256>& byte_class, uint32_t n_classes);
// Appends a state whose every transition goes to kDead; returns its number.
uint32_t add_state(ByteDfa& dfa, bool accepting);
inline void set_transition(ByteDfa& dfa, uint32_t from, uint32_t cls, uint32_t to) {
  dfa.next[from * dfa.n_classes + cls] = to;
}

// Any automaton in ByteDfa's layout (unreachable states, states that cannot accept, equivalent
// states and byte classes finer than needed are all allowed; state 0 need not be a dead state)
// -> the canonical automaton of the same language. O(classes * states * log states).
ByteDfa minimize(const ByteDfa& raw);

// The automaton of the strings both accept: the product of the pairs reachable from the start
// pair, then minimised. InvalidArgument naming max_dfa_states when the product would have more
// than limits.max_dfa_states states (kDead not counted).
Result<ByteDfa> intersect(const ByteDfa& a, const ByteDfa& b, const GrammarLimits& limits);

// For each state, the least total byte_cost of a byte string that leads from it to an accepting
// state: 0 for accepting states, kInf (schema.h) for kDead and for states where only bytes of cost
// kInf lead to acceptance. Costs must be >= 0. Dijkstra on the reversed transition graph.
std::vector<int64_t> accept_distances(const ByteDfa& dfa, const std::array<int64_t, 256>& byte_cost);

// The most one byte can raise the distance: the maximum of dist[step(s, b)] - dist[s] over states
// s and bytes b where both s and step(s, b) are live (not kDead, distance below kInf); 0 at least.
int64_t max_growth(const ByteDfa& dfa, const std::vector<int64_t>& dist);

// InvalidArgument for an automaton beyond limits.max_dfa_states: "<what> needs more than N
// automaton states; the limit (max_dfa_states) is N".
Status dfa_states_error(std::string_view what, const GrammarLimits& limits);

}  // namespace cellserve::engine::grammar
