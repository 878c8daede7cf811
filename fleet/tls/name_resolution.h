// Turning the hub's name into addresses where a Linux userland's configuration may be missing.
// Android has no /etc/resolv.conf, so a glibc binary there (the agent bundle under Termux or
// PRoot) asks 127.0.0.1:53 and fails. With --dns SERVER[,SERVER...] the agent resolves names
// itself, through c-ares, against those servers; without it, the system resolver is used and a
// failure on a system with no resolver configuration says to pass --dns. docs/phones.md.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <string>
#include <vector>

#include "base/status.h"

namespace cellserve::fleet {

// One address to connect to.
struct ResolvedAddress {
  sockaddr_storage address{};
  socklen_t length = 0;
  int family = AF_INET;
  std::string text;  // "127.0.0.1", "::1"
};

// The DNS servers names are resolved against ("1.1.1.1", "[2606:4700::1111]:53",
// "127.0.0.1:5353"), process-wide; empty: the system resolver (getaddrinfo). Set once at start
// (agent --dns) before connections are made. InvalidArgument names a malformed server.
Status set_dns_servers(const std::vector<std::string>& servers);
std::vector<std::string> dns_servers();

// The addresses of `host` (a name or an IP literal) for `port`, IPv4 first. An IP literal is
// never looked up. Unavailable, in one line naming the host, when it does not resolve within
// `timeout`, and then with the hint to pass --dns where the system has no resolver configuration.
Result<std::vector<ResolvedAddress>> resolve_host(const std::string& host, int port,
                                                  std::chrono::milliseconds timeout = std::chrono::seconds(10));

// The CA bundle the system store stands for: $SSL_CERT_FILE when set (the bundle's launcher sets
// it to its own copy of Debian's ca-certificates), else "" (the library's built-in default).
std::string system_ca_file();

// Whether the system certificate store has any certificates where OpenSSL looks for them
// ($SSL_CERT_FILE / $SSL_CERT_DIR, else OpenSSL's default file and folder).
bool system_ca_store_present();

}  // namespace cellserve::fleet
