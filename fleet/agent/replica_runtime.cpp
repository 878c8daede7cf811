#include "fleet/agent/replica_runtime.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "engine/simulated/simulated_model.h"
#include "fleet/crypto/sha256.h"
#include "fleet/download/downloader.h"
#include "fleet/download/model_url.h"
#include "fleet/signing/signing_writer.h"
#include "fleet/spec/deployment_spec.h"
#include "net/bearer.h"
#include "net/json_error.h"
#include "server/metrics.h"
#include "server/router.h"
#include "server/serve_stack.h"

namespace cellserve::fleet {
namespace {

using namespace std::chrono_literals;

// Disk a download must leave free (the OS, logs, the KV cache's swap never fit in zero bytes).
constexpr uint64_t kFreeSpaceReserve = 256ull << 20;

// The settings the loaded stack runs with, as the hub shows them (ReplicaReport::tuned).
TunedSettings tuned_settings(const server::ServeStack& stack, const server::ServeStackOptions& so) {
  auto small = [](int64_t v) { return static_cast<int>(std::clamp<int64_t>(v, 0, kMaxTunedCtx)); };
  TunedSettings t;
  t.threads = stack.threads;
  t.prefill_chunk = small(stack.prefill_chunk);
  t.parallel = stack.parallel > 0 ? stack.parallel : so.parallel;
  t.ctx_size = small(so.ctx_size);
  // The context the stack chose when the spec left it to the agent (/props' settings).
  if (const auto* settings = stack.props.if_contains("settings"); settings != nullptr && settings->is_object()) {
    if (const auto* ctx = settings->as_object().if_contains("ctx_size"); ctx != nullptr && ctx->is_int64()) {
      t.ctx_size = small(ctx->as_int64());
    }
  }
  t.batch_size = small(so.batch_size);
  t.autotuned = so.autotune;
  t.kv_type = stack.kv_type;
  t.cached = stack.autotune_cached;
  return t;
}

// The CPU's name as the kernel gives it (x86 "model name", ARM "CPU part" and "Hardware"), for
// the autotune cache's key: a choice measured on one chip is not reused on another.
std::string cpu_description() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, out;
  while (std::getline(in, line) && out.size() < 256) {
    if (line.starts_with("model name") || line.starts_with("CPU part") || line.starts_with("Hardware")) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos && out.find(line.substr(colon)) == std::string::npos) out += line.substr(colon);
    }
  }
  return out;
}

}  // namespace

struct ReplicaRuntime::Serving {
  AnswerSigner signer;  // what every answer is signed as
  server::Metrics metrics;
  server::Router router{server::RouterOptions{}};
  std::unique_ptr<server::ServeStack> stack;
};

ReplicaRuntime::ReplicaRuntime(AssignmentMessage assignment, RuntimeOptions options)
    : assignment_(std::move(assignment)), options_(std::move(options)) {
  report_.deployment = assignment_.deployment;
  report_.index = assignment_.index;
  report_.state = ReplicaState::Matched;
  report_.model_sha256 = assignment_.model_sha256;
}

ReplicaRuntime::~ReplicaRuntime() { stop(); }

void ReplicaRuntime::start() {
  worker_ = std::thread([this] {
    run();
    // run() returns once the replica serves, is stopped, or has failed for good; in the last
    // case the hub is told to look for another device.
    std::lock_guard lock(mu_);
    if (!stopping_ && report_.state == ReplicaState::Failed) report_.gave_up = true;
  });
}

void ReplicaRuntime::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    stop_cv_.notify_all();
  }
  cancel_.store(true);
  if (worker_.joinable()) worker_.join();
  // Requests in flight hold their own reference; the stack goes when the last one ends.
  std::lock_guard lock(mu_);
  serving_.reset();
}

void ReplicaRuntime::set_files_token(std::string token) {
  std::lock_guard lock(mu_);
  assignment_.files_token = std::move(token);
}

