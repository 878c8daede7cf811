// Jinja2's built-in filters (`value | name(args)`) in the subset chat templates use, with Hugging
// Face's `tojson` (Python json.dumps: ensure_ascii=False, indent, separators, sort_keys).
#pragma once

#include <string_view>

#include "engine/chat/call_args.h"
#include "engine/chat/error.h"
#include "engine/chat/value.h"

namespace cellserve::engine::chat {

using FilterFn = Value (*)(Renderer&, const Value& input, CallArgs& args);

// Supported: implemented. Unsupported: a Jinja2 filter outside the subset (groupby, urlize, ...).
Support filter_support(std::string_view name);
// The implementation of `name`, or nullptr.
FilterFn find_filter(std::string_view name);

// Internal: the filters of filters_seq.cpp (sequence and mapping filters).
FilterFn find_sequence_filter(std::string_view name);

}  // namespace cellserve::engine::chat
