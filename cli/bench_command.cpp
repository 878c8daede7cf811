// `cellserve bench -m FILE [-p 512] [-n 128] [-d 0,...] [-t T,...] [-r 5] [-b 512] [--kv-type f16]
// [--isa NAME] [--output md|json|csv] [--bandwidth]`: prompt-processing and generation speed, measured the
// way llama-bench measures them so the figures compare one to one (see docs/bench.md):
//   pp<p>: p random prompt tokens decoded as one batch (split into forward passes of -b tokens)
//          from an empty context, logits for the last token only;
//   tg<n>: n random tokens decoded one at a time from an empty context, no sampling.
//   -d N:  either test after N random tokens already in the KV cache, decoded before the clock
//          starts ("pp512 @ d6000").
// Each test runs once as a warm-up, then -r times; t/s is the mean ± sample stddev of the runs.
// --peak first measures the kernel table's int8 and BF16 dot-product peaks at each thread count
// (engine/kernels/dot_peak.h); each pp row then says what share of the peak for its weights it
// reached (the model's multiply-adds per token × t/s over the peak).
// --bandwidth first measures the memory read bandwidth at each thread count
// (engine/runtime/read_bandwidth.h); each tg row then says what share it reached of the read
// bandwidth of the model's own weight pages, measured around each of its repetitions.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <thread>
#include <tuple>

#include "cli/bench_report.h"
#include "cli/commands.h"
#include "cli/model_options.h"
#include "engine/gguf/file_type.h"
#include "engine/kernels/kernel_table.h"
#include "engine/models/model.h"
#include "engine/runtime/cpu_topology.h"
#include "engine/runtime/kv_type.h"
#include "engine/runtime/read_bandwidth.h"

namespace cellserve::cli {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kMaxTokens = int64_t{1} << 20;  // per -p / -n value
constexpr int64_t kCtxAlign = 256;                // the context is rounded up to this many cells

struct BenchOptions {
  std::string model_path;
  std::string prompts = "512";
  std::string gens = "128";
  std::string depths = "0";  // -d: tokens in the KV cache before each test
  std::string threads;       // empty: engine::default_thread_count()
  std::string reps = "5";
  std::string batch = "512";
  std::string kv_type = std::string(engine::kDefaultKvType);
  std::string isa;
  std::string output = "md";
  std::vector<std::string> lora;  // adapters applied to the benchmarked sequence
  bool bandwidth = false;         // measure the read bandwidth per thread count first
  bool peak = false;              // measure the kernel table's dot-product peaks per thread count first
  std::string bandwidth_mib = "1024";
  std::string cpus;  // --cpus; empty: the performance cores
};

// Parses "512,7000" (spaces allowed) into integers in [lo, hi]; errors name the option.
Result<std::vector<int64_t>> parse_list(const std::string& text, const std::string& option, int64_t lo, int64_t hi) {
  std::vector<int64_t> values;
  size_t i = 0;
  while (i <= text.size()) {
    const size_t j = std::min(text.find(',', i), text.size());
    std::string item = text.substr(i, j - i);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    int64_t v = 0;
    const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size()) {
      return Status::invalid_argument(option + " '" + text + "': expected integers separated by commas");
    }
    if (v < lo || v > hi) {
      return Status::invalid_argument(option + " " + std::to_string(v) + " is out of range [" + std::to_string(lo) +
                                      ", " + std::to_string(hi) + "]");
    }
    values.push_back(v);
    i = j + 1;
  }
  return values;
}

Result<int64_t> parse_one(const std::string& text, const std::string& option, int64_t lo, int64_t hi) {
  CS_ASSIGN_OR_RETURN(auto values, parse_list(text, option, lo, hi));
  if (values.size() != 1) return Status::invalid_argument(option + " takes one value, got '" + text + "'");
  return values[0];
}

// "0.6B", "8B", "1.8M", "292K" (about two significant digits), the way model cards name sizes
// when the file has no general.size_label.
std::string size_label_from_params(uint64_t n) {
  const double v = static_cast<double>(n);
  const auto [scale, suffix] = v >= 1e11  ? std::pair{1e12, "T"}
                               : v >= 1e8 ? std::pair{1e9, "B"}
                               : v >= 1e6 ? std::pair{1e6, "M"}
                                          : std::pair{1e3, "K"};
  const double x = v / scale;
  char buf[32];
  std::snprintf(buf, sizeof buf, x < 1 ? "%.2f" : x < 10 ? "%.1f" : "%.0f", x);
  std::string s = buf;
  if (s.find('.') != std::string::npos) {
    s.erase(s.find_last_not_of('0') + 1);
    if (s.back() == '.') s.pop_back();
  }
  return s + suffix;
}

