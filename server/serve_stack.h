// Everything `cellserve serve` builds around a loaded model — tokenizer, context, scheduler, LoRA
// registry, chat template, the API context and its /props — as one object, so the agent can run
// the same server in-process for each deployment it hosts.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/json/object.hpp>

#include "base/status.h"
#include "engine/chat/template_selection.h"
#include "engine/models/model.h"
#include "engine/runtime/kv_type.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/api/api_context.h"
#include "server/autotune.h"
#include "server/embeddings/embedding_service.h"
#include "server/lora_registry.h"
#include "server/metrics.h"
#include "server/scheduler/scheduler.h"

namespace cellserve::server {

struct ServeStackOptions {
  std::string model_path;
  // A model built in memory (the simulated engine, engine/simulated): used instead of loading
  // model_path, never autotuned; /v1/models marks it as owned by "cellserve-simulated".
  std::shared_ptr<const engine::Model> model;
  std::vector<std::string> lora;  // "FILE" or "FILE:SCALE"
  int threads = 0;                // 0: the engine's default; with autotune: the only candidate when > 0
  int64_t ctx_size = 0;           // 0: 4096 per slot
  int64_t batch_size = 512;
  std::string kv_type = std::string(engine::kDefaultKvType);
  int parallel = 4;
  int max_queue = 64;
  int64_t prefill_chunk = 256;
  int64_t prefix_cache_mb = 1024;
  double timeout = 600;
  std::string alias;  // model id in the API; "" : the file name without .gguf
  bool autotune = false;
  bool special_in_content = false;             // ApiContext::special_in_content
  bool accept_any_model = false;               // ApiContext::accept_any_model
  engine::chat::TemplateChoice chat_template;  // --chat-template-file / --chat-template; empty: the model's
  std::function<void()> on_autotune_start;     // called when autotune begins (the agent's "tuning" state)
  // The sampling defaults (--temp, --top-k, --top-p, --seed, --n-predict); nullopt: not given.
  std::optional<double> temp;
  std::optional<int64_t> top_k;
  std::optional<double> top_p;
  std::optional<int64_t> seed;       // -1: a random seed per request (llama.cpp's convention)
  std::optional<int64_t> n_predict;  // -1: until end-of-generation or the context is full
  // --embeddings: serve POST /v1/embeddings from an embedding context of its own (docs/embeddings.md).
  bool embeddings = false;
  std::string pooling;  // --pooling none|mean|cls|last; "": the GGUF's pooling_type, else last
  // Set (the agent: the device's MemAvailable): a model whose estimate (server/memory_estimate.h)
  // exceeds it is refused before loading, ResourceExhausted "insufficient_memory: needs ...".
  std::optional<uint64_t> memory_available_bytes;
  // --mlock: the weights are locked in RAM once loaded (server/weight_lock.h); a refusal is an error.
  bool mlock = false;
  // With autotune: the deployment's work (the spec's [workload]); prompt_tokens 0: none, and
  // autotune measures short probes. With one, each slot holds a whole request when ctx_size is 0,
  // autotune judges its candidates by that work within autotune_seconds, and also tries slots
  // (autotune_parallel: 1 up to the workload's concurrency) and q8_0 beside kv_type (autotune_kv).
  AutotuneWorkload workload;
  double autotune_seconds = 20;
  bool autotune_parallel = false;
  bool autotune_kv = false;
  std::vector<int64_t> autotune_prefill_chunks;  // the chunks autotune may choose; empty: its defaults
  // Where autotune's choice is kept (server/autotune_cache.h), and for what: a reload with the
  // same key reuses it instead of measuring. "": never kept.
  std::string autotune_cache;
  std::string autotune_cache_key;
};

// The GenerationDefaults the sampling options give; InvalidArgument naming the option
// ("--top-p must be in (0, 1], got 0") for a value out of range.
Result<GenerationDefaults> generation_defaults(const ServeStackOptions& options);

// InvalidArgument naming the option ("--parallel must be in [1, 32]") for an absurd value; the
// chat template choice as engine::chat::validate_template_choice() (which reads a template file).
Status validate(const ServeStackOptions& options);

struct ServeStack {
  std::unique_ptr<engine::tokenizer::Tokenizer> tokenizer;
  std::unique_ptr<Scheduler> scheduler;
  std::unique_ptr<LoraRegistry> lora;
  std::unique_ptr<embeddings::EmbeddingService> embeddings;  // with --embeddings
  ApiContext api;
  boost::json::object props;  // what GET /props reports
  int threads = 0;            // the thread count in use (autotuned or given)
  int64_t prefill_chunk = 0;
  double decode_tok_s = 0;  // measured by autotune (0 without)
  double prompt_tok_s = 0;
  int parallel = 0;              // the slots in use (autotuned or given)
  std::string kv_type;           // the KV cache type in use (autotuned or given)
  bool autotune_cached = false;  // autotune's choice came from its cache

  // Stops the scheduler before the tokenizer and registry it uses go away.
  ~ServeStack() { scheduler.reset(); }
};

// Loads the model and builds the stack. `metrics` must outlive the stack; `log` gets progress
// lines (the chat template in use, LoRA adapters, autotune measurements).
Result<std::unique_ptr<ServeStack>> load_serve_stack(const ServeStackOptions& options, Metrics* metrics,
                                                     const std::function<void(const std::string&)>& log);

}  // namespace cellserve::server
