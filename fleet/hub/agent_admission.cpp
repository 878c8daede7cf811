// Agents joining the hub: a one-time challenge, the signed tunnel upgrade, and registration
// through the new tunnel (the agent describes itself at /agent/info).
#include <boost/json.hpp>

#include "fleet/crypto/identity.h"
#include "fleet/crypto/sha256.h"
#include "fleet/hub/supervisor.h"
#include "fleet/spec/agent_protocol.h"
#include "net/socket_address.h"

namespace cellserve::fleet {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

// What the agent says of itself, asked through its new tunnel (GET /agent/info, 10 s).
Result<AgentInfo> ask_agent_info(TunnelClient& tunnel) {
  auto reply = tunnel.call("GET", std::string(kAgentInfoPath), "", 10s);
  if (!reply.ok()) return reply.status();
  if (reply->status != 200) {
    return Status::invalid_argument("agent answered " + std::to_string(reply->status) + " to /agent/info");
  }
  CS_ASSIGN_OR_RETURN(const json::value v, parse_json(reply->body, "agent info"));
  return agent_info_from_json(v);
}

}  // namespace

void Supervisor::add_routes(net::RouteTable& routes) {
  routes.add(
      "GET", kChallengePath,
      [this](const net::HttpRequest& req, const net::PathParams&, net::ResponseWriter& w) { issue_challenge(req, w); });
  routes.add("GET", kTunnelPath, [this](const net::HttpRequest& req, const net::PathParams&, net::ResponseWriter& w) {
    open_tunnel(req, w);
  });
}

void Supervisor::issue_challenge(const net::HttpRequest& req, net::ResponseWriter& w) {
  const std::optional<std::string> challenge = state_.links.issue_challenge(req.remote_address);
  if (!challenge)
    return send_error(w, 429, "too many agents are joining at once; retry shortly", {{"Retry-After", "5"}});
  send_json(w, 200, json::serialize(json::object{{"challenge", *challenge}}));
}

// Tunnels are bounded here, not by the client caps (max_connections_per_address): a device that
// re-dials replaces its own link, so only new devices are refused at the bound.
bool Supervisor::room_for_tunnel(const std::string& id, net::ResponseWriter& w) {
  if (state_.links.size() < static_cast<size_t>(state_.options.max_agents) || state_.links.find(id)) return true;
  state_.log("agent " + id.substr(0, 16) + " refused: the hub holds its most agent tunnels (--max-agents " +
             std::to_string(state_.options.max_agents) + ")");
  send_error(w, 503,
             "this hub holds its most agent tunnels (" + std::to_string(state_.options.max_agents) +
                 "); dial another hub or retry later",
             {{"Retry-After", "30"}});
  return false;
}

