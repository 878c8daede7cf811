// compile_regex: generated patterns against std::regex (ECMAScript), UTF-8 handling, escapes,
// what is refused, and the limits.
#include <gtest/gtest.h>

#include <random>
#include <regex>
#include <string>
#include <vector>

#include "engine/grammar/regex_compiler.h"

namespace cellserve::engine::grammar {
namespace {

ByteDfa compiled(std::string_view pattern, RegexMode mode = RegexMode::FullMatch, const GrammarLimits& limits = {}) {
  auto d = compile_regex(pattern, mode, limits);
  EXPECT_TRUE(d.ok()) << pattern << ": " << d.status().to_string();
  return d.ok() ? *d : empty_dfa();
}

bool full(std::string_view pattern, std::string_view text) { return compiled(pattern).accepts(text); }
bool search(std::string_view pattern, std::string_view text) {
  return compiled(pattern, RegexMode::Search).accepts(text);
}

// ---- Generated patterns over a small ASCII alphabet, compared with std::regex. ----

// The bytes of the generated strings: letters, a digit, a word character, white space, a line
// terminator (which `.` does not match).
constexpr char kAlphabet[] = {'a', 'b', 'c', '1', '_', ' ', '\n'};

// Patterns are kept small (depth <= 2, at most 3 items a sequence) so that their automata fit the
// default limits, and an unbounded quantifier never applies to an atom that matches the empty
// string: libstdc++'s backtracking std::regex takes exponential time on nested nullable loops.
class PatternGenerator {
 public:
  explicit PatternGenerator(uint32_t seed) : rng_(seed) {}

  // Top-level alternatives, each possibly anchored at either end.
  std::string pattern() {
    std::string p;
    const int alts = pick(4) == 0 ? 2 : 1;
    for (int i = 0; i < alts; ++i) {
      if (i > 0) p += '|';
      if (pick(4) == 0) p += '^';
      p += sequence(0, pick(6) == 0 ? 0 : 1).text;
      if (pick(4) == 0) p += '$';
    }
    return p;
  }

  std::mt19937& rng() { return rng_; }

 private:
  struct Piece {
    std::string text;
    bool nullable = false;  // matches the empty string
  };

  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint32_t>(n)); }

  Piece alternation(int depth) {
    Piece p = sequence(depth, pick(8) == 0 ? 0 : 1);
    while (pick(3) == 0) {
      const Piece q = sequence(depth, pick(8) == 0 ? 0 : 1);
      p.text += "|" + q.text;
      p.nullable |= q.nullable;
    }
    return p;
  }
  Piece sequence(int depth, int min_items) {
    Piece p{"", true};
    const int n = min_items + pick(4 - min_items);
    for (int i = 0; i < n; ++i) {
      const Piece q = item(depth);
      p.text += q.text;
      p.nullable &= q.nullable;
    }
    return p;
  }
  Piece item(int depth) {
    Piece a = atom(depth);
    const int lo = pick(3);
    switch (pick(12)) {
      case 0:
        a.text += a.nullable ? "?" : "*";
        a.nullable = true;
        break;
      case 1:
        a.text += a.nullable ? "{1,2}" : "+";
        break;
      case 2:
        a.text += '?';
        a.nullable = true;
        break;
      case 3:
        a.text += "{" + std::to_string(lo) + "}";
        a.nullable |= lo == 0;
        break;
      case 4:
        a.text += a.nullable ? "{" + std::to_string(lo) + ",3}" : "{" + std::to_string(lo) + ",}";
        a.nullable |= lo == 0;
        break;
      case 5:
        a.text += "{" + std::to_string(lo) + "," + std::to_string(lo + pick(3)) + "}";
        a.nullable |= lo == 0;
        break;
      default:
        return a;
    }
    if (pick(4) == 0) a.text += '?';  // lazy
    return a;
  }
  Piece atom(int depth) {
    static const char* const kClasses[] = {"[ab]",   "[^a]",   "[a-c]", "[^b-c]", "[\\d]",    "[a\\s]",
                                           "[^\\w]", "[_1-2]", "[-a]",  "[c-]",   "[^\\s\\d]"};
    static const char* const kEscapes[] = {"\\d", "\\w", "\\s", "\\D", "\\W", "\\S", "\\n", "\\x61", "\\u0062"};
    const int k = pick(depth < 2 ? 13 : 10);
    if (k < 4) return {std::string(1, "abc1"[k])};
    if (k == 4) return {"."};
    if (k == 5) return {" "};
    if (k == 6) return {kClasses[pick(sizeof kClasses / sizeof kClasses[0])]};
    if (k < 10) return {kEscapes[pick(sizeof kEscapes / sizeof kEscapes[0])]};
    Piece inner = alternation(depth + 1);
    inner.text = (pick(2) == 0 ? "(" : "(?:") + inner.text + ")";
    return inner;
  }

