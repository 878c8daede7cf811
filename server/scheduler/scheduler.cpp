#include "server/scheduler/scheduler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "server/metrics.h"
#include "server/scheduler/token_logprobs.h"

namespace cellserve::server {

namespace {
using Clock = std::chrono::steady_clock;
constexpr int kMaxSequences = engine::KvCache::kMaxSequences;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// The stop string that StopMatcher::find_stop() found at `at` in `text` (the first listed that
// matches there).
std::string stop_at(const std::vector<std::string>& stops, std::string_view text, size_t at) {
  for (const std::string& s : stops) {
    if (text.substr(at, s.size()) == s) return s;
  }
  return {};
}

// Why a job ended at its deadline, for the client: how long it had, and how far it got.
Status deadline_passed(Clock::time_point received_at, Clock::time_point deadline, int64_t n_generated) {
  // Two significant digits below 10 s: a 0.5 s header deadline reads 0.5, however long the
  // request then took to parse and tokenize.
  const double seconds = std::max(0.0, std::chrono::duration<double>(deadline - received_at).count());
  char limit[32];
  if (seconds < 10) {
    std::snprintf(limit, sizeof limit, "%.2g", seconds);
  } else {
    std::snprintf(limit, sizeof limit, "%.0f", seconds);
  }
  std::string m = std::string("the request's deadline (") + limit + " s) passed ";
  m += n_generated == 0 ? "before its first token"
                        : "after " + std::to_string(n_generated) + " generated tokens; the answer is incomplete";
  return Status::unavailable(std::move(m));
}
}  // namespace

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::Stop:
      return "stop";
    case FinishReason::Length:
      return "length";
    case FinishReason::Cancelled:
      return "cancelled";
    case FinishReason::Error:
      return "error";
    case FinishReason::DeadlineExceeded:
      return "deadline_exceeded";
  }
  return "error";
}

bool same_lora(const engine::LoraSet* a, const engine::LoraSet* b) {
  const size_t na = a == nullptr ? 0 : a->size();
  const size_t nb = b == nullptr ? 0 : b->size();
  if (na != nb) return false;
  for (size_t i = 0; i < na; ++i) {
    if ((*a)[i].adapter != (*b)[i].adapter || (*a)[i].scale != (*b)[i].scale) return false;
  }
  return true;
}

// Prefix-cache entries get the sequence ids the slots do not use, up to 32.
int scheduler_seq_count(int n_slots) { return std::min(kMaxSequences, n_slots + 32); }

struct Scheduler::Slot {
  int index = 0;  // its place in slots_ (the slot id of /slots)
  bool active = false;
  engine::SeqId seq = -1;
  uint64_t admitted = 0;  // admission order: earlier jobs prefill first
  GenerationJob job;
  std::shared_ptr<JobEvents> events;
  Clock::time_point queued_at;
  Clock::time_point admitted_at;     // the prompt phase of Timings starts here
  Clock::time_point first_token_at;  // ... and ends here, where generation starts
  bool first_token = false;
  double ttft = 0;
  std::vector<int32_t> tokens;  // prompt, then generated tokens; [0, n_past) are computed
  int64_t n_prompt = 0;
  int64_t n_past = 0;
  int64_t n_cached = 0;
  int64_t n_generated = 0;
  std::optional<engine::Sampler> sampler;
  std::optional<engine::tokenizer::StreamingDecoder> decoder;
  std::optional<StopMatcher> stop;
  std::optional<engine::grammar::ConstrainedSequence> constraint;
  std::string pending;  // decoded text not yet released: it may be the start of a stop string
  std::vector<GeneratedToken> pending_tokens;
  std::vector<int32_t> pending_ids;  // the ids behind `pending`
  std::string stopping_word;         // the stop string that ended the job
  std::vector<StateSnapshot> snaps;
  bool prefilling() const { return n_past < n_prompt; }
};

