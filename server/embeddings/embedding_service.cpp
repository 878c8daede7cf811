#include "server/embeddings/embedding_service.h"

#include <algorithm>

namespace cellserve::server::embeddings {

using Clock = std::chrono::steady_clock;

EmbeddingService::EmbeddingService(std::shared_ptr<const engine::Model> model, const EmbeddingServiceOptions& options)
    : model_(std::move(model)), options_(options) {}

Clock::time_point EmbeddingService::deadline(Clock::time_point now, Clock::time_point requested) const {
  const auto limit = options_.timeout_seconds > 0
                         ? std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(std::min(options_.timeout_seconds, 1e9)))
                         : std::chrono::duration_cast<Clock::duration>(kMaxWait);
  return std::min(requested, now + limit);
}

EmbeddingService::Answer EmbeddingService::embed(std::span<const std::vector<int32_t>> inputs,
                                                 Clock::time_point deadline, const std::function<bool()>& client_gone) {
  Answer answer;
  const auto gone = [&] { return client_gone && client_gone(); };
  std::unique_lock<std::timed_mutex> lock(mutex_, std::defer_lock);
  while (!lock.try_lock_for(kPollInterval)) {
    if (gone()) {
      answer.outcome = Outcome::ClientGone;
      return answer;
    }
    if (Clock::now() >= deadline) {
      answer.outcome = Outcome::Busy;
      return answer;
    }
  }
  if (embedder_ == nullptr) {
    auto created = Embedder::create(model_, options_.embedder);
    if (!created.ok()) {
      answer.error = created.status().with_context("creating the embedding context");
      return answer;
    }
    embedder_ = std::move(*created);
  }
  bool timed_out = false, left = false;
  auto result = embedder_->embed(inputs, [&] {
    left = gone();
    timed_out = !left && Clock::now() >= deadline;
    return left || timed_out;
  });
  if (left) {
    answer.outcome = Outcome::ClientGone;
  } else if (timed_out) {
    answer.outcome = Outcome::TimedOut;
  } else if (!result.ok()) {
    answer.error = result.status();
  } else {
    answer.outcome = Outcome::Done;
    answer.embeddings = std::move(*result);
  }
  return answer;
}

}  // namespace cellserve::server::embeddings
