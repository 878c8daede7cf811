// Pieces of Prometheus' text exposition format shared by the servers' /metrics: label escaping
// and a fixed-bucket histogram.
#pragma once

#include <array>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace cellserve::net {

// `v` escaped for a Prometheus label value (backslash, double quote and newline), so no value
// can end its label or start a line of its own.
std::string prometheus_label(std::string_view v);

// A histogram with fixed upper bounds (seconds). Not thread-safe: its owner locks.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size(), 0) {}
  void observe(double value);
  // The _bucket, _sum and _count lines of `name` with `labels` ("a=\"x\"", already escaped, or "").
  void write(std::ostringstream& out, std::string_view name, std::string_view labels) const;

 private:
  std::vector<double> bounds_;
  std::vector<int64_t> counts_;  // per bucket, not cumulative
  int64_t count_ = 0;
  double sum_ = 0;
};

}  // namespace cellserve::net