void ReplicaRuntime::set_secrets(int version, const std::string& sealed_sha256, const std::string& proof,
                                 DeploymentSecrets secrets) {
  std::lock_guard lock(mu_);
  secrets_ = std::move(secrets);
  sealed_sha256_ = sealed_sha256;
  report_.secrets_version = version;
  report_.secrets_proof = proof;
}

std::string ReplicaRuntime::secrets_sha256() const {
  std::lock_guard lock(mu_);
  return sealed_sha256_;
}

void ReplicaRuntime::set_index(int index) {
  std::lock_guard lock(mu_);
  assignment_.index = index;
  report_.index = index;
}

ReplicaReport ReplicaRuntime::report() const {
  std::lock_guard lock(mu_);
  ReplicaReport r = report_;
  if (serving_ != nullptr) {
    // Live from the scheduler: slots running a request now are not free.
    const server::Scheduler& scheduler = *serving_->stack->scheduler;
    r.slots = scheduler.options().n_slots;
    r.free_slots = std::clamp(r.slots - scheduler.busy_slots(), 0, r.slots);
    // The prompts being read now, from the scheduler's last published step (never waits for one).
    int64_t done = 0, total = 0;
    for (const server::SlotState& s : scheduler.slot_states()) {
      if (!s.is_processing || s.n_decoded > 0) continue;
      const int64_t to_read = std::max<int64_t>(0, s.n_prompt_tokens - s.n_prompt_tokens_cache);
      total += to_read;
      done += std::clamp<int64_t>(s.n_prompt_tokens_processed, 0, to_read);
    }
    r.prefill_total = static_cast<int>(std::min<int64_t>(total, kMaxReportedPrefillTokens));
    r.prefill_done = static_cast<int>(std::min<int64_t>(done, r.prefill_total));
  }
  return r;
}

void ReplicaRuntime::set_state(ReplicaState state, std::string detail, double progress) {
  std::lock_guard lock(mu_);
  report_.state = state;
  report_.detail = std::move(detail);
  if (progress >= 0) report_.progress = progress;
}

const std::string* ReplicaRuntime::serving_hub(const std::string& url) const {
  for (const std::string& hub : options_.hub_urls) {
    if (url.starts_with(hub + "/")) return &hub;
  }
  return nullptr;
}

bool ReplicaRuntime::download_verified(const std::string& model_url, const std::string& sha256,
                                       const std::function<void(const std::string&)>& log) {
  const std::string path = options_.models_dir + "/" + sha256 + ".gguf";
  std::chrono::milliseconds backoff = options_.download_backoff;
  for (int attempt = 1;; ++attempt) {
    auto url = resolve_model_url(model_url);
    if (!url.ok()) {
      set_state(ReplicaState::Failed, url.status().message());
      return false;
    }
    set_state(ReplicaState::Downloading, attempt == 1 ? "" : "attempt " + std::to_string(attempt), 0);
    DownloadRequest dr;
    dr.url = *url;
    dr.dest_path = path;
    dr.sha256 = sha256;
    dr.free_space_reserve = kFreeSpaceReserve;
    dr.first_backoff = options_.download_backoff / 2;  // the transfer retries within one attempt: quicker
    dr.public_addresses_only = !options_.allow_private_downloads;
    // The hubs the device joined are trusted by joining them: the one serving this URL, if any.
    const std::string* hub = serving_hub(*url);
    if (hub != nullptr) {
      dr.trusted_origin = *hub;
    } else if (!options_.hub_urls.empty()) {
      dr.trusted_origin = options_.hub_urls.front();
    }
    if (hub != nullptr && !options_.hub_ca.empty()) dr.ca_file = options_.hub_ca;
    if (is_huggingface_url(model_url)) {
      dr.bearer_token = huggingface_token();
    } else if (hub != nullptr && url->starts_with(*hub + "/files/")) {
      std::lock_guard lock(mu_);
      dr.bearer_token = assignment_.files_token;  // a closed hub's files need it; "" on an open one
    }
    dr.progress = [this](uint64_t done, uint64_t total) {
      if (total > 0) {
        std::lock_guard lock(mu_);
        report_.progress = std::min(1.0, static_cast<double>(done) / static_cast<double>(total));
      }
      return !cancel_.load();
    };
    auto result = download_file(dr);
    if (result.ok()) {
      log("verified " + model_url + " (" + std::to_string(result->bytes >> 20) + " MiB, sha256 " +
          result->sha256.substr(0, 12) + ")");
      return true;
    }
    if (cancel_.load()) return false;
    // A missing or forbidden file, or a refused request, will not appear by asking again.
    const StatusCode code = result.status().code();
    if (code == StatusCode::NotFound || code == StatusCode::PermissionDenied || code == StatusCode::InvalidArgument) {
      log("download failed: " + result.status().message() + "; not retried");
      set_state(ReplicaState::Failed, "download: " + result.status().message() + " (not retried)");
      return false;
    }
    if (attempt >= kMaxDownloadAttempts) {
      log("download failed: " + result.status().message() + "; gave up after " + std::to_string(attempt) + " attempts");
      set_state(ReplicaState::Failed,
                "download: " + result.status().message() + " (gave up after " + std::to_string(attempt) + " attempts)");
      return false;
    }
    log("download failed: " + result.status().message() + "; retrying in " + std::to_string(backoff.count()) + " ms");
    set_state(ReplicaState::Failed, "download: " + result.status().message());
    if (wait_stop(backoff)) return false;
    backoff = std::min<std::chrono::milliseconds>(backoff * 2, 60s);
  }
}

