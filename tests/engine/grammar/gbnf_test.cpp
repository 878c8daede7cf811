// GBNF grammars through the matcher: llama.cpp-style example grammars, Unicode classes at the
// byte level, exact completion costs, external JSON rules, and the rule-depth limit.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "engine/grammar/output_constraint.h"
#include "engine/grammar/schema.h"
#include "gbnf_reference.h"
#include "grammar_test_util.h"

namespace cellserve::engine::grammar {
namespace {

using testing::accepts;
using testing::accepts_prefix;
using testing::cost_after;
using testing::utf8;

std::shared_ptr<const OutputConstraint> gbnf(
    const std::string& text, const GrammarLimits& limits = {},
    const std::map<std::string, std::shared_ptr<const OutputConstraint>>& externals = {}) {
  auto c = OutputConstraint::from_gbnf(text, limits, externals);
  EXPECT_TRUE(c.ok()) << text << "\n" << c.status().to_string();
  return c.ok() ? *c : nullptr;
}

const char* const kArithmetic = R"GBNF(
root   ::= expr
expr   ::= term (("+" | "-") term)*
term   ::= factor (("*" | "/") factor)*
factor ::= number | "(" expr ")"
number ::= [0-9]+
)GBNF";

const char* const kJsonLike = R"GBNF(
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::=
  "{" ws (
    string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws
array  ::= "[" ws ( value ("," ws value)* )? "]" ws
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) )* "\"" ws
number ::= "-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]+)? ([eE] [-+]? [0-9]{1,3})? ws
ws     ::= | " " | "\n" [ \t]{0,20}
)GBNF";

const char* const kItemList = R"GBNF(
root ::= item+
item ::= "- " [^\n]+ "\n"
)GBNF";

const char* const kRiskLevel = R"GBNF(root ::= "RISK_LEVEL: " [1-9])GBNF";

const char* const kChess = R"GBNF(
root    ::= "1. " move " " move "\n" ([1-9] [0-9]? ". " move " " move "\n")+
move    ::= (pawn | nonpawn | castle) [+#]?
pawn    ::= ([a-h] "x")? [a-h] [1-8] ("=" [NBRQ])?
nonpawn ::= [NBKQR] [a-h]? [1-8]? "x"? [a-h] [1-8]
castle  ::= "O-O" "-O"?
)GBNF";

TEST(Gbnf, Arithmetic) {
  auto c = gbnf(kArithmetic);
  for (const char* ok : {"1", "12+3", "1+2*(3-4)/56", "((7))", "(1+2)*(3+4)"}) EXPECT_TRUE(accepts(*c, ok)) << ok;
  for (const char* bad : {"", "1+", "(1", "1++2", "()", "1 + 2", "a"}) EXPECT_FALSE(accepts(*c, bad)) << bad;
  EXPECT_EQ(cost_after(*c, ""), 1);
  EXPECT_EQ(cost_after(*c, "(1+"), 2);  // "1)"
  EXPECT_EQ(cost_after(*c, "(("), 3);   // "1))"
  EXPECT_EQ(cost_after(*c, "12"), 0);
  EXPECT_EQ(cost_after(*c, "1)"), kInf);
}

TEST(Gbnf, JsonLike) {
  auto c = gbnf(kJsonLike);
  for (const char* ok : {"{}", R"({"a": [1, 2.5, "x\u00e9"], "b": {"c": null}})", "{\n  \"k\":-0.5e+10}",
                         R"({"s":"\"\\"})", "{\"\xC3\xA9\":true} "})
    EXPECT_TRUE(accepts(*c, ok)) << ok;
  for (const char* bad : {"[]", "{", R"({"a" 1})", R"({"a":01})", "{\"a\":\"\x01\"}", R"({"a":"\x"})", "{} {}"})
    EXPECT_FALSE(accepts(*c, bad)) << bad;
  EXPECT_EQ(cost_after(*c, R"({"a":[)"), 2);   // "]}"
  EXPECT_EQ(cost_after(*c, R"({"a":)"), 2);    // "0}"
  EXPECT_EQ(cost_after(*c, R"({"a":"x)"), 2);  // "\"}"
}

