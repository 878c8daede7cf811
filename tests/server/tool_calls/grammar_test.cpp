// tool_call_grammar: for each format, well-formed GBNF whose undefined rules are exactly the external
// JSON rules; the calls the format's templates render match it, other text does not; what it admits
// parses back as those calls.
#include <gtest/gtest.h>

#include <regex>

#include "engine/grammar/matcher.h"
#include "engine/grammar/output_constraint.h"
#include "server/tool_calls/tool_call_grammar.h"
#include "server/tool_calls/tool_call_parser.h"
#include "tests/server/tool_calls/gbnf_checker.h"
#include "tests/server/tool_calls/rendered_turns.h"
#include "tests/server/tool_calls/tool_call_test_util.h"

namespace cellserve::server::tool_calls {
namespace {

namespace json = boost::json;
using testing::GbnfGrammar;

std::vector<ToolSpec> specs() {
  return {
      {"get_weather", json::parse(R"({"type": "object", "properties": {"city": {"type": "string"},
          "days": {"type": "integer"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
          "required": ["city"]})")},
      {"search", json::parse(R"({"type": "object", "properties": {"query": {"type": "string"},
          "filters": {"type": "object"}}, "required": ["query"]})")},
  };
}

struct Checked {
  ToolGrammar grammar;
  GbnfGrammar gbnf;
};

// The grammar for `format`, checked well-formed with exactly its external rules undefined.
Checked checked_grammar(ToolCallFormat format, bool parallel, const std::vector<ToolSpec>& tools = specs()) {
  auto grammar = tool_call_grammar(format, tools, parallel);
  EXPECT_TRUE(grammar.ok()) << grammar.status().to_string();
  if (!grammar.ok()) return {};
  std::string error;
  GbnfGrammar gbnf = testing::parse_gbnf(grammar->gbnf, error);
  EXPECT_EQ(error, "") << grammar->gbnf;
  std::set<std::string> externals;
  for (const auto& [name, schema] : grammar->external_schemas) {
    externals.insert(name);
    EXPECT_TRUE(schema.is_object()) << name;
  }
  EXPECT_EQ(testing::undefined_rules(gbnf), externals) << grammar->gbnf;
  const std::regex rule_name("^[a-z0-9-]+ ::= ");
  std::istringstream lines(grammar->gbnf);
  for (std::string line; std::getline(lines, line);) EXPECT_TRUE(std::regex_search(line, rule_name)) << line;
  return {std::move(grammar).value(), std::move(gbnf)};
}

bool admits(const Checked& g, std::string_view text) {
  return testing::gbnf_matches(g.gbnf, g.grammar.external_schemas, text);
}

struct FormatTexts {
  ToolCallFormat format;
  std::string two_calls;             // get_weather(city=Paris, days=3) then search(query=...)
  std::vector<std::string> refused;  // look close, but the grammar must not admit them
};

std::vector<FormatTexts> format_texts() {
  const std::string ds_begin = "<｜tool▁calls▁begin｜>", ds_call = "<｜tool▁call▁begin｜>function<｜tool▁sep｜>",
                    ds_end = "<｜tool▁call▁end｜>", ds_close = "<｜tool▁calls▁end｜>";
  return {
      {ToolCallFormat::Hermes,
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n</tool_call>\n"
       "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"x\", \"filters\": {\"a\": 1}}}\n</tool_call>",
       {"<tool_call>\n{\"name\": \"delete\", \"arguments\": {}}\n</tool_call>",
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"days\": 3}}\n</tool_call>",
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"P\", \"days\": \"3\"}}\n</tool_call>",
        "<tool_call>\n{\"arguments\": {\"city\": \"P\"}, \"name\": \"get_weather\"}\n</tool_call>",
        "Sure. <tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"x\"}}\n</tool_call>"}},
      {ToolCallFormat::QwenXml,
       "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n"
       "</function>\n</tool_call>\n<tool_call>\n<function=search>\n<parameter=query>\nline 1\n</param\n</parameter>\n"
       "<parameter=filters>\n{\"a\": [1]}\n</parameter>\n</function>\n</tool_call>",
       {"<tool_call>\n<function=get_weather>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nP\n</parameter>\n<parameter=days>\nthree\n"
        "</parameter>\n</function>\n</tool_call>",
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nP\n</parameter>\n<parameter=unit>\nkelvin\n"
        "</parameter>\n</function>\n</tool_call>",
        "<tool_call>\n<function=search>\n<parameter=query>\na\n</parameter>\nb\n</parameter>\n</function>\n"
        "</tool_call>",
        "<tool_call>\n<function=search>\n<parameter=query>\nx\n</parameter>\n<parameter=extra>\n1\n</parameter>\n"
        "</function>\n</tool_call>"}},
      {ToolCallFormat::Llama3Json,
       "",
       {"{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}",
        "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}} "}},
      {ToolCallFormat::MistralNemo,
       "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}, \"id\": "
       "\"abc123XYZ\"}, {\"name\": \"search\", \"arguments\": {\"query\": \"x\"}}]",
       {"[TOOL_CALLS]{\"name\": \"search\", \"arguments\": {\"query\": \"x\"}}",
        "[TOOL_CALLS][{\"name\": \"search\", \"arguments\": {\"query\": \"x\"}, \"other\": 1}]"}},
      {ToolCallFormat::MistralSmall,
       "[TOOL_CALLS]get_weather[CALL_ID]abc123XYZ[ARGS]{\"city\": \"Paris\", \"days\": 3}[TOOL_CALLS]search[ARGS]"
       "{\"query\": \"x\"}",
       {"[TOOL_CALLS]get_weather[CALL_ID]abc[ARGS]{\"city\": \"Paris\"}", "[TOOL_CALLS]search{\"query\": \"x\"}",
        "[TOOL_CALLS]search[ARGS] {\"query\": \"x\"}"}},
      {ToolCallFormat::Granite,
       "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}, {\"name\": "
       "\"search\", \"arguments\": {\"query\": \"x\"}}]",
       {"<|tool_call|>[]", "<|tool_call|>[{\"name\": \"search\", \"arguments\": {}}]"}},
      {ToolCallFormat::DeepSeekR1,
       ds_begin + ds_call + "get_weather\n```json\n{\"city\": \"Paris\", \"days\": 3}\n```" + ds_end + "\n" + ds_call +
           "search\n```json\n{\"query\": \"x\"}\n```" + ds_end + ds_close,
       {ds_begin + ds_call + "get_weather\n```json\n{\"city\": \"Paris\"}\n```" + ds_end,
        ds_begin + ds_call + "search\n{\"query\": \"x\"}\n```" + ds_end + ds_close}},
  };
}

// Whether the engine's own GBNF matcher, with the external schemas compiled, takes `text` whole.
bool engine_admits(const ToolGrammar& g, const std::string& text) {
  namespace grammar = engine::grammar;
  std::map<std::string, std::shared_ptr<const grammar::OutputConstraint>> externals;
  for (const auto& [rule, schema] : g.external_schemas) {
    auto c = grammar::OutputConstraint::from_schema(schema);
    EXPECT_TRUE(c.ok()) << rule << ": " << c.status().to_string();
    if (!c.ok()) return false;
    externals.emplace(rule, *c);
  }
  auto compiled = grammar::OutputConstraint::from_gbnf(g.gbnf, {}, externals);
  EXPECT_TRUE(compiled.ok()) << compiled.status().to_string() << "\n" << g.gbnf;
  if (!compiled.ok()) return false;
  grammar::ThreadSet state, scratch;
  grammar::initial_state((*compiled)->root(), state);
  return grammar::step_bytes(state, text, scratch) && grammar::completion_cost(state) == 0;
}

TEST(ToolCallGrammar, TheEngineCompilesAndAdmitsEachFormatsCalls) {
  for (const FormatTexts& t : format_texts()) {
    SCOPED_TRACE(format_name(t.format));
    const Checked parallel = checked_grammar(t.format, true);
    const Checked single = checked_grammar(t.format, false);
    if (t.format == ToolCallFormat::Llama3Json) {
      EXPECT_TRUE(engine_admits(single.grammar, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}"));
      continue;
    }
    EXPECT_TRUE(engine_admits(parallel.grammar, t.two_calls)) << t.two_calls;
    EXPECT_FALSE(engine_admits(single.grammar, t.two_calls)) << t.two_calls;
    for (const std::string& text : t.refused) EXPECT_FALSE(engine_admits(parallel.grammar, text)) << text;
  }
}

TEST(ToolCallGrammar, AdmitsTheFormatsCallsAndParsesThemBack) {
  for (const FormatTexts& t : format_texts()) {
    SCOPED_TRACE(format_name(t.format));
    const Checked parallel = checked_grammar(t.format, true);
    const Checked single = checked_grammar(t.format, false);
    if (t.format == ToolCallFormat::Llama3Json) {
      // One call per message: the parallel grammar is the single one.
      EXPECT_EQ(parallel.grammar.gbnf, single.grammar.gbnf);
      const std::string one = "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\", \"days\": 3}}";
      EXPECT_TRUE(admits(single, one));
      EXPECT_EQ(parse_tool_calls(t.format, one, specs()).tool_calls.size(), 1u);
    } else {
      EXPECT_TRUE(admits(parallel, t.two_calls)) << parallel.grammar.gbnf;
      EXPECT_FALSE(admits(single, t.two_calls)) << single.grammar.gbnf;
      const ParsedMessage m = parse_tool_calls(t.format, t.two_calls, specs());
      ASSERT_EQ(m.tool_calls.size(), 2u) << m.content;
      EXPECT_EQ(m.content, "");
      EXPECT_EQ(m.tool_calls[0].name, "get_weather");
      EXPECT_EQ(testing::arguments_json(m.tool_calls[0].arguments).at("days"), json::value(3));
      EXPECT_EQ(m.tool_calls[1].name, "search");
    }
    for (const std::string& text : t.refused) EXPECT_FALSE(admits(parallel, text)) << text;
  }
}

// The calls the real templates render are what the grammar forces (Qwen's think block aside).
TEST(ToolCallGrammar, AdmitsWhatTheTemplatesRender) {
  CS_REQUIRE_TEMPLATES();
  json::array tools;
  for (const ToolSpec& spec : specs()) {
    tools.push_back(json::object{
        {"type", "function"},
        {"function", json::object{{"name", spec.name}, {"description", "A tool"}, {"parameters", spec.parameters}}}});
  }
  for (const testing::TemplateCase& c : testing::template_cases()) {
    SCOPED_TRACE(c.file);
    auto tmpl = testing::load_template(c.file);
    ASSERT_TRUE(tmpl.has_value());
    json::array calls = {testing::openai_tool_call("abc123XYZ", "get_weather", R"({"city": "Paris", "days": 3,
        "unit": "celsius"})")};
    if (!c.one_call_per_message) {
      calls.push_back(
          testing::openai_tool_call("def456UVW", "search", R"({"query": "a \"b\"\nc", "filters": {"x": [1]}})"));
    }
    auto turn =
        testing::assistant_turn(c, *tmpl, {{"role", "assistant"}, {"content", ""}, {"tool_calls", calls}}, tools);
    ASSERT_TRUE(turn.ok()) << turn.status().to_string();
    std::string text = *turn;
    if (const std::size_t think = text.find("</think>\n\n"); think != std::string::npos) text.erase(0, think + 10);
    EXPECT_TRUE(admits(checked_grammar(c.format, true), text)) << text;
    EXPECT_EQ(admits(checked_grammar(c.format, false), text), calls.size() == 1) << text;
  }
}

TEST(ToolCallGrammar, QwenTextParameterCannotCloseEarly) {
  const Checked g = checked_grammar(ToolCallFormat::QwenXml, false);
  auto call = [](const std::string& query) {
    return "<tool_call>\n<function=search>\n<parameter=query>\n" + query + "\n</parameter>\n</function>\n</tool_call>";
  };
  for (const char* ok : {"", "x", "\n", "\n\n", "a\n</param", "</parameter>", "\n<", "a\n</parameter", "ü 😀\n\t"}) {
    EXPECT_TRUE(admits(g, call(ok))) << ok;
  }
  EXPECT_FALSE(admits(g, call("a\n</parameter>b")));
  EXPECT_FALSE(admits(g, call("\n</parameter>")));
}

TEST(ToolCallGrammar, ExternalSchemas) {
  const Checked hermes = checked_grammar(ToolCallFormat::Hermes, true);
  ASSERT_EQ(hermes.grammar.external_schemas.size(), 1u);
  const json::value& call = hermes.grammar.external_schemas.at("call-json");
  ASSERT_EQ(call.at("anyOf").as_array().size(), 2u);
  EXPECT_EQ(call.at("anyOf").at(0), json::parse(R"({"type": "object", "properties": {"name": {"const": "get_weather"},
      "arguments": )" + json::serialize(specs()[0].parameters) +
                                                R"(}, "required": ["name", "arguments"]})"));
  // Keys in the order the parser reads them: the name first.
  EXPECT_EQ(call.at("anyOf").at(0).at("properties").as_object().begin()->key(), "name");

  const Checked llama = checked_grammar(ToolCallFormat::Llama3Json, false, {specs()[1]});
  EXPECT_EQ(llama.grammar.external_schemas.at("call-json").at("required"), json::parse(R"(["name", "parameters"])"));

  const Checked qwen = checked_grammar(ToolCallFormat::QwenXml, false);
  // get_weather: city and unit are text (unit as its enum), days an external integer.
  EXPECT_EQ(qwen.grammar.external_schemas.size(), 2u);
  EXPECT_EQ(qwen.grammar.external_schemas.at("tool-0-param-1-json"), json::parse(R"({"type": "integer"})"));
  EXPECT_EQ(qwen.grammar.external_schemas.at("tool-1-param-1-json"), json::parse(R"({"type": "object"})"));

  const Checked small = checked_grammar(ToolCallFormat::MistralSmall, false);
  EXPECT_EQ(small.grammar.external_schemas.at("tool-1-args"), specs()[1].parameters);
}

TEST(ToolCallGrammar, DefinitionsMoveToTheCallRoot) {
  const std::vector<ToolSpec> tools = {
      {"a", json::parse(R"({"type": "object", "properties": {"p": {"$ref": "#/$defs/point"}},
          "$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}}}}})")},
      {"b", json::parse(R"({"type": "object", "properties": {"q": {"$ref": "#/$defs/point"}},
          "$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}}}}})")},
  };
  const Checked g = checked_grammar(ToolCallFormat::Hermes, false, tools);
  const json::value& schema = g.grammar.external_schemas.at("call-json");
  EXPECT_TRUE(schema.at("$defs").as_object().contains("point"));
  EXPECT_FALSE(schema.at("anyOf").at(0).at("properties").at("arguments").as_object().contains("$defs"));
  EXPECT_TRUE(admits(g, "<tool_call>\n{\"name\": \"b\", \"arguments\": {\"q\": {\"x\": 1.5}}}\n</tool_call>"));
  EXPECT_FALSE(admits(g, "<tool_call>\n{\"name\": \"b\", \"arguments\": {\"q\": {\"x\": \"1\"}}}\n</tool_call>"));
  // QwenXml copies them into each parameter's schema.
  const Checked qwen = checked_grammar(ToolCallFormat::QwenXml, false, tools);
  EXPECT_TRUE(qwen.grammar.external_schemas.at("tool-0-param-0-json").at("$defs").as_object().contains("point"));

  auto conflicting = tools;
  conflicting[1].parameters.as_object()["$defs"].as_object()["point"] = json::object{{"type", "string"}};
  auto error = tool_call_grammar(ToolCallFormat::Hermes, conflicting, false);
  EXPECT_EQ(error.status().code(), StatusCode::Unimplemented);
  auto root_ref = tool_call_grammar(
      ToolCallFormat::Hermes, {{"tree", json::parse(R"({"type": "object", "properties": {"child": {"$ref": "#"}}})")}},
      false);
  EXPECT_EQ(root_ref.status().code(), StatusCode::Unimplemented);
  // A tool's own root is still its root where its arguments are a rule of their own.
  EXPECT_TRUE(
      tool_call_grammar(ToolCallFormat::MistralSmall,
                        {{"tree", json::parse(R"({"type": "object", "properties": {"child": {"$ref": "#"}}})")}}, false)
          .ok());
}

TEST(ToolCallGrammar, Errors) {
  auto none = tool_call_grammar(ToolCallFormat::None, specs(), true);
  EXPECT_EQ(none.status().code(), StatusCode::Unimplemented);
  EXPECT_NE(none.status().message().find("none"), std::string::npos) << none.status().message();
  EXPECT_EQ(tool_call_grammar(ToolCallFormat::Hermes, {}, true).status().code(), StatusCode::InvalidArgument);
  EXPECT_EQ(tool_call_grammar(ToolCallFormat::Hermes, {specs()[0], specs()[0]}, true).status().code(),
            StatusCode::InvalidArgument);
  for (const char* name : {"", "has space", "quote\"", "bracket[", "a>b", "ünï"}) {
    EXPECT_EQ(tool_call_grammar(ToolCallFormat::MistralSmall, {{name, nullptr}}, true).status().code(),
              StatusCode::InvalidArgument)
        << name;
  }
  EXPECT_EQ(
      tool_call_grammar(ToolCallFormat::Hermes, {{"f", json::parse(R"({"type": "string"})")}}, true).status().code(),
      StatusCode::InvalidArgument);
  EXPECT_EQ(tool_call_grammar(ToolCallFormat::QwenXml,
                              {{"f", json::parse(R"({"type": "object", "properties": {"a<b": {}}})")}}, true)
                .status()
                .code(),
            StatusCode::InvalidArgument);
  // No parameters: any object (JSON formats), no parameters (QwenXml).
  const Checked bare = checked_grammar(ToolCallFormat::QwenXml, false, {{"get_time", nullptr}});
  EXPECT_TRUE(admits(bare, "<tool_call>\n<function=get_time>\n</function>\n</tool_call>"));
  const Checked bare_json = checked_grammar(ToolCallFormat::Granite, false, {{"get_time", nullptr}});
  EXPECT_TRUE(admits(bare_json, "<|tool_call|>[{\"name\": \"get_time\", \"arguments\": {}}]"));
}

TEST(GbnfChecker, RejectsMalformedGrammar) {
  // The checker itself must be able to fail.
  for (const char* bad : {"root ::= \"a", "root ::= ( \"a\"", "root ::= [abc", "root ::= \"\\q\"", "root_x ::= \"a\"",
                          "x ::= \"a\"", "root ::= \"a\" |", "root ::= \"a\"\nroot ::= \"b\""}) {
    std::string error;
    testing::parse_gbnf(bad, error);
    EXPECT_NE(error, "") << bad;
  }
  std::string error;
  const GbnfGrammar g = testing::parse_gbnf("root ::= \"a\" ( [b-d] | x )* \"\\x21\"\n", error);
  EXPECT_EQ(error, "");
  EXPECT_EQ(testing::undefined_rules(g), std::set<std::string>{"x"});
  const std::map<std::string, json::value> x = {{"x", json::parse(R"({"type": "integer"})")}};
  EXPECT_TRUE(testing::gbnf_matches(g, x, "abcd12!"));
  EXPECT_TRUE(testing::gbnf_matches(g, x, "a!"));
  EXPECT_FALSE(testing::gbnf_matches(g, x, "abz!"));
  EXPECT_FALSE(testing::gbnf_matches(g, x, "a 1!"));
  EXPECT_FALSE(testing::gbnf_matches(g, x, "a\"s\"!"));
  EXPECT_FALSE(testing::gbnf_matches(g, x, "abcd12"));
  // Keys in declared order, no undeclared keys, required ones present.
  const json::value schema = json::parse(R"({"type": "object", "properties": {"a": {}, "b": {}}, "required": ["b"]})");
  EXPECT_TRUE(testing::schema_accepts(schema, json::parse(R"({"a": 1, "b": 2})"), schema));
  EXPECT_FALSE(testing::schema_accepts(schema, json::parse(R"({"b": 2, "a": 1})"), schema));
  EXPECT_FALSE(testing::schema_accepts(schema, json::parse(R"({"a": 1})"), schema));
  EXPECT_FALSE(testing::schema_accepts(schema, json::parse(R"({"b": 1, "c": 1})"), schema));
}

}  // namespace
}  // namespace cellserve::server::tool_calls
