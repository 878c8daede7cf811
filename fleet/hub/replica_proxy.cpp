// Forwarding a user's request to the processor serving replica <index> of a deployment, through
// that processor's tunnel. Reads only the registry, never the store.
#include "fleet/hub/first_byte_deadline.h"
#include "fleet/hub/gateway.h"
#include "fleet/hub/gateway_request.h"
#include "fleet/hub/metered_writer.h"
#include "fleet/hub/relay_writer.h"
#include "fleet/hub/token_reservation.h"

namespace cellserve::fleet {
namespace {

// What a user's API key may reach on one replica: the data paths. Control and introspection
// routes (/lora-adapters changes every user's adapter scales; /slots, /props and /metrics show
// others' work) need the admin key. Dot segments, encoded bytes and empty segments are refused
// outright, so no spelling of a control path passes as a data path on the device's route table.
bool user_data_path(std::string_view rest) {
  if (rest.find("/.") != std::string_view::npos || rest.find('%') != std::string_view::npos ||
      rest.find("//") != std::string_view::npos || rest.find('\\') != std::string_view::npos) {
    return false;
  }
  if (rest == "/health" || rest.starts_with("/v1/")) return true;
  for (const std::string_view alias :
       {"/chat/completions", "/completions", "/completion", "/responses", "/embeddings", "/models"}) {
    if (rest == alias) return true;
  }
  return false;
}

}  // namespace

void Gateway::proxy_replica(const net::HttpRequest& req, net::ResponseWriter& out, const ReplicaAddress& address,
                            const std::string& key_id) {
  if (!key_id.empty() && !user_data_path(address.rest)) {
    return send_error(out, 403,
                      "API key " + key_id + " reaches a replica's data paths only (/v1/..., /health); " +
                          address.rest.substr(0, 64) + " needs the hub's admin key");
  }
  // Metered for the API key's daily token quota: the request's most is held now, settled at the end.
  MeteredWriter w(out);
  const std::optional<DeploymentView> view = state_.registry.deployment(address.deployment);
  // The body is parsed here, once, for the quota hold and the first-byte deadline.
  const Result<boost::json::object> body =
      req.method == "POST" ? parse_request_body(req.body) : Result<boost::json::object>(boost::json::object());
  int64_t held = 0;
  if (!key_id.empty() && req.method == "POST") {
    std::string_view endpoint = address.rest;
    if (endpoint.starts_with("/v1/")) endpoint.remove_prefix(3);
    held = token_reservation(body.ok() ? &*body : nullptr, req.body.size(), endpoint, view ? view->ctx_size : 0);
    if (!forwarder_.hold_tokens(key_id, held, w)) return;
  }
  struct SettleAtEnd {
    ReplicaForwarder& forwarder;
    const std::string& key_id;
    const net::HttpRequest& req;
    MeteredWriter& w;
    int64_t held;
    ~SettleAtEnd() { forwarder.settle(key_id, held, w.status() == 200, w, req.body.size()); }
  } settle{forwarder_, key_id, req, w, held};
  const std::string& deployment = address.deployment;
  const int index = address.index;
  const ReplicaRegistry::Lookup found = state_.registry.find(deployment, index);
  if (found.kind == ReplicaRegistry::Lookup::Kind::NoDeployment) {
    return send_error(w, 404, "no deployment named '" + deployment + "'");
  }
  if (found.kind == ReplicaRegistry::Lookup::Kind::NoSuchReplica) {
    return send_error(w, 404, "deployment '" + deployment + "' has replicas 0.." + std::to_string(found.replicas - 1));
  }
  const ReplicaView& row = found.replica;
  const net::HeaderList retry = {{"Retry-After", "5"}};
  if (row.state != ReplicaState::Ready) {
    std::string state = replica_state_name(row.state);
    if (row.state == ReplicaState::Downloading)
      state += " " + std::to_string(static_cast<int>(row.progress * 100)) + "%";
    return send_error(
        w, 503, "replica " + std::to_string(index) + " of '" + deployment + "' is not ready (" + state + ")", retry);
  }
  if (!row.secrets_current) {
    return send_error(w, 503,
                      "replica " + std::to_string(index) + " of '" + deployment +
                          "' has not yet opened the deployment's current secrets",
                      retry);
  }
  if (state_.agreement.quarantined(row.processor_id)) {
    // Its answers disagreed with other devices' (spot checks): none of them reaches a user.
    return send_error(w, 503, "replica " + std::to_string(index) + " of '" + deployment + "' is quarantined", retry);
  }
  const std::optional<DeploymentView> dep = state_.registry.deployment(deployment);
  if (!dep) return send_error(w, 404, "no deployment named '" + deployment + "'");
  Reservation reservation;
  if (!forwarder_.reserve_replica(deployment, row, reservation)) {
    return send_error(w, 503, "replica " + std::to_string(index) + "'s device is offline", retry);
  }
  RelayWriter relay(w);
  // The hub's own deadline on the first byte, from what the request asks (a body that does not
  // parse gets the default work: the replica answers it 400 at once).
  GatewayRequest g;
  g.work.max_tokens = kDefaultMaxTokens;
  if (req.method == "POST") {
    if (body.ok()) {
      if (auto parsed = read_gateway_request(*body, address.rest); parsed.ok()) g = std::move(parsed).value();
    }
  }
  const std::chrono::milliseconds first_byte = first_byte_limit(dep->gateway, g.work, g.stream);
  net::HttpRequest forwarded = req;
  set_cache_partition(forwarded, key_id);
  const Attempt sent = forwarder_.send(reservation, *dep, std::move(forwarded), address.rest, relay, first_byte);
  if (sent.status.ok()) return;
  if (sent.expired) {
    forwarder_.record(deployment, index, false);
    return send_error(w, 504,
                      "replica " + std::to_string(index) + " of '" + deployment + "' sent no first byte within " +
                          std::to_string(first_byte.count()) + " ms",
                      retry);
  }
  if (!sent.responded) return send_error(w, 502, "replica unreachable: " + sent.status.message(), retry);
  relay.end_broken(sent.status);
}

}  // namespace cellserve::fleet
