// The hub's traffic time series on a manual clock: requests bucketed into 5 s points by status
// class, the hour's window rolling over, percentiles (exact, then from the bounded sample),
// since_ms, and the bounds on deployments, tokens and samples.
#include "fleet/hub/traffic_series.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

namespace cellserve::fleet {
namespace {

using std::chrono::milliseconds;
constexpr int64_t kStart = 1'700'000'000'000;  // a multiple of the 5 s interval

RequestEnd ended(int status, double latency_ms = 10, std::optional<double> ttft_ms = 5, int64_t tokens = 0) {
  return RequestEnd{status, latency_ms, ttft_ms, tokens};
}

TEST(TrafficSeries, BucketsRequestsByIntervalAndStatusClass) {
  ManualClock clock(kStart);
  TrafficSeries t(clock);
  t.record_request("risk", ended(200, 10, 5, 7));
  t.record_request("risk", ended(404));
  t.record_request("risk", ended(499, 3, std::nullopt));
  clock.advance(milliseconds(4999));
  t.record_request("risk", ended(502));
  t.count_hedge("risk");
  clock.advance(milliseconds(1));  // the next interval
  t.record_request("risk", ended(200, 20, 8, 3));
  t.count_retry("risk");
  t.count_retry("risk");

  const std::vector<TrafficPoint> p = t.points("risk", -1);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].t_ms, kStart);
  EXPECT_EQ(p[0].requests_2xx, 1);
  EXPECT_EQ(p[0].requests_4xx, 2);
  EXPECT_EQ(p[0].requests_5xx, 1);
  EXPECT_EQ(p[0].completion_tokens, 7);
  EXPECT_DOUBLE_EQ(p[0].tokens_per_s, 7.0 / 5);
  EXPECT_EQ(p[0].hedges, 1);
  EXPECT_EQ(p[0].retries, 0);
  EXPECT_EQ(p[1].t_ms, kStart + 5000);
  EXPECT_EQ(p[1].requests(), 1);
  EXPECT_EQ(p[1].retries, 2);
  // The current interval's rate is over at least a second of it (none has passed yet).
  EXPECT_DOUBLE_EQ(p[1].tokens_per_s, 3.0);
  EXPECT_DOUBLE_EQ(*p[1].latency_p50_ms, 20);
  EXPECT_TRUE(t.points("other", -1).empty());
}

TEST(TrafficSeries, QuietIntervalsAreZeroPointsAndTheQueueIsItsLongest) {
  ManualClock clock(kStart);
  TrafficSeries t(clock);
  t.observe_queue("risk", 3);
  t.observe_queue("risk", 1);
  clock.advance(milliseconds(12'000));
  const std::vector<TrafficPoint> p = t.points("risk", -1);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].queue_length, 3);
  EXPECT_EQ(p[1].t_ms, kStart + 5000);
  EXPECT_EQ(p[1].requests(), 0);
  EXPECT_EQ(p[1].queue_length, 0);
  EXPECT_FALSE(p[1].latency_p50_ms.has_value());
  EXPECT_FALSE(p[2].ttft_p95_ms.has_value());
}

TEST(TrafficSeries, TheWindowRollsOverAfterAnHour) {
  ManualClock clock(kStart);
  TrafficSeries t(clock);
  t.record_request("risk", ended(200));
  clock.advance(milliseconds(t.window_ms() - 1));  // the first interval is still in the window
  ASSERT_EQ(t.points("risk", -1).size(), TrafficSeries::kPoints);
  EXPECT_EQ(t.points("risk", -1).front().requests_2xx, 1);
  clock.advance(milliseconds(1));
  t.record_request("risk", ended(500));
  const std::vector<TrafficPoint> p = t.points("risk", -1);
  ASSERT_EQ(p.size(), TrafficSeries::kPoints);
  EXPECT_EQ(p.front().t_ms, kStart + 5000);
  EXPECT_EQ(p.front().requests(), 0);
  EXPECT_EQ(p.back().t_ms, kStart + t.window_ms());
  EXPECT_EQ(p.back().requests_5xx, 1);  // it reused the first interval's slot, emptied
  EXPECT_EQ(p.back().requests_2xx, 0);
}

