#include "net/host_check.h"

#include <cctype>
#include <string>

#include <boost/asio/ip/address.hpp>

namespace cellserve::net {

std::string host_name_of(std::string_view host) {
  std::string name;
  if (host.starts_with('[')) {
    const size_t close = host.find(']');
    if (close == std::string_view::npos) return "";
    const std::string_view after = host.substr(close + 1);
    if (!after.empty() && !after.starts_with(':')) return "";
    name = std::string(host.substr(1, close - 1));
  } else {
    const size_t colon = host.find(':');
    if (colon != std::string_view::npos && host.find(':', colon + 1) != std::string_view::npos) return "";
    name = std::string(host.substr(0, colon));
  }
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

bool literal_or_localhost_host(std::string_view host_header) {
  const std::string name = host_name_of(host_header);
  if (name.empty()) return false;
  if (name == "localhost" || name.ends_with(".localhost")) return true;
  boost::system::error_code ec;
  boost::asio::ip::make_address(name, ec);
  return !ec;
}

}  // namespace cellserve::net
