// Python's json.dumps, which is what Hugging Face's `tojson` filter calls:
//   tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "engine/chat/value.h"

namespace cellserve::engine::chat {

struct JsonDumpOptions {
  bool ensure_ascii = false;          // true: every non-ASCII character as \uXXXX (surrogate pairs above U+FFFF)
  std::optional<std::string> indent;  // nullopt: one line; else the text repeated per nesting level
  std::string item_separator = ", ";  // Python's default; ","  when indent is set
  std::string key_separator = ": ";
  bool sort_keys = false;
  size_t max_bytes = SIZE_MAX;  // output larger than this fails (Limit) instead of growing
};

// Throws TemplateError (Type) for values JSON cannot hold (undefined, callables, namespaces) and
// for dict keys that are not str/int/float/bool/None.
std::string json_dumps(const Value& v, const JsonDumpOptions& options);

}  // namespace cellserve::engine::chat
