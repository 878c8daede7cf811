// number_dfa: comparator automata over the decimal text, a remainder automaton, intersected.
#include "engine/grammar/number_dfa.h"

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <utility>

namespace cellserve::engine::grammar {
namespace {

// The byte classes every automaton here is built over: other bytes, '-', '.', '0'..'9'.
constexpr uint32_t kMinus = 1, kDot = 2, kDigit0 = 3, kClasses = 13;
// The remainder automaton may be built this many times larger than the limit before it is
// minimised (its minimal form is often much smaller: multipleOf 1024 needs far fewer than 1024).
constexpr size_t kRawStatesPerDfaState = 16;

std::array<uint8_t, 256> number_classes() {
  std::array<uint8_t, 256> c{};
  c['-'] = kMinus;
  c['.'] = kDot;
  for (int d = 0; d < 10; ++d) c['0' + d] = static_cast<uint8_t>(kDigit0 + d);
  return c;
}

enum Rel : uint8_t { kLt = 0, kEq = 1, kGt = 2 };
Rel compare_digits(char x, char y) { return x < y ? kLt : x == y ? kEq : kGt; }
Rel reverse(Rel r) { return r == kLt ? kGt : r == kGt ? kLt : kEq; }

// A nonnegative decimal: integer digits without leading zeros ("" for 0), fraction digits
// without trailing zeros.
struct Magnitude {
  std::string int_digits, frac_digits;
};
struct Decimal {
  bool negative = false;  // never for zero
  Magnitude mag;
  bool is_zero() const { return mag.int_digits.empty() && mag.frac_digits.empty(); }
};

enum class Op { Ge, Gt, Le, Lt };
bool holds(Op op, Rel r) {
  switch (op) {
    case Op::Ge:
      return r != kLt;
    case Op::Gt:
      return r == kGt;
    case Op::Le:
      return r != kGt;
    case Op::Lt:
      return r == kLt;
  }
  return false;
}

// A JSON number text (exponent allowed) read exactly. With `integer`, only whether the fraction
// is nonzero matters (the texts compared have none), so it is kept as "1". A bound whose digits
// written out (integer part, or fraction when it matters) pass max_digits is refused: the
// comparator needs a state per digit.
Result<Decimal> parse_bound(std::string_view name, std::string_view text, bool integer, const GrammarLimits& limits) {
  const size_t max_digits = limits.max_dfa_states;
  auto bad = [&] {
    return Status::invalid_argument("number bounds: " + std::string(name) + " '" + std::string(text) +
                                    "' is not a JSON number");
  };
  auto is_digit = [&](size_t i) { return i < text.size() && text[i] >= '0' && text[i] <= '9'; };
  Decimal out;
  size_t i = 0;
  const bool negative = i < text.size() && text[i] == '-';
  if (negative) ++i;
  if (!is_digit(i)) return bad();
  std::string digits;  // integer and fraction digits
  int64_t point = 0;   // the decimal point comes after this many of `digits`
  if (text[i] == '0') {
    ++i;
  } else {
    while (is_digit(i)) digits += text[i++];
  }
  point = static_cast<int64_t>(digits.size());
  if (i < text.size() && text[i] == '.') {
    ++i;
    if (!is_digit(i)) return bad();
    while (is_digit(i)) digits += text[i++];
  }
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    bool exp_negative = false;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) exp_negative = text[i++] == '-';
    if (!is_digit(i)) return bad();
    int64_t exp = 0;  // saturates: anything this large is refused below anyway
    while (is_digit(i)) exp = std::min<int64_t>(exp * 10 + (text[i++] - '0'), 1'000'000'000);
    point += exp_negative ? -exp : exp;
  }
  if (i != text.size()) return bad();