// What the rows say about the model: its name, file type, size and parameter count.
struct ModelFacts {
  std::string model;
  std::string file_type;
  uint64_t file_size = 0;
  uint64_t n_params = 0;
  int32_t bos = -1;  // the first prompt token when the model adds BOS (as llama-bench), else -1
};

ModelFacts describe(const engine::Model& m) {
  const engine::GgufFile& f = m.file();
  ModelFacts facts;
  facts.file_size = f.file_size();
  std::map<engine::GgmlType, uint64_t> bytes_by_type;
  for (const auto& t : f.tensors()) {
    facts.n_params += static_cast<uint64_t>(t.shape.elements());
    bytes_by_type[t.type] += t.size_bytes;
  }
  const std::string label = f.get_string("general.size_label").value_or(size_label_from_params(facts.n_params));
  facts.model = m.info().architecture + " " + label;

  std::optional<std::string_view> ftype;
  if (auto v = f.get_int("general.file_type"); v && *v >= 0) ftype = engine::file_type_name(static_cast<uint32_t>(*v));
  if (ftype) {
    std::string name(*ftype);
    for (const std::string prefix : {"MOSTLY_", "ALL_"}) {
      if (name.rfind(prefix, 0) == 0) name.erase(0, prefix.size());
    }
    facts.file_type = name;
  } else {
    // No general.file_type: name the type holding the most bytes.
    const auto top = std::max_element(bytes_by_type.begin(), bytes_by_type.end(),
                                      [](const auto& a, const auto& b) { return a.second < b.second; });
    facts.file_type = top == bytes_by_type.end() ? "unknown" : std::string(engine::ggml_type_name(top->first));
    for (char& c : facts.file_type) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }

  const auto bos = f.get_int("tokenizer.ggml.bos_token_id");
  if (f.get_bool("tokenizer.ggml.add_bos_token").value_or(false) && bos && *bos >= 0 && *bos < m.info().n_vocab) {
    facts.bos = static_cast<int32_t>(*bos);
  }
  return facts;
}

// The bytes a decode step streams: every weight once, except the token embedding, of which it
// gathers one row (unless the output projection reuses it: then it is read whole).
uint64_t decode_bytes_per_token(const engine::GgufFile& f) {
  uint64_t total = 0, embedding = 0;
  bool separate_output = false;
  for (const auto& t : f.tensors()) {
    total += t.size_bytes;
    if (t.name == "token_embd.weight") embedding = t.size_bytes;
    if (t.name == "output.weight") separate_output = true;
  }
  return separate_output ? total - embedding : total;
}

// The read bandwidth of a fresh buffer at each thread count, printed as it is measured.
Status measure_bandwidth(const std::vector<int64_t>& threads, int64_t mib, int64_t reps, BenchPrinter& printer) {
  const double ram = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
  const double bytes = static_cast<double>(mib) * (1 << 20);
  if (ram > 0 && bytes > ram / 4) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "--bandwidth-mib %lld is more than a quarter of this machine's %.1f GiB",
                  static_cast<long long>(mib), ram / (1 << 30));
    return Status::invalid_argument(buf);
  }
  for (const int64_t t : threads) {
    engine::ReadBandwidthOptions bo;
    bo.bytes = static_cast<size_t>(bytes);
    bo.threads = static_cast<int>(t);
    bo.repetitions = static_cast<int>(reps);
    CS_ASSIGN_OR_RETURN(const engine::ReadBandwidth measured, engine::measure_read_bandwidth(bo));
    BandwidthRow row;
    row.isa = std::string(engine::kernels::active_kernels().isa);
    row.threads = static_cast<int>(t);
    row.bytes = measured.bytes;
    row.samples_ns = measured.samples_ns;
    printer.bandwidth(row);
  }
  return {};
}

