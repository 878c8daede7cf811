// Header values with parameters (RFC 9110 5.6.6), as in Content-Type and Content-Disposition:
// `multipart/form-data; boundary="a b"`, `form-data; name="x"; filename="a \"b\".txt"`.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace cellserve::net {

struct HeaderValue {
  std::string value;                                        // before the first ';', trimmed, lower-cased
  std::vector<std::pair<std::string, std::string>> params;  // in order; names lower-cased, values unquoted

  // The value of parameter `name` (lower-case); nullopt when absent.
  std::optional<std::string> param(std::string_view name) const;
};

// Parses `value *( OWS ";" OWS [ name "=" value ] )`, where a parameter value is a token or a
// quoted-string with backslash escapes. Unquoted values are taken leniently (any visible
// character but ';' and '"', e.g. an unquoted boundary with '/' or '='). InvalidArgument for an
// unterminated quoted string, a parameter without a name or a value, a control character, text
// after a value, or a parameter given twice (which would make its meaning ambiguous).
Result<HeaderValue> parse_header_value(std::string_view text);

}  // namespace cellserve::net
