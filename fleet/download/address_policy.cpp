#include "fleet/download/address_policy.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdint>
#include <cstring>

namespace cellserve::fleet {
namespace {

// The IPv4 ranges that are not public unicast (RFC 6890), host byte order.
std::optional<std::string> ipv4_kind(uint32_t a) {
  const auto in = [a](uint32_t net, int bits) { return bits == 0 || (a >> (32 - bits)) == (net >> (32 - bits)); };
  if (in(0x00000000, 8)) return "unspecified";                                          // 0.0.0.0/8 "this network"
  if (in(0x7F000000, 8)) return "loopback";                                             // 127.0.0.0/8
  if (in(0x0A000000, 8) || in(0xAC100000, 12) || in(0xC0A80000, 16)) return "private";  // RFC 1918
  if (in(0x64400000, 10)) return "shared (CGNAT)";                                      // 100.64.0.0/10
  if (in(0xA9FE0000, 16)) return "link-local";  // 169.254.0.0/16, cloud metadata among them
  if (in(0xE0000000, 4)) return "multicast";    // 224.0.0.0/4
  if (in(0xF0000000, 4)) return "reserved";     // 240.0.0.0/4, broadcast among them
  if (in(0xC0000000, 24) || in(0xC0000200, 24) || in(0xC6336400, 24) || in(0xCB007100, 24) || in(0xC6120000, 15)) {
    return "reserved";  // IETF protocol assignments, documentation, benchmarking
  }
  return std::nullopt;
}

uint32_t ipv4_at(const uint8_t* b) {
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | uint32_t{b[3]};
}

std::optional<std::string> ipv6_kind(const uint8_t* b) {
  static constexpr uint8_t kZero[16] = {};
  const auto prefix = [b](std::initializer_list<uint8_t> bytes) {
    size_t i = 0;
    for (const uint8_t x : bytes) {
      if (b[i++] != x) return false;
    }
    return true;
  };
  if (std::memcmp(b, kZero, 16) == 0) return "unspecified";
  if (std::memcmp(b, kZero, 15) == 0 && b[15] == 1) return "loopback";
  // IPv4 inside IPv6 reaches that IPv4 address: judged as one.
  if (std::memcmp(b, kZero, 10) == 0 && b[10] == 0xFF && b[11] == 0xFF) return ipv4_kind(ipv4_at(b + 12));  // mapped
  if (std::memcmp(b, kZero, 12) == 0) return ipv4_kind(ipv4_at(b + 12));  // compatible (deprecated)
  if (prefix({0x00, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0})) return ipv4_kind(ipv4_at(b + 12));  // NAT64
  if (prefix({0x20, 0x02})) return ipv4_kind(ipv4_at(b + 2));                                       // 6to4
  if ((b[0] & 0xFE) == 0xFC) return "unique local";                // fc00::/7, fd00:ec2::254 among them
  if (b[0] == 0xFE && (b[1] & 0xC0) == 0x80) return "link-local";  // fe80::/10
  if (b[0] == 0xFE && (b[1] & 0xC0) == 0xC0) return "site-local";  // fec0::/10 (deprecated)
  if (b[0] == 0xFF) return "multicast";
  // Teredo (2001::/32) tunnels to any IPv4 address; 2001:db8::/32 is documentation.
  if (prefix({0x20, 0x01, 0x00, 0x00}) || prefix({0x20, 0x01, 0x0D, 0xB8})) return "reserved";
  if ((b[0] & 0xE0) != 0x20) return "reserved";  // outside 2000::/3, the global unicast space
  return std::nullopt;
}

}  // namespace

std::optional<std::string> non_public_address_kind(const sockaddr* address, socklen_t length) {
  if (address == nullptr) return "unknown";
  if (address->sa_family == AF_INET && length >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(address);
    return ipv4_kind(ntohl(in->sin_addr.s_addr));
  }
  if (address->sa_family == AF_INET6 && length >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(address);
    return ipv6_kind(in6->sin6_addr.s6_addr);
  }
  return "not an IP";  // AF_UNIX and the like: never a stranger's to reach
}

std::string address_text(const sockaddr* address, socklen_t length) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (address != nullptr && address->sa_family == AF_INET && length >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(address)->sin_addr, text, sizeof(text));
  } else if (address != nullptr && address->sa_family == AF_INET6 &&
             length >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr, text, sizeof(text));
  }
  return text;
}

bool same_endpoint(const sockaddr* a, const sockaddr* b) {
  if (a == nullptr || b == nullptr || a->sa_family != b->sa_family) return false;
  if (a->sa_family == AF_INET) {
    const auto* x = reinterpret_cast<const sockaddr_in*>(a);
    const auto* y = reinterpret_cast<const sockaddr_in*>(b);
    return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
  }
  if (a->sa_family == AF_INET6) {
    const auto* x = reinterpret_cast<const sockaddr_in6*>(a);
    const auto* y = reinterpret_cast<const sockaddr_in6*>(b);
    return x->sin6_port == y->sin6_port && std::memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(in6_addr)) == 0;
  }
  return false;
}

}  // namespace cellserve::fleet
