// The hub's traffic over the last hour, per deployment, as a time series for the dashboard
// (GET /api/v1/traffic, api_traffic.cpp): one point per interval (5 s) in a ring of 720 (an
// hour), each with the requests ended in it by status class, p50/p95 latency and time to first
// byte, completion tokens and their rate, the longest queue seen, hedges and retries.
//
// Bounded: at most kMaxDeployments series of kPoints points each (about 80 KiB a series), and
// only the current interval keeps raw samples: at most kMaxSamples latencies and as many times to
// first byte, a uniform reservoir sample of the interval's requests. So a point's percentiles are
// exact up to kMaxSamples requests in its interval and estimates from a uniform sample of that
// many beyond (nearest rank). Times are read on the hub's Clock (wall time: a point's t_ms is the
// start of its interval in milliseconds since the epoch). Thread-safe: one lock of its own, never
// held while calling out.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/clock.h"

namespace cellserve::fleet {

struct TrafficPoint {
  int64_t t_ms = 0;          // the start of the interval
  int64_t requests_2xx = 0;  // and any other status below 400
  int64_t requests_4xx = 0;  // 499: the client left before an answer
  int64_t requests_5xx = 0;
  std::optional<double> latency_p50_ms;  // nullopt: no request ended in the interval
  std::optional<double> latency_p95_ms;
  std::optional<double> ttft_p50_ms;  // time to the answer's first byte (streamed: first token)
  std::optional<double> ttft_p95_ms;
  int64_t completion_tokens = 0;
  double tokens_per_s = 0;   // completion tokens over the interval (the current one: so far, at least 1 s)
  int64_t queue_length = 0;  // the most requests seen waiting in the deployment's line at once
  int64_t hedges = 0;
  int64_t retries = 0;

  int64_t requests() const { return requests_2xx + requests_4xx + requests_5xx; }
};

// How one user request at the deployment endpoint ended (hedge legs and retries are one request).
struct RequestEnd {
  int status = 0;
  double latency_ms = 0;          // arrival to the end of the answer
  std::optional<double> ttft_ms;  // arrival to the answer's first byte; nullopt: none sent
  int64_t completion_tokens = 0;  // the answer's usage (from a device: clamped)
};

class TrafficSeries {
 public:
  static constexpr std::chrono::milliseconds kInterval{5000};
  static constexpr size_t kPoints = 720;  // an hour of 5 s intervals
  static constexpr size_t kMaxSamples = 256;
  static constexpr size_t kMaxDeployments = 256;  // activity of further deployments is not recorded
  static constexpr int64_t kMaxTokensPerRequest = int64_t{1} << 24;

  explicit TrafficSeries(const Clock& clock, std::chrono::milliseconds interval = kInterval);

  void record_request(const std::string& deployment, const RequestEnd& end);
  void count_hedge(const std::string& deployment);
  void count_retry(const std::string& deployment);
  // `length` requests wait in the deployment's line now.
  void observe_queue(const std::string& deployment, size_t length);

  // The deployment's points with t_ms > since_ms, oldest first, from its first recorded interval
  // (at most an hour back) up to and including the current, unfinished one; intervals without
  // activity are zero points. Empty for a deployment without a series.
  std::vector<TrafficPoint> points(const std::string& deployment, int64_t since_ms);
  // The same for every deployment with a series.
  std::map<std::string, std::vector<TrafficPoint>> all_points(int64_t since_ms);
  // Drops the series of deployments not in `names` (removed deployments).
  void retain(const std::set<std::string>& names);
  bool tracks(const std::string& deployment) const;

  int64_t now_ms() const { return clock_.wall_ms(); }
  int64_t interval_ms() const { return interval_ms_; }
  int64_t window_ms() const { return interval_ms_ * static_cast<int64_t>(kPoints); }

 private:
  struct Samples {
    std::vector<double> values;  // a uniform sample of at most kMaxSamples
    int64_t seen = 0;
  };
  struct Series {
    std::vector<TrafficPoint> ring = std::vector<TrafficPoint>(kPoints);  // interval k at k % kPoints
    std::vector<int64_t> ring_interval = std::vector<int64_t>(kPoints, -1);
    int64_t first_interval = 0;
    int64_t sampled_interval = -1;  // the interval `latency` and `ttft` hold samples of
    Samples latency;
    Samples ttft;
  };

  int64_t interval_of(int64_t ms) const;
  // The series of `deployment`, created if there is room; nullptr if not. With mu_ held.
  Series* series(const std::string& deployment);
  // The point of `interval` in `s` (reset when its slot held an older interval). With mu_ held.
  TrafficPoint& slot(Series& s, int64_t interval);
  // Writes the percentiles of a finished interval's samples into its point and clears them.
  void finish_samples(Series& s, int64_t now_interval);
  void sample(Samples& into, double value);
  std::vector<TrafficPoint> read(Series& s, int64_t since_ms);

  const Clock& clock_;
  const int64_t interval_ms_;
  mutable std::mutex mu_;
  std::map<std::string, Series> series_;
  uint64_t rng_ = 0x9e3779b97f4a7c15ULL;  // the reservoir's choices (splitmix64)
};

}  // namespace cellserve::fleet
