#include "net/prometheus.h"

namespace cellserve::net {

std::string prometheus_label(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (const char c : v) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void Histogram::observe(double value) {
  for (size_t i = 0; i < bounds_.size(); ++i) {
    if (value <= bounds_[i]) {
      ++counts_[i];
      break;
    }
  }
  ++count_;
  sum_ += value;
}

void Histogram::write(std::ostringstream& out, std::string_view name, std::string_view labels) const {
  const std::string sep = labels.empty() ? "" : ",";
  int64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    out << name << "_bucket{" << labels << sep << "le=\"" << bounds_[i] << "\"} " << cumulative << '\n';
  }
  out << name << "_bucket{" << labels << sep << "le=\"+Inf\"} " << count_ << '\n';
  const std::string braces = labels.empty() ? "" : "{" + std::string(labels) + "}";
  out << name << "_sum" << braces << ' ' << sum_ << '\n';
  out << name << "_count" << braces << ' ' << count_ << '\n';
}

}  // namespace cellserve::net