void Supervisor::open_tunnel(const net::HttpRequest& req, net::ResponseWriter& w) {
  const std::optional<std::string> canonical = canonical_identity(req.header("x-cellserve-agent"));
  if (!canonical) return send_error(w, 400, "X-Cellserve-Agent must be the agent's public key (64 hex digits)");
  const std::string& id = *canonical;
  const std::string challenge = req.header("x-cellserve-challenge");
  const std::string signature = req.header("x-cellserve-signature");
  if (req.header("upgrade") != kTunnelProtocol) {
    return send_error(w, 400, "expected Upgrade: " + std::string(kTunnelProtocol));
  }
  if (!state_.links.redeem_challenge(challenge)) {
    return send_error(w, 401, "unknown, used or expired challenge: GET " + std::string(kChallengePath) + " first");
  }
  const std::string origin = req.header(std::string(kOriginHeader));
  if (!is_own_origin(origins_, origin)) {
    state_.log("tunnel refused: agent " + id.substr(0, 16) + " signed for another hub's origin");
    return send_error(w, 401,
                      "X-Cellserve-Origin must name this hub as the agent dialed it (http(s)://host:port); a "
                      "signature for another origin was made for another hub");
  }
  if (!verify_signature(id, tunnel_signature_message(origin, challenge), signature)) {
    state_.log("tunnel refused: bad signature for agent " + id.substr(0, 16));
    return send_error(w, 401, "the signature does not verify with X-Cellserve-Agent's key");
  }
  // A device pinned to an attested key proves, at every handshake, that it still holds it.
  if (Status pinned = check_attested_handshake(id, origin, challenge, req.header("x-cellserve-attested-signature"));
      !pinned.ok()) {
    return send_error(w, pinned.code() == StatusCode::Unauthenticated ? 401 : 500, pinned.message());
  }
  if (Status admitted = admit(id, req.header("x-cellserve-enroll"), req.remote_address); !admitted.ok()) {
    state_.log("agent " + id.substr(0, 16) + " refused: " + admitted.message());
    return send_error(w, admitted.code() == StatusCode::PermissionDenied ? 403 : 500, admitted.message());
  }
  if (!room_for_tunnel(id, w)) return;
  std::optional<net::UpgradedConnection> up = w.upgrade({{"Upgrade", std::string(kTunnelProtocol)}});
  if (!up) return;
  const int backend_port = net::peer_port(up->fd);  // read now, while the socket is surely open
  TunnelOptions to;
  to.ping_timeout = state_.options.ping_timeout;
  to.ping_interval = std::max(std::chrono::milliseconds(200), state_.options.ping_timeout / 3);
  auto tunnel = TunnelClient::start(up->fd, to, std::move(up->buffered));
  if (!tunnel.ok()) {
    state_.log("tunnel from " + id.substr(0, 16) + " failed: " + tunnel.status().message());
    return;
  }
  auto link = std::make_shared<AgentLink>(state_.clock);
  link->processor_id = id;
  link->tunnel = std::move(tunnel).value();

  // Registration: the agent describes itself through the new tunnel.
  Result<AgentInfo> info = ask_agent_info(*link->tunnel);
  if (!info.ok()) {
    state_.log("agent " + id.substr(0, 16) + " not registered: " + info.status().message());
    link->tunnel->close();
    return;
  }
  const int64_t now = state_.now_ms();
  // Re-checked at every registration (DeviceAttestation::check); a device pinned to an attested
  // key must present that key.
  Result<std::optional<AttestationPin>> pin = state_.store->attestation_pin(id);
  if (!pin.ok()) {
    state_.log("agent " + id.substr(0, 16) + " not registered: store: " + pin.status().message());
    link->tunnel->close();
    return;
  }
  const AttestationPin* binding = pin->has_value() && !(*pin)->change_approved ? &**pin : nullptr;
  const attest::AttestationVerdict verdict = state_.attestation->check(
      AttestationClaim{info->attestation, challenge, id, origin, req.header("x-cellserve-attested-signature")},
      now / 1000, binding);
  Processor p;
  {
    std::lock_guard lock(state_.state_mu);
    // The enrolment is re-read here, under the lock revoke takes: a revocation that landed while
    // /agent/info was awaited stands (issue 43, item 1), and one that lands after finds the link.
    auto existing = state_.store->processor(id);
    if (existing.ok() && !existing->has_value() && state_.options.api_key.empty()) {
      Processor first;  // an open hub's new device: enrolled by joining (admit)
      first.enrollment = Enrollment::Enrolled;
      *existing = first;
    }
    if (!existing.ok() || !existing->has_value() || (*existing)->enrollment != Enrollment::Enrolled) {
      const std::string why =
          !existing.ok() ? "store: " + existing.status().message()
          : !existing->has_value()
              ? std::string("its record is gone")
              : std::string("it was ") + enrollment_name((*existing)->enrollment) + " while it registered";
      state_.log("agent " + id.substr(0, 16) + " not registered: " + why);
      link->tunnel->close();
      return;
    }
    p = **existing;
    p.id = id;
    p.name = info->name.empty() ? id.substr(0, 12) : info->name;
    p.specs = info->specs;
    p.benchmark = info->benchmark;
    p.price_per_day = info->price_per_day;
    p.attested = verdict.attested;
    p.attestation = DeviceAttestation::describe(verdict);
    p.simulated = info->simulated;
    p.online = true;
    p.address = req.remote_address;
    p.last_seen_ms = now;
    if (p.registered_ms == 0) p.registered_ms = now;
    // The tunnel is recorded as this hub's before the row says online: the leader never finds
    // the agent online with no tunnel (reconcile.cpp, mark_untunnelled_offline), and another hub
    // it dialed before now loses it (its close finds the record moved).
    ClusterStore& cluster = state_.store->cluster();
    if (Status s = cluster.record_tunnel(id, state_.member->id()); !s.ok()) {
      state_.log("agent " + p.name + ": store: " + s.message());
      link->tunnel->close();
      return;
    }
    if (Status s = state_.store->upsert_processor(p); !s.ok()) {
      state_.log("agent " + p.name + ": store: " + s.message());
      state_.saved(cluster.drop_tunnel(id, state_.member->id()).status(), "tunnel of " + id.substr(0, 16));
      link->tunnel->close();
      return;
    }
    record_pin(id, verdict, info->attestation, *pin, now);
    if (!p.attested) evict_unattested(id, p.attestation, now);
  }
  link->tunnel->on_close([this] { state_.request_reconcile(); });
  link->start_heartbeat(state_.options.poll_interval, [this](AgentLink& l) { heartbeat(l); });
  state_.links.add(link);
  {
    // A revocation between the check above and links.add found no link to close; this second
    // read sees it (revoke writes, then looks for the link; we add, then read).
    std::lock_guard lock(state_.state_mu);
    auto now_enrolled = state_.store->processor(id);
    if (!now_enrolled.ok() || !now_enrolled->has_value() || (*now_enrolled)->enrollment != Enrollment::Enrolled) {
      state_.log("agent " + id.substr(0, 16) + " revoked while it registered: tunnel closed");
      link->tunnel->close();
      return;
    }
  }
  // Registered: from now on the tunnel is bounded by max_agents, not the TLS front's client caps.
  // Only while it is open: a closed tunnel's port may already carry another client's connection.
  if (!link->tunnel->closed()) state_.tunnel_opened(backend_port);
  if (!info->attestation.is_null() || !verdict.attested) {
    state_.log("agent " + p.name + " (" + id.substr(0, 16) + ") " + p.attestation);
  }
  state_.log("agent " + p.name + " (" + id.substr(0, 16) + ") connected" + (p.simulated ? " (simulated)" : "") + ": " +
             p.specs.arch + ", " + std::to_string(p.specs.cores) + " cores, " +
             std::to_string(p.specs.ram_bytes >> 20) + " MiB, ask " + std::to_string(p.price_per_day) +
             "/day, decode " + std::to_string(p.benchmark.decode_tps) + " tok/s");
  state_.request_reconcile();
}