  const size_t first = std::min(digits.find_first_not_of('0'), digits.size());
  point -= static_cast<int64_t>(first);
  digits.erase(0, first);
  digits.erase(digits.find_last_not_of('0') + 1);  // npos + 1 == 0: all zeros (or none) -> ""
  if (digits.empty()) return out;                  // zero (never negative)
  const auto len = static_cast<int64_t>(digits.size());
  auto too_long = [&] {
    return Status::invalid_argument("number bounds: " + std::string(name) + " " + std::string(text) +
                                    " has more than " + std::to_string(max_digits) +
                                    " digits written out; the limit (max_dfa_states) is " + std::to_string(max_digits));
  };
  if (point > static_cast<int64_t>(max_digits)) return too_long();
  out.negative = negative;
  if (point > 0) {
    out.mag.int_digits = digits.substr(0, static_cast<size_t>(std::min(point, len)));
    if (point > len) out.mag.int_digits.append(static_cast<size_t>(point - len), '0');
  }
  if (point < len) {
    if (integer) {
      out.mag.frac_digits = "1";
    } else if (len - point > static_cast<int64_t>(max_digits)) {
      return too_long();
    } else if (point <= 0) {
      out.mag.frac_digits = std::string(static_cast<size_t>(-point), '0') + digits;
    } else {
      out.mag.frac_digits = digits.substr(static_cast<size_t>(point));
    }
  }
  return out;
}

// Adds the states that read an unsigned number text (0|[1-9][0-9]*)(\.[0-9]+)? (no fraction
// unless `fraction`) and compare its value with `a`: a state accepts when the text may end there
// and accept[outcome] holds. Returns the state before the first digit.
//
// The integer parts compare by length first (no leading zeros), then by the first differing
// digit; only when they are equal does the fraction decide, compared digit by digit with a's
// fraction padded with zeros.
uint32_t add_unsigned_comparator(ByteDfa& raw, const Magnitude& a, bool fraction, const std::array<bool, 3>& accept) {
  const std::string& ai = a.int_digits;
  const std::string& af = a.frac_digits;
  const size_t n = ai.size(), f = af.size();
  // The outcome when the text ends after its integer part, whose relation to a's is r.
  auto int_end = [&](Rel r) { return r == kEq && f > 0 ? kLt : r; };
  auto state = [&](bool can_end, Rel outcome) { return add_state(raw, can_end && accept[outcome]); };
  auto digit = [&](uint32_t from, int d, uint32_t to) { set_transition(raw, from, kDigit0 + d, to); };

  const uint32_t first = state(false, kEq);
  const Rel zero_rel = n == 0 ? kEq : kLt;  // the integer part "0"
  const uint32_t zero = state(true, int_end(zero_rel));
  // after k of the integer's digits (1 <= k <= n), relation r to a's first k: within[(k-1)*3 + r]
  std::vector<uint32_t> within(3 * n);
  for (size_t k = 1; k <= n; ++k) {
    for (int r = 0; r < 3; ++r) within[(k - 1) * 3 + r] = state(true, int_end(k < n ? kLt : static_cast<Rel>(r)));
  }
  const uint32_t longer = state(true, kGt);  // more integer digits than a
  // Fraction states: after '.', needing a digit (dot_*) or not; equal[j]: j digits equal to a's
  // fraction (padded with zeros), the last one looping on '0'.
  uint32_t dot_lt = 0, dot_gt = 0, frac_lt = 0, frac_gt = 0;
  std::vector<uint32_t> equal;
  const size_t last = std::max<size_t>(f, 1);
  if (fraction) {
    dot_lt = state(false, kLt);
    dot_gt = state(false, kGt);
    frac_lt = state(true, kLt);
    frac_gt = state(true, kGt);
    equal.push_back(state(false, kEq));
    for (size_t j = 1; j <= last; ++j) equal.push_back(state(true, j < f ? kLt : kEq));
  }
  auto dot = [&](uint32_t from, Rel int_rel) {
    if (fraction) set_transition(raw, from, kDot, int_rel == kLt ? dot_lt : int_rel == kGt ? dot_gt : equal[0]);
  };

  digit(first, 0, zero);
  for (int d = 1; d < 10; ++d) digit(first, d, n == 0 ? longer : within[compare_digits(char('0' + d), ai[0])]);
  dot(zero, zero_rel);
  for (size_t k = 1; k <= n; ++k) {
    for (int r = 0; r < 3; ++r) {
      const uint32_t from = within[(k - 1) * 3 + r];
      for (int d = 0; d < 10; ++d) {
        const Rel next = r == kEq ? compare_digits(char('0' + d), ai[k < n ? k : 0]) : static_cast<Rel>(r);
        digit(from, d, k == n ? longer : within[k * 3 + next]);
      }
      dot(from, k < n ? kLt : static_cast<Rel>(r));
    }
  }
  for (int d = 0; d < 10; ++d) digit(longer, d, longer);
  dot(longer, kGt);
  if (fraction) {
    for (int d = 0; d < 10; ++d) {
      digit(dot_lt, d, frac_lt);
      digit(frac_lt, d, frac_lt);
      digit(dot_gt, d, frac_gt);
      digit(frac_gt, d, frac_gt);
    }
    for (size_t j = 0; j <= last; ++j) {
      const char expected = j < f ? af[j] : '0';
      for (int d = 0; d < 10; ++d) {
        const Rel r = compare_digits(char('0' + d), expected);
        digit(equal[j], d, r == kEq ? equal[std::min(j + 1, last)] : r == kLt ? frac_lt : frac_gt);
      }
    }
  }
  return first;
}

// Signed texts -?<unsigned>; the unsigned part after '-' accepts per `negative`, without per
// `positive` (each indexed by how the magnitude compares with `a`).
ByteDfa signed_comparator(const Magnitude& a, bool fraction, const std::array<bool, 3>& positive,
                          const std::array<bool, 3>& negative) {
  ByteDfa raw = raw_dfa(number_classes(), kClasses);
  raw.start = add_unsigned_comparator(raw, a, fraction, positive);
  const uint32_t after_minus = add_unsigned_comparator(raw, a, fraction, negative);
  set_transition(raw, raw.start, kMinus, after_minus);
  return minimize(raw);
}

// x op bound. For x = +m: a negative bound is below every such x, else x compares as m does with
// |bound|. For x = -m (value <= 0): a positive bound is above it, else x compares as |bound|
// does with m.
Result<ByteDfa> comparator(const Decimal& bound, Op op, bool fraction, const GrammarLimits& limits) {
  std::array<bool, 3> positive{}, negative{};
  for (int r = 0; r < 3; ++r) {
    positive[r] = holds(op, bound.negative ? kGt : static_cast<Rel>(r));
    negative[r] = holds(op, !bound.negative && !bound.is_zero() ? kLt : reverse(static_cast<Rel>(r)));
  }
  ByteDfa dfa = signed_comparator(bound.mag, fraction, positive, negative);
  if (dfa.states() - 1 > limits.max_dfa_states) return dfa_states_error("number bounds: a bound", limits);
  return dfa;
}

// Integer texts whose value is a multiple of m. With m = m0 * 10^t (m0 not a multiple of 10) a
// state is (a, z): the text with its last z <= t zeros dropped is a mod m0; so multipleOf 10^6
// needs 7 states, not a million.
Result<ByteDfa> multiple_dfa(uint64_t m, const GrammarLimits& limits) {
  uint64_t m0 = m;
  uint32_t t = 0;
  while (m0 % 10 == 0) {
    m0 /= 10;
    ++t;
  }
  const size_t max_raw = limits.max_dfa_states > SIZE_MAX / kRawStatesPerDfaState
                             ? SIZE_MAX
                             : limits.max_dfa_states * kRawStatesPerDfaState;
  if (m0 > max_raw / (t + 1)) return dfa_states_error("number bounds: multipleOf " + std::to_string(m), limits);
  ByteDfa raw = raw_dfa(number_classes(), kClasses);
  const uint32_t start = add_state(raw, false), minus = add_state(raw, false), zero = add_state(raw, true);
  const uint32_t base = raw.states();
  for (uint32_t z = 0; z <= t; ++z) {
    for (uint64_t a = 0; a < m0; ++a) add_state(raw, z == t && a == 0);
  }
  auto id = [&](uint64_t a, uint32_t z) { return static_cast<uint32_t>(base + z * m0 + a); };
  auto mul_mod = [&](uint64_t x, uint64_t y) {
    return static_cast<uint64_t>(static_cast<unsigned __int128>(x) * y % m0);
  };
  std::vector<uint64_t> pow10(t + 2, 1 % m0);
  for (uint32_t j = 1; j < t + 2; ++j) pow10[j] = mul_mod(pow10[j - 1], 10);
  raw.start = start;
  set_transition(raw, start, kMinus, minus);
  for (uint32_t from : {start, minus}) {
    set_transition(raw, from, kDigit0, zero);
    for (uint64_t d = 1; d < 10; ++d) set_transition(raw, from, kDigit0 + static_cast<uint32_t>(d), id(d % m0, 0));
  }
  for (uint32_t z = 0; z <= t; ++z) {
    for (uint64_t a = 0; a < m0; ++a) {
      const uint32_t from = id(a, z);
      set_transition(raw, from, kDigit0, z < t ? id(a, z + 1) : id(mul_mod(a, 10), t));
      for (uint64_t d = 1; d < 10; ++d) {
        set_transition(raw, from, kDigit0 + static_cast<uint32_t>(d), id((mul_mod(a, pow10[z + 1]) + d) % m0, 0));
      }
    }
  }
  ByteDfa dfa = minimize(raw);
  if (dfa.states() - 1 > limits.max_dfa_states) {
    return dfa_states_error("number bounds: multipleOf " + std::to_string(m), limits);
  }
  return dfa;
}

std::string describe(const NumberBounds& b) {
  std::string s = b.integer ? "type integer" : "type number";
  if (b.minimum) s += std::string(b.exclusive_minimum ? ", exclusiveMinimum " : ", minimum ") + *b.minimum;
  if (b.maximum) s += std::string(b.exclusive_maximum ? ", exclusiveMaximum " : ", maximum ") + *b.maximum;
  if (b.multiple_of != 0) s += ", multipleOf " + std::to_string(b.multiple_of);
  return s;
}

}  // namespace

