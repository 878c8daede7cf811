// Autotune on the deployment's own work (autotune.h, autotune_workload()): each candidate setting
// is judged by the time the spec's [workload] takes with it, not by an 8-token prompt.
#include <algorithm>
#include <chrono>
#include <cmath>

#include <boost/json.hpp>

#include "engine/runtime/context.h"
#include "engine/runtime/kv_type.h"
#include "server/autotune.h"

namespace cellserve::server {
namespace {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

double elapsed_seconds(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// What one setting does with the workload: the rates measured, and a request's time alone.
struct WorkloadMeasure {
  double prompt_tok_s = 0;
  double decode_tok_s = 0;  // of all `seqs` sequences together
  double request_seconds = 0;
};

constexpr int kWorkloadDecodeSteps = 8;

// Reads `probe` tokens into each of `seqs` sequences in chunks of `chunk` (timed: the prompt
// rate), then generates kWorkloadDecodeSteps tokens for all of them at once (timed: the generation rate).
Result<WorkloadMeasure> measure_workload(engine::Context& ctx, const std::vector<int32_t>& tokens, int64_t probe,
                                         int64_t chunk, int seqs, const AutotuneWorkload& w) {
  WorkloadMeasure m;
  for (int s = 0; s < seqs; ++s) CS_RETURN_IF_ERROR(ctx.seq_rm(s));
  const auto t0 = Clock::now();
  for (int s = 0; s < seqs; ++s) {
    for (int64_t at = 0; at < probe; at += chunk) {
      engine::Batch b;
      const int64_t end = std::min(probe, at + chunk);
      for (int64_t i = at; i < end; ++i)
        b.add(tokens[static_cast<size_t>(i)], static_cast<int32_t>(i), s, i + 1 == end);
      CS_RETURN_IF_ERROR(ctx.decode(b));
    }
  }
  m.prompt_tok_s = static_cast<double>(probe) * seqs / std::max(elapsed_seconds(t0), 1e-9);
  const auto t1 = Clock::now();
  for (int step = 0; step < kWorkloadDecodeSteps; ++step) {
    engine::Batch b;
    for (int s = 0; s < seqs; ++s) {
      b.add(tokens[static_cast<size_t>(probe + step)], static_cast<int32_t>(probe + step), s, true);
    }
    CS_RETURN_IF_ERROR(ctx.decode(b));
  }
  m.decode_tok_s = static_cast<double>(kWorkloadDecodeSteps) * seqs / std::max(elapsed_seconds(t1), 1e-9);
  // `seqs` requests together: their prompts one after another, their answers in batched steps.
  m.request_seconds = static_cast<double>(w.prompt_tokens) * seqs / m.prompt_tok_s +
                      static_cast<double>(w.max_tokens) * seqs / m.decode_tok_s;
  return m;
}

// The objective for `parallel` slots taking `concurrency` requests that arrive together: they run
// in waves of `parallel`, each wave taking `wave_seconds`. Lower is better.
double workload_objective(const AutotuneWorkload& w, int parallel, double wave_seconds) {
  const int waves = (w.concurrency + parallel - 1) / parallel;
  if (w.latency) return wave_seconds * (waves + 1) / 2.0;  // the mean completion time
  return waves * wave_seconds / w.concurrency;             // seconds per completed request
}

// The report's workload and choice; the caller adds each candidate's rows.
json::object workload_report(const AutotuneWorkload& w, int64_t probe, const AutotuneResult& result) {
  json::object chosen{{"threads", result.threads},
                      {"prefill_chunk", result.prefill_chunk},
                      {"kv_type", std::string(engine::ggml_type_name(result.kv_type))}};
  if (result.parallel > 0) chosen["parallel"] = result.parallel;
  return json::object{{"workload", json::object{{"prompt_tokens", w.prompt_tokens},
                                                {"max_tokens", w.max_tokens},
                                                {"concurrency", w.concurrency},
                                                {"objective", w.latency ? "latency" : "throughput"},
                                                {"probe_tokens", probe}}},
                      {"chosen", std::move(chosen)}};
}

}  // namespace

Result<AutotuneResult> autotune_workload(const std::shared_ptr<const engine::Model>& model,
                                         const AutotuneOptions& options,
                                         const std::function<void(const std::string&)>& log) {
  const auto start = Clock::now();
  const AutotuneWorkload& w = options.workload;
  if (w.prompt_tokens < 1 || w.max_tokens < 1 || w.concurrency < 1 || options.max_probe_tokens < 16) {
    return Status::invalid_argument("autotune: the workload needs a prompt, an answer and a concurrency of at least 1");
  }
  CS_ASSIGN_OR_RETURN(const std::vector<int> threads, autotune_thread_candidates(options));
  std::vector<int64_t> chunks = options.prefill_chunks;
  std::sort(chunks.begin(), chunks.end());
  if (chunks.empty() || chunks.front() < 1)
    return Status::invalid_argument("autotune: prefill chunks must be positive");
  std::vector<int> parallels = options.parallels;
  std::sort(parallels.begin(), parallels.end());
  parallels.erase(std::unique(parallels.begin(), parallels.end()), parallels.end());
  if (!parallels.empty() && (parallels.front() < 1 || parallels.back() > 256)) {
    return Status::invalid_argument("autotune: slot counts must be in [1, 256]");
  }
  std::vector<engine::GgmlType> kv_types = options.kv_types;
  if (kv_types.empty()) kv_types = {options.kv_type};

  const int64_t probe = std::min<int64_t>(w.prompt_tokens, options.max_probe_tokens);
  const std::vector<int32_t> tokens = random_tokens(probe + kWorkloadDecodeSteps, model->info().n_vocab);
  const auto context = [&](int n_threads, int seqs, int64_t chunk, engine::GgmlType kv) {
    engine::ContextParams params;
    params.n_ctx = (probe + kWorkloadDecodeSteps + 16) * seqs;
    params.n_batch = std::max<int64_t>(chunk, seqs);
    params.n_seq_max = seqs;
    params.n_threads = n_threads;
    params.kv_type = kv;
    return engine::Context::create(model, params);
  };
  const auto out_of_time = [&] { return elapsed_seconds(start) > options.max_seconds; };
  const auto row = [](const char* key, json::value v, const WorkloadMeasure& m) {
    return json::object{{key, std::move(v)},
                        {"prompt_tok_s", m.prompt_tok_s},
                        {"generation_tok_s", m.decode_tok_s},
                        {"request_seconds", m.request_seconds}};
  };

  AutotuneResult result;
  result.kv_type = kv_types.front();
  int64_t chunk = std::clamp<int64_t>(256, chunks.front(), chunks.back());
  WorkloadMeasure best;
  best.request_seconds = INFINITY;
  // 1. Threads, for one request alone.
  json::array thread_rows;
  for (int t : threads) {
    if (!thread_rows.empty() && out_of_time()) break;
    CS_ASSIGN_OR_RETURN(auto ctx, context(t, 1, chunk, result.kv_type));
    CS_ASSIGN_OR_RETURN(const WorkloadMeasure m, measure_workload(*ctx, tokens, probe, chunk, 1, w));
    log("autotune: threads " + std::to_string(t) + ": " + std::to_string(m.request_seconds) + " s per request");
    thread_rows.push_back(row("threads", t, m));
    if (m.request_seconds < best.request_seconds) {
      best = m;
      result.threads = t;
    }
  }
  // 2. The prefill chunk: the smallest within 10 % of the best (streams advance between chunks).
  json::array chunk_rows;
  std::vector<std::pair<int64_t, WorkloadMeasure>> by_chunk;
  for (int64_t c : chunks) {
    if (!by_chunk.empty() && out_of_time()) break;
    CS_ASSIGN_OR_RETURN(auto ctx, context(result.threads, 1, c, result.kv_type));
    CS_ASSIGN_OR_RETURN(const WorkloadMeasure m, measure_workload(*ctx, tokens, probe, c, 1, w));
    log("autotune: prefill chunk " + std::to_string(c) + ": " + std::to_string(m.request_seconds) + " s per request");
    chunk_rows.push_back(row("prefill_chunk", c, m));
    by_chunk.emplace_back(c, m);
  }
  double fastest = INFINITY;
  for (const auto& [c, m] : by_chunk) fastest = std::min(fastest, m.request_seconds);
  for (const auto& [c, m] : by_chunk) {
    if (m.request_seconds <= 1.1 * fastest) {
      chunk = c;
      best = m;
      break;
    }
  }
  // 3. The KV cache type: another than the first (the deployment's default, f16) only when it is
  // at least 5 % faster, since it costs precision.
  json::array kv_rows;
  if (kv_types.size() > 1) {
    std::vector<std::pair<engine::GgmlType, WorkloadMeasure>> by_kv;
    for (engine::GgmlType kv : kv_types) {
      if (!by_kv.empty() && out_of_time()) break;
      CS_ASSIGN_OR_RETURN(auto ctx, context(result.threads, 1, chunk, kv));
      CS_ASSIGN_OR_RETURN(const WorkloadMeasure m, measure_workload(*ctx, tokens, probe, chunk, 1, w));
      const std::string name(engine::ggml_type_name(kv));
      log("autotune: KV " + name + ": " + std::to_string(m.request_seconds) + " s per request");
      kv_rows.push_back(row("kv_type", json::string(name), m));
      by_kv.emplace_back(kv, m);
    }
    best = by_kv.front().second;
    for (const auto& [kv, m] : by_kv) {
      if (m.request_seconds < 0.95 * by_kv.front().second.request_seconds && m.request_seconds < best.request_seconds) {
        result.kv_type = kv;
        best = m;
      }
    }
  }
  // 4. The slots, by the workload's objective.
  json::array slot_rows;
  if (!parallels.empty()) {
    double best_objective = INFINITY;
    for (int p : parallels) {
      if (!slot_rows.empty() && out_of_time()) break;
      CS_ASSIGN_OR_RETURN(auto ctx, context(result.threads, p, chunk, result.kv_type));
      CS_ASSIGN_OR_RETURN(const WorkloadMeasure m, measure_workload(*ctx, tokens, probe, chunk, p, w));
      const double score = workload_objective(w, p, m.request_seconds);
      log("autotune: " + std::to_string(p) + " slots: " + std::to_string(score) +
          (w.latency ? " s mean completion" : " s per completed request"));
      json::object r = row("parallel", p, m);
      r["objective_seconds"] = score;
      slot_rows.push_back(std::move(r));
      if (score < best_objective) {
        best_objective = score;
        result.parallel = p;
      }
    }
  }
  result.prefill_chunk = chunk;
  result.prompt_tok_s = best.prompt_tok_s;
  result.decode_tok_s = best.decode_tok_s;
  result.workload_seconds = best.request_seconds;
  result.report = workload_report(w, probe, result);
  result.report["threads"] = std::move(thread_rows);
  result.report["prefill_chunk"] = std::move(chunk_rows);
  result.report["kv_type"] = std::move(kv_rows);
  result.report["parallel"] = std::move(slot_rows);
  result.report["seconds"] = elapsed_seconds(start);
  log("autotune: chose threads " + std::to_string(result.threads) + ", prefill chunk " +
      std::to_string(result.prefill_chunk) + ", KV " + std::string(engine::ggml_type_name(result.kv_type)) +
      (result.parallel > 0 ? ", " + std::to_string(result.parallel) + " slots" : std::string()) + " (" +
      std::to_string(elapsed_seconds(start)) + " s)");
  return result;
}

}  // namespace cellserve::server
