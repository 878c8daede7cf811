#include "server/tool_calls/tool_call_grammar.h"

#include <set>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include "server/tool_calls/gbnf_text.h"
#include "server/tool_calls/schema_definitions.h"

namespace cellserve::server::tool_calls {
namespace {

namespace json = boost::json;
using detail::gbnf_literal;

constexpr std::string_view kParameterClose = "\n</parameter>";

std::string quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

Status check_tool_name(const std::string& name) {
  bool ok = !name.empty() && name.size() <= 64;
  for (char c : name) {
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
                c == '.');
  }
  return ok ? Status() : Status::invalid_argument("tool name " + quoted(name) + " is not [A-Za-z0-9_.-]{1,64}");
}

// The tool's parameters schema, checked: absent or null means any object.
Result<json::value> parameters_of(const ToolSpec& tool) {
  if (tool.parameters.is_null()) return json::value(json::object{{"type", "object"}});
  const auto* schema = tool.parameters.if_object();
  if (schema == nullptr)
    return Status::invalid_argument("tool " + quoted(tool.name) + ": parameters must be an object");
  const json::value* type = schema->if_contains("type");
  if (type != nullptr && !(type->is_string() && type->get_string() == "object")) {
    return Status::invalid_argument("tool " + quoted(tool.name) +
                                    ": parameters must be a schema of \"type\": \"object\"");
  }
  if (schema->empty()) return json::value(json::object{{"type", "object"}});
  return tool.parameters;
}

Status check_tools(ToolCallFormat format, const std::vector<ToolSpec>& tools) {
  if (format == ToolCallFormat::None) {
    return Status::unimplemented("tool calls cannot be forced: the chat template has no tool-call format (" +
                                 std::string(format_name(format)) + ")");
  }
  if (tools.empty()) return Status::invalid_argument("a forced tool call needs at least one tool");
  std::set<std::string> names;
  for (const ToolSpec& tool : tools) {
    CS_RETURN_IF_ERROR(check_tool_name(tool.name));
    if (!names.insert(tool.name).second) return Status::invalid_argument("duplicate tool name " + quoted(tool.name));
  }
  return {};
}

// One alternative per tool: ( a | b | c ).
std::string alternatives(const std::vector<std::string>& items) {
  std::string out = "( ";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? " | " : "") + items[i];
  return out + " )";
}

std::string tool_rule(std::size_t i) { return "tool-" + std::to_string(i); }

// Formats whose call is one JSON object {"name": ..., <arguments_key>: ...}: one external rule
// `call-json`, the calls of all the tools (anyOf), their $defs moved to its root.
Result<ToolGrammar> json_call_grammar(ToolCallFormat format, const std::vector<ToolSpec>& tools, bool parallel) {
  const std::string arguments_key = format == ToolCallFormat::Llama3Json ? "parameters" : "arguments";
  json::object root;
  json::array calls;
  for (const ToolSpec& tool : tools) {
    const std::string where = "tool " + quoted(tool.name);
    CS_ASSIGN_OR_RETURN(json::value parameters, parameters_of(tool));
    CS_RETURN_IF_ERROR(detail::check_no_root_ref(parameters, where));
    CS_RETURN_IF_ERROR(detail::move_definitions(parameters, root, where));
    json::object properties;
    properties["name"] = json::object{{"const", tool.name}};
    properties[arguments_key] = std::move(parameters);
    if (format == ToolCallFormat::MistralNemo) {
      // Nemo's template writes a 9-character id after the arguments; the model may too (unused).
      properties["id"] = json::object{{"type", "string"}, {"minLength", 9}, {"maxLength", 9}};
    }
    calls.push_back(json::object{{"type", "object"},
                                 {"properties", std::move(properties)},
                                 {"required", json::array{"name", json::string(arguments_key)}}});
  }
  json::object schema = calls.size() == 1 ? std::move(calls[0].as_object()) : json::object{{"anyOf", std::move(calls)}};
  for (auto& [key, definitions] : root) schema[key] = std::move(definitions);

  ToolGrammar grammar;
  grammar.external_schemas["call-json"] = std::move(schema);
  switch (format) {
    case ToolCallFormat::Hermes:
      grammar.gbnf = std::string("root ::= call") + (parallel ? " ( \"\\n\" call )*" : "") + "\n" +
                     "call ::= " + gbnf_literal("<tool_call>\n") + " call-json " + gbnf_literal("\n</tool_call>") +
                     "\n";
      break;
    case ToolCallFormat::Llama3Json:
      // Llama 3's templates take one call per message (they raise on more): one, even if parallel.
      grammar.gbnf = "root ::= call-json\n";
      break;
    default: {
      const std::string marker = format == ToolCallFormat::Granite ? "<|tool_call|>" : "[TOOL_CALLS]";
      grammar.gbnf = "root ::= " + gbnf_literal(marker + "[") + " call-json" +
                     (parallel ? " ( " + gbnf_literal(", ") + " call-json )*" : "") + " " + gbnf_literal("]") + "\n";
    }
  }
  return grammar;
}

