#include "server/serve_stack.h"

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <limits>

#include "engine/chat/template_selection.h"
#include "engine/lora/lora_adapter.h"
#include "engine/runtime/context.h"
#include "engine/runtime/cpu_topology.h"
#include "engine/runtime/kv_type.h"
#include "engine/simulated/simulated_gguf.h"
#include "server/autotune.h"
#include "server/autotune_cache.h"
#include "server/memory_estimate.h"
#include "server/tool_calls/tool_call_format.h"
#include "server/weight_lock.h"

namespace cellserve::server {

namespace json = boost::json;

namespace {

std::string number_text(double v) {
  std::string s = std::to_string(v);
  s.erase(s.find_last_not_of('0') + 1);  // "0.500000" -> "0.5", "2.000000" -> "2."
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

// With a workload, the slot counts autotune tries: 1, 2, 4, ... up to the workload's concurrency
// (at most 32, and the concurrency itself), less those whose memory estimate does not fit the
// device when it said what it has.
std::vector<int> slot_candidates(const ServeStackOptions& o, int64_t slot_ctx) {
  const int most = std::clamp(o.workload.concurrency, 1, 32);
  std::vector<int> out;
  for (int p = 1; p <= most; p *= 2) out.push_back(p);
  if (out.back() != most) out.push_back(most);
  if (o.memory_available_bytes && !o.model_path.empty()) {
    std::erase_if(out, [&](int p) {
      auto need = estimate_serve_memory({o.model_path, slot_ctx * p, p, o.batch_size, o.kv_type, o.prefix_cache_mb});
      return p > 1 && (!need.ok() || !insufficient_memory(*need, *o.memory_available_bytes).empty());
    });
  }
  return out;
}

// Autotune's choice for `o`: the one kept for its key (*cached set), else measured now and kept.
Result<std::optional<AutotuneResult>> tuned_or_kept(const ServeStackOptions& o,
                                                    const std::shared_ptr<const engine::Model>& model,
                                                    engine::GgmlType kv, int64_t slot_ctx,
                                                    const std::function<void(const std::string&)>& log, bool* cached) {
  std::optional<AutotuneResult> kept = read_autotune_cache(o.autotune_cache, o.autotune_cache_key);
  if (kept) {
    log("autotune: reused the choice kept in " + o.autotune_cache);
    *cached = true;
    return kept;
  }
  AutotuneOptions ao;
  ao.kv_type = kv;
  if (o.threads > 0) ao.threads = {o.threads};
  if (!o.autotune_prefill_chunks.empty()) ao.prefill_chunks = o.autotune_prefill_chunks;
  ao.workload = o.workload;
  if (o.workload.prompt_tokens > 0) {
    ao.max_seconds = o.autotune_seconds;
    if (o.autotune_parallel) ao.parallels = slot_candidates(o, slot_ctx);
    if (o.autotune_kv) ao.kv_types = {kv, engine::GgmlType::Q8_0};
  }
  if (o.on_autotune_start) o.on_autotune_start();
  CS_ASSIGN_OR_RETURN(AutotuneResult tuned, autotune(model, ao, log));
  if (Status kept_now = write_autotune_cache(o.autotune_cache, o.autotune_cache_key, tuned); !kept_now.ok()) {
    log("autotune: its choice is not kept: " + kept_now.message());
  }
  return std::optional<AutotuneResult>(std::move(tuned));
}

// --embeddings: an embedding context of its own, inputs as long as one generation request may be.
Result<std::unique_ptr<embeddings::EmbeddingService>> embedding_service(
    const ServeStackOptions& o, const std::shared_ptr<const engine::Model>& model, int64_t n_ctx,
    const engine::ContextParams& params, const std::function<void(const std::string&)>& log) {
  CS_ASSIGN_OR_RETURN(const embeddings::PoolingChoice pooling, embeddings::choose_pooling(o.pooling, model->file()));
  embeddings::EmbeddingServiceOptions eo;
  eo.embedder.pooling = pooling.pooling;
  eo.embedder.n_ctx = n_ctx;
  eo.embedder.n_batch = params.n_batch;
  eo.embedder.n_threads = params.n_threads;
  eo.embedder.kv_type = params.kv_type;
  eo.timeout_seconds = o.timeout;
  log("embeddings: on, pooling " + std::string(embeddings::pooling_name(pooling.pooling)) + " (" + pooling.source +
      "), up to " + std::to_string(n_ctx) + " tokens per input");
  return std::make_unique<embeddings::EmbeddingService>(model, eo);
}

// The device said how much memory it has: a model whose estimate exceeds it is refused before
// loading, ResourceExhausted "insufficient_memory: needs ...".
Status check_memory(const ServeStackOptions& o, int64_t ctx_size, const std::function<void(const std::string&)>& log) {
  CS_ASSIGN_OR_RETURN(const MemoryEstimate need, estimate_serve_memory({o.model_path, ctx_size, o.parallel,
                                                                        o.batch_size, o.kv_type, o.prefix_cache_mb}));
  const std::string refusal = insufficient_memory(need, *o.memory_available_bytes);
  if (!refusal.empty()) return Status::resource_exhausted(refusal);
  if (log) log("memory: needs " + need.describe() + "; " + human_bytes(*o.memory_available_bytes) + " free");
  return {};
}

}  // namespace

Result<GenerationDefaults> generation_defaults(const ServeStackOptions& o) {
  GenerationDefaults d;
  // The same ranges a request's fields have (server/api/request_parsing.cpp).
  if (o.temp) {
    if (!(*o.temp >= 0 && *o.temp <= 2))
      return Status::invalid_argument("--temp must be in [0, 2], got " + number_text(*o.temp));
    d.sampling.temperature = static_cast<float>(*o.temp);
  }
  if (o.top_k) {
    if (*o.top_k < 0 || *o.top_k > std::numeric_limits<int32_t>::max())
      return Status::invalid_argument("--top-k must be in [0, 2147483647] (0: off), got " + std::to_string(*o.top_k));
    d.sampling.top_k = static_cast<int32_t>(*o.top_k);
  }
  if (o.top_p) {
    if (!(*o.top_p > 0 && *o.top_p <= 1))
      return Status::invalid_argument("--top-p must be in (0, 1], got " + number_text(*o.top_p));
    d.sampling.top_p = static_cast<float>(*o.top_p);
  }
  if (o.seed) {
    if (*o.seed < -1)
      return Status::invalid_argument("--seed must be -1 (random) or >= 0, got " + std::to_string(*o.seed));
    if (*o.seed >= 0) d.seed = static_cast<uint64_t>(*o.seed);
  }
  if (o.n_predict) {
    if (*o.n_predict == 0 || *o.n_predict < -1)
      return Status::invalid_argument("--n-predict must be -1 (until the end) or >= 1, got " +
                                      std::to_string(*o.n_predict));
    d.n_predict = *o.n_predict;
  }
  return d;
}

Status validate(const ServeStackOptions& o) {
  if (o.parallel < 1 || o.parallel > 32) return Status::invalid_argument("--parallel must be in [1, 32]");
  if (o.max_queue < 0) return Status::invalid_argument("--max-queue must be >= 0");
  if (o.prefill_chunk < 1) return Status::invalid_argument("--prefill-chunk must be >= 1");
  if (o.prefix_cache_mb < 0) return Status::invalid_argument("--prefix-cache-mb must be >= 0");
  if (!(o.timeout >= 0)) return Status::invalid_argument("--timeout must be >= 0");
  if (o.threads < 0) return Status::invalid_argument("--threads must be positive");
  if (o.ctx_size != 0 && o.ctx_size < o.parallel * 16)
    return Status::invalid_argument("--ctx-size must give each slot at least 16 tokens");
  CS_RETURN_IF_ERROR(generation_defaults(o).status());
  if (!o.pooling.empty() && !embeddings::pooling_from_name(o.pooling))
    return Status::invalid_argument("--pooling must be none, mean, cls or last, got '" + o.pooling + "'");
  return engine::chat::validate_template_choice(o.chat_template);
}

Result<std::unique_ptr<ServeStack>> load_serve_stack(const ServeStackOptions& o, Metrics* metrics,
                                                     const std::function<void(const std::string&)>& log) {
  CS_RETURN_IF_ERROR(validate(o));
  CS_ASSIGN_OR_RETURN(GenerationDefaults defaults, generation_defaults(o));
  // Each slot holds a whole request of the workload when one is given (a 7,000-token case).
  const int64_t slot_ctx = std::max<int64_t>(4096, o.workload.prompt_tokens + o.workload.max_tokens + 64);
  int parallel = o.parallel;
  int64_t ctx_size = o.ctx_size > 0 ? o.ctx_size : slot_ctx * parallel;
  CS_ASSIGN_OR_RETURN(engine::GgmlType kv, engine::parse_kv_type(o.kv_type));
  std::shared_ptr<const engine::Model> model = o.model;
  if (model == nullptr && o.memory_available_bytes) CS_RETURN_IF_ERROR(check_memory(o, ctx_size, log));
  if (model == nullptr) {
    CS_ASSIGN_OR_RETURN(model, engine::load_model(o.model_path));
  } else if (o.autotune) {
    return Status::invalid_argument("a model built in memory is not autotuned");
  }
  if (o.mlock) {
    CS_RETURN_IF_ERROR(lock_weights(*model));
    if (log) log("mlock: " + human_bytes(locked_bytes()) + " locked");
  }
  const bool simulated = model->info().architecture == engine::simulated::kSimulatedArchitecture;
  auto stack = std::make_unique<ServeStack>();
  CS_ASSIGN_OR_RETURN(const engine::LoraSet adapters, engine::load_lora_set(o.lora, *model));
  CS_ASSIGN_OR_RETURN(auto tok, engine::tokenizer::Tokenizer::from_gguf(model->file()));
  stack->tokenizer = std::make_unique<engine::tokenizer::Tokenizer>(std::move(tok));

  int threads = o.threads > 0 ? o.threads : engine::default_thread_count();
  int64_t prefill_chunk = o.prefill_chunk;
  json::object autotune_report;
  if (o.autotune) {
    CS_ASSIGN_OR_RETURN(std::optional<AutotuneResult> tuned,
                        tuned_or_kept(o, model, kv, slot_ctx, log, &stack->autotune_cached));
    stack->decode_tok_s = tuned->decode_tok_s;
    stack->prompt_tok_s = tuned->prompt_tok_s;
    threads = tuned->threads;
    prefill_chunk = tuned->prefill_chunk;
    if (tuned->parallel > 0) parallel = tuned->parallel;
    if (o.workload.prompt_tokens > 0) kv = tuned->kv_type;
    if (o.ctx_size == 0) ctx_size = slot_ctx * parallel;
    autotune_report = std::move(tuned->report);
    autotune_report["cached"] = stack->autotune_cached;
  }
  stack->parallel = parallel;
  stack->kv_type = std::string(engine::ggml_type_name(kv));
  stack->threads = threads;
  stack->prefill_chunk = prefill_chunk;

  engine::ContextParams params;
  params.n_ctx = ctx_size;
  params.n_batch = std::max<int64_t>(o.batch_size, prefill_chunk + parallel);
  params.n_threads = threads;
  params.n_seq_max = scheduler_seq_count(parallel);
  params.kv_type = kv;
  CS_ASSIGN_OR_RETURN(auto ctx, engine::Context::create(model, params));

  SchedulerOptions so;
  so.n_slots = parallel;
  so.max_queue = o.max_queue;
  so.n_ctx_per_slot = ctx_size / parallel;
  so.prefill_chunk = prefill_chunk;
  so.prefix_cache_bytes = static_cast<size_t>(o.prefix_cache_mb) << 20;
  so.request_timeout_seconds = o.timeout;
  stack->scheduler = std::make_unique<Scheduler>(std::move(ctx), *stack->tokenizer, so, metrics);

  ApiContext& api = stack->api;
  if (o.embeddings) {
    if (simulated) return Status::invalid_argument("--embeddings: the simulated model has no hidden states to embed");
    CS_ASSIGN_OR_RETURN(stack->embeddings, embedding_service(o, model, so.n_ctx_per_slot, params, log));
    api.embeddings = stack->embeddings.get();
  }
  api.scheduler = stack->scheduler.get();
  api.metrics = metrics;
  api.tokenizer = stack->tokenizer.get();
  if (!adapters.empty()) {
    stack->lora = std::make_unique<LoraRegistry>(adapters);
    api.lora = stack->lora.get();
    for (const LoraRegistry::Entry& e : api.lora->entries()) {
      log("LoRA adapter " + std::to_string(e.id) + " '" + e.adapter->name() + "' (" +
          std::to_string(e.adapter->tensors().size()) + " tensors) at scale " + std::to_string(e.scale));
    }
  }
  CS_ASSIGN_OR_RETURN(engine::chat::SelectedTemplate chat,
                      engine::chat::select_chat_template(o.chat_template, model->file()));
  log(engine::chat::describe_selected_template(chat));
  api.chat_template = std::move(chat.tmpl);
  api.chat_meta = chat.meta;
  api.tool_format = tool_calls::detect_format(chat.meta.source);
  log("tool calls: " + std::string(tool_calls::format_name(api.tool_format)) + " format");
  api.accept_any_model = o.accept_any_model;
  std::string id = o.alias;
  if (id.empty()) {
    id = o.model_path.empty() ? model->info().name : std::filesystem::path(o.model_path).filename().string();
    if (id.size() > 5 && id.ends_with(".gguf")) id.resize(id.size() - 5);
  }
  api.model_id = id;
  api.n_ctx = so.n_ctx_per_slot;
  api.n_vocab = model->info().n_vocab;
  api.created = std::time(nullptr);
  api.special_in_content = o.special_in_content;
  api.defaults = defaults;
  if (simulated) api.owned_by = "cellserve-simulated";
  json::object settings{{"threads", threads},
                        {"parallel", parallel},
                        {"ctx_size", ctx_size},
                        {"n_ctx_per_slot", so.n_ctx_per_slot},
                        {"prefill_chunk", prefill_chunk},
                        {"max_queue", o.max_queue},
                        {"prefix_cache_mb", o.prefix_cache_mb},
                        {"kv_type", stack->kv_type},
                        {"special_in_content", o.special_in_content},
                        {"accept_any_model", o.accept_any_model},
                        {"embeddings", o.embeddings}};
  if (stack->embeddings != nullptr) settings["pooling"] = embeddings::pooling_name(stack->embeddings->pooling());
  json::array lora_files;
  for (const engine::ScaledLora& l : adapters) lora_files.push_back(json::string(l.adapter->path()));
  settings["lora"] = std::move(lora_files);
  api.model_meta = json::object{{"architecture", model->info().architecture}, {"settings", settings}};
  if (simulated) api.model_meta["simulated"] = true;
  if (o.autotune) api.model_meta["autotune"] = autotune_report;
  stack->props = json::object{{"model", id},
                              {"model_path", o.model_path},
                              {"architecture", model->info().architecture},
                              {"settings", settings},
                              {"autotune", o.autotune ? json::value(autotune_report) : json::value(nullptr)}};
  // As llama-server's /props: the template text in use, and the token texts it is given; plus
  // where the template came from.
  stack->props["chat_template"] = chat.meta.source;
  stack->props["chat_template_source"] = engine::chat::template_origin_name(chat.origin);
  stack->props["chat_template_name"] = chat.name.empty() ? json::value(nullptr) : json::value(chat.name);
  stack->props["bos_token"] = chat.meta.bos_token;
  stack->props["eos_token"] = chat.meta.eos_token;
  // As llama-server's: what a request gets for the fields it leaves out. seed -1: a random one per
  // request; n_predict -1: until the end, or (without --n-predict) each endpoint's own default.
  const engine::SamplingParams& ds = defaults.sampling;
  json::object sampling{{"temperature", ds.temperature},
                        {"top_k", ds.top_k},
                        {"top_p", ds.top_p},
                        {"min_p", ds.min_p},
                        {"seed", defaults.seed ? json::value(*defaults.seed) : json::value(-1)},
                        {"n_predict", defaults.n_predict.value_or(-1)},
                        {"repeat_last_n", ds.penalty_last_n},
                        {"repeat_penalty", ds.repeat_penalty},
                        {"presence_penalty", ds.presence_penalty},
                        {"frequency_penalty", ds.frequency_penalty}};
  stack->props["default_generation_settings"] =
      json::object{{"n_ctx", so.n_ctx_per_slot}, {"params", std::move(sampling)}};
  stack->props["total_slots"] = parallel;
  return stack;
}

}  // namespace cellserve::server
