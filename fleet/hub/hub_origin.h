// Which hub origins an agent's tunnel signature may name (fleet/spec/agent_protocol.h): the hub's
// own. An agent signs the origin it dialed; a signature naming any other origin was made for
// another hub (one relaying this hub's challenge) and opens nothing here.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cellserve::fleet {

struct HubOrigins {
  bool tls = false;
  std::string listen_host;               // --listen's host: an address, a name, or a wildcard
  int port = 0;                          // the port agents reach (the bound one)
  std::vector<std::string> public_urls;  // --public-url: when given, the only origins accepted
};

// Whether `origin` ("http(s)://host:port", as hub_origin() writes it) is this hub's: one of the
// public_urls (normalised), or with the hub's scheme and port the listen host (any loopback
// address or localhost when it listens on loopback). On a wildcard address (0.0.0.0, ::) only the
// public_urls name it; without any, every host on its port is accepted (the hub logs that).
bool is_own_origin(const HubOrigins& own, std::string_view origin);

// `url` ("https://hub.example:8443/...") as an origin in hub_origin()'s form; "" when it is not
// an http(s) URL with a host (the default port filled in).
std::string normalized_origin(std::string_view url);

// The host of `url` ("https://Hub.Example:8443/x" → "hub.example", IPv6 without brackets); "" when
// it is not an http(s) URL with a host.
std::string public_url_host(std::string_view url);

}  // namespace cellserve::fleet
