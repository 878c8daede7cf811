// Socket helpers for tests that open many connections or wait for a server to hang up.
#pragma once

#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

namespace cellserve::testing {

// Whether the peer closed `fd` (EOF, or reset after anything it sent), waiting at most `limit`.
inline bool closed_within(int fd, std::chrono::milliseconds limit) {
  const auto give_up = std::chrono::steady_clock::now() + limit;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(give_up - std::chrono::steady_clock::now()).count();
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::max<long>(left, 0))) <= 0) return false;
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return true;
  }
}

// Raises RLIMIT_NOFILE's soft limit to at least `need`; false when the hard limit is lower.
inline bool raise_fd_limit(rlim_t need) {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return false;
  if (lim.rlim_cur >= need) return true;
  if (lim.rlim_max != RLIM_INFINITY && lim.rlim_max < need) return false;
  lim.rlim_cur = need;
  return ::setrlimit(RLIMIT_NOFILE, &lim) == 0;
}

}  // namespace cellserve::testing
