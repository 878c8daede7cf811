// SentencePiece-style BPE (tokenizer.ggml.model "llama"): llama.cpp's llm_tokenizer_spm.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/tokenizer/vocab.h"

namespace cellserve::engine::tokenizer {

// Tokenizes one run of plain text (no special tokens in it) and appends the ids to `out`.
// `text` must already have its spaces escaped as U+2581 (and the leading space added when wanted);
// Tokenizer::tokenize does both. REQUIRES: vocab.type() == VocabType::Spm.
//
// Algorithm: start from one symbol per UTF-8 character; repeatedly merge the adjacent pair whose
// concatenation is a token with the highest score (ties: leftmost); emit each final symbol's token,
// or its bytes as <0xXX> tokens when it is not one.
void spm_tokenize(const Vocabulary& vocab, std::string_view text, std::vector<int32_t>& out);

}  // namespace cellserve::engine::tokenizer
