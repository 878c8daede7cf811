// Token sampling: a fixed chain of stages over the candidate tokens, in llama.cpp's default
// order — logit bias, penalties, top-k, top-p, min-p, temperature, then a seeded draw (or the
// argmax when temperature <= 0).
#pragma once

#include <cstdint>
#include <deque>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "base/status.h"

namespace cellserve::engine {

struct Candidate {
  int32_t id;
  float logit;
  float p = 0.0f;
};

struct SamplingParams {
  float temperature = 0.8f;                           // <= 0: greedy
  int32_t top_k = 40;                                 // <= 0: off
  float top_p = 0.95f;                                // >= 1: off
  float min_p = 0.05f;                                // <= 0: off
  float repeat_penalty = 1.0f;                        // 1: off (divides positive logits, multiplies negative)
  float frequency_penalty = 0.0f;                     // subtracted once per occurrence
  float presence_penalty = 0.0f;                      // subtracted once if the token occurred
  int32_t penalty_last_n = 64;                        // window of recent tokens the penalties look at (0: off)
  std::vector<std::pair<int32_t, float>> logit_bias;  // added to the token's logit (-inf bans it)
  uint64_t seed = 0xC0FFEE;

  // InvalidArgument naming the parameter when a value is out of range (n_vocab for the biases).
  Status validate(int64_t n_vocab) const;
};

// What Sampler::sample() returns when no token may be emitted: every logit is -inf (or NaN),
// e.g. a logit_bias that bans the whole vocabulary, or bans the only tokens a constraint allows.
inline constexpr int32_t kNoCandidate = -1;

// Each stage, exposed for tests. Stages keep at least one candidate.
namespace sampling {
void apply_logit_bias(std::vector<Candidate>& c, const std::vector<std::pair<int32_t, float>>& bias);
void apply_penalties(std::vector<Candidate>& c, std::span<const int32_t> recent, float repeat, float frequency,
                     float presence);
void top_k(std::vector<Candidate>& c, int32_t k);  // sorts by logit, descending
void softmax(std::vector<Candidate>& c);           // sorts, fills p
void top_p(std::vector<Candidate>& c, float p);
void min_p(std::vector<Candidate>& c, float p);
void temperature(std::vector<Candidate>& c, float t);
int32_t argmax(const std::vector<Candidate>& c);
// Softmax, then a draw; never a candidate of probability 0 (a banned token) unless all are.
int32_t draw(std::vector<Candidate>& c, std::mt19937_64& rng);
}  // namespace sampling

// A sampler for one sequence: its parameters, its RNG and its recent tokens. Not thread-safe.
class Sampler {
 public:
  explicit Sampler(SamplingParams params);

  // Picks the next token from `logits` (n_vocab floats). A token whose logit is -inf after the
  // bias (banned) is never picked; kNoCandidate when every token is.
  int32_t sample(std::span<const float> logits);
  // Records a token of the sequence (prompt or generated) for the penalties.
  void accept(int32_t token);
  void reset();

  const SamplingParams& params() const { return params_; }

 private:
  SamplingParams params_;
  std::mt19937_64 rng_;
  std::deque<int32_t> recent_;
  std::vector<Candidate> candidates_;
};

}  // namespace cellserve::engine
