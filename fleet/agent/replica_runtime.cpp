#include "fleet/agent/replica_runtime.h"

#include <algorithm>
#include <filesystem>

#include "fleet/download/downloader.h"
#include "fleet/download/model_url.h"
#include "server/metrics.h"
#include "server/router.h"
#include "server/serve_stack.h"

namespace cellserve::fleet {
namespace {

using namespace std::chrono_literals;

void send_unavailable(server::ResponseWriter& w, const std::string& message) {
  w.send(503, "application/json",
         R"({"error":{"message":")" + message + R"(","type":"unavailable_error","param":null,"code":null}})",
         {{"Retry-After", "5"}});
}

}  // namespace

struct ReplicaRuntime::Serving {
  server::Metrics metrics;
  server::Router router{server::RouterOptions{}};
  std::unique_ptr<server::ServeStack> stack;
};

ReplicaRuntime::ReplicaRuntime(AssignmentMessage assignment, RuntimeOptions options)
    : assignment_(std::move(assignment)), options_(std::move(options)) {
  report_.deployment = assignment_.deployment;
  report_.index = assignment_.index;
  report_.state = ReplicaState::Matched;
}

ReplicaRuntime::~ReplicaRuntime() { stop(); }

void ReplicaRuntime::start() {
  worker_ = std::thread([this] { run(); });
}

void ReplicaRuntime::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    stop_cv_.notify_all();
  }
  cancel_.store(true);
  if (worker_.joinable()) worker_.join();
  std::shared_ptr<Serving> serving;
  {
    std::lock_guard lock(mu_);
    serving.swap(serving_);
  }
  // Requests in flight hold their own reference; the stack goes when the last one ends.
}

void ReplicaRuntime::set_index(int index) {
  std::lock_guard lock(mu_);
  assignment_.index = index;
  report_.index = index;
}

ReplicaReport ReplicaRuntime::report() const {
  std::lock_guard lock(mu_);
  return report_;
}

void ReplicaRuntime::set_state(ReplicaState state, std::string detail, double progress) {
  std::lock_guard lock(mu_);
  report_.state = state;
  report_.detail = std::move(detail);
  if (progress >= 0) report_.progress = progress;
}

bool ReplicaRuntime::wait_stop(std::chrono::milliseconds delay) {
  std::unique_lock lock(mu_);
  return stop_cv_.wait_for(lock, delay, [&] { return stopping_; });
}

void ReplicaRuntime::handle(const server::HttpRequest& request, server::ResponseWriter& writer) {
  std::shared_ptr<Serving> serving;
  {
    std::lock_guard lock(mu_);
    serving = serving_;
  }
  if (!serving) return send_unavailable(writer, "the replica is not ready");
  serving->router.handle(request, writer);
}

void ReplicaRuntime::run() {
  const std::string name = assignment_.deployment + "/" + std::to_string(assignment_.index);
  auto log = [&](const std::string& line) {
    if (options_.log) options_.log("replica " + name + ": " + line);
  };
  std::error_code ec;
  std::filesystem::create_directories(options_.models_dir, ec);
  const std::string path = options_.models_dir + "/" + assignment_.model_sha256 + ".gguf";

  // Download until verified; a corrupt or failed download is retried with backoff.
  auto backoff = 1000ms;
  for (int attempt = 1;; ++attempt) {
    auto url = resolve_model_url(assignment_.model_url);
    if (!url.ok()) return set_state(ReplicaState::Failed, url.status().message());
    set_state(ReplicaState::Downloading, attempt == 1 ? "" : "attempt " + std::to_string(attempt), 0);
    DownloadRequest dr;
    dr.url = *url;
    dr.dest_path = path;
    dr.sha256 = assignment_.model_sha256;
    if (const char* token = std::getenv("HF_TOKEN"); token && assignment_.model_url.starts_with("hf://"))
      dr.bearer_token = token;
    dr.progress = [this](uint64_t done, uint64_t total) {
      if (total > 0) {
        std::lock_guard lock(mu_);
        report_.progress = std::min(1.0, static_cast<double>(done) / static_cast<double>(total));
      }
      return !cancel_.load();
    };
    auto result = download_file(dr);
    if (result.ok()) {
      log("model verified (" + std::to_string(result->bytes >> 20) + " MiB, sha256 " + result->sha256.substr(0, 12) +
          ")");
      break;
    }
    if (cancel_.load()) return;
    log("download failed: " + result.status().message() + "; retrying in " + std::to_string(backoff.count()) + " ms");
    set_state(ReplicaState::Failed, "download: " + result.status().message());
    if (wait_stop(backoff)) return;
    backoff = std::min<std::chrono::milliseconds>(backoff * 2, 60s);
  }

  set_state(ReplicaState::Loading, "", 1);
  auto serving = std::make_shared<Serving>();
  server::ServeStackOptions so;
  so.model_path = path;
  so.parallel = assignment_.engine.parallel > 0 ? assignment_.engine.parallel : 2;
  so.ctx_size = assignment_.engine.ctx_size;
  so.threads = assignment_.engine.threads;
  so.alias = assignment_.deployment;
  so.autotune = options_.autotune;
  so.on_autotune_start = [this] { set_state(ReplicaState::Tuning); };
  if (!assignment_.engine.lora.empty()) {
    // Adapters are named by URL in the spec; fetching them is not implemented yet.
    return set_state(ReplicaState::Failed, "engine.lora in deployment specs is not supported by this agent yet");
  }
  auto stack = server::load_serve_stack(so, &serving->metrics, log);
  if (!stack.ok()) {
    log("load failed: " + stack.status().message());
    return set_state(ReplicaState::Failed, "load: " + stack.status().message());
  }
  serving->stack = std::move(stack).value();
  serving->router.set_ready(&serving->stack->api, serving->stack->props);
  std::lock_guard lock(mu_);
  if (stopping_) return;
  report_.prefill_tps = serving->stack->prompt_tok_s;
  report_.decode_tps = serving->stack->decode_tok_s;
  report_.state = ReplicaState::Ready;
  report_.detail.clear();
  serving_ = std::move(serving);
  if (options_.log) {
    options_.log("replica " + name + ": ready (prompt " + std::to_string(report_.prefill_tps) + " tok/s, generation " +
                 std::to_string(report_.decode_tps) + " tok/s)");
  }
}

}  // namespace cellserve::fleet
