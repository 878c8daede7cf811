// BenchRow's arithmetic: a tg row's share of the read roofline pairs each repetition with the
// weights' read rate around it.
#include "cli/bench_report.h"

#include <gtest/gtest.h>

namespace cellserve::cli {
namespace {

BenchRow tg_row(std::vector<int64_t> samples_ns, std::vector<double> bandwidth, uint64_t bytes_per_token) {
  BenchRow row;
  row.n_gen = 10;
  row.samples_ns = std::move(samples_ns);
  row.bandwidth_samples_gbs = std::move(bandwidth);
  row.bytes_per_token = bytes_per_token;
  return row;
}

TEST(BenchReport, EachRepetitionIsJudgedAgainstTheReadRateAroundIt) {
  // 10 tokens in 1 s, then in 0.5 s: 10 and 20 t/s of 1 GB each, 10 and 20 GB/s. The memory read
  // 20 GB/s around the first (20 before, 20 after) and 40 around the second (20 before, 60 after):
  // both ran at half the roofline.
  const BenchRow row = tg_row({1'000'000'000, 500'000'000}, {20, 20, 60}, 1'000'000'000);
  EXPECT_DOUBLE_EQ(row.roofline_fraction(), 0.5);
  EXPECT_DOUBLE_EQ(row.bandwidth_gbs(), (20.0 + 20 + 60) / 3);
  // Against the mean rate instead, the second would count as 20/33.3 and the first as 10/33.3.
}

TEST(BenchReport, NoShareWithoutAReadingAroundEveryRepetition) {
  EXPECT_EQ(tg_row({1'000'000'000, 500'000'000}, {20, 20}, 1'000'000'000).roofline_fraction(), 0);
  EXPECT_EQ(tg_row({1'000'000'000}, {}, 1'000'000'000).roofline_fraction(), 0);
  EXPECT_EQ(tg_row({1'000'000'000}, {20, 20}, 0).roofline_fraction(), 0);
  EXPECT_EQ(tg_row({1'000'000'000}, {0, 0}, 1'000'000'000).roofline_fraction(), 0);
  BenchRow pp = tg_row({1'000'000'000}, {20, 20}, 1'000'000'000);
  pp.n_gen = 0;
  pp.n_prompt = 10;
  EXPECT_EQ(pp.roofline_fraction(), 0);
}

TEST(BenchReport, PeakShareIsThePpRowsMultiplyAddsOverThePeak) {
  BenchRow pp;
  pp.n_prompt = 512;
  pp.samples_ns = {1'000'000'000, 1'000'000'000};  // 512 t/s
  pp.macs_per_token = 1e9;
  pp.peak_gmacs = 1024;
  EXPECT_DOUBLE_EQ(pp.peak_share(), 0.5);
  pp.peak_gmacs = 0;
  EXPECT_EQ(pp.peak_share(), 0);
  BenchRow tg = pp;
  tg.n_prompt = 0;
  tg.n_gen = 128;
  tg.peak_gmacs = 1024;
  EXPECT_EQ(tg.peak_share(), 0);
}

}  // namespace
}  // namespace cellserve::cli
