// number_dfa: generated bounds and number texts against an exact reference (values scaled by
// 10^8 in __int128), and hand-written cases for the refusals.
#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "engine/grammar/number_dfa.h"

namespace cellserve::engine::grammar {
namespace {

using i128 = __int128;
constexpr int kScale = 8;  // reference values are x * 10^8; generated texts have <= 8 fraction digits

i128 pow10(int n) {
  i128 p = 1;
  for (int i = 0; i < n; ++i) p *= 10;
  return p;
}

// Reference: the value of a text matching -?(0|[1-9][0-9]*)(\.[0-9]{0,8})?, times 10^8.
i128 scaled_value(const std::string& text) {
  size_t i = 0;
  const bool negative = text[0] == '-';
  if (negative) ++i;
  i128 v = 0;
  for (; i < text.size() && text[i] != '.'; ++i) v = v * 10 + (text[i] - '0');
  int frac = 0;
  if (i < text.size()) {
    for (++i; i < text.size(); ++i, ++frac) v = v * 10 + (text[i] - '0');
  }
  v *= pow10(kScale - frac);
  return negative ? -v : v;
}

std::string digits_of(i128 v) {  // v >= 0
  if (v == 0) return "0";
  std::string s;
  for (; v > 0; v /= 10) s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
  return s;
}

// A plain decimal text of a scaled value with `frac` fraction digits (enough to be exact).
std::string plain_text(i128 v, int frac, bool negative_zero = false) {
  const bool negative = v < 0 || (v == 0 && negative_zero);
  const i128 m = v < 0 ? -v : v;
  std::string s = (negative ? "-" : "") + digits_of(m / pow10(kScale));
  if (frac > 0) {
    std::string f = digits_of(m % pow10(kScale));
    f.insert(f.begin(), static_cast<size_t>(kScale) - f.size(), '0');
    s += "." + f.substr(0, static_cast<size_t>(frac));
  }
  return s;
}
// The fraction digits a scaled value needs.
int needed_frac(i128 v) {
  if (v < 0) v = -v;
  int f = kScale;
  while (f > 0 && v % 10 == 0) v /= 10, --f;
  return f;
}

// Boost.JSON's form for doubles: d.dddE<exp>.
std::string scientific_text(i128 v, std::mt19937& rng) {
  if (v == 0) return rng() % 2 ? "0E0" : "-0.0E0";
  const bool negative = v < 0;
  i128 m = negative ? -v : v;
  int exp = -kScale;
  while (m % 10 == 0) m /= 10, ++exp;
  const std::string d = digits_of(m);
  exp += static_cast<int>(d.size()) - 1;
  std::string s = (negative ? "-" : "") + d.substr(0, 1);
  if (d.size() > 1) s += "." + d.substr(1);
  const char* e[] = {"E", "e", "E+"};
  return s + (exp >= 0 ? e[rng() % 3] : "E") + std::to_string(exp);
}

struct Bound {
  i128 value;
  std::string text;
};

// Bounds of every kind: small, beyond int64 and uint64, fractional, zero, negative.
Bound random_bound(std::mt19937& rng, bool integral_only) {
  i128 m = 0;
  switch (rng() % 5) {
    case 0:
      m = rng() % 20;
      break;
    case 1:
      m = rng() % 100000;
      break;
    case 2: {  // up to 22 digits
      const int len = 1 + static_cast<int>(rng() % 22);
      for (int i = 0; i < len; ++i) m = m * 10 + rng() % 10;
      break;
    }
    case 3:
      m = static_cast<i128>(UINT64_MAX) - 2 + rng() % 5;
      break;
    default:
      m = static_cast<i128>(INT64_MAX) - 2 + rng() % 5;
      break;
  }
  i128 v = m * pow10(kScale);
  if (!integral_only && rng() % 2) {
    const int frac = 1 + static_cast<int>(rng() % 6);  // up to 6 fraction digits
    v = m * pow10(frac) + static_cast<i128>(rng() % static_cast<uint32_t>(pow10(frac)));
    v *= pow10(kScale - frac);
    if (rng() % 3 == 0) v /= pow10(kScale);  // scaled down: mostly below 1
    v -= v % pow10(kScale - 6);
  }
  if (rng() % 2) v = -v;
  Bound b{v, ""};
  switch (rng() % 3) {
    case 0:
      b.text = scientific_text(v, rng);
      break;
    case 1:
      b.text = plain_text(v, needed_frac(v));
      break;
    default:
      b.text = plain_text(v, needed_frac(v) + static_cast<int>(rng() % 2));  // a trailing zero
      break;
  }
  return b;
}

struct Reference {
  bool integer = false;
  std::optional<i128> lo, hi;  // scaled
  bool lo_exclusive = false, hi_exclusive = false;
  i128 multiple = 0;

