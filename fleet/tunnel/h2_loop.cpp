#include "fleet/tunnel/h2_loop.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace cellserve::fleet {
namespace {

// Serialized frames are pulled from nghttp2 only while less than this is waiting for the socket,
// so a peer that stops reading costs at most this much memory here (nghttp2 keeps the rest).
constexpr size_t kOutHighWater = 64 << 10;
constexpr size_t kReadChunk = 64 << 10;
// Reads per loop turn before tasks and writes get their turn again (fairness under a flood).
constexpr int kReadsPerTurn = 4;

// The loop whose I/O thread this is (null on other threads).
thread_local const H2Loop* tls_running_loop = nullptr;

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

}  // namespace

Result<std::unique_ptr<H2Loop>> H2Loop::create(int fd) {
  const int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    Status status = Status::internal(errno_text("tunnel: fcntl(O_NONBLOCK)"));
    ::close(fd);
    return status;
  }
  // SSE chunks and PINGs are small frames that must not wait for Nagle's algorithm (the loop
  // already batches what nghttp2 has ready). Fails harmlessly on a non-TCP socket (tests).
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  const int wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd < 0) {
    Status status = Status::internal(errno_text("tunnel: eventfd"));
    ::close(fd);
    return status;
  }
  return std::unique_ptr<H2Loop>(new H2Loop(fd, wake_fd));
}

H2Loop::~H2Loop() {
  stop();
  if (!started_) {
    // Never started: the session (if any) and the socket are still ours to release.
    if (session_ != nullptr) nghttp2_session_del(session_);
    ::close(fd_);
  }
  ::close(wake_fd_);
}

void H2Loop::start(nghttp2_session* session, std::string initial_bytes, Hooks hooks) {
  session_ = session;
  initial_ = std::move(initial_bytes);
  hooks_ = std::move(hooks);
  in_.resize(kReadChunk);
  started_ = true;
  thread_ = std::thread([this] { run(); });
}

bool H2Loop::post(Task task) {
  std::lock_guard lock(mu_);
  if (ended_.load()) return false;
  const bool was_empty = tasks_.empty();
  tasks_.push_back(std::move(task));
  if (was_empty) {
    // A non-empty queue already has a wake-up pending (the loop empties it before it polls).
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof(one));
  }
  return true;
}

void H2Loop::request_stop(const std::string& why) {
  std::lock_guard lock(mu_);
  if (stop_requested_) return;
  stop_requested_ = true;
  stop_why_ = why;
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof(one));
}

void H2Loop::stop() {
  request_stop("closed locally");
  if (tls_running_loop == this) return;  // the I/O thread cannot join itself
  std::lock_guard lock(join_mu_);
  if (thread_.joinable()) thread_.join();
}

void H2Loop::wait() {
  std::unique_lock lock(mu_);
  done_cv_.wait(lock, [&] { return done_ || !started_; });
}

std::string H2Loop::reason() const {
  std::lock_guard lock(mu_);
  return reason_;
}

// Runs queued tasks; false when a stop was requested.
bool H2Loop::run_tasks() {
  std::vector<Task> tasks;
  {
    std::lock_guard lock(mu_);
    if (stop_requested_) return false;
    tasks.swap(tasks_);
  }
  for (Task& task : tasks) task(session_);
  return true;
}

bool H2Loop::feed(const uint8_t* data, size_t size, std::string* why) {
  last_recv_ = Clock::now();
  const ssize_t rv = nghttp2_session_mem_recv(session_, data, size);
  if (rv < 0) {
    *why = std::string("protocol error: ") + nghttp2_strerror(static_cast<int>(rv));
    return false;
  }
  return true;
}

// Reads what the socket holds (up to kReadsPerTurn chunks). False on EOF or error.
bool H2Loop::read_socket(std::string* why) {
  for (int i = 0; i < kReadsPerTurn; ++i) {
    const ssize_t n = ::recv(fd_, in_.data(), in_.size(), MSG_DONTWAIT);
    if (n == 0) {
      *why = "peer closed the connection";
      return false;
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
      *why = errno_text("recv");
      return false;
    }
    if (!feed(in_.data(), static_cast<size_t>(n), why)) return false;
    if (static_cast<size_t>(n) < in_.size()) return true;
  }
  return true;
}