namespace {

// How a job ends when generation stops by itself (an end token, or no token left to pick). A JSON
// document that is still incomplete was cut short: the constraint only offers the end token when
// the token budget cannot fit the rest of the schema. That is "length"; "stop" would pass the
// fragment off as a complete answer.
FinishReason end_reason(const std::optional<engine::grammar::ConstrainedSequence>& constraint) {
  return constraint && !constraint->complete() ? FinishReason::Length : FinishReason::Stop;
}

}  // namespace

Scheduler::Scheduler(std::unique_ptr<engine::Context> ctx, const engine::tokenizer::Tokenizer& tok,
                     const SchedulerOptions& options, Metrics* metrics)
    : ctx_(std::move(ctx)),
      tok_(tok),
      options_(options),
      metrics_(metrics),
      cache_(*ctx_, options.prefix_cache_bytes,
             ctx_->kv().shape().n_layer * ctx_->kv().shape().n_kv_head *
                 (ctx_->kv().key_row_bytes() + ctx_->kv().value_row_bytes()),
             static_cast<size_t>(ctx_->recurrent().shape().floats_per_sequence()) * sizeof(float)) {
  for (engine::SeqId s = static_cast<engine::SeqId>(ctx_->params().n_seq_max) - 1; s >= 0; --s) free_seqs_.push_back(s);
  for (int i = 0; i < options_.n_slots; ++i) {
    slots_.push_back(std::make_unique<Slot>());
    slots_.back()->index = i;
    slots_.back()->seq = take_free_seq();
  }
  if (metrics_ != nullptr) metrics_->set_slots(options_.n_slots);
  publish_gauges();
  thread_ = std::thread([this] { loop(); });
}

Scheduler::~Scheduler() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

Result<std::shared_ptr<JobEvents>> Scheduler::submit(GenerationJob job) {
  const int64_t n_prompt = static_cast<int64_t>(job.prompt.size());
  if (n_prompt == 0) return Status::invalid_argument("the prompt is empty");
  for (int32_t t : job.prompt) {
    if (t < 0 || t >= tok_.n_vocab())
      return Status::invalid_argument("token id " + std::to_string(t) + " is out of range");
  }
  const int64_t need = n_prompt + std::max<int64_t>(job.max_tokens, 1);
  if (need > options_.n_ctx_per_slot) {
    return Status::invalid_argument("the request needs " + std::to_string(need) + " tokens of context; the limit is " +
                                    std::to_string(options_.n_ctx_per_slot));
  }
  if (job.constraint != nullptr && !job.special_text) {
    // Written before the job is queued under mu_, so admit() (after the queue) sees it.
    std::call_once(token_index_once_, [&] { token_index_ = engine::grammar::build_token_index(tok_); });
  }
  if (job.constraint != nullptr && job.special_text) {
    std::call_once(special_index_once_,
                   [&] { special_index_ = engine::grammar::build_token_index(tok_, /*special_text=*/true); });
  }
  if (options_.request_timeout_seconds > 0) {
    // The shorter of the server's limit and the job's own (a client's X-Request-Timeout).
    const Clock::time_point server_deadline =
        Clock::now() +
        std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options_.request_timeout_seconds));
    job.deadline = std::min(job.deadline, server_deadline);
  }
  if (job.received_at == Clock::time_point::min()) job.received_at = Clock::now();
  auto events = std::make_shared<JobEvents>();
  {
    std::lock_guard lock(mu_);
    if (stopping_) return Status::unavailable("the server is shutting down");
    if (static_cast<int>(queue_.size()) >= options_.max_queue) {
      return Status::resource_exhausted("the server is busy: " + std::to_string(queue_.size()) +
                                        " requests are already waiting; retry later");
    }
    queue_.push_back(Queued{std::move(job), events, Clock::now()});
    queue_length_ = static_cast<int>(queue_.size());
  }
  if (metrics_ != nullptr) metrics_->set_queue_length(queue_length_.load());
  cv_.notify_all();
  return events;
}

