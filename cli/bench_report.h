// Result rows of `cellserve bench` and their three output formats (md, json, csv). Field names
// follow llama-bench's, so results of the two tools can be compared line by line.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cellserve::cli {

// One measured test: pp<n_prompt> (n_gen == 0) or tg<n_gen> (n_prompt == 0), at depth n_depth
// ("pp512 @ d6000", as llama-bench names it).
struct BenchRow {
  std::string model;      // architecture + size label: "qwen3 0.6B"
  std::string file_type;  // "Q4_0", "Q4_K_M", ...
  std::string model_filename;
  uint64_t model_size = 0;  // bytes of the file
  uint64_t model_n_params = 0;
  std::string isa;  // the kernel table that ran
  int threads = 0;
  int64_t n_batch = 0;
  std::string kv_type;
  int64_t n_prompt = 0;
  int64_t n_gen = 0;
  int64_t n_depth = 0;              // tokens already in the KV cache when the test starts (-d)
  std::vector<int64_t> samples_ns;  // one per repetition
  uint64_t peak_rss_bytes = 0;      // process peak RSS after the test
  // With --bandwidth, for tg rows: the weight bytes a decode step streams (bytes_per_token), and
  // the read bandwidth of the model's weight pages at this thread count (GB/s, the best of a few
  // reads), measured before each repetition and after the last (one more than samples_ns).
  uint64_t bytes_per_token = 0;
  std::vector<double> bandwidth_samples_gbs;
  // With --peak, for pp rows: the multiply-adds the model does per prompt token (its projections,
  // and attention over the cells before the token), and the kernel table's peak for the weights'
  // kind ("int8" for quantized weights, "bf16" for F32/F16/BF16), in GMAC/s at this thread count.
  double macs_per_token = 0;
  std::string peak_kind;
  double peak_gmacs = 0;

  std::string test() const;
  std::vector<double> samples_ts() const;  // tokens per second of each repetition
  double bandwidth_gbs() const;            // the mean of bandwidth_samples_gbs; 0 when not measured
  // The share of the read roofline a tg test reached: per repetition, its t/s × bytes_per_token
  // over the mean of the readings just before and just after it, then the mean of those. 0 for a
  // pp test or when not measured.
  double roofline_fraction() const;
  // A pp test's share of the dot-product peak: t/s × macs_per_token over peak_gmacs. 0 when not
  // measured.
  double peak_share() const;
};

// One --peak measurement: the table's `kind` dot-product loop ("int8" or "bf16") on `threads`
// threads, in billions of multiply-adds per second, one sample per repetition.
struct PeakRow {
  std::string isa;
  std::string kind;
  int threads = 0;
  std::vector<double> samples_gmacs;
};

// One --bandwidth measurement: `threads` threads reading `bytes` per run.
struct BandwidthRow {
  std::string isa;
  int threads = 0;
  uint64_t bytes = 0;
  std::vector<int64_t> samples_ns;  // one per repetition
  std::vector<double> samples_gbs() const;
};

// Mean and sample standard deviation (n - 1; 0 for fewer than two values), as llama-bench.
double mean(const std::vector<double>& v);
double stddev(const std::vector<double>& v);

// Writes rows to stdout as they come; finish() closes the output.
class BenchPrinter {
 public:
  virtual ~BenchPrinter() = default;
  virtual void row(const BenchRow& r) = 0;
  // Printed before the model's rows.
  virtual void bandwidth(const BandwidthRow& r) = 0;
  // Printed before the model's rows, after the bandwidth rows.
  virtual void peak(const PeakRow& r) = 0;
  virtual void finish() {}
};

// "md", "json" or "csv"; nullptr for anything else.
std::unique_ptr<BenchPrinter> make_bench_printer(const std::string& format);

}  // namespace cellserve::cli
