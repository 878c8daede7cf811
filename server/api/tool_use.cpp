#include "server/api/tool_use.h"

#include <map>

#include "engine/grammar/output_constraint.h"
#include "server/api/json_fields.h"
#include "server/tool_calls/tool_call_grammar.h"

namespace cellserve::server {

namespace json = boost::json;
using tool_calls::ToolSpec;

namespace {

Status read_tools(const json::object& body, std::vector<ToolSpec>* out) {
  const json::value* tools = field(body, "tools");
  if (tools == nullptr || !tools->is_array()) return {};  // parse_chat_messages checked the type
  const json::array& list = tools->get_array();
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string param = "tools[" + std::to_string(i) + "]";
    const json::object& t = list[i].get_object();
    std::string type;
    if (Status s = read_string(t, "type", &type); !s.ok()) return s.with_param(param + ".type");
    if (type != "function") {
      return Status::invalid_param(param + ".type",
                                   "tool type '" + type + "' is not supported; only 'function' tools are");
    }
    const json::value* fn = field(t, "function");
    if (fn == nullptr || !fn->is_object())
      return Status::invalid_param(param + ".function", "'function' must be an object");
    ToolSpec spec;
    if (Status s = read_string(fn->get_object(), "name", &spec.name); !s.ok())
      return s.with_param(param + ".function.name");
    if (spec.name.empty()) return Status::invalid_param(param + ".function.name", "a function needs a 'name'");
    if (const json::value* p = field(fn->get_object(), "parameters")) {
      if (!p->is_object())
        return Status::invalid_param(param + ".function.parameters", "'parameters' must be a JSON Schema object");
      spec.parameters = *p;
    }
    for (const ToolSpec& other : *out) {
      if (other.name == spec.name)
        return Status::invalid_param(param + ".function.name", "two tools are named '" + spec.name + "'");
    }
    out->push_back(std::move(spec));
  }
  return {};
}

// The grammar that forces calls of `tools`, its JSON parts compiled as external rules.
Status forcing_grammar(tool_calls::ToolCallFormat format, const std::vector<ToolSpec>& tools, bool parallel,
                       std::shared_ptr<const engine::grammar::OutputConstraint>* out) {
  Result<tool_calls::ToolGrammar> g = tool_calls::tool_call_grammar(format, tools, parallel);
  if (!g.ok()) return Status::invalid_param("tools", "tool_choice: " + g.status().message());
  std::map<std::string, std::shared_ptr<const engine::grammar::OutputConstraint>> externals;
  for (const auto& [rule, schema] : g->external_schemas) {
    auto compiled = engine::grammar::OutputConstraint::from_schema(schema);
    if (!compiled.ok())
      return Status::invalid_param("tools", "a tool's 'parameters' schema: " + compiled.status().message());
    externals.emplace(rule, std::move(compiled).value());
  }
  auto grammar = engine::grammar::OutputConstraint::from_gbnf(g->gbnf, {}, externals);
  if (!grammar.ok()) return Status::invalid_param("tools", "the tool-call grammar: " + grammar.status().message());
  *out = std::move(grammar).value();
  return {};
}

}  // namespace

