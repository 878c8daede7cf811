#include "fleet/agent/agent.h"

#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include <boost/json.hpp>

#include "base/log_sink.h"
#include "fleet/agent/attestation_command.h"
#include "fleet/agent/device_sensors.h"
#include "fleet/agent/device_specs.h"
#include "fleet/agent/hub_candidates.h"
#include "fleet/agent/hub_dial.h"
#include "fleet/agent/replica_runtime.h"
#include "fleet/attest/attestation.h"
#include "fleet/attest/attested_key.h"
#include "fleet/attest/attested_seal.h"
#include "fleet/crypto/identity.h"
#include "fleet/crypto/sha256.h"
#include "fleet/spec/device_state.h"
#include "fleet/spec/replica_address.h"
#include "fleet/tls/name_resolution.h"
#include "fleet/tunnel/tunnel_server.h"
#include "net/json_error.h"
#include "net/route_table.h"

namespace cellserve::fleet {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

using net::send_error;

// The addresses of a hub's name, for DNS round robin (hub_candidates.h).
Result<std::vector<std::string>> resolve_hub(const std::string& host, int port) {
  CS_ASSIGN_OR_RETURN(const std::vector<ResolvedAddress> found, resolve_host(host, port, 5s));
  std::vector<std::string> texts;
  texts.reserve(found.size());
  for (const ResolvedAddress& a : found) texts.push_back(a.text);
  return texts;
}

}  // namespace

struct Agent::Impl {
  // Where log() writes when options.log is unset: stderr, never blocking the caller, who may hold
  // `mu` (base/log_sink.h). Declared first, so destroyed last.
  std::unique_ptr<LogSink> stderr_log;
  AgentOptions options;
  std::vector<HubCandidate> hubs;        // --hub, in the order given
  std::vector<std::string> hub_origins;  // theirs, trusted for downloads as the hub itself
  std::optional<Identity> identity;
  AgentInfo info;

  std::mutex mu;  // guards runtimes, tunnel, stopping
  std::condition_variable cv;
  std::map<std::string, std::shared_ptr<ReplicaRuntime>> runtimes;  // by deployment
  std::shared_ptr<TunnelServer> tunnel;                             // shared: stop() closes it outside `mu`
  bool stopping = false;
  std::thread loop;

  void log(const std::string& line) const {
    if (stderr_log) {
      stderr_log->write("cellserve agent: " + line);
    } else {
      options.log(line);
    }
  }

  void connection_loop();
  // One tunnel to `hub`, held until it closes; false when it could not be opened.
  bool serve_tunnel(const HubCandidate& hub);
  net::RouteTable routes;  // what the hub may ask through the tunnel
  void add_routes();
  void apply_assignments(const std::vector<AssignmentMessage>& wanted);
  // Opens the assignment's sealed secrets with this device's identity and hands them to `rt`,
  // which then acknowledges their version; on failure it keeps what it had (and gets no
  // traffic at the new version), and the reason is logged, never a value.
  void open_secrets(const AssignmentMessage& a, ReplicaRuntime& rt) const;
  // Runs --attestation-command for this registration's challenge; what it printed is presented
  // at /agent/info (nothing when it failed: the reason is logged, and the hub records the device
  // as not attested). Then asks the helper to sign this handshake with the attested key
  // (`sign`); returns that signature for X-Cellserve-Attested-Signature ("" : none).
  std::string prepare_attestation(const std::string& hub_challenge, const std::string& origin);
  boost::json::value attestation;  // guarded by mu
  // Why the agent takes no new requests now ("" : it does), from the last status poll's battery.
  std::string paused;  // guarded by mu
  // The device's state now, with the pause it implies (logged when it changes).
  DeviceState poll_device();
};