engine::SeqId Scheduler::take_free_seq() {
  if (free_seqs_.empty()) free_seqs_.push_back(cache_.evict_one());
  const engine::SeqId s = free_seqs_.back();
  free_seqs_.pop_back();
  return s;
}

void Scheduler::loop() {
  for (;;) {
    std::vector<Queued> admitted;
    {
      std::unique_lock lock(mu_);
      const auto any_active = [&] {
        return std::any_of(slots_.begin(), slots_.end(), [](const auto& s) { return s->active; });
      };
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty() || any_active(); });
      if (stopping_) {
        for (Queued& q : queue_) {
          JobEvent done;
          done.kind = JobEvent::Kind::Done;
          done.finish = FinishReason::Cancelled;
          q.events->push(std::move(done));
        }
        queue_.clear();
        lock.unlock();
        for (auto& s : slots_) {
          if (s->active) finish(*s, FinishReason::Cancelled);
        }
        return;
      }
      drop_abandoned_queued(Clock::now());
      // Admit into free slots, first come first served.
      int free =
          static_cast<int>(std::count_if(slots_.begin(), slots_.end(), [](const auto& s) { return !s->active; }));
      while (free > 0 && !queue_.empty()) {
        admitted.push_back(std::move(queue_.front()));
        queue_.pop_front();
        --free;
      }
      queue_length_ = static_cast<int>(queue_.size());
    }
    for (Queued& q : admitted) {
      for (auto& s : slots_) {
        if (!s->active) {
          admit(*s, std::move(q));
          break;
        }
      }
    }
    publish_gauges();
    step();
    publish_gauges();
  }
}

void Scheduler::drop_abandoned_queued(Clock::time_point now) {
  std::erase_if(queue_, [&](const Queued& q) {
    if (q.events->cancelled()) return true;
    if (now < q.job.deadline) return false;
    JobEvent done;
    done.kind = JobEvent::Kind::Done;
    done.finish = FinishReason::DeadlineExceeded;
    done.usage.prompt_tokens = static_cast<int64_t>(q.job.prompt.size());
    done.error = deadline_passed(q.job.received_at, q.job.deadline, 0);
    q.events->push(std::move(done));
    return true;
  });
  queue_length_ = static_cast<int>(queue_.size());
}

std::vector<SlotState> Scheduler::slot_states() const {
  std::lock_guard lock(states_mu_);
  return states_;
}

void Scheduler::publish_gauges() {
  busy_slots_ = static_cast<int>(std::count_if(slots_.begin(), slots_.end(), [](const auto& s) { return s->active; }));
  std::vector<SlotState> states;
  states.reserve(slots_.size());
  for (const auto& slot : slots_) {
    SlotState st;
    st.id = slot->index;
    st.is_processing = slot->active;
    st.n_ctx = options_.n_ctx_per_slot;
    if (slot->active) {
      st.id_task = slot->admitted;
      st.n_prompt_tokens = slot->n_prompt;
      st.n_prompt_tokens_processed = std::min(slot->n_past, slot->n_prompt) - slot->n_cached;
      st.n_prompt_tokens_cache = slot->n_cached;
      st.n_decoded = slot->n_generated;
      st.n_predict = slot->job.max_tokens;
      const engine::SamplingParams& sp = slot->job.sampling;
      st.temperature = sp.temperature;
      st.top_p = sp.top_p;
      st.min_p = sp.min_p;
      st.top_k = sp.top_k;
      st.seed = sp.seed;
    }
    states.push_back(st);
  }
  {
    std::lock_guard lock(states_mu_);
    states_ = std::move(states);
  }
  if (metrics_ != nullptr) {
    metrics_->set_queue_length(queue_length_.load());
    metrics_->set_busy_slots(busy_slots_.load());
  }
}

