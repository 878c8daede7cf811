#include "cli/bench_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <numeric>

#include <boost/json.hpp>

namespace cellserve::cli {
namespace {

namespace json = boost::json;

std::vector<double> to_doubles(const std::vector<int64_t>& v) { return {v.begin(), v.end()}; }

// llama-bench's md spellings: "358.78 MiB" / "1.23 GiB", "596.05 M" / "7.62 B".
std::string size_text(uint64_t bytes) {
  char buf[32];
  const double b = static_cast<double>(bytes);
  if (b < 1024.0 * 1024 * 1024)
    std::snprintf(buf, sizeof buf, "%.2f MiB", b / (1024.0 * 1024));
  else
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1024.0 * 1024 * 1024));
  return buf;
}

std::string params_text(uint64_t n) {
  char buf[32];
  const double v = static_cast<double>(n);
  if (v < 1e9)
    std::snprintf(buf, sizeof buf, "%.2f M", v / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.2f B", v / 1e9);
  return buf;
}

std::string ts_text(const BenchRow& r) {
  const auto ts = r.samples_ts();
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f ± %.2f", mean(ts), stddev(ts));
  return buf;
}

// "412.30 ± 3.10 (best 415.00)".
std::string spread_text(const std::vector<double>& v) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.2f ± %.2f (best %.2f)", mean(v), stddev(v),
                v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()));
  return buf;
}

std::string gbs_text(const BandwidthRow& r) {
  const auto gbs = r.samples_gbs();
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.2f ± %.2f (best %.2f)", mean(gbs), stddev(gbs),
                gbs.empty() ? 0.0 : *std::max_element(gbs.begin(), gbs.end()));
  return buf;
}

class MarkdownPrinter : public BenchPrinter {
 public:
  void bandwidth(const BandwidthRow& r) override {
    if (!bw_header_done_) {
      std::printf("| %-12s | %7s | %10s | %30s |\n", "isa", "threads", "buffer", "read GB/s");
      std::printf("| %s | %s: | %s: | %s: |\n", std::string(12, '-').c_str(), std::string(6, '-').c_str(),
                  std::string(9, '-').c_str(), std::string(29, '-').c_str());
      bw_header_done_ = true;
    }
    std::printf("| %-12s | %7d | %10s | %31s |\n", r.isa.c_str(), r.threads, size_text(r.bytes).c_str(),
                gbs_text(r).c_str());
    std::fflush(stdout);
  }
  void peak(const PeakRow& r) override {
    if (bw_header_done_ && !peak_header_done_) std::printf("\n");
    if (!peak_header_done_) {
      std::printf("| %-12s | %7s | %5s | %30s |\n", "isa", "threads", "dot", "peak GMAC/s");
      std::printf("| %s | %s: | %s | %s: |\n", std::string(12, '-').c_str(), std::string(6, '-').c_str(),
                  std::string(5, '-').c_str(), std::string(29, '-').c_str());
      peak_header_done_ = true;
    }
    std::printf("| %-12s | %7d | %5s | %31s |\n", r.isa.c_str(), r.threads, r.kind.c_str(),
                spread_text(r.samples_gmacs).c_str());
    std::fflush(stdout);
  }
  void row(const BenchRow& r) override {
    if ((bw_header_done_ || peak_header_done_) && !header_done_) std::printf("\n");
    if (!header_done_) {
      std::printf("| %-24s | %-8s | %10s | %10s | %-12s | %7s | %12s | %20s |\n", "model", "type", "size", "params",
                  "isa", "threads", "test", "t/s");
      std::printf("| %s | %s | %s: | %s: | %s | %s: | %s: | %s: |\n", std::string(24, '-').c_str(),
                  std::string(8, '-').c_str(), std::string(9, '-').c_str(), std::string(9, '-').c_str(),
                  std::string(12, '-').c_str(), std::string(6, '-').c_str(), std::string(11, '-').c_str(),
                  std::string(19, '-').c_str());
      header_done_ = true;
    }
    // "±" is two bytes in UTF-8 but one column: pad by one more so the bars line up.
    std::printf("| %-24s | %-8s | %10s | %10s | %-12s | %7d | %12s | %21s |", r.model.c_str(), r.file_type.c_str(),
                size_text(r.model_size).c_str(), params_text(r.model_n_params).c_str(), r.isa.c_str(), r.threads,
                r.test().c_str(), ts_text(r).c_str());
    // The roofline share after the table's last bar, so the columns stay llama-bench's.
    if (const double f = r.roofline_fraction(); f > 0) {
      std::printf(" %.0f %% of the weights' read bandwidth (%.1f GB/s)", 100 * f, r.bandwidth_gbs());
    }
    if (const double f = r.peak_share(); f > 0) {
      std::printf(" %.0f %% of the %s dot peak (%.0f GMAC/s)", 100 * f, r.peak_kind.c_str(), r.peak_gmacs);
    }
    std::printf("\n");
    std::fflush(stdout);
  }