std::string ReplicaRuntime::huggingface_token() const {
  {
    std::lock_guard lock(mu_);
    for (const auto& [name, value] : secrets_.env) {
      if (name == "HF_TOKEN") return value;
    }
  }
  const char* own = std::getenv("HF_TOKEN");  // the device's own token, when the deployment has none
  return own != nullptr ? own : "";
}

bool ReplicaRuntime::wait_stop(std::chrono::milliseconds delay) {
  std::unique_lock lock(mu_);
  return stop_cv_.wait_for(lock, delay, [&] { return stopping_; });
}

void ReplicaRuntime::handle(const net::HttpRequest& request, net::ResponseWriter& writer) {
  std::shared_ptr<Serving> serving;
  std::string replica_key;
  {
    std::lock_guard lock(mu_);
    serving = serving_;
    replica_key = secrets_.replica_key;
  }
  if (replica_key.empty()) {
    return net::send_error(writer, 503, "the replica has not opened its deployment's secrets", {{"Retry-After", "5"}});
  }
  if (!net::has_api_key(request, replica_key)) {
    return net::send_error(writer, 401, "the replica answers only its hub (a missing or wrong replica key)");
  }
  if (!serving) return net::send_error(writer, 503, "the replica is not ready", {{"Retry-After", "5"}});
  if (options_.simulate && options_.simulate->fail_status != 0 && request.method == "POST") {
    const int status = options_.simulate->fail_status;
    return net::send_error(writer, status, "simulated failure (--simulate fail=" + std::to_string(status) + ")");
  }
  if (!serving->signer.sign) return serving->router.handle(request, writer);
  SigningWriter signing(writer, serving->signer, request.body);
  serving->router.handle(request, signing);
}

bool ReplicaRuntime::engine_kind_matches() {
  const bool simulated = options_.simulate.has_value();
  if (simulated == assignment_.engine.simulated) return true;
  // The hub's matcher never pairs them; a hub that did is refused here rather than served wrongly.
  set_state(ReplicaState::Failed, simulated ? "this agent is simulated (--simulate); the deployment is not: refused"
                                            : "the deployment is simulated; only an agent started with --simulate "
                                              "serves it: refused");
  return false;
}

