// StreamingDecoder: turns generated tokens, one at a time, into text that is always valid UTF-8.
//
// A character may be split over several tokens (byte tokens "<0xE2>" "<0x82>" "<0xAC>", or byte-level
// BPE pieces that end mid-sequence). push() appends the token's piece and returns the longest prefix
// of the pending bytes that is complete UTF-8, holding back a trailing sequence that may still be
// completed by the next token. flush() ends the stream.
//
// Bytes that can never form a character (a stray continuation byte, a lead byte followed by a
// non-continuation, overlong forms, surrogates, values above U+10FFFF, or a sequence still incomplete
// at flush) are replaced by U+FFFD, one per offending byte, so output is always valid UTF-8.
// The concatenated output equals the concatenation of token_to_piece(id, special) when the pieces form
// valid UTF-8: no SPM leading-space stripping and no space cleaning (as llama-server streams).
//
// Not thread-safe: one decoder per stream. The Tokenizer must outlive the decoder.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/tokenizer/tokenizer.h"

namespace cellserve::engine::tokenizer {

class StreamingDecoder {
 public:
  // `special`: render control tokens (e.g. "<|im_end|>") instead of dropping them.
  explicit StreamingDecoder(const Tokenizer& tokenizer, bool special = false)
      : tokenizer_(&tokenizer), special_(special) {}

  // Adds one token; returns the text that became complete (possibly empty).
  std::string push(int32_t id);
  // Adds raw bytes (for callers that render pieces themselves); same contract as push().
  std::string push_bytes(std::string_view bytes);
  // Ends the stream: returns what is held back, with incomplete sequences replaced by U+FFFD.
  // The decoder is empty afterwards and can be reused.
  std::string flush();

  // Bytes held back waiting for the rest of a character (0..3).
  size_t pending_bytes() const { return pending_.size(); }

 private:
  const Tokenizer* tokenizer_;
  bool special_;
  std::string pending_;
};

}  // namespace cellserve::engine::tokenizer
