#include "net/fd_stream.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>

#include <boost/asio/error.hpp>

namespace cellserve::net {
namespace {

// Milliseconds until `deadline` for poll(): rounded up, clamped to int, 0 when past.
int millis_until(std::chrono::steady_clock::time_point deadline) {
  const auto now = std::chrono::steady_clock::now();
  if (deadline <= now) return 0;
  if (deadline == std::chrono::steady_clock::time_point::max()) return -1;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
  return static_cast<int>(std::min<long long>(ms, 1 << 30));
}

boost::system::error_code errno_code(int err) { return {err, boost::system::system_category()}; }

}  // namespace

bool FdStream::wait_readable(Clock::time_point deadline) const {
  for (;;) {
    pollfd p{fd_, POLLIN, 0};
    const int r = ::poll(&p, 1, millis_until(deadline));
    if (r > 0) return true;  // readable, EOF, or an error that the next read reports
    if (r == 0) return false;
    if (errno != EINTR) return true;  // let the read report it
  }
}

size_t FdStream::read_some(void* data, size_t size, boost::system::error_code& ec) {
  for (;;) {
    const int timeout_ms = millis_until(deadline_);
    if (timeout_ms == 0) {
      ec = boost::beast::error::timeout;
      return 0;
    }
    pollfd p{fd_, POLLIN, 0};
    const int r = ::poll(&p, 1, timeout_ms);
    if (r == 0) {
      ec = boost::beast::error::timeout;
      return 0;
    }
    if (r < 0) {
      if (errno == EINTR) continue;
      ec = errno_code(errno);
      return 0;
    }
    const ssize_t n = ::recv(fd_, data, size, MSG_DONTWAIT);
    if (n > 0) {
      ec = {};
      return static_cast<size_t>(n);
    }
    if (n == 0) {
      ec = boost::asio::error::eof;
      return 0;
    }
    if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
    ec = errno_code(errno);
    return 0;
  }
}

size_t FdStream::write_some(const boost::asio::const_buffer* buffers, size_t count, boost::system::error_code& ec) {
  iovec iov[16];
  count = std::min<size_t>(count, 16);
  for (size_t i = 0; i < count; ++i) {
    iov[i].iov_base = const_cast<void*>(buffers[i].data());
    iov[i].iov_len = buffers[i].size();
  }
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = count;
  for (;;) {
    const ssize_t n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
    if (n >= 0) {
      ec = {};
      return static_cast<size_t>(n);
    }
    if (errno == EINTR) continue;
    // SO_SNDTIMEO expired: the client stopped reading.
    ec = (errno == EAGAIN || errno == EWOULDBLOCK) ? boost::system::error_code(boost::beast::error::timeout)
                                                   : errno_code(errno);
    return 0;
  }
}

}  // namespace cellserve::net
