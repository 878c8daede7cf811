#include "fleet/hub/hub_origin.h"

#include <cctype>
#include <charconv>

#include <boost/asio/ip/address.hpp>

#include "fleet/spec/agent_protocol.h"
#include "net/url_text.h"

namespace cellserve::fleet {
namespace {

struct Origin {
  bool tls = false;
  std::string host;  // lower-case, IPv6 in brackets as written
  int port = 0;
};

bool parse_origin(std::string_view url, Origin* out) {
  if (net::starts_with_nocase(url, "https://")) {
    out->tls = true;
    url.remove_prefix(8);
  } else if (net::starts_with_nocase(url, "http://")) {
    out->tls = false;
    url.remove_prefix(7);
  } else {
    return false;
  }
  if (const size_t slash = url.find('/'); slash != std::string_view::npos) url = url.substr(0, slash);
  std::string_view host = url;
  out->port = out->tls ? 443 : 80;
  const size_t close = url.rfind(']');
  const size_t colon = url.rfind(':');
  if (colon != std::string_view::npos && (close == std::string_view::npos || colon > close)) {
    host = url.substr(0, colon);
    const std::string_view digits = url.substr(colon + 1);
    int port = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
    if (ec != std::errc() || end != digits.data() + digits.size() || port <= 0 || port > 65535) return false;
    out->port = port;
  }
  if (host.empty() || host.size() > 253) return false;
  out->host.clear();
  for (const char c : host) out->host += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return true;
}

std::string unbracketed(const std::string& host) {
  return host.size() >= 2 && host.front() == '[' && host.back() == ']' ? host.substr(1, host.size() - 2) : host;
}

bool is_address(const std::string& host, bool (*test)(const boost::asio::ip::address&)) {
  boost::system::error_code ec;
  const boost::asio::ip::address a = boost::asio::ip::make_address(unbracketed(host), ec);
  return !ec && test(a);
}

bool loopback(const std::string& host) {
  return host == "localhost" || is_address(host, [](const boost::asio::ip::address& a) { return a.is_loopback(); });
}

bool wildcard(const std::string& host) {
  return host.empty() || is_address(host, [](const boost::asio::ip::address& a) { return a.is_unspecified(); });
}

}  // namespace

std::string normalized_origin(std::string_view url) {
  Origin o;
  if (!parse_origin(url, &o)) return "";
  return hub_origin(o.tls, o.host, o.port);
}

std::string public_url_host(std::string_view url) {
  Origin o;
  if (!parse_origin(url, &o)) return "";
  return unbracketed(o.host);
}

bool is_own_origin(const HubOrigins& own, std::string_view origin) {
  Origin o;
  if (!parse_origin(origin, &o)) return false;
  const std::string normal = hub_origin(o.tls, o.host, o.port);
  if (normal != origin) return false;  // agents sign the normal form only
  for (const std::string& url : own.public_urls) {
    if (normalized_origin(url) == normal) return true;
  }
  if (o.tls != own.tls || o.port != own.port) return false;
  std::string listen;
  for (const char c : own.listen_host) listen += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // On a wildcard address only --public-url can say which names are the hub's own.
  if (wildcard(listen)) return own.public_urls.empty();
  if (loopback(listen)) return loopback(o.host);
  return unbracketed(o.host) == unbracketed(listen);
}

}  // namespace cellserve::fleet
