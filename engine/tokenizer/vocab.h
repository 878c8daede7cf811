// Vocabulary: a model's tokens, their attributes, special ids and BPE merges, read from the GGUF
// `tokenizer.ggml.*` metadata the way llama.cpp's llama_vocab::impl::load reads them.
//
// A Vocabulary is immutable after load() and safe to share between threads.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/lookup_tables.h"
#include "engine/tokenizer/pretokenizer.h"
#include "engine/tokenizer/token_data.h"

namespace cellserve::engine::tokenizer {

inline constexpr int32_t kNoToken = -1;

enum class VocabType {
  Spm,  // tokenizer.ggml.model "llama": SentencePiece BPE by token score, <0xXX> byte fallback
  Bpe,  // tokenizer.ggml.model "gpt2": byte-level BPE by merge rank
};

struct VocabularyOptions {
  // Use this pre-tokenizer name instead of the file's tokenizer.ggml.pre (BPE only).
  std::optional<std::string> pre_override;
};

// Move-only: the text index points into the token array.
class Vocabulary {
 public:
  Vocabulary(Vocabulary&&) noexcept = default;
  Vocabulary& operator=(Vocabulary&&) noexcept = default;
  Vocabulary(const Vocabulary&) = delete;
  Vocabulary& operator=(const Vocabulary&) = delete;

  // Reads the tokenizer of `file`. Errors: NotFound when the file has no tokenizer.ggml.model or
  // tokens; Unimplemented for a model other than "llama"/"gpt2" or an unsupported pre-tokenizer;
  // DataLoss for arrays of the wrong type or length.
  static Result<Vocabulary> load(const GgufFile& file, const VocabularyOptions& options = {});

  VocabType type() const { return type_; }
  const std::string& model_name() const { return model_name_; }  // tokenizer.ggml.model
  const std::string& pre_name() const { return pre_name_; }      // effective pre-tokenizer name (BPE)
  PreTokenizerKind pre_kind() const { return pre_kind_; }        // meaningful for Bpe only

  int32_t n_tokens() const { return static_cast<int32_t>(tokens_.size()); }
  bool is_valid(int32_t id) const { return id >= 0 && id < n_tokens(); }
  // REQUIRES: is_valid(id).
  const TokenData& token(int32_t id) const { return tokens_[static_cast<size_t>(id)]; }
  uint32_t attr(int32_t id) const { return token(id).attr; }
  // The id of the token whose text is exactly `text`, or kNoToken.
  int32_t find(std::string_view text) const;

  // Special ids; kNoToken when the model has none.
  int32_t bos() const { return bos_; }
  int32_t eos() const { return eos_; }
  int32_t eot() const { return eot_; }
  int32_t eom() const { return eom_; }
  int32_t unk() const { return unk_; }
  int32_t pad() const { return pad_; }
  int32_t sep() const { return sep_; }
  // True for the tokens that end generation (eos, eot, eom and the end-like tokens llama.cpp
  // recognises by text, e.g. <|im_end|>, <|endoftext|>).
  bool is_eog(int32_t id) const { return eog_.count(id) > 0; }
  const std::set<int32_t>& eog_ids() const { return eog_; }

  bool add_bos() const { return add_bos_; }
  bool add_eos() const { return add_eos_; }
  bool add_space_prefix() const { return add_space_prefix_; }
  bool clean_spaces() const { return clean_spaces_; }
  bool ignore_merges() const { return ignore_merges_; }

  // Control, user-defined and unknown tokens in the order special-token matching tries them
  // (longest text first; equal lengths by id).
  const std::vector<int32_t>& special_tokens() const { return special_tokens_; }

  // The merge of tokens `left` and `right`, or nullptr when the merges list has no such pair.
  const BpeMerge* find_merge(int32_t left, int32_t right) const;
  // The same by text, for symbols that are not tokens (merges whose halves are not in the vocabulary).
  const BpeMerge* find_merge_text(std::string_view left, std::string_view right) const;
  bool has_text_merges() const { return !text_merges_.empty(); }
  // BPE: the token of byte `b`'s byte-level stand-in (kNoToken if absent).
  int32_t byte_level_token(uint8_t b) const { return byte_level_token_[b]; }
  // SPM: the token for byte `b`: "<0xXX>", else the one-character text, else kNoToken.
  int32_t byte_fallback_token(uint8_t b) const;

 private:
  Vocabulary() = default;
  friend struct VocabularyBuilder;  // vocab.cpp, vocab_specials.cpp

  VocabType type_ = VocabType::Spm;
  std::string model_name_;
  std::string pre_name_;
  PreTokenizerKind pre_kind_ = PreTokenizerKind::Gpt2;

  std::vector<TokenData> tokens_;
  TextIndex text_to_id_;  // indexes tokens_ (whose buffer survives moves of the Vocabulary)

  int32_t bos_ = kNoToken, eos_ = kNoToken, eot_ = kNoToken, eom_ = kNoToken;
  int32_t unk_ = kNoToken, pad_ = kNoToken, sep_ = kNoToken;
  int32_t fim_pre_ = kNoToken, fim_suf_ = kNoToken, fim_mid_ = kNoToken;
  int32_t fim_pad_ = kNoToken, fim_rep_ = kNoToken, fim_sep_ = kNoToken;
  std::set<int32_t> eog_;

  bool add_bos_ = false;
  bool add_eos_ = false;
  bool add_space_prefix_ = false;
  bool clean_spaces_ = false;
  bool ignore_merges_ = false;

  std::vector<int32_t> special_tokens_;
  MergeTable merges_;                                      // (left id, right id) -> {rank, result}
  std::unordered_map<std::string, BpeMerge> text_merges_;  // key: text_merge_key(left, right); rarely used
  std::vector<int32_t> byte_level_token_ = std::vector<int32_t>(256, kNoToken);
};

}  // namespace cellserve::engine::tokenizer
