// JsonStringWriter: raw model text -> the body of a JSON string (no quotes), byte by byte, so it can
// stream. Quotes, backslashes and control characters are escaped; ill-formed UTF-8 becomes U+FFFD,
// so the output is always a valid JSON string body.
#pragma once

#include <string>
#include <string_view>

#include "server/tool_calls/utf8_sequence.h"

namespace cellserve::server::tool_calls::detail {

class JsonStringWriter {
 public:
  // Appends to `out` the escaped form of every character `byte` completes.
  void feed(char byte, std::string& out);
  // Ends the string: an unfinished character becomes U+FFFD.
  void finish(std::string& out);
  // The bytes of an unfinished character (for callers that give up on the string).
  const std::string& pending() const { return pending_; }
  void reset();

 private:
  Utf8Sequence utf8_;
  std::string pending_;
};

// The whole of `text` as a JSON string body.
void append_json_string_body(std::string_view text, std::string& out);

}  // namespace cellserve::server::tool_calls::detail
