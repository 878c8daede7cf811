// Byte-level BPE (tokenizer.ggml.model "gpt2"): llama.cpp's llm_tokenizer_bpe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/vocab.h"

namespace cellserve::engine::tokenizer {

// Scratch buffers for bpe_tokenize, reusable across calls by one thread.
struct BpeScratch {
  std::vector<uint32_t> cpts;
  std::vector<size_t> word_lengths;
  std::string word;
  struct Symbol {
    int prev;
    int next;
    uint32_t begin;  // byte offset in `word`
    uint32_t len;    // bytes; 0 once merged into the symbol on its left
    int32_t id;      // the token whose text is this symbol's byte-level text, or kNoToken
  };
  std::vector<Symbol> symbols;
  struct Bigram {
    int32_t rank;
    int left;
    int right;
    uint32_t size;
    int32_t result;
  };
  std::vector<Bigram> heap;
};

// Tokenizes one run of plain text (no special tokens in it) and appends the ids to `out`.
// REQUIRES: vocab.type() == VocabType::Bpe.
//
// Algorithm: split the text into words with the vocabulary's pre-tokenizer; within each word start
// from one symbol per byte (its GPT-2 byte-level character) and repeatedly apply the lowest-ranked
// merge among adjacent pairs (ties: leftmost); emit each symbol's token.
void bpe_tokenize(const Vocabulary& vocab, std::string_view text, BpeScratch& scratch, std::vector<int32_t>& out);

}  // namespace cellserve::engine::tokenizer
