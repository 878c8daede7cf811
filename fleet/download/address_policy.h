// Which network addresses a download named by someone else may reach. A hub tells its agents
// which URLs to fetch; without a check, one URL (or a redirect, or a name that resolves to it)
// aims the device at its own loopback services, its home network or a cloud metadata endpoint
// (SSRF), and the replica's state reports what it found. The downloader checks the address each
// socket actually connects to (after DNS and every redirect), against the ranges below.
#pragma once

#include <sys/socket.h>

#include <optional>
#include <string>

namespace cellserve::fleet {

// Why `address` is not a public unicast address ("loopback", "private", "link-local",
// "shared (CGNAT)", "multicast", "unspecified", "reserved", "unique local", ...), or nullopt for
// a public one. IPv4 in IPv6 (mapped, compatible, NAT64 64:ff9b::/96, 6to4 2002::/16) is judged by
// the IPv4 address inside it. Covers 169.254.169.254 (link-local) and fd00:ec2::254 (unique local).
std::optional<std::string> non_public_address_kind(const sockaddr* address, socklen_t length);

// The address as text, "1.2.3.4" or "::1" ("?" when it is neither family).
std::string address_text(const sockaddr* address, socklen_t length);

// True when `a` and `b` are the same address and port (IPv4 or IPv6).
bool same_endpoint(const sockaddr* a, const sockaddr* b);

}  // namespace cellserve::fleet