// Formats that write the name as markup and the arguments as one JSON object after it: an external
// rule per tool, `tool-N-args`.
Result<ToolGrammar> named_arguments_grammar(ToolCallFormat format, const std::vector<ToolSpec>& tools, bool parallel) {
  ToolGrammar grammar;
  std::vector<std::string> names;
  std::string tool_rules;
  const bool mistral = format == ToolCallFormat::MistralSmall;
  for (std::size_t i = 0; i < tools.size(); ++i) {
    CS_ASSIGN_OR_RETURN(json::value parameters, parameters_of(tools[i]));
    const std::string args = tool_rule(i) + "-args";
    grammar.external_schemas[args] = std::move(parameters);
    names.push_back(tool_rule(i));
    const std::string head = mistral ? gbnf_literal(tools[i].name) + " call-id? " + gbnf_literal("[ARGS]")
                                     : gbnf_literal(tools[i].name + "\n```json\n");
    tool_rules += tool_rule(i) + " ::= " + head + " " + args + "\n";
  }
  if (mistral) {
    std::string id;
    for (int i = 0; i < 9; ++i) id += " [a-zA-Z0-9]";
    grammar.gbnf = std::string("root ::= call") + (parallel ? "+" : "") + "\n" +
                   "call ::= " + gbnf_literal("[TOOL_CALLS]") + " " + alternatives(names) + "\n" +
                   "call-id ::= " + gbnf_literal("[CALL_ID]") + id + "\n" + tool_rules;
  } else {
    grammar.gbnf = "root ::= " + gbnf_literal("<｜tool▁calls▁begin｜>") + " call" +
                   (parallel ? " ( " + gbnf_literal("\n") + " call )*" : "") + " " +
                   gbnf_literal("<｜tool▁calls▁end｜>") + "\n" +
                   "call ::= " + gbnf_literal("<｜tool▁call▁begin｜>function<｜tool▁sep｜>") + " " +
                   alternatives(names) + " " + gbnf_literal("\n```<｜tool▁call▁end｜>") + "\n" + tool_rules;
  }
  return grammar;
}

bool is_string_schema(const json::value& schema) {
  const auto* object = schema.if_object();
  const json::value* type = object ? object->if_contains("type") : nullptr;
  return type != nullptr && type->is_string() && type->get_string() == "string";
}

// A string parameter's value: raw text, or one of its enum's strings.
Result<std::string> string_value_rule(const json::value& schema, const std::string& where) {
  const json::value* values = schema.as_object().if_contains("enum");
  if (values == nullptr || !values->is_array()) return std::string("param-text");
  std::vector<std::string> literals;
  for (const json::value& v : values->get_array()) {
    if (!v.is_string()) continue;
    const std::string_view text = v.get_string();
    if (text.find(kParameterClose) != std::string_view::npos) {
      return Status::invalid_argument(where + ": an enum value contains \"\\n</parameter>\"");
    }
    literals.push_back(gbnf_literal(text));
  }
  if (literals.empty()) return Status::invalid_argument(where + ": a string enum without strings");
  return alternatives(literals);
}

