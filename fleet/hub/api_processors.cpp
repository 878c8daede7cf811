// GET /api/v1/processors: every processor the hub knows, with what it serves.
#include <map>

#include <boost/json.hpp>

#include "fleet/hub/admin_api.h"
#include "fleet/spec/agent_protocol.h"
#include "fleet/spec/device_state.h"

namespace cellserve::fleet {
namespace {

namespace json = boost::json;

// The attested key the device is pinned to, or null.
json::value pin_json(const std::map<std::string, AttestationPin>& pins, const std::string& id) {
  const auto it = pins.find(id);
  if (it == pins.end()) return nullptr;
  const AttestationPin& pin = it->second;
  json::array packages(pin.app_packages.begin(), pin.app_packages.end());
  return json::object{{"key_sha256", pin.key_sha256},
                      {"boot", pin.boot_state},
                      {"verified_boot_key", pin.verified_boot_key},
                      {"apps", std::move(packages)},
                      {"pinned_ms", pin.pinned_ms},
                      {"held", pin.held},
                      {"change_approved", pin.change_approved}};
}

json::object processor_json(const Processor& p, const std::vector<Replica>& rows,
                            const std::map<std::string, AttestationPin>& pins, const AgreementBook& book) {
  json::object o = to_json(AgentInfo{p.name, p.price_per_day, p.specs, p.benchmark, "", p.simulated, {}}).as_object();
  o.erase("version");
  o.erase("attestation");  // the evidence is not kept; the verdict is
  o["id"] = p.id;
  o["label"] = p.label;  // the operator's name for it (approve --name); `name` is the device's own claim
  o["address"] = p.address;
  o["online"] = p.online;
  o["attested"] = p.attested;
  o["attestation"] = p.attestation;
  o["attested_key"] = pin_json(pins, p.id);
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
  auto pin_rows = state_.store->attestation_pins();
  if (!ps.ok() || !rows.ok() || !pin_rows.ok()) return send_error(w, 500, "store error");
  std::map<std::string, AttestationPin> pins;
  for (AttestationPin& pin : *pin_rows) pins[pin.processor_id] = std::move(pin);
  {
    std::lock_guard lock(state_.state_mu);
    state_.attach_device_states(*ps);
  }
  json::array out;
  for (const Processor& p : *ps) out.push_back(processor_json(p, *rows, pins, state_.agreement));
  send_json(w, 200, json::serialize(json::object{{"processors", std::move(out)}}));
}

}  // namespace cellserve::fleet
