// How many of a pool's threads should take part in its jobs while other processes compete for
// the cores (a phone's own apps, a box's other services).
//
// A forward pass is a chain of short parallel jobs, each as slow as its slowest thread. When
// another busy process shares a core with one of the pool's threads, that thread runs about half
// the time and every job waits for it: two threads then deliver far less than one would alone on
// the core that is still free. The kernel says how long each thread was runnable but waited for a
// CPU (/proc/<pid>/task/<tid>/schedstat, second field); the governor sheds a thread while that
// wait is a large share of the threads' time, and tries one more again after a while, waiting
// longer after each try that fails.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>

namespace cellserve::engine {

// A thread's CPU time and time spent runnable but waiting for a CPU, both in nanoseconds.
struct SchedTimes {
  uint64_t run_ns = 0;
  uint64_t wait_ns = 0;
};

// The calling thread's, or thread `tid` of this process; nullopt where the kernel does not say
// (no schedstat, a thread that has gone).
std::optional<SchedTimes> read_sched_times(pid_t tid);
std::optional<SchedTimes> read_own_sched_times();
// Parses schedstat's "run_ns wait_ns timeslices" line.
std::optional<SchedTimes> parse_sched_times(std::string_view text);

class ThreadGovernor {
 public:
  using Clock = std::chrono::steady_clock;

  struct Options {
    // The wait share above which a thread is shed.
    double shed_above = 0.2;
    // A window must have kept the threads busy at least this share of its length to count: an
    // idle pool says nothing about the cores.
    double min_busy = 0.3;
    // After shedding, one more thread is tried this long after, doubling after each failed try.
    Clock::duration first_retry = std::chrono::seconds(2);
    Clock::duration longest_retry = std::chrono::seconds(32);
  };

  ThreadGovernor(int max_threads, Options options);
  explicit ThreadGovernor(int max_threads) : ThreadGovernor(max_threads, Options{}) {}

  int threads() const { return threads_; }

  // One window of `length`, ending at `now`, over which the first threads() threads had the
  // times in `used` (what each received during the window). Returns the thread count for the
  // next window.
  int update(std::span<const SchedTimes> used, Clock::duration length, Clock::time_point now);

 private:
  int max_threads_;
  Options options_;
  int threads_;
  bool trying_ = false;  // the last step was a try of one more thread
  Clock::duration retry_after_;
  Clock::time_point retry_at_{};
};

}  // namespace cellserve::engine
