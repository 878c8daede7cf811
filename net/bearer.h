// API keys on requests: where a client puts its key, and comparing keys without leaking them
// through response times.
#pragma once

#include <string>
#include <string_view>

#include "net/http_types.h"

namespace cellserve::net {

// True when `given` equals `expected`, in time that depends only on the lengths (no early exit on
// the first differing byte, so the key cannot be guessed byte by byte from response times).
bool constant_time_equal(std::string_view given, std::string_view expected);

// The key a request carries: "Authorization: Bearer <key>", else the "x-api-key" header (which
// Anthropic-style clients send). "" when neither is present. Returned by value: the request's
// header map owns the text it came from.
std::string request_api_key(const HttpRequest& request);

// True when the request carries exactly `expected` (compared in constant time).
bool has_api_key(const HttpRequest& request, std::string_view expected);

}  // namespace cellserve::net