  std::mt19937 rng_;
};

// Strings to try: random ones, and random walks of the automaton that stop in accepting states
// (so that most patterns also get strings they match).
std::vector<std::string> candidate_strings(const ByteDfa& dfa, std::mt19937& rng) {
  std::vector<std::string> out;
  for (int i = 0; i < 14; ++i) {
    std::string s;
    const size_t len = rng() % 8;
    for (size_t j = 0; j < len; ++j) s += kAlphabet[rng() % sizeof kAlphabet];
    out.push_back(s);
  }
  for (int i = 0; i < 8 && dfa.start != ByteDfa::kDead; ++i) {
    std::string s;
    uint32_t state = dfa.start;
    for (int step = 0; step < 12; ++step) {
      if (dfa.accepting[state] && rng() % 3 == 0) break;
      std::vector<char> live;
      for (char c : kAlphabet) {
        if (dfa.step(state, static_cast<uint8_t>(c)) != ByteDfa::kDead) live.push_back(c);
      }
      if (live.empty()) break;
      const char c = live[rng() % live.size()];
      s += c;
      state = dfa.step(state, static_cast<uint8_t>(c));
    }
    out.push_back(s);
    // A one-byte change of the walk, to land just outside the language.
    if (!s.empty()) {
      s[rng() % s.size()] = kAlphabet[rng() % sizeof kAlphabet];
      out.push_back(s);
    }
  }
  return out;
}

