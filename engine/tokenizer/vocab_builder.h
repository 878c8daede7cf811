// Internal to engine/tokenizer: the steps of Vocabulary::load, split across vocab.cpp (reading the
// GGUF arrays) and vocab_specials.cpp (llama.cpp's recognition of special tokens by their text).
#pragma once

#include <string>
#include <string_view>

#include "engine/tokenizer/vocab.h"

namespace cellserve::engine::tokenizer {

struct VocabularyBuilder {
  // Finds the eot/eom/fim ids the file did not give by their usual texts, forces those and the
  // end-of-generation tokens to CONTROL, marks CONTROL tokens whose text contains "unused" as UNUSED,
  // builds the end-of-generation set and the special-token match order.
  static void apply_special_token_rules(Vocabulary& v);
};

// The text_merges_ key of a (left, right) pair; the length prefix keeps distinct pairs distinct.
inline std::string text_merge_key(std::string_view left, std::string_view right) {
  std::string key = std::to_string(left.size());
  key += ':';
  key += left;
  key += right;
  return key;
}

}  // namespace cellserve::engine::tokenizer
