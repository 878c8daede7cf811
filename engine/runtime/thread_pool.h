// A persistent pool of worker threads for the forward pass.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/runtime/thread_governor.h"

namespace cellserve::engine {

// Runs one parallel job at a time on a fixed set of threads created once. The calling thread
// takes part as thread 0, so a pool of N threads owns N-1 workers. Workers spin briefly after a
// job before sleeping, because a forward pass issues many small jobs back to back; publishing a
// job to spinning workers is one atomic increment (no lock, no system call).
//
// On a machine where other processes compete for the cores, a job runs on fewer threads: the
// pool's ThreadGovernor looks at the threads' run-queue waits every kGovernorWindow and sheds a
// thread while one of them spends a large share of its time waiting for a CPU, then tries it
// again later (thread_governor.h). Threads left out of a job sleep. Every job splits its work by
// the thread count it is given, and no result depends on it.
// Not thread-safe: one caller at a time.
class ThreadPool {
 public:
  // The governor's sampling period: long enough to hold many jobs and timeslices.
  static constexpr std::chrono::milliseconds kGovernorWindow{200};

  // `n_threads` >= 1 (values below 1 are treated as 1). `adaptive` enables the governor; it is
  // also off when CELLSERVE_FIXED_THREADS=1 is set, or where the kernel reports no schedstat.
  explicit ThreadPool(int n_threads, bool adaptive = true);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // The threads the pool was made with, and those the next job runs on (size() unless the
  // governor has shed some).
  int size() const { return n_threads_; }
  int active() const { return active_; }
  // The fewest threads any job has run on so far.
  int fewest_active() const { return fewest_active_; }
  // Runs the next jobs on `n` threads (clamped to 1..size()); when the governor is on, its next
  // window decides again.
  void set_active(int n);

  // Calls fn(thread_index, n_threads) on every active thread and returns when all have
  // finished; n_threads is active(), at most size().
  void run(const std::function<void(int, int)>& fn);

  // Splits [0, n) into contiguous ranges, one per thread, and calls fn(begin, end) for each
  // non-empty one. Returns when all are done.
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn);

  // Calls fn(i) once for every i in [0, n_chunks), handing chunks out dynamically: a thread that
  // finishes early takes the next chunk, so a core slowed by other load does not hold up the rest.
  void parallel_chunks(int64_t n_chunks, const std::function<void(int64_t)>& fn);

 private:
  void worker_loop(int index);
  void govern();

  int n_threads_;
  int active_;
  int fewest_active_;
  int last_job_threads_ = 0;
  std::vector<std::thread> workers_;
  const std::function<void(int, int)>* job_ = nullptr;
  // A job's sequence number (upper bits) and thread count (low 16 bits), published together so a
  // worker that sees a job also sees whether it takes part.
  std::atomic<uint64_t> job_word_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  std::atomic<int> sleepers_{0};  // workers blocked waiting for any job; run() signals only when non-zero
  std::atomic<int64_t> next_chunk_{0};
  std::mutex mutex_;
  std::condition_variable wake_;

  // The governor's state, touched only by the caller of run().
  std::unique_ptr<ThreadGovernor> governor_;
  std::vector<std::atomic<pid_t>> tids_;  // each worker's, 0 until it has started
  std::vector<SchedTimes> last_times_;
  pid_t last_caller_ = 0;
  ThreadGovernor::Clock::time_point window_start_{};
};

}  // namespace cellserve::engine
