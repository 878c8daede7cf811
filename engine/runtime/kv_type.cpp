#include "engine/runtime/kv_type.h"

#include <optional>
#include <string>

namespace cellserve::engine {

Result<GgmlType> parse_kv_type(std::string_view name) {
  const std::optional<GgmlType> type = ggml_type_from_name(name);
  if (!type) return Status::invalid_argument("--kv-type " + std::string(name) + ": expected f16, f32 or q8_0");
  return *type;
}

}  // namespace cellserve::engine
