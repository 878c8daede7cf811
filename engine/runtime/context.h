// Context: a model plus the per-user state needed to run it — KV cache, threads, logits.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "base/status.h"
#include "engine/models/model.h"
#include "engine/runtime/batch.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/thread_pool.h"

namespace cellserve::engine {

struct ContextParams {
  int64_t n_ctx = 4096;      // KV cells shared by all sequences
  int64_t n_batch = 512;     // tokens per forward pass; longer batches are split
  int n_threads = 1;
  int n_seq_max = 16;        // sequence ids must be in [0, n_seq_max)
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
  ThreadPool& pool() { return pool_; }

  // Validates the batch (token ids, sequence ids, positions after the sequence's cached ones),
  // stores its keys and values in the cache and computes logits for its output tokens. On error
  // the cache is unchanged. InvalidArgument for a bad batch, ResourceExhausted when the cache
  // is full.
  Status decode(const Batch& batch);

  // Logits of the i-th output token of the last decode (batch order). REQUIRES i < n_outputs().
  std::span<const float> logits(int64_t i) const;
  int64_t n_outputs() const { return n_outputs_; }

  // Records intermediate tensors of later decodes (nullptr: off). Not owned.
  void set_probe(ProbeSink* probe) { probe_ = probe; }

  // Sequence management (see KvCache).
  void seq_rm(SeqId seq, int32_t p0 = 0, int32_t p1 = -1) { kv_.seq_rm(seq, p0, p1); }
  void seq_cp(SeqId src, SeqId dst, int32_t p0 = 0, int32_t p1 = -1) { kv_.seq_cp(src, dst, p0, p1); }
  int32_t seq_pos_max(SeqId seq) const { return kv_.seq_pos_max(seq); }

 private:
  Context(std::shared_ptr<const Model> model, const ContextParams& params, KvCache kv);
  Status validate(const Batch& batch) const;

  std::shared_ptr<const Model> model_;
  ContextParams params_;
  KvCache kv_;
  ThreadPool pool_;
  ProbeSink* probe_ = nullptr;
  std::vector<float> logits_;  // [n_outputs][n_vocab]
  int64_t n_outputs_ = 0;
};

}  // namespace cellserve::engine
