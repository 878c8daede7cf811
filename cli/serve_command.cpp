// `cellserve serve -m FILE`: the OpenAI-compatible server of one device. It listens at once
// (/health answers 503 while the model loads), loads the model, optionally autotunes, then
// serves until SIGINT or SIGTERM.
#include <pthread.h>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>

#include "base/meminfo.h"
#include "cli/commands.h"
#include "cli/key_file.h"
#include "cli/model_options.h"
#include "net/http_server.h"
#include "server/metrics.h"
#include "server/router.h"
#include "server/serve_stack.h"

namespace cellserve::cli {
namespace {

// The serve stack's settings take their defaults from ServeStackOptions, where they are stated once.
const server::ServeStackOptions& stack_defaults() {
  static const server::ServeStackOptions defaults;
  return defaults;
}

struct ServeOptions {
  ModelOptions model;
  std::string host = "127.0.0.1";
  int port = 8080;
  int parallel = stack_defaults().parallel;
  int max_queue = stack_defaults().max_queue;
  int64_t prefill_chunk = stack_defaults().prefill_chunk;
  int64_t prefix_cache_mb = stack_defaults().prefix_cache_mb;
  double timeout = stack_defaults().timeout;
  double max_body_mb = 8;
  int max_connections_per_ip = 64;
  std::string api_key_file;
  std::string cors_origins;  // "" : cross-origin browser requests refused
  std::string alias;
  bool autotune = false;
  bool special_in_content = false;
  bool accept_any_model = false;
  bool ctx_size_given = false;
  bool embeddings = false;
  bool mlock = false;
  bool memory_check = true;  // --no-memory-check turns it off
  std::string pooling;       // "": the model's
  engine::chat::TemplateChoice chat_template;
  // Sampling defaults: the raw values, and (set by the callback) those actually given.
  double temp = 0.8, top_p = 0.95;
  int64_t top_k = 40, seed = -1, n_predict = -1;
  std::optional<double> temp_given, top_p_given;
  std::optional<int64_t> top_k_given, seed_given, n_predict_given;
};

void log_line(const std::string& line) {
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
}

server::ServeStackOptions stack_options(const ServeOptions& o) {
  server::ServeStackOptions so;
  so.model_path = o.model.model_path;
  so.lora = o.model.lora;
  so.threads = o.model.threads;
  so.ctx_size = o.ctx_size_given ? o.model.ctx_size : 0;
  so.batch_size = o.model.batch_size;
  so.kv_type = o.model.kv_type;
  so.parallel = o.parallel;
  so.max_queue = o.max_queue;
  so.prefill_chunk = o.prefill_chunk;
  so.prefix_cache_mb = o.prefix_cache_mb;
  so.timeout = o.timeout;
  so.alias = o.alias;
  so.autotune = o.autotune;
  so.special_in_content = o.special_in_content;
  so.accept_any_model = o.accept_any_model;
  so.chat_template = o.chat_template;
  so.temp = o.temp_given;
  so.top_k = o.top_k_given;
  so.top_p = o.top_p_given;
  so.seed = o.seed_given;
  so.n_predict = o.n_predict_given;
  so.embeddings = o.embeddings;
  so.pooling = o.pooling;
  so.mlock = o.mlock;
  return so;
}

Result<std::string> read_api_key(const ServeOptions& o) {
  std::string key;
  if (!o.api_key_file.empty()) {
    CS_ASSIGN_OR_RETURN(key, read_key_file("--api-key-file", o.api_key_file));
  } else if (const char* env = std::getenv("CELLSERVE_API_KEY"); env != nullptr) {
    key = env;
  }
  return key;
}

Status validate(const ServeOptions& o) {
  if (o.port < 0 || o.port > 65535) return Status::invalid_argument("--port must be in [0, 65535]");
  if (!(o.max_body_mb > 0 && o.max_body_mb <= 1024))
    return Status::invalid_argument("--max-body-mb must be in (0, 1024]");
  if (o.max_connections_per_ip < 0) return Status::invalid_argument("--max-connections-per-ip must be 0 or positive");
  return server::validate(stack_options(o));
}

int run_serve(const ServeOptions& o) {
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
  server::Router router(server::RouterOptions{*key, /*local_hosts_only=*/key->empty()});
  net::HttpServerOptions ho;
  ho.host = o.host;
  ho.port = o.port;
  ho.max_body_bytes = static_cast<size_t>(o.max_body_mb * (1 << 20));
  ho.cors.origins = net::split_origins(o.cors_origins);
  ho.max_connections_per_address = o.max_connections_per_ip;
  auto http = net::HttpServer::start(
      ho, [&router](const net::HttpRequest& req, net::ResponseWriter& w) { router.handle(req, w); });
  if (!http.ok()) {
    print_error("serve", http.status().message());
    return 1;
  }
  log_line("cellserve serve: listening on http://" + o.host + ":" + std::to_string((*http)->port()) +
           (key->empty() ? "" : " (API key required)"));
  server::ServeStackOptions so = stack_options(o);
  // A model that cannot fit is refused before it loads, with the numbers (server/memory_estimate.h).
  if (o.memory_check) so.memory_available_bytes = read_meminfo_bytes("", "MemAvailable");
  auto loaded =
      server::load_serve_stack(so, &metrics, [](const std::string& line) { log_line("cellserve serve: " + line); });
  if (!loaded.ok()) {
    (*http)->stop();
    std::string message = loaded.status().message();
    if (message.starts_with("insufficient_memory")) message += " (--no-memory-check starts anyway)";
    print_error("serve", message);
    return 1;
  }
  router.set_ready(&(*loaded)->api, (*loaded)->props);
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
  cmd->add_option("--max-connections-per-ip", o->max_connections_per_ip,
                  "Connections one client address may hold (0: no cap, e.g. behind a same-host proxy)")
      ->capture_default_str();
  cmd->add_option("--api-key-file", o->api_key_file, "File whose first line is the API key (else $CELLSERVE_API_KEY)");
  cmd->add_option("--cors-origins", o->cors_origins,
                  "Origins whose web pages may call this server, comma-separated (\"*\": any; default: none)");
  cmd->add_option("--alias", o->alias, "Model id in the API (default: the file name)");
  cmd->add_flag("--autotune", o->autotune, "Measure threads and prefill chunk at start-up and keep the fastest");
  cmd->add_flag("--special-in-content", o->special_in_content,
                "Parse special-token text inside chat messages as control tokens, as llama.cpp does (lets a "
                "message forge turns; default: only the chat template's own markers are control tokens)");
  add_chat_template_options(cmd, &o->chat_template);
  cmd->add_flag("--accept-any-model", o->accept_any_model,
                "Serve every request whatever its \"model\" names, as llama-server does (default: a name that "
                "is neither the model id nor an adapter's gets 404 model_not_found)");
  cmd->add_flag("--embeddings,--embedding", o->embeddings,
                "Serve POST /v1/embeddings, from an embedding context of its own (docs/embeddings.md)");
  cmd->add_option("--pooling", o->pooling,
                  "How --embeddings pools token states: none, mean, cls or last (default: the GGUF's "
                  "pooling_type, else last)");
  cmd->add_flag("--mlock", o->mlock,
                "Lock the weights in RAM once loaded, so that swap, zram or page reclaim cannot take them out; "
                "refuses to start when the lock limit (ulimit -l) or the RAM is short");
  cmd->add_flag("!--no-memory-check", o->memory_check,
                "Start even when the memory estimate (weights, KV cache, recurrent state, scratch) exceeds "
                "MemAvailable");
  cmd->add_option("--temp", o->temp, "Default temperature of requests that set none, in [0, 2] (0: greedy)")
      ->capture_default_str();
  cmd->add_option("--top-k", o->top_k, "Default top_k of requests that set none (0: off)")->capture_default_str();
  cmd->add_option("--top-p", o->top_p, "Default top_p of requests that set none, in (0, 1]")->capture_default_str();
  cmd->add_option("--seed", o->seed, "Default seed of requests that set none (-1: a random one per request)")
      ->capture_default_str();
  cmd->add_option("-n,--n-predict", o->n_predict,
                  "Default token budget of requests that set none (-1: until the end; without it each endpoint's "
                  "own: 16 for /v1/completions, the rest of the context otherwise)")
      ->capture_default_str();
  cmd->callback([o, cmd, exit_code] {
    o->ctx_size_given = cmd->count("--ctx-size") > 0;
    // Only the options given override the engine's and the endpoints' own defaults.
    if (cmd->count("--temp") > 0) o->temp_given = o->temp;
    if (cmd->count("--top-k") > 0) o->top_k_given = o->top_k;
    if (cmd->count("--top-p") > 0) o->top_p_given = o->top_p;
    if (cmd->count("--seed") > 0) o->seed_given = o->seed;
    if (cmd->count("--n-predict") > 0) o->n_predict_given = o->n_predict;
    if (const Status pinned = pin_compute_cpus(o->model.cpus); !pinned.ok()) {
      print_error("serve", pinned.message());
      *exit_code = 1;
      return;
    }
    *exit_code = run_serve(*o);
  });
}

}  // namespace cellserve::cli
