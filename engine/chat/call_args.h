// CallArgs: the arguments of one call (function, method, filter, test or macro), and binding them
// to named parameters the way Python does (positional first, then keywords, then defaults).
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/chat/value.h"

namespace cellserve::engine::chat {

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;

  // The keyword argument `name`, or nullptr.
  const Value* keyword_arg(std::string_view name) const;
};

// One parameter of a builtin: a name and, when optional, its default.
struct Param {
  std::string_view name;
  std::optional<Value> default_value;  // nullopt: required

  Param(const char* n) : name(n) {}  // NOLINT: a required parameter, written as its name
  Param(const char* n, Value d) : name(n), default_value(std::move(d)) {}
};

// Binds `args` to `params` for the function called `fn_name` and returns one value per parameter,
// in order. Throws TemplateError (Type) for a missing required argument, too many positional
// arguments, an unknown keyword or a parameter given twice.
std::vector<Value> bind_args(const CallArgs& args, std::initializer_list<Param> params, std::string_view fn_name);

}  // namespace cellserve::engine::chat
