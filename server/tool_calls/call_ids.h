// Tool-call ids: the one the model wrote when the format carries one and it is usable, else a
// fresh random one ("call_" + 24 alphanumerics; 9 alphanumerics for Mistral, whose templates
// reject any other id when the conversation comes back).
#pragma once

#include <string>
#include <string_view>

namespace cellserve::server::tool_calls::detail {

// Thread-safe.
std::string make_call_id(bool nine_characters);
// `written` when it suits the format (1-64 of [A-Za-z0-9_-]; exactly 9 alphanumerics for Mistral).
bool usable_call_id(std::string_view written, bool nine_characters);

}  // namespace cellserve::server::tool_calls::detail
