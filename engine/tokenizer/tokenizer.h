// Tokenizer: text <-> token ids for a GGUF model, producing exactly llama.cpp's tokens.
//
// Supports tokenizer.ggml.model "llama" (SentencePiece-style BPE, spm.h) and "gpt2" (byte-level BPE,
// bpe.h) with the qwen2, qwen35, llama-bpe and gpt-2 pre-tokenizers (pretokenizer.h). The API follows
// llama.cpp's llama_tokenize / llama_token_to_piece / llama_detokenize; docs/tokenizer.md has details.
//
// A Tokenizer is immutable after creation; every method is const and safe to call from many threads.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "base/text_spans.h"
#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/vocab.h"

namespace cellserve::engine::tokenizer {

class Tokenizer {
 public:
  // Reads the tokenizer of `file` (see Vocabulary::load for the errors). The result does not refer
  // to `file` afterwards.
  static Result<Tokenizer> from_gguf(const GgufFile& file, const VocabularyOptions& options = {});
  explicit Tokenizer(Vocabulary vocab);

  // Text -> ids (llama_tokenize).
  //  add_special: add BOS (and EOS) when the model asks for them (tokenizer.ggml.add_bos_token /
  //    add_eos_token, or the tokenizer type's default: SPM adds BOS, Qwen does not).
  //  parse_special: control tokens written in the text (e.g. "<|im_start|>") become their ids.
  //    Otherwise they are tokenized as plain text. As in llama.cpp, user-defined tokens (e.g. Qwen's
  //    "<think>") are matched in both cases.
  // Malformed UTF-8 never fails: BPE sees U+FFFD for it, SPM its bytes.
  std::vector<int32_t> tokenize(std::string_view text, bool add_special, bool parse_special) const;

  // A rendered chat prompt: tokenize(text, add_special, /*parse_special=*/true), except that a
  // control or unknown token's text that shares a byte with `plain_spans` (a span list,
  // base/text_spans.h: the bytes that came from the request's messages) is tokenized as plain
  // text, exactly as parse_special=false would. Text runs between special tokens are still
  // tokenized whole across span edges, so a prompt whose spans hold no special-token text gets
  // the same ids as tokenize(text, add_special, true).
  std::vector<int32_t> tokenize_prompt(std::string_view text, bool add_special,
                                       std::span<const TextSpan> plain_spans) const;

  // The text of one token (llama_token_to_piece with lstrip 0): SPM spaces restored, byte tokens
  // as their raw byte, byte-level BPE decoded to bytes. Control and unknown tokens render only when
  // `special`; unused tokens and ids out of range render as "". May be an incomplete UTF-8 sequence.
  const std::string& token_to_piece(int32_t id, bool special) const;

  // Ids -> text (llama_detokenize). remove_special drops a leading BOS / trailing EOS the model adds;
  // unparse_special renders control tokens. The leading space SPM adds is removed from the first
  // piece unless that piece follows a removed BOS; BPE models with clean_spaces tidy " ." etc.
  std::string detokenize(std::span<const int32_t> ids, bool remove_special, bool unparse_special) const;

  bool is_eog(int32_t id) const { return vocab_.is_eog(id); }
  int32_t bos() const { return vocab_.bos(); }
  int32_t eos() const { return vocab_.eos(); }
  int32_t eot() const { return vocab_.eot(); }
  int32_t pad() const { return vocab_.pad(); }
  int32_t unk() const { return vocab_.unk(); }
  int32_t n_vocab() const { return vocab_.n_tokens(); }
  const Vocabulary& vocab() const { return vocab_; }

 private:
  std::vector<int32_t> tokenize_impl(std::string_view text, bool add_special, bool parse_special,
                                     std::span<const TextSpan> plain_spans) const;

  Vocabulary vocab_;
  std::vector<std::string> pieces_;  // token_to_piece(id, special=true) for every id
};

}  // namespace cellserve::engine::tokenizer
