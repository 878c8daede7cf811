// A persistent pool of worker threads for the forward pass.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace cellserve::engine {

// Runs one parallel job at a time on a fixed set of threads created once. The calling thread
// takes part as thread 0, so a pool of N threads owns N-1 workers. Workers spin briefly after a
// job before sleeping, because a forward pass issues many small jobs back to back; publishing a
// job to spinning workers is one atomic increment (no lock, no system call).
// Not thread-safe: one caller at a time.
class ThreadPool {
 public:
  // `n_threads` >= 1 (values below 1 are treated as 1).
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Calls fn(thread_index, n_threads) on every thread and returns when all have finished.
  void run(const std::function<void(int, int)>& fn);

  // Splits [0, n) into contiguous ranges, one per thread, and calls fn(begin, end) for each
  // non-empty one. Returns when all are done.
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn);

  // Calls fn(i) once for every i in [0, n_chunks), handing chunks out dynamically: a thread that
  // finishes early takes the next chunk, so a core slowed by other load does not hold up the rest.
  void parallel_chunks(int64_t n_chunks, const std::function<void(int64_t)>& fn);

 private:
  void worker_loop(int index);

  int n_threads_;
  std::vector<std::thread> workers_;
  const std::function<void(int, int)>* job_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  std::atomic<int> sleepers_{0};  // workers blocked on wake_; run() signals only when non-zero
  std::atomic<int64_t> next_chunk_{0};
  std::mutex mutex_;
  std::condition_variable wake_;
};

}  // namespace cellserve::engine
