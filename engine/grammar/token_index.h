// Internal to engine/grammar: the vocabulary as byte strings, sorted so that a mask walks shared
// prefixes once (see ConstrainedSequence::mask_logits).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/grammar/output_constraint.h"

namespace cellserve::engine::grammar {

class TokenIndex {
 public:
  enum class Kind : uint8_t {
    Excluded,  // control, unknown, unused or user-defined token, or no bytes: never inside a document
    Text,      // its bytes may appear in a document
    EndOfGeneration,
  };

  // `special_text`: control and user-defined tokens (other than end-of-generation ones) count as
  // Text, their pieces as their bytes, so that a grammar may ask for markers such as <tool_call>
  // or [TOOL_CALLS]. Off (responses formats, the `grammar` field): they never appear.
  explicit TokenIndex(const tokenizer::Tokenizer& tok, bool special_text = false);

  int32_t n_vocab() const { return static_cast<int32_t>(kinds_.size()); }
  Kind kind(int32_t id) const { return kinds_[static_cast<size_t>(id)]; }
  const std::vector<int32_t>& eog_ids() const { return eog_ids_; }

  // Text tokens in bytewise order of their pieces: i in [0, size()).
  size_t size() const { return sorted_ids_.size(); }
  int32_t id(size_t i) const { return sorted_ids_[i]; }
  std::string_view piece(size_t i) const {
    return std::string_view(bytes_).substr(offsets_[i], offsets_[i + 1] - offsets_[i]);
  }
  // The length of the prefix piece(i) shares with piece(i - 1) (0 for i = 0).
  uint32_t lcp(size_t i) const { return lcp_[i]; }
  size_t max_piece_length() const { return max_len_; }

  // The bytes of text token `id` (REQUIRES: kind(id) == Text).
  std::string_view piece_of(int32_t id) const { return piece(static_cast<size_t>(position_[static_cast<size_t>(id)])); }

 private:
  std::vector<Kind> kinds_;  // [n_vocab]
  std::vector<int32_t> eog_ids_;
  std::vector<int32_t> sorted_ids_;  // [n_text]
  std::vector<uint32_t> offsets_;    // [n_text + 1] into bytes_
  std::string bytes_;                // the pieces, concatenated in sorted order
  std::vector<uint32_t> lcp_;        // [n_text]
  std::vector<int32_t> position_;    // [n_vocab]: id -> sorted index (-1 if not text)
  size_t max_len_ = 0;
};

}  // namespace cellserve::engine::grammar