DeviceState Agent::Impl::poll_device() {
  DeviceState state = read_device_state(options.device_root);
  const std::string reason = options.min_battery > 0 ? battery_pause_reason(state, options.min_battery) : "";
  {
    std::lock_guard lock(mu);
    if (reason != paused) {
      log(reason.empty() ? std::string("taking new requests again") : "taking no new requests: " + reason);
      paused = reason;
    }
  }
  state.paused = reason;
  return state;
}

std::string Agent::Impl::prepare_attestation(const std::string& hub_challenge, const std::string& origin) {
  boost::json::value evidence;
  std::string signature;
  if (!options.attestation_command.empty()) {
    const std::optional<std::string> challenge = attest::registration_challenge(hub_challenge, identity->id());
    if (!challenge) {
      log("attestation: the hub's challenge is not 32 bytes of hex; none presented");
    } else {
      auto ran = run_attestation_command(options.attestation_command,
                                         to_hex(reinterpret_cast<const unsigned char*>(challenge->data()), 32));
      if (ran.ok()) {
        evidence = std::move(ran).value();
        auto made_at = key_creation_nonce(options.data_dir + "/attested-key.json", evidence, hub_challenge);
        if (made_at.ok()) {
          evidence.as_object()["key_nonce"] = *made_at;
        } else {
          log(made_at.status().message());
        }
        // Whether the helper can open secrets sealed to the attested key (its `ecdh` verb).
        evidence.as_object()["ecdh"] =
            ecdh_with_attested_key(options.attestation_command, attest::ecdh_probe_peer()).ok();
      } else {
        log(ran.status().message() + "; registering without attestation");
      }
    }
    auto signed_by_key = sign_with_attested_key(options.attestation_command,
                                                attest::attested_tunnel_digest(origin, hub_challenge, identity->id()));
    if (signed_by_key.ok()) {
      signature = std::move(signed_by_key).value();
    } else {
      log(signed_by_key.status().message() + "; this handshake is not signed by the attested key");
    }
  }
  std::lock_guard lock(mu);
  attestation = std::move(evidence);
  return signature;
}

void Agent::Impl::open_secrets(const AssignmentMessage& a, ReplicaRuntime& rt) const {
  const std::string where = "replica " + a.deployment + "/" + std::to_string(a.index);
  if (a.sealed_secrets.empty()) {
    log(where + ": the hub sent no secrets for version " + std::to_string(a.secrets_version));
    return;
  }
  // Sealed to the attested key too (an attested_only deployment): the helper's ECDH opens the
  // outer box, the identity key the inner one.
  std::string inner = a.sealed_secrets;
  if (attest::is_attested_seal(a.sealed_secrets)) {
    auto peer = attest::attested_seal_peer(a.sealed_secrets);
    auto shared =
        peer.ok() ? ecdh_with_attested_key(options.attestation_command, *peer) : Result<std::string>(peer.status());
    auto outer = shared.ok() ? attest::open_attested_seal(a.sealed_secrets, identity->id(), *shared)
                             : Result<std::string>(shared.status());
    if (shared.ok()) wipe(*shared);
    if (!outer.ok()) return log(where + ": cannot open its secrets with the attested key: " + outer.status().message());
    inner = std::move(outer).value();
  }
  auto opened = identity->open_sealed(inner);
  if (!opened.ok()) return log(where + ": cannot open its secrets: " + opened.status().message());
  auto secrets = secrets_from_payload(*opened);
  wipe(*opened);  // the values live on in the runtime only
  if (!secrets.ok()) return log(where + ": its secrets are malformed");
  if (secrets->replica_key.empty()) return log(where + ": its secrets carry no replica key");
  // The acknowledgement: only a device that opened the box has the key inside it.
  const std::string proof = secrets_ack_proof(secrets->ack_key, a.deployment, a.secrets_version, a.secrets_challenge);
  const size_t count = secrets->env.size();
  rt.set_secrets(a.secrets_version, sha256_hex(a.sealed_secrets), proof, std::move(secrets).value());
  log(where + ": opened secrets version " + std::to_string(a.secrets_version) + " (" + std::to_string(count) +
      (count == 1 ? " value" : " values") +
      (attest::is_attested_seal(a.sealed_secrets) ? ", sealed to the attested key too)" : ")"));
}

