// Step: what a byte-at-a-time reader of the call markup reports for each byte.
#pragma once

namespace cellserve::server::tool_calls::detail {

enum class Step {
  Consumed,    // the byte belongs to what is being read; more is to come
  Done,        // the byte completed it
  DoneBefore,  // it was complete before this byte, which belongs to whatever follows
  Fail,        // the byte cannot continue it
};

inline bool is_json_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

}  // namespace cellserve::server::tool_calls::detail