// The kernel table's `kind` dot-product peak (engine/kernels/dot_peak.h) on `threads` threads, in
// GMAC/s, one sample per repetition: each thread runs the loop for about 0.2 s (the count calibrated
// on one thread first), and a sample is all their multiply-adds over the time until the last ended.
std::vector<double> measure_dot_peak(engine::kernels::DotPeakFn loop, int threads, int reps) {
  int64_t sink = 0;
  uint64_t iterations = 1 << 12;
  for (;;) {  // calibrate: about 50 ms on one thread, then four times that
    const auto start = Clock::now();
    loop(iterations, &sink);
    if (Clock::now() - start >= std::chrono::milliseconds(50) || iterations >= (uint64_t{1} << 40)) break;
    iterations *= 2;
  }
  iterations *= 4;
  std::vector<double> samples;
  for (int r = 0; r < reps; ++r) {
    std::vector<uint64_t> macs(static_cast<size_t>(threads));
    std::vector<int64_t> sinks(static_cast<size_t>(threads));
    std::vector<std::thread> workers;
    const auto start = Clock::now();
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] { macs[static_cast<size_t>(t)] = loop(iterations, &sinks[static_cast<size_t>(t)]); });
    }
    for (std::thread& w : workers) w.join();
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    double total = 0;
    for (const uint64_t m : macs) total += static_cast<double>(m);
    samples.push_back(total / seconds / 1e9);
  }
  return samples;
}

// Which dot-product peak bounds a model's prefill: int8 for quantized weights (their activations
// are quantized to 8 bits too), BF16 for float weights (F32 FMA on tables without a BF16 dot).
std::string peak_kind_of(const std::string& file_type) {
  return file_type == "F32" || file_type == "F16" || file_type == "BF16" ? "bf16" : "int8";
}

// The multiply-adds per prompt token of a pp test of `n_prompt` tokens at depth `n_depth`: every
// projection weight once (not the embedding lookup, nor the output projection, which a pp test
// runs for its last token only), and attention's scores and values over the cells before the
// token (on average depth + (n_prompt + 1) / 2). Recurrent layers' state updates (qwen35's
// DeltaNet, a few percent) are not counted.
double macs_per_prompt_token(const engine::Model& m, int64_t n_prompt, int64_t n_depth) {
  double weights = 0;
  for (const auto& t : m.file().tensors()) {
    if (t.name != "output.weight" && m.multiplies_with(t.name)) weights += static_cast<double>(t.shape.elements());
  }
  const engine::KvCacheShape& kv = m.info().kv_shape;
  const double heads =
      static_cast<double>(m.file().get_int(m.info().architecture + ".attention.head_count").value_or(0));
  const double cells = static_cast<double>(n_depth) + static_cast<double>(n_prompt + 1) / 2;
  return weights + static_cast<double>(kv.n_layer) * heads * static_cast<double>(kv.head_dim_k + kv.head_dim_v) * cells;
}

// The table's peaks (GMAC/s) by dot kind ("int8", "bf16") and thread count, each printed as
// measured.
using PeakByKind = std::map<std::pair<std::string, int64_t>, double>;
PeakByKind measure_peaks(const std::vector<int64_t>& threads, int reps, BenchPrinter& printer) {
  const engine::kernels::KernelTable& table = engine::kernels::active_kernels();
  PeakByKind peaks;
  for (const int64_t t : threads) {
    for (const auto& [kind, loop] : {std::pair{"int8", table.int8_dot_peak}, std::pair{"bf16", table.bf16_dot_peak}}) {
      PeakRow row{std::string(table.isa), kind, static_cast<int>(t), measure_dot_peak(loop, static_cast<int>(t), reps)};
      peaks[{kind, t}] = mean(row.samples_gmacs);
      printer.peak(row);
    }
  }
  return peaks;
}

uint64_t peak_rss_bytes() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

// Refuses a context whose KV cache could not fit in this machine's memory (it is allocated and
// zeroed up front, so an absurd -p / -n would otherwise end in the OOM killer).
Status check_kv_fits(const engine::ModelInfo& info, int64_t n_ctx, engine::GgmlType kv_type) {
  const auto& s = info.kv_shape;
  if (s.head_dim_k % engine::ggml_block_size(kv_type) != 0 || s.head_dim_v % engine::ggml_block_size(kv_type) != 0) {
    return {};  // Context::create reports the incompatible type
  }
  const double bytes =
      static_cast<double>(s.n_layer) * static_cast<double>(n_ctx) * static_cast<double>(s.n_kv_head) *
      static_cast<double>(engine::ggml_row_size(kv_type, s.head_dim_k) + engine::ggml_row_size(kv_type, s.head_dim_v));
  const double ram = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
  if (ram > 0 && bytes > ram) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "a %lld-token context needs %.1f GiB of KV cache, more than this machine's %.1f GiB",
                  static_cast<long long>(n_ctx), bytes / (1 << 30), ram / (1 << 30));
    return Status::invalid_argument(buf);
  }
  return {};
}

