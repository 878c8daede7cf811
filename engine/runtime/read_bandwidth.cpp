#include "engine/runtime/read_bandwidth.h"

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>

#include "base/huge_page_arena.h"

namespace cellserve::engine {
namespace {

using Clock = std::chrono::steady_clock;

// Four lanes of 64 bits: GCC's vector extension, so the loads are as wide as the target allows
// (two SSE2 or NEON loads, one AVX2 load) without a kernel per ISA. A load per 8 bytes would cap
// one core below what DRAM gives it.
typedef uint64_t Lanes __attribute__((vector_size(32)));
constexpr size_t kLaneWords = sizeof(Lanes) / sizeof(uint64_t);
constexpr size_t kBlockWords = 4 * kLaneWords;  // one step of the loop: four independent sums
constexpr size_t kMinBytesPerThread = size_t{64} << 10;

}  // namespace

uint64_t sum_words(std::span<const uint64_t> words) {
  uint64_t s = 0;
  for (uint64_t w : words) s += w;
  return s;
}

uint64_t sum_words_unrolled(std::span<const uint64_t> words) {
  Lanes a{}, b{}, c{}, d{};
  const size_t blocks = words.size() / kBlockWords;
  const uint64_t* p = words.data();
  for (size_t i = 0; i < blocks; ++i, p += kBlockWords) {
    Lanes x, y, z, w;
    std::memcpy(&x, p, sizeof x);  // the buffer is only 8-byte aligned in general
    std::memcpy(&y, p + kLaneWords, sizeof y);
    std::memcpy(&z, p + 2 * kLaneWords, sizeof z);
    std::memcpy(&w, p + 3 * kLaneWords, sizeof w);
    a += x;
    b += y;
    c += z;
    d += w;
  }
  const Lanes t = a + b + c + d;
  uint64_t s = 0;
  for (size_t k = 0; k < kLaneWords; ++k) s += t[k];
  return s + sum_words(words.subspan(blocks * kBlockWords));
}

double ReadBandwidth::best_gbs() const {
  if (samples_ns.empty()) return 0;
  const int64_t best = std::max<int64_t>(*std::min_element(samples_ns.begin(), samples_ns.end()), 1);
  return static_cast<double>(bytes) / static_cast<double>(best);  // bytes per ns = GB/s
}

namespace {

// Times `repetitions` runs (after one warm-up) in which thread t sums the word spans shares[t];
// returns the sum of everything read, every run.
uint64_t time_runs(const std::vector<std::vector<std::span<const uint64_t>>>& shares, int repetitions,
                   std::vector<int64_t>* samples_ns) {
  const size_t threads = shares.size();
  const int runs = repetitions + 1;  // the first warms up
  std::vector<Clock::time_point> starts(static_cast<size_t>(runs));
  std::vector<std::atomic<int64_t>> ends(static_cast<size_t>(runs));
  std::atomic<uint64_t> sink{0};
  std::barrier start_line(static_cast<std::ptrdiff_t>(threads), [&]() noexcept {});
  const auto work = [&](size_t t) {
    for (int r = 0; r < runs; ++r) {
      start_line.arrive_and_wait();
      if (t == 0) starts[static_cast<size_t>(r)] = Clock::now();
      start_line.arrive_and_wait();  // thread 0's clock is read before anyone starts
      uint64_t sum = 0;
      for (const std::span<const uint64_t> piece : shares[t]) sum += sum_words_unrolled(piece);
      sink.fetch_add(sum, std::memory_order_relaxed);
      const int64_t end = Clock::now().time_since_epoch().count();
      int64_t seen = ends[static_cast<size_t>(r)].load();
      while (end > seen && !ends[static_cast<size_t>(r)].compare_exchange_weak(seen, end)) {}
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work, t);
  work(0);
  for (std::thread& th : pool) th.join();
  for (int r = 1; r < runs; ++r) {
    const auto end = Clock::time_point(Clock::duration(ends[static_cast<size_t>(r)].load()));
    samples_ns->push_back(
        std::chrono::duration_cast<std::chrono::nanoseconds>(end - starts[static_cast<size_t>(r)]).count());
  }
  return sink.load();
}

Status check_counts(int threads, int repetitions) {
  if (threads < 1 || threads > 1024) return Status::invalid_argument("threads must be in [1, 1024]");
  if (repetitions < 1 || repetitions > 1000) return Status::invalid_argument("repetitions must be in [1, 1000]");
  return {};
}

}  // namespace

Result<ReadBandwidth> measure_read_bandwidth(const ReadBandwidthOptions& o) {
  CS_RETURN_IF_ERROR(check_counts(o.threads, o.repetitions));
  const size_t threads = static_cast<size_t>(o.threads);
  if (o.bytes / threads < kMinBytesPerThread) {
    return Status::invalid_argument("the bandwidth buffer must hold at least 64 KiB per thread");
  }
  const size_t per_thread = o.bytes / threads / (kBlockWords * sizeof(uint64_t)) * kBlockWords;  // words
  const size_t n_words = per_thread * threads;
  // The same kind of memory as the packed weights decode streams (huge pages where the system
  // has them), so the roofline and the decode it judges read through the same TLB.
  Result<std::shared_ptr<std::byte>> mapped = map_huge_pages(n_words * sizeof(uint64_t));
  if (!mapped.ok())
    return Status::resource_exhausted("cannot allocate the " + std::to_string(o.bytes) + "-byte buffer");
  auto* const buffer = reinterpret_cast<uint64_t*>(mapped->get());
  for (size_t i = 0; i < n_words; ++i) buffer[i] = i;  // every page resident, and not all zero

  std::vector<std::vector<std::span<const uint64_t>>> shares(threads);
  for (size_t t = 0; t < threads; ++t) shares[t].emplace_back(buffer + t * per_thread, per_thread);
  ReadBandwidth result;
  result.bytes = n_words * sizeof(uint64_t);
  const uint64_t read = time_runs(shares, o.repetitions, &result.samples_ns);
  // 0 + 1 + ... + (n - 1), halving the even factor first; it wraps as the sums do.
  const uint64_t n = n_words;
  const uint64_t triangle = n % 2 == 0 ? (n / 2) * (n - 1) : n * ((n - 1) / 2);
  if (read != static_cast<uint64_t>(o.repetitions + 1) * triangle) {
    return Status::internal("the bandwidth loop read wrong values");
  }
  return result;
}

Result<ReadBandwidth> measure_read_bandwidth(std::span<const std::span<const std::byte>> regions, int threads,
                                             int repetitions) {
  CS_RETURN_IF_ERROR(check_counts(threads, repetitions));
  // Whole blocks (kBlockWords words) from each region: at most a block at either end is left unread.
  constexpr size_t kBlockBytes = kBlockWords * sizeof(uint64_t);
  std::vector<std::span<const uint64_t>> pieces;
  size_t total = 0;
  for (const std::span<const std::byte> region : regions) {
    const auto begin = reinterpret_cast<uintptr_t>(region.data());
    const uintptr_t first = (begin + sizeof(uint64_t) - 1) / sizeof(uint64_t) * sizeof(uint64_t);
    const uintptr_t end = begin + region.size();
    if (end <= first) continue;
    const size_t words = (end - first) / kBlockBytes * kBlockWords;
    if (words == 0) continue;
    pieces.emplace_back(reinterpret_cast<const uint64_t*>(first), words);
    total += words;
  }
  // A small model's weights are read from cache: the figure then says so (shares over 100 %).
  if (total / kBlockWords < static_cast<size_t>(threads)) {
    return Status::invalid_argument("the regions must hold at least 128 bytes per thread");
  }
  // Thread t reads words [t * total / threads, (t + 1) * total / threads) of the regions in order.
  std::vector<std::vector<std::span<const uint64_t>>> shares(static_cast<size_t>(threads));
  size_t piece = 0, offset = 0;
  for (size_t t = 0; t < shares.size(); ++t) {
    size_t want = total * (t + 1) / shares.size() - total * t / shares.size();
    while (want > 0) {
      const size_t take = std::min(want, pieces[piece].size() - offset);
      shares[t].push_back(pieces[piece].subspan(offset, take));
      want -= take;
      offset += take;
      if (offset == pieces[piece].size()) ++piece, offset = 0;
    }
  }
  ReadBandwidth result;
  result.bytes = total * sizeof(uint64_t);
  time_runs(shares, repetitions, &result.samples_ns);
  return result;
}

}  // namespace cellserve::engine
