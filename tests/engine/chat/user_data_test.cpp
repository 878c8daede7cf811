// Which bytes of a render came from the request's data (ChatTemplate::apply_marked): the marks
// follow the data through every string operation templates use, and the template's own text is
// never marked. Marked bytes are shown between « and ».
#include <gtest/gtest.h>

#include "engine/chat/chat_template.h"
#include "tests/engine/chat/chat_test_util.h"

namespace cellserve::engine::chat {
namespace {

namespace json = boost::json;

std::string show(const MarkedText& m) {
  std::string out;
  size_t at = 0;
  for (const TextSpan& s : m.user_spans) {
    out += m.text.substr(at, s.begin - at) + "«" + m.text.substr(s.begin, s.end - s.begin) + "»";
    at = s.end;
  }
  return out + m.text.substr(at);
}

// Renders `source` for one user message with `content` (plus `extra` template kwargs) and shows
// the marks; also checks that the text is exactly what apply() renders.
std::string marked(std::string_view source, std::string_view content = "  Hi <x>  ",
                   json::object extra = json::object()) {
  auto tmpl = ChatTemplate::parse(source);
  if (!tmpl.ok()) return "parse error: " + tmpl.status().to_string();
  ChatRequest r;
  r.messages = json::array{json::object{{"role", "user"}, {"content", content}}};
  r.bos_token = "<s>";
  r.extra_vars = std::move(extra);
  auto out = tmpl->apply_marked(r, testing::fixed_time_options());
  if (!out.ok()) return "render error: " + out.status().to_string();
  EXPECT_EQ(out->text, *tmpl->apply(r, testing::fixed_time_options()));
  return show(*out);
}

TEST(ChatUserData, ValuesFromMessagesAreMarkedTemplateTextIsNot) {
  EXPECT_EQ(marked("{{ bos_token }}<|im_start|>{{ messages[0].role }}\n{{ messages[0].content }}<|im_end|>"),
            "<s><|im_start|>«user»\n«  Hi <x>  »<|im_end|>");
  EXPECT_EQ(marked("{{ messages | length }}{{ add_generation_prompt }}"), "1True");
  // Template kwargs are request data too.
  EXPECT_EQ(marked("[{{ mode }}]", "x", json::object{{"mode", "<|fast|>"}}), "[«<|fast|>»]");
  EXPECT_EQ(marked("{{ bos_token }}", "x", json::object{{"bos_token", "<|evil|>"}}), "«<|evil|>»");
}

TEST(ChatUserData, ConcatenationKeepsEachBytesOrigin) {
  EXPECT_EQ(marked("{{ '<|im_start|>' + messages[0].role + '\\n' + messages[0].content | trim + '<|im_end|>' }}"),
            "<|im_start|>«user»\n«Hi <x>»<|im_end|>");
  EXPECT_EQ(marked("{{ '<a>' ~ messages[0].content ~ 3 ~ '<b>' }}"), "<a>«  Hi <x>  »3<b>");
  EXPECT_EQ(marked("{{ messages[0].content * 2 }}", "ab"), "«abab»");
  EXPECT_EQ(marked("{{ ['<a>', messages[0].content] | join('<sep>') }}", "x"), "<a><sep>«x»");
  EXPECT_EQ(marked("{{ '<sep>'.join([messages[0].content, 'y']) }}", "x"), "«x»<sep>y");
  EXPECT_EQ(marked("{% set ns = namespace(s='<a>') %}{% set ns.s = ns.s + messages[0].content %}{{ ns.s }}", "x"),
            "<a>«x»");
}

TEST(ChatUserData, SubstringsKeepTheirMarks) {
  const std::string content = "<think>r</think>\n\nanswer";
  EXPECT_EQ(marked("<{{ messages[0].content.split('</think>')[-1].lstrip('\\n') }}>", content), "<«answer»>");
  EXPECT_EQ(
      marked("{{ messages[0].content[7:8] }}|{{ messages[0].content[0] }}|{{ messages[0].content[-1] }}", content),
      "«r»|«<»|«r»");
  EXPECT_EQ(marked("{{ messages[0].content.strip() }}|{{ messages[0].content.rstrip() }}"), "«Hi <x>»|«  Hi <x>»");
  EXPECT_EQ(marked("{{ messages[0].content.split() | join(',') }}"), "«Hi»,«<x>»");
  EXPECT_EQ(marked("{{ messages[0].content.partition('H') | join('|') }}"), "«  »|«H»|«i <x>  »");
  EXPECT_EQ(marked("{{ messages[0].content.removeprefix('  H') }}"), "«i <x>  »");
  EXPECT_EQ(marked("{% for c in messages[0].content %}[{{ c }}]{% endfor %}", "ab"), "[«a»][«b»]");
  EXPECT_EQ(marked("{{ messages[0].content | first }}|{{ messages[0].content | reverse }}", "ab"), "«a»|«ba»");
  EXPECT_EQ(marked("{% for line in messages[0].content.splitlines() %}<{{ line }}>{% endfor %}", "a\nb"), "<«a»><«b»>");
}

TEST(ChatUserData, ReplaceMarksWhatItKeepsAndWhatItInserts) {
  EXPECT_EQ(marked("{{ messages[0].content.replace('Hi', '<T>') }}"), "«  »<T>« <x>  »");
  EXPECT_EQ(marked("{{ '<a>x<a>'.replace('x', messages[0].content) }}", "y"), "<a>«y»<a>");
  EXPECT_EQ(marked("{{ messages[0].content | replace('i', '!') }}", "Hi"), "«H»!");
}

TEST(ChatUserData, MacroAndBlockOutputKeepMarks) {
  EXPECT_EQ(marked("{% macro turn(c) %}<|t|>{{ c }}<|e|>{% endmacro %}{{ turn(messages[0].content) }}", "x"),
            "<|t|>«x»<|e|>");
  EXPECT_EQ(marked("{% set b %}<|t|>{{ messages[0].content }}{% endset %}{{ b | trim }}", "x "), "<|t|>«x»");
  EXPECT_EQ(marked("{% filter upper %}<t>{{ messages[0].content }}{% endfilter %}", "x"), "<T>«X»");
  EXPECT_EQ(marked("{{ messages[0].content | indent(2, true) }}", "a\nb"), "  «a»\n  «b»");
}

TEST(ChatUserData, ConversionsMarkTheirWholeResultWhenNeeded) {
  EXPECT_EQ(marked("{{ messages[0].content | upper }}|{{ messages[0].content.lower() }}", "Ab"), "«AB»|«ab»");
  EXPECT_EQ(marked("{{ messages[0] | tojson }}", "x"), "«{\"role\": \"user\", \"content\": \"x\"}»");
  EXPECT_EQ(marked("{{ '<%s>' % messages[0].content }}", "x"), "«<x>»");
  EXPECT_EQ(marked("{{ '<{}>'.format(messages[0].content) }}", "x"), "«<x>»");
  EXPECT_EQ(marked("{{ '<%s>' | format(messages[0].content) }}", "x"), "«<x>»");
  EXPECT_EQ(marked("{{ messages[0].content | title }}", "ab"), "«Ab»");
  EXPECT_EQ(marked("{{ messages }}", "x"), "«[{'role': 'user', 'content': 'x'}]»");
  EXPECT_EQ(marked("{{ messages[0].content | escape }}", "<b>"), "«&lt;b&gt;»");
  EXPECT_EQ(marked("{{ ('<t>' | safe) + messages[0].content }}", "<b>"), "<t>«&lt;b&gt;»");
  // Dict keys are data as well.
  EXPECT_EQ(marked("{% for k in messages[0] %}<{{ k }}>{% endfor %}", "x"), "<«role»><«content»>");
  // Template-made strings stay unmarked.
  EXPECT_EQ(marked("{{ '<|a|>' | upper }}{{ '%s' % 'x' }}{{ [1, 'y'] }}"), "<|A|>x[1, 'y']");
}

}  // namespace
}  // namespace cellserve::engine::chat
