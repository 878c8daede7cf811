// ToolCatalog: what the parser knows of the request's tools: their names, and (when the schemas are
// given) which parameters are strings, so that QwenXml's raw parameter text "42" stays the string "42".
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "server/tool_calls/tool_spec.h"

namespace cellserve::server::tool_calls {

class ToolCatalog {
 public:
  explicit ToolCatalog(const std::vector<std::string>& names);
  explicit ToolCatalog(const std::vector<ToolSpec>& tools);

  bool has_tool(std::string_view name) const;
  // True when the tool's schema declares `parameter` with "type": "string" (or ["string"]).
  bool is_string_parameter(std::string_view tool, std::string_view parameter) const;

 private:
  std::map<std::string, std::set<std::string, std::less<>>, std::less<>> string_parameters_;  // by tool
};

}  // namespace cellserve::server::tool_calls
