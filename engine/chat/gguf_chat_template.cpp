#include "engine/chat/gguf_chat_template.h"

namespace cellserve::engine::chat {
namespace {

Result<std::string> token_text(const GgufFile& file, const char* id_key) {
  const std::optional<int64_t> id = file.get_int(id_key);
  if (!id) return std::string();
  const GgufValue* tokens_value = file.find("tokenizer.ggml.tokens");
  const GgufArray* tokens = tokens_value != nullptr ? tokens_value->as_array() : nullptr;
  if (tokens == nullptr) return Status::data_loss(std::string(id_key) + " is set but tokenizer.ggml.tokens is missing");
  if (*id < 0 || static_cast<uint64_t>(*id) >= tokens->items.size()) {
    return Status::data_loss(std::string(id_key) + " " + std::to_string(*id) + " is outside the vocabulary of " +
                             std::to_string(tokens->items.size()) + " tokens");
  }
  const std::string* text = tokens->items[static_cast<size_t>(*id)].as_string();
  if (text == nullptr) return Status::data_loss("tokenizer.ggml.tokens is not an array of strings");
  return *text;
}

}  // namespace

Result<GgufChatTemplate> read_gguf_chat_tokens(const GgufFile& file) {
  GgufChatTemplate out;
  CS_ASSIGN_OR_RETURN(out.bos_token, token_text(file, "tokenizer.ggml.bos_token_id"));
  CS_ASSIGN_OR_RETURN(out.eos_token, token_text(file, "tokenizer.ggml.eos_token_id"));
  return out;
}

Result<GgufChatTemplate> read_gguf_chat_template(const GgufFile& file) {
  std::optional<std::string> source = file.get_string("tokenizer.chat_template");
  if (!source) return Status::not_found("the model has no tokenizer.chat_template");
  CS_ASSIGN_OR_RETURN(GgufChatTemplate out, read_gguf_chat_tokens(file));
  out.source = std::move(*source);
  return out;
}

}  // namespace cellserve::engine::chat
