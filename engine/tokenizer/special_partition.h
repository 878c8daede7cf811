// Splitting text at special tokens before tokenization (llama.cpp's tokenizer_st_partition).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "base/text_spans.h"
#include "engine/tokenizer/vocab.h"

namespace cellserve::engine::tokenizer {

// A piece of the input: either a special token, or a run of text still to be tokenized.
struct Fragment {
  int32_t token = kNoToken;  // the special token, or kNoToken for text
  size_t offset = 0;         // text: byte range [offset, offset + length) of the input
  size_t length = 0;
};

// Splits `text` at every occurrence of a special token's text, trying tokens in
// vocab.special_tokens() order (longest first) and, for each token, its occurrences left to right
// without overlap. Control and unknown tokens take part only when `parse_special`; user-defined
// tokens always do. Text fragments are never empty; an empty `text` yields no fragments.
// `plain_spans` (a span list, base/text_spans.h) are bytes where control and unknown tokens are
// never matched: an occurrence that shares a byte with them stays text, as with parse_special off.
std::vector<Fragment> partition_special_tokens(const Vocabulary& vocab, std::string_view text, bool parse_special,
                                               std::span<const TextSpan> plain_spans = {});

}  // namespace cellserve::engine::tokenizer