// Decodes `n` random tokens at positions from..from+n-1 as one batch (split into forward passes
// by the context), logits for the last only; the first is BOS when the model adds it and the
// batch starts the sequence.
Status decode_random(engine::Context& ctx, int64_t from, int64_t n, int32_t bos, std::mt19937& rng) {
  std::uniform_int_distribution<int32_t> random_token(0, static_cast<int32_t>(ctx.model().info().n_vocab - 1));
  engine::Batch batch;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t token = from + i == 0 && bos >= 0 ? bos : random_token(rng);
    batch.add(token, static_cast<int32_t>(from + i), 0, i + 1 == n);
  }
  return ctx.decode(batch);
}

// Runs one test once, after `n_depth` tokens (already decoded), with llama-bench's token
// choices: random ids, the first one BOS when the model adds it.
Status run_once(engine::Context& ctx, int64_t n_depth, int64_t n_prompt, int64_t n_gen, int32_t bos,
                std::mt19937& rng) {
  std::uniform_int_distribution<int32_t> random_token(0, static_cast<int32_t>(ctx.model().info().n_vocab - 1));
  if (n_prompt > 0) CS_RETURN_IF_ERROR(decode_random(ctx, n_depth, n_prompt, bos, rng));
  int32_t token = bos >= 0 && n_depth + n_prompt == 0 ? bos : random_token(rng);
  engine::Batch batch;
  for (int64_t i = 0; i < n_gen; ++i) {
    batch.clear();
    batch.add(token, static_cast<int32_t>(n_depth + n_prompt + i), 0, true);
    CS_RETURN_IF_ERROR(ctx.decode(batch));
    token = random_token(rng);
  }
  return {};
}

// An empty context, then the test's depth: `n_depth` tokens decoded before the clock starts (as
// llama-bench's -d).
Status start_at_depth(engine::Context& ctx, int64_t n_depth, int32_t bos, std::mt19937& rng) {
  CS_RETURN_IF_ERROR(ctx.seq_rm(-1));
  if (n_depth > 0) CS_RETURN_IF_ERROR(decode_random(ctx, 0, n_depth, bos, rng));
  return {};
}

// read_rate, when set, is the --bandwidth reading (GB/s): taken before each repetition and after
// the last, so each one's share is judged against the memory as it was while it ran.
Status run_test(engine::Context& ctx, int reps, int32_t bos, const std::function<Result<double>()>& read_rate,
                BenchRow* row) {
  std::mt19937 rng(1234);
  CS_RETURN_IF_ERROR(start_at_depth(ctx, row->n_depth, bos, rng));
  CS_RETURN_IF_ERROR(run_once(ctx, row->n_depth, row->n_prompt, row->n_gen, bos, rng));  // warm-up, not measured
  const auto read_bandwidth = [&]() -> Status {
    if (!read_rate) return {};
    CS_ASSIGN_OR_RETURN(const double gbs, read_rate());
    row->bandwidth_samples_gbs.push_back(gbs);
    return {};
  };
  for (int r = 0; r < reps; ++r) {
    CS_RETURN_IF_ERROR(start_at_depth(ctx, row->n_depth, bos, rng));
    CS_RETURN_IF_ERROR(read_bandwidth());
    const auto start = Clock::now();
    CS_RETURN_IF_ERROR(run_once(ctx, row->n_depth, row->n_prompt, row->n_gen, bos, rng));
    row->samples_ns.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count());
  }
  CS_RETURN_IF_ERROR(read_bandwidth());
  row->peak_rss_bytes = peak_rss_bytes();
  return {};
}

// Selects the kernel table before anything resolves it (active_kernels() is chosen once).
Status select_isa(const std::string& isa) {
  if (isa.empty()) return {};
  CS_ASSIGN_OR_RETURN(const engine::kernels::KernelTable* table, engine::kernels::kernels_for_isa(isa));
  ::setenv("CELLSERVE_ISA", std::string(table->isa).c_str(), 1);
  if (engine::kernels::active_kernels().isa != table->isa) {
    return Status::internal("--isa " + isa + ": the kernel table was already chosen (" +
                            std::string(engine::kernels::active_kernels().isa) + ")");
  }
  return {};
}