TEST(Gbnf, ItemList) {
  auto c = gbnf(kItemList);
  EXPECT_TRUE(accepts(*c, "- milk\n- \xE2\x82\xAC 3\n"));
  EXPECT_FALSE(accepts(*c, "- milk"));
  EXPECT_FALSE(accepts(*c, "- \n"));
  EXPECT_FALSE(accepts(*c, ""));
  EXPECT_EQ(cost_after(*c, ""), 4);
  EXPECT_EQ(cost_after(*c, "- a"), 1);
  EXPECT_EQ(cost_after(*c, "- a\n"), 0);
}

TEST(Gbnf, RiskLevel) {
  auto c = gbnf(kRiskLevel);
  EXPECT_TRUE(accepts(*c, "RISK_LEVEL: 7"));
  EXPECT_FALSE(accepts(*c, "RISK_LEVEL: 0"));
  EXPECT_FALSE(accepts(*c, "RISK_LEVEL: 10"));
  EXPECT_EQ(cost_after(*c, ""), 13);
  EXPECT_EQ(cost_after(*c, "RISK"), 9);
}

TEST(Gbnf, ChessMoves) {
  auto c = gbnf(kChess);
  EXPECT_TRUE(accepts(*c, "1. e4 e5\n2. Nf3 Nc6\n3. Bb5 a6\n"));
  EXPECT_TRUE(accepts(*c, "1. d4 d5\n2. c4 dxc4\n10. O-O-O Qxd8#\n"));
  EXPECT_FALSE(accepts(*c, "1. e9 e5\n2. Nf3 Nc6\n"));
  EXPECT_FALSE(accepts(*c, "1. e4 e5\n"));     // at least one numbered move after the first
  EXPECT_EQ(cost_after(*c, "1. e4 e5\n"), 9);  // "1. a1 a1\n"
}

// Whether `cp` is in the class written as `ranges` (negated or not), by definition.
bool in_class(uint32_t cp, const std::vector<std::pair<uint32_t, uint32_t>>& ranges, bool negated) {
  bool in = false;
  for (const auto& [lo, hi] : ranges) in |= cp >= lo && cp <= hi;
  return in != negated;
}

TEST(Gbnf, UnicodeClassesMatchTheirCodePoints) {
  struct Case {
    const char* text;
    std::vector<std::pair<uint32_t, uint32_t>> ranges;
    bool negated;
  };
  const Case cases[] = {
      {"[\\u03b1-\\u03c9]", {{0x3B1, 0x3C9}}, false},
      {"[^a-z]", {{'a', 'z'}}, true},
      {".", {}, true},
      {"[\\u00e0-\\u00ff\\u4e00-\\u9fff\\U0001F600-\\U0001F64F]",
       {{0xE0, 0xFF}, {0x4E00, 0x9FFF}, {0x1F600, 0x1F64F}},
       false},
      {"[^\\x00-\\x7f]", {{0, 0x7F}}, true},
      {"[\\u0000-\\uffff]", {{0, 0xFFFF}}, false},  // surrogates excluded by UTF-8 itself
      {"[\\u07ff-\\u0801\\uffff-\\U00010000\\U0010ffff]",
       {{0x7FF, 0x801}, {0xFFFF, 0x10000}, {0x10FFFF, 0x10FFFF}},
       false},
      {"[^\\u0100\\u0102\\u0104\\u0800-\\u0fff]",
       {{0x100, 0x100}, {0x102, 0x102}, {0x104, 0x104}, {0x800, 0xFFF}},
       true},
  };
  std::mt19937 rng(5);
  for (const Case& k : cases) {
    auto c = gbnf(std::string("root ::= ") + k.text);
    std::vector<uint32_t> probes = {0, 0x7F, 0x80, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xFFFD, 0xFFFF, 0x10000, 0x10FFFF};
    for (const auto& [lo, hi] : k.ranges)
      for (uint32_t p : {lo - 1, lo, lo + 1, hi - 1, hi, hi + 1}) probes.push_back(p);
    for (int i = 0; i < 300; ++i) probes.push_back(rng() % 0x110000);
    for (uint32_t cp : probes) {
      if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) continue;
      const std::string bytes = utf8(static_cast<char32_t>(cp));
      EXPECT_EQ(accepts(*c, bytes), in_class(cp, k.ranges, k.negated)) << k.text << " U+" << std::hex << cp;
    }
  }
}

