// Failures: what a template that cannot be rendered produces. Render errors match the cases where
// Python's Jinja2 raises under Hugging Face's settings (checked case by case); parse errors name
// the construct and its line, so an unsupported template never renders a silently wrong prompt.
#include <gtest/gtest.h>

#include "tests/engine/chat/chat_test_util.h"

namespace cellserve::engine::chat {
namespace {

using testing::render;

void expect_error(std::string_view source, StatusCode code, const std::string& message) {
  SCOPED_TRACE(std::string(source));
  auto out = render(source);
  ASSERT_FALSE(out.ok()) << "rendered: " << *out;
  EXPECT_EQ(out.status().code(), code) << out.status().to_string();
  EXPECT_EQ(out.status().message(), message);
}

TEST(ChatTemplateErrors, RaiseExceptionMessageIsTheStatusMessage) {
  expect_error("{{ raise_exception('System role not supported') }}", StatusCode::InvalidArgument,
               "System role not supported");
  expect_error(
      "{% for m in messages %}{% if m.role == 'assistant' %}{{ raise_exception('no ' ~ m.role) }}{% endif %}{% endfor "
      "%}",
      StatusCode::InvalidArgument, "no assistant");
  expect_error("{% macro check(x) %}{{ raise_exception('bad: ' + x|string) }}{% endmacro %}\n\n{{ check(3) }}",
               StatusCode::InvalidArgument, "bad: 3");
}

TEST(ChatTemplateErrors, UsingAnUndefinedValueFailsLikeJinja2) {
  for (const char* source : {"{{ nope + 1 }}", "{{ nope.attr }}", "{{ nope['x'] }}", "{{ nope() }}", "{{ nope < 1 }}",
                             "{{ -nope }}", "{{ nope|int }}"}) {
    expect_error(source, StatusCode::InvalidArgument, "line 1: 'nope' is undefined");
  }
  expect_error("{{ nope|tojson }}", StatusCode::InvalidArgument,
               "line 1: Object of type Undefined is not JSON serializable");
  expect_error("{{ d.missing.deeper }}", StatusCode::InvalidArgument,
               "line 1: 'dict object' has no attribute 'missing'");
  expect_error("{{ lst[10].x }}", StatusCode::InvalidArgument, "line 1: list object has no element 10");
}

TEST(ChatTemplateErrors, PythonTypeAndValueErrors) {
  const std::pair<const char*, const char*> cases[] = {
      {"{{ 'a' + 1 }}", "can only concatenate str (not \"int\") to str"},
      {"{{ 1 / 0 }}", "division by zero"},
      {"{{ 10 // 0 }}", "integer division or modulo by zero"},
      {"{% for i in 5 %}{% endfor %}", "'int' object is not iterable"},
      {"{{ x() }}", "'int' object is not callable"},
      {"{% set a, b = [1] %}", "not enough values to unpack (expected 2, got 1)"},
      {"{{ range(100001)|length }}", "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000)."},
      {"{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}", "macro 'm' takes not more than 1 argument(s)"},
      {"{% macro m(a) %}{% endmacro %}{{ m(b=1) }}", "macro 'm' takes no keyword argument 'b'"},
      {"{% set d.a = 1 %}", "cannot assign attribute on non-namespace object"},
      {"{{ 'a' < 1 }}", "'<' not supported between instances of 'str' and 'int'"},
      {"{{ 'x' in 5 }}", "argument of type 'int' is not iterable"},
      {"{{ {[1]: 2} }}", "unhashable type: 'list'"},
      {"{{ 1 in 'abc' }}", "'in <string>' requires string as left operand, not int"},
      {"{{ 'abc'[::0] }}", "slice step cannot be zero"},
      {"{{ 5|length }}", "object of type 'int' has no len()"},
      {"{{ '%d' % 'a' }}", "%d format: a real number is required, not str"},
      {"{{ '%s %s' % ('a',) }}", "not enough arguments for format string"},
      {"{{ s.split('') }}", "empty separator"},
  };
  for (const auto& [source, message] : cases)
    expect_error(source, StatusCode::InvalidArgument, std::string("line 1: ") + message);
}

TEST(ChatTemplateErrors, SandboxRefusesMutatingMethods) {
  expect_error("{{ [1].append(2) }}", StatusCode::InvalidArgument,
               "line 1: access to attribute 'append' of 'list' object is unsafe.");
  expect_error("{{ d.pop('a') }}", StatusCode::InvalidArgument,
               "line 1: access to attribute 'pop' of 'dict' object is unsafe.");
  // Looking the method up without calling it is fine (it prints as an undefined value).
  auto out = render("[{{ lst.append }}]");
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(*out, "[]");
}

TEST(ChatTemplateErrors, RenderErrorsCarryTheLine) {
  expect_error("line one\n{% if true %}\n  {{ 'x' ~ nope.attr }}\n{% endif %}", StatusCode::InvalidArgument,
               "line 3: 'nope' is undefined");
  expect_error("{% for m in messages %}\n{{ m.role }}\n{% endfor %}\n{{ 1 // 0 }}", StatusCode::InvalidArgument,
               "line 4: integer division or modulo by zero");
}

TEST(ChatTemplateErrors, UnknownAndUnsupportedConstructsFailAtParseTime) {
  const std::tuple<const char*, StatusCode, const char*> cases[] = {
      {"{% foo %}", StatusCode::InvalidArgument, "line 1: unknown tag 'foo'"},
      {"{% include 'x.jinja' %}", StatusCode::Unimplemented, "line 1: unsupported tag 'include'"},
      {"{% extends 'base' %}", StatusCode::Unimplemented, "line 1: unsupported tag 'extends'"},
      {"{% call m() %}x{% endcall %}", StatusCode::Unimplemented, "line 1: unsupported tag 'call'"},
      {"{% import 'm' as m %}", StatusCode::Unimplemented, "line 1: unsupported tag 'import'"},
      {"{% do x %}", StatusCode::InvalidArgument,
       "line 1: unknown tag 'do' (it needs a Jinja2 extension that Hugging Face does not enable)"},
      {"a\nb\n{{ x|nosuch }}", StatusCode::InvalidArgument, "line 3: unknown filter 'nosuch'"},
      {"\n{% if false %}{{ messages|groupby('role') }}{% endif %}", StatusCode::Unimplemented,
       "line 2: unsupported filter 'groupby'"},
      {"{{ s|truncate(3) }}", StatusCode::Unimplemented, "line 1: unsupported filter 'truncate'"},
      {"{% if x is nosuch %}{% endif %}", StatusCode::InvalidArgument, "line 1: unknown test 'nosuch'"},
      {"{{ s.encode('utf-8') }}", StatusCode::Unimplemented, "line 1: unsupported method 'encode()'"},
      {"{{ s.translate(t) }}", StatusCode::Unimplemented, "line 1: unsupported method 'translate()'"},
      {"{% for m in messages recursive %}{{ loop(m.children) }}{% endfor %}", StatusCode::Unimplemented,
       "line 1: recursive for loops are not supported"},
      {"{{ f(*args) }}", StatusCode::Unimplemented, "line 1: *args / **kwargs in calls are not supported"},
      {"{{ '\\N{BULLET}' }}", StatusCode::Unimplemented,
       "line 1: \\N{...} escapes in string literals are not supported"},
      {"{{ 99999999999999999999 }}", StatusCode::Unimplemented, "line 1: integer literal out of 64-bit range"},
  };
  for (const auto& [source, code, message] : cases) {
    SCOPED_TRACE(source);
    auto tmpl = ChatTemplate::parse(source);
    ASSERT_FALSE(tmpl.ok());
    EXPECT_EQ(tmpl.status().code(), code);
    EXPECT_EQ(tmpl.status().message(), message);
  }
}

TEST(ChatTemplateErrors, SyntaxErrors) {
  const std::pair<const char*, const char*> cases[] = {
      {"{% if x %}\nno end",
       "line 2: unexpected end of template: looking for 'elif' or 'else' or 'endif' to close 'if'"},
      {"{% for x in y %}{% endif %}", "line 1: unexpected 'endif' (the innermost open block is 'for')"},
      {"{% endif %}", "line 1: unexpected 'endif' (no block is open)"},
      {"{% for x in y %}{% if x %}{% endfor %}", "line 1: unexpected 'endfor' (the innermost open block is 'if')"},
      {"{% break %}", "line 1: 'break' outside loop"},
      {"{% for i in x %}{% macro m() %}{% continue %}{% endmacro %}{% endfor %}", "line 1: 'continue' outside loop"},
      {"{{ x }", "line 1: unexpected '}'"},
      {"{{ (x }}", "line 1: unexpected '}', expected ')'"},
      {"ok\n{{ 1 }}{# open comment", "line 2: missing end of comment tag"},
      {"{{ 'open string }}", "line 1: unterminated string literal"},
      {"{{ x + }}", "line 1: unexpected end of print statement"},
      {"{{ x. }}", "line 1: expected name or number after '.'"},
      {"{% set %}", "line 1: expected an expression, got end of statement block"},
      {"{% macro m(a=1, b) %}{% endmacro %}", "line 1: non-default argument follows default argument"},
      {"{{ x ! y }}", "line 1: unexpected char '!'"},
      {"{{ f(a=1, 2) }}", "line 1: positional argument follows keyword argument"},
  };
  for (const auto& [source, message] : cases) {
    SCOPED_TRACE(source);
    auto tmpl = ChatTemplate::parse(source);
    ASSERT_FALSE(tmpl.ok());
    EXPECT_EQ(tmpl.status().code(), StatusCode::InvalidArgument);
    EXPECT_EQ(tmpl.status().message(), message);
  }
}

TEST(ChatTemplateErrors, LimitsStopHostileTemplates) {
  // Nesting deeper than the parser allows (each level would cost C++ stack).
  auto deep = ChatTemplate::parse("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}");
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.status().code(), StatusCode::ResourceExhausted);
  EXPECT_NE(deep.status().message().find("nested too deeply"), std::string::npos) << deep.status().message();
  std::string blocks;
  for (int i = 0; i < 3000; ++i) blocks += "{% if 1 %}";
  auto deep_blocks = ChatTemplate::parse(blocks);
  ASSERT_FALSE(deep_blocks.ok());
  EXPECT_EQ(deep_blocks.status().code(), StatusCode::ResourceExhausted);