 private:
  bool header_done_ = false;
  bool bw_header_done_ = false;
  bool peak_header_done_ = false;
};

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// One header for both kinds of row: a bandwidth row is test "read_bandwidth" with GB/s in
// avg_ts / stddev_ts and its buffer size in model_size.
class CsvPrinter : public BenchPrinter {
 public:
  void bandwidth(const BandwidthRow& r) override {
    header();
    const auto gbs = r.samples_gbs();
    std::printf(",,%llu,0,%s,%d,0,,0,0,read_bandwidth,%.6f,%.6f,0,0,0,0\n", static_cast<unsigned long long>(r.bytes),
                csv_field(r.isa).c_str(), r.threads, mean(gbs), stddev(gbs));
    std::fflush(stdout);
  }
  // A peak row is test "int8_peak" or "bf16_peak" with GMAC/s in avg_ts / stddev_ts.
  void peak(const PeakRow& r) override {
    header();
    std::printf(",,0,0,%s,%d,0,,0,0,%s_peak,%.6f,%.6f,0,0,0,0\n", csv_field(r.isa).c_str(), r.threads,
                csv_field(r.kind).c_str(), mean(r.samples_gmacs), stddev(r.samples_gmacs));
    std::fflush(stdout);
  }
  void row(const BenchRow& r) override {
    header();
    const auto ts = r.samples_ts();
    std::printf("%s,%s,%llu,%llu,%s,%d,%lld,%s,%lld,%lld,%s,%.6f,%.6f,%llu,%.6f,%lld,%.6f\n",
                csv_field(r.model).c_str(), csv_field(r.file_type).c_str(),
                static_cast<unsigned long long>(r.model_size), static_cast<unsigned long long>(r.model_n_params),
                csv_field(r.isa).c_str(), r.threads, static_cast<long long>(r.n_batch), csv_field(r.kv_type).c_str(),
                static_cast<long long>(r.n_prompt), static_cast<long long>(r.n_gen), r.test().c_str(), mean(ts),
                stddev(ts), static_cast<unsigned long long>(r.peak_rss_bytes), r.roofline_fraction(),
                static_cast<long long>(r.n_depth), r.peak_share());
    std::fflush(stdout);
  }

 private:
  void header() {
    if (header_done_) return;
    std::printf(
        "model,file_type,model_size,model_n_params,isa,threads,n_batch,kv_type,n_prompt,n_gen,test,avg_ts,stddev_ts,"
        "peak_rss_bytes,roofline_fraction,n_depth,peak_share\n");
    header_done_ = true;
  }
  bool header_done_ = false;
};