  bool admits(i128 v) const {
    if (integer && v % pow10(kScale) != 0) return false;
    if (lo && (lo_exclusive ? v <= *lo : v < *lo)) return false;
    if (hi && (hi_exclusive ? v >= *hi : v > *hi)) return false;
    if (multiple != 0 && v % (multiple * pow10(kScale)) != 0) return false;
    return true;
  }

  // Whether some value is admitted: the least admitted value of the right kind at or above the
  // lower end, compared with the upper end.
  bool empty() const {
    if (!lo || !hi) return false;
    const i128 unit = multiple != 0 ? multiple * pow10(kScale) : integer ? pow10(kScale) : 0;
    if (unit == 0) return *lo > *hi || (*lo == *hi && (lo_exclusive || hi_exclusive));
    // least multiple of unit >= lo (> lo when exclusive)
    i128 q = floor_div(*lo, unit) * unit;
    while (q < *lo || (lo_exclusive && q == *lo)) q += unit;
    return hi_exclusive ? q >= *hi : q > *hi;
  }
  static i128 floor_div(i128 a, i128 b) {
    i128 q = a / b;
    if (a % b != 0 && (a < 0) != (b < 0)) --q;
    return q;
  }
};

// Number texts to try: near the bounds and the multiples, random ones, odd spellings of zero,
// and texts outside the grammar.
std::vector<std::string> candidate_texts(const Reference& ref, std::mt19937& rng) {
  std::vector<i128> values = {0, pow10(kScale), -pow10(kScale)};
  for (const std::optional<i128>& b : {ref.lo, ref.hi}) {
    if (!b) continue;
    for (int k = 0; k < 6; ++k) {
      const i128 step = pow10(static_cast<int>(rng() % 9));
      const i128 delta = static_cast<i128>(rng() % 5) - 2;
      values.push_back(*b + delta * step);
    }
    values.push_back(*b);
    values.push_back(*b - *b % pow10(kScale));  // its integer part
  }
  if (ref.multiple != 0) {
    const i128 unit = ref.multiple * pow10(kScale);
    for (int k = 0; k < 6; ++k) {
      const i128 base = ref.lo ? Reference::floor_div(*ref.lo, unit) : static_cast<i128>(rng() % 7) - 3;
      values.push_back((base + static_cast<i128>(rng() % 4)) * unit + (rng() % 3 == 0 ? pow10(kScale) : 0));
    }
  }
  for (int k = 0; k < 6; ++k) {
    i128 v = 0;
    const int len = static_cast<int>(rng() % 30);
    for (int i = 0; i < len; ++i) v = v * 10 + rng() % 10;
    values.push_back(rng() % 2 ? v : -v);
  }
  std::vector<std::string> texts;
  for (i128 v : values) {
    if (v > pow10(36) || v < -pow10(36)) continue;
    const int need = needed_frac(v);
    texts.push_back(plain_text(v, need));
    if (need < kScale) texts.push_back(plain_text(v, need + 1 + static_cast<int>(rng() % (kScale - need))));
  }
  for (const char* t : {"-0", "-0.0", "0.000", "-0.00000000", "",    "-",     "01", "-01", "00",  "1.", ".5",
                        "+1", "1e5",  "1E0",   "--1",         "0x1", "1.2.3", " 1", "1 ",  "-.5", "5-"}) {
    texts.push_back(t);
  }
  return texts;
}

TEST(NumberDfaTest, AgreesWithExactReference) {
  std::mt19937 rng(7);
  const std::regex number_syntax(R"(-?(0|[1-9][0-9]*)(\.[0-9]+)?)"), integer_syntax(R"(-?(0|[1-9][0-9]*))");
  static const uint64_t kMultiples[] = {1, 2, 3, 5, 7, 10, 12, 25, 100, 360, 1000, 1024, 1000000, 1000000000000ull};
  int checked = 0, admitted = 0, empty = 0, configs = 600;
  for (int c = 0; c < configs; ++c) {
    NumberBounds b;
    Reference ref;
    b.integer = ref.integer = rng() % 2 == 0;
    if (rng() % 4 != 0) {
      const Bound lo = random_bound(rng, false);
      b.minimum = lo.text;
      ref.lo = lo.value;
      b.exclusive_minimum = ref.lo_exclusive = rng() % 2;
    }
    if (rng() % 4 != 0) {
      Bound hi = random_bound(rng, false);
      // Often just above the minimum, so that narrow and empty ranges are common.
      if (ref.lo && rng() % 2) {
        const i128 v = *ref.lo + (static_cast<i128>(rng() % 7) - 1) * pow10(static_cast<int>(rng() % 10));
        hi = {v, plain_text(v, needed_frac(v))};
      }
      b.maximum = hi.text;
      ref.hi = hi.value;
      b.exclusive_maximum = ref.hi_exclusive = rng() % 2;
    }
    if (b.integer && rng() % 3 == 0) {
      b.multiple_of = kMultiples[rng() % (sizeof kMultiples / sizeof kMultiples[0])];
      ref.multiple = static_cast<i128>(b.multiple_of);
    }
    auto dfa = number_dfa(b, {});
    const std::string where = "minimum " + b.minimum.value_or("-") + (b.exclusive_minimum ? " (exclusive)" : "") +
                              " maximum " + b.maximum.value_or("-") + (b.exclusive_maximum ? " (exclusive)" : "") +
                              (b.integer ? " integer" : " number") + " multipleOf " + std::to_string(b.multiple_of);
    if (ref.empty()) {
      ASSERT_FALSE(dfa.ok()) << where;
      EXPECT_EQ(dfa.status().code(), StatusCode::InvalidArgument);
      EXPECT_NE(dfa.status().message().find("no number satisfies"), std::string::npos) << dfa.status().message();
      ++empty;
      continue;
    }
    ASSERT_TRUE(dfa.ok()) << where << ": " << dfa.status().to_string();
    for (const std::string& t : candidate_texts(ref, rng)) {
      const bool syntax = std::regex_match(t, ref.integer ? integer_syntax : number_syntax);
      const bool expected = syntax && ref.admits(scaled_value(t));
      ASSERT_EQ(dfa->accepts(t), expected) << where << " text '" << t << "'";
      ++checked;
      admitted += expected;
    }
  }
  EXPECT_GT(admitted, checked / 10);
  EXPECT_GT(checked - admitted, checked / 10);
  EXPECT_GT(empty, configs / 50);
}

ByteDfa number(const NumberBounds& b) {
  auto d = number_dfa(b, {});
  EXPECT_TRUE(d.ok()) << d.status().to_string();
  return d.ok() ? *d : empty_dfa();
}

NumberBounds range(std::optional<std::string> lo, std::optional<std::string> hi, bool integer = false) {
  NumberBounds b;
  b.minimum = std::move(lo);
  b.maximum = std::move(hi);
  b.integer = integer;
  return b;
}

TEST(NumberDfaTest, Syntax) {
  const ByteDfa any = number({});
  for (const char* ok : {"0", "-0", "7", "-12", "0.5", "-0.0", "10.01", "123456789012345678901234567890"}) {
    EXPECT_TRUE(any.accepts(ok)) << ok;
  }
  for (const char* bad : {"", "-", "01", "1.", ".1", "1e3", "1E+3", "+1", "0x10", "--1", "1-", "0.1.2"}) {
    EXPECT_FALSE(any.accepts(bad)) << bad;
  }
  NumberBounds integer;
  integer.integer = true;
  const ByteDfa ints = number(integer);
  EXPECT_TRUE(ints.accepts("-42"));
  EXPECT_FALSE(ints.accepts("4.0"));
}

TEST(NumberDfaTest, BoostTexts) {
  const ByteDfa d = number(range("-1.25E2", "2.5E0"));
  EXPECT_TRUE(d.accepts("-125"));
  EXPECT_TRUE(d.accepts("-124.99"));
  EXPECT_FALSE(d.accepts("-125.01"));
  EXPECT_TRUE(d.accepts("2.5"));
  EXPECT_TRUE(d.accepts("2.500"));
  EXPECT_FALSE(d.accepts("2.5000001"));
  const ByteDfa tenth = number(range(std::nullopt, "1E-1"));
  EXPECT_TRUE(tenth.accepts("0.1"));
  EXPECT_TRUE(tenth.accepts("0.09"));
  EXPECT_TRUE(tenth.accepts("-5"));
  EXPECT_FALSE(tenth.accepts("0.11"));
  EXPECT_FALSE(tenth.accepts("0.10001"));
  const ByteDfa big = number(range("18446744073709551615", std::nullopt, true));
  EXPECT_TRUE(big.accepts("18446744073709551615"));
  EXPECT_TRUE(big.accepts("100000000000000000000000"));
  EXPECT_FALSE(big.accepts("18446744073709551614"));
  EXPECT_FALSE(big.accepts("-18446744073709551616"));
}

TEST(NumberDfaTest, ExclusiveAndZero) {
  NumberBounds positive;
  positive.minimum = "0";
  positive.exclusive_minimum = true;
  const ByteDfa d = number(positive);
  EXPECT_FALSE(d.accepts("0"));
  EXPECT_FALSE(d.accepts("-0"));
  EXPECT_FALSE(d.accepts("0.000"));
  EXPECT_TRUE(d.accepts("0.0001"));
  const ByteDfa nonneg = number(range("-0.0E0", std::nullopt));
  EXPECT_TRUE(nonneg.accepts("-0"));
  EXPECT_TRUE(nonneg.accepts("-0.0"));
  EXPECT_FALSE(nonneg.accepts("-0.01"));
}

TEST(NumberDfaTest, IntegerWithFractionalBounds) {
  const ByteDfa d = number(range("1.2", "4.8", true));  // effectively 2..4
  EXPECT_FALSE(d.accepts("1"));
  EXPECT_TRUE(d.accepts("2"));
  EXPECT_TRUE(d.accepts("4"));
  EXPECT_FALSE(d.accepts("5"));
  const ByteDfa neg = number(range("-4.8", "-1.2", true));  // -4..-2
  EXPECT_TRUE(neg.accepts("-4"));
  EXPECT_TRUE(neg.accepts("-2"));
  EXPECT_FALSE(neg.accepts("-1"));
  EXPECT_FALSE(neg.accepts("-5"));
  // A fraction with an enormous exponent only matters as "nonzero" for an integer type.
  const ByteDfa tiny = number(range("1E-100000", "3", true));
  EXPECT_FALSE(tiny.accepts("0"));
  EXPECT_TRUE(tiny.accepts("1"));
  EXPECT_TRUE(tiny.accepts("3"));
}

TEST(NumberDfaTest, MultipleOf) {
  NumberBounds b;
  b.integer = true;
  b.multiple_of = 1000000000000000000ull;
  const ByteDfa d = number(b);
  EXPECT_LT(d.states(), 30u);  // 10^18 = 1 * 10^18: states count trailing zeros
  EXPECT_TRUE(d.accepts("0"));
  EXPECT_TRUE(d.accepts("-0"));
  EXPECT_TRUE(d.accepts("1000000000000000000"));
  EXPECT_TRUE(d.accepts("-2000000000000000000"));
  EXPECT_TRUE(d.accepts("123000000000000000000"));
  EXPECT_FALSE(d.accepts("100000000000000000"));
  EXPECT_FALSE(d.accepts("1000000000000000001"));
  b.multiple_of = 7;
  b.minimum = "-15";
  b.maximum = "15";
  const ByteDfa sevens = number(b);
  for (int v = -30; v <= 30; ++v) {
    EXPECT_EQ(sevens.accepts(std::to_string(v)), v % 7 == 0 && v >= -15 && v <= 15) << v;
  }
}

void expect_refused(const NumberBounds& b, std::string_view message, const GrammarLimits& limits = {}) {
  auto d = number_dfa(b, limits);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::InvalidArgument);
  EXPECT_NE(d.status().message().find(message), std::string::npos) << d.status().message();
}

TEST(NumberDfaTest, Refusals) {
  expect_refused(range("5", "3"), "no number satisfies type number, minimum 5, maximum 3");
  expect_refused(range("1.2", "1.8", true), "no number satisfies type integer, minimum 1.2, maximum 1.8");
  NumberBounds point = range("2", "2");
  EXPECT_TRUE(number(point).accepts("2.0"));
  point.exclusive_maximum = true;
  expect_refused(point, "no number satisfies");
  NumberBounds fractional;
  fractional.multiple_of = 3;
  expect_refused(fractional, "only supported with an integer type");
  for (const char* bad : {"abc", "01", "1.", "", "-", "1e", "1E+", "0x10", " 1", "NaN"}) {
    expect_refused(range(bad, std::nullopt), "is not a JSON number");
  }
  // Bounds whose digits written out pass the limit are refused before anything is built.
  expect_refused(range("1E5000", std::nullopt), "the limit (max_dfa_states) is 4096");
  expect_refused(range("1E999999999999999999", std::nullopt), "the limit (max_dfa_states) is 4096");
  expect_refused(range("1E-5000", std::nullopt), "the limit (max_dfa_states) is 4096");
  GrammarLimits tiny;
  tiny.max_dfa_states = 20;
  expect_refused(range("123456789012345678901234567890", std::nullopt), "the limit (max_dfa_states) is 20", tiny);
  NumberBounds prime;
  prime.integer = true;
  prime.multiple_of = 999983;  // its remainder automaton alone needs 999,983 states
  expect_refused(prime, "the limit (max_dfa_states) is 4096");
}

}  // namespace
}  // namespace cellserve::engine::grammar
