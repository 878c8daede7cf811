// Standard base64 (RFC 4648 section 4, with '=' padding): how evidence JSON carries DER.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace cellserve::fleet::attest {

// `bytes` in base64, padded, on one line.
std::string base64_encode(std::string_view bytes);

// The bytes `text` encodes; nullopt unless `text` is padded base64 (no whitespace,
// no line breaks, no URL-safe alphabet, length a multiple of 4).
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace cellserve::fleet::attest
