// Small pieces of URL text shared by the servers and the fleet: percent-decoding (as the file
// endpoint decodes paths) and a case-insensitive scheme check.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace cellserve::net {

// `s` percent-decoded; nullopt for a bad escape or an encoded NUL.
std::optional<std::string> percent_decode(std::string_view s);

// True when `s` starts with `lower_prefix` (given in lower case), ignoring ASCII case: "HTTPS://x"
// starts with "https://".
bool starts_with_nocase(std::string_view s, std::string_view lower_prefix);

}  // namespace cellserve::net
