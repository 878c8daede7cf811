// One deployment replica on this device: download (resumable, SHA-256 verified, retried with
// backoff when the file is corrupt or the server fails), load, autotune, then serve the
// deployment's OpenAI API in-process (server/serve_stack.h behind server/router.h). Its state is
// what the agent reports to the hub. With `simulate` set (agent --simulate) there is no download
// and no model: the replica serves the same stack over a simulated model (engine/simulated).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "engine/simulated/simulate_options.h"
#include "fleet/spec/agent_protocol.h"
#include "net/http_types.h"

namespace cellserve::server {
struct ServeStackOptions;
}  // namespace cellserve::server

namespace cellserve::fleet {

// Attempts at one file before its replica stays failed. Transient errors (5xx, a dropped
// connection, a corrupt file) are retried with backoff; permanent ones (404, 410, 401, 403, another
// 4xx) stop at once, since asking again will not make the file appear. Each attempt is one
// download_file() call, which itself makes up to DownloadRequest::max_attempts transfers (resuming).
inline constexpr int kMaxDownloadAttempts = 8;

struct RuntimeOptions {
  std::string models_dir;  // downloads land in <models_dir>/<sha256>.gguf
  bool autotune = true;
  // The hubs the agent may tunnel to ("http(s)://host:port", agent --hub): downloads from any of
  // them trust hub_ca instead of the system store and may carry the files token; the first is
  // trusted for other downloads' redirects, as before.
  std::vector<std::string> hub_urls;
  std::string hub_ca;
  // Downloads connect only to public addresses and to their hub's own (fleet/download/
  // address_policy.h), unless set (agent --allow-private-downloads).
  bool allow_private_downloads = false;
  // Set: a simulated engine at these speeds instead of a downloaded model; only deployments with
  // engine.simulated are served (others fail with a reason), and the reported prefill/decode
  // speeds are these.
  std::optional<engine::simulated::SimulateOptions> simulate;
  std::function<void(const std::string&)> log;
  // The device's free memory now (MemAvailable; nullopt when unknown). Set: a model whose
  // weights, KV cache and scratch exceed it is refused before loading (server/memory_estimate.h),
  // failed for good with the detail "insufficient_memory: needs ...; ... free".
  std::function<std::optional<uint64_t>()> free_memory;
  // Signs every answer (fleet/signing): the device's id and its identity's sign(). Unset: answers
  // go unsigned (tests of the runtime alone).
  std::string device_id;
  std::function<std::string(std::string_view)> sign;
  // The delay before the second attempt at a transiently failed download; it doubles up to 60 s.
  // Half of it is the first delay between transfers within one attempt.
  std::chrono::milliseconds download_backoff{1000};
};

class ReplicaRuntime {
 public:
  ReplicaRuntime(AssignmentMessage assignment, RuntimeOptions options);
  ~ReplicaRuntime();  // stop()
  ReplicaRuntime(const ReplicaRuntime&) = delete;
  ReplicaRuntime& operator=(const ReplicaRuntime&) = delete;

  void start();
  // Cancels a download in progress, waits for the worker, and closes the server.
  void stop();

  const AssignmentMessage& assignment() const { return assignment_; }
  // A new download token for the hub's /files/ (sent with every assignment push on a closed hub).
  void set_files_token(std::string token);
  // The deployment's secrets at `version`, opened by the agent (in memory only). The replica key
  // guards handle(); HF_TOKEN authorises Hugging Face downloads. Reported as the acknowledged
  // version; nothing reloads.
  // `sealed_sha256`: the SHA-256 of the sealed form they came in (so the agent opens a new seal
  // only once); `proof`: the acknowledgement reported to the hub (ReplicaReport::secrets_proof).
  void set_secrets(int version, const std::string& sealed_sha256, const std::string& proof, DeploymentSecrets secrets);
  // The SHA-256 of the sealed secrets last opened ("" : none).
  std::string secrets_sha256() const;
  // The hub may move a replica to another index (a spare promoted): same model, new address.
  void set_index(int index);
  ReplicaReport report() const;
  // Serves one API request (path already stripped of /d/<deployment>/r/<n>): 401 unless it
  // carries the replica key (only the hub has it), 503 until ready.
  void handle(const net::HttpRequest& request, net::ResponseWriter& writer);

  struct Serving;  // the loaded server stack

 private:
  void run();
  void set_state(ReplicaState state, std::string detail = {}, double progress = -1);
  bool wait_stop(std::chrono::milliseconds delay);
  // The deployment's HF_TOKEN secret, else this device's own $HF_TOKEN, else "".
  std::string huggingface_token() const;
  // Downloads `url` to <models_dir>/<sha256>.gguf until verified; false when stopped first.
  // The hub of hub_urls whose URL `url` is under; nullptr for another host.
  const std::string* serving_hub(const std::string& url) const;
  bool download_verified(const std::string& url, const std::string& sha256,
                         const std::function<void(const std::string&)>& log);
  // The model and each adapter, downloaded until verified; fills the serve options' model and
  // adapter paths. False when stopping or failed for good (the state says why).
  bool fetch(server::ServeStackOptions* so, const std::function<void(const std::string&)>& log);
  // The assignment's serve settings ([engine] in the spec) into `so`; an inline chat template is
  // written to <models_dir>/chat-template-<sha256>.jinja. An error when that cannot be written.
  Status apply_serve_settings(server::ServeStackOptions* so) const;
  // Whether this runtime's kind (simulated or not) is what the assignment asks; Failed if not.
  bool engine_kind_matches();

  AssignmentMessage assignment_;
  const RuntimeOptions options_;
  mutable std::mutex mu_;
  std::condition_variable stop_cv_;
  ReplicaReport report_;
  DeploymentSecrets secrets_;  // guarded by mu_; report_.secrets_version is their version
  std::string sealed_sha256_;  // guarded by mu_; of the sealed form secrets_ came in
  bool stopping_ = false;
  std::atomic<bool> cancel_{false};
  std::shared_ptr<Serving> serving_;  // set once ready
  std::thread worker_;
};

}  // namespace cellserve::fleet
