// Autotune: at start-up, measures a few engine settings on the loaded model for a few seconds
// and keeps the fastest — the thread count (by generation speed) and the prefill chunk (the
// smallest chunk within 10% of the best prompt throughput, since a smaller chunk lets running
// streams advance more often while a long prompt is read).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/json/object.hpp>

#include "base/status.h"
#include "engine/models/model.h"
#include "engine/runtime/context.h"

namespace cellserve::server {

// The work a deployment's requests do (the spec's [workload], docs/fleet.md): with it, autotune
// judges each candidate by the time that work takes, not by short probes.
struct AutotuneWorkload {
  int64_t prompt_tokens = 0;  // a typical prompt; 0: no workload (the short probes)
  int64_t max_tokens = 16;    // its answer
  int concurrency = 1;        // requests at once
  // The objective: the mean completion time of `concurrency` requests arriving together (a guard
  // that must answer each case soon), else how many of them complete per second (queues, batches).
  bool latency = false;
};

struct AutotuneOptions {
  std::vector<int> threads;  // candidates; empty: 1, 2, 4, ... up to the CPUs, plus the default
  std::vector<int64_t> prefill_chunks = {32, 64, 128, 256, 512};
  double max_seconds = 20;  // stop trying further candidates after this long
  engine::GgmlType kv_type = engine::GgmlType::F16;
  AutotuneWorkload workload;
  // With a workload: further candidates, tried after the threads and the chunk (empty: not tuned,
  // `kv_type` and the caller's slots stand).
  std::vector<int> parallels;              // generation slots
  std::vector<engine::GgmlType> kv_types;  // KV cache types
  int64_t max_probe_tokens = 512;          // the most of the prompt each measurement reads
};

struct AutotuneResult {
  int threads = 1;
  int64_t prefill_chunk = 256;
  double decode_tok_s = 0;  // generation speed at the chosen thread count
  double prompt_tok_s = 0;  // the best prompt throughput measured
  int parallel = 0;         // the slots chosen (0: not tuned)
  engine::GgmlType kv_type = engine::GgmlType::F16;
  double workload_seconds = 0;  // with a workload: one request's estimated time alone, as chosen
  boost::json::object report;   // {"threads": [...], "prefill_chunk": [...], "chosen": {...}, "seconds"}
};

// Autotune for a workload (autotune() calls it when options.workload.prompt_tokens > 0): threads,
// then the prefill chunk, then the KV type, then the slots, each kept when the workload's
// objective is best, within max_seconds (at least one candidate of each is measured). Each
// measurement reads up to max_probe_tokens of a prompt in chunks and generates at that depth; a
// request's time is prompt_tokens / prompt rate + max_tokens / generation rate, and `parallel`
// slots share one device: prompts one after another, answers in one batched step.
Result<AutotuneResult> autotune_workload(const std::shared_ptr<const engine::Model>& model,
                                         const AutotuneOptions& options,
                                         const std::function<void(const std::string&)>& log);

// Prompt tokens per second reading `n` of `tokens` as one batch into sequence 0 of `ctx` (the
// second of two runs; the first warms up). `tokens` needs at least n entries.
Result<double> prefill_rate(engine::Context& ctx, const std::vector<int32_t>& tokens, int64_t n);
// Generated tokens per second: `steps` single-token steps after an 8-token prompt in sequence 0.
// `tokens` needs at least 8 + steps entries.
Result<double> decode_rate(engine::Context& ctx, const std::vector<int32_t>& tokens, int steps);
// `n` tokens drawn uniformly from [0, n_vocab) with a fixed seed.
std::vector<int32_t> random_tokens(int64_t n, int64_t n_vocab);

// The thread counts to try: options.threads, else 1, 2, 4, ... up to the CPUs, the CPUs and the
// engine's default; sorted, each once. InvalidArgument for a count below 1.
Result<std::vector<int>> autotune_thread_candidates(const AutotuneOptions& options);

// Runs the measurements; `log` receives one line per measurement.
Result<AutotuneResult> autotune(const std::shared_ptr<const engine::Model>& model, const AutotuneOptions& options,
                                const std::function<void(const std::string&)>& log);

}  // namespace cellserve::server
