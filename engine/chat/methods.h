// Python methods of str, dict and list that templates call: s.strip(), s.split(','),
// s.startswith(...), d.get(k), d.items(), ... Methods that mutate (list.append, dict.update) are
// refused as in Hugging Face's ImmutableSandboxedEnvironment: looking them up gives an "unsafe"
// undefined, and calling it fails with a security error.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "engine/chat/error.h"
#include "engine/chat/value.h"

namespace cellserve::engine::chat {

// Supported: some value kind has the method (mutators count: they fail at render, as in Hugging
// Face). Unsupported: a Python str/dict/list method outside the subset (rejected at parse time).
// Unknown: no such Python method (the call may still reach a macro stored in a namespace).
Support method_support(std::string_view name);

// The bound method `name` of `receiver`, an unsafe undefined for a refused mutator, or nullopt
// when `receiver` has no such method.
std::optional<Value> find_method(const Value& receiver, const std::string& name);

}  // namespace cellserve::engine::chat