  // Unbounded macro recursion.
  auto rec = render("{% macro r(n) %}{{ r(n + 1) }}{% endmacro %}{{ r(0) }}");
  ASSERT_FALSE(rec.ok());
  EXPECT_EQ(rec.status().code(), StatusCode::ResourceExhausted);
  EXPECT_NE(rec.status().message().find("recursion too deep"), std::string::npos) << rec.status().message();

  // Output and string size.
  RenderOptions small = testing::fixed_time_options();
  small.max_output_bytes = 1000;
  auto big = render("{% for i in range(1000) %}0123456789{% endfor %}", testing::kUnitContext, small);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::ResourceExhausted);
  auto repeat = render("{{ 'x' * 1000000000 }}");
  ASSERT_FALSE(repeat.ok());
  EXPECT_EQ(repeat.status().code(), StatusCode::ResourceExhausted);
  auto captured =
      render("{% set t %}{% for i in range(1000) %}0123456789{% endfor %}{% endset %}", testing::kUnitContext, small);
  ASSERT_FALSE(captured.ok());
  EXPECT_EQ(captured.status().code(), StatusCode::ResourceExhausted);

  // Work: nested loops over the largest ranges the sandbox allows.
  RenderOptions few_steps = testing::fixed_time_options();
  few_steps.max_steps = 100000;
  auto slow = render("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
                     testing::kUnitContext, few_steps);
  ASSERT_FALSE(slow.ok());
  EXPECT_EQ(slow.status().code(), StatusCode::ResourceExhausted);
  EXPECT_NE(slow.status().message().find("too many steps"), std::string::npos) << slow.status().message();
  // Work on big values is charged by size: scanning a 1 MB string, sorting a long list, doubling a list.
  for (const char* source :
       {"{% set ns = namespace(s='x' * 1000000) %}{% for i in range(1000) %}{{ ns.s|length }}{% endfor %}",
        "{% set ns = namespace(s='x' * 1000000) %}{% for i in range(1000) %}{% if ns.s.startswith('y') %}{% endif %}{% "
        "endfor %}",
        "{% set ns = namespace(l=range(100000)|list) %}{% for i in range(1000) %}{% set ns.t = ns.l|sort %}{% endfor "
        "%}",
        "{% set ns = namespace(l=range(100000)|list) %}{% for i in range(1000) %}{% if -1 in ns.l %}{% endif %}{% "
        "endfor %}"}) {
    SCOPED_TRACE(source);
    auto heavy = render(source, testing::kUnitContext, few_steps);
    ASSERT_FALSE(heavy.ok());
    EXPECT_EQ(heavy.status().code(), StatusCode::ResourceExhausted);
  }
  auto doubling =
      render("{% set ns = namespace(l=[0]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% endfor %}");
  ASSERT_FALSE(doubling.ok());
  EXPECT_EQ(doubling.status().code(), StatusCode::ResourceExhausted);
}

