// PUT and DELETE /api/v1/deployments/<name>/secrets/<NAME>: rotating one of a deployment's
// secrets ([env]) without a redeploy. The value is sealed before it reaches the store; the
// deployment's secrets version goes up, each device is sent the new version sealed to it, and a
// replica takes gateway traffic again once its device acknowledged opening it. Nothing reloads.
#include <boost/json.hpp>

#include "fleet/hub/admin_api.h"
#include "fleet/spec/agent_protocol.h"
#include "fleet/spec/deployment_spec.h"

namespace cellserve::fleet {
namespace {

namespace json = boost::json;

}  // namespace

void AdminApi::add_secret_routes(net::RouteTable& routes) {
  for (const bool remove : {false, true}) {
    routes.add(
        remove ? "DELETE" : "PUT", "/api/v1/deployments/{name}/secrets/{secret}",
        admin([this, remove](const net::HttpRequest& req, const net::PathParams& params, net::ResponseWriter& w) {
          set_secret(req, params.get("name"), params.get("secret"), remove, w);
        }));
  }
}

void AdminApi::set_secret(const net::HttpRequest& req, const std::string& name, const std::string& secret, bool remove,
                          net::ResponseWriter& w) {
  std::string value;
  if (!remove) {
    // Never echo the body: it is the secret.
    auto body = parse_json(req.body, "request body");
    if (!body.ok() || !body->is_object() || body->as_object().size() != 1 || !body->as_object().contains("value") ||
        !body->as_object().at("value").is_string()) {
      return send_error(w, 400, "the body must be {\"value\": \"<the secret>\"}");
    }
    value = std::string(body->as_object().at("value").as_string());
  }
  if (Status s = check_env_entry(secret, value); !s.ok()) return send_error(w, 400, s.message());
  int64_t version = 0;
  {
    std::lock_guard lock(state_.state_mu);
    auto d = state_.store->deployment(name);
    if (!d.ok()) return send_error(w, 500, d.status().message());
    if (!d->has_value()) return send_error(w, 404, "no deployment named '" + name + "'");
    DeploymentSpec spec = (*d)->spec;
    auto it = std::find_if(spec.env.begin(), spec.env.end(), [&](const auto& kv) { return kv.first == secret; });
    if (remove) {
      if (it == spec.env.end()) return send_error(w, 404, "deployment '" + name + "' has no secret " + secret);
      spec.env.erase(it);
    } else if (it != spec.env.end()) {
      it->second = state_.secrets.seal(value);
    } else {
      if (spec.env.size() >= kMaxEnvVars) {
        return send_error(w, 400, "deployment '" + name + "' has " + std::to_string(kMaxEnvVars) + " secrets already");
      }
      spec.env.emplace_back(secret, state_.secrets.seal(value));
    }
    if (Status s = state_.store->update_deployment_spec(spec); !s.ok()) return send_error(w, 500, s.message());
    auto updated = state_.store->deployment(name);
    if (!updated.ok() || !updated->has_value()) return send_error(w, 500, "the deployment vanished");
    version = (*updated)->secrets_version;
    state_.refresh_registry();
  }
  state_.log("deployment " + name + ": secret " + secret + (remove ? " removed" : " set") + "; secrets version " +
             std::to_string(version) + " goes to its devices");
  state_.request_reconcile();
  send_json(w, 200,
            json::serialize(json::object{
                {"deployment", name}, {"secret", secret}, {"removed", remove}, {"secrets_version", version}}));
}

}  // namespace cellserve::fleet
