#include "engine/runtime/thread_pool.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CS_CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define CS_CPU_RELAX() asm volatile("yield")
#else
#define CS_CPU_RELAX() \
  do {                 \
  } while (0)
#endif

namespace cellserve::engine {
namespace {
// How long a worker polls for the next job before sleeping; a decode step issues jobs every
// few microseconds, so this keeps workers hot during a forward pass yet idle between requests.
constexpr int kSpinIterations = 20000;
}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {
  workers_.reserve(static_cast<size_t>(n_threads_ - 1));
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run(const std::function<void(int, int)>& fn) {
  if (n_threads_ == 1) {
    fn(0, 1);
    return;
  }
  job_ = &fn;
  pending_.store(n_threads_ - 1, std::memory_order_relaxed);
  // Sequentially consistent pair with the worker's sleepers_ increment then generation check:
  // either we see a sleeper and wake it, or it sees the new generation and does not sleep.
  generation_.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    { std::lock_guard<std::mutex> lock(mutex_); }
    wake_.notify_all();
  }
  fn(0, n_threads_);
  // Spin briefly, then yield: on an oversubscribed machine a worker may need this core.
  for (int spin = 0; pending_.load(std::memory_order_acquire) != 0; ++spin) {
    if (spin < kSpinIterations / 8)
      CS_CPU_RELAX();
    else
      std::this_thread::yield();
  }
  job_ = nullptr;
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (n_threads_ == 1 || n == 1) {
    fn(0, n);
    return;
  }
  run([&](int ith, int nth) {
    const int64_t chunk = (n + nth - 1) / nth;
    const int64_t begin = chunk * ith;
    const int64_t end = begin + chunk < n ? begin + chunk : n;
    if (begin < end) fn(begin, end);
  });
}

void ThreadPool::parallel_chunks(int64_t n_chunks, const std::function<void(int64_t)>& fn) {
  if (n_chunks <= 0) return;
  if (n_threads_ == 1 || n_chunks == 1) {
    for (int64_t i = 0; i < n_chunks; ++i) fn(i);
    return;
  }
  next_chunk_.store(0, std::memory_order_relaxed);
  run([&](int, int) {
    for (int64_t i = next_chunk_.fetch_add(1, std::memory_order_relaxed); i < n_chunks;
         i = next_chunk_.fetch_add(1, std::memory_order_relaxed)) {
      fn(i);
    }
  });
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t gen = generation_.load(std::memory_order_acquire);
    for (int spin = 0; gen == seen && spin < kSpinIterations; ++spin) {
      if (spin < kSpinIterations / 8)
        CS_CPU_RELAX();
      else
        std::this_thread::yield();
      gen = generation_.load(std::memory_order_acquire);
    }
    if (gen == seen) {
      std::unique_lock<std::mutex> lock(mutex_);
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      wake_.wait(lock, [&] { return generation_.load(std::memory_order_seq_cst) != seen; });
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
      gen = generation_.load(std::memory_order_acquire);
    }
    seen = gen;
    if (stop_.load()) return;
    (*job_)(index, n_threads_);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace cellserve::engine
