// tool_call_grammar: for tool_choice "required" or a named function, the GBNF grammar that forces
// the model's answer to be tool calls in its format (`tools` is then all the request's tools, or
// just the named one). The JSON inside a call is left to EXTERNAL rules: names the grammar uses but
// does not define, each matched by the engine as one JSON value valid against the schema in
// `external_schemas` (keys in declared order, no whitespace around the value). Every answer the
// grammar admits is read back by parse_tool_calls() of the same format as exactly those calls
// (QwenXml: with the ToolSpec overload, so that string parameters stay strings).
#pragma once

#include <map>
#include <string>
#include <vector>

#include <boost/json/value.hpp>

#include "base/status.h"
#include "server/tool_calls/tool_call_format.h"
#include "server/tool_calls/tool_spec.h"

namespace cellserve::server::tool_calls {

struct ToolGrammar {
  std::string gbnf;                                            // starts at rule `root`; rule names are [a-z0-9-]+
  std::map<std::string, boost::json::value> external_schemas;  // external rule name -> JSON Schema
};

// parallel: one or more calls; otherwise exactly one. Errors: Unimplemented for ToolCallFormat::None
// and for schemas that cannot be moved under a call object (a "$ref": "#", "$defs" two tools define
// differently); InvalidArgument for no tools, a duplicate name, a name outside [A-Za-z0-9_.-]{1,64},
// parameters that are not an object schema, QwenXml parameter names with '<', '>' or control
// characters.
Result<ToolGrammar> tool_call_grammar(ToolCallFormat format, const std::vector<ToolSpec>& tools, bool parallel);

}  // namespace cellserve::server::tool_calls