Status ReplicaRuntime::apply_serve_settings(server::ServeStackOptions* so) const {
  const EngineSettings& e = assignment_.engine;
  so->chat_template.name = e.chat_template;
  if (!e.chat_template_jinja.empty()) {
    // The engine reads a template from a file: the inline one is written once per content.
    std::error_code ec;
    std::filesystem::create_directories(options_.models_dir, ec);
    const std::string path = options_.models_dir + "/chat-template-" + sha256_hex(e.chat_template_jinja) + ".jinja";
    if (!std::filesystem::exists(path)) {
      // Two replicas of the same template may write it at once: each its own partial file, and
      // the file in place is as good as one's own.
      const std::string partial =
          path + "." + assignment_.deployment + "-" + std::to_string(assignment_.index) + ".partial";
      std::ofstream out(partial, std::ios::binary | std::ios::trunc);
      out.write(e.chat_template_jinja.data(), static_cast<std::streamsize>(e.chat_template_jinja.size()));
      out.close();
      if (!out) return Status::internal("engine.chat_template_jinja: cannot write " + partial);
      std::filesystem::rename(partial, path, ec);
      if (ec && !std::filesystem::exists(path)) {
        return Status::internal("engine.chat_template_jinja: cannot write " + path + ": " + ec.message());
      }
      std::filesystem::remove(partial, ec);
    }
    so->chat_template.file = path;
  }
  if (!e.kv_type.empty()) so->kv_type = e.kv_type;
  if (e.batch_size > 0) so->batch_size = e.batch_size;
  if (e.prefill_chunk > 0) {
    so->prefill_chunk = e.prefill_chunk;
    so->autotune_prefill_chunks = {e.prefill_chunk};  // what the spec fixes is not tuned
  }
  so->embeddings = e.embeddings;
  so->pooling = e.pooling;
  so->mlock = e.mlock;
  so->special_in_content = e.special_in_content;
  if (e.workload.prompt_tokens > 0) {
    // Autotune on the deployment's own work; what the spec fixes is not tuned.
    so->workload = server::AutotuneWorkload{e.workload.prompt_tokens, e.workload.max_tokens, e.workload.concurrency,
                                            e.workload.objective == "latency"};
    so->autotune_seconds = e.workload.autotune_seconds;
    so->autotune_parallel = e.parallel == 0;
    so->autotune_kv = e.kv_type.empty();
  }
  // The choice is kept per model, device and what was asked: a reload reuses it.
  std::ostringstream key;
  key << "v1 model=" << assignment_.model_sha256 << " cpus=" << std::thread::hardware_concurrency()
      << " cpu=" << cpu_description() << " threads=" << e.threads << " parallel=" << e.parallel << " kv=" << e.kv_type
      << " batch=" << e.batch_size << " chunk=" << e.prefill_chunk << " workload=" << e.workload.prompt_tokens << ","
      << e.workload.max_tokens << "," << e.workload.concurrency << "," << e.workload.objective << ","
      << e.workload.autotune_seconds;
  so->autotune_cache_key = key.str();
  so->autotune_cache = options_.models_dir + "/autotune-" + sha256_hex(so->autotune_cache_key).substr(0, 32) + ".json";
  return {};
}

bool ReplicaRuntime::fetch(server::ServeStackOptions* so, const std::function<void(const std::string&)>& log) {
  std::error_code ec;
  std::filesystem::create_directories(options_.models_dir, ec);
  so->model_path = options_.models_dir + "/" + assignment_.model_sha256 + ".gguf";
  // The model, then each adapter, downloaded until verified; a corrupt or failed download is
  // retried with backoff.
  std::vector<std::pair<std::string, std::string>> files = {{assignment_.model_url, assignment_.model_sha256}};
  for (const std::string& text : assignment_.engine.lora) {
    auto ref = decode_lora_ref(text);
    if (!ref.ok()) {
      set_state(ReplicaState::Failed, ref.status().message());
      return false;
    }
    files.emplace_back(ref->url, ref->sha256);
    std::ostringstream arg;
    arg.precision(17);
    arg << options_.models_dir << "/" << ref->sha256 << ".gguf:" << ref->scale;
    so->lora.push_back(arg.str());
  }
  for (const auto& [url, sha256] : files) {
    if (!download_verified(url, sha256, log)) return false;
  }
  return true;
}

