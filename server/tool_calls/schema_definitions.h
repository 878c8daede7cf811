// Moving a tool's JSON Schema under another root: its "$defs" / "definitions" (which its "$ref"s
// like "#/$defs/X" point into) must move to the new root with it, and a "$ref": "#" (the tool's
// own root) cannot be kept.
#pragma once

#include <string>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "base/status.h"

namespace cellserve::server::tool_calls::detail {

// Unimplemented when `schema` (nested at most 64 deep) holds a "$ref" to its own root "#".
Status check_no_root_ref(const boost::json::value& schema, const std::string& where);

// Moves the "$defs" and "definitions" of `schema` (when it is an object) into `root`; a name that
// `root` already has with a different schema is Unimplemented.
Status move_definitions(boost::json::value& schema, boost::json::object& root, const std::string& where);

// Copies (rather than moves) `from`'s definitions into `root`, with the same rule.
Status copy_definitions(const boost::json::value& from, boost::json::object& root, const std::string& where);

}  // namespace cellserve::server::tool_calls::detail
