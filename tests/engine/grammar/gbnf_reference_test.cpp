// GBNF grammars generated at random, compiled by engine/grammar and compared with the reference
// recogniser of gbnf_reference.h: the same strings accepted, every prefix of the language viable,
// and completion costs equal to the shortest completion found by brute force.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "engine/grammar/output_constraint.h"
#include "engine/grammar/schema.h"
#include "gbnf_reference.h"
#include "grammar_test_util.h"

namespace cellserve::engine::grammar {
namespace {

using testing::RefGenerator;
using testing::RefGrammar;
using testing::RefRecognizer;
using testing::RefRenderer;
using testing::RefSampler;
using testing::utf8;

// The fewest code points after `prefix` that complete a string of the language, trying every
// completion over `alphabet` of at most `bound` code points; -1 when none is that short.
int shortest_completion(const RefGrammar& g, const std::u32string& prefix, const std::u32string& alphabet, int bound) {
  for (int len = 0; len <= bound; ++len) {
    std::vector<size_t> digit(static_cast<size_t>(len), 0);
    for (;;) {
      std::u32string s = prefix;
      for (size_t d : digit) s += alphabet[d];
      if (RefRecognizer(g, s).full()) return len;
      int k = len - 1;
      while (k >= 0 && ++digit[static_cast<size_t>(k)] == alphabet.size()) digit[static_cast<size_t>(k--)] = 0;
      if (k < 0) break;
    }
  }
  return -1;
}

std::u32string random_string(std::mt19937& rng, const std::u32string& alphabet, size_t max_len) {
  std::u32string s;
  const size_t n = rng() % (max_len + 1);
  for (size_t i = 0; i < n; ++i) s += alphabet[rng() % alphabet.size()];
  return s;
}

// A member changed by one insertion, deletion or replacement.
std::u32string mutate(std::mt19937& rng, std::u32string s, const std::u32string& alphabet) {
  const char32_t c = alphabet[rng() % alphabet.size()];
  const size_t at = s.empty() ? 0 : rng() % (s.size() + 1);
  switch (rng() % 3) {
    case 0:
      s.insert(s.begin() + static_cast<std::ptrdiff_t>(at), c);
      break;
    case 1:
      if (at < s.size()) s.erase(at, 1);
      break;
    default:
      if (at < s.size()) s[at] = c;
      break;
  }
  return s;
}

// The matcher over `bytes` with a work budget, as a mask would run it: random grammars can be so
// ambiguous that their parses multiply with every byte (which the reference, memoised, does not
// mind). Returns false when the budget ran out; else the completion cost (kInf: dead) in `cost`.
bool bounded_cost(const OutputConstraint& c, const std::string& bytes, int64_t& cost) {
  WorkMeter meter;
  meter.max_work = 2'000'000;
  ThreadSet state, next;
  initial_state(c.root(), state);
  for (char ch : bytes) {
    step(state, static_cast<uint8_t>(ch), next, &meter);
    if (meter.exhausted()) return false;
    if (next.empty()) {
      cost = kInf;
      return true;
    }
    std::swap(state, next);
  }
  cost = completion_cost(state);
  return true;
}

struct Counts {
  int compiled = 0, unproductive = 0, too_ambiguous = 0, strings = 0, accepted = 0, exact_costs = 0;
};

// The matcher's costs against the shortest completion found by brute force (ASCII: bytes).
template <typename CostOf>
void check_exact_costs(const RefGrammar& g, const std::string& text, const std::vector<std::u32string>& members,
                       const CostOf& cost_of, std::mt19937& rng, const std::u32string& probe, Counts& n) {
  std::vector<std::u32string> prefixes;
  for (const std::u32string& m : members) prefixes.push_back(m.substr(0, rng() % (m.size() + 1)));
  for (int i = 0; i < 3; ++i) prefixes.push_back(random_string(rng, probe, 3));
  constexpr int kBound = 3;
  for (const std::u32string& p : prefixes) {
    int64_t cost = 0;
    if (!cost_of(p, cost)) break;
    const int found = shortest_completion(g, p, probe, kBound);
    if (cost <= kBound) {
      EXPECT_EQ(found, cost) << text << "prefix '" << utf8(p) << "'";
      ++n.exact_costs;
    } else {
      EXPECT_EQ(found, -1) << text << "prefix '" << utf8(p) << "', cost " << cost;
    }
  }
}

// Generates `grammars` grammars over `alphabet`; strings use `probe` (the alphabet plus characters no
// class names). With `check_costs` (ASCII only: a code point is a byte) costs are compared too.
Counts compare_with_reference(uint32_t seed, int grammars, const std::u32string& alphabet, const std::u32string& probe,
                              bool check_costs) {
  std::mt19937 rng(seed);
  Counts n;
  for (int iter = 0; iter < grammars; ++iter) {
    const RefGrammar g = RefGenerator(rng, alphabet).grammar();
    const std::string text = RefRenderer(rng).render(g);
    const auto c = OutputConstraint::from_gbnf(text);
    if (!testing::productive_rules(g)[0]) {
      EXPECT_EQ(c.status().code(), StatusCode::InvalidArgument) << text;
      EXPECT_NE(c.status().message().find("generates no string"), std::string::npos) << c.status().to_string();
      ++n.unproductive;
      continue;
    }
    if (!c.ok()) {
      ADD_FAILURE() << text << "\n" << c.status().to_string();
      continue;
    }
    ++n.compiled;
    const OutputConstraint& con = **c;
    bool over_budget = false;
    // The matcher's completion cost after `s`; false (and the grammar skipped) when over budget.
    auto cost_of = [&](const std::u32string& s, int64_t& cost) {
      over_budget = over_budget || !bounded_cost(con, utf8(s), cost);
      return !over_budget;
    };
    std::vector<std::u32string> members;
    RefSampler sampler(g, rng, probe);
    for (int i = 0; i < 8; ++i) {
      std::u32string s;
      if (sampler.sample(s) && s.size() <= 24) members.push_back(s);
    }
    std::vector<std::u32string> strings = {U""};
    for (const std::u32string& m : members) {
      strings.push_back(m);
      for (int i = 0; i < 3; ++i) strings.push_back(mutate(rng, m, probe));
    }
    for (int i = 0; i < 8; ++i) strings.push_back(random_string(rng, probe, 5));
    for (const std::u32string& s : strings) {
      int64_t cost = 0;
      if (!cost_of(s, cost)) break;
      const bool expected = RefRecognizer(g, s).full();
      EXPECT_EQ(cost == 0, expected) << text << "string: '" << utf8(s) << "'";
      ++n.strings;
      n.accepted += expected;
    }
    for (const std::u32string& m : members) {
      EXPECT_TRUE(RefRecognizer(g, m).full()) << "the sampler is wrong: " << utf8(m);
      for (size_t k = 0; k <= m.size() && !over_budget; ++k) {
        const std::string rest = utf8(m.substr(k));
        int64_t cost = 0;
        if (!cost_of(m.substr(0, k), cost)) break;
        EXPECT_LE(cost, static_cast<int64_t>(rest.size())) << text << "prefix of '" << utf8(m) << "' at " << k;
      }
    }
    if (check_costs && !over_budget) check_exact_costs(g, text, members, cost_of, rng, probe, n);
    n.too_ambiguous += over_budget;
  }
  return n;
}

TEST(GbnfReference, AsciiGrammarsAcceptAndCostAsTheReference) {
  const Counts n = compare_with_reference(20240611, 90, U"abcd", U"abcdz", /*check_costs=*/true);
  // The generator must produce enough real cases for the comparison to mean something.
  EXPECT_GE(n.compiled, 60);
  EXPECT_LE(n.too_ambiguous, n.compiled / 10);
  EXPECT_GE(n.accepted, 300);
  EXPECT_GE(n.strings - n.accepted, 300);
  EXPECT_GE(n.exact_costs, 300);
}

TEST(GbnfReference, MultiByteGrammarsAcceptAsTheReference) {
  // One character each of 1, 2, 3 and 4 UTF-8 bytes; U+00FF and U+0100 straddle a lead byte.
  const Counts n = compare_with_reference(77, 60, U"a\u00e9\u20ac\U0001F600", U"a\u00e9\u20ac\U0001F600z\u00ff\u0100",
                                          /*check_costs=*/false);
  EXPECT_GE(n.compiled, 40);
  EXPECT_LE(n.too_ambiguous, n.compiled / 10);
  EXPECT_GE(n.accepted, 150);
  EXPECT_GE(n.strings - n.accepted, 150);
}

}  // namespace
}  // namespace cellserve::engine::grammar