void Scheduler::admit(Slot& slot, Queued q) {
  const engine::SeqId seq = slot.seq;
  const int index = slot.index;
  slot = Slot();
  slot.index = index;
  slot.seq = seq;
  slot.active = true;
  slot.admitted_at = Clock::now();
  slot.admitted = ++admission_clock_;
  slot.job = std::move(q.job);
  slot.events = std::move(q.events);
  slot.queued_at = q.queued_at;
  slot.tokens = slot.job.prompt;
  slot.n_prompt = static_cast<int64_t>(slot.tokens.size());
  slot.sampler.emplace(slot.job.sampling);
  for (int32_t t : slot.tokens) slot.sampler->accept(t);
  slot.decoder.emplace(tok_, slot.job.special_text);
  slot.stop.emplace(slot.job.stop);
  if (slot.job.constraint != nullptr) {  // the indexes are built by submit()
    slot.constraint.emplace(slot.job.constraint, slot.job.special_text ? special_index_ : token_index_);
  }

  (void)ctx_->set_lora(slot.seq, slot.job.lora);  // seq is in range: it is a slot's
  reuse_prefix(slot);
  if (metrics_ != nullptr) {
    metrics_->add_prompt_tokens(slot.n_prompt);
  }
}

// How many leading tokens `a` and `b` share, looking at most `limit` tokens.
static int64_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b, int64_t limit) {
  limit = std::min<int64_t>({limit, static_cast<int64_t>(a.size()), static_cast<int64_t>(b.size())});
  int64_t n = 0;
  while (n < limit && a[static_cast<size_t>(n)] == b[static_cast<size_t>(n)]) ++n;
  return n;
}

void Scheduler::reuse_prefix(Slot& slot) {
  // The last prompt token is always computed again: its logits are needed.
  const int64_t max_reuse = slot.n_prompt - 1;
  const engine::LoraSet* lora = slot.job.lora.get();
  const uint64_t partition = slot.job.cache_partition;
  PrefixCache::Match match = cache_.find(slot.tokens, static_cast<int32_t>(max_reuse), lora, partition);
  const Slot* running_source = nullptr;
  for (const auto& other : slots_) {
    if (other.get() == &slot || !other->active || other->job.cache_partition != partition ||
        !same_lora(other->job.lora.get(), lora)) {
      continue;
    }
    const int64_t common = common_prefix(other->tokens, slot.tokens, std::min(other->n_past, max_reuse));
    if (common <= match.n_tokens) continue;
    if (!ctx_->is_recurrent()) {
      match = PrefixCache::Match{other->seq, static_cast<int32_t>(common), -1};
      running_source = other.get();
      continue;
    }
    // A recurrent state cannot be cut back: only a snapshot the other slot took inside the
    // shared part is usable (its latest one).
    for (auto it = other->snaps.rbegin(); it != other->snaps.rend(); ++it) {
      if (it->pos + 1 > common) continue;
      if (it->pos + 1 > match.n_tokens) {
        match = PrefixCache::Match{other->seq, it->pos + 1, it->slot};
        running_source = other.get();
      }
      break;
    }
  }
  if (match.n_tokens <= slot.n_past) return;
  // The slot's own cells (a shorter prefix it computed itself) give way to the shared ones.
  if (slot.n_past > 0 && !ctx_->seq_rm(slot.seq).ok()) return;
  const Status s = match.snapshot >= 0 ? ctx_->restore_state(slot.seq, match.snapshot, match.seq)
                                       : ctx_->seq_cp(match.seq, slot.seq, 0, match.n_tokens);
  const int64_t before = slot.n_cached;
  if (s.ok()) {
    slot.n_past = match.n_tokens;
    slot.n_cached = match.n_tokens;
    if (running_source == nullptr) cache_.touch(match.seq);
  } else {
    slot.n_past = 0;  // cleared above, or nothing held
    slot.n_cached = 0;
  }
  if (metrics_ != nullptr && slot.n_cached > before) metrics_->add_prefix_hit_tokens(slot.n_cached - before);
}