void compare_with_std_regex(RegexMode mode, uint32_t seed, int patterns) {
  PatternGenerator gen(seed);
  int matched = 0, refused = 0, too_big = 0;
  for (int i = 0; i < patterns; ++i) {
    const std::string p = gen.pattern();
    auto dfa = compile_regex(p, mode, {});
    // A few random patterns need more states than the default limit; that refusal is fine.
    if (!dfa.ok() && dfa.status().message().find("(max_dfa_states)") != std::string::npos) {
      ++too_big;
      continue;
    }
    ASSERT_TRUE(dfa.ok()) << p << ": " << dfa.status().to_string();
    std::regex re;
    try {
      re = std::regex(p, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      FAIL() << "std::regex refuses " << p << ": " << e.what();
    }
    for (const std::string& s : candidate_strings(*dfa, gen.rng())) {
      const bool expected = mode == RegexMode::FullMatch ? std::regex_match(s, re) : std::regex_search(s, re);
      ASSERT_EQ(dfa->accepts(s), expected) << "pattern " << p << " string '" << s << "'";
      (expected ? matched : refused) += 1;
    }
  }
  // The generator is only useful if both outcomes are common.
  EXPECT_GT(matched, patterns * 3);
  EXPECT_GT(refused, patterns * 3);
  EXPECT_LT(too_big, patterns / 50);
}

TEST(RegexTest, FullMatchAgreesWithStdRegex) { compare_with_std_regex(RegexMode::FullMatch, 1, 1500); }
TEST(RegexTest, SearchAgreesWithStdRegex) { compare_with_std_regex(RegexMode::Search, 2, 1500); }

// ---- Hand-written cases. ----

TEST(RegexTest, SearchAnchoring) {
  EXPECT_TRUE(search("abc", "xxabcxx"));
  EXPECT_FALSE(search("abc", "xxabxcx"));
  EXPECT_TRUE(search("^abc", "abcxx"));
  EXPECT_FALSE(search("^abc", "xabc"));
  EXPECT_TRUE(search("abc$", "xxabc"));
  EXPECT_FALSE(search("abc$", "abcx"));
  EXPECT_TRUE(search("^a|b$", "ax"));
  EXPECT_TRUE(search("^a|b$", "xb"));
  EXPECT_FALSE(search("^a|b$", "xa"));
  EXPECT_FALSE(search("^a|b$", "bx"));
  EXPECT_TRUE(search("^$", ""));
  EXPECT_FALSE(search("^$", "a"));
  EXPECT_TRUE(search("", "anything \n at all"));
  // The padding is any code point, line terminators and multi-byte characters included.
  EXPECT_TRUE(search("b",
                     "\n\xE2\x82\xAC"
                     "b\xF0\x9F\x98\x80"));
  EXPECT_FALSE(search("b", "b\xC3"));  // never invalid UTF-8
  // FullMatch: ^ and $ at those places change nothing.
  EXPECT_TRUE(full("^a|b$", "a"));
  EXPECT_TRUE(full("^a|b$", "b"));
  EXPECT_FALSE(full("^a|b$", "ab"));
  EXPECT_TRUE(full("^(?:a|b)+$", "abba"));
}

TEST(RegexTest, Utf8Literals) {
  const std::string euro = "\xE2\x82\xAC", emoji = "\xF0\x9F\x98\x80", e_acute = "\xC3\xA9";
  EXPECT_TRUE(full(euro + "+", euro + euro));
  EXPECT_FALSE(full(euro + "+", euro + "\xE2\x82"));
  EXPECT_TRUE(full(emoji + "{2}", emoji + emoji));
  EXPECT_FALSE(full(emoji + "{2}", emoji));
  // A quantifier applies to the whole character, not its last byte.
  EXPECT_FALSE(full(e_acute + "{2}", "\xC3\xA9\xA9"));
  EXPECT_TRUE(full("caf" + e_acute, "caf" + e_acute));
}

TEST(RegexTest, DotIsOneCodePoint) {
  const std::string emoji = "\xF0\x9F\x98\x80";
  EXPECT_TRUE(full(".", emoji));
  EXPECT_TRUE(full(".", "\xC3\xA9"));
  EXPECT_TRUE(full(".", "\xEF\xBF\xBF"));      // U+FFFF
  EXPECT_TRUE(full(".", "\xF4\x8F\xBF\xBF"));  // U+10FFFF
  EXPECT_FALSE(full(".", emoji + emoji));
  EXPECT_TRUE(full("..", emoji + "a"));
  EXPECT_FALSE(full(".", "\n"));
  EXPECT_FALSE(full(".", "\r"));
  EXPECT_FALSE(full(".", "\xE2\x80\xA8"));  // U+2028
  EXPECT_FALSE(full(".", "\xE2\x80\xA9"));  // U+2029
  EXPECT_TRUE(full(".", "\xE2\x80\xAA"));   // U+202A
  EXPECT_TRUE(full("[^]", "\n"));
  EXPECT_FALSE(full("[]", ""));
  EXPECT_FALSE(full("a[]", "a"));
}

// Invalid UTF-8 that no class, negated class, `.` or \W may accept.
const std::vector<std::string>& invalid_utf8() {
  static const std::vector<std::string> k = {
      "\x80",              // lone continuation byte
      "\xBF",              //
      "\xC3",              // truncated
      "\xE2\x82",          //
      "\xF0\x9F\x98",      //
      "\xC0\x80",          // overlong NUL
      "\xC1\xBF",          // overlong
      "\xE0\x80\x80",      // overlong 3-byte
      "\xE0\x9F\xBF",      //
      "\xF0\x80\x80\x80",  // overlong 4-byte
      "\xF0\x8F\xBF\xBF",  //
      "\xED\xA0\x80",      // U+D800 (surrogate)
      "\xED\xBF\xBF",      // U+DFFF
      "\xF4\x90\x80\x80",  // U+110000
      "\xF5\x80\x80\x80",  //
      "\xFF",              //
      "\xFE",              //
  };
  return k;
}

TEST(RegexTest, NegatedClassesNeverAcceptInvalidUtf8) {
  for (const char* p : {".", "[^a]", "[^\\x00-\\x7F]", "\\W", "\\S", "\\D", "[^]", "[\\u0080-\\u{10FFFF}]",
                        "[^\\u{10000}-\\u{10FFFF}]", "[\\s\\S]"}) {
    const ByteDfa d = compiled(p);
    for (const std::string& bad : invalid_utf8())
      EXPECT_FALSE(d.accepts(bad)) << p << " " << testing::PrintToString(bad);
  }
  // But the surrounding valid characters are there.
  EXPECT_TRUE(full("[^a]", "\xED\x9F\xBF"));  // U+D7FF
  EXPECT_TRUE(full("[^a]", "\xEE\x80\x80"));  // U+E000
  EXPECT_TRUE(full("[^a]", "\xF4\x8F\xBF\xBF"));
  EXPECT_TRUE(full("[^a]", "\xC2\x80"));
  EXPECT_FALSE(full("[^a]", "a"));
  EXPECT_TRUE(full("[^\\u{10000}-\\u{10FFFF}]", "\xEF\xBF\xBF"));
  EXPECT_FALSE(full("[^\\u{10000}-\\u{10FFFF}]", "\xF0\x90\x80\x80"));
}

TEST(RegexTest, MultiByteClassRanges) {
  // é (U+00E9) .. ü (U+00FC); € (U+20AC); a range across the 2-, 3- and 4-byte boundaries.
  const ByteDfa latin = compiled("[\xC3\xA9-\xC3\xBC]");
  EXPECT_TRUE(latin.accepts("\xC3\xA9"));
  EXPECT_TRUE(latin.accepts("\xC3\xB0"));
  EXPECT_TRUE(latin.accepts("\xC3\xBC"));
  EXPECT_FALSE(latin.accepts("\xC3\xA8"));
  EXPECT_FALSE(latin.accepts("\xC3\xBD"));
  const ByteDfa wide = compiled("[\\u07FF-\\u{10000}]");
  for (const char* ok : {"\xDF\xBF", "\xE0\xA0\x80", "\xEF\xBF\xBF", "\xF0\x90\x80\x80", "\xE4\xB8\xAD"}) {
    EXPECT_TRUE(wide.accepts(ok)) << testing::PrintToString(ok);
  }
  for (const char* bad : {"\xDF\xBE", "\xF0\x90\x80\x81", "\xED\xA0\x80", "a"}) {
    EXPECT_FALSE(wide.accepts(bad)) << testing::PrintToString(bad);
  }
  EXPECT_TRUE(full("[a\xE2\x82\xAC-\xE2\x82\xAF]+",
                   "a\xE2\x82\xAD"
                   "a"));
  // Code points by escape.
  EXPECT_TRUE(full("\\u{1F600}", "\xF0\x9F\x98\x80"));
  EXPECT_TRUE(full("\\uD83D\\uDE00", "\xF0\x9F\x98\x80"));  // a surrogate pair is its code point
  EXPECT_TRUE(full("\\u20AC\\x41\\u{41}",
                   "\xE2\x82\xAC"
                   "AA"));
  EXPECT_TRUE(full("[\\uD83D\\uDE00-\\uD83D\\uDE4F]", "\xF0\x9F\x98\x8F"));
}

TEST(RegexTest, Escapes) {
  EXPECT_TRUE(full("\\d+", "0123456789"));
  EXPECT_FALSE(full("\\d", "\xD9\xA3"));  // Arabic-Indic three: \d is ASCII only
  EXPECT_TRUE(full("\\w+", "azAZ09_"));
  EXPECT_FALSE(full("\\w", "\xC3\xA9"));
  EXPECT_TRUE(full("\\W", "\xC3\xA9"));
  for (const char* space :
       {"\t", "\n", "\v", "\f", "\r", " ", "\xC2\xA0", "\xE1\x9A\x80", "\xE2\x80\x80", "\xE2\x80\x8A", "\xE2\x80\xA8",
        "\xE2\x80\xA9", "\xE2\x80\xAF", "\xE2\x81\x9F", "\xE3\x80\x80", "\xEF\xBB\xBF"}) {
    EXPECT_TRUE(full("\\s", space)) << testing::PrintToString(space);
    EXPECT_FALSE(full("\\S", space)) << testing::PrintToString(space);
  }
  for (const char* other : {"a", "\xE2\x80\x8B", "\xC2\x85", "\x1C"}) {  // U+200B, U+0085 are not \s
    EXPECT_FALSE(full("\\s", other)) << testing::PrintToString(other);
  }
  EXPECT_TRUE(full("\\t\\n\\r\\f\\v", "\t\n\r\f\v"));
  EXPECT_TRUE(full(std::string_view("\\0", 2), std::string_view("\0", 1)));
  EXPECT_TRUE(full("\\cJ", "\n"));
  EXPECT_TRUE(full("[\\b]", "\b"));
  EXPECT_TRUE(full("\\.\\*\\\\\\/\\-\\[\\]\\(\\)\\{\\}\\|\\^\\$\\?\\+", ".*\\/-[](){}|^$?+"));
  EXPECT_TRUE(full("\\\"\\#\\:", "\"#:"));
  EXPECT_TRUE(full("[\\]\\-]+", "]-]"));
  EXPECT_TRUE(full("a]}", "a]}"));  // lone ] and } are literals (Annex B)
  EXPECT_TRUE(full("(?<year>\\d{4})-(?:\\d\\d)", "2024-05"));
  EXPECT_TRUE(full("a{2,}?b+?c??", "aab"));
}

TEST(RegexTest, CountedRepetition) {
  EXPECT_TRUE(full("a{3}", "aaa"));
  EXPECT_FALSE(full("a{3}", "aa"));
  EXPECT_TRUE(full("(ab){2,3}", "ababab"));
  EXPECT_FALSE(full("(ab){2,3}", "abababab"));
  EXPECT_TRUE(full("a{0}", ""));
  EXPECT_TRUE(full("(a|bc){2,}", "abcbca"));
  EXPECT_TRUE(full("(?:a?){3}", "a"));
  EXPECT_TRUE(full("x{1000}", std::string(1000, 'x')));
  EXPECT_FALSE(full("x{1000}", std::string(999, 'x')));
}

// ---- Refusals. ----

void expect_refused(std::string_view pattern, StatusCode code, std::string_view message,
                    RegexMode mode = RegexMode::FullMatch, const GrammarLimits& limits = {}) {
  auto d = compile_regex(pattern, mode, limits);
  ASSERT_FALSE(d.ok()) << pattern;
  EXPECT_EQ(d.status().code(), code) << pattern << ": " << d.status().to_string();
  EXPECT_NE(d.status().message().find(message), std::string::npos) << pattern << ": " << d.status().message();
}

TEST(RegexTest, UnsupportedConstructs) {
  constexpr StatusCode kU = StatusCode::Unimplemented;
  expect_refused("(a)\\1", kU, "backreferences (\\1) are not supported");
  expect_refused("(?<x>a)\\k<x>", kU, "backreferences (\\k<name>)");
  expect_refused("a(?=b)", kU, "lookahead");
  expect_refused("a(?!b)", kU, "lookahead");
  expect_refused("(?<=a)b", kU, "lookbehind");
  expect_refused("(?<!a)b", kU, "lookbehind");
  expect_refused("\\bword\\b", kU, "word boundaries");
  expect_refused("a\\B", kU, "word boundaries");
  expect_refused("\\p{L}", kU, "Unicode property escapes");
  expect_refused("[\\P{L}]", kU, "Unicode property escapes");
  expect_refused("(?i)abc", kU, "flags and group modifiers ((?i)");
  expect_refused("(?i:abc)", kU, "flags and group modifiers");
  expect_refused("(?P<n>a)", kU, "flags and group modifiers");
  expect_refused("a^b", kU, "anchor '^'");
  expect_refused("(^a)", kU, "anchor '^'");
  expect_refused("a$b", kU, "anchor '$'");
  expect_refused("(a$)", kU, "anchor '$'");
  expect_refused("(a$)|b", kU, "anchor '$'", RegexMode::Search);
  expect_refused("^^a", kU, "anchor '^'", RegexMode::Search);
  expect_refused("\\01", kU, "octal escapes");
}

TEST(RegexTest, MalformedPatterns) {
  constexpr StatusCode kI = StatusCode::InvalidArgument;
  expect_refused("(ab", kI, "unbalanced parenthesis: '(' at offset 0");
  expect_refused("a(b(c)", kI, "unbalanced parenthesis: '(' at offset 1");
  expect_refused("ab)", kI, "unbalanced parenthesis: ')' at offset 2");
  expect_refused("[z-a]", kI, "bad range z-a");
  expect_refused("x[z-a]", kI, "bad range z-a (out of order) at offset 2");
  expect_refused("a{3,2}", kI, "bad quantifier {3,2}");
  expect_refused("*a", kI, "nothing to repeat at offset 0");
  expect_refused("a|+", kI, "nothing to repeat at offset 2");
  expect_refused("a**", kI, "nothing to repeat at offset 2");
  expect_refused("a{2}{3}", kI, "nothing to repeat at offset 4");
  expect_refused("(?:)?+", kI, "nothing to repeat");
  expect_refused("^*", kI, "nothing to repeat");
  expect_refused("{2}", kI, "nothing to repeat");
  expect_refused("a{", kI, "does not start a quantifier");
  expect_refused("a{x}", kI, "does not start a quantifier");
  expect_refused("{", kI, "does not start a quantifier");
  expect_refused("\\q", kI, "bad escape \\q at offset 0");
  expect_refused("ab\\", kI, "ends with a backslash");
  expect_refused("\\x4", kI, "bad \\x escape");
  expect_refused("\\u12", kI, "bad \\u escape");
  expect_refused("\\u{110000}", kI, "bad \\u{...} escape");
  expect_refused("\\u{}", kI, "bad \\u{...} escape");
  expect_refused("\\uD800", kI, "lone surrogate");
  expect_refused("\\uDE00", kI, "lone surrogate");
  expect_refused("\\u{D83D}", kI, "lone surrogate");
  expect_refused("[a", kI, "unterminated character class '[' at offset 0");
  expect_refused("[\\d-z]", kI, "class escape cannot bound a range");
  expect_refused("[\\B]", kI, "in a character class");
  expect_refused("(?<>a)", kI, "bad group name");
  expect_refused("(?<a b>a)", kI, "bad group name");
  expect_refused("a\xC3", kI, "not valid UTF-8 at offset 1");
  expect_refused("\xED\xA0\x80", kI, "not valid UTF-8 at offset 0");
  expect_refused(std::string(300, '(') + std::string(300, ')'), kI, "nested more than 256 deep");
}

// ---- Limits: refused quickly, naming the limit. ----

TEST(RegexTest, BracedSurrogatesDoNotPair) {
  // ECMA-262 pairs only \uHHHH\uHHHH; \u{D83D} is a lone surrogate.
  EXPECT_FALSE(compile_regex("\\u{D83D}\\uDE00", RegexMode::FullMatch, {}).ok());
  auto paired = compile_regex("\\uD83D\\uDE00", RegexMode::FullMatch, {});
  ASSERT_TRUE(paired.ok());
  EXPECT_TRUE(paired->accepts("\xF0\x9F\x98\x80"));
}

TEST(RegexTest, MessagesKeepWholeCharacters) {
  for (const char* p : {"(?\xC3\xA9)", "\\\xC3\xA9"}) {
    auto r = compile_regex(p, RegexMode::FullMatch, {});
    ASSERT_FALSE(r.ok()) << p;
    EXPECT_NE(r.status().message().find("\xC3\xA9"), std::string::npos) << r.status().message();
  }
}

TEST(RegexTest, Limits) {
  constexpr StatusCode kI = StatusCode::InvalidArgument;
  GrammarLimits small;
  small.max_regex_bytes = 10;
  expect_refused("abcdefghijk", kI, "the pattern is 11 bytes; the limit (max_regex_bytes) is 10", RegexMode::FullMatch,
                 small);
  EXPECT_TRUE(compile_regex("abcdefghij", RegexMode::FullMatch, small).ok());

  // Exponential subset constructions stop at the state limit.
  expect_refused("(a|b)*a(a|b){20}", kI, "the limit (max_dfa_states) is 4096");
  expect_refused("a(a|b){20}", kI, "the limit (max_dfa_states) is 4096", RegexMode::Search);
  // Nested counts are refused from the tree's size, before anything is built.
  expect_refused("a{1000}{1000}", kI, "nothing to repeat");
  expect_refused("(a{1000}){1000}", kI, "the limit (max_dfa_states) is 4096");
  expect_refused("((a{100}){100}){100}", kI, "the limit (max_dfa_states) is 4096");
  expect_refused("(){4000000000}", kI, "the limit (max_dfa_states) is 4096");
  expect_refused("(a|){99999}", kI, "the limit (max_dfa_states) is 4096");
  expect_refused(".{5000}", kI, "the limit (max_dfa_states) is 4096");
  // A size past SIZE_MAX (which nfa_size saturates at) is refused too, not wrapped around to 0.
  expect_refused("(a{4294967294}){4294967294}", kI, "the limit (max_dfa_states) is 4096");
  expect_refused("x((a{99999}){99999}){999999999}|y", kI, "the limit (max_dfa_states) is 4096", RegexMode::Search);
  GrammarLimits tiny;
  tiny.max_dfa_states = 10;
  expect_refused("a{11}", kI, "the limit (max_dfa_states) is 10", RegexMode::FullMatch, tiny);
  EXPECT_TRUE(compile_regex("a{9}", RegexMode::FullMatch, tiny).ok());
  // A large but legitimate pattern fits.
  EXPECT_TRUE(
      compile_regex("[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(\\.[A-Za-z0-9-]{1,63}){1,4}", RegexMode::FullMatch, {})
          .ok());
}

}  // namespace
}  // namespace cellserve::engine::grammar
