// A generation job: what the API layer hands the scheduler for one request, and the events the
// scheduler sends back while it runs. The scheduler thread produces events; the connection thread
// that owns the request consumes them (JobEvents is the thread-safe queue between the two).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/grammar/output_constraint.h"
#include "engine/lora/lora_adapter.h"
#include "engine/sampling/sampler.h"

namespace cellserve::server {

// One alternative at a generated position, for logprobs.
struct TokenLogprob {
  int32_t token = 0;
  std::string text;  // token_to_piece(token), raw bytes (may be part of a UTF-8 character)
  float logprob = 0.0f;
};

// One generated token with its log-probability and the most likely alternatives.
struct GeneratedToken {
  TokenLogprob chosen;
  std::vector<TokenLogprob> top;  // top_logprobs entries, most likely first (empty unless asked)
};

// Stop and Length end a complete answer. The others end a job without one: Cancelled (the client
// left or the server stops), Error (the job failed), DeadlineExceeded (its deadline passed, before
// its first token or mid-answer: what was generated is not the whole answer and must not pass for
// one; a one-line verdict may be exactly what is missing).
enum class FinishReason { Stop, Length, Cancelled, Error, DeadlineExceeded };
const char* finish_reason_name(FinishReason r);  // "stop", "length", ...
// True for Cancelled, Error and DeadlineExceeded: the answer is missing or incomplete.
inline bool ended_without_answer(FinishReason r) { return r != FinishReason::Stop && r != FinishReason::Length; }

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;  // prompt tokens reused from the prefix cache
};

// Where one job's time went, measured by the scheduler on its own clock (llama-server's
// "timings"). The two phases meet at the first sampled token: the prompt phase runs from the
// job's admission into a slot until then (its prefill steps, shared with the other slots' decode
// steps, so it is wall time, not compute time), the generation phase from then to the end.
struct Timings {
  int64_t prompt_n = 0;     // prompt tokens computed (those reused from the prefix cache excluded)
  int64_t cache_n = 0;      // prompt tokens reused
  double prompt_ms = 0;     // admission -> first sampled token
  int64_t predicted_n = 0;  // tokens generated (usage.completion_tokens)
  double predicted_ms = 0;  // first sampled token -> the end
};

// What a request asks the scheduler to do.
struct GenerationJob {
  std::vector<int32_t> prompt;  // at least one token
  engine::SamplingParams sampling;
  int64_t max_tokens = -1;        // < 0: until the context is full
  std::vector<std::string> stop;  // never emitted, even when split over tokens
  int32_t logprobs = -1;          // < 0: none; 0: the chosen token's; k: also the top k
  bool ignore_eos = false;
  // Constrained decoding (response_format, grammar, forced tool calls); null: free text.
  std::shared_ptr<const engine::grammar::OutputConstraint> constraint;
  // The answer's text keeps the text of control tokens (tool-call markers such as [TOOL_CALLS]
  // or <|python_tag|>, which the tool-call parser reads), and a constraint may ask for them.
  // End-of-generation tokens still end the answer without text.
  bool special_text = false;
  // When the job must be over (max: none). The scheduler shortens it to its own request timeout;
  // past it the job ends with DeadlineExceeded within one step, queued or running, and frees its slot.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  // When the client's request arrived (min: at submit). A deadline error reports the time the
  // client was given from here, not from the later moment the job was queued.
  std::chrono::steady_clock::time_point received_at = std::chrono::steady_clock::time_point::min();
  // LoRA adapters for this request (null or empty: the base model). Keys and values computed
  // under one set are reused only by requests with an equal set (same adapters, same scales).
  std::shared_ptr<const engine::LoraSet> lora;
  // Whose prompts may share computed prefixes (the prefix cache, and a running slot's tokens):
  // only jobs of one partition. A fleet hub gives each API key its own (X-Cellserve-Cache-
  // Partition), so one key cannot learn from cached_tokens or timing that another sent a prompt.
  // 0: the shared partition.
  uint64_t cache_partition = 0;
};

// Whether two adapter sets change the model identically: the same adapters at the same scales
// in the same order (null and empty are the base model).
bool same_lora(const engine::LoraSet* a, const engine::LoraSet* b);

// An event of a running job, in order: any number of Text events, then exactly one Done.
struct JobEvent {
  enum class Kind { Text, Done } kind = Kind::Text;
  // Text: newly released text (valid UTF-8, stop strings already cut) and the tokens that
  // produced it (their logprobs when asked). Text may be empty while tokens are held back.
  std::string text;
  std::vector<GeneratedToken> tokens;
  std::vector<int32_t> token_ids;  // the ids of the tokens released with this text (always set)
  int64_t n_generated = 0;         // tokens generated so far, this event's included
  // Done:
  FinishReason finish = FinishReason::Stop;
  Usage usage;
  Status error;               // set when finish == Error or DeadlineExceeded: why, for the client
  double ttft_seconds = 0;    // time from queueing to the first generated token
  Timings timings;            // zero for a job that never reached a slot
  int slot_id = -1;           // the slot that ran it; -1 when it never reached one
  std::string stopping_word;  // the stop string that ended it ("" : none did)
};

// The queue between the scheduler (producer) and the request's connection thread (consumer).
// The consumer can cancel (client gone): the scheduler frees the slot at its next step.
class JobEvents {
 public:
  void push(JobEvent e) {
    {
      std::lock_guard lock(mu_);
      events_.push_back(std::move(e));
    }
    cv_.notify_all();
  }
  // Waits up to `timeout` for an event; nullopt on timeout.
  std::optional<JobEvent> pop(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return std::nullopt;
    JobEvent e = std::move(events_.front());
    events_.pop_front();
    return e;
  }
  void cancel() { cancelled_.store(true); }
  bool cancelled() const { return cancelled_.load(); }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<JobEvent> events_;
  std::atomic<bool> cancelled_{false};
};

}  // namespace cellserve::server
