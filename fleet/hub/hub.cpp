#include "fleet/hub/hub.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <regex>

#include <boost/json.hpp>

#include "fleet/crypto/identity.h"
#include "fleet/download/file_server.h"
#include "fleet/hub/hub_impl.h"
#include "fleet/matcher/matcher.h"
#include "fleet/spec/agent_protocol.h"
#include "server/api/openai_error.h"

namespace cellserve::fleet {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

// "/d/<deployment>/r/<index>" at the start of `path`: the deployment, the index and the rest.
bool parse_replica_path(const std::string& path, std::string* deployment, int* index) {
  static const std::regex re("^/d/([a-z0-9-]{1,40})/r/([0-9]{1,4})(/.*)?$");
  std::smatch m;
  if (!std::regex_match(path, m, re)) return false;
  *deployment = m[1].str();
  *index = std::stoi(m[2].str());
  return true;
}

}  // namespace

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void send_json(server::ResponseWriter& w, int status, const std::string& body) {
  w.send(status, "application/json", body);
}

void Hub::Impl::log(const std::string& line) const {
  if (options.log) {
    options.log(line);
  } else {
    std::fprintf(stderr, "cellserve hub: %s\n", line.c_str());
    std::fflush(stderr);
  }
}

void Hub::Impl::request_reconcile() {
  std::lock_guard lock(mu);
  wake_requested = true;
  wake.notify_all();
}

void Hub::Impl::handle(const server::HttpRequest& req, server::ResponseWriter& w) {
  // A replica addressed by host name: <deployment>-<n>.<domain>.
  if (!options.domain.empty()) {
    std::string host = req.header("host");
    if (const size_t colon = host.rfind(':'); colon != std::string::npos) host.resize(colon);
    const std::string suffix = "." + options.domain;
    if (host.size() > suffix.size() && host.ends_with(suffix)) {
      static const std::regex re("^([a-z0-9-]{1,40})-([0-9]{1,4})$");
      std::smatch m;
      const std::string label = host.substr(0, host.size() - suffix.size());
      if (std::regex_match(label, m, re)) {
        server::HttpRequest rewritten = req;
        rewritten.path = "/d/" + m[1].str() + "/r/" + m[2].str() + req.path;
        return proxy_replica(rewritten, w, m[1].str(), std::stoi(m[2].str()));
      }
    }
  }
  std::string deployment;
  int index = 0;
  if (parse_replica_path(req.path, &deployment, &index)) return proxy_replica(req, w, deployment, index);
  if (req.path == "/health") return send_json(w, 200, R"({"status":"ok"})");
  if (req.path == kChallengePath) {
    if (req.method != "GET") return send_error(w, 405, "use GET");
    return send_json(w, 200, json::serialize(json::object{{"challenge", links.issue_challenge()}}));
  }
  if (req.path == kTunnelPath) return open_tunnel(req, w);
  if (req.path.starts_with("/files/")) return files(req, w);
  if (req.path.starts_with("/api/v1/")) return handle_api(req, w);
  send_error(w, 404, "no route for " + req.method + " " + req.path);
}