bool Agent::Impl::serve_tunnel(const HubCandidate& hub) {
  auto dialed = dial_hub(hub.address, *identity, 10s, options.enroll_token,
                         [this](const std::string& challenge, const std::string& origin) {
                           return prepare_attestation(challenge, origin);
                         });
  if (!dialed.ok()) {
    log("cannot reach the hub at " + hub.origin + ": " + dialed.status().message());
    return false;
  }
  auto server = TunnelServer::start(
      dialed->fd, [this](const net::HttpRequest& req, net::ResponseWriter& w) { routes.dispatch(req, w); }, {},
      std::move(dialed->initial_bytes));
  if (!server.ok()) {
    log("tunnel to " + hub.origin + ": " + server.status().message());
    return false;
  }
  log("connected to the hub at " + hub.origin + " as " + identity->id().substr(0, 16));
  std::shared_ptr<TunnelServer> current = std::move(server).value();
  {
    std::lock_guard lock(mu);
    if (stopping) return true;
    tunnel = current;
  }
  current->wait();
  log("tunnel to " + hub.origin + " closed: " + current->close_reason());
  {
    std::lock_guard lock(mu);
    tunnel.reset();
  }
  current.reset();  // joins its handler threads (unless stop() still holds it)
  return true;
}

// Replicas keep running while the agent moves from hub to hub: the next hub pushes the same
// assignments, and apply_assignments() keeps a runtime whose model and engine are unchanged.
void Agent::Impl::connection_loop() {
  std::mt19937_64 rng(std::random_device{}());
  HubRotation rotation(hubs, resolve_hub, rng());
  DialBackoff backoff;
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (;;) {
    {
      std::lock_guard lock(mu);
      if (stopping) return;
    }
    const HubCandidate& hub = rotation.next();
    const auto began = std::chrono::steady_clock::now();
    if (serve_tunnel(hub)) {
      backoff.tunnel_closed(
          std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - began));
    }
    const std::chrono::milliseconds wait = backoff.next(unit(rng));
    std::unique_lock lock(mu);
    if (cv.wait_for(lock, wait, [&] { return stopping; })) return;
  }
}

void Agent::Impl::apply_assignments(const std::vector<AssignmentMessage>& wanted) {
  std::vector<std::shared_ptr<ReplicaRuntime>> retired;
  {
    std::lock_guard lock(mu);
    std::map<std::string, const AssignmentMessage*> by_name;
    for (const AssignmentMessage& a : wanted) by_name[a.deployment] = &a;
    for (auto it = runtimes.begin(); it != runtimes.end();) {
      const auto want = by_name.find(it->first);
      const AssignmentMessage& have = it->second->assignment();
      // A different model or any engine setting reloads the replica (EngineSettings compares all).
      if (want == by_name.end() || want->second->model_sha256 != have.model_sha256 ||
          want->second->model_url != have.model_url || want->second->engine != have.engine) {
        log("replica " + it->first + ": unassigned");
        retired.push_back(std::move(it->second));
        it = runtimes.erase(it);
      } else {
        if (want->second->index != have.index) it->second->set_index(want->second->index);
        if (want->second->files_token != have.files_token) it->second->set_files_token(want->second->files_token);
        // Sealed afresh for each version, and after a hub restart: a new seal is new secrets.
        if (!want->second->sealed_secrets.empty() &&
            sha256_hex(want->second->sealed_secrets) != it->second->secrets_sha256()) {
          open_secrets(*want->second, *it->second);
        }
        ++it;
      }
    }
    for (const AssignmentMessage& a : wanted) {
      if (runtimes.contains(a.deployment)) continue;
      log("replica " + a.deployment + "/" + std::to_string(a.index) + ": assigned " + a.model_url);
      RuntimeOptions ro;
      ro.models_dir = options.data_dir + "/models";
      ro.autotune = options.autotune;
      ro.hub_urls = hub_origins;
      ro.hub_ca = options.hub_ca;
      ro.allow_private_downloads = options.allow_private_downloads;
      ro.simulate = options.simulate;
      ro.free_memory = [root = options.device_root] { return read_meminfo_bytes(root, "MemAvailable"); };
      ro.log = [this](const std::string& line) { log(line); };
      ro.device_id = identity->id();
      ro.sign = [this](std::string_view message) { return identity->sign(message); };
      auto rt = std::make_shared<ReplicaRuntime>(a, ro);
      open_secrets(a, *rt);  // before it starts: its download may need HF_TOKEN
      rt->start();
      runtimes[a.deployment] = std::move(rt);
    }
  }
  for (auto& rt : retired) rt->stop();  // outside the lock; a request in flight keeps its runtime alive
}

