// ByteDfa: the canonical form (trimmed, minimal, coarsest classes) of everything the public
// functions return, checked by independent brute force; minimize() and intersect() against
// exact product walks; accept_distances() against a search over strings; max_growth().
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "engine/grammar/byte_dfa.h"
#include "engine/grammar/number_dfa.h"
#include "engine/grammar/regex_compiler.h"
#include "engine/grammar/schema.h"
#include "engine/grammar/string_dfa.h"

namespace cellserve::engine::grammar {
namespace {

// The number of states after naive Moore refinement over all 256 bytes (no byte classes, no
// Hopcroft): equal to states() exactly when no two states are equivalent.
size_t moore_blocks(const ByteDfa& d) {
  std::vector<uint32_t> block(d.states());
  for (uint32_t s = 0; s < d.states(); ++s) block[s] = d.accepting[s];
  size_t count = 0;
  for (size_t round = 0; round <= d.states(); ++round) {
    std::map<std::vector<uint32_t>, uint32_t> ids;
    std::vector<uint32_t> next_block(d.states());
    for (uint32_t s = 0; s < d.states(); ++s) {
      std::vector<uint32_t> sig = {block[s]};
      for (int b = 0; b < 256; ++b) sig.push_back(block[d.step(s, static_cast<uint8_t>(b))]);
      next_block[s] = ids.emplace(sig, static_cast<uint32_t>(ids.size())).first->second;
    }
    block = next_block;
    if (ids.size() == count) break;
    count = ids.size();
  }
  return count;
}

void expect_canonical(const ByteDfa& d, const std::string& what) {
  SCOPED_TRACE(what);
  const uint32_t n = d.states(), k = d.n_classes;
  ASSERT_GE(n, 1u);
  ASSERT_EQ(d.next.size(), static_cast<size_t>(n) * k);
  std::vector<int> bytes_in_class(k, 0);
  for (int b = 0; b < 256; ++b) {
    ASSERT_LT(d.byte_class[b], k);
    ++bytes_in_class[d.byte_class[b]];
  }
  for (uint32_t c = 0; c < k; ++c) EXPECT_GT(bytes_in_class[c], 0) << "class " << c << " has no byte";
  for (uint32_t t : d.next) ASSERT_LT(t, n);
  // kDead: not accepting, every transition to itself.
  EXPECT_EQ(d.accepting[ByteDfa::kDead], 0);
  for (uint32_t c = 0; c < k; ++c) EXPECT_EQ(d.next[c], ByteDfa::kDead);
  if (n == 1) {
    EXPECT_EQ(d.start, ByteDfa::kDead);
    return;
  }
  ASSERT_NE(d.start, ByteDfa::kDead);
  // Every live state is reachable and can reach an accepting state.
  std::vector<uint8_t> reached(n, 0);
  std::vector<uint32_t> queue = {d.start};
  reached[d.start] = 1;
  for (size_t i = 0; i < queue.size(); ++i) {
    for (int b = 0; b < 256; ++b) {
      const uint32_t t = d.step(queue[i], static_cast<uint8_t>(b));
      if (!reached[t]) reached[t] = 1, queue.push_back(t);
    }
  }
  for (uint32_t s = 1; s < n; ++s) EXPECT_TRUE(reached[s]) << "state " << s << " unreachable";
  std::vector<uint8_t> can_accept(n, 0);
  for (uint32_t s = 0; s < n; ++s) can_accept[s] = d.accepting[s];
  for (bool changed = true; changed;) {
    changed = false;
    for (uint32_t s = 0; s < n; ++s) {
      for (int b = 0; b < 256 && !can_accept[s]; ++b) {
        if (can_accept[d.step(s, static_cast<uint8_t>(b))]) can_accept[s] = 1, changed = true;
      }
    }
  }
  for (uint32_t s = 1; s < n; ++s) EXPECT_TRUE(can_accept[s]) << "state " << s << " cannot accept";
  EXPECT_EQ(moore_blocks(d), n) << "not minimal";
  // Coarsest classes: any two classes differ somewhere.
  for (uint32_t c1 = 0; c1 < k; ++c1) {
    for (uint32_t c2 = c1 + 1; c2 < k; ++c2) {
      bool differ = false;
      for (uint32_t s = 0; s < n && !differ; ++s) differ = d.next[s * k + c1] != d.next[s * k + c2];
      EXPECT_TRUE(differ) << "classes " << c1 << " and " << c2 << " could merge";
    }
  }
}

// A raw automaton's acceptance without ByteDfa::accepts (whose early exit assumes kDead).
bool raw_accepts(const ByteDfa& raw, std::string_view s) {
  uint32_t q = raw.start;
  for (char c : s) q = raw.next[q * raw.n_classes + raw.byte_class[static_cast<uint8_t>(c)]];
  return raw.accepting[q] != 0;
}

// Walks the product of two automata from their start states over all 256 bytes; false when a
// reachable pair disagrees on acceptance (so the languages differ).
bool same_language(const ByteDfa& x, const ByteDfa& y) {
  std::map<std::pair<uint32_t, uint32_t>, bool> seen;
  std::vector<std::pair<uint32_t, uint32_t>> queue = {{x.start, y.start}};
  seen[queue[0]] = true;
  for (size_t i = 0; i < queue.size(); ++i) {
    const auto [p, q] = queue[i];
    if ((x.accepting[p] != 0) != (y.accepting[q] != 0)) return false;
    for (int b = 0; b < 256; ++b) {
      const std::pair<uint32_t, uint32_t> t = {x.next[p * x.n_classes + x.byte_class[b]],
                                               y.next[q * y.n_classes + y.byte_class[b]]};
      if (seen.emplace(t, true).second) queue.push_back(t);
    }
  }
  return true;
}

TEST(ByteDfaTest, MinimizeRandomAutomata) {
  std::mt19937 rng(11);
  for (int iter = 0; iter < 400; ++iter) {
    std::array<uint8_t, 256> cls{};
    const uint32_t n_classes = 2 + rng() % 4;  // the last class may have no byte
    for (int b = 0; b < 256; ++b) cls[b] = static_cast<uint8_t>(rng() % (n_classes - 1));
    ByteDfa raw;
    raw.byte_class = cls;
    raw.n_classes = n_classes;
    const uint32_t n = 1 + rng() % 9;
    for (uint32_t s = 0; s < n; ++s) {
      raw.accepting.push_back(rng() % 3 == 0);
      for (uint32_t c = 0; c < n_classes; ++c) raw.next.push_back(rng() % n);
    }
    raw.start = rng() % n;
    const ByteDfa m = minimize(raw);
    expect_canonical(m, "random automaton " + std::to_string(iter));
    EXPECT_TRUE(same_language(raw, m)) << iter;
    EXPECT_LE(m.states(), n + 1);
    for (int t = 0; t < 20; ++t) {  // and through accepts() itself
      std::string s;
      for (size_t len = rng() % 6; len > 0; --len) s += static_cast<char>(rng() % 256);
      EXPECT_EQ(m.accepts(s), raw_accepts(raw, s));
    }
  }
}

TEST(ByteDfaTest, EmptyLanguage) {
  const ByteDfa e = empty_dfa();
  expect_canonical(e, "empty");
  EXPECT_FALSE(e.accepts(""));
  ByteDfa raw = raw_dfa({}, 1);
  raw.start = add_state(raw, false);
  set_transition(raw, raw.start, 0, raw.start);
  const ByteDfa m = minimize(raw);
  EXPECT_EQ(m.start, ByteDfa::kDead);
  EXPECT_EQ(m.states(), 1u);
}

// A small generator of regexes over a, b, c (and `.`, [^a], which take any code point), for the
// properties below.
std::string random_regex(std::mt19937& rng, int depth = 0) {
  std::string p;
  const int n = 1 + static_cast<int>(rng() % (depth == 0 ? 3 : 2));
  for (int i = 0; i < n; ++i) {
    const uint32_t k = rng() % (depth == 0 ? 8 : 7);
    static const char* const kAtoms[] = {"a", "b", "c", ".", "[ab]", "[^a]", "c"};
    std::string atom =
        k < 7 ? kAtoms[k] : "(" + random_regex(rng, depth + 1) + "|" + random_regex(rng, depth + 1) + ")";
    static const char* const kQuantifiers[] = {"", "", "", "*", "+", "?", "{2}", "{1,3}", "{2,}"};
    p += atom + kQuantifiers[rng() % 9];
  }
  return p;
}

// compile_regex, or nullopt when the automaton is over the default limit (rare for these).
std::optional<ByteDfa> try_compile(const std::string& p, RegexMode mode) {
  auto d = compile_regex(p, mode, {});
  if (!d.ok()) {
    EXPECT_NE(d.status().message().find("(max_dfa_states)"), std::string::npos) << p << ": " << d.status().message();
    return std::nullopt;
  }
  return *d;
}

TEST(ByteDfaTest, EveryProducerIsCanonical) {
  std::mt19937 rng(3);
  for (int i = 0; i < 150; ++i) {
    const std::string p = random_regex(rng);
    for (RegexMode mode : {RegexMode::FullMatch, RegexMode::Search}) {
      if (auto d = try_compile(p, mode)) expect_canonical(*d, "regex " + p);
    }
  }
  for (const char* p : {"", "[]", "[^]*", ".*", "\\s+", "\\W", "a|[^a]"}) {
    auto d = compile_regex(p, RegexMode::FullMatch, {});
    ASSERT_TRUE(d.ok());
    expect_canonical(*d, std::string("regex ") + p);
  }
  for (const char* f : {"date", "time", "date-time", "uuid", "email", "ipv4", "ipv6"}) {
    auto d = compile_regex(*format_regex(f), RegexMode::FullMatch, {});
    ASSERT_TRUE(d.ok()) << f << ": " << d.status().to_string();
    expect_canonical(*d, f);
  }
  for (auto [lo, hi] :
       std::vector<std::pair<uint32_t, uint32_t>>{{0, UINT32_MAX}, {0, 0}, {3, 5}, {2, UINT32_MAX}, {4, 2}}) {
    auto d = utf8_length_dfa(lo, hi, {});
    ASSERT_TRUE(d.ok());
    expect_canonical(*d, "utf8 length " + std::to_string(lo) + ".." + std::to_string(hi));
  }
  NumberBounds b;
  expect_canonical(*number_dfa(b, {}), "number");
  b.minimum = "-12.5";
  b.maximum = "1E3";
  expect_canonical(*number_dfa(b, {}), "number -12.5..1000");
  b.integer = true;
  b.multiple_of = 12;
  expect_canonical(*number_dfa(b, {}), "integer multipleOf 12");
}

TEST(ByteDfaTest, IntersectRandomRegexes) {
  std::mt19937 rng(5);
  int nonempty = 0;
  for (int i = 0; i < 200; ++i) {
    const std::string p = random_regex(rng), q = random_regex(rng);
    auto a = try_compile(p, RegexMode::Search);
    auto b = try_compile(q, RegexMode::FullMatch);
    if (!a || !b) continue;
    auto c = intersect(*a, *b, {});
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    expect_canonical(*c, p + " & " + q);
    nonempty += c->start != ByteDfa::kDead;
    // Exact: walk the triple product over every byte.
    std::map<std::array<uint32_t, 3>, bool> seen;
    std::vector<std::array<uint32_t, 3>> queue = {{a->start, b->start, c->start}};
    seen[queue[0]] = true;
    for (size_t j = 0; j < queue.size(); ++j) {
      const auto [x, y, z] = queue[j];
      ASSERT_EQ(c->accepting[z] != 0, a->accepting[x] && b->accepting[y]) << p << " & " << q;
      for (int byte = 0; byte < 256; ++byte) {
        const auto u = static_cast<uint8_t>(byte);
        const std::array<uint32_t, 3> t = {a->step(x, u), b->step(y, u), c->step(z, u)};
        if (seen.emplace(t, true).second) queue.push_back(t);
      }
    }
  }
  EXPECT_GT(nonempty, 20);
  EXPECT_LT(nonempty, 190);
}

TEST(ByteDfaTest, IntersectLimit) {
  auto a = compile_regex("((a|b){70})*", RegexMode::FullMatch, {});
  auto b = compile_regex("((a|b){71})*", RegexMode::FullMatch, {});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->states(), 71u);
  auto c = intersect(*a, *b, {});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::InvalidArgument);
  EXPECT_NE(c.status().message().find("the limit (max_dfa_states) is 4096"), std::string::npos) << c.status().message();
  GrammarLimits wide;
  wide.max_dfa_states = 5000;
  auto d = intersect(*a, *b, wide);
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(d->states(), 70u * 71u + 1);
  EXPECT_TRUE(d->accepts(std::string(70 * 71, 'a')));
  EXPECT_FALSE(d->accepts(std::string(70, 'a')));
  EXPECT_TRUE(d->accepts(""));
  // Disjoint languages intersect to the empty automaton.
  auto x = compile_regex("a+", RegexMode::FullMatch, {});
  auto y = compile_regex("b+", RegexMode::FullMatch, {});
  auto none = intersect(*x, *y, {});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->start, ByteDfa::kDead);
}

