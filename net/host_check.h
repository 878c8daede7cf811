// DNS rebinding: a page on attacker.example whose name the attacker points at 127.0.0.1 makes
// the browser send requests to a server on this machine with "Host: attacker.example". A server
// without authentication (a key-less `serve`, an open hub) answers only requests whose Host names
// it as an address literal or as localhost, which no rebinding page can produce.
#pragma once

#include <string>
#include <string_view>

namespace cellserve::net {

// True when `host_header` (the Host header: "name", "name:port", "[v6]:port") names an IP address
// literal, "localhost" or a name under ".localhost" (RFC 6761: always loopback). Empty: false.
bool literal_or_localhost_host(std::string_view host_header);

// The name part of a Host header, lower-cased, without port or IPv6 brackets ("" when malformed).
std::string host_name_of(std::string_view host_header);

}  // namespace cellserve::net