Status run_bench(const BenchOptions& o) {
  if (o.model_path.empty() && !o.bandwidth && !o.peak) return Status::invalid_argument("-m/--model is required");
  auto printer = make_bench_printer(o.output);
  if (!printer) return Status::invalid_argument("--output " + o.output + ": expected md, json or csv");
  CS_ASSIGN_OR_RETURN(const auto prompts, parse_list(o.prompts, "-p", 0, kMaxTokens));
  CS_ASSIGN_OR_RETURN(const auto gens, parse_list(o.gens, "-n", 0, kMaxTokens));
  CS_ASSIGN_OR_RETURN(const auto depths, parse_list(o.depths, "-d", 0, kMaxTokens));
  const std::string threads_text = o.threads.empty() ? std::to_string(engine::default_thread_count()) : o.threads;
  CS_ASSIGN_OR_RETURN(const auto threads, parse_list(threads_text, "-t", 1, 1024));
  CS_ASSIGN_OR_RETURN(const int64_t reps, parse_one(o.reps, "-r", 1, 1000));
  CS_ASSIGN_OR_RETURN(const int64_t n_batch, parse_one(o.batch, "-b", 1, kMaxTokens));
  CS_ASSIGN_OR_RETURN(const engine::GgmlType kv_type, engine::parse_kv_type(o.kv_type));
  const int64_t max_p = *std::max_element(prompts.begin(), prompts.end());
  const int64_t max_n = *std::max_element(gens.begin(), gens.end());
  if (max_p == 0 && max_n == 0) return Status::invalid_argument("nothing to run: -p and -n are both 0");
  CS_RETURN_IF_ERROR(select_isa(o.isa));
  CS_ASSIGN_OR_RETURN(const int64_t bandwidth_mib, parse_one(o.bandwidth_mib, "--bandwidth-mib", 1, int64_t{1} << 20));
  if (o.bandwidth) CS_RETURN_IF_ERROR(measure_bandwidth(threads, bandwidth_mib, reps, *printer));
  // The dot-product peaks, by kind and thread count, for the pp rows' shares.
  const PeakByKind peaks = o.peak ? measure_peaks(threads, static_cast<int>(reps), *printer) : PeakByKind{};
  if (o.model_path.empty()) {
    printer->finish();
    return {};
  }

  CS_ASSIGN_OR_RETURN(const std::shared_ptr<const engine::Model> model, engine::load_model(o.model_path));
  const ModelFacts facts = describe(*model);
  CS_ASSIGN_OR_RETURN(engine::LoraSet adapters, engine::load_lora_set(o.lora, *model));
  const auto lora_set = std::make_shared<const engine::LoraSet>(std::move(adapters));
  const int64_t max_d = *std::max_element(depths.begin(), depths.end());
  const int64_t n_ctx = (max_d + max_p + max_n + kCtxAlign - 1) / kCtxAlign * kCtxAlign;
  CS_RETURN_IF_ERROR(check_kv_fits(model->info(), n_ctx, kv_type));

  BenchRow base;
  base.model = facts.model;
  for (const engine::ScaledLora& l : *lora_set) base.model += " + LoRA " + l.adapter->name();
  base.file_type = facts.file_type;
  base.model_filename = o.model_path;
  base.model_size = facts.file_size;
  base.model_n_params = facts.n_params;
  base.isa = std::string(engine::kernels::active_kernels().isa);
  base.n_batch = n_batch;
  base.kv_type = std::string(engine::ggml_type_name(kv_type));
  for (const int64_t t : threads) {
    engine::ContextParams params;
    params.n_ctx = n_ctx;
    params.n_batch = n_batch;
    params.n_threads = static_cast<int>(t);
    params.n_seq_max = 1;
    params.kv_type = kv_type;
    CS_ASSIGN_OR_RETURN(auto ctx, engine::Context::create(model, params));
    CS_RETURN_IF_ERROR(ctx->set_lora(-1, lora_set));
    // llama-bench's order: every prompt test, then every generation test, per thread count, each
    // at every depth.
    std::vector<std::tuple<int64_t, int64_t, int64_t>> tests;
    for (const int64_t p : prompts) {
      for (const int64_t d : depths) {
        if (p > 0) tests.emplace_back(p, 0, d);
      }
    }
    for (const int64_t n : gens) {
      for (const int64_t d : depths) {
        if (n > 0) tests.emplace_back(0, n, d);
      }
    }
    for (const auto& [p, n, d] : tests) {
      BenchRow row = base;
      row.threads = static_cast<int>(t);
      row.n_prompt = p;
      row.n_gen = n;
      row.n_depth = d;
      if (const auto peak = peaks.find({peak_kind_of(facts.file_type), t}); peak != peaks.end() && p > 0) {
        row.peak_kind = peak->first.first;
        row.peak_gmacs = peak->second;
        row.macs_per_token = macs_per_prompt_token(*model, p, d);
      }
      std::function<Result<double>()> read_rate;
      if (o.bandwidth && n > 0) {
        // The roofline of this decode: the read rate of the model's own weight pages (the buffer
        // read at the start can sit in faster or slower memory), the best of a few reads.
        row.bytes_per_token = decode_bytes_per_token(model->file());
        read_rate = [&model, t]() -> Result<double> {
          constexpr int kReads = 3;
          CS_ASSIGN_OR_RETURN(const engine::ReadBandwidth weights,
                              engine::measure_read_bandwidth(model->resident_weights(), static_cast<int>(t), kReads));
          return weights.best_gbs();
        };
      }
      CS_RETURN_IF_ERROR(run_test(*ctx, static_cast<int>(reps), facts.bos, read_rate, &row));
      printer->row(row);
    }
  }
  printer->finish();
  return {};
}

}  // namespace

