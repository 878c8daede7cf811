// The scheduler: N slots over one engine Context. One thread runs the loop: it admits queued
// jobs into free slots (reusing cached prefixes), then builds one batch per step that advances
// every generating slot by one token and adds a chunk of at most `prefill_chunk` prompt tokens,
// so a long prompt is read between decode steps instead of freezing the other streams.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "base/status.h"
#include "engine/grammar/output_constraint.h"
#include "engine/runtime/context.h"
#include "engine/sampling/sampler.h"
#include "engine/tokenizer/streaming_decoder.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/scheduler/job.h"
#include "server/scheduler/prefix_cache.h"
#include "server/scheduler/stop_matcher.h"

namespace cellserve::server {

class Metrics;

struct SchedulerOptions {
  int n_slots = 4;                         // sequences generated at once (--parallel)
  int max_queue = 64;                      // jobs waiting for a slot beyond which submit() refuses (429)
  int64_t n_ctx_per_slot = 4096;           // tokens one request may use (prompt + completion)
  int64_t prefill_chunk = 256;             // prompt tokens per step, over all prefilling slots
  size_t prefix_cache_bytes = 1024 << 20;  // KV/state memory the prefix cache may keep
  int64_t snapshot_stride = 1024;          // recurrent models: a state snapshot every this many prompt tokens
  double request_timeout_seconds = 0;      // a job's deadline is at most this long after submit() (0: none)
};

// One slot as GET /slots reports it: a snapshot the scheduler thread publishes after admitting
// and after each step, so it is at most one step old.
struct SlotState {
  int id = 0;
  bool is_processing = false;
  int64_t n_ctx = 0;
  // The running job's; zero when idle.
  uint64_t id_task = 0;  // the job's admission number (1, 2, ...)
  int64_t n_prompt_tokens = 0;
  int64_t n_prompt_tokens_processed = 0;  // computed so far (reused ones excluded)
  int64_t n_prompt_tokens_cache = 0;      // reused from the prefix cache or another slot
  int64_t n_decoded = 0;                  // tokens generated so far
  int64_t n_predict = -1;                 // the job's max_tokens (< 0: until the context is full)
  float temperature = 0, top_p = 0, min_p = 0;
  int32_t top_k = 0;
  uint64_t seed = 0;
};

// How many sequence ids the Context needs for `n_slots` slots plus prefix-cache entries.
int scheduler_seq_count(int n_slots);

class Scheduler {
 public:
  // Takes ownership of the context; starts the loop thread.
  Scheduler(std::unique_ptr<engine::Context> ctx, const engine::tokenizer::Tokenizer& tok,
            const SchedulerOptions& options, Metrics* metrics);
  ~Scheduler();  // stops the loop; running jobs end with FinishReason::Cancelled
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues a job. ResourceExhausted when the queue is full; InvalidArgument when the prompt
  // (plus max_tokens) cannot fit the context. Thread-safe; the first constrained job builds the
  // vocabulary index on the calling thread. A constrained job whose mask exceeds its
  // GrammarLimits ends with FinishReason::Error (InvalidArgument naming the limit).
  Result<std::shared_ptr<JobEvents>> submit(GenerationJob job);

  int64_t n_ctx() const { return options_.n_ctx_per_slot; }
  int queue_length() const { return queue_length_.load(); }
  int busy_slots() const { return busy_slots_.load(); }
  const SchedulerOptions& options() const { return options_; }
  // Every slot's state, in slot order. Thread-safe.
  std::vector<SlotState> slot_states() const;

 private:
  struct Queued {
    GenerationJob job;
    std::shared_ptr<JobEvents> events;
    std::chrono::steady_clock::time_point queued_at;
  };
  struct Slot;

  void loop();
  // Under mu_: ends queued jobs whose client left or whose deadline passed, so they never take a
  // slot and a short deadline is kept even while every slot is busy.
  void drop_abandoned_queued(std::chrono::steady_clock::time_point now);
  void admit(Slot& slot, Queued q);
  // Makes the slot's prompt continue from the longest prefix of it computed elsewhere (a
  // prefix-cache entry, another slot's cells or, on a recurrent model, its snapshots) when that
  // is longer than what the slot holds.
  void reuse_prefix(Slot& slot);
  // True while an earlier-admitted slot is still computing prompt tokens this slot could share.
  bool waits_for_shared_prefix(const Slot& slot) const;
  void step();
  // Updates busy_slots_, the slot states and the metrics' queue and slot gauges.
  void publish_gauges();
  void sample(Slot& slot, std::span<const float> logits);
  void release_text(Slot& slot, bool final);
  void finish(Slot& slot, FinishReason reason, Status error = {});
  engine::SeqId take_free_seq();
  bool decode_with_eviction(const engine::Batch& batch);

  std::unique_ptr<engine::Context> ctx_;
  const engine::tokenizer::Tokenizer& tok_;
  const SchedulerOptions options_;
  Metrics* metrics_;
  PrefixCache cache_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<engine::SeqId> free_seqs_;
  int next_snapshot_ = 0;
  uint64_t admission_clock_ = 0;
  std::vector<float> scratch_logits_;
  // The vocabulary index for constrained jobs: built by the first submit() that needs it, on that
  // request's thread (130-200 ms for a 151k vocabulary), never on the scheduler thread.
  std::once_flag token_index_once_;
  std::shared_ptr<const engine::grammar::TokenIndex> token_index_;
  std::once_flag special_index_once_;  // the index for jobs with special_text
  std::shared_ptr<const engine::grammar::TokenIndex> special_index_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Queued> queue_;
  bool stopping_ = false;
  std::atomic<int> queue_length_{0};
  std::atomic<int> busy_slots_{0};
  mutable std::mutex states_mu_;  // guards states_ (written by the loop, read by slot_states())
  std::vector<SlotState> states_;
  std::thread thread_;
};

}  // namespace cellserve::server