// Whether `bytes` is the start of a well-formed UTF-8 sequence (RFC 3629), by the table.
bool utf8_prefix(const std::string& bytes) {
  const auto b = [&](size_t i) { return static_cast<uint8_t>(bytes[i]); };
  if (bytes.empty()) return true;
  size_t n = 0;
  uint8_t lo = 0x80, hi = 0xBF;
  if (b(0) < 0x80)
    n = 1;
  else if (b(0) >= 0xC2 && b(0) <= 0xDF)
    n = 2;
  else if (b(0) >= 0xE0 && b(0) <= 0xEF)
    n = 3, lo = b(0) == 0xE0 ? 0xA0 : 0x80, hi = b(0) == 0xED ? 0x9F : 0xBF;
  else if (b(0) >= 0xF0 && b(0) <= 0xF4)
    n = 4, lo = b(0) == 0xF0 ? 0x90 : 0x80, hi = b(0) == 0xF4 ? 0x8F : 0xBF;
  else
    return false;
  if (bytes.size() > n) return false;
  if (bytes.size() > 1 && (b(1) < lo || b(1) > hi)) return false;
  for (size_t i = 2; i < bytes.size(); ++i)
    if (b(i) < 0x80 || b(i) > 0xBF) return false;
  return true;
}

TEST(Gbnf, AnyCharacterNeverAdmitsInvalidUtf8) {
  auto dot = gbnf("root ::= .");
  auto negated = gbnf("root ::= [^\\u00e9]");
  // Every one-byte sequence, and every two-byte one whose first byte is not ASCII or a continuation.
  std::vector<std::string> sequences;
  for (unsigned b0 = 0; b0 < 256; ++b0) {
    sequences.emplace_back(1, static_cast<char>(b0));
    for (unsigned b1 = 0; b0 >= 0xC0 && b1 < 256; ++b1)
      sequences.push_back({static_cast<char>(b0), static_cast<char>(b1)});
  }
  for (const std::string& s : sequences) {
    const auto b0 = static_cast<uint8_t>(s[0]);
    const bool whole = utf8_prefix(s) && (s.size() == 2 ? b0 >= 0xC2 && b0 <= 0xDF : b0 < 0x80);
    ASSERT_EQ(accepts_prefix(*dot, s), utf8_prefix(s)) << std::hex << int{b0} << " " << s.size();
    ASSERT_EQ(accepts(*dot, s), whole) << std::hex << int{b0} << " " << s.size();
    ASSERT_EQ(accepts_prefix(*negated, s), utf8_prefix(s) && s != "\xC3\xA9") << std::hex << int{b0};
  }
  for (const char* bad : {"\xE0\x80\x80", "\xED\xA0\x80", "\xF0\x80\x80\x80", "\xF4\x90\x80\x80", "\xF5\x80\x80\x80",
                          "\xC0\x80", "\xC1\xBF", "\x80", "\xFF"}) {
    EXPECT_FALSE(accepts_prefix(*dot, bad)) << bad;
    EXPECT_FALSE(accepts_prefix(*negated, bad)) << bad;
  }
  for (const char* good : {"\xE0\xA0\x80", "\xED\x9F\xBF", "\xEE\x80\x80", "\xF0\x90\x80\x80", "\xF4\x8F\xBF\xBF"})
    EXPECT_TRUE(accepts(*dot, good)) << good;
  EXPECT_EQ(cost_after(*dot, "\xF0"), 3);
  EXPECT_EQ(cost_after(*dot, "\xF0\x9F"), 2);
}

TEST(Gbnf, LiteralsInUtf8) {
  auto c = gbnf("root ::= \"\xF0\x9F\x98\x80\" \"\\U0001F600\" \"\\u00e9\" \"\\xe9\"");
  EXPECT_TRUE(accepts(*c, "\xF0\x9F\x98\x80\xF0\x9F\x98\x80\xC3\xA9\xC3\xA9"));
  EXPECT_EQ(cost_after(*c, ""), 12);
  EXPECT_EQ(cost_after(*c, "\xF0\x9F"), 10);
}