// Moves frames from nghttp2 to the socket until either has nothing more to give or take.
bool H2Loop::flush(std::string* why) {
  for (;;) {
    if (out_off_ == out_.size()) {
      out_.clear();
      out_off_ = 0;
    } else if (out_off_ > out_.size() / 2) {
      out_.erase(0, out_off_);
      out_off_ = 0;
    }
    while (out_.size() - out_off_ < kOutHighWater) {
      const uint8_t* data = nullptr;
      const ssize_t n = nghttp2_session_mem_send(session_, &data);
      if (n < 0) {
        *why = std::string("nghttp2: ") + nghttp2_strerror(static_cast<int>(n));
        return false;
      }
      if (n == 0) break;
      out_.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
    }
    if (out_off_ == out_.size()) return true;
    // MSG_NOSIGNAL: a vanished peer must yield EPIPE, never SIGPIPE.
    const ssize_t n = ::send(fd_, out_.data() + out_off_, out_.size() - out_off_, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
      *why = errno_text("send");
      return false;
    }
    out_off_ += static_cast<size_t>(n);
  }
}

void H2Loop::run() {
  tls_running_loop = this;
  std::string why;
  if (!initial_.empty() && !feed(reinterpret_cast<const uint8_t*>(initial_.data()), initial_.size(), &why)) {
    finish(why);
    return;
  }
  initial_.clear();
  for (;;) {
    if (!run_tasks()) {
      std::lock_guard lock(mu_);
      why = stop_why_;
      break;
    }
    const Clock::time_point now = Clock::now();
    Clock::time_point wake = now + std::chrono::seconds(60);
    if (hooks_.tick && !hooks_.tick(session_, now, &wake, &why)) break;
    if (!flush(&why)) break;
    const bool want_read = nghttp2_session_want_read(session_) != 0;
    const bool pending_out = out_off_ < out_.size();
    if (!want_read && !pending_out && nghttp2_session_want_write(session_) == 0) {
      why = "connection finished (GOAWAY)";
      break;
    }
    pollfd fds[2] = {};
    fds[0].fd = fd_;
    fds[0].events = static_cast<short>((want_read ? POLLIN : 0) | (pending_out ? POLLOUT : 0));
    fds[1].fd = wake_fd_;
    fds[1].events = POLLIN;
    const auto wait = std::chrono::ceil<std::chrono::milliseconds>(std::max(wake - now, Clock::duration::zero()));
    const int rc = ::poll(fds, 2, static_cast<int>(std::min<int64_t>(wait.count(), 60'000)));
    if (rc < 0 && errno != EINTR) {
      why = errno_text("poll");
      break;
    }
    if (rc <= 0) continue;
    if (fds[1].revents & POLLIN) {
      uint64_t count = 0;
      [[maybe_unused]] ssize_t n = ::read(wake_fd_, &count, sizeof(count));
    }
    if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0 && !read_socket(&why)) break;
  }
  finish(why);
}

void H2Loop::finish(const std::string& why) {
  std::vector<Task> tasks;
  bool local_stop = false;
  {
    std::lock_guard lock(mu_);
    ended_.store(true);
    reason_ = why.empty() ? "closed" : why;
    tasks.swap(tasks_);
    local_stop = stop_requested_;
  }
  for (Task& task : tasks) task(nullptr);
  if (local_stop) {
    // Tell the peer politely; one non-blocking attempt, since it may not be reading.
    nghttp2_session_terminate_session(session_, NGHTTP2_NO_ERROR);
    std::string ignored;
    flush(&ignored);
  }
  if (hooks_.on_exit) hooks_.on_exit(why);
  nghttp2_session_del(session_);
  session_ = nullptr;
  ::shutdown(fd_, SHUT_RDWR);
  ::close(fd_);
  std::lock_guard lock(mu_);
  done_ = true;
  done_cv_.notify_all();
}

}  // namespace cellserve::fleet
