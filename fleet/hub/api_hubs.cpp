// GET /api/v1/hubs: the hubs sharing this hub's store (docs/cluster.md): each one's id, where the
// others dial it, when it started, how long since its heartbeat, the tunnels it holds and whether
// it counts as alive, and the leases with their holders and fencing tokens.
#include <boost/json.hpp>

#include "fleet/hub/admin_api.h"
#include "fleet/hub/cluster_member.h"

namespace cellserve::fleet {
namespace {

namespace json = boost::json;

}  // namespace

void AdminApi::add_hub_routes(net::RouteTable& routes) {
  routes.add("GET", "/api/v1/hubs", admin(plain(&AdminApi::list_hubs)));
}

void AdminApi::list_hubs(const net::HttpRequest&, net::ResponseWriter& w) {
  ClusterStore& cluster = state_.store->cluster();
  auto hubs = cluster.hubs();
  auto leases = cluster.leases();
  if (!hubs.ok() || !leases.ok()) {
    return send_error(w, 503, "the store did not answer: " + (hubs.ok() ? leases.status() : hubs.status()).message(),
                      {{"Retry-After", "2"}});
  }
  const int64_t dead_ms = hub_dead_after(state_.options.poll_interval).count();
  json::array hub_rows;
  for (const HubRecord& h : hubs->hubs) {
    const int64_t age = hubs->db_now_ms - h.heartbeat_ms;
    hub_rows.push_back(json::object{{"id", h.id},
                                    {"peer_url", h.peer_url},
                                    {"started_ms", h.started_ms},
                                    {"heartbeat_age_ms", age},
                                    {"agents", h.agents},
                                    {"alive", age <= dead_ms},
                                    {"self", h.id == state_.member->id()}});
  }
  json::array lease_rows;
  for (const LeaseRecord& l : *leases) {
    lease_rows.push_back(json::object{{"name", l.name},
                                      {"holder", l.holder},
                                      {"token", l.token},
                                      {"expires_ms", l.expires_ms},
                                      {"expires_in_ms", l.expires_ms - hubs->db_now_ms}});
  }
  send_json(w, 200, json::serialize(json::object{{"hubs", std::move(hub_rows)}, {"leases", std::move(lease_rows)}}));
}

}  // namespace cellserve::fleet
