// TokenData: one vocabulary entry (text, score, attributes), and the attribute bits.
#pragma once

#include <cstdint>
#include <string>

namespace cellserve::engine::tokenizer {

// Token attribute bits (llama.cpp's llama_token_attr). GGUF stores a token *type*
// (tokenizer.ggml.token_type: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte);
// load() turns it into one of these bits and may add more (see docs/tokenizer.md).
namespace token_attr {
inline constexpr uint32_t kUndefined = 0;
inline constexpr uint32_t kUnknown = 1u << 0;
inline constexpr uint32_t kUnused = 1u << 1;
inline constexpr uint32_t kNormal = 1u << 2;
inline constexpr uint32_t kControl = 1u << 3;
inline constexpr uint32_t kUserDefined = 1u << 4;
inline constexpr uint32_t kByte = 1u << 5;
inline constexpr uint32_t kLstrip = 1u << 7;
inline constexpr uint32_t kRstrip = 1u << 8;
}  // namespace token_attr

struct TokenData {
  std::string text;  // as stored in the file (SPM: spaces as U+2581; BPE: GPT-2 byte-level code points)
  float score = 0.0f;
  uint32_t attr = token_attr::kNormal;
};

}  // namespace cellserve::engine::tokenizer
