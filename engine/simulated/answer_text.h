// The text a simulated model writes: a deterministic function of the prompt. Every token of a
// sequence updates a small state; a prompt token hashes into the seed, a token that continues the
// answer advances it. The answer for a seed is 8 to 64 words (the count from the seed) drawn from
// a fixed list of plain English words, the last followed by ".", then the end-of-text token:
//   "amber river quietly follows the ... stone."
// Equal prompts give equal answers; a changed prompt almost surely a different one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/tokenizer/tokenizer.h"

namespace cellserve::engine::simulated {

// What the model keeps per token (in the KV cell, so cached prefixes and copies carry it).
struct AnswerState {
  uint64_t seed = 0;
  uint32_t word = 0;   // the answer word the next token belongs to
  uint32_t piece = 0;  // the token within that word
};

class AnswerText {
 public:
  // Tokenizes the word list with `tok` (each word's first, middle and last form).
  explicit AnswerText(const tokenizer::Tokenizer& tok);

  // The state before a sequence's first token.
  static AnswerState start();
  // Words in the answer for `seed`: 8..64.
  static uint32_t answer_words(uint64_t seed);

  // The token that follows `s`: the answer's next token, or the end-of-text token when the
  // answer is complete.
  int32_t next_token(const AnswerState& s) const;
  // The state after `token` at state `s`: the answer advanced when `token` is next_token(s) and
  // the answer is not complete (the model's own output fed back), else `token` hashed into the
  // seed as prompt (and the answer restarted).
  AnswerState after(const AnswerState& s, int32_t token, bool* continued) const;

  // The whole answer for a prompt ending in state `s` (tests, docs).
  std::string answer(const AnswerState& s, const tokenizer::Tokenizer& tok) const;

 private:
  const std::vector<int32_t>& pieces(const AnswerState& s) const;

  int32_t end_token_ = 0;
  // Per word of the list: its tokens as the answer's first word ("word"), as a middle word
  // (" word") and as the last (" word.").
  std::vector<std::vector<int32_t>> first_, middle_, last_;
};

}  // namespace cellserve::engine::simulated
