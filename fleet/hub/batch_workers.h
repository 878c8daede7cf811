// The threads that run a hub's batch lines, one per leased line, and the batch loop's wake-ups.
// It counts the lines in flight per batch, wakes the loop when a line ends, and joins finished
// threads without holding the lock those threads take on their way out (a worker that ended
// while the loop was joining it under that lock deadlocked the batch runner). Thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "base/wakeup.h"

namespace cellserve::fleet {

class BatchWorkers {
 public:
  // The loop's waits are timed on `clock`.
  explicit BatchWorkers(const Clock& clock = Clock::system()) : wakeup_(clock) {}
  BatchWorkers(const BatchWorkers&) = delete;
  BatchWorkers& operator=(const BatchWorkers&) = delete;
  ~BatchWorkers();  // joins every thread

  // Runs `line` on a new thread, counted against `batch_id` until it returns.
  void start(const std::string& batch_id, std::function<void()> line);
  // Lines of `batch_id` still running.
  size_t in_flight(const std::string& batch_id) const;
  // Threads started and not yet joined.
  size_t threads() const;

  // Joins the threads whose lines have returned.
  void reap();

  // Waits until wake() or a line's end (since the last wait), stop(), or `timeout`. False once
  // stopped.
  bool wait(std::chrono::milliseconds timeout);
  void wake();
  void stop();
  bool stopping() const;

  // Joins every thread (after stop(): no thread is started meanwhile by the loop).
  void join_all();

 private:
  struct Worker {
    std::thread thread;
    bool done = false;  // guarded by mu_
  };

  Wakeup wakeup_;
  mutable std::mutex mu_;  // guards the members below
  std::map<std::string, size_t> in_flight_;
  std::list<Worker> workers_;
};

}  // namespace cellserve::fleet