bool Scheduler::waits_for_shared_prefix(const Slot& slot) const {
  const int64_t max_reuse = slot.n_prompt - 1;
  for (const auto& other : slots_) {
    if (other.get() == &slot || !other->active || !other->prefilling() || other->admitted >= slot.admitted ||
        !same_lora(other->job.lora.get(), slot.job.lora.get()))
      continue;
    const int64_t common = common_prefix(other->tokens, slot.tokens, std::min(other->n_prompt, max_reuse));
    // What the other slot's prefill will make reusable: its cells, or its last snapshot in them.
    int64_t reusable = common;
    if (ctx_->is_recurrent()) {
      reusable = common / options_.snapshot_stride * options_.snapshot_stride;
      if (reusable >= other->n_prompt) reusable -= options_.snapshot_stride;  // no snapshot at its prompt's end
    }
    if (reusable > slot.n_past && other->n_past < reusable) return true;
  }
  return false;
}

bool Scheduler::decode_with_eviction(const engine::Batch& batch) {
  for (;;) {
    const Status s = ctx_->decode(batch);
    if (s.ok()) return true;
    if (s.code() == StatusCode::ResourceExhausted && !cache_.empty()) {
      free_seqs_.push_back(cache_.evict_one());
      continue;
    }
    for (auto& slot : slots_) {
      if (slot->active) finish(*slot, FinishReason::Error, Status::internal("decode failed: " + s.message()));
    }
    return false;
  }
}

void Scheduler::step() {
  // Jobs whose client left or whose deadline passed end before any more work is done for them.
  const auto now = Clock::now();
  for (auto& slot : slots_) {
    if (!slot->active) continue;
    if (slot->events->cancelled()) {
      finish(*slot, FinishReason::Cancelled);
    } else if (now >= slot->job.deadline) {
      finish(*slot, FinishReason::DeadlineExceeded,
             deadline_passed(slot->job.received_at, slot->job.deadline, slot->n_generated));
    }
  }

  // One batch: a token for every generating slot, then prompt chunks in admission order.
  engine::Batch batch;
  std::vector<Slot*> outputs;  // slot of each output row
  std::vector<std::pair<Slot*, int64_t>> advanced;
  int64_t n_generating = 0;
  for (auto& slot : slots_) {
    if (!slot->active || slot->prefilling()) continue;
    batch.add(slot->tokens[static_cast<size_t>(slot->n_past)], static_cast<int32_t>(slot->n_past), slot->seq, true);
    outputs.push_back(slot.get());
    advanced.emplace_back(slot.get(), 1);
    ++n_generating;
  }
  // A prompt that starts like one an earlier slot is computing (the n choices of one request,
  // concurrent cases with the same instructions) waits for those tokens and shares their cells
  // instead of computing them a second time.
  std::vector<Slot*> prefilling;
  for (auto& slot : slots_) {
    if (!slot->active || !slot->prefilling()) continue;
    reuse_prefix(*slot);
    if (slot->prefilling() && !waits_for_shared_prefix(*slot)) prefilling.push_back(slot.get());
  }
  std::sort(prefilling.begin(), prefilling.end(),
            [](const Slot* a, const Slot* b) { return a->admitted < b->admitted; });
  int64_t budget = options_.prefill_chunk;
  for (Slot* slot : prefilling) {
    if (budget <= 0) break;
    // Chunks end on multiples of the chunk size, so recurrent snapshots land on round positions.
    const int64_t chunk_end =
        std::min(slot->n_prompt, (slot->n_past / options_.prefill_chunk + 1) * options_.prefill_chunk);
    const int64_t n = std::min(budget, chunk_end - slot->n_past);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t pos = slot->n_past + i;
      const bool last = pos + 1 == slot->n_prompt;
      batch.add(slot->tokens[static_cast<size_t>(pos)], static_cast<int32_t>(pos), slot->seq, last);
      if (last) outputs.push_back(slot);
    }
    advanced.emplace_back(slot, n);
    budget -= n;
  }
  if (batch.size() == 0) return;

  const auto t0 = Clock::now();
  if (!decode_with_eviction(batch)) return;
  const double dt = seconds_since(t0);
  if (metrics_ != nullptr) {
    // Split the step's time between generation and prompt tokens by their share of the batch.
    const double gen_share = static_cast<double>(n_generating) / static_cast<double>(batch.size());
    if (n_generating > 0) metrics_->add_decode_time(dt * gen_share, n_generating);
    if (batch.size() > n_generating) metrics_->add_prefill_time(dt * (1 - gen_share), batch.size() - n_generating);
  }
  for (auto& [slot, n] : advanced) {
    slot->n_past += n;
    if (ctx_->is_recurrent() && slot->prefilling() && slot->n_past % options_.snapshot_stride == 0) {
      const int snap = next_snapshot_++;
      if (ctx_->save_state(slot->seq, snap).ok())
        slot->snaps.push_back(StateSnapshot{static_cast<int32_t>(slot->n_past - 1), snap});
    }
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i]->active) sample(*outputs[i], ctx_->logits(static_cast<int64_t>(i)));
  }
}