Result<ByteDfa> number_dfa(const NumberBounds& bounds, const GrammarLimits& limits) {
  if (bounds.multiple_of != 0 && !bounds.integer) {
    return Status::invalid_argument("number bounds: multipleOf " + std::to_string(bounds.multiple_of) +
                                    " is only supported with an integer type");
  }
  const bool fraction = !bounds.integer;
  std::vector<ByteDfa> parts;
  if (bounds.minimum) {
    CS_ASSIGN_OR_RETURN(Decimal lo, parse_bound("minimum", *bounds.minimum, bounds.integer, limits));
    CS_ASSIGN_OR_RETURN(ByteDfa c, comparator(lo, bounds.exclusive_minimum ? Op::Gt : Op::Ge, fraction, limits));
    parts.push_back(std::move(c));
  }
  if (bounds.maximum) {
    CS_ASSIGN_OR_RETURN(Decimal hi, parse_bound("maximum", *bounds.maximum, bounds.integer, limits));
    CS_ASSIGN_OR_RETURN(ByteDfa c, comparator(hi, bounds.exclusive_maximum ? Op::Lt : Op::Le, fraction, limits));
    parts.push_back(std::move(c));
  }
  if (bounds.multiple_of != 0) {
    CS_ASSIGN_OR_RETURN(ByteDfa c, multiple_dfa(bounds.multiple_of, limits));
    parts.push_back(std::move(c));
  }
  if (parts.empty()) {  // the syntax alone
    const std::array<bool, 3> all = {true, true, true};
    parts.push_back(signed_comparator(Magnitude{}, fraction, all, all));
  }
  ByteDfa dfa = std::move(parts[0]);
  for (size_t i = 1; i < parts.size(); ++i) {
    CS_ASSIGN_OR_RETURN(dfa, intersect(dfa, parts[i], limits));
  }
  if (dfa.start == ByteDfa::kDead) {
    return Status::invalid_argument("number bounds: no number satisfies " + describe(bounds));
  }
  return dfa;
}

}  // namespace cellserve::engine::grammar
