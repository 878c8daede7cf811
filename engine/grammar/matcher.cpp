// The byte-level JSON + schema matcher (matcher.h) and its completion costs.
#include "engine/grammar/matcher.h"

#include <algorithm>

#include "engine/grammar/gbnf_matcher.h"

namespace cellserve::engine::grammar {
namespace {

enum RootPhase : uint8_t { kRootStart, kRootDone };
// An object frame is in kObjKey while a Key frame above it reads the key.
enum ObjectPhase : uint8_t { kObjOpen, kObjKey, kObjKeyDone, kObjColon, kObjAfterValue, kObjComma };
enum ArrayPhase : uint8_t { kArrOpen, kArrAfterValue, kArrComma };
// RFC 8259 number grammar states (after the byte that led there).
enum NumberPhase : uint8_t { kNumStart, kNumMinus, kNumZero, kNumInt, kNumDot, kNumFrac, kNumE, kNumESign, kNumExp };

// Exponents have at most this many digits: Boost.JSON (and others) reject exponents that
// overflow an int, and nothing useful needs more than 1e999.
constexpr uint32_t kMaxExponentDigits = 3;

// Grammar: the top frame is a GBNF Rule frame (a JSON value inside a grammar has closed lazily);
// the byte goes to the grammar, which may fork (step_grammar).
enum class Outcome { Dead, Ok, StartValue, Grammar };
struct StepResult {
  Outcome outcome;
  const SchemaNode* start = nullptr;  // StartValue: the schema of the value the byte begins
};
constexpr StepResult kDead{Outcome::Dead};
constexpr StepResult kOk{Outcome::Ok};

bool is_ws(uint8_t b) { return b == ' ' || b == '\n' || b == '\t' || b == '\r'; }
bool is_digit(uint8_t b) { return b >= '0' && b <= '9'; }
int hex_value(uint8_t b) {
  if (is_digit(b)) return b - '0';
  if (b >= 'a' && b <= 'f') return b - 'a' + 10;
  if (b >= 'A' && b <= 'F') return b - 'A' + 10;
  return -1;
}

// Narrows [lo, hi), a range of strings sorted bytewise that share their first `pos` bytes, to those
// whose byte `pos` is `b`. Entries of length `pos` sort first. False (range unchanged) if none.
template <typename Get>
bool narrow(const Get& get, uint32_t pos, uint8_t b, uint32_t& lo, uint32_t& hi) {
  auto key = [&](uint32_t i) -> int {
    const std::string& s = get(i);
    return s.size() > pos ? static_cast<uint8_t>(s[pos]) : -1;
  };
  uint32_t l = lo, h = hi;
  while (l < h) {
    const uint32_t m = l + (h - l) / 2;
    if (key(m) < b)
      l = m + 1;
    else
      h = m;
  }
  const uint32_t first = l;
  h = hi;
  while (l < h) {
    const uint32_t m = l + (h - l) / 2;
    if (key(m) <= b)
      l = m + 1;
    else
      h = m;
  }
  if (first == l) return false;
  lo = first;
  hi = l;
  return true;
}

enum class StrStep { Reject, Char, Continue, Close };

// One byte of a JSON string body: UTF-8 validated as it comes (RFC 3629 ranges), escapes per
// RFC 8259 with \u surrogates paired (Boost.JSON rejects lone ones).
StrStep string_step(StringState& s, uint8_t b, bool allow_escapes) {
  if (s.utf8_left > 0) {
    if (b < s.next_lo || b > s.next_hi) return StrStep::Reject;
    --s.utf8_left;
    s.next_lo = 0x80;
    s.next_hi = 0xBF;
    return StrStep::Continue;
  }
  if (s.escape == 1) {
    if (b == 'u') {
      s.escape = 2;
      s.value = 0;
      return StrStep::Continue;
    }
    if (b == '"' || b == '\\' || b == '/' || b == 'b' || b == 'f' || b == 'n' || b == 'r' || b == 't') {
      s.escape = 0;
      return StrStep::Continue;
    }
    return StrStep::Reject;
  }
  if (s.escape >= 2 && s.escape <= 5) {  // \uXXXX
    const int h = hex_value(b);
    if (h < 0) return StrStep::Reject;
    if (s.escape == 3 && s.value == 0xD) {
      if (h >= 0xC) return StrStep::Reject;  // a low surrogate without a high one
      if (h >= 0x8) s.surrogate = 1;
    }
    s.value = static_cast<uint16_t>(s.value * 16 + h);
    s.escape = s.escape == 5 ? (s.surrogate ? 6 : 0) : s.escape + 1;
    return StrStep::Continue;
  }
  if (s.escape == 6 || s.escape == 7) {  // the "\u" of the low surrogate
    if (b != (s.escape == 6 ? '\\' : 'u')) return StrStep::Reject;
    ++s.escape;
    return StrStep::Continue;
  }
  if (s.escape >= 8) {  // \uDC00-\uDFFF
    const int h = hex_value(b);
    if (h < 0 || (s.escape == 8 && h != 0xD) || (s.escape == 9 && h < 0xC)) return StrStep::Reject;
    s.escape = s.escape == 11 ? 0 : s.escape + 1;
    if (s.escape == 0) s.surrogate = 0;
    return StrStep::Continue;
  }
  if (b == '"') return StrStep::Close;
  if (b == '\\') {
    if (!allow_escapes) return StrStep::Reject;
    s.escape = 1;
    return StrStep::Char;
  }
  if (b < 0x20) return StrStep::Reject;
  if (b < 0x80) return StrStep::Char;
  if (b >= 0xC2 && b <= 0xDF) {
    s.utf8_left = 1;
  } else if (b >= 0xE0 && b <= 0xEF) {
    s.utf8_left = 2;
    if (b == 0xE0) s.next_lo = 0xA0;  // no overlong forms
    if (b == 0xED) s.next_hi = 0x9F;  // no surrogates
  } else if (b >= 0xF0 && b <= 0xF4) {
    s.utf8_left = 3;
    if (b == 0xF0) s.next_lo = 0x90;
    if (b == 0xF4) s.next_hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return StrStep::Reject;
  }
  return StrStep::Char;
}

// Bytes still needed to finish the current character or escape.
int64_t string_pending(const StringState& s) {
  if (s.utf8_left > 0) return s.utf8_left;
  if (s.escape == 1) return 1;
  if (s.escape >= 2 && s.escape <= 5) return (6 - s.escape) + (s.surrogate ? 6 : 0);
  if (s.escape >= 6) return 12 - s.escape;
  return 0;
}

bool number_accepting(uint8_t p) { return p == kNumZero || p == kNumInt || p == kNumFrac || p == kNumExp; }

// The number state after `b`, or kNumStart when `b` cannot continue the number.
uint8_t number_next(uint8_t p, uint8_t b, bool integer) {
  const bool digit = is_digit(b);
  switch (p) {
    case kNumStart:
      if (b == '-') return kNumMinus;
      [[fallthrough]];
    case kNumMinus:
      return b == '0' ? kNumZero : (digit ? kNumInt : kNumStart);
    case kNumInt:
      if (digit) return kNumInt;
      [[fallthrough]];
    case kNumZero:
      if (integer) return kNumStart;
      return b == '.' ? kNumDot : ((b == 'e' || b == 'E') ? kNumE : kNumStart);
    case kNumDot:
      return digit ? kNumFrac : kNumStart;
    case kNumFrac:
      return digit ? kNumFrac : ((b == 'e' || b == 'E') ? kNumE : kNumStart);
    case kNumE:
      if (b == '+' || b == '-') return kNumESign;
      [[fallthrough]];
    case kNumESign:
    case kNumExp:
      return digit ? kNumExp : kNumStart;
    default:
      return kNumStart;
  }
}

const std::string& key_at(const SchemaNode& n, uint32_t sorted_index) {
  return n.props[n.sorted_props[sorted_index]].key_json;
}

using Rest = SchemaNode::Rest;

// An Object frame's entry counts, packed in its `b`: listed entries in the low 16 bits (an object
// lists fewer properties than a schema's size limit allows), free entries above (saturating).
uint32_t listed_entries(const Frame& obj) { return obj.b & 0xFFFFu; }
uint32_t free_entries(const Frame& obj) { return obj.b >> 16; }
void count_entry(Frame& obj, bool free) {
  if (!free) {
    ++obj.b;
  } else if (free_entries(obj) < 0xFFFFu) {
    obj.b += 1u << 16;
  }
}

// Whether listed property `prop` may be the next key of object `obj` (its next property obj.a):
// properties come in declared order, the first required one may not be skipped, and
// minProperties / maxProperties must stay reachable after it.
bool in_window(const SchemaNode& n, const Frame& obj, uint32_t prop) {
  const uint32_t a = obj.a;
  return prop >= a && prop <= n.first_req[a] && prop < n.props.size() && n.props[prop].value->min_cost < kInf &&
         n.object_rest(prop + 1, listed_entries(obj) + 1, free_entries(obj), Rest::AfterValue) < kInf;
}

// Whether a free (additional) key may come next.
bool free_key_possible(const SchemaNode& n, const Frame& obj) {
  return n.free_allowed(obj.a) && n.object_rest(static_cast<uint32_t>(n.props.size()), listed_entries(obj),
                                                free_entries(obj) + 1, Rest::AfterValue) < kInf;
}

// Whether any key may come next. Of the listed ones only two need a look: the first that can be
// produced leaves the most optional entries for minProperties, and the first required one the
// fewest required entries for maxProperties; any other is possible only if one of them is.
bool key_possible(const SchemaNode& n, const Frame& obj) {
  return free_key_possible(n, obj) || in_window(n, obj, n.next_viable[obj.a]) || in_window(n, obj, n.first_req[obj.a]);
}

// minProperties counts the listed entries and at most one free one (schema.h).
bool enough_entries(const SchemaNode& n, const Frame& obj) {
  return listed_entries(obj) + (free_entries(obj) > 0 ? 1u : 0u) >= n.min_props;
}

int64_t rest_of(const SchemaNode& n, const Frame& obj, Rest where) {
  return n.object_rest(obj.a, listed_entries(obj), free_entries(obj), where);
}

StepResult start_key(Stack& s) {
  Frame& parent = s.back();
  if (!key_possible(*parent.node, parent)) return kDead;
  parent.phase = kObjKey;
  Frame k;
  k.kind = FrameKind::Key;
  k.node = parent.node;
  k.a = 1;
  k.b = 0;
  k.c = static_cast<uint32_t>(parent.node->props.size());
  k.flag = free_key_possible(*parent.node, parent);
  s.push_back(k);
  return kOk;
}

StepResult step_object(Stack& s, uint8_t b) {
  Frame& f = s.back();
  const SchemaNode& n = *f.node;
  if (is_ws(b)) {
    if (f.ws >= kMaxWhitespace) return kDead;
    ++f.ws;
    return kOk;
  }
  f.ws = 0;
  switch (f.phase) {
    case kObjOpen:
    case kObjAfterValue:
      if (b == '}') {
        if (n.req_count[f.a] > 0 || !enough_entries(n, f)) return kDead;
        s.pop_back();
        return kOk;
      }
      if (f.phase == kObjOpen) return b == '"' ? start_key(s) : kDead;
      if (b != ',' || !key_possible(n, f)) return kDead;
      f.phase = kObjComma;
      return kOk;
    case kObjComma:
      return b == '"' ? start_key(s) : kDead;
    case kObjKeyDone:
      if (b != ':') return kDead;
      f.phase = kObjColon;
      return kOk;
    case kObjColon:
      f.phase = kObjAfterValue;
      return {Outcome::StartValue, f.c == kFreeKey ? n.additional : n.props[f.c].value};
    default:
      return kDead;
  }
}

// `scanned`: how many listed keys were looked at (work beyond the step itself).
StepResult step_key(Stack& s, uint8_t b, uint32_t& scanned) {
  Frame& k = s.back();
  Frame& parent = s[s.size() - 2];
  const SchemaNode& n = *k.node;
  auto get = [&](uint32_t i) -> const std::string& { return key_at(n, i); };
  uint32_t lo = k.b, hi = k.c;
  const bool listed_any = lo < hi && narrow(get, k.a, b, lo, hi);
  auto choose = [&](uint32_t prop) {
    parent.phase = kObjKeyDone;
    parent.c = prop;
    parent.a = prop == kFreeKey ? static_cast<uint32_t>(n.props.size()) : prop + 1;
    count_entry(parent, prop == kFreeKey);
    parent.ws = 0;
    s.pop_back();
    return kOk;
  };
  if (listed_any && key_at(n, lo).size() == k.a + 1) {  // `b` closes a listed key
    const uint32_t prop = n.sorted_props[lo];
    // A listed key out of order is neither that property nor a free key.
    return in_window(n, parent, prop) ? choose(prop) : kDead;
  }
  StringState st = k.str;
  bool free_alive = false;
  if (k.flag) {
    const StrStep r = string_step(st, b, /*allow_escapes=*/n.props.empty());
    if (r == StrStep::Close) return choose(kFreeKey);
    free_alive = r != StrStep::Reject;
  }
  bool listed_alive = false;
  for (uint32_t i = lo; listed_any && i < hi && !listed_alive; ++i, ++scanned)
    listed_alive = in_window(n, parent, n.sorted_props[i]);
  if (!listed_alive && !free_alive) return kDead;
  ++k.a;
  k.b = listed_any ? lo : 0;
  k.c = listed_any ? hi : 0;
  k.flag = free_alive;
  k.str = st;
  return kOk;
}

StepResult step_array(Stack& s, uint8_t b) {
  Frame& f = s.back();
  const SchemaNode& n = *f.node;
  if (is_ws(b)) {
    if (f.ws >= kMaxWhitespace) return kDead;
    ++f.ws;
    return kOk;
  }
  f.ws = 0;
  if (f.phase == kArrAfterValue) {
    if (b == ']') {
      if (f.a < n.min_items) return kDead;
      s.pop_back();
      return kOk;
    }
    const SchemaNode* next = n.item(f.a);
    if (b != ',' || next == nullptr || next->min_cost >= kInf) return kDead;
    f.phase = kArrComma;
    return kOk;
  }
  if (f.phase == kArrOpen && b == ']') {
    if (n.min_items > 0) return kDead;
    s.pop_back();
    return kOk;
  }
  const SchemaNode* item = n.item(f.a);
  if (item == nullptr || item->min_cost >= kInf) return kDead;
  ++f.a;
  f.phase = kArrAfterValue;
  return {Outcome::StartValue, item};
}

// The byte a short escape stands for (the byte after '\'), or -1 (\u, or no escape).
int short_escape(uint8_t e) {
  switch (e) {
    case '"':
    case '\\':
    case '/':
      return e;
    case 'b':
      return '\b';
    case 'f':
      return '\f';
    case 'n':
      return '\n';
    case 'r':
      return '\r';
    case 't':
      return '\t';
    default:
      return -1;
  }
}

// After a '\' in a string that follows an automaton in state `state`: the fewest bytes to its
// acceptance, the escape's own byte included (kInf: no escape can continue it).
int64_t escape_cost(const Automaton& a, uint32_t state) {
  int64_t best = kInf;
  for (uint8_t e : {'"', '\\', '/', 'b', 'f', 'n', 'r', 't'}) {
    const uint32_t next = a.dfa.step(state, static_cast<uint8_t>(short_escape(e)));
    if (a.live(next)) best = std::min(best, add_cost(1, a.dist[next]));
  }
  return best;
}

// A string that follows an automaton (pattern, format): Frame.b is its state, stepped over the
// decoded bytes. Short escapes feed the byte they stand for; \u escapes are not taken (the
// automaton's distances count none). A byte is taken only when acceptance stays reachable.
StepResult step_string_automaton(Stack& s, uint8_t b) {
  Frame& f = s.back();
  const Automaton& a = *f.node->string_automaton;
  auto advance = [&](uint8_t decoded) {
    const uint32_t next = a.dfa.step(f.b, decoded);
    if (!a.live(next)) return kDead;
    f.b = next;
    return kOk;
  };
  if (f.str.escape == 1) {
    const int decoded = short_escape(b);
    if (decoded < 0) return kDead;
    f.str.escape = 0;
    return advance(static_cast<uint8_t>(decoded));
  }
  if (f.str.utf8_left == 0 && b == '"') {
    if (!a.dfa.accepting[f.b]) return kDead;
    s.pop_back();
    return kOk;
  }
  if (f.str.utf8_left == 0 && b == '\\') {
    if (escape_cost(a, f.b) >= kInf) return kDead;
    f.str.escape = 1;
    return kOk;
  }
  if (string_step(f.str, b, /*allow_escapes=*/false) == StrStep::Reject) return kDead;
  return advance(b);
}

StepResult step_string(Stack& s, uint8_t b) {
  Frame& f = s.back();
  const SchemaNode& n = *f.node;
  if (n.string_automaton != nullptr) return step_string_automaton(s, b);
  const bool new_char = f.str.utf8_left == 0 && f.str.escape == 0 && b != '"';
  if (new_char && f.a >= n.max_length) return kDead;
  switch (string_step(f.str, b, /*allow_escapes=*/true)) {
    case StrStep::Reject:
      return kDead;
    case StrStep::Close:
      if (f.a < n.min_length) return kDead;
      s.pop_back();
      return kOk;
    case StrStep::Char:
      ++f.a;
      return kOk;
    case StrStep::Continue:
      return kOk;
  }
  return kDead;
}

// Advances one thread. Numbers and literals end lazily: a byte they cannot take closes them and
// goes to the enclosing value. `scanned` as for step_key.
StepResult step_thread(Stack& s, uint8_t b, uint32_t& scanned) {
  for (;;) {
    Frame& f = s.back();
    switch (f.kind) {
      case FrameKind::Root:
        if (f.phase != kRootStart) return kDead;
        f.phase = kRootDone;
        return {Outcome::StartValue, f.node};
      case FrameKind::Object:
        return step_object(s, b);
      case FrameKind::Key:
        return step_key(s, b, scanned);
      case FrameKind::Array:
        return step_array(s, b);
      case FrameKind::String:
        return step_string(s, b);
      case FrameKind::Number: {
        if (const Automaton* a = f.node->number_automaton.get()) {
          const uint32_t next = a->dfa.step(f.b, b);
          if (a->live(next)) {
            f.b = next;
            return kOk;
          }
          if (!a->dfa.accepting[f.b]) return kDead;
          s.pop_back();
          continue;
        }
        uint8_t next = number_next(f.phase, b, f.flag != 0);
        if (next == kNumExp) {  // f.a: exponent digits
          f.a = f.phase == kNumExp ? f.a + 1 : 1;
          if (f.a > kMaxExponentDigits) next = kNumStart;
        }
        if (next != kNumStart) {
          f.phase = next;
          return kOk;
        }
        if (!number_accepting(f.phase)) return kDead;
        s.pop_back();
        continue;
      }
      case FrameKind::Literal: {
        const auto& lits = f.node->literals;
        auto get = [&](uint32_t i) -> const std::string& { return lits[i]; };
        uint32_t lo = f.b, hi = f.c;
        if (narrow(get, f.a, b, lo, hi)) {
          ++f.a;
          f.b = lo;
          f.c = hi;
          return kOk;
        }
        if (lits[f.b].size() != f.a) return kDead;
        s.pop_back();
        continue;
      }
      case FrameKind::Rule:
        return {Outcome::Grammar};
      case FrameKind::Regex: {
        const Automaton& a = *f.node->regex;
        const uint32_t next = a.dfa.step(f.a, b);
        if (!a.live(next)) return kDead;
        f.a = next;
        return kOk;
      }
    }
    return kDead;
  }
}

// Pushes the frame for a value of `leaf` (a node without alternatives) that begins with `b`.
bool start_leaf(Stack& s, const SchemaNode* leaf, uint8_t b) {
  Frame f;
  f.node = leaf;
  if (!leaf->has_literals) {
    const uint8_t t = leaf->types;
    if (b == '{' && (t & type_bit::kObject) && leaf->object_min < kInf) {
      f.kind = FrameKind::Object;
      f.phase = kObjOpen;
    } else if (b == '[' && (t & type_bit::kArray) && leaf->array_min < kInf) {
      f.kind = FrameKind::Array;
      f.phase = kArrOpen;
    } else if (b == '"' && (t & type_bit::kString) && leaf->string_min < kInf) {
      f.kind = FrameKind::String;
      if (leaf->string_automaton != nullptr) f.b = leaf->string_automaton->dfa.start;
    } else if ((b == '-' || is_digit(b)) && (t & (type_bit::kInteger | type_bit::kNumber))) {
      f.kind = FrameKind::Number;
      if (const Automaton* a = leaf->number_automaton.get()) {
        f.b = a->dfa.step(a->dfa.start, b);
        if (!a->live(f.b)) return false;
      } else {
        f.flag = (t & type_bit::kNumber) ? 0 : 1;
        f.phase = number_next(kNumStart, b, f.flag != 0);
      }
    } else if ((b == 't' || b == 'f') && (t & type_bit::kBoolean)) {
      f.node = &boolean_literals();
    } else if (b == 'n' && (t & type_bit::kNull)) {
      f.node = &null_literal();
    } else {
      return false;
    }
    if (f.kind != FrameKind::Root) {
      s.push_back(f);
      return true;
    }
  }
  const auto& lits = f.node->literals;
  auto get = [&](uint32_t i) -> const std::string& { return lits[i]; };
  uint32_t lo = 0, hi = static_cast<uint32_t>(lits.size());
  if (!narrow(get, 0, b, lo, hi)) return false;
  f.kind = FrameKind::Literal;
  f.a = 1;
  f.b = lo;
  f.c = hi;
  s.push_back(f);
  return true;
}

// Sum of the shortest items [from, from + count) of array node `n`.
int64_t items_cost(const SchemaNode& n, uint32_t from, uint32_t count) {
  int64_t sum = 0;
  uint32_t i = from;
  const uint32_t end = from + count;
  for (; i < end && i < n.prefix_items.size(); ++i) sum = add_cost(sum, n.prefix_items[i]->min_cost);
  if (i < end) {
    if (n.items == nullptr || end > n.max_items) return kInf;
    sum = add_cost(sum, mul_cost(n.items->min_cost, end - i));
  }
  return sum;
}

int64_t key_cost(const Stack& s, size_t i) {
  const Frame& k = s[i];
  const Frame& parent = s[i - 1];
  const SchemaNode& n = *k.node;
  int64_t best = kInf;
  bool exact_listed = false;  // the bytes so far + '"' are a listed key
  for (uint32_t j = k.b; j < k.c; ++j) {
    const uint32_t prop = n.sorted_props[j];
    const auto& p = n.props[prop];
    exact_listed |= p.key_json.size() == k.a + 1;
    if (!in_window(n, parent, prop)) continue;
    const int64_t rest = static_cast<int64_t>(p.key_json.size() - k.a) + 1;
    const int64_t after = n.object_rest(prop + 1, listed_entries(parent) + 1, free_entries(parent), Rest::AfterValue);
    best = std::min(best, add_cost(add_cost(rest, p.value->min_cost), after));
  }
  if (k.flag) {
    const int64_t pending = string_pending(k.str);
    const int64_t close = pending + 1 + (pending == 0 && exact_listed ? 1 : 0);
    const int64_t after = n.object_rest(static_cast<uint32_t>(n.props.size()), listed_entries(parent),
                                        free_entries(parent) + 1, Rest::AfterValue);
    best = std::min(best, add_cost(add_cost(close + 1, n.additional->min_cost), after));
  }
  return best;
}

int64_t frame_cost(const Stack& s, size_t i) {
  const Frame& f = s[i];
  const SchemaNode& n = *f.node;
  switch (f.kind) {
    case FrameKind::Root:
      return f.phase == kRootStart ? n.min_cost : 0;
    case FrameKind::Object: {
      auto value_min = [&] { return (f.c == kFreeKey ? n.additional : n.props[f.c].value)->min_cost; };
      switch (f.phase) {
        case kObjOpen:
          return rest_of(n, f, Rest::Open);
        case kObjKey:
          return 0;  // the Key frame counts the rest of the object
        case kObjKeyDone:
          return add_cost(1 + value_min(), rest_of(n, f, Rest::AfterValue));
        case kObjColon:
          return add_cost(value_min(), rest_of(n, f, Rest::AfterValue));
        case kObjAfterValue:
          return rest_of(n, f, Rest::AfterValue);
        case kObjComma:
          return rest_of(n, f, Rest::AfterComma);
      }
      return kInf;
    }
    case FrameKind::Key:
      return key_cost(s, i);
    case FrameKind::Array: {
      const uint32_t left = n.min_items > f.a ? n.min_items - f.a : 0;
      switch (f.phase) {
        case kArrOpen:
          return add_cost(items_cost(n, 0, left), left > 0 ? left : 1);
        case kArrAfterValue:
          return add_cost(items_cost(n, f.a, left), left + 1);
        default: {
          const uint32_t k = std::max<uint32_t>(left, 1);
          return add_cost(items_cost(n, f.a, k), k);
        }
      }
    }
    case FrameKind::String: {
      if (const Automaton* a = n.string_automaton.get())
        return add_cost(1, f.str.escape == 1 ? escape_cost(*a, f.b) : a->dist[f.b]);
      const int64_t chars = n.min_length > f.a ? n.min_length - f.a : 0;
      return 1 + chars + string_pending(f.str);
    }
    case FrameKind::Number:
      if (const Automaton* a = n.number_automaton.get()) return a->dist[f.b];
      return number_accepting(f.phase) ? 0 : 1;
    case FrameKind::Literal: {
      int64_t best = kInf;
      for (uint32_t j = f.b; j < f.c; ++j) best = std::min<int64_t>(best, n.literals[j].size() - f.a);
      return best;
    }
    case FrameKind::Rule:
      return grammar_frame_cost(f);
    case FrameKind::Regex:
      return n.regex->dist[f.a];
  }
  return kInf;
}

// The StartValue protocol for a grammar's external JSON value (gbnf_matcher.h, StartJsonValue):
// the value's first frame goes above the thread's Rule frames, forking over anyOf as step() does.
bool start_external_value(ThreadSet& out, size_t idx, const SchemaNode* value, uint8_t b, WorkMeter* meter) {
  if (!value->is_alias) {
    if (!start_leaf(out[idx], value, b)) out.pop_back();
    return true;
  }
  thread_local Stack base;
  base.assign(out[idx].begin(), out[idx].end());
  out.pop_back();
  for (const SchemaNode* leaf : value->alts) {
    if (meter != nullptr) {
      if (out.size() >= meter->max_threads) meter->over_threads = true;
      if (!meter->charge(WorkMeter::kStepCost + base.size())) {
        out.clear();
        return false;
      }
    }
    const size_t j = out.push(base);
    if (!start_leaf(out[j], leaf, b)) out.pop_back();
  }
  return true;
}

}  // namespace

void initial_state(const SchemaNode& root, ThreadSet& out) {
  if (root.grammar != nullptr) return initial_grammar_state(root, out);
  Frame f;
  if (root.regex != nullptr) {
    f.kind = FrameKind::Regex;
    f.node = &root;
    f.a = root.regex->dfa.start;
    out.clear();
    out.push(Stack{f});
    return;
  }
  f.kind = FrameKind::Root;
  f.node = &root;
  f.phase = kRootStart;
  out.clear();
  out.push(Stack{f});
}

void step(const ThreadSet& in, uint8_t b, ThreadSet& out, WorkMeter* meter) {
  thread_local Stack base;  // the thread before an anyOf fork (cannot live in `out` while it grows)
  out.clear();
  // Charges one thread stepped (copied into `out`); false, with `out` emptied, once over a limit.
  auto charge = [&](size_t frames, uint32_t scanned) {
    if (meter == nullptr) return true;
    if (out.size() >= meter->max_threads) meter->over_threads = true;
    if (meter->charge(WorkMeter::kStepCost + frames + scanned)) return true;
    out.clear();
    return false;
  };
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i].back().kind == FrameKind::Rule) {  // a grammar position: it charges and forks itself
      if (!step_grammar(in[i], b, out, meter, start_external_value)) return;
      continue;
    }
    if (!charge(in[i].size(), 0)) return;
    const size_t idx = out.push(in[i]);
    uint32_t scanned = 0;
    const StepResult r = step_thread(out[idx], b, scanned);
    if (scanned > 0 && !charge(0, scanned)) return;
    if (r.outcome == Outcome::Ok) continue;
    if (r.outcome == Outcome::Grammar) {  // a JSON value closed lazily: `b` goes to the grammar
      base.assign(out[idx].begin(), out[idx].end());
      out.pop_back();
      if (!step_grammar(base, b, out, meter, start_external_value)) return;
      continue;
    }
    if (r.outcome == Outcome::Dead) {
      out.pop_back();
      continue;
    }
    if (!r.start->is_alias) {
      if (!start_leaf(out[idx], r.start, b)) out.pop_back();
      continue;
    }
    base.assign(out[idx].begin(), out[idx].end());
    out.pop_back();
    for (const SchemaNode* leaf : r.start->alts) {
      if (!charge(base.size(), 0)) return;
      const size_t j = out.push(base);
      if (!start_leaf(out[j], leaf, b)) out.pop_back();
    }
  }
  if (out.size() > 1) out.dedup();
}

bool step_bytes(ThreadSet& state, std::string_view bytes, ThreadSet& scratch) {
  ThreadSet cur;
  cur.assign(state);
  for (char c : bytes) {
    step(cur, static_cast<uint8_t>(c), scratch);
    if (scratch.empty()) return false;
    std::swap(cur, scratch);
  }
  std::swap(state, cur);
  return true;
}

int64_t completion_cost(const ThreadSet& state, WorkMeter* meter) {
  int64_t best = kInf;
  for (size_t t = 0; t < state.size(); ++t) {
    int64_t sum = 0;
    const Stack& s = state[t];
    if (meter != nullptr) {
      size_t ranges = 0;  // key_cost and literal costs walk these ranges
      for (const Frame& f : s)
        if (f.kind == FrameKind::Key || f.kind == FrameKind::Literal) ranges += f.c - f.b;
      (void)meter->charge(WorkMeter::kStepCost + s.size() + ranges);
    }
    for (size_t i = 0; i < s.size() && sum < kInf; ++i) sum = add_cost(sum, frame_cost(s, i));
    best = std::min(best, sum);
  }
  return best;
}

}  // namespace cellserve::engine::grammar