void Hub::Impl::open_tunnel(const server::HttpRequest& req, server::ResponseWriter& w) {
  const std::string id = req.header("x-cellserve-agent");
  const std::string challenge = req.header("x-cellserve-challenge");
  const std::string signature = req.header("x-cellserve-signature");
  if (req.header("upgrade") != kTunnelProtocol) {
    return send_error(w, 400, "expected Upgrade: " + std::string(kTunnelProtocol));
  }
  if (!links.redeem_challenge(challenge)) {
    return send_error(w, 401, "unknown, used or expired challenge: GET " + std::string(kChallengePath) + " first");
  }
  if (!verify_signature(id, tunnel_signature_message(challenge), signature)) {
    log("tunnel refused: bad signature for agent " + id.substr(0, 16));
    return send_error(w, 401, "the signature does not verify with X-Cellserve-Agent's key");
  }
  std::optional<server::UpgradedConnection> up = w.upgrade({{"Upgrade", std::string(kTunnelProtocol)}});
  if (!up) return;
  TunnelOptions to;
  to.ping_timeout = options.ping_timeout;
  to.ping_interval = std::max(std::chrono::milliseconds(200), options.ping_timeout / 3);
  auto tunnel = TunnelClient::start(up->fd, to, std::move(up->buffered));
  if (!tunnel.ok()) {
    log("tunnel from " + id.substr(0, 16) + " failed: " + tunnel.status().message());
    return;
  }
  auto link = std::make_shared<AgentLink>();
  link->processor_id = id;
  link->tunnel = std::move(tunnel).value();

  // Registration: the agent describes itself through the new tunnel.
  auto info_reply = link->tunnel->call("GET", std::string(kAgentInfoPath), "", 10s);
  Result<AgentInfo> info = info_reply.ok() ? Result<AgentInfo>(Status::internal("")) : info_reply.status();
  if (info_reply.ok()) {
    if (info_reply->status != 200) {
      info = Status::invalid_argument("agent answered " + std::to_string(info_reply->status) + " to /agent/info");
    } else if (auto v = parse_json(info_reply->body, "agent info"); v.ok()) {
      info = agent_info_from_json(*v);
    } else {
      info = v.status();
    }
  }
  if (!info.ok()) {
    log("agent " + id.substr(0, 16) + " not registered: " + info.status().message());
    link->tunnel->close();
    return;
  }
  const int64_t now = now_ms();
  Processor p;
  if (auto existing = store->processor(id); existing.ok() && existing->has_value()) p = **existing;
  p.id = id;
  p.name = info->name.empty() ? id.substr(0, 12) : info->name;
  p.specs = info->specs;
  p.benchmark = info->benchmark;
  p.price_per_day = info->price_per_day;
  p.attested = false;  // no attestation scheme yet: see docs/fleet.md
  p.online = true;
  p.last_seen_ms = now;
  if (p.registered_ms == 0) p.registered_ms = now;
  if (Status s = store->upsert_processor(p); !s.ok()) {
    log("agent " + p.name + ": store: " + s.message());
    link->tunnel->close();
    return;
  }
  link->tunnel->on_close([this] { request_reconcile(); });
  links.add(link);
  log("agent " + p.name + " (" + id.substr(0, 16) + ") connected: " + p.specs.arch + ", " +
      std::to_string(p.specs.cores) + " cores, " + std::to_string(p.specs.ram_bytes >> 20) + " MiB, ask " +
      std::to_string(p.price_per_day) + "/day, decode " + std::to_string(p.benchmark.decode_tps) + " tok/s");
  request_reconcile();
}

void Hub::Impl::reconcile_loop() {
  std::unique_lock lock(mu);
  while (!stopping) {
    lock.unlock();
    reconcile_once();
    lock.lock();
    wake.wait_for(lock, options.poll_interval, [&] { return stopping || wake_requested; });
    wake_requested = false;
  }
}

void Hub::Impl::poll_agent(const std::shared_ptr<AgentLink>& link, int64_t now) {
  auto reply = link->tunnel->call("GET", std::string(kAgentStatusPath), "", 5s);
  if (!reply.ok() || reply->status != 200) {
    ++link->failed_polls;
    return;
  }
  link->failed_polls = 0;
  auto v = parse_json(reply->body, "agent status");
  if (!v.ok()) return;
  auto reports = replica_reports_from_json(*v);
  if (!reports.ok()) {
    log("agent " + link->processor_id.substr(0, 16) + ": " + reports.status().message());
    return;
  }
  (void)store->set_processor_online(link->processor_id, true, now);
  for (const ReplicaReport& rep : *reports) {
    auto rows = store->replicas(rep.deployment);
    if (!rows.ok()) continue;
    for (Replica r : *rows) {
      if (r.index != rep.index || r.processor_id != link->processor_id || r.state == ReplicaState::Offline) continue;
      if (r.state == rep.state && r.progress == rep.progress && r.detail == rep.detail &&
          r.decode_tps == rep.decode_tps) {
        continue;
      }
      if (r.state != rep.state) {
        log("replica " + r.deployment + "/" + std::to_string(r.index) + ": " + replica_state_name(r.state) + " → " +
            replica_state_name(rep.state) + (rep.detail.empty() ? "" : " (" + rep.detail + ")"));
      }
      r.state = rep.state;
      r.progress = rep.progress;
      r.detail = rep.detail;
      r.prefill_tps = rep.prefill_tps;
      r.decode_tps = rep.decode_tps;
      (void)store->update_replica(r, now);
    }
  }
}

