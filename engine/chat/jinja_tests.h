// Jinja2's tests (`value is name(args)`): defined, none, string, mapping, iterable, sequence,
// number, integer, float, boolean, true/false, even/odd, divisibleby, eq/ne/lt/..., in, sameas,
// lower/upper, callable, escaped, filter, test. Python's type rules apply (a bool is a number,
// an undefined value is iterable and a sequence).
#pragma once

#include <string_view>

#include "engine/chat/call_args.h"
#include "engine/chat/error.h"
#include "engine/chat/value.h"

namespace cellserve::engine::chat {

using TestFn = bool (*)(Renderer&, const Value& input, CallArgs& args);

Support test_support(std::string_view name);
// The implementation of `name`, or nullptr.
TestFn find_test(std::string_view name);

}  // namespace cellserve::engine::chat
