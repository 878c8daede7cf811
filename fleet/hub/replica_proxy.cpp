// Forwarding a user's request to the processor serving replica <index> of a deployment, through
// that processor's tunnel. Reads only the registry, never the store.
#include "fleet/hub/gateway_request.h"
#include "fleet/hub/hub_impl.h"
#include "fleet/hub/metered_writer.h"
#include "fleet/hub/relay_writer.h"
#include "fleet/hub/token_reservation.h"

namespace cellserve::fleet {

void Hub::Impl::proxy_replica(const net::HttpRequest& req, net::ResponseWriter& out, const ReplicaAddress& address,
                              const std::string& key_id) {
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
  net::HttpRequest forwarded = req;
  address_to_replica(forwarded, dep->replica_key);
  set_cache_partition(forwarded, key_id);
  const Status s = link->tunnel->forward(forwarded, relay, &responded);
  if (s.ok()) return;
  if (!responded) return send_error(w, 502, "replica unreachable: " + s.message(), retry);
  relay.end_broken(s);
}

}  // namespace cellserve::fleet