// Exact costs on grammars where the shortest completion goes through nested rules, repetitions
// and empty alternatives, against a brute-force search over short strings.
TEST(Gbnf, CostsAreExact) {
  struct Case {
    const char* grammar;
    std::string alphabet;  // every byte its strings use
  };
  const Case cases[] = {
      {"root ::= \"abc\" | \"de\"", "abcde"},
      {"root ::= a a \"x\"\na ::= \"\" | \"yy\"", "xy"},
      {"root ::= (\"ab\" | \"c\"){2,3} \"d\"?", "abcd"},
      {"root ::= \"(\" root \")\" | \"x\" \"y\"*", "()xy"},
      {"root ::= [a-c]{3} | \"b\" [^a-y] \"c\"", "abcz"},
  };
  for (const Case& k : cases) {
    auto c = gbnf(k.grammar);
    // Every string of up to 5 bytes, shortest first.
    std::vector<std::string> all = {""};
    for (size_t from = 0; all.back().size() < 5;) {
      const size_t to = all.size();
      for (size_t i = from; i < to; ++i)
        for (char ch : k.alphabet) all.push_back(all[i] + ch);
      from = to;
    }
    int compared = 0;
    for (const std::string& prefix : all) {
      if (prefix.size() > 3) break;
      if (!accepts_prefix(*c, prefix)) {  // a dead prefix: no completion (checked short ones below)
        EXPECT_EQ(cost_after(*c, prefix), kInf);
        for (size_t i = 0; i < all.size() && all[i].size() <= 2; ++i) EXPECT_FALSE(accepts(*c, prefix + all[i]));
        continue;
      }
      int64_t best = kInf;
      for (const std::string& rest : all) {
        if (accepts(*c, prefix + rest)) {
          best = static_cast<int64_t>(rest.size());
          break;
        }
      }
      const int64_t cost = cost_after(*c, prefix);
      if (best < kInf) {
        EXPECT_EQ(cost, best) << k.grammar << " after '" << prefix << "'";
        ++compared;
      } else {
        EXPECT_GT(cost, 5) << k.grammar << " after '" << prefix << "'";
      }
    }
    EXPECT_GE(compared, 4) << k.grammar;
  }
}

TEST(Gbnf, ExternalJsonValues) {
  auto obj = testing::compile(R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]})");
  auto c = gbnf("root ::= \"<call>\" obj \"</call>\"", {}, {{"obj", obj}});
  EXPECT_TRUE(accepts(*c, R"(<call>{"a":1}</call>)"));
  EXPECT_TRUE(accepts(*c, R"(<call>{ "a" : -12 }</call>)"));
  EXPECT_FALSE(accepts(*c, R"(<call>{}</call>)"));
  EXPECT_FALSE(accepts(*c, R"(<call>{"a":"x"}</call>)"));
  EXPECT_FALSE(accepts(*c, R"(<call> {"a":1}</call>)"));  // no whitespace the grammar does not write
  EXPECT_FALSE(accepts(*c, R"(<call>{"a":1} </call>)"));
  EXPECT_EQ(cost_after(*c, ""), 6 + 7 + 7);  // {"a":0}
  EXPECT_EQ(cost_after(*c, "<call>{\"a\":1"), 1 + 7);
  EXPECT_EQ(cost_after(*c, "<call>{\"a\":1}"), 7);
  EXPECT_EQ(cost_after(*c, "<call>{\"a\":1}</"), 5);
}

TEST(Gbnf, ExternalNumberOrLiteralEndsWhereTheGrammarGoesOn) {
  auto integer = testing::compile(R"({"type":"integer"})");
  auto boolean = testing::compile(R"({"type":"boolean"})");
  auto either = testing::compile(R"({"anyOf":[{"type":"number"},{"type":"string","maxLength":2},{"enum":["x",[1]]}]})");
  auto c = gbnf("root ::= \"n=\" num (\",\" num)* \";\" flag \"!\" v", {},
                {{"num", integer}, {"flag", boolean}, {"v", either}});
  EXPECT_TRUE(accepts(*c, "n=12,3,-40;true!1.5"));
  EXPECT_TRUE(accepts(*c, "n=0;false!\"ab\""));
  EXPECT_TRUE(accepts(*c, "n=0;false![1]"));
  EXPECT_TRUE(accepts(*c, "n=0;false!2e5"));
  EXPECT_FALSE(accepts(*c, "n=01;true!1"));
  EXPECT_FALSE(accepts(*c, "n=1.5;true!1"));
  EXPECT_FALSE(accepts(*c, "n=1;tru!1"));
  EXPECT_FALSE(accepts(*c, "n=0;false!\"abc\""));
  // After "n=1" the number may grow or the grammar go on.
  EXPECT_TRUE(accepts_prefix(*c, "n=12"));
  EXPECT_TRUE(accepts_prefix(*c, "n=1,"));
  EXPECT_TRUE(accepts_prefix(*c, "n=1;"));
  EXPECT_FALSE(accepts_prefix(*c, "n=1x"));
  EXPECT_EQ(cost_after(*c, "n=1"), 1 + 4 + 1 + 1);  // ";true!0"
  EXPECT_EQ(cost_after(*c, "n=1;true!1"), 0);       // complete, yet "1" may grow
  EXPECT_TRUE(accepts_prefix(*c, "n=1;true!12"));
}