// The least cost over byte strings of length < max_len from `s` to acceptance (kInf if none).
int64_t brute_distance(const ByteDfa& d, uint32_t s, const std::array<int64_t, 256>& cost, std::string_view alphabet,
                       int max_len) {
  if (s == ByteDfa::kDead) return kInf;
  int64_t best = d.accepting[s] ? 0 : kInf;
  if (max_len == 0) return best;
  for (char c : alphabet) {
    const int64_t w = cost[static_cast<uint8_t>(c)];
    if (w >= kInf) continue;
    const int64_t rest = brute_distance(d, d.step(s, static_cast<uint8_t>(c)), cost, alphabet, max_len - 1);
    if (rest < kInf) best = std::min(best, w + rest);
  }
  return best;
}

TEST(ByteDfaTest, AcceptDistancesMatchBruteForce) {
  std::mt19937 rng(9);
  const std::string alphabet = "abcd";
  int checked = 0, infinite = 0;
  for (int i = 0; i < 400 && checked < 300; ++i) {
    auto d = try_compile(random_regex(rng), rng() % 2 ? RegexMode::FullMatch : RegexMode::Search);
    if (!d || d->states() > 6) continue;
    std::array<int64_t, 256> cost;
    cost.fill(kInf);
    static const int64_t kCosts[] = {1, 2, 3, 7, kInf};
    for (char c : alphabet) cost[static_cast<uint8_t>(c)] = kCosts[rng() % 5];
    const std::vector<int64_t> dist = accept_distances(*d, cost);
    ASSERT_EQ(dist.size(), d->states());
    EXPECT_EQ(dist[ByteDfa::kDead], kInf);
    // Costs are >= 1, so a cheapest path visits no state twice: length < states().
    for (uint32_t s = 0; s < d->states(); ++s) {
      const int64_t expected = brute_distance(*d, s, cost, alphabet, static_cast<int>(d->states()));
      EXPECT_EQ(dist[s], expected) << "state " << s;
      if (s != ByteDfa::kDead) infinite += expected >= kInf;
      ++checked;
    }
    // max_growth, by its definition over bytes.
    int64_t growth = 0;
    for (uint32_t s = 1; s < d->states(); ++s) {
      for (int b = 0; b < 256; ++b) {
        const uint32_t t = d->step(s, static_cast<uint8_t>(b));
        if (t != ByteDfa::kDead && dist[s] < kInf && dist[t] < kInf) growth = std::max(growth, dist[t] - dist[s]);
      }
    }
    EXPECT_EQ(max_growth(*d, dist), growth);
  }
  EXPECT_GE(checked, 300);
  EXPECT_GT(infinite, 0);  // some states complete only through bytes of cost kInf
}

