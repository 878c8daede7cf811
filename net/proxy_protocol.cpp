#include "net/proxy_protocol.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <charconv>
#include <vector>

#include "net/socket_address.h"

namespace cellserve::net {
namespace {

bool is_ipv4_text(const std::string& text) {
  in_addr a{};
  return ::inet_pton(AF_INET, text.c_str(), &a) == 1;
}

std::vector<std::string_view> split_spaces(std::string_view line) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t i = 0; i <= line.size(); ++i) {
    if (i == line.size() || line[i] == ' ') {
      parts.push_back(line.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
}

bool valid_port(std::string_view text) {
  if (text.empty() || text.size() > 5 || (text.size() > 1 && text[0] == '0')) return false;
  int port = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
  return ec == std::errc() && end == text.data() + text.size() && port >= 0 && port <= 65535;
}

// The address in address_text()'s spelling, or "" when `text` is not an address of `family`.
std::string canonical_address(std::string_view text, int family) {
  const std::string s(text);
  sockaddr_storage storage{};
  storage.ss_family = static_cast<sa_family_t>(family);
  void* where = family == AF_INET ? static_cast<void*>(&reinterpret_cast<sockaddr_in&>(storage).sin_addr)
                                  : static_cast<void*>(&reinterpret_cast<sockaddr_in6&>(storage).sin6_addr);
  if (::inet_pton(family, s.c_str(), where) != 1) return "";
  return address_text(storage);
}

}  // namespace

std::string proxy_v1_header(int client_fd) {
  sockaddr_storage peer{};
  sockaddr_storage local{};
  socklen_t peer_len = sizeof(peer);
  socklen_t local_len = sizeof(local);
  if (::getpeername(client_fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0 ||
      ::getsockname(client_fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0) {
    return "PROXY UNKNOWN\r\n";
  }
  const std::string source = address_text(peer);
  const std::string destination = address_text(local);
  const int source_port = address_port(peer);
  const int destination_port = address_port(local);
  if (source.empty() || destination.empty() || source_port < 0 || destination_port < 0) return "PROXY UNKNOWN\r\n";
  // Both ends in one family: an IPv4 client on a dual-stack listener has a mapped local address.
  const bool v4 = is_ipv4_text(source) && is_ipv4_text(destination);
  if (!v4 && (is_ipv4_text(source) || is_ipv4_text(destination))) return "PROXY UNKNOWN\r\n";
  return std::string("PROXY ") + (v4 ? "TCP4 " : "TCP6 ") + source + " " + destination + " " +
         std::to_string(source_port) + " " + std::to_string(destination_port) + "\r\n";
}

std::optional<std::string> parse_proxy_v1_source(std::string_view line) {
  if (line.size() + 2 > kProxyV1MaxLine) return std::nullopt;
  const std::vector<std::string_view> parts = split_spaces(line);
  if (parts.size() < 2 || parts[0] != "PROXY") return std::nullopt;
  if (parts[1] == "UNKNOWN") return std::string();
  if (parts.size() != 6 || (parts[1] != "TCP4" && parts[1] != "TCP6")) return std::nullopt;
  const int family = parts[1] == "TCP4" ? AF_INET : AF_INET6;
  const std::string source = canonical_address(parts[2], family);
  if (source.empty() || canonical_address(parts[3], family).empty()) return std::nullopt;
  if (!valid_port(parts[4]) || !valid_port(parts[5])) return std::nullopt;
  return source;
}

}  // namespace cellserve::net
