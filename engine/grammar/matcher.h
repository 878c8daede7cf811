// Internal to engine/grammar: a byte-level matcher for JSON text that validates against a
// compiled schema (schema.h).
//
// A matcher state is a set of threads; each thread is a stack of POD Frames (one per open JSON
// value, the Root at the bottom). anyOf branches that share a first byte fork threads; a thread
// dies when a byte cannot continue it. Stepping copies the set into a second buffer, so a caller
// walking the vocabulary keeps one buffer per depth and never allocates once they have grown.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/grammar/schema.h"

namespace cellserve::engine::grammar {

// Rule: a GBNF grammar position (gbnf_matcher.h). Regex: a regex document (SchemaNode::regex).
enum class FrameKind : uint8_t { Root, Object, Key, Array, String, Number, Literal, Rule, Regex };

// Inside a string: a partial UTF-8 sequence or escape.
struct StringState {
  uint8_t utf8_left = 0;                   // continuation bytes still expected
  uint8_t next_lo = 0x80, next_hi = 0xBF;  // the range the next continuation byte must fall in
  uint8_t escape = 0;     // 0 none, 1 after '\', 2-5 \u digits, 6 '\' of a low surrogate, 7 its 'u', 8-11 its digits
  uint8_t surrogate = 0;  // the \u escape being read is a high surrogate (a low one must follow)
  uint16_t value = 0;     // \u digits so far
  bool operator==(const StringState&) const = default;
};

struct Frame {
  const SchemaNode* node = nullptr;
  // Root: unused. Object: a = next listed property, b = entries so far (listed ones in the low
  // 16 bits, free ones above), c = the property whose value is being read (kFreeKey for an
  // additional one). Key: a = bytes read (opening quote included), [b, c) = the range of
  // node->sorted_props whose key_json starts with them. Array: a = items started.
  // String: a = code points, or with node->string_automaton b = its state. Number: a = exponent
  // digits, or with node->number_automaton b = its state. Regex: a = the automaton's state. Literal: a = bytes read,
  // [b, c) = the range of node->literals. Rule: node = the grammar's root, a = the next element of the current
  // alternative in node->grammar (frames below the top: where to return), b and c unused (0).
  uint32_t a = 0, b = 0, c = 0;
  FrameKind kind = FrameKind::Root;
  uint8_t phase = 0;  // per kind (matcher.cpp); Number: the number-grammar state
  uint8_t ws = 0;     // whitespace bytes in the current gap
  uint8_t flag = 0;   // Key: a free key is still possible. Number: integer only.
  StringState str;    // String, and Key for free keys
  bool operator==(const Frame&) const = default;
};

inline constexpr uint32_t kFreeKey = 0xffffffffu;
// The longest whitespace run allowed between two tokens of the JSON grammar.
inline constexpr uint8_t kMaxWhitespace = 16;

using Stack = std::vector<Frame>;

class ThreadSet {
 public:
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  const Stack& operator[](size_t i) const { return threads_[i]; }
  Stack& operator[](size_t i) { return threads_[i]; }
  void clear() { n_ = 0; }
  // Appends a copy of `s` (which must not live in this set) and returns its index.
  size_t push(const Stack& s);
  void pop_back() { --n_; }
  void assign(const ThreadSet& other);
  // Removes threads equal to an earlier one (order kept). Linear in the frames held, expected:
  // threads are grouped by a hash before any two stacks are compared.
  void dedup();

 private:
  std::vector<Stack> threads_;  // [0, n_) are live; the rest keep their capacity for reuse
  size_t n_ = 0;
};

// Counts matcher work against the mask-time limits of GrammarLimits. Stepping a thread over a
// byte, or costing it, is kStepCost units plus one per frame of its stack plus one per listed
// key or enum value looked at; so the time of a mask is about proportional to its units (dedup
// is linear too). Measured on the project machine: 1.3-2.3 ns a unit.
struct WorkMeter {
  // A step's fixed cost, in frames copied: a thread of 2 frames steps in about 20 ns, one of 32
  // in about 50 ns, so 1 ns-ish per frame and 16 frames' worth per step.
  static constexpr size_t kStepCost = 16;

  int64_t work = 0;
  int64_t max_work = INT64_MAX;
  size_t max_threads = SIZE_MAX;
  bool over_work = false;     // work passed max_work
  bool over_threads = false;  // a state would have held more than max_threads threads
  bool exhausted() const { return over_work || over_threads; }
  // Adds `units`; false once the budget is spent.
  bool charge(size_t units) {
    work += static_cast<int64_t>(units);
    over_work |= work > max_work;
    return !exhausted();
  }
};

// The state before any byte: one thread at the root.
void initial_state(const SchemaNode& root, ThreadSet& out);

// out = the threads of `in` advanced over byte `b` (empty: `b` cannot follow). `in` != `out`.
// With a meter, charges the frames written and stops (leaving `out` empty) as soon as the meter
// is exhausted, so one call costs at most the remaining budget plus one stack.
void step(const ThreadSet& in, uint8_t b, ThreadSet& out, WorkMeter* meter = nullptr);

// Steps over every byte of `bytes`, using `scratch`; false (and `state` unchanged) when some byte
// cannot follow.
bool step_bytes(ThreadSet& state, std::string_view bytes, ThreadSet& scratch);

// The fewest bytes that complete the document (kInf: never; 0: complete now). With a meter,
// charges the frames read.
int64_t completion_cost(const ThreadSet& state, WorkMeter* meter = nullptr);

}  // namespace cellserve::engine::grammar