// Collects the rows and prints them at the end, so a failure part-way never leaves half a list.
class JsonPrinter : public BenchPrinter {
 public:
  void bandwidth(const BandwidthRow& r) override {
    const auto gbs = r.samples_gbs();
    json::array samples_ns, samples_gbs;
    for (int64_t v : r.samples_ns) samples_ns.push_back(v);
    for (double v : gbs) samples_gbs.push_back(v);
    rows_.push_back(json::object{{"test", "read_bandwidth"},
                                 {"isa", r.isa},
                                 {"threads", r.threads},
                                 {"n_threads", r.threads},
                                 {"bytes", r.bytes},
                                 {"avg_gbs", mean(gbs)},
                                 {"stddev_gbs", stddev(gbs)},
                                 {"best_gbs", gbs.empty() ? 0.0 : *std::max_element(gbs.begin(), gbs.end())},
                                 {"samples_ns", samples_ns},
                                 {"samples_gbs", samples_gbs}});
  }
  void peak(const PeakRow& r) override {
    const std::vector<double>& g = r.samples_gmacs;
    rows_.push_back(json::object{{"test", r.kind + "_peak"},
                                 {"isa", r.isa},
                                 {"threads", r.threads},
                                 {"n_threads", r.threads},
                                 {"avg_gmacs", mean(g)},
                                 {"stddev_gmacs", stddev(g)},
                                 {"best_gmacs", g.empty() ? 0.0 : *std::max_element(g.begin(), g.end())},
                                 {"samples_gmacs", json::value_from(g)}});
  }
  void row(const BenchRow& r) override {
    const auto ts = r.samples_ts();
    const auto ns = to_doubles(r.samples_ns);
    json::array samples_ns, samples_ts;
    for (int64_t v : r.samples_ns) samples_ns.push_back(v);
    for (double v : ts) samples_ts.push_back(v);
    rows_.push_back(json::object{
        {"model_filename", r.model_filename},
        {"model", r.model},
        {"model_type", r.model + " " + r.file_type},  // llama-bench's model_type: "qwen3 0.6B Q4_0"
        {"file_type", r.file_type},
        {"model_size", r.model_size},
        {"model_n_params", r.model_n_params},
        {"isa", r.isa},
        {"n_batch", r.n_batch},
        {"threads", r.threads},
        {"n_threads", r.threads},
        {"type_k", r.kv_type},
        {"type_v", r.kv_type},
        {"n_prompt", r.n_prompt},
        {"n_gen", r.n_gen},
        {"n_depth", r.n_depth},
        {"test", r.test()},
        {"avg_ns", static_cast<int64_t>(std::llround(mean(ns)))},
        {"stddev_ns", static_cast<int64_t>(std::llround(stddev(ns)))},
        {"avg_ts", mean(ts)},
        {"stddev_ts", stddev(ts)},
        {"samples_ns", samples_ns},
        {"samples_ts", samples_ts},
        {"peak_rss_bytes", r.peak_rss_bytes},
    });
    if (r.bandwidth_gbs() > 0 && r.n_gen > 0) {
      rows_.back()["bytes_per_token"] = r.bytes_per_token;
      rows_.back()["bandwidth_gbs"] = r.bandwidth_gbs();
      rows_.back()["bandwidth_samples_gbs"] = json::value_from(r.bandwidth_samples_gbs);
      rows_.back()["roofline_fraction"] = r.roofline_fraction();
    }
    if (r.peak_share() > 0) {
      rows_.back()["macs_per_token"] = r.macs_per_token;
      rows_.back()["peak_kind"] = r.peak_kind;
      rows_.back()["peak_gmacs"] = r.peak_gmacs;
      rows_.back()["peak_share"] = r.peak_share();
    }
  }
  void finish() override {
    std::cout << "[\n";
    for (size_t i = 0; i < rows_.size(); ++i) {
      std::cout << "  " << json::serialize(rows_[i]) << (i + 1 < rows_.size() ? ",\n" : "\n");
    }
    std::cout << "]\n" << std::flush;
  }

 private:
  std::vector<json::object> rows_;
};

}  // namespace

std::string BenchRow::test() const {
  const std::string name = n_gen == 0 ? "pp" + std::to_string(n_prompt) : "tg" + std::to_string(n_gen);
  return n_depth > 0 ? name + " @ d" + std::to_string(n_depth) : name;
}

std::vector<double> BenchRow::samples_ts() const {
  const double tokens = static_cast<double>(n_prompt + n_gen);
  std::vector<double> ts;
  for (int64_t ns : samples_ns) ts.push_back(1e9 * tokens / static_cast<double>(std::max<int64_t>(ns, 1)));
  return ts;
}

double BenchRow::bandwidth_gbs() const { return mean(bandwidth_samples_gbs); }

double BenchRow::peak_share() const {
  if (n_prompt == 0 || n_gen != 0 || macs_per_token <= 0 || peak_gmacs <= 0) return 0;
  return mean(samples_ts()) * macs_per_token / (peak_gmacs * 1e9);
}

// Paired repetition by repetition because on a shared VM the read rate moves by 1.5x within a
// minute: set against one reading before the test, the same decode gave 65 to 104 %.
double BenchRow::roofline_fraction() const {
  const std::vector<double> ts = samples_ts();
  if (n_gen == 0 || n_prompt != 0 || bytes_per_token == 0 || bandwidth_samples_gbs.size() != ts.size() + 1) return 0;
  std::vector<double> shares;
  for (size_t r = 0; r < ts.size(); ++r) {
    const double around = (bandwidth_samples_gbs[r] + bandwidth_samples_gbs[r + 1]) / 2;
    if (around <= 0) return 0;
    shares.push_back(ts[r] * static_cast<double>(bytes_per_token) / (around * 1e9));
  }
  return mean(shares);
}

std::vector<double> BandwidthRow::samples_gbs() const {
  std::vector<double> gbs;
  for (int64_t ns : samples_ns)
    gbs.push_back(static_cast<double>(bytes) / static_cast<double>(std::max<int64_t>(ns, 1)));
  return gbs;
}

double mean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double stddev(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = mean(v);
  double sq = 0;
  for (double x : v) sq += (x - m) * (x - m);
  return std::sqrt(sq / static_cast<double>(v.size() - 1));
}

std::unique_ptr<BenchPrinter> make_bench_printer(const std::string& format) {
  if (format == "md") return std::make_unique<MarkdownPrinter>();
  if (format == "json") return std::make_unique<JsonPrinter>();
  if (format == "csv") return std::make_unique<CsvPrinter>();
  return nullptr;
}

}  // namespace cellserve::cli
