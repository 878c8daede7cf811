// The global functions every template sees: Jinja2's range(), dict(), namespace() and joiner()
// (cycler() and lipsum() fail as unsupported when called), and Hugging Face's
// raise_exception(message) and strftime_now(format).
#pragma once

#include <ctime>
#include <string>
#include <string_view>

#include "engine/chat/value.h"

namespace cellserve::engine::chat {

// The global `name`, or nullptr. The values are immutable and shared by all renders.
const Value* find_global(std::string_view name);

// Python's datetime.strftime for a naive local time: %f is 000000, %z and %Z are empty, the rest
// is C strftime in the "C" locale. Throws TemplateError (Limit) for an absurdly long result.
std::string py_strftime(const std::string& format, const std::tm& time);

}  // namespace cellserve::engine::chat
