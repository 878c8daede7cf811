#include "server/tool_calls/schema_definitions.h"

#include <utility>
#include <vector>

#include <boost/json/array.hpp>

namespace cellserve::server::tool_calls::detail {
namespace {

constexpr std::size_t kMaxSchemaDepth = 64;
constexpr const char* kDefinitionKeys[] = {"$defs", "definitions"};

Status merge(const boost::json::object& definitions, const char* key, boost::json::object& root,
             const std::string& where) {
  boost::json::value& target = root[key];
  if (!target.is_object()) target = boost::json::object();
  for (const auto& [name, schema] : definitions) {
    if (const boost::json::value* existing = target.as_object().if_contains(name)) {
      if (*existing != schema) {
        return Status::unimplemented(where + ": tools define " + key + " '" + std::string(name) + "' differently");
      }
      continue;
    }
    target.as_object()[name] = schema;
  }
  return {};
}

}  // namespace

Status check_no_root_ref(const boost::json::value& schema, const std::string& where) {
  std::vector<std::pair<const boost::json::value*, std::size_t>> pending = {{&schema, 0}};
  while (!pending.empty()) {
    auto [value, depth] = pending.back();
    pending.pop_back();
    if (depth > kMaxSchemaDepth) return Status::invalid_argument(where + ": schema nested too deeply");
    if (const auto* object = value->if_object()) {
      const boost::json::value* ref = object->if_contains("$ref");
      if (ref != nullptr && ref->is_string() && ref->get_string() == "#") {
        return Status::unimplemented(where + ": a \"$ref\": \"#\" to the parameters' own root");
      }
      for (const auto& [key, child] : *object) pending.emplace_back(&child, depth + 1);
    } else if (const auto* array = value->if_array()) {
      for (const auto& child : *array) pending.emplace_back(&child, depth + 1);
    }
  }
  return {};
}

Status move_definitions(boost::json::value& schema, boost::json::object& root, const std::string& where) {
  auto* object = schema.if_object();
  if (object == nullptr) return {};
  for (const char* key : kDefinitionKeys) {
    const boost::json::value* definitions = object->if_contains(key);
    if (definitions == nullptr || !definitions->is_object()) continue;
    CS_RETURN_IF_ERROR(merge(definitions->get_object(), key, root, where));
    object->erase(key);
  }
  return {};
}

Status copy_definitions(const boost::json::value& from, boost::json::object& root, const std::string& where) {
  const auto* object = from.if_object();
  if (object == nullptr) return {};
  for (const char* key : kDefinitionKeys) {
    const boost::json::value* definitions = object->if_contains(key);
    if (definitions == nullptr || !definitions->is_object()) continue;
    CS_RETURN_IF_ERROR(merge(definitions->get_object(), key, root, where));
  }
  return {};
}

}  // namespace cellserve::server::tool_calls::detail
