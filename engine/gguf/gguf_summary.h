// A digest of a GGUF file's metadata: architecture, hyperparameters, tokenizer, tensor census.
// Used by `cellserve inspect` and wherever a model is described to a user.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"

namespace cellserve::engine {

struct SpecialToken {
  std::string role;  // "bos", "eos", "eot", "pad", "unk", "sep", "mask"
  int64_t id = -1;
  std::string text;  // the token's text, or "(out of range)"
};

struct TokenizerSummary {
  std::string model;  // tokenizer.ggml.model: "llama" (SPM), "gpt2" (byte-level BPE), ...
  std::string pre;    // tokenizer.ggml.pre
  int64_t vocab_size = 0;
  int64_t merges = 0;
  std::vector<SpecialToken> special_tokens;
  std::optional<std::string> add_bos, add_eos;  // "true"/"false" when the file says
};

// Pointers point into the GgufFile, which must outlive the summary.
struct GgufSummary {
  std::string architecture;
  std::string name;
  std::string file_type;                             // "MOSTLY_Q4_K_M (15)", empty when absent
  std::vector<const GgufKeyValue*> hyperparameters;  // "<arch>.*" keys
  std::vector<const GgufKeyValue*> other_metadata;   // neither hyperparameters nor tokenizer arrays
  TokenizerSummary tokenizer;
  std::optional<size_t> chat_template_chars;
  uint64_t parameter_count = 0;
  uint64_t tensor_bytes = 0;
  std::map<std::string, int> type_census;  // ggml type name -> tensor count
};

GgufSummary summarize(const GgufFile& file);

}  // namespace cellserve::engine