void Supervisor::evict_unattested(const std::string& processor_id, const std::string& why, int64_t now) {
  auto deployments = state_.store->deployments();
  auto rows = state_.store->replicas("");
  if (!deployments.ok() || !rows.ok()) return;
  std::set<std::string> attested_only;
  for (const Deployment& d : *deployments) {
    if (d.spec.requirements.attested_only) attested_only.insert(d.spec.name);
  }
  bool changed = false;
  for (Replica r : *rows) {
    if (r.processor_id != processor_id || !attested_only.contains(r.deployment)) continue;
    state_.log("replica " + r.deployment + "/" + std::to_string(r.index) + " leaves " + processor_id.substr(0, 16) +
               ": the deployment is attested_only and the device is " + why);
    r.processor_id.clear();
    r.state = ReplicaState::Unmatched;
    r.secrets_version = 0;
    r.progress = 0;
    r.prefill_tps = r.decode_tps = 0;
    r.detail = "its device is no longer attested; looking for another";
    state_.saved(state_.store->update_replica(r, now), replica_context(r));
    changed = true;
  }
  if (changed) state_.refresh_registry();
}

Status Supervisor::admit(const std::string& id, const std::string& enroll_token, const std::string& address) {
  std::lock_guard lock(state_.state_mu);
  auto existing = state_.store->processor(id);
  if (!existing.ok()) return existing.status();
  const std::string approve = "cellserve fleet approve " + id;
  if (existing->has_value() && (*existing)->enrollment == Enrollment::Revoked) {
    return Status(StatusCode::PermissionDenied,
                  "this device was revoked; only the operator can re-admit it (" + approve + ")");
  }
  if (existing->has_value() && (*existing)->enrollment == Enrollment::Enrolled) return {};
  // Enrolment is written here (and by approve/revoke), never by the registration that follows.
  const auto enrol = [&]() -> Status {
    return state_.store->set_enrollment(id, Enrollment::Enrolled, std::nullopt, state_.now_ms());
  };
  // An open hub enrols whoever joins: its row is written when it registers (a join that never
  // registers leaves none), unless an operator wrote one first (a revocation, which stands).
  if (state_.options.api_key.empty()) return {};
  std::string refusal =
      "this device is not enrolled: start the agent with --enroll TOKEN (cellserve hub tokens create), "
      "or approve it: " +
      approve;
  if (!enroll_token.empty()) {
    const std::string hash = sha256_hex(enroll_token);
    bool redeemed = false;
    if (enroll_token.size() <= 128) {
      CS_ASSIGN_OR_RETURN(redeemed, state_.store->redeem_enrollment_token(hash, state_.now_ms()));
    }
    if (redeemed) {
      state_.log("processor " + id.substr(0, 16) + " enrolled with token " + hash.substr(0, 12));
      return enrol();
    }
    refusal = "the enrollment token is unknown, used up or expired; the operator can approve this device: " + approve;
  }
  // Recorded as pending, so the operator can see and approve it; bounded in all and per source
  // address, since keys are free to make, and forgotten after kPendingLifetime unseen.
  const int64_t now = state_.now_ms();
  if (existing->has_value()) {
    Processor p = **existing;
    p.last_seen_ms = now;
    p.address = address;
    if (Status s = state_.store->upsert_processor(p); !s.ok()) return s;
  } else {
    auto all = state_.store->processors();
    if (!all.ok()) return all.status();
    size_t pending = 0;
    size_t from_address = 0;
    for (const Processor& p : *all) {
      if (p.enrollment != Enrollment::Pending) continue;
      ++pending;
      from_address += p.address == address;
    }
    if (pending < kMaxPendingProcessors && from_address < kMaxPendingPerAddress) {
      Processor p;
      p.id = id;
      p.name = id.substr(0, 12);
      p.address = address;
      p.enrollment = Enrollment::Pending;
      p.registered_ms = p.last_seen_ms = now;
      if (Status s = state_.store->upsert_processor(p); !s.ok()) return s;
    } else {
      refusal += " (too many devices are waiting for approval" +
                 std::string(from_address >= kMaxPendingPerAddress ? " from this address" : "") +
                 ", so this one was not recorded: approve it by id)";
    }
  }
  return Status(StatusCode::PermissionDenied, refusal);
}

}  // namespace cellserve::fleet
