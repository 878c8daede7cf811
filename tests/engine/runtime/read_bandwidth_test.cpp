// The bandwidth loop sums what it reads (checked against a plain loop, remainders included), and
// a measurement reports one sample per repetition over the whole buffer. No timing is asserted.
#include "engine/runtime/read_bandwidth.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <random>
#include <span>
#include <vector>

namespace cellserve::engine {
namespace {

TEST(ReadBandwidth, TheUnrolledSumIsThePlainSum) {
  std::mt19937_64 rng(5);
  for (size_t n : {size_t{0}, size_t{1}, size_t{15}, size_t{16}, size_t{17}, size_t{1000}, size_t{4099}}) {
    std::vector<uint64_t> words(n);
    for (uint64_t& w : words) w = rng();
    EXPECT_EQ(sum_words_unrolled(words), sum_words(words)) << n;
  }
}

TEST(ReadBandwidth, MeasuresEveryRepetitionOverTheWholeBuffer) {
  ReadBandwidthOptions o;
  o.bytes = (size_t{1} << 20) + 100;  // rounded down to whole blocks per thread
  o.threads = 2;
  o.repetitions = 3;
  auto r = measure_read_bandwidth(o);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->bytes, size_t{1} << 20);
  EXPECT_EQ(r->samples_ns.size(), 3u);
  for (int64_t ns : r->samples_ns) EXPECT_GT(ns, 0);
  EXPECT_GT(r->best_gbs(), 0);
}

TEST(ReadBandwidth, ReadsWholeBlocksOfExistingRegions) {
  std::vector<uint64_t> memory(1 << 16);
  const auto* bytes = reinterpret_cast<const std::byte*>(memory.data());
  // An aligned region of 250 blocks of 128 bytes; one of 3200 bytes starting 3 bytes past a word,
  // so reading starts 5 bytes in and 24 whole blocks fit; and one too short for a block.
  const std::vector<std::span<const std::byte>> regions = {{bytes, 32000}, {bytes + 40003, 3200}, {bytes + 50000, 20}};
  for (int threads : {1, 2, 3}) {
    auto r = measure_read_bandwidth(regions, threads, 2);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(r->bytes, 32000u + 24 * 128u) << threads;
    EXPECT_EQ(r->samples_ns.size(), 2u);
    EXPECT_GT(r->best_gbs(), 0);
  }
  EXPECT_FALSE(measure_read_bandwidth(std::vector<std::span<const std::byte>>{{bytes, 20}}, 1, 1).ok());
  EXPECT_FALSE(measure_read_bandwidth(regions, 0, 1).ok());
  EXPECT_FALSE(measure_read_bandwidth(regions, 1, 0).ok());
}

TEST(ReadBandwidth, RefusesAbsurdOptions) {
  ReadBandwidthOptions o;
  o.bytes = 1 << 20;
  o.threads = 0;
  EXPECT_FALSE(measure_read_bandwidth(o).ok());
  o.threads = 32;  // 32 KiB each: below the 64 KiB a thread needs
  EXPECT_FALSE(measure_read_bandwidth(o).ok());
  o.threads = 1;
  o.repetitions = 0;
  EXPECT_FALSE(measure_read_bandwidth(o).ok());
}

}  // namespace
}  // namespace cellserve::engine
