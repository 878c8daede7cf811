#include "base/log_sink.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace cellserve {

namespace {

// A write of at most this much to a pipe that poll() calls writable does not block (Linux: it
// needs one free buffer of the pipe, which POLLOUT promises).
constexpr size_t kChunk = 4096;

}  // namespace

LogSink::LogSink(int fd, size_t max_queued_bytes) : fd_(fd), max_queued_bytes_(max_queued_bytes) {
  writer_ = std::thread([this] { run(); });
}

LogSink::~LogSink() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    stop_at_ = std::chrono::steady_clock::now() + kDrainLimit;
  }
  cv_.notify_all();
  writer_.join();
}

void LogSink::write(std::string line) {
  line.push_back('\n');
  {
    std::lock_guard lock(mu_);
    if (stopping_ || queued_bytes_ + line.size() > max_queued_bytes_) {
      ++dropped_;
      return;
    }
    queued_bytes_ += line.size();
    queue_.push_back(std::move(line));
  }
  cv_.notify_one();
}

uint64_t LogSink::dropped() const {
  std::lock_guard lock(mu_);
  return dropped_;
}

bool LogSink::write_out(const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    pollfd p{fd_, POLLOUT, 0};
    const int ready = ::poll(&p, 1, 100);
    if (ready < 0 && errno != EINTR) return false;
    if (ready <= 0) {
      std::lock_guard lock(mu_);
      if (stopping_ && std::chrono::steady_clock::now() >= stop_at_) return false;
      continue;
    }
    if ((p.revents & (POLLERR | POLLNVAL)) != 0) return false;  // the reader is gone for good
    const size_t n = std::min(kChunk, text.size() - done);
    const ssize_t wrote = ::write(fd_, text.data() + done, n);
    if (wrote < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return false;
    }
    done += static_cast<size_t>(wrote);
  }
  return true;
}

void LogSink::run() {
  // A reader that closes its end makes write() raise SIGPIPE in the writing thread, which would
  // end the process; blocked here, the write fails with EPIPE and only this writer stops.
  sigset_t pipe_signal;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_signal, nullptr);
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty() || dropped_ != reported_; });
    if (queue_.empty() && dropped_ == reported_) return;  // stopping, and nothing left
    // Lines are dropped only while the queue is full, that is while the last batch was being
    // written: the count goes out where they were lost, before the lines queued since.
    std::string text;
    if (dropped_ != reported_) {
      text = "(" + std::to_string(dropped_ - reported_) + " log lines dropped: this log's reader did not keep up)\n";
      reported_ = dropped_;
    }
    // Everything queued, written in one go outside the lock; its bytes stay counted until then.
    size_t taken = 0;
    while (!queue_.empty()) {
      taken += queue_.front().size();
      text += queue_.front();
      queue_.pop_front();
    }
    lock.unlock();
    const bool written = write_out(text);
    lock.lock();
    queued_bytes_ -= taken;
    if (!written) return;  // the descriptor is gone, or stopping ran out of time
  }
}

}  // namespace cellserve
