// Python's text conversions, which decide what a template prints: str() and repr() of every value
// kind, float repr (shortest round-trip, scientific outside 1e-4..1e16), string repr quoting,
// printf-style `%` formatting and str.format(). Failures throw TemplateError.
#pragma once

#include <string>
#include <string_view>

#include "engine/chat/value.h"

namespace cellserve::engine::chat {

struct CallArgs;

// Python's str(v): what {{ v }} prints. Undefined prints "" and None prints "None".
std::string py_str(const Value& v);
// Python's repr(v): strings quoted, containers as Python literals.
std::string py_repr(const Value& v, int depth = 0);
std::string float_repr(double d);
std::string string_repr(std::string_view s);
// markupsafe.escape(): & < > " ' as HTML entities.
std::string html_escape(std::string_view s);

// `format % args` (Python printf-style; args is a tuple, a dict for %(name)s, or one value).
std::string percent_format(std::string_view format, const Value& args);
// format.format(*args, **kwargs): positional {} / {0}, named {name}, !r/!s and a format spec
// ([[fill]align][sign][0][width][,][.precision][type]).
std::string str_format(std::string_view format, const CallArgs& args);

}  // namespace cellserve::engine::chat