void Hub::Impl::push_assignments(const std::shared_ptr<AgentLink>& link, const std::vector<Replica>& rows) {
  std::vector<AssignmentMessage> messages;
  for (const Replica& r : rows) {
    if (r.processor_id != link->processor_id || r.state == ReplicaState::Offline) continue;
    auto d = store->deployment(r.deployment);
    if (!d.ok() || !d->has_value()) continue;
    const DeploymentSpec& spec = (*d)->spec;
    messages.push_back({r.deployment, r.index, spec.model_url, spec.model_sha256, spec.engine});
  }
  const std::string body = json::serialize(to_json(messages));
  if (body == link->pushed_assignments) return;
  auto reply =
      link->tunnel->call("PUT", std::string(kAgentAssignmentsPath), body, 10s, {{"content-type", "application/json"}});
  if (reply.ok() && reply->status == 200) {
    link->pushed_assignments = body;
  } else {
    log("agent " + link->processor_id.substr(0, 16) + " refused its assignments: " +
        (reply.ok() ? std::to_string(reply->status) + " " + reply->body : reply.status().message()));
  }
}

void Hub::Impl::reconcile_once() {
  const int64_t now = now_ms();
  // 1. Tunnels that closed: their processors are offline, their replicas need new homes.
  for (const auto& link : links.all()) {
    if (link->tunnel->closed()) {
      links.remove(link);
      (void)store->mark_processor_offline(link->processor_id, now);
      log("agent " + link->processor_id.substr(0, 16) + " offline: " + link->tunnel->close_reason());
    }
  }
  // Processors the store thinks online without a tunnel (a hub restart) are offline.
  auto processors = store->processors();
  if (!processors.ok()) return log("store: " + processors.status().message());
  for (const Processor& p : *processors) {
    if (p.online && !links.find(p.id)) (void)store->mark_processor_offline(p.id, now);
  }
  // 2. The heartbeat: every agent's replica states.
  for (const auto& link : links.all()) poll_agent(link, now);

  // 3. Matching.
  processors = store->processors();
  auto deployments = store->deployments();
  auto rows = store->replicas("");
  if (!processors.ok() || !deployments.ok() || !rows.ok()) return;
  const MatchPlan plan = plan_matches(*processors, *deployments, *rows);
  auto find_row = [&](const std::string& dep, int index) -> Replica* {
    for (Replica& r : *rows) {
      if (r.deployment == dep && r.index == index) return &r;
    }
    return nullptr;
  };
  for (const Promotion& pr : plan.promotions) {
    Replica* replica = find_row(pr.deployment, pr.replica_index);
    Replica* spare = find_row(pr.deployment, pr.spare_index);
    if (replica == nullptr || spare == nullptr) continue;
    // The spare's processor now serves the replica's address; the replica's old home becomes
    // the spare row, to be re-matched.
    Replica promoted = *spare;
    promoted.index = replica->index;
    Replica demoted = *replica;
    demoted.index = spare->index;
    demoted.state = ReplicaState::Unmatched;
    demoted.processor_id.clear();
    (void)store->update_replica(demoted, now);
    (void)store->update_replica(promoted, now);
    log("replica " + pr.deployment + "/" + std::to_string(pr.replica_index) + ": spare " +
        std::to_string(pr.spare_index) + " promoted");
  }
  for (const Assignment& a : plan.assignments) {
    Replica* r = find_row(a.deployment, a.index);
    if (r == nullptr) continue;
    Replica next = *r;
    next.processor_id = a.processor_id;
    next.price_per_day = a.price_per_day;
    next.state = ReplicaState::Matched;
    next.progress = 0;
    next.detail.clear();
    next.prefill_tps = next.decode_tps = 0;
    next.matched_ms = now;
    (void)store->update_replica(next, now);
    log("replica " + a.deployment + "/" + std::to_string(a.index) + " matched to " + a.processor_id.substr(0, 16) +
        " at " + std::to_string(a.price_per_day) + "/day");
  }
  // 4. Each agent gets its full desired set.
  rows = store->replicas("");
  if (!rows.ok()) return;
  for (const auto& link : links.all()) {
    if (!link->tunnel->closed()) push_assignments(link, *rows);
  }
}

