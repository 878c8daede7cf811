// A log that never blocks the code that logs. Lines are queued, up to a bound, for one writer
// thread that writes them to a file descriptor (stderr). When nobody reads that descriptor (a
// full pipe of a parent that stopped reading, a suspended terminal), the writer waits and the
// queue fills; after that, lines are dropped and counted, and once the reader catches up a line
// says how many were lost. Without it, a hub that logged while holding its state lock stopped
// serving when its stderr pipe filled (docs/cluster.md, "Measured").
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

namespace cellserve {

class LogSink {
 public:
  // Writes to `fd` (not owned, left blocking: it may be shared with other processes) at most
  // `max_queued_bytes` of queued lines ahead of what it has written.
  explicit LogSink(int fd, size_t max_queued_bytes = size_t{1} << 20);
  // Writes what is queued while the descriptor takes it (within about `kDrainLimit`), then stops.
  ~LogSink();
  LogSink(const LogSink&) = delete;
  LogSink& operator=(const LogSink&) = delete;

  // Queues `line` and a newline; drops it when the queue is full. Never blocks on the descriptor.
  void write(std::string line);
  // Lines dropped so far.
  uint64_t dropped() const;

  static constexpr std::chrono::milliseconds kDrainLimit{2000};

 private:
  void run();
  // Writes `text` whole unless stopping outlasts the drain limit; false when it gave up.
  bool write_out(const std::string& text);

  const int fd_;
  const size_t max_queued_bytes_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;                  // guarded by mu_
  size_t queued_bytes_ = 0;                        // guarded by mu_
  uint64_t dropped_ = 0;                           // guarded by mu_
  uint64_t reported_ = 0;                          // dropped lines already reported; writer thread only
  bool stopping_ = false;                          // guarded by mu_
  std::chrono::steady_clock::time_point stop_at_;  // set with stopping_
  std::thread writer_;
};

}  // namespace cellserve
