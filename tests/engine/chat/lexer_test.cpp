// The pieces under the renderer: the lexer's tokens and lines, Python's float/string repr,
// json.dumps, strftime and the UTF-8 helpers. Expected values are Python 3's.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/chat/builtins.h"
#include "engine/chat/error.h"
#include "engine/chat/json_dump.h"
#include "engine/chat/lexer.h"
#include "engine/chat/py_format.h"
#include "engine/chat/utf8.h"

namespace cellserve::engine::chat {
namespace {

std::string describe(const std::vector<Token>& tokens) {
  std::string out;
  for (const Token& t : tokens) {
    switch (t.type) {
      case TokenType::Data:
        out += "D(" + t.value + ")";
        break;
      case TokenType::VariableBegin:
        out += "{{";
        break;
      case TokenType::VariableEnd:
        out += "}}";
        break;
      case TokenType::BlockBegin:
        out += "{%";
        break;
      case TokenType::BlockEnd:
        out += "%}";
        break;
      case TokenType::Name:
        out += "N(" + t.value + ")";
        break;
      case TokenType::String:
        out += "S(" + t.value + ")";
        break;
      case TokenType::Integer:
        out += "I(" + std::to_string(t.int_value) + ")";
        break;
      case TokenType::Float:
        out += "F(" + t.value + ")";
        break;
      case TokenType::Operator:
        out += "O(" + t.value + ")";
        break;
      case TokenType::Eof:
        out += "$";
        break;
    }
    out += "@" + std::to_string(t.line) + " ";
  }
  return out;
}

TEST(ChatLexer, TokensAndLines) {
  EXPECT_EQ(describe(tokenize("Hi {{ name|upper }}!\n{% if a >= 1.5 %}\n  x\n{% endif %}")),
            "D(Hi )@1 {{@1 N(name)@1 O(|)@1 N(upper)@1 }}@1 D(!\n)@1 {%@2 N(if)@2 N(a)@2 O(>=)@2 F(1.5)@2 %}@2 "
            "D(  x\n)@3 {%@4 N(endif)@4 %}@4 $@4 ");
  EXPECT_EQ(describe(tokenize("{{ d['k'][0] ~ 'a\\n' ~ 0x10 // 2 ** 3 }}")),
            "{{@1 N(d)@1 O([)@1 S(k)@1 O(])@1 O([)@1 I(0)@1 O(])@1 O(~)@1 S(a\n)@1 O(~)@1 I(16)@1 O(//)@1 I(2)@1 "
            "O(**)@1 I(3)@1 }}@1 $@1 ");
}

TEST(ChatLexer, BracesInsideExpressionsDoNotEndTheTag) {
  EXPECT_EQ(describe(tokenize("{{ {'a': {'b': 1}} }}")),
            "{{@1 O({)@1 S(a)@1 O(:)@1 O({)@1 S(b)@1 O(:)@1 I(1)@1 O(})@1 O(})@1 }}@1 $@1 ");
  EXPECT_EQ(describe(tokenize("{{ '%}' }}{% set x = '}}' %}")),
            "{{@1 S(%})@1 }}@1 {%@1 N(set)@1 N(x)@1 O(=)@1 S(}})@1 %}@1 $@1 ");
}

TEST(ChatLexer, WhitespaceControl) {
  // trim_blocks drops the newline after %} and #}; lstrip_blocks drops indentation before {% and {#.
  EXPECT_EQ(describe(tokenize("a\n  {% x %}\n  b\n  {# c #}\nd")), "D(a\n)@1 {%@2 N(x)@2 %}@2 D(  b\n)@3 D(d)@5 $@5 ");
  // '-' strips all whitespace on its side, newlines included; '+' disables lstrip/trim.
  EXPECT_EQ(describe(tokenize("a \n {%- x -%} \n b")), "D(a)@1 {%@2 N(x)@2 %}@2 D(b)@3 $@3 ");
  EXPECT_EQ(describe(tokenize("  {%+ x +%}\nb")), "D(  )@1 {%@1 N(x)@1 %}@1 D(\nb)@1 $@2 ");
  // {{ }} is not a block: no lstrip, no trim.
  EXPECT_EQ(describe(tokenize("  {{ x }}\nb")), "D(  )@1 {{@1 N(x)@1 }}@1 D(\nb)@1 $@2 ");
  // One trailing newline of the source is dropped; \r\n and \r become \n.
  EXPECT_EQ(describe(tokenize("a\r\nb\rc\n\n")), "D(a\nb\nc\n)@1 $@4 ");
}

TEST(ChatLexer, RawBlocksAreText) {
  EXPECT_EQ(describe(tokenize("{% raw %}{{ x }}{% y %}{% endraw %}z")), "D({{ x }}{% y %})@1 D(z)@1 $@1 ");
}

TEST(ChatLexer, StringEscapesArePythons) {
  const auto tokens = tokenize(R"({{ 'a\tb\\c\'d\"e\x41\u00e9\U0001F600\101\q\
' }})");
  ASSERT_EQ(tokens[1].type, TokenType::String);
  EXPECT_EQ(tokens[1].value, "a\tb\\c'd\"eAé😀A\\q");
  EXPECT_EQ(tokenize("{{ '\\ud83d\\ude00' }}")[1].value, "😀");  // a surrogate pair joins
}

TEST(ChatLexer, ErrorsCarryTheLine) {
  try {
    tokenize("a\nb\n{{ 'unterminated }}");
    FAIL() << "no error";
  } catch (const TemplateError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Syntax);
    EXPECT_EQ(e.line(), 3);
    EXPECT_EQ(e.message(), "unterminated string literal");
  }
}

TEST(ChatPyFormat, FloatReprIsShortestRoundTrip) {
  const std::pair<double, const char*> cases[] = {
      {0.0, "0.0"},
      {-0.0, "-0.0"},
      {1.0, "1.0"},
      {0.1, "0.1"},
      {1.0 / 3, "0.3333333333333333"},
      {1e16, "1e+16"},
      {1e15, "1000000000000000.0"},
      {123456789012345678.0, "1.2345678901234568e+17"},
      {1e-4, "0.0001"},
      {1e-5, "1e-05"},
      {1.5e-7, "1.5e-07"},
      {2.5e300, "2.5e+300"},
      {5e-324, "5e-324"},
      {1.7976931348623157e308, "1.7976931348623157e+308"},
      {100.0, "100.0"},
      {12345.678, "12345.678"},
      {HUGE_VAL, "inf"},
      {-HUGE_VAL, "-inf"},
  };
  for (const auto& [value, text] : cases) EXPECT_EQ(float_repr(value), text);
  EXPECT_EQ(float_repr(std::nan("")), "nan");
}

TEST(ChatPyFormat, StringReprQuotesLikePython) {
  EXPECT_EQ(string_repr("abc"), "'abc'");
  EXPECT_EQ(string_repr("it's"), "\"it's\"");
  EXPECT_EQ(string_repr("say \"hi\""), "'say \"hi\"'");
  EXPECT_EQ(string_repr("both ' \""), "'both \\' \"'");
  EXPECT_EQ(string_repr("tab\there\\"), "'tab\\there\\\\'");
  EXPECT_EQ(string_repr(std::string("\x00\x1f\x7f", 3) + "\u0080\u00a0\u00ad"), "'\\x00\\x1f\\x7f\\x80\\xa0\\xad'");
  EXPECT_EQ(string_repr("é😀"), "'é😀'");
  EXPECT_EQ(string_repr("\u2028\ufeff"), "'\\u2028\\ufeff'");
}

TEST(ChatPyFormat, ReprOfContainers) {
  Dict d;
  d.set(Value::string("k"),
        Value::list({Value::integer(1), Value::none(), Value::boolean(true), Value::floating(2.0)}));
  d.set(Value::integer(2), Value::tuple({Value::string("x")}));
  EXPECT_EQ(py_str(Value::dict(d)), "{'k': [1, None, True, 2.0], 2: ('x',)}");
  EXPECT_EQ(py_str(Value::undefined("x")), "");
  EXPECT_EQ(py_repr(Value::list({Value::undefined("x")})), "[Undefined]");
}

TEST(ChatJsonDump, MatchesPythonJsonDumps) {
  Dict inner;
  inner.set(Value::string("z"), Value::none());
  Dict d;
  d.set(Value::string("text"), Value::string("é \"q\" \\ \n\t\x01 \u2028"));
  d.set(Value::string("list"),
        Value::list({Value::integer(1), Value::floating(1.0), Value::dict(inner), Value::list({})}));
  d.set(Value::string("empty"), Value::dict(Dict()));
  const Value v = Value::dict(d);
  JsonDumpOptions plain;
  EXPECT_EQ(
      json_dumps(v, plain),
      "{\"text\": \"é \\\"q\\\" \\\\ \\n\\t\\u0001 \u2028\", \"list\": [1, 1.0, {\"z\": null}, []], \"empty\": {}}");
  JsonDumpOptions indented;
  indented.indent = "  ";
  indented.item_separator = ",";
  EXPECT_EQ(json_dumps(Value::list({Value::integer(1), Value::dict(inner)}), indented),
            "[\n  1,\n  {\n    \"z\": null\n  }\n]");
  JsonDumpOptions ascii;
  ascii.ensure_ascii = true;
  EXPECT_EQ(json_dumps(Value::string("é😀"), ascii), "\"\\u00e9\\ud83d\\ude00\"");
  EXPECT_THROW(json_dumps(Value::undefined("x"), plain), TemplateError);
}

TEST(ChatBuiltins, StrftimeLikePythonForANaiveTime) {
  std::tm t{};
  t.tm_year = 126;
  t.tm_mday = 15;
  t.tm_hour = 9;
  t.tm_min = 30;
  t.tm_wday = 4;
  t.tm_yday = 14;
  EXPECT_EQ(py_strftime("%Y-%m-%d %H:%M:%S", t), "2026-01-15 09:30:00");
  EXPECT_EQ(py_strftime("%d %b %Y|%B %d, %Y|%A %a %j %p %I", t), "15 Jan 2026|January 15, 2026|Thursday Thu 015 AM 09");
  EXPECT_EQ(py_strftime("%f|%z|%Z|%%", t), "000000|||%");
  EXPECT_EQ(py_strftime("", t), "");
}

TEST(ChatUtf8, PythonStringSemantics) {
  EXPECT_EQ(utf8_length("héllo😀"), 6u);
  EXPECT_EQ(utf8_chars("aé😀").size(), 3u);
  EXPECT_EQ(utf8_length("\xff\xfe"), 2u);  // invalid bytes count one each
  EXPECT_EQ(py_upper("héllo straße ωμέγα"), "HÉLLO STRASSE ΩΜΈΓΑ");
  EXPECT_EQ(py_lower("ÉCOLE ΣΟΦΙΑ Привет"), "école σοφια привет");
  const std::string x = "x";
  EXPECT_EQ(py_strip(" \t\u00a0 a b \u3000\n", nullptr, true, true), "a b");
  EXPECT_EQ(py_strip("xxaxx", &x, true, false), "axx");
}

}  // namespace
}  // namespace cellserve::engine::chat
