// What of a device's response headers reaches the user. A device is a stranger's machine: it
// must not set cookies on the hub's origin, pin it with HSTS, open it to other origins with
// CORS, redirect, or add a second signature beside its own. Only an allow-list passes, each
// value checked, and the content type is one an API answer has.
#pragma once

#include <string>
#include <string_view>

#include "net/http_types.h"

namespace cellserve::fleet {

// The headers of `from_device` that may reach the user: Retry-After (a number of seconds),
// Cache-Control (no-cache or no-store only), Allow (a list of methods), and the first
// X-Cellserve-Signature (bounded); names lower-cased. Everything else is dropped.
net::HeaderList headers_for_user(const net::HeaderList& from_device);

// The X-Cellserve-Signature value headers_for_user() would pass on ("" : none).
std::string signature_header(const net::HeaderList& from_device);

// `type` when it is an API answer's (application/json, text/event-stream, text/plain, each with
// parameters), else application/octet-stream: a device cannot have the user's browser render
// HTML or script from the hub's origin.
std::string content_type_for_user(std::string_view type);

}  // namespace cellserve::fleet
