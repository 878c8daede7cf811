// Server metrics, exposed on GET /metrics in Prometheus' text format. Thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

namespace cellserve::server {

// `v` escaped for a Prometheus label value (backslash, double quote and newline), so no value
// can end its label or start a line of its own.
std::string prometheus_label_value(std::string_view v);

class Metrics {
 public:
  // A finished HTTP request on `endpoint` with `status`. `endpoint` must come from a fixed set
  // (a route pattern, "unmatched"), never from the request, or every new path makes a series.
  void count_request(const std::string& endpoint, int status);
  void add_prompt_tokens(int64_t n) { prompt_tokens_ += n; }
  void add_generated_tokens(int64_t n) { generated_tokens_ += n; }
  void add_prefix_hit_tokens(int64_t n) { prefix_hit_tokens_ += n; }
  void observe_ttft(double seconds);
  // Gauges the scheduler updates each step.
  void set_queue_length(int64_t n) { queue_length_ = n; }
  void set_busy_slots(int64_t n) { busy_slots_ = n; }
  void set_slots(int64_t n) { slots_ = n; }
  // Seconds spent in decode steps that generated tokens, for the tok/s figures.
  void add_decode_time(double seconds, int64_t tokens);
  void add_prefill_time(double seconds, int64_t tokens);

  std::string prometheus_text() const;

 private:
  static constexpr std::array<double, 10> kTtftBuckets = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, int64_t> requests_;
  std::array<int64_t, kTtftBuckets.size()> ttft_counts_{};
  int64_t ttft_count_ = 0;
  double ttft_sum_ = 0;
  double decode_seconds_ = 0, prefill_seconds_ = 0;
  int64_t decode_tokens_ = 0, prefill_tokens_ = 0;
  std::atomic<int64_t> prompt_tokens_{0}, generated_tokens_{0}, prefix_hit_tokens_{0};
  std::atomic<int64_t> queue_length_{0}, busy_slots_{0}, slots_{0};
};

}  // namespace cellserve::server
