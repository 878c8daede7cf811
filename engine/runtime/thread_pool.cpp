#include "engine/runtime/thread_pool.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

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
constexpr int kMaxThreads = 1024;
constexpr int kCountBits = 16;
constexpr uint64_t kCountMask = (uint64_t{1} << kCountBits) - 1;

uint64_t sequence_of(uint64_t word) { return word >> kCountBits; }
int threads_of(uint64_t word) { return static_cast<int>(word & kCountMask); }

pid_t current_tid() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

bool governor_wanted(bool adaptive, int n_threads) {
  if (!adaptive || n_threads < 2) return false;
  const char* fixed = std::getenv("CELLSERVE_FIXED_THREADS");
  if (fixed != nullptr && std::strcmp(fixed, "1") == 0) return false;
  return read_own_sched_times().has_value();
}
}  // namespace

ThreadPool::ThreadPool(int n_threads, bool adaptive)
    : n_threads_(std::clamp(n_threads, 1, kMaxThreads)),
      active_(n_threads_),
      fewest_active_(n_threads_),
      tids_(static_cast<size_t>(n_threads_)),
      last_times_(static_cast<size_t>(n_threads_)) {
  if (governor_wanted(adaptive, n_threads_)) governor_ = std::make_unique<ThreadGovernor>(n_threads_);
  workers_.reserve(static_cast<size_t>(n_threads_ - 1));
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
    job_word_.store(((sequence_of(job_word_.load()) + 1) << kCountBits) | static_cast<uint64_t>(n_threads_));
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::set_active(int n) {
  active_ = std::clamp(n, 1, n_threads_);
  fewest_active_ = std::min(fewest_active_, active_);
}

void ThreadPool::govern() {
  const auto now = ThreadGovernor::Clock::now();
  if (window_start_ != ThreadGovernor::Clock::time_point{} && now - window_start_ < kGovernorWindow) return;
  // Every thread's times, so that one brought back in has a baseline.
  std::vector<SchedTimes> times(static_cast<size_t>(n_threads_));
  bool complete = true;
  const pid_t caller = current_tid();
  for (int i = 0; i < n_threads_ && complete; ++i) {
    const pid_t tid = i == 0 ? 0 : tids_[static_cast<size_t>(i)].load(std::memory_order_acquire);
    const std::optional<SchedTimes> t = i == 0     ? read_own_sched_times()
                                        : tid != 0 ? read_sched_times(tid)
                                                   : std::nullopt;
    if (!t)
      complete = false;
    else
      times[static_cast<size_t>(i)] = *t;
  }
  const bool comparable = complete && caller == last_caller_ && window_start_ != ThreadGovernor::Clock::time_point{};
  if (comparable) {
    std::vector<SchedTimes> used(static_cast<size_t>(active_));
    for (int i = 0; i < active_; ++i) {
      const SchedTimes& a = last_times_[static_cast<size_t>(i)];
      const SchedTimes& b = times[static_cast<size_t>(i)];
      used[static_cast<size_t>(i)] = {b.run_ns - std::min(a.run_ns, b.run_ns),
                                      b.wait_ns - std::min(a.wait_ns, b.wait_ns)};
    }
    active_ = governor_->update(used, now - window_start_, now);
    fewest_active_ = std::min(fewest_active_, active_);
  }
  if (complete) last_times_ = times;
  last_caller_ = caller;
  window_start_ = now;
}

void ThreadPool::run(const std::function<void(int, int)>& fn) {
  if (governor_) govern();
  const int nth = active_;
  if (nth == 1) {
    fn(0, 1);
    return;
  }
  job_ = &fn;
  pending_.store(nth - 1, std::memory_order_relaxed);
  // Sequentially consistent pair with the worker's sleepers_ increment then job check: either
  // we see a sleeper and wake it, or it sees the new job and does not sleep.
  job_word_.store(
      ((sequence_of(job_word_.load(std::memory_order_relaxed)) + 1) << kCountBits) | static_cast<uint64_t>(nth),
      std::memory_order_seq_cst);
  // More threads than the last job: some may be parked (left out of earlier jobs), and only a
  // notification wakes them.
  if (sleepers_.load(std::memory_order_seq_cst) > 0 || nth > last_job_threads_) {
    { std::lock_guard<std::mutex> lock(mutex_); }
    wake_.notify_all();
  }
  last_job_threads_ = nth;
  fn(0, nth);
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
  tids_[static_cast<size_t>(index)].store(current_tid(), std::memory_order_release);
  uint64_t seen = 0;
  for (;;) {
    uint64_t word = job_word_.load(std::memory_order_acquire);
    for (int spin = 0; sequence_of(word) == seen && spin < kSpinIterations; ++spin) {
      if (spin < kSpinIterations / 8)
        CS_CPU_RELAX();
      else
        std::this_thread::yield();
      word = job_word_.load(std::memory_order_acquire);
    }
    if (sequence_of(word) == seen) {
      std::unique_lock<std::mutex> lock(mutex_);
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      wake_.wait(lock, [&] { return sequence_of(job_word_.load(std::memory_order_seq_cst)) != seen; });
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
      word = job_word_.load(std::memory_order_acquire);
    }
    if (stop_.load()) return;
    if (index >= threads_of(word)) {
      // Left out of this job (the governor shed threads): park until a job includes this thread.
      // No such job can be published and finished without it, so the one that wakes it is still
      // the current one.
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_.load() || threads_of(job_word_.load(std::memory_order_seq_cst)) > index; });
      if (stop_.load()) return;
      word = job_word_.load(std::memory_order_acquire);
    }
    seen = sequence_of(word);
    (*job_)(index, threads_of(word));
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace cellserve::engine
