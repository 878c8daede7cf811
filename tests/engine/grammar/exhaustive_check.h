// Exhaustive checks of a compiled constraint on short texts, against the independent validator
// of grammar_test_util.h:
//   - every text the matcher takes as a complete document (enumerated depth first over an
//     alphabet, the matcher pruning dead prefixes) parses as JSON and validates;
//   - every live prefix's completion cost is exactly the length of its shortest completion over
//     the alphabet (breadth first), so budgets close exactly;
//   - every candidate text is accepted exactly when it parses and validates.
// The enumeration is kept small: inside a string (the alphabet has no backslash, so an odd count
// of quotes) only the alphabet's letters and digits may appear, at most `max_string` of them, and
// outside strings at most `max_digits` digits follow each other.
#pragma once

#include <gtest/gtest.h>

#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json.hpp>

#include "grammar_test_util.h"

namespace cellserve::engine::grammar::testing {

// Whether a JSON text repeats an object key. Free keys are not checked against each other
// (docs/grammar.md), so such a text counts each entry; a parser keeps one.
inline bool repeats_a_key(const std::string& text) {
  std::set<std::string> keys;
  size_t pos = 0;
  while ((pos = text.find('"', pos)) != std::string::npos) {
    const size_t end = text.find('"', pos + 1);
    if (end == std::string::npos) break;
    if (end + 1 < text.size() && text[end + 1] == ':' && !keys.insert(text.substr(pos, end - pos + 1)).second)
      return true;
    pos = end + 1;
  }
  return false;
}

struct Enumeration {
  std::string_view alphabet;
  size_t max_len = 16;
  size_t max_string = 2;
  size_t max_digits = 2;
  int64_t cost_check_limit = 8;  // costs up to this are compared with a breadth-first search

  // Whether `text + ch` stays within the bounds above.
  bool may_extend(const std::string& text, char ch) const {
    size_t quotes = 0;
    for (char c : text) quotes += c == '"';
    const bool in_string = quotes % 2 == 1;
    const bool alnum = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
    if (in_string && ch != '"') {
      if (!alnum) return false;
      size_t run = 0;
      for (size_t i = text.size(); i-- > 0 && text[i] != '"';) ++run;
      return run < max_string;
    }
    if (!in_string && ch >= '0' && ch <= '9') {
      size_t run = 0;
      for (size_t i = text.size(); i-- > 0 && text[i] >= '0' && text[i] <= '9';) ++run;
      return run < max_digits;
    }
    return true;
  }
};

struct ExhaustiveStats {
  size_t prefixes = 0;   // live prefixes visited
  size_t documents = 0;  // complete documents found
};

// The fewest bytes over `alphabet` that complete `state` (or -1 beyond `limit`).
inline int64_t shortest_completion(const ThreadSet& state, std::string_view alphabet, int64_t limit) {
  // Unrestricted: the shortest completion may need a longer number or string than the bounds.
  struct Node {
    ThreadSet state;
    int64_t depth;
  };
  std::deque<Node> todo;
  todo.push_back({state, 0});
  ThreadSet next;
  size_t visited = 0;
  while (!todo.empty() && visited < 200'000) {
    Node n = std::move(todo.front());
    todo.pop_front();
    ++visited;
    if (completion_cost(n.state) == 0) return n.depth;
    if (n.depth >= limit) continue;
    for (char ch : alphabet) {
      step(n.state, static_cast<uint8_t>(ch), next);
      if (!next.empty()) todo.push_back({next, n.depth + 1});
    }
  }
  return -1;
}

inline ExhaustiveStats check_exhaustively(const OutputConstraint& c, const json::value& schema, const Enumeration& e) {
  const std::string_view alphabet = e.alphabet;
  ExhaustiveStats stats;
  struct Item {
    std::string text;
    ThreadSet state;
  };
  std::vector<Item> stack;
  Item first;
  initial_state(c.root(), first.state);
  stack.push_back(std::move(first));
  ThreadSet next;
  while (!stack.empty()) {
    Item it = std::move(stack.back());
    stack.pop_back();
    ++stats.prefixes;
    const int64_t cost = completion_cost(it.state);
    EXPECT_LT(cost, kInf) << "a live prefix that cannot be completed: " << it.text;
    if (cost == 0 && !repeats_a_key(it.text)) {
      ++stats.documents;
      boost::system::error_code ec;
      const json::value v = json::parse(it.text, ec);
      std::string why;
      EXPECT_FALSE(ec) << it.text;
      if (!ec) {
        EXPECT_TRUE(validate(v, schema, schema, why)) << it.text << ": " << why;
      }
    }
    if (cost <= e.cost_check_limit) {
      EXPECT_EQ(shortest_completion(it.state, alphabet, e.cost_check_limit + 1), cost) << "after '" << it.text << "'";
    }
    if (it.text.size() >= e.max_len) continue;
    for (char ch : alphabet) {
      if (!e.may_extend(it.text, ch)) continue;
      step(it.state, static_cast<uint8_t>(ch), next);
      if (next.empty()) continue;
      stack.push_back({it.text + ch, next});
    }
  }
  return stats;
}

// Whether `text` is accepted exactly when it is JSON that validates.
inline void expect_agrees(const OutputConstraint& c, const json::value& schema, const std::string& text) {
  boost::system::error_code ec;
  const json::value v = json::parse(text, ec);
  std::string why;
  const bool valid = !ec && validate(v, schema, schema, why);
  EXPECT_EQ(accepts(c, text), valid) << text << (valid ? "" : " (" + why + ")");
}

}  // namespace cellserve::engine::grammar::testing
