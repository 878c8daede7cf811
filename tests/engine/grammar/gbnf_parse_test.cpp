// GBNF grammars that are refused, with the line and column of the reason, and the limits of
// GrammarLimits named in the errors.
#include <gtest/gtest.h>

#include <string>

#include "engine/grammar/output_constraint.h"
#include "grammar_test_util.h"

namespace cellserve::engine::grammar {
namespace {

Status compile_status(const std::string& text, const GrammarLimits& limits = {}) {
  return OutputConstraint::from_gbnf(text, limits).status();
}

struct Refused {
  const char* grammar;
  StatusCode code;
  const char* message;  // a part of the message
};

TEST(GbnfParse, RefusedWithPositions) {
  const Refused cases[] = {
      {"root ::= \"abc", StatusCode::InvalidArgument,
       "line 1, column 10: the string literal started here has no closing '\"'"},
      {"root ::= [a-", StatusCode::InvalidArgument, "line 1, column 10: the character class started here has no"},
      {"root ::= [z-a]", StatusCode::InvalidArgument, "line 1, column 11: the range U+007A-U+0061 is reversed"},
      {"root ::= \"a\"\n  foo", StatusCode::InvalidArgument, "line 2, column 3: undefined rule 'foo'"},
      {"root ::= a b\nb ::= c", StatusCode::InvalidArgument,
       "line 1, column 10: undefined rule 'a'; line 2, column 7: undefined rule 'c'"},
      {"foo ::= \"a\"", StatusCode::InvalidArgument, "no rule 'root'"},
      {"root ::= \"a\"\nroot ::= \"b\"", StatusCode::InvalidArgument,
       "line 2, column 1: rule 'root' is defined twice (first at line 1, column 1)"},
      {"root ::= *\"a\"", StatusCode::InvalidArgument, "line 1, column 10: '*' must follow an item"},
      {"root ::= ( \"a\"", StatusCode::InvalidArgument, "line 1, column 10: the group opened here has no ')'"},
      {"root ::= ( \"a\"\nx ::= \"b\" )", StatusCode::InvalidArgument, "line 1, column 10: the group opened here"},
      {"root ::= \"a\" )", StatusCode::InvalidArgument, "line 1, column 14: unmatched ')'"},
      {"root = \"a\"", StatusCode::InvalidArgument, "line 1, column 6: expected '::=' after the rule name 'root'"},
      {"root ::= \"a\" @", StatusCode::InvalidArgument, "line 1, column 14: expected an item"},
      {"::= \"a\"", StatusCode::InvalidArgument, "line 1, column 1: expected a rule name, found ':'"},
      {"root ::= \"\\q\"", StatusCode::InvalidArgument, "line 1, column 11: unknown escape '\\q'"},
      {"root ::= \"\\x4\"", StatusCode::InvalidArgument, "line 1, column 11: the escape '\\x' needs 2 hex digits"},
      {"root ::= \"\\uD800\"", StatusCode::InvalidArgument, "line 1, column 11: invalid code point U+D800"},
      {"root ::= [\\U00110000]", StatusCode::InvalidArgument, "line 1, column 11: invalid code point U+110000"},
      {"root ::= \"\xFF\"", StatusCode::InvalidArgument, "line 1, column 11: the grammar is not valid UTF-8"},
      {"root ::= \"a\"{3,2}", StatusCode::InvalidArgument,
       "line 1, column 13: the repetition {3,2} has its minimum above its maximum"},
      {"root ::= \"a\"{2001}", StatusCode::InvalidArgument,
       "line 1, column 14: the repetition count 2001 is above the limit of 2000"},
      {"root ::= \"a\"{1,99999999999999999999}", StatusCode::InvalidArgument, "is above the limit of 2000"},
      {"root ::= \"a\"{}", StatusCode::InvalidArgument, "line 1, column 14: expected a count in '{}'"},
      {"root ::= \"a\"{,}", StatusCode::InvalidArgument, "expected a count in '{,}'"},
      {"root ::= \"a\"{1;2}", StatusCode::InvalidArgument, "line 1, column 15: expected ',' or '}'"},
      // Columns count code points, not bytes.
      {"root ::= \"\xC3\xA9\xE2\x82\xAC\" foo", StatusCode::InvalidArgument, "line 1, column 15: undefined rule 'foo'"},
      {"root ::= <[1234]>", StatusCode::Unimplemented, "line 1, column 10: llama.cpp's token terminals"},
      {"root ::= \"a\" <think> \"b\"", StatusCode::Unimplemented, "line 1, column 14: llama.cpp's token terminals"},
      {"root ::= !<[5]>", StatusCode::Unimplemented, "token terminals"},
      {"%llguidance {}\nstart: \"a\"", StatusCode::Unimplemented, "llguidance"},
      {"root ::= \"a\" root", StatusCode::InvalidArgument, "line 1, column 1: rule 'root' generates no string"},
      {"root ::= []", StatusCode::InvalidArgument, "rule 'root' generates no string"},
  };
  for (const Refused& c : cases) {
    const Status s = compile_status(c.grammar);
    EXPECT_EQ(s.code(), c.code) << c.grammar << "\n" << s.to_string();
    EXPECT_NE(s.message().find(c.message), std::string::npos) << c.grammar << "\n" << s.to_string();
  }
}

TEST(GbnfParse, LeftRecursionIsRefusedNamingTheRule) {
  const Refused cases[] = {
      {"root ::= expr\nexpr ::= expr \"+\" \"1\" | \"1\"", StatusCode::InvalidArgument,
       "line 2, column 1: rule 'expr' is left-recursive: it can reach itself before reading any character (expr -> "
       "expr)"},
      // Through a rule that can be empty.
      {"root ::= a\na ::= b? a \"x\" | \"y\"\nb ::= \"z\"", StatusCode::InvalidArgument, "rule 'a' is left-recursive"},
      {"root ::= a\na ::= e a \"x\" | \"y\"\ne ::= \"\" | \"q\"", StatusCode::InvalidArgument,
       "rule 'a' is left-recursive"},
      // Through other rules and groups.
      {"root ::= a\na ::= (b | \"w\") \"x\" | \"q\"\nb ::= a \"y\"", StatusCode::InvalidArgument,
       "line 2, column 1: rule 'a' is left-recursive: it can reach itself before reading any character (a -> b -> a)"},
      // A repetition of an item that can be empty.
      {"root ::= \"x\" (\"a\"?)*", StatusCode::InvalidArgument,
       "line 1, column 20: rule 'root' is left-recursive: this repetition repeats an item that can match the empty "
       "string"},
      {"root ::= e+\ne ::= \"a\" | \"\"", StatusCode::InvalidArgument,
       "line 1, column 11: rule 'root' is left-recursive"},
      {"root ::= \"\"{2,}", StatusCode::InvalidArgument, "is left-recursive"},
  };
  for (const Refused& c : cases) {
    const Status s = compile_status(c.grammar);
    EXPECT_EQ(s.code(), c.code) << c.grammar << "\n" << s.to_string();
    EXPECT_NE(s.message().find(c.message), std::string::npos) << c.grammar << "\n" << s.to_string();
  }
  // Right recursion and guarded recursion are fine.
  EXPECT_TRUE(compile_status("root ::= \"a\" root | \"b\"").ok());
  EXPECT_TRUE(compile_status("root ::= \"(\" root \")\" | \"\"").ok());
  EXPECT_TRUE(compile_status("root ::= (\"a\"?){3}").ok());  // bounded: no recursion
}

TEST(GbnfParse, GroupNestingIsBounded) {
  const std::string ok = "root ::= " + std::string(64, '(') + "\"a\"" + std::string(64, ')');
  EXPECT_TRUE(compile_status(ok).ok()) << compile_status(ok).to_string();
  const std::string deep = "root ::= " + std::string(65, '(') + "\"a\"" + std::string(65, ')');
  const Status s = compile_status(deep);
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_NE(s.message().find("line 1, column 74: groups nest deeper than the limit of 64"), std::string::npos)
      << s.to_string();
  // Far deeper than the limit is refused the same way, without deep recursion.
  const std::string very_deep = "root ::= " + std::string(20000, '(');
  EXPECT_NE(compile_status(very_deep).message().find("groups nest deeper"), std::string::npos);
}

TEST(GbnfParse, TextSizeLimit) {
  GrammarLimits limits;
  limits.max_grammar_bytes = 16;
  EXPECT_TRUE(compile_status("root ::= \"abcd\"", limits).ok());  // 15 bytes
  const Status s = compile_status("root ::= \"abcde\" ", limits);
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_NE(s.message().find("the grammar is 17 bytes; the limit (max_grammar_bytes) is 16"), std::string::npos)
      << s.to_string();
  // The default is 64 KiB.
  const std::string big = "root ::= \"" + std::string(64 * 1024, 'a') + "\"";
  EXPECT_NE(compile_status(big).message().find("max_grammar_bytes"), std::string::npos);
}

TEST(GbnfParse, ElementLimit) {
  GrammarLimits limits;
  limits.max_grammar_elements = 10;
  EXPECT_TRUE(compile_status("root ::= \"abcd\"", limits).ok());
  Status s = compile_status("root ::= \"abcdefghij\"", limits);
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_NE(s.message().find("the limit (max_grammar_elements) is 10"), std::string::npos) << s.to_string();
  // Repetitions count after their expansion; copies of a longer item are one reference each.
  s = compile_status("root ::= \"a\"{11}", limits);
  EXPECT_NE(s.message().find("max_grammar_elements"), std::string::npos) << s.to_string();
  EXPECT_TRUE(compile_status("root ::= (\"a\"{2000}){2000}").ok());
  std::string many;
  for (int i = 0; i < 40; ++i) many += "r" + std::to_string(i) + " ::= \"x\"{2000}\n";
  many += "root ::= r0\n";
  s = compile_status(many);
  EXPECT_NE(s.message().find("the limit (max_grammar_elements) is 65536"), std::string::npos) << s.to_string();
}

TEST(GbnfParse, DepthLimitAtCompileTime) {
  GrammarLimits limits;
  limits.max_grammar_depth = 3;
  // Every string needs three nested rules under the one at the bottom.
  const std::string nested = "root ::= \"(\" a \")\"\na ::= \"(\" b \")\"\nb ::= \"(\" c \")\"\nc ::= \"x\"";
  EXPECT_TRUE(compile_status(nested).ok());
  const Status s = compile_status(nested, limits);
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_NE(s.message().find("the limit (max_grammar_depth) is 3"), std::string::npos) << s.to_string();
}

TEST(GbnfParse, SyntaxAccepted) {
  // Rules span lines, comments anywhere, names with - and _, every escape, every repetition.
  const char* grammar = R"(# a comment
root ::= item-list   # trailing comment
  "\n" tail_2
item-list ::= "[" ( [a-c] | "\x41" | "\u00e9" | "\U0001F600" )+ "]"
    | "<" [\[\]\\\"] ">"
tail_2 ::=
  "t"{2} "u"{1,} "v"{,2} "w"{1,2} "x"? "y"* "\t\r\\\""
)";
  auto c = OutputConstraint::from_gbnf(grammar);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_TRUE(testing::accepts(**c, "[aA\xC3\xA9\xF0\x9F\x98\x80]\nttuw\t\r\\\""));
  EXPECT_TRUE(testing::accepts(**c, "<]>\nttuuuvvwwxyyy\t\r\\\""));
  EXPECT_FALSE(testing::accepts(**c, "[]\nttuw\t\r\\\""));
  EXPECT_FALSE(testing::accepts(**c, "[a]\ntuw\t\r\\\""));
  EXPECT_FALSE(testing::accepts(**c, "[a]\nttuvvvw\t\r\\\""));
  EXPECT_FALSE(testing::accepts(**c, "[a]\nttuwww\t\r\\\""));
  // A rule ends where the next `name ::=` starts, also mid-line after a newline-free sequence.
  c = OutputConstraint::from_gbnf("root ::= \"a\"\n  | b\nb ::= \"b\" \"c\"");
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_TRUE(testing::accepts(**c, "bc"));
  EXPECT_TRUE(testing::accepts(**c, "a"));
  // An empty root: only the empty document.
  c = OutputConstraint::from_gbnf("root ::=");
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_TRUE(testing::accepts(**c, ""));
  EXPECT_FALSE(testing::accepts_prefix(**c, "a"));
}

}  // namespace
}  // namespace cellserve::engine::grammar