void Scheduler::sample(Slot& slot, std::span<const float> logits) {
  const int64_t budget_left = slot.job.max_tokens < 0 ? INT64_MAX : slot.job.max_tokens - slot.n_generated;
  const int64_t remaining = std::min(budget_left, options_.n_ctx_per_slot - static_cast<int64_t>(slot.tokens.size()));
  std::span<const float> to_sample = logits;
  if (slot.constraint) {
    scratch_logits_.assign(logits.begin(), logits.end());
    // Bounded by the constraint's max_mask_work: past it the mask stops and this request ends,
    // instead of the step (and every other slot's token) waiting on it.
    if (Status s = slot.constraint->mask_logits(scratch_logits_, remaining); !s.ok()) {
      finish(slot, FinishReason::Error, std::move(s));
      return;
    }
    to_sample = scratch_logits_;
  }
  const int32_t token = slot.sampler->sample(to_sample);
  if (token == engine::kNoCandidate) {
    // Every token is banned (logit_bias, perhaps with the constraint's mask): end without one.
    finish(slot, end_reason(slot.constraint));
    return;
  }
  if (!slot.first_token) {
    slot.first_token = true;
    slot.first_token_at = Clock::now();
    slot.ttft = seconds_since(slot.queued_at);
    if (metrics_ != nullptr) metrics_->observe_ttft(slot.ttft);
  }
  if (tok_.is_eog(token) && !slot.job.ignore_eos) {
    finish(slot, end_reason(slot.constraint));
    return;
  }
  ++slot.n_generated;
  if (metrics_ != nullptr) metrics_->add_generated_tokens(1);
  if (slot.constraint) {
    if (Status s = slot.constraint->accept(token); !s.ok()) {
      finish(slot, FinishReason::Error, Status::internal("constrained decoding: " + s.message()));
      return;
    }
  }
  slot.sampler->accept(token);
  if (slot.job.logprobs >= 0) slot.pending_tokens.push_back(token_logprobs(logits, token, slot.job.logprobs, tok_));
  slot.pending += slot.decoder->push(token);
  slot.pending_ids.push_back(token);
  if (const size_t at = slot.stop->find_stop(slot.pending); at != std::string::npos) {
    slot.stopping_word = stop_at(slot.job.stop, slot.pending, at);
    slot.pending.resize(at);
    finish(slot, FinishReason::Stop);
    return;
  }
  slot.tokens.push_back(token);
  if (slot.job.max_tokens >= 0 && slot.n_generated >= slot.job.max_tokens) {
    finish(slot, FinishReason::Length);
    return;
  }
  if (static_cast<int64_t>(slot.tokens.size()) >= options_.n_ctx_per_slot) {
    finish(slot, FinishReason::Length);
    return;
  }
  release_text(slot, false);
}