Hub::Hub(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Hub::~Hub() { stop(); }

int Hub::port() const { return impl_->tls ? impl_->tls->port() : impl_->http->port(); }

void Hub::stop() {
  if (!impl_ || !impl_->http) return;
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
    impl_->wake.notify_all();
  }
  if (impl_->reconcile_thread.joinable()) impl_->reconcile_thread.join();
  if (impl_->tls) impl_->tls->stop();
  impl_->links.close_all();  // forwarded requests end first, so the HTTP server's handlers return
  impl_->http->stop();
  impl_->links.close_all();  // and any tunnel opened meanwhile
  impl_->http.reset();
  impl_->store.reset();
}

Result<std::unique_ptr<Hub>> Hub::start(HubOptions options) {
  if (options.data_dir.empty()) return Status::invalid_argument("--data-dir is required");
  std::error_code ec;
  fs::create_directories(fs::path(options.data_dir) / "files", ec);
  if (ec) return Status::internal(options.data_dir + ": cannot create: " + ec.message());
  if (!sodium_ready()) return Status::internal("libsodium could not be initialised");
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  CS_ASSIGN_OR_RETURN(impl->store, open_sqlite_store((fs::path(options.data_dir) / "hub.db").string()));
  impl->files = make_file_handler((fs::path(options.data_dir) / "files").string(), "/files/");
  const bool tls = !options.tls_cert.empty() || !options.tls_key.empty();
  std::shared_ptr<TlsContext> tls_context;
  if (tls) {
    if (options.tls_cert.empty() || options.tls_key.empty()) {
      return Status::invalid_argument("--tls-cert and --tls-key go together");
    }
    CS_ASSIGN_OR_RETURN(tls_context, TlsContext::server(options.tls_cert, options.tls_key));
  }
  server::HttpServerOptions ho;
  // With TLS the HTTP server listens on loopback only, behind the terminator.
  ho.host = tls ? "127.0.0.1" : options.host;
  ho.port = tls ? 0 : options.port;
  ho.max_connections = 1024;
  ho.idle_timeout = std::chrono::seconds(120);
  Impl* raw = impl.get();
  CS_ASSIGN_OR_RETURN(
      impl->http, server::HttpServer::start(
                      ho, [raw](const server::HttpRequest& req, server::ResponseWriter& w) { raw->handle(req, w); }));
  if (tls) {
    auto terminator = TlsTerminator::start(options.host, options.port, tls_context, impl->http->port(),
                                           [raw](const std::string& line) { raw->log(line); });
    if (!terminator.ok()) {
      impl->http->stop();
      return terminator.status();
    }
    impl->tls = std::move(terminator).value();
  }
  impl->reconcile_thread = std::thread([raw] { raw->reconcile_loop(); });
  const int port = impl->tls ? impl->tls->port() : impl->http->port();
  raw->log(std::string("listening on ") + (tls ? "https://" : "http://") + options.host + ":" + std::to_string(port) +
           ", data in " + options.data_dir);
  return std::unique_ptr<Hub>(new Hub(std::move(impl)));
}

}  // namespace cellserve::fleet