TEST(TrafficSeries, PercentilesAreNearestRankAndKeptWhenTheIntervalEnds) {
  ManualClock clock(kStart);
  TrafficSeries t(clock);
  for (int i = 100; i >= 1; --i) t.record_request("risk", ended(200, i, i / 2.0));
  auto check = [&](const TrafficPoint& p) {
    EXPECT_DOUBLE_EQ(*p.latency_p50_ms, 50);
    EXPECT_DOUBLE_EQ(*p.latency_p95_ms, 95);
    EXPECT_DOUBLE_EQ(*p.ttft_p50_ms, 25);
    EXPECT_DOUBLE_EQ(*p.ttft_p95_ms, 47.5);
  };
  check(t.points("risk", -1).at(0));  // the current interval, from its samples so far
  clock.advance(milliseconds(5000));
  t.record_request("risk", ended(200, 1000));  // the next interval's samples start afresh
  const std::vector<TrafficPoint> p = t.points("risk", -1);
  ASSERT_EQ(p.size(), 2u);
  check(p[0]);
  EXPECT_DOUBLE_EQ(*p[1].latency_p50_ms, 1000);
  EXPECT_DOUBLE_EQ(*p[1].latency_p95_ms, 1000);
}

TEST(TrafficSeries, ManyRequestsArePercentilesOfABoundedUniformSample) {
  ManualClock clock(kStart);
  TrafficSeries t(clock);
  constexpr int kRequests = 20'000;  // far more than kMaxSamples
  for (int i = 0; i < kRequests; ++i) t.record_request("risk", ended(200, i % 1000));
  clock.advance(milliseconds(5000));
  const TrafficPoint p = t.points("risk", -1).at(0);
  EXPECT_EQ(p.requests_2xx, kRequests);
  // A uniform sample of 256 from 0..999: the median within a generous band of 500.
  EXPECT_GT(*p.latency_p50_ms, 380);
  EXPECT_LT(*p.latency_p50_ms, 620);
  EXPECT_GT(*p.latency_p95_ms, 880);
}

TEST(TrafficSeries, SinceMsKeepsOnlyLaterPoints) {
  ManualClock clock(kStart);
  TrafficSeries t(clock);
  t.record_request("risk", ended(200));
  clock.advance(milliseconds(10'000));
  t.record_request("risk", ended(200));
  EXPECT_EQ(t.points("risk", -1).size(), 3u);
  EXPECT_EQ(t.points("risk", 0).size(), 3u);
  const std::vector<TrafficPoint> later = t.points("risk", kStart);
  ASSERT_EQ(later.size(), 2u);
  EXPECT_EQ(later[0].t_ms, kStart + 5000);
  // One less than the current point's start: just the current point, to refresh it.
  ASSERT_EQ(t.points("risk", kStart + 9999).size(), 1u);
  EXPECT_EQ(t.points("risk", kStart + 9999)[0].requests_2xx, 1);
  EXPECT_TRUE(t.points("risk", kStart + 10'000).empty());
  EXPECT_TRUE(t.points("risk", std::numeric_limits<int64_t>::max()).empty());
  EXPECT_EQ(t.all_points(kStart).at("risk").size(), 2u);
}

TEST(TrafficSeries, BoundsDeploymentsTokensAndTimes) {
  ManualClock clock(kStart);
  TrafficSeries t(clock);
  for (size_t i = 0; i < TrafficSeries::kMaxDeployments; ++i) t.count_retry("d" + std::to_string(i));
  t.record_request("one-too-many", ended(200));
  EXPECT_FALSE(t.tracks("one-too-many"));
  EXPECT_EQ(t.all_points(-1).size(), TrafficSeries::kMaxDeployments);
  // Removed deployments drop their series, which makes room.
  t.retain({"d0"});
  EXPECT_EQ(t.all_points(-1).size(), 1u);
  t.record_request("risk", ended(200, -5, 1e300, -40));              // a device's usage cannot subtract
  t.record_request("risk", ended(200, std::nan(""), 1, 1LL << 40));  // nor add more than its bound
  const TrafficPoint p = t.points("risk", -1).at(0);
  EXPECT_EQ(p.completion_tokens, TrafficSeries::kMaxTokensPerRequest);
  EXPECT_DOUBLE_EQ(*p.latency_p50_ms, 0);
  EXPECT_LE(*p.ttft_p95_ms, 1e9);
}

}  // namespace
}  // namespace cellserve::fleet