TEST(Gbnf, ExternalRootAndUnusedExternals) {
  auto obj = testing::compile(R"({"type":"object"})");
  auto c = gbnf("", {}, {{"root", obj}, {"unused", obj}});
  EXPECT_TRUE(accepts(*c, "{\"k\":[1]}"));
  EXPECT_FALSE(accepts(*c, "[]"));
  // A rule the text defines wins over an external of the same name.
  c = gbnf("root ::= obj\nobj ::= \"o\"", {}, {{"obj", obj}});
  EXPECT_TRUE(accepts(*c, "o"));
  EXPECT_FALSE(accepts(*c, "{}"));
}

TEST(Gbnf, ExternalGrammarsAreRefused) {
  auto inner = gbnf("root ::= \"x\"");
  const auto c = OutputConstraint::from_gbnf("root ::= \"a\" g", {}, {{"g", inner}});
  EXPECT_EQ(c.status().code(), StatusCode::InvalidArgument);
  EXPECT_NE(c.status().message().find("line 1, column 14: the external rule 'g' is a GBNF grammar"), std::string::npos)
      << c.status().to_string();
}

TEST(Gbnf, ExternalConstraintsStayAlive) {
  std::shared_ptr<const OutputConstraint> c;
  {
    auto obj = testing::compile(R"({"type":"array","items":{"type":"string"}})");
    c = gbnf("root ::= \"x\" v", {}, {{"v", obj}});
  }  // the only other reference to the schema is gone
  EXPECT_TRUE(accepts(*c, "x[\"a\",\"b\"]"));
  EXPECT_FALSE(accepts(*c, "x[1]"));
}

TEST(Gbnf, TailRecursionDoesNotGrowTheStack) {
  GrammarLimits limits;
  limits.max_grammar_depth = 2;
  auto right = gbnf("root ::= \"a\" root | \"b\"", limits);
  auto star = gbnf("root ::= [a-z]* \"!\"", limits);
  auto list = gbnf("root ::= item (\",\" root)?\nitem ::= [0-9]", limits);
  std::string as(3000, 'a'), digits;
  for (int i = 0; i < 1000; ++i) digits += (i ? "," : "") + std::to_string(i % 10);
  EXPECT_TRUE(accepts(*right, as + "b"));
  EXPECT_TRUE(accepts(*star, as + "!"));
  EXPECT_TRUE(accepts(*list, digits));
  ThreadSet state, scratch;
  initial_state(list->root(), state);
  ASSERT_TRUE(step_bytes(state, digits, scratch));
  for (size_t i = 0; i < state.size(); ++i) EXPECT_LE(state[i].size(), 2u);
}

TEST(Gbnf, RuleDepthLimit) {
  GrammarLimits limits;
  limits.max_grammar_depth = 4;
  auto c = gbnf("root ::= \"(\" root \")\" | \"x\"", limits);
  // The bottom frame and one per open parenthesis but the first: three fit under a limit of 4.
  for (int k = 0; k <= 6; ++k) {
    const std::string open(static_cast<size_t>(k), '(');
    EXPECT_EQ(accepts(*c, open + "x" + std::string(static_cast<size_t>(k), ')')), k <= 3) << k;
    // A parse that could not finish within the limit is never entered.
    EXPECT_EQ(accepts_prefix(*c, open), k <= 3) << k;
  }
  auto deep = gbnf("root ::= \"(\" root \")\" | \"x\"");
  const std::string ok = std::string(255, '(') + "x" + std::string(255, ')');
  EXPECT_TRUE(accepts(*deep, ok));
  EXPECT_FALSE(accepts_prefix(*deep, std::string(256, '(')));
}

TEST(Gbnf, AmbiguityMergesEqualParses) {
  auto c = gbnf("root ::= ws ws ws \"x\"\nws ::= [ ]*");
  ThreadSet state, scratch;
  initial_state(c->root(), state);
  ASSERT_TRUE(step_bytes(state, std::string(50, ' '), scratch));
  EXPECT_LE(state.size(), 3u);  // which ws is reading: the counts so far do not matter
  ASSERT_TRUE(step_bytes(state, "x", scratch));
  EXPECT_EQ(completion_cost(state), 0);
}

}  // namespace
}  // namespace cellserve::engine::grammar
