// ToolSpec: one function of a request's `tools`, as the parser and the grammar writer need it.
#pragma once

#include <string>

#include <boost/json/value.hpp>

namespace cellserve::server::tool_calls {

struct ToolSpec {
  std::string name;
  boost::json::value parameters;  // its JSON Schema (`function.parameters`); null when absent
};

}  // namespace cellserve::server::tool_calls
