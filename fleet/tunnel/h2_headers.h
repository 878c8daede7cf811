// Header fields crossing the tunnel: which HTTP/1.1 fields HTTP/2 forbids, and nghttp2_nv views.
#pragma once

#include <nghttp2/nghttp2.h>

#include <string>
#include <string_view>
#include <vector>

#include "net/http_types.h"

namespace cellserve::fleet {

// The agent marks a response produced with begin_stream() with this header ("1"), so the hub can
// relay it as a stream; forward() removes it before relaying.
inline constexpr std::string_view kStreamHeader = "x-cellserve-stream";

// True for connection-specific fields that must not appear in HTTP/2 (RFC 9113 §8.2.2):
// connection, keep-alive, proxy-connection, transfer-encoding, upgrade, and te unless "trailers".
// `name` lower-case.
bool is_connection_header(std::string_view name, std::string_view value);

// Appends `in` to `out` with names lower-cased, leaving out connection-specific fields, any name
// in `skip` (lower-case), pseudo-headers, and fields nghttp2 would reject as malformed (which
// would make the peer reset the whole stream).
void append_headers(const net::HeaderList& in, const std::vector<std::string_view>& skip, net::HeaderList* out);

// nghttp2_nv views of `headers`; valid while `headers` is alive and unchanged. nghttp2 copies them
// in nghttp2_submit_request/response.
std::vector<nghttp2_nv> make_nv(const net::HeaderList& headers);

}  // namespace cellserve::fleet