void ReplicaRuntime::run() {
  const std::string name = assignment_.deployment + "/" + std::to_string(assignment_.index);
  auto log = [&](const std::string& line) {
    if (options_.log) options_.log("replica " + name + ": " + line);
  };
  if (!engine_kind_matches()) return;

  auto serving = std::make_shared<Serving>();
  serving->signer = {options_.device_id, options_.sign, assignment_.deployment, assignment_.model_sha256, {}};
  for (const std::string& text : assignment_.engine.lora) {
    if (auto ref = decode_lora_ref(text); ref.ok()) serving->signer.adapter_sha256.push_back(ref->sha256);
  }
  server::ServeStackOptions so;
  so.parallel = assignment_.engine.parallel > 0 ? assignment_.engine.parallel : 2;
  so.ctx_size = assignment_.engine.ctx_size;
  so.threads = assignment_.engine.threads;
  so.alias = assignment_.deployment;
  if (Status applied = apply_serve_settings(&so); !applied.ok()) {
    return set_state(ReplicaState::Failed, applied.message());
  }
  if (options_.simulate) {
    // Nothing to download or load: the model is built in memory and paces itself.
    const engine::simulated::SimulateOptions& sim = *options_.simulate;
    set_state(ReplicaState::Loading, "simulated engine: no download", 1);
    auto model = engine::simulated::SimulatedModel::create(sim);
    if (!model.ok()) return set_state(ReplicaState::Failed, "simulated engine: " + model.status().message());
    so.model = std::move(model).value();
    so.parallel = sim.slots;  // the device's simulated capacity, whatever the spec asks
    so.threads = 1;           // no arithmetic to spread
    so.autotune = false;
    // Steps of at most ~1/4 s of prompt, so decoding streams keep moving beside a long prompt.
    so.prefill_chunk = std::clamp<int64_t>(static_cast<int64_t>(sim.prefill_tps / 4), 1, 256);
  } else {
    if (!fetch(&so, log)) return;  // stopping, or failed for good (the state says why)
    set_state(ReplicaState::Loading, "", 1);
    so.autotune = options_.autotune;
    so.on_autotune_start = [this] { set_state(ReplicaState::Tuning); };
    if (options_.free_memory) so.memory_available_bytes = options_.free_memory();
  }
  auto stack = server::load_serve_stack(so, &serving->metrics, log);
  if (!stack.ok()) {
    log("load failed: " + stack.status().message());
    // The memory refusal keeps its own name: it says what the device lacks, not what broke.
    const bool no_room = stack.status().code() == StatusCode::ResourceExhausted &&
                         stack.status().message().starts_with("insufficient_memory");
    return set_state(ReplicaState::Failed, (no_room ? "" : "load: ") + stack.status().message());
  }
  serving->stack = std::move(stack).value();
  serving->router.set_ready(&serving->stack->api, serving->stack->props);
  std::lock_guard lock(mu_);
  if (stopping_) return;
  report_.prefill_tps = options_.simulate ? options_.simulate->claimed_prefill_tps() : serving->stack->prompt_tok_s;
  report_.decode_tps = options_.simulate ? options_.simulate->claimed_decode_tps() : serving->stack->decode_tok_s;
  report_.state = ReplicaState::Ready;
  report_.detail.clear();
  report_.tuned = tuned_settings(*serving->stack, so);
  serving_ = std::move(serving);
  if (options_.log) {
    options_.log("replica " + name + ": ready (prompt " + std::to_string(report_.prefill_tps) + " tok/s, generation " +
                 std::to_string(report_.decode_tps) + " tok/s" + (options_.simulate ? ", simulated)" : ")"));
  }
}

}  // namespace cellserve::fleet
