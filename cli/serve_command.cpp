// `cellserve serve -m FILE`: the OpenAI-compatible server of one device. It listens at once
// (/health answers 503 while the model loads), loads the model, optionally autotunes, then
// serves until SIGINT or SIGTERM.
#include <pthread.h>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>

#include <boost/json.hpp>

#include "cli/commands.h"
#include "cli/model_options.h"
#include "engine/chat/chat_template.h"
#include "engine/chat/gguf_chat_template.h"
#include "engine/runtime/cpu_topology.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/api/api_context.h"
#include "server/autotune.h"
#include "server/http/http_server.h"
#include "server/lora_registry.h"
#include "server/metrics.h"
#include "server/router.h"
#include "server/scheduler/scheduler.h"

namespace cellserve::cli {
namespace {

namespace json = boost::json;

struct ServeOptions {
  ModelOptions model;
  std::string host = "127.0.0.1";
  int port = 8080;
  int parallel = 4;
  int max_queue = 64;
  int64_t prefill_chunk = 256;
  int64_t prefix_cache_mb = 1024;
  double timeout = 600;
  double max_body_mb = 8;
  std::string api_key_file;
  std::string alias;
  bool autotune = false;
  bool ctx_size_given = false;
};

void log_line(const std::string& line) {
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
}

Result<std::string> read_api_key(const ServeOptions& o) {
  std::string key;
  if (!o.api_key_file.empty()) {
    std::ifstream in(o.api_key_file);
    if (!in) return Status::invalid_argument("--api-key-file " + o.api_key_file + ": cannot read the file");
    std::getline(in, key);
    while (!key.empty() && (key.back() == '\r' || key.back() == ' ' || key.back() == '\t')) key.pop_back();
    if (key.empty()) return Status::invalid_argument("--api-key-file " + o.api_key_file + ": the first line is empty");
  } else if (const char* env = std::getenv("CELLSERVE_API_KEY"); env != nullptr) {
    key = env;
  }
  return key;
}

Status validate(const ServeOptions& o) {
  if (o.port < 0 || o.port > 65535) return Status::invalid_argument("--port must be in [0, 65535]");
  if (o.parallel < 1 || o.parallel > 32) return Status::invalid_argument("--parallel must be in [1, 32]");
  if (o.max_queue < 0) return Status::invalid_argument("--max-queue must be >= 0");
  if (o.prefill_chunk < 1) return Status::invalid_argument("--prefill-chunk must be >= 1");
  if (o.prefix_cache_mb < 0) return Status::invalid_argument("--prefix-cache-mb must be >= 0");
  if (!(o.timeout >= 0)) return Status::invalid_argument("--timeout must be >= 0");
  if (!(o.max_body_mb > 0 && o.max_body_mb <= 1024))
    return Status::invalid_argument("--max-body-mb must be in (0, 1024]");
  if (o.model.ctx_size < o.parallel * 16)
    return Status::invalid_argument("--ctx-size must give each slot at least 16 tokens");
  return {};
}

// Everything that lives while the server runs, built after the listener is up.
struct Loaded {
  std::unique_ptr<engine::tokenizer::Tokenizer> tokenizer;
  std::unique_ptr<server::Scheduler> scheduler;
  std::unique_ptr<server::LoraRegistry> lora;
  server::ApiContext api;
};

Result<std::unique_ptr<Loaded>> load(const ServeOptions& o, server::Metrics* metrics, json::object* props) {
  CS_ASSIGN_OR_RETURN(std::shared_ptr<const engine::Model> model, engine::load_model(o.model.model_path));
  auto loaded = std::make_unique<Loaded>();
  CS_ASSIGN_OR_RETURN(const engine::LoraSet adapters, o.model.load_lora(*model));
  CS_ASSIGN_OR_RETURN(auto tok, engine::tokenizer::Tokenizer::from_gguf(model->file()));
  loaded->tokenizer = std::make_unique<engine::tokenizer::Tokenizer>(std::move(tok));

  const auto kv = engine::ggml_type_from_name(o.model.kv_type);
  if (!kv) return Status::invalid_argument("--kv-type " + o.model.kv_type + ": expected f16, f32 or q8_0");
  int threads = o.model.threads > 0 ? o.model.threads : engine::default_thread_count();
  int64_t prefill_chunk = o.prefill_chunk;
  json::object autotune_report;
  if (o.autotune) {
    server::AutotuneOptions ao;
    ao.kv_type = *kv;
    if (o.model.threads > 0) ao.threads = {o.model.threads};
    CS_ASSIGN_OR_RETURN(server::AutotuneResult tuned, server::autotune(model, ao, log_line));
    threads = tuned.threads;
    prefill_chunk = tuned.prefill_chunk;
    autotune_report = std::move(tuned.report);
  }

  engine::ContextParams params;
  params.n_ctx = o.model.ctx_size;
  params.n_batch = std::max<int64_t>(o.model.batch_size, prefill_chunk + o.parallel);
  params.n_threads = threads;
  params.n_seq_max = server::scheduler_seq_count(o.parallel);
  params.kv_type = *kv;
  CS_ASSIGN_OR_RETURN(auto ctx, engine::Context::create(model, params));

  server::SchedulerOptions so;
  so.n_slots = o.parallel;
  so.max_queue = o.max_queue;
  so.n_ctx_per_slot = o.model.ctx_size / o.parallel;
  so.prefill_chunk = prefill_chunk;
  so.prefix_cache_bytes = static_cast<size_t>(o.prefix_cache_mb) << 20;
  so.request_timeout_seconds = o.timeout;
  loaded->scheduler = std::make_unique<server::Scheduler>(std::move(ctx), *loaded->tokenizer, so, metrics);

  server::ApiContext& api = loaded->api;
  api.scheduler = loaded->scheduler.get();
  api.metrics = metrics;
  api.tokenizer = loaded->tokenizer.get();
  if (!adapters.empty()) {
    loaded->lora = std::make_unique<server::LoraRegistry>(adapters);
    api.lora = loaded->lora.get();
    for (const server::LoraRegistry::Entry& e : api.lora->entries()) {
      log_line("cellserve serve: LoRA adapter " + std::to_string(e.id) + " '" + e.adapter->name() + "' (" +
               std::to_string(e.adapter->tensors().size()) + " tensors) at scale " + std::to_string(e.scale));
    }
  }
  if (auto meta = engine::chat::read_gguf_chat_template(model->file()); meta.ok()) {
    auto tmpl = engine::chat::ChatTemplate::parse(meta->source);
    if (!tmpl.ok()) return tmpl.status().with_context("the model's chat template");
    api.chat_template.emplace(std::move(tmpl).value());
    api.chat_meta = std::move(meta).value();
  } else {
    log_line("cellserve serve: the model has no chat template; /v1/chat/completions will answer 400");
  }
  std::string id = o.alias;
  if (id.empty()) {
    id = std::filesystem::path(o.model.model_path).filename().string();
    if (id.size() > 5 && id.ends_with(".gguf")) id.resize(id.size() - 5);
  }
  api.model_id = id;
  api.n_ctx = so.n_ctx_per_slot;
  api.n_vocab = model->info().n_vocab;
  api.created = std::time(nullptr);
  json::object settings{{"threads", threads},
                        {"parallel", o.parallel},
                        {"ctx_size", o.model.ctx_size},
                        {"n_ctx_per_slot", so.n_ctx_per_slot},
                        {"prefill_chunk", prefill_chunk},
                        {"max_queue", o.max_queue},
                        {"prefix_cache_mb", o.prefix_cache_mb},
                        {"kv_type", o.model.kv_type}};
  json::array lora_files;
  for (const engine::ScaledLora& l : adapters) lora_files.push_back(json::string(l.adapter->path()));
  settings["lora"] = std::move(lora_files);
  api.model_meta = json::object{{"architecture", model->info().architecture}, {"settings", settings}};
  if (o.autotune) api.model_meta["autotune"] = autotune_report;
  *props = json::object{{"model", id},
                        {"model_path", o.model.model_path},
                        {"architecture", model->info().architecture},
                        {"settings", settings},
                        {"autotune", o.autotune ? json::value(autotune_report) : json::value(nullptr)}};
  return loaded;
}

int run_serve(ServeOptions o) {
  if (!o.ctx_size_given) o.model.ctx_size = 4096LL * o.parallel;
  if (Status s = validate(o); !s.ok()) {
    print_error("serve", s.message());
    return 1;
  }
  auto key = read_api_key(o);
  if (!key.ok()) {
    print_error("serve", key.status().message());
    return 1;
  }
  // SIGINT/SIGTERM are taken by sigwait below: block them before any thread starts so every
  // thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  server::Metrics metrics;
  server::Router router(server::RouterOptions{*key});
  server::HttpServerOptions ho;
  ho.host = o.host;
  ho.port = o.port;
  ho.max_body_bytes = static_cast<size_t>(o.max_body_mb * (1 << 20));
  auto http = server::HttpServer::start(
      ho, [&router](const server::HttpRequest& req, server::ResponseWriter& w) { router.handle(req, w); });
  if (!http.ok()) {
    print_error("serve", http.status().message());
    return 1;
  }
  log_line("cellserve serve: listening on http://" + o.host + ":" + std::to_string((*http)->port()) +
           (key->empty() ? "" : " (API key required)"));
  json::object props;
  auto loaded = load(o, &metrics, &props);
  if (!loaded.ok()) {
    (*http)->stop();
    print_error("serve", loaded.status().message());
    return 1;
  }
  router.set_ready(&(*loaded)->api, std::move(props));
  log_line("cellserve serve: model " + (*loaded)->api.model_id + " ready (" + std::to_string(o.parallel) + " slots, " +
           std::to_string((*loaded)->api.n_ctx) + " tokens each)");

  int sig = 0;
  sigwait(&signals, &sig);
  log_line(std::string("cellserve serve: ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") + ", shutting down");
  (*http)->stop();  // connections end first: their handlers stop waiting on the scheduler
  loaded->reset();
  return 0;
}

}  // namespace

void add_serve_command(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* cmd = app.add_subcommand("serve", "Serve the model over an OpenAI-compatible HTTP API");
  o->model.add_to(cmd);
  cmd->add_option("--host", o->host, "Address to listen on")->capture_default_str();
  cmd->add_option("--port", o->port, "Port to listen on (0: any free port)")->capture_default_str();
  cmd->add_option("--parallel,--np", o->parallel, "Requests generated at once (slots)")->capture_default_str();
  cmd->add_option("--max-queue", o->max_queue, "Requests that may wait for a slot; beyond: 429")->capture_default_str();
  cmd->add_option("--prefill-chunk", o->prefill_chunk, "Prompt tokens read per step, between decode steps")
      ->capture_default_str();
  cmd->add_option("--prefix-cache-mb", o->prefix_cache_mb, "Memory the prefix cache may keep (MiB)")
      ->capture_default_str();
  cmd->add_option("--timeout", o->timeout, "Seconds a request may take (0: no limit)")->capture_default_str();
  cmd->add_option("--max-body-mb", o->max_body_mb, "Largest request body (MiB); beyond: 413")->capture_default_str();
  cmd->add_option("--api-key-file", o->api_key_file, "File whose first line is the API key (else $CELLSERVE_API_KEY)");
  cmd->add_option("--alias", o->alias, "Model id in the API (default: the file name)");
  cmd->add_flag("--autotune", o->autotune, "Measure threads and prefill chunk at start-up and keep the fastest");
  cmd->callback([o, cmd, exit_code] {
    o->ctx_size_given = cmd->count("--ctx-size") > 0;
    *exit_code = run_serve(*o);
  });
}

}  // namespace cellserve::cli
