// The PROXY protocol's version 1 header (HAProxy's text form), spoken only between the TLS
// terminator and the plain HTTP server behind it on the same host. Behind a terminator every
// connection comes from 127.0.0.1, so without it each limit keyed by client address (the hub's
// challenges, the connection caps) would count every client as one. The terminator writes
//   PROXY TCP4 203.0.113.7 192.0.2.1 51234 443\r\n
// before the client's first byte; the server reads it and takes the client's address from it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace cellserve::net {

// The longest line the protocol allows, CR LF included.
inline constexpr size_t kProxyV1MaxLine = 107;

// The header for the accepted socket `client_fd` (its peer is the source, its local end the
// destination); "PROXY UNKNOWN\r\n" when the addresses cannot be read.
std::string proxy_v1_header(int client_fd);

// The source address of a header line without its CR LF, in address_text()'s spelling (an
// IPv4-mapped IPv6 source as plain IPv4); "" for "PROXY UNKNOWN ..." (the peer's own address
// then stands); nullopt when the line is not a well-formed version 1 header.
std::optional<std::string> parse_proxy_v1_source(std::string_view line);

}  // namespace cellserve::net
