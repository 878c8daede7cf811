// A client's IP address as text, the one spelling used wherever connections are counted or
// limited per client (the HTTP server, the TLS terminator, the hub's challenges).
#pragma once

#include <sys/socket.h>

#include <string>

namespace cellserve::net {

// The address's IP as text; an IPv4-mapped IPv6 address as plain IPv4, so a dual-stack listener
// counts one client once. "" for other families.
std::string address_text(const sockaddr_storage& address);

// address_text() of the connected socket's peer; "" when it cannot be read.
std::string peer_address(int fd);

// The address's port; -1 for other families than IPv4 and IPv6.
int address_port(const sockaddr_storage& address);

// The TCP port of a connected socket's peer, or of its own end; 0 when it cannot be read.
int peer_port(int fd);
int local_port(int fd);

}  // namespace cellserve::net