void add_bench_command(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("bench", "Measure prompt processing (pp) and generation (tg) speed, as llama-bench");
  auto o = std::make_shared<BenchOptions>();
  cmd->add_option("-m,--model", o->model_path, "GGUF model file");
  cmd->add_option("-p,--n-prompt", o->prompts, "Prompt lengths, comma-separated (0: no pp test; default 512)");
  cmd->add_option("-n,--n-gen", o->gens, "Tokens to generate, comma-separated (0: no tg test; default 128)");
  cmd->add_option("-d,--n-depth", o->depths,
                  "Tokens already in the KV cache when each test starts, comma-separated (decoded before the "
                  "clock starts, as llama-bench's -d; default 0)");
  cmd->add_option("-t,--threads", o->threads, "Thread counts, comma-separated (default: available CPUs)");
  cmd->add_option("-r,--repetitions", o->reps, "Measured runs of each test, after one warm-up (default 5)");
  cmd->add_option("-b,--batch-size", o->batch, "Tokens per forward pass during pp (default 512)");
  cmd->add_option("--kv-type", o->kv_type, "KV cache type: f16, f32 or q8_0 (default f16)");
  cmd->add_option("--lora", o->lora, "LoRA adapter applied during the tests, FILE or FILE:SCALE; repeatable")
      ->take_all()
      ->allow_extra_args(false);
  cmd->add_option("--isa", o->isa, "Kernel table to use (as CELLSERVE_ISA): generic, avx2, neon, ...");
  cmd->add_option("-o,--output", o->output, "Output format: md, json or csv (default md)");
  cmd->add_flag("--bandwidth", o->bandwidth,
                "First measure this machine's memory read bandwidth at each -t (then -m is optional); tg rows "
                "say what share they reached of the read bandwidth of the model's weights, measured around each "
                "repetition");
  cmd->add_option("--bandwidth-mib", o->bandwidth_mib, "Buffer read per --bandwidth run, MiB (default 1024)");
  cmd->add_flag("--peak", o->peak,
                "First measure the kernel table's int8 and BF16 dot-product peaks at each -t (then -m is "
                "optional); pp rows say what share of the peak for their weights they reached");
  add_cpus_option(cmd, &o->cpus);
  cmd->callback([o, exit_code] {
    Status s = pin_compute_cpus(o->cpus);
    try {
      if (s.ok()) s = run_bench(*o);
    } catch (const std::bad_alloc&) {
      s = Status::resource_exhausted("out of memory");
    }
    if (!s.ok()) {
      std::fflush(stdout);
      print_error("bench", s.message());
    }
    *exit_code = s.ok() ? 0 : 1;
  });
}

}  // namespace cellserve::cli
