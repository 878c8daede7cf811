#include "server/tool_calls/tool_catalog.h"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

namespace cellserve::server::tool_calls {
namespace {

bool is_string_type(const boost::json::value& schema) {
  const auto* object = schema.if_object();
  if (object == nullptr) return false;
  const boost::json::value* type = object->if_contains("type");
  if (type == nullptr) return false;
  if (type->is_string()) return type->get_string() == "string";
  const auto* list = type->if_array();
  return list != nullptr && list->size() == 1 && (*list)[0].is_string() && (*list)[0].get_string() == "string";
}

}  // namespace

ToolCatalog::ToolCatalog(const std::vector<std::string>& names) {
  for (const std::string& name : names) string_parameters_[name];
}

ToolCatalog::ToolCatalog(const std::vector<ToolSpec>& tools) {
  for (const ToolSpec& tool : tools) {
    auto& strings = string_parameters_[tool.name];
    const auto* schema = tool.parameters.if_object();
    const boost::json::value* properties = schema ? schema->if_contains("properties") : nullptr;
    if (properties == nullptr || !properties->is_object()) continue;
    for (const auto& [name, property] : properties->get_object()) {
      if (is_string_type(property)) strings.emplace(name);
    }
  }
}

bool ToolCatalog::has_tool(std::string_view name) const {
  return string_parameters_.find(name) != string_parameters_.end();
}

bool ToolCatalog::is_string_parameter(std::string_view tool, std::string_view parameter) const {
  auto it = string_parameters_.find(tool);
  return it != string_parameters_.end() && it->second.find(parameter) != it->second.end();
}

}  // namespace cellserve::server::tool_calls
