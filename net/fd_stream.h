// A Beast SyncReadStream/SyncWriteStream over a connected socket's file descriptor, with a read
// deadline enforced by poll() and writes bounded by SO_SNDTIMEO.
//
// Why not asio::ip::tcp::socket: Asio's synchronous reads retry EAGAIN (what SO_RCVTIMEO yields)
// with an unbounded poll(), so a stalled client would block a connection thread forever. Here a
// read that passes the deadline fails with beast::error::timeout, and every send uses
// MSG_NOSIGNAL so a vanished peer never raises SIGPIPE.
#pragma once

#include <chrono>
#include <cstddef>

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/system/system_error.hpp>

namespace cellserve::net {

class FdStream {
 public:
  using Clock = std::chrono::steady_clock;

  // Does not own `fd`.
  explicit FdStream(int fd) : fd_(fd) {}

  int fd() const { return fd_; }

  // Reads after `deadline` fail with beast::error::timeout.
  void set_read_deadline(Clock::time_point deadline) { deadline_ = deadline; }

  // Waits until the socket is readable (data, EOF or error) or `deadline` passes. False on timeout.
  bool wait_readable(Clock::time_point deadline) const;

  // Reads at most `size` bytes into `data`, waiting until the read deadline. 0 with
  // asio::error::eof when the peer closed, beast::error::timeout past the deadline.
  size_t read_some(void* data, size_t size, boost::system::error_code& ec);

  // Sends some of the `count` buffers (one sendmsg). beast::error::timeout when the peer has not
  // drained its window within SO_SNDTIMEO.
  size_t write_some(const boost::asio::const_buffer* buffers, size_t count, boost::system::error_code& ec);

  // --- The Beast/Asio stream concepts.

  template <class MutableBufferSequence>
  size_t read_some(const MutableBufferSequence& buffers, boost::system::error_code& ec) {
    for (auto it = boost::asio::buffer_sequence_begin(buffers); it != boost::asio::buffer_sequence_end(buffers); ++it) {
      const boost::asio::mutable_buffer b = *it;
      if (b.size() > 0) return read_some(b.data(), b.size(), ec);
    }
    ec = {};
    return 0;
  }

  template <class MutableBufferSequence>
  size_t read_some(const MutableBufferSequence& buffers) {
    boost::system::error_code ec;
    const size_t n = read_some(buffers, ec);
    if (ec) throw boost::system::system_error(ec);
    return n;
  }

  template <class ConstBufferSequence>
  size_t write_some(const ConstBufferSequence& buffers, boost::system::error_code& ec) {
    constexpr size_t kMaxBuffers = 16;
    boost::asio::const_buffer list[kMaxBuffers];
    size_t count = 0;
    for (auto it = boost::asio::buffer_sequence_begin(buffers);
         it != boost::asio::buffer_sequence_end(buffers) && count < kMaxBuffers; ++it) {
      const boost::asio::const_buffer b = *it;
      if (b.size() > 0) list[count++] = b;
    }
    if (count == 0) {
      ec = {};
      return 0;
    }
    return write_some(list, count, ec);
  }

  template <class ConstBufferSequence>
  size_t write_some(const ConstBufferSequence& buffers) {
    boost::system::error_code ec;
    const size_t n = write_some(buffers, ec);
    if (ec) throw boost::system::system_error(ec);
    return n;
  }

 private:
  int fd_;
  Clock::time_point deadline_ = Clock::time_point::max();
};

}  // namespace cellserve::net
