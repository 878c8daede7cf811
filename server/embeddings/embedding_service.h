// EmbeddingService: the server's one Embedder, created on first use and lent to one request at a
// time. A request waits for it until its deadline, never longer; the computation stops between
// forward passes when the deadline passes or the client leaves.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "base/status.h"
#include "engine/models/model.h"
#include "server/embeddings/embedder.h"

namespace cellserve::server::embeddings {

struct EmbeddingServiceOptions {
  EmbedderOptions embedder;
  // The most a request's deadline may be after it arrives (serve --timeout; 0: none, then
  // kMaxWait bounds the wait for the embedder).
  double timeout_seconds = 600;
};

class EmbeddingService {
 public:
  // How long a request with no deadline at all waits for the embedder.
  static constexpr std::chrono::seconds kMaxWait{600};

  // Nothing is allocated until the first embed(). `model` must report "result_norm" probe rows.
  EmbeddingService(std::shared_ptr<const engine::Model> model, const EmbeddingServiceOptions& options);

  Pooling pooling() const { return options_.embedder.pooling; }
  int64_t width() const { return model_->info().n_embd; }
  int64_t n_ctx() const { return options_.embedder.n_ctx; }  // the most tokens of one input
  // The deadline of a request that arrives at `now` with the client's own `requested` one (max:
  // none): the earlier of it and now + timeout_seconds.
  std::chrono::steady_clock::time_point deadline(std::chrono::steady_clock::time_point now,
                                                 std::chrono::steady_clock::time_point requested) const;

  enum class Outcome {
    Done,        // embeddings holds one Embedding per input
    Busy,        // another request held the embedder until the deadline (503)
    TimedOut,    // the deadline passed during the computation (504)
    ClientGone,  // client_gone() answered true (nothing to answer)
    Failed,      // error says why: the Embedder's errors, or creating it failed
  };
  struct Answer {
    Outcome outcome = Outcome::Failed;
    std::vector<Embedding> embeddings;
    Status error;
  };

  // Embeds `inputs` (see Embedder::embed()) once the embedder is free, giving up at `deadline`
  // or when `client_gone` (may be empty) answers true; both are checked every
  // kPollInterval while waiting and before every forward pass. Thread-safe.
  Answer embed(std::span<const std::vector<int32_t>> inputs, std::chrono::steady_clock::time_point deadline,
               const std::function<bool()>& client_gone);

 private:
  static constexpr std::chrono::milliseconds kPollInterval{50};

  std::shared_ptr<const engine::Model> model_;
  EmbeddingServiceOptions options_;
  std::timed_mutex mutex_;              // held by the request using embedder_
  std::unique_ptr<Embedder> embedder_;  // GUARDED_BY(mutex_); null until the first request
};

}  // namespace cellserve::server::embeddings
