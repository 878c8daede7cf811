#include "server/autotune.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <thread>

#include <boost/json.hpp>

#include "engine/runtime/context.h"
#include "engine/runtime/cpu_topology.h"

namespace cellserve::server {
namespace {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

std::vector<int32_t> random_tokens(int64_t n, int64_t n_vocab) {
  std::mt19937 rng(42);
  std::uniform_int_distribution<int32_t> dist(0, static_cast<int32_t>(n_vocab - 1));
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int32_t& x : t) x = dist(rng);
  return t;
}

Result<double> prefill_rate(engine::Context& ctx, const std::vector<int32_t>& tokens, int64_t n) {
  double best = 0;
  for (int rep = 0; rep < 2; ++rep) {
    CS_RETURN_IF_ERROR(ctx.seq_rm(0));
    engine::Batch b;
    for (int64_t i = 0; i < n; ++i) b.add(tokens[static_cast<size_t>(i)], static_cast<int32_t>(i), 0, i + 1 == n);
    const auto t0 = Clock::now();
    CS_RETURN_IF_ERROR(ctx.decode(b));
    if (rep > 0) best = static_cast<double>(n) / seconds_since(t0);
  }
  return best;
}

Result<double> decode_rate(engine::Context& ctx, const std::vector<int32_t>& tokens, int steps) {
  CS_RETURN_IF_ERROR(ctx.seq_rm(0));
  engine::Batch b;
  for (int i = 0; i < 8; ++i) b.add(tokens[static_cast<size_t>(i)], i, 0, i == 7);
  CS_RETURN_IF_ERROR(ctx.decode(b));
  const auto t0 = Clock::now();
  for (int i = 0; i < steps; ++i) {
    engine::Batch step;
    step.add(tokens[static_cast<size_t>(8 + i)], 8 + i, 0, true);
    CS_RETURN_IF_ERROR(ctx.decode(step));
  }
  return static_cast<double>(steps) / seconds_since(t0);
}

Result<std::vector<int>> autotune_thread_candidates(const AutotuneOptions& options) {
  std::vector<int> threads = options.threads;
  if (threads.empty()) {
    const int cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    for (int t = 1; t <= cpus; t *= 2) threads.push_back(t);
    threads.push_back(cpus);
    threads.push_back(engine::default_thread_count());
  }
  std::sort(threads.begin(), threads.end());
  threads.erase(std::unique(threads.begin(), threads.end()), threads.end());
  if (threads.empty() || threads.front() < 1)
    return Status::invalid_argument("autotune: thread counts must be positive");
  return threads;
}

Result<AutotuneResult> autotune(const std::shared_ptr<const engine::Model>& model, const AutotuneOptions& options,
                                const std::function<void(const std::string&)>& log) {
  if (options.workload.prompt_tokens > 0) return autotune_workload(model, options, log);
  const auto start = Clock::now();
  CS_ASSIGN_OR_RETURN(const std::vector<int> threads, autotune_thread_candidates(options));

  if (options.prefill_chunks.empty() ||
      *std::min_element(options.prefill_chunks.begin(), options.prefill_chunks.end()) < 1) {
    return Status::invalid_argument("autotune: prefill chunks must be given and positive");
  }
  const int64_t max_chunk = *std::max_element(options.prefill_chunks.begin(), options.prefill_chunks.end());
  const std::vector<int32_t> tokens = random_tokens(std::max<int64_t>(max_chunk, 64), model->info().n_vocab);
  engine::ContextParams params;
  params.n_ctx = std::max<int64_t>(max_chunk, 64) + 16;
  params.n_batch = max_chunk;
  params.n_seq_max = 1;
  params.kv_type = options.kv_type;

  AutotuneResult result;
  json::array thread_rows;
  double best_decode = -1;
  for (int t : threads) {
    if (!thread_rows.empty() && seconds_since(start) > options.max_seconds) break;
    params.n_threads = t;
    CS_ASSIGN_OR_RETURN(auto ctx, engine::Context::create(model, params));
    CS_ASSIGN_OR_RETURN(const double decode, decode_rate(*ctx, tokens, 16));
    CS_ASSIGN_OR_RETURN(const double prefill, prefill_rate(*ctx, tokens, 64));
    log("autotune: threads " + std::to_string(t) + ": generation " + std::to_string(decode) + " tok/s, prompt (64) " +
        std::to_string(prefill) + " tok/s");
    thread_rows.push_back(json::object{{"threads", t}, {"generation_tok_s", decode}, {"prompt_tok_s", prefill}});
    if (decode > best_decode) {
      best_decode = decode;
      result.threads = t;
      result.decode_tok_s = decode;
    }
  }

  params.n_threads = result.threads;
  CS_ASSIGN_OR_RETURN(auto ctx, engine::Context::create(model, params));
  json::array chunk_rows;
  std::vector<std::pair<int64_t, double>> rates;
  for (int64_t chunk : options.prefill_chunks) {
    if (!rates.empty() && seconds_since(start) > options.max_seconds) break;
    CS_ASSIGN_OR_RETURN(const double rate, prefill_rate(*ctx, tokens, chunk));
    log("autotune: prefill chunk " + std::to_string(chunk) + ": " + std::to_string(rate) + " tok/s");
    chunk_rows.push_back(json::object{{"prefill_chunk", chunk}, {"prompt_tok_s", rate}});
    rates.emplace_back(chunk, rate);
  }
  double best_rate = 0;
  for (const auto& [chunk, rate] : rates) best_rate = std::max(best_rate, rate);
  result.prompt_tok_s = best_rate;
  std::sort(rates.begin(), rates.end());
  for (const auto& [chunk, rate] : rates) {
    if (rate >= 0.9 * best_rate) {
      result.prefill_chunk = chunk;
      break;
    }
  }
  result.report = json::object{
      {"threads", std::move(thread_rows)},
      {"prefill_chunk", std::move(chunk_rows)},
      {"chosen", json::object{{"threads", result.threads}, {"prefill_chunk", result.prefill_chunk}}},
      {"seconds", seconds_since(start)},
  };
  log("autotune: chose threads " + std::to_string(result.threads) + ", prefill chunk " +
      std::to_string(result.prefill_chunk) + " (" + std::to_string(seconds_since(start)) + " s)");
  return result;
}

}  // namespace cellserve::server