void Agent::Impl::add_routes() {
  using net::HttpRequest;
  using net::PathParams;
  using net::ResponseWriter;
  routes.add("GET", kAgentInfoPath, [this](const HttpRequest&, const PathParams&, ResponseWriter& w) {
    AgentInfo now = info;
    {
      std::lock_guard lock(mu);
      now.attestation = attestation;  // this registration's evidence
    }
    w.send(200, "application/json", json::serialize(to_json(now)));
  });
  routes.add("GET", kAgentStatusPath, [this](const HttpRequest&, const PathParams&, ResponseWriter& w) {
    const DeviceState device = poll_device();
    std::vector<ReplicaReport> reports;
    {
      std::lock_guard lock(mu);
      for (const auto& kv : runtimes) reports.push_back(kv.second->report());
    }
    json::value body = to_json(reports);
    body.as_object()["device"] = to_json(device);
    w.send(200, "application/json", json::serialize(body));
  });
  routes.add("PUT", kAgentAssignmentsPath, [this](const HttpRequest& req, const PathParams&, ResponseWriter& w) {
    auto v = parse_json(req.body, "assignments");
    if (!v.ok()) return send_error(w, 400, v.status().message());
    auto wanted = assignments_from_json(*v);
    if (!wanted.ok()) return send_error(w, 400, wanted.status().message());
    apply_assignments(*wanted);
    w.send(200, "application/json", R"({"ok":true})");
  });
  routes.add("*", kReplicaRoute, [this](const HttpRequest& req, const PathParams& params, ResponseWriter& w) {
    const std::optional<ReplicaAddress> address = replica_address(params);
    if (!address) return send_error(w, 404, "no replica at " + req.path);
    std::shared_ptr<ReplicaRuntime> rt;
    std::string pause_reason;
    {
      std::lock_guard lock(mu);
      const auto it = runtimes.find(address->deployment);
      if (it != runtimes.end()) rt = it->second;
      pause_reason = paused;
    }
    if (!pause_reason.empty()) {
      return send_error(w, 503, "this device takes no new requests: " + pause_reason, {{"Retry-After", "60"}});
    }
    if (rt == nullptr) return send_error(w, 503, "this device does not serve '" + address->deployment + "'");
    net::HttpRequest inner = req;
    inner.path = address->rest;
    rt->handle(inner, w);
  });
}

namespace {

// One client context for every https hub in the list; --hub-ca applies to all of them.
Status add_tls_contexts(std::vector<HubCandidate>& hubs, const std::string& hub_ca) {
  std::shared_ptr<TlsContext> context;
  for (HubCandidate& hub : hubs) {
    if (!hub.address.tls) continue;
    if (!context) {
      CS_ASSIGN_OR_RETURN(context, TlsContext::client(hub_ca));
    }
    hub.address.tls_context = context;
  }
  if (!context && !hub_ca.empty()) return Status::invalid_argument("--hub-ca needs an https:// hub");
  return {};
}

}  // namespace