Status parse_tool_use(const json::object& body, tool_calls::ToolCallFormat format, ToolUse* out, bool* render_tools,
                      std::shared_ptr<const engine::grammar::OutputConstraint>* constraint) {
  *render_tools = true;
  out->format = format;
  CS_RETURN_IF_ERROR(read_tools(body, &out->tools));
  bool parallel = true;
  CS_RETURN_IF_ERROR(read_bool(body, "parallel_tool_calls", &parallel));

  std::string choice = "auto";
  std::string named;
  if (const json::value* c = field(body, "tool_choice")) {
    if (c->is_string()) {
      choice = std::string(c->get_string());
      if (choice != "none" && choice != "auto" && choice != "required") {
        return Status::invalid_param(
            "tool_choice", "'tool_choice' must be 'none', 'auto', 'required' or a function, got '" + choice + "'");
      }
    } else if (c->is_object()) {
      const json::value* fn = field(c->get_object(), "function");
      const json::value* name = fn != nullptr && fn->is_object() ? field(fn->get_object(), "name") : nullptr;
      if (name == nullptr || !name->is_string()) {
        return Status::invalid_param(
            "tool_choice", "a named 'tool_choice' is {\"type\": \"function\", \"function\": {\"name\": ...}}");
      }
      choice = "function";
      named = std::string(name->get_string());
    } else {
      return Status::invalid_param("tool_choice", "'tool_choice' must be a string or an object");
    }
  }
  if (choice == "none") {
    *render_tools = false;
    out->tools.clear();
    return {};
  }
  if (out->tools.empty()) {
    if (choice == "auto") return {};
    return Status::invalid_param("tool_choice", "tool_choice '" + (named.empty() ? choice : named) + "' needs 'tools'");
  }
  std::vector<ToolSpec> chosen = out->tools;
  if (!named.empty()) {
    std::erase_if(chosen, [&](const ToolSpec& t) { return t.name != named; });
    if (chosen.empty())
      return Status::invalid_param("tool_choice", "tool_choice names '" + named + "', which is not in 'tools'");
  }
  if (format == tool_calls::ToolCallFormat::None) {
    if (choice == "auto") return {};  // the model's text comes back as content
    return Status::invalid_param("tool_choice", "this model's chat template has no tool-call format, so tool_choice '" +
                                                    choice + "' cannot be enforced");
  }
  out->read_calls = true;
  if (choice == "auto") return {};
  if (*constraint != nullptr) {
    return Status::invalid_param("tool_choice",
                                 "tool_choice '" + choice + "' cannot be combined with 'response_format' or 'grammar'");
  }
  out->forced = true;
  return forcing_grammar(format, chosen, parallel, constraint);
}

json::object assistant_message(const tool_calls::ParsedMessage& parsed) {
  json::object m{{"role", "assistant"}};
  if (parsed.tool_calls.empty()) {
    m["content"] = parsed.content;
    return m;
  }
  m["content"] = parsed.content.empty() ? json::value(nullptr) : json::value(parsed.content);
  json::array calls;
  for (const tool_calls::ToolCall& c : parsed.tool_calls) {
    calls.push_back(json::object{
        {"id", c.id}, {"type", "function"}, {"function", json::object{{"name", c.name}, {"arguments", c.arguments}}}});
  }
  m["tool_calls"] = std::move(calls);
  return m;
}

const char* tool_finish_reason(const tool_calls::ParsedMessage& parsed, const char* plain) {
  return parsed.tool_calls.empty() ? plain : "tool_calls";
}

ToolCallDeltas::ToolCallDeltas(const ToolUse& use) : stream_(use.format, use.tools) {}

std::vector<json::object> ToolCallDeltas::feed(std::string_view text) { return deltas(stream_.feed(text)); }

std::vector<json::object> ToolCallDeltas::finish() { return deltas(stream_.finish()); }

std::vector<json::object> ToolCallDeltas::deltas(std::vector<tool_calls::StreamEvent> events) {
  std::vector<json::object> out;
  for (tool_calls::StreamEvent& e : events) {
    if (auto* text = std::get_if<tool_calls::ContentDelta>(&e)) {
      if (!text->text.empty()) out.push_back(json::object{{"content", std::move(text->text)}});
    } else if (auto* start = std::get_if<tool_calls::CallStart>(&e)) {
      ++calls_;
      json::object call{{"index", start->index},
                        {"id", std::move(start->id)},
                        {"type", "function"},
                        {"function", json::object{{"name", std::move(start->name)}, {"arguments", ""}}}};
      out.push_back(json::object{{"tool_calls", json::array{std::move(call)}}});
    } else if (auto* args = std::get_if<tool_calls::ArgumentsDelta>(&e)) {
      json::object call{{"index", args->index}, {"function", json::object{{"arguments", std::move(args->text)}}}};
      out.push_back(json::object{{"tool_calls", json::array{std::move(call)}}});
    }
  }
  return out;
}

}  // namespace cellserve::server
