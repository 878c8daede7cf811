// GET /api/v1/processors: every processor the hub knows, with what it serves.
#include <boost/json.hpp>

#include "fleet/hub/admin_api.h"
#include "fleet/spec/agent_protocol.h"
#include "fleet/spec/device_state.h"

namespace cellserve::fleet {
namespace {

namespace json = boost::json;

json::object processor_json(const Processor& p, const std::vector<Replica>& rows, const AgreementBook& book) {
  json::object o = to_json(AgentInfo{p.name, p.price_per_day, p.specs, p.benchmark, "", p.simulated, {}}).as_object();
  o.erase("version");
  o.erase("attestation");  // the evidence is not kept; the verdict is
  o["id"] = p.id;
  o["label"] = p.label;  // the operator's name for it (approve --name); `name` is the device's own claim
  o["address"] = p.address;
  o["online"] = p.online;
  o["attested"] = p.attested;
  o["attestation"] = p.attestation;
  o["enrollment"] = enrollment_name(p.enrollment);
  o["registered_ms"] = p.registered_ms;
  o["last_seen_ms"] = p.last_seen_ms;
  o["device"] = to_json(p.device);
  json::array serving;
  for (const Replica& r : rows) {
    if (r.processor_id == p.id && r.state != ReplicaState::Offline) {
      serving.push_back(
          json::object{{"deployment", r.deployment}, {"index", r.index}, {"state", replica_state_name(r.state)}});
    }
  }
  o["serving"] = std::move(serving);
  // How its answers compared with other devices' (spot checks and canaries); quarantined: no traffic.
  const std::optional<DeviceAgreement> agreement = book.get(p.id);
  o["agreement"] = agreement ? agreement_json(*agreement) : json::value(nullptr);
  o["quarantined"] = agreement && agreement->quarantined;
  return o;
}

}  // namespace

void AdminApi::add_processor_routes(net::RouteTable& routes) {
  routes.add("GET", "/api/v1/processors", admin(plain(&AdminApi::list_processors)));
}

void AdminApi::list_processors(const net::HttpRequest&, net::ResponseWriter& w) {
  auto ps = state_.store->processors();
  auto rows = state_.store->replicas("");
  if (!ps.ok() || !rows.ok()) return send_error(w, 500, "store error");
  {
    std::lock_guard lock(state_.state_mu);
    state_.attach_device_states(*ps);
  }
  json::array out;
  for (const Processor& p : *ps) out.push_back(processor_json(p, *rows, state_.agreement));
  send_json(w, 200, json::serialize(json::object{{"processors", std::move(out)}}));
}

}  // namespace cellserve::fleet
