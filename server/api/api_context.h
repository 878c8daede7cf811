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
#include "engine/sampling/sampler.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/tool_calls/tool_call_format.h"

namespace cellserve::server {

class Scheduler;
class Metrics;
class LoraRegistry;
namespace embeddings {
class EmbeddingService;
}

// The server-wide sampling defaults (serve --temp, --top-k, --top-p, --seed, --n-predict): what a
// request gets for a field it does not set; a field the request sets wins.
struct GenerationDefaults {
  engine::SamplingParams sampling;  // the engine's defaults with --temp / --top-k / --top-p applied
  std::optional<uint64_t> seed;     // --seed; nullopt: each request draws a random one
  // --n-predict, the token budget of a request that gives none: -1 = until end-of-generation or
  // the context is full. nullopt: each endpoint's own (16 for /v1/completions as OpenAI, the rest
  // of the context for chat and /completion as llama-server).
  std::optional<int64_t> n_predict;
};

struct ApiContext {
  Scheduler* scheduler = nullptr;
  Metrics* metrics = nullptr;
  const engine::tokenizer::Tokenizer* tokenizer = nullptr;
  // The chat template in use (engine/chat/template_selection.h: the model's, --chat-template-file,
  // --chat-template, or chatml for a model without one). nullopt only in a context built without
  // one (tests): chat requests and /apply-template then get 400.
  std::optional<engine::chat::ChatTemplate> chat_template;
  engine::chat::GgufChatTemplate chat_meta;  // the template's text and the model's bos/eos token texts
  // How that template writes tool calls (server/tool_calls): what answers are read for.
  tool_calls::ToolCallFormat tool_format = tool_calls::ToolCallFormat::None;
  std::string model_id;  // --alias, else the file name without .gguf
  // --accept-any-model: a request's "model" that is neither model_id nor an adapter name is
  // served by the loaded model (llama-server's behaviour) instead of 404 model_not_found.
  bool accept_any_model = false;
  int64_t n_ctx = 0;  // tokens one request may use (prompt + completion)
  int64_t n_vocab = 0;
  std::time_t created = 0;             // load time, for /v1/models
  std::string owned_by = "cellserve";  // /v1/models "owned_by" ("cellserve-simulated": engine/simulated)
  boost::json::object model_meta;      // extra /v1/models "meta" (architecture, autotune result...)
  LoraRegistry* lora = nullptr;        // the --lora adapters; null when none were loaded
  // POST /v1/embeddings (serve --embeddings); null without it: the endpoint answers 501.
  embeddings::EmbeddingService* embeddings = nullptr;
  // --special-in-content: special-token text inside chat messages becomes control tokens, as in
  // llama.cpp (a message can then forge turns). Off: only the template's own markers do.
  bool special_in_content = false;
  GenerationDefaults defaults;
};

}  // namespace cellserve::server