void Scheduler::release_text(Slot& slot, bool final) {
  const size_t n = final ? slot.pending.size() : slot.stop->releasable(slot.pending);
  if (n == 0 && slot.pending_tokens.empty()) return;
  JobEvent e;
  e.kind = JobEvent::Kind::Text;
  e.text = slot.pending.substr(0, n);
  slot.pending.erase(0, n);
  e.tokens = std::move(slot.pending_tokens);
  slot.pending_tokens.clear();
  e.token_ids = std::move(slot.pending_ids);
  slot.pending_ids.clear();
  e.n_generated = slot.n_generated;
  slot.events->push(std::move(e));
}

void Scheduler::finish(Slot& slot, FinishReason reason, Status error) {
  if (reason == FinishReason::Stop || reason == FinishReason::Length) {
    slot.pending += slot.decoder->flush();
    if (const size_t at = slot.stop->find_stop(slot.pending); at != std::string::npos) {
      slot.stopping_word = stop_at(slot.job.stop, slot.pending, at);
      slot.pending.resize(at);
      reason = FinishReason::Stop;
    }
    release_text(slot, true);
  }
  const Clock::time_point now = Clock::now();
  JobEvent done;
  done.kind = JobEvent::Kind::Done;
  done.finish = reason;
  done.usage = Usage{slot.n_prompt, slot.n_generated, slot.n_cached};
  done.error = std::move(error);
  done.ttft_seconds = slot.ttft;
  done.slot_id = slot.index;
  done.stopping_word = std::move(slot.stopping_word);
  Timings& t = done.timings;
  t.cache_n = slot.n_cached;
  t.prompt_n = std::min(slot.n_past, slot.n_prompt) - slot.n_cached;
  t.prompt_ms = ms_between(slot.admitted_at, slot.first_token ? slot.first_token_at : now);
  t.predicted_n = slot.n_generated;
  t.predicted_ms = slot.first_token ? ms_between(slot.first_token_at, now) : 0;
  {
    // Idle in /slots before the client can have its answer: a client that asks right after must
    // not see its own finished job still running (the next publish_gauges() comes after the step).
    std::lock_guard lock(states_mu_);
    if (static_cast<size_t>(slot.index) < states_.size()) {
      SlotState& st = states_[static_cast<size_t>(slot.index)];
      st = SlotState{.id = st.id, .is_processing = false, .n_ctx = st.n_ctx};
    }
  }
  slot.events->push(std::move(done));

  // Keep the computed tokens for later prompts that start the same way.
  const engine::SeqId seq = slot.seq;
  if (slot.n_past > 0 && reason != FinishReason::Error) {
    if (ctx_->is_recurrent()) {
      const int snap = next_snapshot_++;
      if (ctx_->save_state(seq, snap).ok())
        slot.snaps.push_back(StateSnapshot{static_cast<int32_t>(slot.n_past - 1), snap});
    }
    std::vector<int32_t> computed(slot.tokens.begin(), slot.tokens.begin() + slot.n_past);
    for (engine::SeqId freed :
         cache_.insert(seq, std::move(computed), std::move(slot.snaps), slot.job.lora, slot.job.cache_partition))
      free_seqs_.push_back(freed);
    slot.seq = take_free_seq();
  } else {
    (void)ctx_->seq_rm(seq);
    for (const StateSnapshot& s : slot.snaps) ctx_->drop_state(s.slot);
  }
  slot.active = false;
  slot.events.reset();
  slot.sampler.reset();
  slot.decoder.reset();
  slot.constraint.reset();
}

}  // namespace cellserve::server
