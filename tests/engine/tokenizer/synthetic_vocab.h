// Small in-memory GGUF vocabularies for tokenizer tests that must not depend on shared/testdata.
#pragma once

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/unicode.h"

namespace cellserve::engine::tokenizer::testing {

struct SyntheticVocab {
  std::string model = "gpt2";
  std::string pre = "qwen2";  // empty: no tokenizer.ggml.pre key
  std::vector<std::string> tokens;
  std::vector<int32_t> types;  // empty: no token_type key
  std::vector<float> scores;   // empty: no scores key
  std::vector<std::string> merges;
  bool write_merges = true;
  std::vector<std::pair<std::string, GgufValue>> extra;  // more metadata (ids, flags)

  // Adds a token; returns its id.
  int32_t add(std::string text, int32_t type = 1, float score = 0.0f) {
    tokens.push_back(std::move(text));
    types.push_back(type);
    scores.push_back(score);
    return static_cast<int32_t>(tokens.size() - 1);
  }
};

inline Result<Tokenizer> build_tokenizer(const SyntheticVocab& v, const VocabularyOptions& options = {}) {
  GgufWriter w;
  w.set("general.architecture", GgufValue::string("test"));
  if (!v.model.empty()) w.set("tokenizer.ggml.model", GgufValue::string(v.model));
  if (!v.pre.empty()) w.set("tokenizer.ggml.pre", GgufValue::string(v.pre));
  if (!v.tokens.empty()) w.set("tokenizer.ggml.tokens", GgufValue::string_array(v.tokens));
  if (!v.types.empty()) w.set("tokenizer.ggml.token_type", GgufValue::i32_array(v.types));
  if (!v.scores.empty() && v.model == "llama") w.set("tokenizer.ggml.scores", GgufValue::f32_array(v.scores));
  if (v.write_merges && v.model == "gpt2") w.set("tokenizer.ggml.merges", GgufValue::string_array(v.merges));
  for (const auto& [key, value] : v.extra) w.set(key, value);
  const std::vector<std::byte> bytes = w.to_bytes();
  CS_ASSIGN_OR_RETURN(GgufFile file, GgufFile::parse(bytes));
  return Tokenizer::from_gguf(file, options);  // the tokenizer keeps no reference to `bytes`
}

// A byte-level BPE vocabulary whose first 256 ids are the byte stand-ins in byte order
// (id b = byte b), as in Qwen's vocabulary.
inline SyntheticVocab byte_level_vocab() {
  SyntheticVocab v;
  for (int b = 0; b < 256; ++b) v.add(byte_to_utf8(static_cast<uint8_t>(b)));
  return v;
}

// A SentencePiece vocabulary: <unk> 0, <s> 1, </s> 2, then <0x00>..<0xFF> at ids 3..258.
inline SyntheticVocab spm_vocab() {
  SyntheticVocab v;
  v.model = "llama";
  v.pre.clear();
  v.add("<unk>", 2);
  v.add("<s>", 3);
  v.add("</s>", 3);
  for (int b = 0; b < 256; ++b) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "<0x%02X>", b);
    v.add(hex, 6);
  }
  return v;
}

}  // namespace cellserve::engine::tokenizer::testing