TEST(ChatTemplateErrors, LongConversationsStayWellWithinTheStepLimit) {
  // 3000 messages through a template that indexes `messages` and calls |length every iteration.
  boost::json::array messages;
  for (int i = 0; i < 3000; ++i) {
    messages.push_back(
        boost::json::object{{"role", i % 2 == 0 ? "user" : "assistant"}, {"content", std::string(500, 'x')}});
  }
  const std::string context = boost::json::serialize(boost::json::object{{"messages", messages}});
  auto out = render(
      "{% for m in messages %}{% if loop.index0 < messages|length - 1 and messages[loop.index0 + 1].role != m.role %}"
      "{{ m.content|trim|length }}{% endif %}{% endfor %}",
      context);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
}

TEST(ChatTemplateErrors, SelfReferencingNamespaceNeitherCrashesNorLeaks) {
  // ns.self = ns is a reference cycle; printing it is refused (too deep) and the renderer drops
  // the namespace's attributes afterwards so the cycle is not leaked (checked under ASan/LSan).
  auto out = render("{% set ns = namespace() %}{% set ns.self = ns %}{{ ns.self.self is defined }}");
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(*out, "True");
  auto printed = render("{% set ns = namespace() %}{% set ns.self = [ns] %}{{ ns }}");
  ASSERT_FALSE(printed.ok());
  EXPECT_EQ(printed.status().code(), StatusCode::ResourceExhausted);
}

}  // namespace
}  // namespace cellserve::engine::chat
