#include "fleet/hub/traffic_series.h"

#include <algorithm>
#include <cmath>

namespace cellserve::fleet {
namespace {

// The nearest-rank percentile `p` (0..1) of `values`, which it reorders.
double percentile(std::vector<double>& values, double p) {
  const size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(values.size())));
  const size_t index = std::min(values.size() - 1, rank == 0 ? 0 : rank - 1);
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(index), values.end());
  return values[index];
}

void set_percentiles(const std::vector<double>& samples, std::optional<double>& p50, std::optional<double>& p95) {
  if (samples.empty()) return;
  std::vector<double> copy = samples;
  p50 = percentile(copy, 0.50);
  p95 = percentile(copy, 0.95);
}

// A time from the hub's own measurement, kept finite and non-negative.
double bounded_ms(double ms) { return std::isfinite(ms) ? std::clamp(ms, 0.0, 1e9) : 0.0; }

}  // namespace

TrafficSeries::TrafficSeries(const Clock& clock, std::chrono::milliseconds interval)
    : clock_(clock), interval_ms_(std::max<int64_t>(1, interval.count())) {}

int64_t TrafficSeries::interval_of(int64_t ms) const { return ms >= 0 ? ms / interval_ms_ : 0; }

TrafficSeries::Series* TrafficSeries::series(const std::string& deployment) {
  auto it = series_.find(deployment);
  if (it == series_.end()) {
    if (series_.size() >= kMaxDeployments) return nullptr;
    it = series_.emplace(deployment, Series{}).first;
    it->second.first_interval = interval_of(clock_.wall_ms());
  }
  finish_samples(it->second, interval_of(clock_.wall_ms()));
  return &it->second;
}

TrafficPoint& TrafficSeries::slot(Series& s, int64_t interval) {
  const size_t at = static_cast<size_t>(interval % static_cast<int64_t>(kPoints));
  if (s.ring_interval[at] != interval) {
    s.ring[at] = TrafficPoint{};
    s.ring[at].t_ms = interval * interval_ms_;
    s.ring_interval[at] = interval;
  }
  return s.ring[at];
}

void TrafficSeries::finish_samples(Series& s, int64_t now_interval) {
  if (s.sampled_interval == now_interval) return;
  if (s.sampled_interval >= 0 && now_interval - s.sampled_interval < static_cast<int64_t>(kPoints)) {
    TrafficPoint& p = slot(s, s.sampled_interval);
    set_percentiles(s.latency.values, p.latency_p50_ms, p.latency_p95_ms);
    set_percentiles(s.ttft.values, p.ttft_p50_ms, p.ttft_p95_ms);
  }
  s.latency = Samples{};
  s.ttft = Samples{};
  s.sampled_interval = now_interval;
}

// Reservoir sampling (Vitter's algorithm R): every value seen is kept with equal probability.
void TrafficSeries::sample(Samples& into, double value) {
  ++into.seen;
  if (into.values.size() < kMaxSamples) {
    into.values.push_back(value);
    return;
  }
  rng_ += 0x9e3779b97f4a7c15ULL;
  uint64_t z = rng_;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  const uint64_t j = z % static_cast<uint64_t>(into.seen);
  if (j < kMaxSamples) into.values[j] = value;
}

void TrafficSeries::record_request(const std::string& deployment, const RequestEnd& end) {
  std::lock_guard lock(mu_);
  Series* s = series(deployment);
  if (s == nullptr) return;
  TrafficPoint& p = slot(*s, s->sampled_interval);
  if (end.status >= 500) {
    ++p.requests_5xx;
  } else if (end.status >= 400) {
    ++p.requests_4xx;
  } else {
    ++p.requests_2xx;
  }
  p.completion_tokens += std::clamp<int64_t>(end.completion_tokens, 0, kMaxTokensPerRequest);
  sample(s->latency, bounded_ms(end.latency_ms));
  if (end.ttft_ms) sample(s->ttft, bounded_ms(*end.ttft_ms));
}

void TrafficSeries::count_hedge(const std::string& deployment) {
  std::lock_guard lock(mu_);
  if (Series* s = series(deployment)) ++slot(*s, s->sampled_interval).hedges;
}

void TrafficSeries::count_retry(const std::string& deployment) {
  std::lock_guard lock(mu_);
  if (Series* s = series(deployment)) ++slot(*s, s->sampled_interval).retries;
}

void TrafficSeries::observe_queue(const std::string& deployment, size_t length) {
  std::lock_guard lock(mu_);
  Series* s = series(deployment);
  if (s == nullptr) return;
  TrafficPoint& p = slot(*s, s->sampled_interval);
  p.queue_length = std::max(p.queue_length, static_cast<int64_t>(std::min<size_t>(length, 1u << 30)));
}

std::vector<TrafficPoint> TrafficSeries::read(Series& s, int64_t since_ms) {
  const int64_t now = clock_.wall_ms();
  const int64_t current = interval_of(now);
  const int64_t first = std::max(s.first_interval, current - static_cast<int64_t>(kPoints) + 1);
  std::vector<TrafficPoint> out;
  for (int64_t k = std::max(first, since_ms < 0 ? first : interval_of(since_ms)); k <= current; ++k) {
    TrafficPoint p = slot(s, k);
    if (p.t_ms <= since_ms) continue;
    const double seconds = static_cast<double>(interval_ms_) / 1000.0;
    if (k == current) {
      // The unfinished interval: its samples so far, its rate over the time so far.
      set_percentiles(s.latency.values, p.latency_p50_ms, p.latency_p95_ms);
      set_percentiles(s.ttft.values, p.ttft_p50_ms, p.ttft_p95_ms);
      const double elapsed = static_cast<double>(now - p.t_ms) / 1000.0;
      p.tokens_per_s = static_cast<double>(p.completion_tokens) / std::clamp(elapsed, std::min(1.0, seconds), seconds);
    } else {
      p.tokens_per_s = static_cast<double>(p.completion_tokens) / seconds;
    }
    out.push_back(p);
  }
  return out;
}

std::vector<TrafficPoint> TrafficSeries::points(const std::string& deployment, int64_t since_ms) {
  std::lock_guard lock(mu_);
  auto it = series_.find(deployment);
  if (it == series_.end()) return {};
  finish_samples(it->second, interval_of(clock_.wall_ms()));
  return read(it->second, since_ms);
}

std::map<std::string, std::vector<TrafficPoint>> TrafficSeries::all_points(int64_t since_ms) {
  std::lock_guard lock(mu_);
  std::map<std::string, std::vector<TrafficPoint>> out;
  for (auto& [name, s] : series_) {
    finish_samples(s, interval_of(clock_.wall_ms()));
    out.emplace(name, read(s, since_ms));
  }
  return out;
}

void TrafficSeries::retain(const std::set<std::string>& names) {
  std::lock_guard lock(mu_);
  std::erase_if(series_, [&](const auto& entry) { return !names.contains(entry.first); });
}

bool TrafficSeries::tracks(const std::string& deployment) const {
  std::lock_guard lock(mu_);
  return series_.contains(deployment);
}

}  // namespace cellserve::fleet
