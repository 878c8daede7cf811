// A simulated model: an engine::Model that runs no network. It answers with deterministic text
// (answer_text.h) and takes the time a device of the given speed would: a forward pass sleeps
// prompt_tokens / prefill_tps seconds for the prompt tokens in its batch, plus 1 / decode_tps when
// the batch advances any answer (every running request gains one token per such step, as with a
// real batched decode). Everything around it — Context, KV cache, scheduler, prefix cache, the
// API — is the real engine, so slots, queueing, cancellation and metrics behave as they do with
// a loaded model. docs/fleet.md, "Simulate mode".
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "base/status.h"
#include "engine/models/model.h"
#include "engine/simulated/answer_text.h"
#include "engine/simulated/simulate_options.h"
#include "engine/tokenizer/tokenizer.h"

namespace cellserve::engine::simulated {

class SimulatedModel final : public Model {
 public:
  // Builds the GGUF image (simulated_gguf.h) and the answer text for its tokenizer.
  static Result<std::shared_ptr<const SimulatedModel>> create(const SimulateOptions& options);

  void forward(const ForwardArgs& args) const override;

  const SimulateOptions& options() const { return options_; }
  const AnswerText& text() const { return text_; }
  // The most sequences one forward pass advanced (never above the scheduler's slots).
  int max_sequences_per_pass() const { return max_sequences_.load(); }
  // Tokens processed as prompt and as answer, over the model's life.
  int64_t prompt_tokens() const { return prompt_tokens_.load(); }
  int64_t answer_tokens() const { return answer_tokens_.load(); }

 private:
  SimulatedModel(std::shared_ptr<const GgufFile> file, ModelInfo info, const SimulateOptions& options,
                 const tokenizer::Tokenizer& tok);
  // The state after the token at position `pos` - 1 of `seq`: read from its KV cell.
  AnswerState state_before(const ForwardArgs& args, SeqId seq, int32_t pos) const;
  // Remembers that `seq`'s latest token in `kv` is in `cell`, so the next step finds it at once.
  void remember(const KvCache* kv, SeqId seq, int32_t cell) const;

  const SimulateOptions options_;
  const AnswerText text_;
  // Per cache and sequence, the cell of the latest token: a hint, checked against the cell before
  // use, that spares a scan of the whole cache on every decode step.
  mutable std::mutex hints_mu_;
  mutable std::map<std::pair<const KvCache*, SeqId>, int64_t> last_cell_;
  mutable std::atomic<int> max_sequences_{0};
  mutable std::atomic<int64_t> prompt_tokens_{0};
  mutable std::atomic<int64_t> answer_tokens_{0};
};

}  // namespace cellserve::engine::simulated
