// Byte-level BPE pre-tokenizers: the splitting of text into "words" before any merge runs.
//
// Each kind reproduces, code point for code point, the hand-written scanner llama.cpp runs for that
// pre-tokenizer regex (src/unicode.cpp, unicode_regex_split_custom_*), including where the scanner
// and the regex it stands for disagree. See docs/tokenizer.md for the regexes and the rules.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cellserve::engine::tokenizer {

enum class PreTokenizerKind {
  // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  Gpt2,
  // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  Llama3,
  // As Llama3 but \p{N} (one digit per word).
  Qwen2,
  // As Qwen2 but letter runs also take combining marks: [\p{L}\p{M}]+, and punctuation runs exclude them.
  Qwen35,
};

// The pre-tokenizer llama.cpp uses for a `tokenizer.ggml.pre` name, with the vocabulary flags that
// name implies; nullopt for names this tokenizer does not implement.
struct PreTokenizerInfo {
  PreTokenizerKind kind;
  bool clean_spaces;   // detokenize tidies " ." / " 's" (clean_up_tokenization_spaces)
  bool ignore_merges;  // a word that is itself a token skips the merges
  bool add_bos;        // default for add_bos_token when the file does not say
};
std::optional<PreTokenizerInfo> find_pre_tokenizer(std::string_view pre_name);

// Splits `cpts` into words; appends each word's length in code points to `lengths` (the lengths sum
// to cpts.size()).
void pre_tokenize(PreTokenizerKind kind, std::span<const uint32_t> cpts, std::vector<size_t>& lengths);

// Convenience for tests and tools: decodes `text` (llama.cpp's lenient UTF-8), splits it and returns
// the words re-encoded as UTF-8.
std::vector<std::string> pre_tokenize_text(PreTokenizerKind kind, std::string_view text);

}  // namespace cellserve::engine::tokenizer
