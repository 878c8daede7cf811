// Handing a job's units (a decode's packed row groups) to threads that run at different speeds.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace cellserve::engine {

// Claims of [0, total) that shrink as the work runs out (guided self-scheduling): each takes a
// share of what is left, 1 / (2 × threads), between min_claim and max_claim units. Early claims
// are long, so each thread streams long runs of weights for the hardware prefetchers; the last
// are short, so threads of unequal speed (a phone's 2 prime and 6 performance cores, or a core
// that another process shares) end within a short claim of each other, where equal shares made
// the fast ones wait for the slowest. With two threads, thread 0 claims from the front and thread 1
// from the back, so each one's claims are adjacent and they meet where their speeds put them;
// with more, every claim comes from the front. Lock-free (one atomic word); any thread count
// (the pool's governor may shed threads after a job was planned), total < 2^32.
class WorkClaims {
 public:
  struct Range {
    int64_t begin = 0;
    int64_t end = 0;
    bool empty() const { return begin >= end; }
  };

  WorkClaims(int64_t total, int64_t min_claim, int64_t max_claim)
      : min_claim_(std::max<int64_t>(1, min_claim)),
        max_claim_(std::max(min_claim_, max_claim)),
        unclaimed_(static_cast<uint64_t>(std::clamp<int64_t>(total, 0, 0xffffffff))) {}

  // The units a claim takes when `left` remain and `n_threads` share them.
  static int64_t claim_size(int64_t left, int n_threads, int64_t min_claim, int64_t max_claim) {
    const int64_t share = left / (2 * static_cast<int64_t>(std::max(1, n_threads)));
    return std::min(left, std::clamp(share, min_claim, max_claim));
  }

  // The next range for thread `ith` of the job's `n_threads`; empty once nothing is left.
  Range claim(int ith, int n_threads) {
    uint64_t word = unclaimed_.load(std::memory_order_relaxed);
    for (;;) {
      const auto front = static_cast<int64_t>(word >> 32);
      const auto back = static_cast<int64_t>(word & 0xffffffffu);
      if (front >= back) return {};
      const int64_t take = claim_size(back - front, n_threads, min_claim_, max_claim_);
      const bool from_back = n_threads == 2 && ith == 1;
      const Range r = from_back ? Range{back - take, back} : Range{front, front + take};
      const uint64_t rest = (static_cast<uint64_t>(from_back ? front : front + take) << 32) |
                            static_cast<uint64_t>(from_back ? back - take : back);
      if (unclaimed_.compare_exchange_weak(word, rest, std::memory_order_relaxed)) return r;
    }
  }

 private:
  const int64_t min_claim_;
  const int64_t max_claim_;
  std::atomic<uint64_t> unclaimed_;  // the unclaimed [front, back): front in the high 32 bits, back in the low
};

}  // namespace cellserve::engine
