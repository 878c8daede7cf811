#include "net/socket_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>

namespace cellserve::net {

std::string address_text(const sockaddr_storage& address) {
  char text[INET6_ADDRSTRLEN] = "";
  if (address.ss_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(address).sin_addr, text, sizeof(text));
  } else if (address.ss_family == AF_INET6) {
    const in6_addr& a = reinterpret_cast<const sockaddr_in6&>(address).sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(&a)) {
      ::inet_ntop(AF_INET, &a.s6_addr[12], text, sizeof(text));
    } else {
      ::inet_ntop(AF_INET6, &a, text, sizeof(text));
    }
  }
  return text;
}

std::string peer_address(int fd) {
  sockaddr_storage address{};
  socklen_t len = sizeof(address);
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&address), &len) != 0) return "";
  return address_text(address);
}

int address_port(const sockaddr_storage& a) {
  if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(a).sin_port);
  if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(a).sin6_port);
  return -1;
}

namespace {

// The port of `fd`'s end that `name` (getpeername or getsockname) reads; 0 when it cannot be read.
int socket_end_port(int fd, int (*name)(int, sockaddr*, socklen_t*)) {
  sockaddr_storage address{};
  socklen_t len = sizeof(address);
  if (name(fd, reinterpret_cast<sockaddr*>(&address), &len) != 0) return 0;
  return std::max(0, address_port(address));
}

}  // namespace

int peer_port(int fd) { return socket_end_port(fd, ::getpeername); }
int local_port(int fd) { return socket_end_port(fd, ::getsockname); }

}  // namespace cellserve::net
