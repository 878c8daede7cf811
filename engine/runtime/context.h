// Context: a model plus the per-user state needed to run it — KV cache, threads, logits.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "base/status.h"
#include "engine/models/model.h"
#include "engine/runtime/batch.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/recurrent_state.h"
#include "engine/runtime/thread_pool.h"

namespace cellserve::engine {

struct ContextParams {
  int64_t n_ctx = 4096;   // KV cells shared by all sequences
  int64_t n_batch = 512;  // tokens per forward pass; longer batches are split
  int n_threads = 1;
  int n_seq_max = 16;  // sequence ids must be in [0, n_seq_max)
  GgmlType kv_type = GgmlType::F16;
};

// Runs batches of one or more sequences through a shared model. Not thread-safe: one decode at
// a time. The model must outlive the context (it holds a shared_ptr).
class Context {
 public:
  static Result<std::unique_ptr<Context>> create(std::shared_ptr<const Model> model, const ContextParams& params);

  const Model& model() const { return *model_; }
  const ContextParams& params() const { return params_; }
  KvCache& kv() { return kv_; }
  const KvCache& kv() const { return kv_; }
  // The per-sequence recurrent state (shape().n_layer == 0 for models without recurrent layers).
  const RecurrentState& recurrent() const { return recurrent_; }
  // True when the model keeps a recurrent state per sequence (qwen35): such a sequence can be
  // cleared or continued, but not cut back to an earlier position except through a snapshot.
  bool is_recurrent() const { return recurrent_.shape().n_layer > 0; }
  ThreadPool& pool() { return pool_; }

  // Validates the batch (token ids, sequence ids, positions after the sequence's cached ones),
  // stores its keys and values in the cache and computes logits for its output tokens. On error
  // the cache is unchanged. InvalidArgument for a bad batch, ResourceExhausted when the cache
  // is full.
  Status decode(const Batch& batch);

  // Logits of the i-th output token of the last decode (batch order). REQUIRES i < n_outputs().
  std::span<const float> logits(int64_t i) const;
  int64_t n_outputs() const { return n_outputs_; }

  // LoRA adapters for sequence `seq`'s tokens in later decodes (seq < 0: every sequence; an
  // empty or null set: none). The adapters change what a token's keys and values are, so a
  // sequence should keep one set for its whole life; seq_cp does not copy it. Each adapter
  // must have been loaded against this context's model (LoraAdapter::load).
  Status set_lora(SeqId seq, std::shared_ptr<const LoraSet> set);
  const LoraSet* lora(SeqId seq) const;

  // Records intermediate tensors of later decodes (nullptr: off). Not owned.
  void set_probe(ProbeSink* probe) { probe_ = probe; }

  // Sequence management. A position range [p0, p1) (p1 < 0: to the end); seq < 0: every
  // sequence.
  //
  // seq_rm removes the sequence's cells in the range. On a recurrent model the state cannot be
  // rewound, so only two cases are accepted: the range holds none of the sequence's positions
  // (nothing to do) or all of them (the sequence is cleared and its state reset). Any other
  // range returns Unimplemented and changes nothing: use restore_state() to go back to a
  // snapshot instead.
  Status seq_rm(SeqId seq, int32_t p0 = 0, int32_t p1 = -1);
  // seq_cp makes `dst` share `src`'s cells in the range (no K/V data is copied). On a recurrent
  // model the range must cover all of src's positions, dst must hold no positions, and src's
  // recurrent state is copied to dst; otherwise Unimplemented / InvalidArgument and nothing
  // changes. InvalidArgument for sequence ids outside [0, n_seq_max).
  Status seq_cp(SeqId src, SeqId dst, int32_t p0 = 0, int32_t p1 = -1);
  // Largest position held for `seq`, or -1.
  int32_t seq_pos_max(SeqId seq) const { return kv_.seq_pos_max(seq); }

  // State snapshots, for reusing a long shared prefix (a system prompt) on hybrid models, where
  // the KV cells alone do not describe the sequence.
  //
  // save_state records `seq` as it stands now (after its last position p = seq_pos_max(seq))
  // in snapshot `slot`, overwriting the slot: the recurrent state (for a recurrent model) and
  // p. InvalidArgument when seq holds no positions. Memory: recurrent().shape()
  // .floats_per_sequence() floats per slot, until drop_state(slot).
  Status save_state(SeqId seq, int slot);
  // restore_state makes `seq` continue from snapshot `slot` taken at position p: afterwards seq
  // holds positions [0, p] and the snapshot's recurrent state, so its next token is at p + 1.
  //  - prefix_from < 0: seq itself holds the prefix; its cells after p are removed.
  //  - prefix_from >= 0: seq must be empty; it shares prefix_from's cells [0, p] (no K/V data is
  //    copied), the way a new request reuses a cached system prompt.
  // REQUIRES (the prefix-reuse rule, which only the caller can check): the cells [0, p] that
  // seq ends up with hold the same tokens the snapshot's sequence had absorbed at save time —
  // e.g. key snapshots by the token ids of the prefix. Checked: the prefix holder holds
  // position p (InvalidArgument), the slot is not empty (NotFound), an empty seq when sharing
  // (InvalidArgument). On error nothing changes. Works for every model; for one without
  // recurrent layers it only trims or shares cells.
  Status restore_state(SeqId seq, int slot, SeqId prefix_from = -1);
  // Frees snapshot `slot` (no-op when empty).
  void drop_state(int slot) { recurrent_.drop(slot); }

 private:
  Context(std::shared_ptr<const Model> model, const ContextParams& params, KvCache kv, RecurrentState recurrent);
  Status validate(const Batch& batch) const;
  Status check_seq(SeqId seq, bool allow_all) const;
  // For a recurrent model: whether [p0, p1) holds none (0), all (2) or part (1) of seq's cells.
  int range_coverage(SeqId seq, int32_t p0, int32_t p1) const;

  std::shared_ptr<const Model> model_;
  ContextParams params_;
  KvCache kv_;
  RecurrentState recurrent_;
  ThreadPool pool_;
  ProbeSink* probe_ = nullptr;
  std::vector<float> logits_;                             // [n_outputs][n_vocab]
  std::vector<std::shared_ptr<const LoraSet>> seq_lora_;  // [n_seq_max]
  int64_t n_outputs_ = 0;
};

}  // namespace cellserve::engine