Status check_parameter_name(const std::string& name, const std::string& where) {
  bool ok = !name.empty() && name.size() <= 256;
  for (char c : name) ok = ok && c != '<' && c != '>' && static_cast<unsigned char>(c) >= 0x20;
  return ok ? Status() : Status::invalid_argument(where + ": parameter name " + quoted(name) + " cannot be written");
}

// QwenXml: the parameters in declared order (optional ones may be left out), each
// <parameter=P>\nVALUE\n</parameter>\n; string values are raw text, others external JSON values.
Result<ToolGrammar> qwen_xml_grammar(const std::vector<ToolSpec>& tools, bool parallel) {
  ToolGrammar grammar;
  std::vector<std::string> names;
  std::string tool_rules;
  for (std::size_t i = 0; i < tools.size(); ++i) {
    const std::string where = "tool " + quoted(tools[i].name);
    CS_ASSIGN_OR_RETURN(json::value parameters, parameters_of(tools[i]));
    CS_RETURN_IF_ERROR(detail::check_no_root_ref(parameters, where));
    const json::object& schema = parameters.as_object();
    std::set<std::string> required;
    if (const json::value* list = schema.if_contains("required"); list != nullptr && list->is_array()) {
      for (const json::value& name : list->get_array()) {
        if (name.is_string()) required.emplace(name.get_string());
      }
    }
    std::string body = gbnf_literal(tools[i].name + ">\n");
    const json::value* properties = schema.if_contains("properties");
    if (properties != nullptr && properties->is_object()) {
      std::size_t p = 0;
      for (const auto& [key, property] : properties->get_object()) {
        const std::string name(key);
        const std::string param_where = where + " parameter " + quoted(name);
        CS_RETURN_IF_ERROR(check_parameter_name(name, where));
        const std::string rule = tool_rule(i) + "-param-" + std::to_string(p++);
        std::string value;
        if (is_string_schema(property)) {
          CS_ASSIGN_OR_RETURN(value, string_value_rule(property, param_where));
        } else {
          json::value external = property.is_object() ? property : json::value(json::object());
          if (property.is_bool() && !property.get_bool()) {
            return Status::invalid_argument(param_where + ": schema false admits no value");
          }
          CS_RETURN_IF_ERROR(detail::copy_definitions(parameters, external.as_object(), param_where));
          value = rule + "-json";
          grammar.external_schemas[value] = std::move(external);
        }
        tool_rules += rule + " ::= " + gbnf_literal("<parameter=" + name + ">\n") + " " + value + " " +
                      gbnf_literal("\n</parameter>\n") + "\n";
        body += " " + rule + (required.count(name) ? "" : "?");
      }
    }
    names.push_back(tool_rule(i));
    tool_rules += tool_rule(i) + " ::= " + body + "\n";
  }
  grammar.gbnf = std::string("root ::= call") + (parallel ? " ( " + gbnf_literal("\n") + " call )*" : "") + "\n" +
                 "call ::= " + gbnf_literal("<tool_call>\n<function=") + " " + alternatives(names) + " " +
                 gbnf_literal("</function>\n</tool_call>") + "\n" + tool_rules +
                 detail::text_without_rules("param-text", kParameterClose);
  return grammar;
}

}  // namespace

Result<ToolGrammar> tool_call_grammar(ToolCallFormat format, const std::vector<ToolSpec>& tools, bool parallel) {
  CS_RETURN_IF_ERROR(check_tools(format, tools));
  switch (format) {
    case ToolCallFormat::Hermes:
    case ToolCallFormat::Llama3Json:
    case ToolCallFormat::MistralNemo:
    case ToolCallFormat::Granite:
      return json_call_grammar(format, tools, parallel);
    case ToolCallFormat::MistralSmall:
    case ToolCallFormat::DeepSeekR1:
      return named_arguments_grammar(format, tools, parallel);
    case ToolCallFormat::QwenXml:
      return qwen_xml_grammar(tools, parallel);
    case ToolCallFormat::None:
      break;
  }
  return Status::unimplemented("no tool-call grammar for format " + std::string(format_name(format)));
}

}  // namespace cellserve::server::tool_calls