Agent::Agent(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Agent::~Agent() { stop(); }

const std::string& Agent::id() const { return impl_->identity->id(); }

void Agent::stop() {
  if (!impl_) return;
  std::shared_ptr<TunnelServer> tunnel;
  {
    std::lock_guard lock(impl_->mu);
    if (impl_->stopping && !impl_->loop.joinable()) return;
    impl_->stopping = true;
    impl_->cv.notify_all();
    tunnel = impl_->tunnel;
  }
  // Outside the lock: close() joins the tunnel's handlers, and they take `mu` (status, assignments).
  if (tunnel) tunnel->close();
  tunnel.reset();
  if (impl_->loop.joinable()) impl_->loop.join();
  std::map<std::string, std::shared_ptr<ReplicaRuntime>> runtimes;
  {
    std::lock_guard lock(impl_->mu);
    runtimes.swap(impl_->runtimes);
  }
  for (auto& kv : runtimes) kv.second->stop();
}

Result<std::unique_ptr<Agent>> Agent::start(AgentOptions options) {
  if (options.data_dir.empty()) return Status::invalid_argument("--data-dir is required");
  if (!(options.price_per_day >= 0)) return Status::invalid_argument("--price-per-day must be >= 0");
  if (options.min_battery < 0 || options.min_battery > 100) {
    return Status::invalid_argument("--min-battery must be a percentage in [0, 100]");
  }
  CS_RETURN_IF_ERROR(set_dns_servers(options.dns));
  auto impl = std::make_unique<Impl>();
  if (!options.log) impl->stderr_log = std::make_unique<LogSink>(STDERR_FILENO);
  CS_ASSIGN_OR_RETURN(impl->hubs, parse_hub_list(options.hub_url));
  CS_RETURN_IF_ERROR(add_tls_contexts(impl->hubs, options.hub_ca));
  for (const HubCandidate& hub : impl->hubs) impl->hub_origins.push_back(hub.origin);
  std::error_code ec;
  std::filesystem::create_directories(options.data_dir, ec);
  if (ec) return Status::internal(options.data_dir + ": cannot create: " + ec.message());
  CS_ASSIGN_OR_RETURN(Identity id, Identity::load_or_create(options.data_dir + "/identity.key"));
  impl->identity.emplace(std::move(id));
  impl->options = options;
  impl->add_routes();
  CS_ASSIGN_OR_RETURN(impl->info.specs, detect_specs(options.data_dir));
  if (!options.specs_override.empty())
    CS_RETURN_IF_ERROR(apply_specs_override(options.specs_override, &impl->info.specs));
  if (options.name.empty()) {
    char host[256] = {};
    ::gethostname(host, sizeof(host) - 1);
    options.name = host;
  }
  impl->info.name = options.name;
  impl->info.price_per_day = options.price_per_day;
  impl->info.version = "cellserve 0.1.0";
  if (options.simulate) {
    // The simulated speeds are the benchmark: nothing real runs here to measure.
    const engine::simulated::SimulateOptions& sim = *options.simulate;
    impl->info.simulated = true;
    impl->info.benchmark = {sim.claimed_prefill_tps(), sim.claimed_decode_tps(),
                            "simulated " + simulate_options_text(sim)};
    impl->log("identity " + impl->identity->id().substr(0, 16) + "; simulated engine " + simulate_options_text(sim));
  } else {
    impl->log("identity " + impl->identity->id().substr(0, 16) + "; benchmarking " +
              (options.benchmark_shape.empty() ? std::string("skipped") : options.benchmark_shape));
    CS_ASSIGN_OR_RETURN(impl->info.benchmark, run_benchmark(options.data_dir, options.benchmark_shape));
  }
  Impl* raw = impl.get();
  impl->loop = std::thread([raw] { raw->connection_loop(); });
  return std::unique_ptr<Agent>(new Agent(std::move(impl)));
}

}  // namespace cellserve::fleet
