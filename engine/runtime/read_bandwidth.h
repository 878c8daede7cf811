// How fast this machine reads memory: the roofline a decode step runs against, since each
// generated token streams every weight once. Measured, not looked up, because phones and shared
// boxes differ from their data sheets (and from one another) by a factor of two.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"

namespace cellserve::engine {

struct ReadBandwidthOptions {
  size_t bytes = size_t{1} << 30;  // the buffer read on each run, far beyond any cache
  int threads = 1;                 // each reads its own contiguous share
  int repetitions = 5;             // measured runs, after one warm-up
};

struct ReadBandwidth {
  size_t bytes = 0;                 // read per run (the buffer, rounded down to whole blocks)
  std::vector<int64_t> samples_ns;  // one per repetition: start to the last thread's end
  double best_gbs() const;          // 1e9 bytes per second of the fastest run
};

// Fills a buffer of options.bytes (so every page is resident), then times `repetitions` runs in
// which `threads` threads sum their shares of it. InvalidArgument for fewer than 64 KiB per
// thread, threads outside [1, 1024] or repetitions outside [1, 1000]; ResourceExhausted when
// the buffer cannot be allocated.
Result<ReadBandwidth> measure_read_bandwidth(const ReadBandwidthOptions& options);

// The same measurement over memory that already exists: `regions` read as one sequence cut into
// `threads` equal shares. Given a model's resident weights, it is the roofline of the very pages a
// decode step streams (on a VM, two buffers of the same machine can read at rates 1.5x apart).
// The values are not checked (they are whatever the memory holds). Only whole 128-byte blocks of
// 8-byte-aligned words are read: `bytes` is their total. InvalidArgument for less than a block
// per thread, threads outside [1, 1024] or repetitions outside [1, 1000].
Result<ReadBandwidth> measure_read_bandwidth(std::span<const std::span<const std::byte>> regions, int threads,
                                             int repetitions);

// The sum of `words`, the reference the measured loop is checked against (tests).
uint64_t sum_words(std::span<const uint64_t> words);
// The same sum as the measured loop computes it: 32-byte vectors, four accumulators.
uint64_t sum_words_unrolled(std::span<const uint64_t> words);

}  // namespace cellserve::engine
