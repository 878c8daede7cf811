// The I/O thread of one HTTP/2 connection, shared by both ends of the tunnel.
//
// nghttp2 sessions are not thread-safe, so exactly one thread (this loop's) touches the session:
// it polls the non-blocking socket plus an eventfd, feeds received bytes to
// nghttp2_session_mem_recv and writes what nghttp2_session_mem_send produces. Other threads
// (agent handlers, hub forward() callers) hand work to it as Tasks through post(), which queues
// them under a mutex and wakes the loop with the eventfd.
#pragma once

#include <nghttp2/nghttp2.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"

namespace cellserve::fleet {

class H2Loop {
 public:
  using Clock = std::chrono::steady_clock;
  // Work for the I/O thread. `session` is null when the loop ended before the task could run:
  // the task must then only clean up (e.g. fail the request it was meant to submit).
  using Task = std::function<void(nghttp2_session* session)>;

  struct Hooks {
    // Called on the I/O thread before every poll. Returns false to close the connection, with the
    // reason in *why. May lower *wake, the time by which it wants to be called again.
    std::function<bool(nghttp2_session* session, Clock::time_point now, Clock::time_point* wake, std::string* why)>
        tick;
    // Called once on the I/O thread when the connection has ended (`why` says how), after every
    // queued Task ran with a null session and before the session is deleted.
    std::function<void(const std::string& why)> on_exit;
  };

  // Takes ownership of `fd` (a connected stream socket; closed here also on failure) and makes it
  // non-blocking (and TCP_NODELAY when it is TCP). Internal on a failing syscall.
  static Result<std::unique_ptr<H2Loop>> create(int fd);

  // stop(), then releases the eventfd.
  ~H2Loop();
  H2Loop(const H2Loop&) = delete;
  H2Loop& operator=(const H2Loop&) = delete;

  // Starts the I/O thread over `session`, which the loop owns from now on and deletes when it ends.
  // `initial_bytes` are fed to the session before anything is read from the socket. Call once.
  void start(nghttp2_session* session, std::string initial_bytes, Hooks hooks);

  // Queues `task` for the I/O thread. False (and the task is dropped unrun) once the loop has
  // ended. Thread-safe.
  bool post(Task task);

  // Asks the loop to end (a GOAWAY is attempted, then the socket is closed) without waiting.
  // Thread-safe, also from the I/O thread; idempotent.
  void request_stop(const std::string& why);

  // request_stop() and joins the I/O thread (unless called on it). Thread-safe, idempotent.
  void stop();

  // Blocks until the loop has ended (returns at once when it was never started).
  void wait();

  // True once the loop has ended or is ending (post() fails from then on). Thread-safe.
  bool ended() const { return ended_.load(); }

  // Why the loop ended ("" while it runs). Thread-safe.
  std::string reason() const;

  // When bytes last arrived from the peer. I/O thread only.
  Clock::time_point last_recv() const { return last_recv_; }

 private:
  H2Loop(int fd, int wake_fd) : fd_(fd), wake_fd_(wake_fd) {}
  void run();
  bool run_tasks();
  bool feed(const uint8_t* data, size_t size, std::string* why);
  bool read_socket(std::string* why);
  bool flush(std::string* why);
  void finish(const std::string& why);

  const int fd_;       // the tunnel socket; closed by finish()
  const int wake_fd_;  // eventfd: post() and request_stop() wake poll()
  nghttp2_session* session_ = nullptr;
  Hooks hooks_;
  std::string initial_;
  bool started_ = false;  // set by start(), before any other thread may use the loop
  std::thread thread_;
  std::mutex join_mu_;  // serializes joining thread_

  mutable std::mutex mu_;  // guards tasks_, stop_why_, reason_, done_
  std::condition_variable done_cv_;
  std::vector<Task> tasks_;
  bool stop_requested_ = false;
  std::string stop_why_;
  std::string reason_;
  bool done_ = false;  // finish() completed (the thread is about to exit)
  std::atomic<bool> ended_{false};

  // I/O thread only.
  std::string out_;  // serialized frames not yet accepted by the socket, from out_off_
  size_t out_off_ = 0;
  std::vector<uint8_t> in_;  // read buffer
  Clock::time_point last_recv_ = Clock::now();
};

}  // namespace cellserve::fleet
