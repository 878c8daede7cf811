// Log-probabilities of the next token from raw logits (the model's distribution, before
// sampling's filters), for the OpenAI logprobs fields.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/tokenizer/tokenizer.h"
#include "server/scheduler/job.h"

namespace cellserve::server {

// The chosen token's logprob and, when top > 0, the `top` most likely tokens (most likely first).
GeneratedToken token_logprobs(std::span<const float> logits, int32_t chosen, int32_t top,
                              const engine::tokenizer::Tokenizer& tok);

}  // namespace cellserve::server
