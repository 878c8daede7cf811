#include "server/metrics.h"

#include "base/meminfo.h"
#include "net/prometheus.h"

#include <sstream>

namespace cellserve::server {

std::string prometheus_label_value(std::string_view v) { return net::prometheus_label(v); }

void Metrics::count_request(const std::string& endpoint, int status) {
  std::lock_guard lock(mu_);
  ++requests_[{endpoint, status}];
}

void Metrics::observe_ttft(double seconds) {
  std::lock_guard lock(mu_);
  for (size_t i = 0; i < kTtftBuckets.size(); ++i) {
    if (seconds <= kTtftBuckets[i]) ++ttft_counts_[i];
  }
  ++ttft_count_;
  ttft_sum_ += seconds;
}

void Metrics::add_decode_time(double seconds, int64_t tokens) {
  std::lock_guard lock(mu_);
  decode_seconds_ += seconds;
  decode_tokens_ += tokens;
}

void Metrics::add_prefill_time(double seconds, int64_t tokens) {
  std::lock_guard lock(mu_);
  prefill_seconds_ += seconds;
  prefill_tokens_ += tokens;
}

std::string Metrics::prometheus_text() const {
  std::lock_guard lock(mu_);
  std::ostringstream out;
  out.precision(6);
  auto header = [&](const char* name, const char* type, const char* help) {
    out << "# HELP cellserve_" << name << ' ' << help << "\n# TYPE cellserve_" << name << ' ' << type << '\n';
  };
  header("requests_total", "counter", "HTTP requests answered, by endpoint and status.");
  for (const auto& [key, n] : requests_) {
    out << "cellserve_requests_total{endpoint=\"" << prometheus_label_value(key.first) << "\",status=\"" << key.second
        << "\"} " << n << '\n';
  }
  header("prompt_tokens_total", "counter", "Prompt tokens received.");
  out << "cellserve_prompt_tokens_total " << prompt_tokens_.load() << '\n';
  header("generated_tokens_total", "counter", "Tokens generated.");
  out << "cellserve_generated_tokens_total " << generated_tokens_.load() << '\n';
  header("prefix_cache_hit_tokens_total", "counter", "Prompt tokens reused from the prefix cache.");
  out << "cellserve_prefix_cache_hit_tokens_total " << prefix_hit_tokens_.load() << '\n';
  header("prompt_tokens_per_second", "gauge", "Prompt tokens per second of prefill compute, since start.");
  out << "cellserve_prompt_tokens_per_second "
      << (prefill_seconds_ > 0 ? static_cast<double>(prefill_tokens_) / prefill_seconds_ : 0.0) << '\n';
  header("generation_tokens_per_second", "gauge", "Generated tokens per second of decode compute, since start.");
  out << "cellserve_generation_tokens_per_second "
      << (decode_seconds_ > 0 ? static_cast<double>(decode_tokens_) / decode_seconds_ : 0.0) << '\n';
  header("queue_length", "gauge", "Requests waiting for a slot.");
  out << "cellserve_queue_length " << queue_length_.load() << '\n';
  header("busy_slots", "gauge", "Slots generating or reading a prompt.");
  out << "cellserve_busy_slots " << busy_slots_.load() << '\n';
  header("slots", "gauge", "Slots (parallel sequences).");
  out << "cellserve_slots " << slots_.load() << '\n';
  header("time_to_first_token_seconds", "histogram", "Time from a request's arrival to its first generated token.");
  for (size_t i = 0; i < kTtftBuckets.size(); ++i) {
    out << "cellserve_time_to_first_token_seconds_bucket{le=\"" << kTtftBuckets[i] << "\"} " << ttft_counts_[i] << '\n';
  }
  out << "cellserve_time_to_first_token_seconds_bucket{le=\"+Inf\"} " << ttft_count_ << '\n';
  out << "cellserve_time_to_first_token_seconds_sum " << ttft_sum_ << '\n';
  out << "cellserve_time_to_first_token_seconds_count " << ttft_count_ << '\n';
  // The process's memory, read now (docs/server.md compares the peak with the start-up estimate).
  const auto memory = [&](const char* name, const char* field, const char* help) {
    const std::optional<uint64_t> bytes = read_own_status_bytes(field);
    if (!bytes) return;
    header(name, "gauge", help);
    out << "cellserve_" << name << ' ' << *bytes << '\n';
  };
  memory("resident_memory_bytes", "VmRSS", "Resident memory of the process.");
  memory("peak_resident_memory_bytes", "VmHWM", "Largest resident memory of the process since it started.");
  memory("locked_memory_bytes", "VmLck", "Memory locked in RAM (--mlock).");
  return out.str();
}

}  // namespace cellserve::server
