// The per-request deadline header, `X-Request-Timeout: <seconds>`: a client's own limit on how long
// a request may take. The hub shortens its queue wait with it and `serve` the job's deadline on the
// device; both read it here so they accept and refuse the same values.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

#include "base/status.h"
#include "net/http_types.h"

namespace cellserve::net {

inline constexpr std::string_view kRequestTimeoutHeader = "X-Request-Timeout";
inline constexpr double kMaxRequestTimeoutSeconds = 86400;  // one day

// The header's value as a duration: a decimal number of seconds in (0, 86400]. nullopt when the
// header is absent; InvalidArgument naming the header for anything else (empty, not a number,
// trailing text, zero, negative, NaN, infinity, beyond a day).
Result<std::optional<std::chrono::duration<double>>> request_timeout(const HttpRequest& req);

}  // namespace cellserve::net
