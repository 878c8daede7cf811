// The time the hub's timers, queues, leases and heartbeats read, and how they wait for it.
//
// Production code takes a `const Clock&` (Clock::system(): std::chrono's steady and system
// clocks, and condition variables' own timed waits). Tests pass a ManualClock, whose time moves
// only when the test advances it, so "the queue deadline expires at exactly the deadline" is
// checked without a sleep and without depending on how fast the machine is.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace cellserve {

class Clock {
 public:
  using time_point = std::chrono::steady_clock::time_point;
  using duration = std::chrono::steady_clock::duration;

  virtual ~Clock() = default;
  // Monotonic time: deadlines, intervals.
  virtual time_point now() const = 0;
  // Calendar time, milliseconds since the Unix epoch: what is stored and shown.
  virtual int64_t wall_ms() const = 0;
  // Waits on `cv` (with `lock` held, as std::condition_variable::wait_until) until it is notified
  // or this clock reaches `deadline`; spurious wake-ups are possible, so callers loop on their
  // predicate. Returns std::cv_status::timeout once the deadline has passed.
  virtual std::cv_status wait_until(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                                    time_point deadline) const = 0;

  // Loops until `done()` or the deadline: true when `done()` held.
  template <typename Pred>
  bool wait_until(std::condition_variable& cv, std::unique_lock<std::mutex>& lock, time_point deadline,
                  Pred done) const {
    while (!done()) {
      if (wait_until(cv, lock, deadline) == std::cv_status::timeout) return done();
    }
    return true;
  }
  // Blocks the calling thread until this clock reaches `deadline`.
  void sleep_until(time_point deadline) const;

  // std::chrono's clocks.
  static const Clock& system();
};

// A clock that stands still until advance() moves it. Thread-safe. A thread waiting on it counts
// as a sleeper, so a test can wait (in real time, bounded) until the code under test is blocked
// before it moves time on.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t wall_ms = 1'700'000'000'000);

  time_point now() const override;
  int64_t wall_ms() const override;
  std::cv_status wait_until(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                            time_point deadline) const override;
  using Clock::wait_until;

  // Moves both times on by `d`, and returns once every thread that was waiting on this clock has
  // seen the new time: those whose deadline came have returned from wait_until() with a timeout.
  // So a test that advances to just before a deadline knows nothing fired. (A sleeper also
  // returns, as a spurious wake-up, after each millisecond of real time; callers loop.)
  void advance(duration d);
  // Threads blocked in wait_until() now.
  int sleepers() const;
  // Blocks (at most `limit` of real time) until at least `n` threads wait on this clock; false on
  // the limit, so a test that expected a wait fails instead of hanging.
  bool await_sleepers(int n, std::chrono::milliseconds limit = std::chrono::seconds(10)) const;

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable changed_;  // time moved or a sleeper came or went
  duration since_start_{};
  int64_t wall_start_ms_;
  mutable int sleepers_ = 0;
  uint64_t generation_ = 0;     // advances so far
  mutable int unobserved_ = 0;  // sleepers that have not yet seen the last advance
  // Marks the generation a sleeper saw (with mu_ held).
  void observe(uint64_t& seen) const;
};

}  // namespace cellserve
