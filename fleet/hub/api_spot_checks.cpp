// The operator's side of spot checks (spot_checks.h): POST /api/v1/processors/{id}/release ends a
// device's quarantine, and /api/v1/deployments/{name}/canaries (GET, PUT, DELETE) holds a
// deployment's canaries. Devices' agreement records are shown with the processors and replicas.
#include <boost/json.hpp>

#include "fleet/crypto/identity.h"
#include "fleet/hub/admin_api.h"
#include "fleet/spec/agent_protocol.h"

namespace cellserve::fleet {
namespace {

namespace json = boost::json;

json::object canaries_json(const std::string& deployment, const CanaryBook& book) {
  const auto [cases, every] = book.summary(deployment);
  return json::object{{"deployment", deployment}, {"cases", cases}, {"every", every}};
}

// {"cases": "<JSONL>", "every": N} → the set to store; InvalidArgument naming the problem.
Result<CanarySet> read_canaries_body(const std::string& deployment, std::string_view text) {
  CS_ASSIGN_OR_RETURN(const json::value body, parse_json(text, "request body"));
  const json::object* o = body.if_object();
  if (o == nullptr)
    return Status::invalid_argument("the body must be an object: {\"cases\": \"<JSONL>\", \"every\": N}");
  CanarySet set{deployment, "", 50};
  for (const auto& kv : *o) {
    if (kv.key() == "cases" && kv.value().is_string()) {
      set.cases = std::string(kv.value().as_string());
    } else if (kv.key() == "every" && kv.value().is_int64()) {
      if (kv.value().as_int64() < 1 || kv.value().as_int64() > kMaxCanaryEvery) {
        return Status::invalid_argument("every must be in [1, " + std::to_string(kMaxCanaryEvery) + "]");
      }
      set.every = static_cast<int>(kv.value().as_int64());
    } else {
      return Status::invalid_argument("unknown key or wrong type: '" + std::string(kv.key()).substr(0, 40) +
                                      "' (cases: a string of JSON lines, every: an integer)");
    }
  }
  CS_ASSIGN_OR_RETURN(const std::vector<Canary> cases, parse_canaries(set.cases));
  if (cases.empty()) return Status::invalid_argument("cases holds no canary (DELETE removes a deployment's canaries)");
  return set;
}

}  // namespace

void AdminApi::add_spot_check_routes(net::RouteTable& routes) {
  routes.add("POST", "/api/v1/processors/{id}/release", admin(by("id", &AdminApi::release_processor)));
  routes.add("GET", "/api/v1/deployments/{name}/canaries",
             admin([this](const net::HttpRequest&, const net::PathParams& p, net::ResponseWriter& w) {
               send_json(w, 200, json::serialize(canaries_json(p.get("name"), state_.canaries)));
             }));
  routes.add("PUT", "/api/v1/deployments/{name}/canaries", admin(by("name", &AdminApi::set_canaries)));
  routes.add("DELETE", "/api/v1/deployments/{name}/canaries",
             admin([this](const net::HttpRequest&, const net::PathParams& p, net::ResponseWriter& w) {
               const std::string& name = p.get("name");
               if (Status s = state_.store->set_canaries(CanarySet{name, "", 50}); !s.ok()) {
                 return send_error(w, s.code() == StatusCode::NotFound ? 404 : 500, s.message());
               }
               state_.canaries.remove(name);
               state_.log("deployment " + name + ": canaries removed");
               send_json(w, 200, json::serialize(canaries_json(name, state_.canaries)));
             }));
}

void AdminApi::release_processor(const std::string& id_text, net::ResponseWriter& w) {
  const std::optional<std::string> id = canonical_identity(id_text);
  if (!id) return send_error(w, 404, "no processor '" + id_text.substr(0, 80) + "': an id is 64 hex digits");
  const std::optional<DeviceAgreement> before = state_.agreement.get(*id);
  if (!before) return send_error(w, 404, "processor " + id->substr(0, 16) + " has no spot-check record");
  const DeviceAgreement fresh = state_.agreement.release(*id, state_.now_ms());
  if (Status s = state_.store->save_agreement(fresh); !s.ok()) return send_error(w, 500, s.message());
  state_.log("processor " + id->substr(0, 16) + (before->quarantined ? " released from quarantine" : " released") +
             " by the operator: its spot-check record starts afresh");
  json::object out{{"id", *id}, {"was_quarantined", before->quarantined}, {"agreement", agreement_json(fresh)}};
  send_json(w, 200, json::serialize(out));
}

void AdminApi::set_canaries(const net::HttpRequest& req, const std::string& name, net::ResponseWriter& w) {
  const Result<CanarySet> set = read_canaries_body(name, req.body);
  if (!set.ok()) return send_error(w, 400, set.status().message());
  if (Status s = state_.store->set_canaries(*set); !s.ok()) {
    return send_error(w, s.code() == StatusCode::NotFound ? 404 : 500, s.message());
  }
  if (Status s = state_.canaries.set(*set); !s.ok()) return send_error(w, 400, s.message());
  const auto [cases, every] = state_.canaries.summary(name);
  state_.log("deployment " + name + ": " + std::to_string(cases) + " canaries, one per " + std::to_string(every) +
             " requests a device answers");
  send_json(w, 200, json::serialize(canaries_json(name, state_.canaries)));
}

}  // namespace cellserve::fleet
