// Reading what a GGUF file says about chatting: the template text and the BOS/EOS token texts that
// Hugging Face passes to it as bos_token / eos_token.
#pragma once

#include <string>

#include "base/status.h"
#include "engine/gguf/gguf_file.h"

namespace cellserve::engine::chat {

struct GgufChatTemplate {
  std::string source;     // tokenizer.chat_template
  std::string bos_token;  // tokenizer.ggml.tokens[bos_token_id], "" when the model has no BOS
  std::string eos_token;  // tokenizer.ggml.tokens[eos_token_id], "" when the model has no EOS
};

// Errors: NotFound when the file has no tokenizer.chat_template; DataLoss when a BOS/EOS id is
// outside tokenizer.ggml.tokens or that array is not an array of strings.
Result<GgufChatTemplate> read_gguf_chat_template(const GgufFile& file);

// The BOS/EOS token texts alone (source left empty), for a template that does not come from the
// file; works whether or not the file has a template. Errors: DataLoss, as above.
Result<GgufChatTemplate> read_gguf_chat_tokens(const GgufFile& file);

}  // namespace cellserve::engine::chat
