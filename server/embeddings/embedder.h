// Embedder: token sequences -> embedding vectors, on an engine Context of its own.
//
// The vectors are the model's final hidden states after the output norm (the forward pass's
// "result_norm" probe rows, engine/runtime/probe.h), pooled per input (pooling.h) and
// L2-normalised: what llama.cpp returns as embeddings. The Context is separate from the
// scheduler's, so embedding never touches a generating slot's KV cache.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "base/status.h"
#include "engine/models/model.h"
#include "engine/quant/ggml_type.h"
#include "engine/runtime/context.h"
#include "server/embeddings/pooling.h"

namespace cellserve::server::embeddings {

struct EmbedderOptions {
  Pooling pooling = Pooling::Last;
  // KV cells of the Context: the longest input, and the most tokens of several inputs decoded
  // together. Memory: the model's KV bytes per token (ModelInfo::kv_shape) times this.
  int64_t n_ctx = 4096;
  int64_t n_batch = 512;  // tokens per forward pass
  int n_threads = 1;
  engine::GgmlType kv_type = engine::GgmlType::F16;
  // The most token rows whose hidden state (and, with it, logits: the forward pass computes
  // both for an output row) one forward pass keeps. 0: as many as fit kMaxLogitBytes of logits.
  int64_t max_output_rows = 0;
};

// One input's embedding: [n_rows][width] floats, each row of unit length. n_rows is 1, or the
// input's token count for Pooling::None.
struct Embedding {
  std::vector<float> values;
  int64_t n_rows = 0;
};

class Embedder {
 public:
  // Logits buffer a forward pass may fill (output rows x n_vocab floats): why a mean pooling of a
  // long input is decoded in several passes.
  static constexpr int64_t kMaxLogitBytes = int64_t{64} << 20;
  // Inputs decoded together in one batch, each as its own sequence.
  static constexpr int kMaxSequences = 8;

  // A Context for `model` (which must report "result_norm" probe rows, as every architecture in
  // engine/models does). Errors: Context::create()'s (an absurd n_ctx, threads).
  static Result<std::unique_ptr<Embedder>> create(std::shared_ptr<const engine::Model> model,
                                                  const EmbedderOptions& options);

  int64_t width() const { return ctx_->model().info().n_embd; }
  int64_t n_ctx() const { return options_.n_ctx; }
  Pooling pooling() const { return options_.pooling; }

  // The embedding of each input, in order. Inputs are packed into batches of up to
  // kMaxSequences sequences and n_ctx tokens; the cache is cleared before each batch, so no
  // input sees another and the result does not depend on how inputs were grouped (up to float
  // rounding of the batched kernels). `should_stop` (may be empty) is asked before every forward
  // pass: when it answers true, Unavailable "stopped". InvalidArgument for an empty input, one
  // longer than n_ctx or a token id out of range; Internal when the model reports no hidden
  // states. Not thread-safe: one embed() at a time.
  Result<std::vector<Embedding>> embed(std::span<const std::vector<int32_t>> inputs,
                                       const std::function<bool()>& should_stop = {});

 private:
  Embedder(std::unique_ptr<engine::Context> ctx, const EmbedderOptions& options, int64_t max_output_rows);
  // Embeds `inputs`, which fit the cache together (at most kMaxSequences), appending to *out.
  Status embed_group(std::span<const std::vector<int32_t>> inputs, const std::function<bool()>& should_stop,
                     std::vector<Embedding>* out);

  std::unique_ptr<engine::Context> ctx_;
  EmbedderOptions options_;
  int64_t max_output_rows_;
};

}  // namespace cellserve::server::embeddings
