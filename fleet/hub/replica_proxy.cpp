// Forwarding a user's request to the processor serving replica <index> of a deployment, through
// that processor's tunnel. Reads only the registry, never the store.
#include "fleet/hub/first_byte_deadline.h"
#include "fleet/hub/gateway_request.h"
#include "fleet/hub/hub_impl.h"
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

void Hub::Impl::proxy_replica(const net::HttpRequest& req, net::ResponseWriter& out, const ReplicaAddress& address,
                              const std::string& key_id) {
  if (!key_id.empty() && !user_data_path(address.rest)) {
    return send_error(out, 403,
                      "API key " + key_id + " reaches a replica's data paths only (/v1/..., /health); " +
                          address.rest.substr(0, 64) + " needs the hub's admin key");
  }
  // Metered for the API key's daily token quota: the request's most is held now, settled at the end.
  MeteredWriter w(out);
  const std::optional<DeploymentView> view = registry.deployment(address.deployment);
  int64_t held = 0;
  if (!key_id.empty() && req.method == "POST") {
    std::string_view endpoint = address.rest;
    if (endpoint.starts_with("/v1/")) endpoint.remove_prefix(3);
    held = token_reservation(req.body, endpoint, view ? view->ctx_size : 0);
    if (!hold_tokens(key_id, held, w)) return;
  }
  struct CountTokens {
    Hub::Impl& hub;
    const std::string& key_id;
    const net::HttpRequest& req;
    MeteredWriter& w;
    int64_t held;
    ~CountTokens() {
      if (key_id.empty()) return;
      hub.keys.settle(key_id, held, w.status() == 200 ? w.tokens_used(req.body.size()) : 0, now_ms());
    }
  } count{*this, key_id, req, w, held};
  const std::string& deployment = address.deployment;
  const int index = address.index;
  const ReplicaRegistry::Lookup found = registry.find(deployment, index);
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
  const std::optional<DeploymentView> dep = registry.deployment(deployment);
  if (!dep) return send_error(w, 404, "no deployment named '" + deployment + "'");
  const std::shared_ptr<AgentLink> link = links.find(row.processor_id);
  if (!link) return send_error(w, 503, "replica " + std::to_string(index) + "'s device is offline", retry);
  const ReplicaRegistry::InFlight in_flight = registry.begin_request(deployment, index);
  bool responded = false;
  RelayWriter relay(w);
  // The hub's own deadline on the first byte, from what the request asks (a body that does not
  // parse gets the default work: the replica answers it 400 at once).
  GatewayRequest g;
  g.work.max_tokens = kDefaultMaxTokens;
  if (req.method == "POST") {
    if (auto parsed = read_gateway_request(req.body, address.rest); parsed.ok()) g = std::move(parsed).value();
  }
  const std::chrono::milliseconds first_byte = first_byte_limit(dep->gateway, g.work, g.stream);
  FirstByteDeadlineWriter timed(relay, std::chrono::steady_clock::now() + first_byte);
  net::HttpRequest forwarded = req;
  address_to_replica(forwarded, dep->replica_key);
  set_cache_partition(forwarded, key_id);
  const Status s = link->tunnel->forward(forwarded, timed, &responded);
  if (s.ok()) return;
  if (timed.expired()) {
    if (registry.record_result(deployment, index, false)) metrics.count_ejection(deployment, index);
    metrics.count_failure(deployment, index);
    return send_error(w, 504,
                      "replica " + std::to_string(index) + " of '" + deployment + "' sent no first byte within " +
                          std::to_string(first_byte.count()) + " ms",
                      retry);
  }
  if (!responded) return send_error(w, 502, "replica unreachable: " + s.message(), retry);
  relay.end_broken(s);
}

}  // namespace cellserve::fleet
