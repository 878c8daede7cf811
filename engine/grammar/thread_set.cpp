// ThreadSet (matcher.h): the buffers of a matcher state, and merging equal threads.
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "engine/grammar/matcher.h"

namespace cellserve::engine::grammar {

size_t ThreadSet::push(const Stack& s) {
  if (n_ == threads_.size()) threads_.emplace_back();
  threads_[n_].assign(s.begin(), s.end());
  return n_++;
}

void ThreadSet::assign(const ThreadSet& other) {
  clear();
  for (size_t i = 0; i < other.size(); ++i) push(other[i]);
}

namespace {

// Every field of every frame (not the raw bytes: frames have padding).
uint64_t hash_stack(const Stack& s) {
  uint64_t h = 0x9E3779B97F4A7C15ull;
  auto mix = [&h](uint64_t v) {
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h *= 0xFF51AFD7ED558CCDull;
  };
  for (const Frame& f : s) {
    mix(reinterpret_cast<uintptr_t>(f.node));
    mix(uint64_t{f.a} | uint64_t{f.b} << 32);
    mix(uint64_t{f.c} | uint64_t{static_cast<uint8_t>(f.kind)} << 32 | uint64_t{f.phase} << 40 | uint64_t{f.ws} << 48 |
        uint64_t{f.flag} << 56);
    mix(uint64_t{f.str.utf8_left} | uint64_t{f.str.next_lo} << 8 | uint64_t{f.str.next_hi} << 16 |
        uint64_t{f.str.escape} << 24 | uint64_t{f.str.surrogate} << 32 | uint64_t{f.str.value} << 40);
  }
  return h;
}

}  // namespace

void ThreadSet::dedup() {
  // Few threads (the usual case): compare pairwise, cheaper than hashing.
  constexpr size_t kPairwiseMax = 8;
  thread_local std::vector<uint8_t> dup;
  dup.assign(n_, 0);
  if (n_ <= kPairwiseMax) {
    for (size_t i = 1; i < n_; ++i)
      for (size_t j = 0; j < i && !dup[i]; ++j) dup[i] = !dup[j] && threads_[j] == threads_[i];
  } else {
    // Group by hash; within a group (ascending index) a thread equal to an earlier kept one goes.
    thread_local std::vector<std::pair<uint64_t, uint32_t>> order;
    order.clear();
    for (size_t i = 0; i < n_; ++i) order.emplace_back(hash_stack(threads_[i]), static_cast<uint32_t>(i));
    std::sort(order.begin(), order.end());
    for (size_t g = 0; g < order.size();) {
      size_t e = g + 1;
      while (e < order.size() && order[e].first == order[g].first) ++e;
      for (size_t j = g + 1; j < e; ++j) {
        const uint32_t tj = order[j].second;
        for (size_t k = g; k < j && !dup[tj]; ++k) {
          const uint32_t tk = order[k].second;
          dup[tj] = !dup[tk] && threads_[tk] == threads_[tj];
        }
      }
      g = e;
    }
  }
  size_t kept = 0;
  for (size_t i = 0; i < n_; ++i) {
    if (dup[i]) continue;
    if (kept != i) std::swap(threads_[kept], threads_[i]);
    ++kept;
  }
  n_ = kept;
}

}  // namespace cellserve::engine::grammar
