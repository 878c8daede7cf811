// What the OpenAI API handlers need of the running server: the model's tokenizer and chat
// template, the scheduler that generates, and the metrics they report into. Built once at
// start-up by the serve command; everything in it outlives the HTTP server.
#pragma once

#include <cstdint>
#include <ctime>
#include <memory>
#include <optional>
#include <string>

#include <boost/json/object.hpp>

#include "engine/chat/chat_template.h"
#include "engine/chat/gguf_chat_template.h"
#include "engine/tokenizer/tokenizer.h"

namespace cellserve::server {

class Scheduler;
class Metrics;
class LoraRegistry;

struct ApiContext {
  Scheduler* scheduler = nullptr;
  Metrics* metrics = nullptr;
  const engine::tokenizer::Tokenizer* tokenizer = nullptr;
  // The chat template in use (engine/chat/template_selection.h: the model's, --chat-template-file,
  // --chat-template, or chatml for a model without one). nullopt only in a context built without
  // one (tests): chat requests and /apply-template then get 400.
  std::optional<engine::chat::ChatTemplate> chat_template;
  engine::chat::GgufChatTemplate chat_meta;  // the template's text and the model's bos/eos token texts
  std::string model_id;                      // --alias, else the file name without .gguf
  // --accept-any-model: a request's "model" that is neither model_id nor an adapter name is
  // served by the loaded model (llama-server's behaviour) instead of 404 model_not_found.
  bool accept_any_model = false;
  int64_t n_ctx = 0;  // tokens one request may use (prompt + completion)
  int64_t n_vocab = 0;
  std::time_t created = 0;             // load time, for /v1/models
  std::string owned_by = "cellserve";  // /v1/models "owned_by" ("cellserve-simulated": engine/simulated)
  boost::json::object model_meta;      // extra /v1/models "meta" (architecture, autotune result...)
  LoraRegistry* lora = nullptr;        // the --lora adapters; null when none were loaded
  // --special-in-content: special-token text inside chat messages becomes control tokens, as in
  // llama.cpp (a message can then forge turns). Off: only the template's own markers do.
  bool special_in_content = false;
};

}  // namespace cellserve::server