TEST(ByteDfaTest, DistancesAndGrowthByHand) {
  auto d = compile_regex("a(bbb)?c", RegexMode::FullMatch, {});
  ASSERT_TRUE(d.ok());
  std::array<int64_t, 256> unit;
  unit.fill(1);
  const std::vector<int64_t> dist = accept_distances(*d, unit);
  EXPECT_EQ(dist[d->start], 2);
  const uint32_t after_a = d->step(d->start, 'a'), after_ab = d->step(after_a, 'b');
  EXPECT_EQ(dist[after_a], 1);
  EXPECT_EQ(dist[after_ab], 3);
  EXPECT_EQ(max_growth(*d, dist), 2);  // "a" -> "ab": from 1 to 3
  // A 4-byte character costs 4 bytes.
  auto emoji = compile_regex("x\\u{1F600}", RegexMode::FullMatch, {});
  ASSERT_TRUE(emoji.ok());
  EXPECT_EQ(accept_distances(*emoji, unit)[emoji->start], 5);
  // Costlier bytes steer the path: "ab" vs "c" with c expensive.
  auto alt = compile_regex("ab|c", RegexMode::FullMatch, {});
  ASSERT_TRUE(alt.ok());
  std::array<int64_t, 256> cost = unit;
  cost['c'] = 5;
  EXPECT_EQ(accept_distances(*alt, cost)[alt->start], 2);
  cost['c'] = kInf;
  cost['a'] = kInf;
  EXPECT_EQ(accept_distances(*alt, cost)[alt->start], kInf);
}

}  // namespace
}  // namespace cellserve::engine::grammar
