// Forwarding a user's request to the processor serving replica <index> of a deployment, through
// that processor's tunnel.
#include <boost/json.hpp>

#include "fleet/hub/hub_impl.h"

namespace cellserve::fleet {

void Hub::Impl::proxy_replica(const server::HttpRequest& req, server::ResponseWriter& w, const std::string& deployment,
                              int index) {
  auto d = store->deployment(deployment);
  if (!d.ok()) return send_error(w, 500, d.status().message());
  if (!d->has_value()) return send_error(w, 404, "no deployment named '" + deployment + "'");
  if (index >= (*d)->spec.replicas) {
    return send_error(w, 404,
                      "deployment '" + deployment + "' has replicas 0.." + std::to_string((*d)->spec.replicas - 1));
  }
  auto rows = store->replicas(deployment);
  if (!rows.ok()) return send_error(w, 500, rows.status().message());
  const Replica* row = nullptr;
  for (const Replica& r : *rows) {
    if (r.index == index) row = &r;
  }
  const server::HeaderList retry = {{"Retry-After", "5"}};
  if (row == nullptr || row->state != ReplicaState::Ready) {
    std::string state = row == nullptr ? "unmatched" : replica_state_name(row->state);
    if (row != nullptr && row->state == ReplicaState::Downloading) {
      state += " " + std::to_string(static_cast<int>(row->progress * 100)) + "%";
    }
    return send_error(
        w, 503, "replica " + std::to_string(index) + " of '" + deployment + "' is not ready (" + state + ")", retry);
  }
  const std::shared_ptr<AgentLink> link = links.find(row->processor_id);
  if (!link) return send_error(w, 503, "replica " + std::to_string(index) + "'s device is offline", retry);
  bool responded = false;
  const Status s = link->tunnel->forward(req, w, &responded);
  if (!s.ok() && !responded) send_error(w, 502, "replica unreachable: " + s.message(), retry);
}

}  // namespace cellserve::fleet
