#include "fleet/hub/user_access.h"

namespace cellserve::fleet {

bool user_allowed(HubState& state, const net::HttpRequest& req, net::ResponseWriter& w, const std::string& deployment,
                  std::string* key_id) {
  key_id->clear();
  if (state.open_data_path()) return true;
  const std::string presented = net::request_api_key(req);
  if (state.is_admin_key(presented)) return true;
  const auto refuse = [&](int status, const std::string& type, const std::string& code, const std::string& message,
                          net::HeaderList headers) {
    w.send(status, "application/json", net::error_body(net::ApiError{status, message, type, "", code}), headers);
    return false;
  };
  // A deployment's keys open only the deployment created with them (-1: none by that name now).
  const std::optional<DeploymentView> d = state.registry.deployment(deployment);
  const KeyBook::Check c = state.keys.admit(presented, deployment, d ? d->created_ms : -1, state.now_ms());
  using Kind = KeyBook::Check::Kind;
  switch (c.kind) {
    case Kind::Allowed:
      *key_id = c.key_id;
      return true;
    case Kind::Unknown:
      return refuse(401, "authentication_error", "invalid_api_key",
                    "invalid or missing API key: send 'Authorization: Bearer <key>'", {{"WWW-Authenticate", "Bearer"}});
    case Kind::OtherDeployment:
      return refuse(403, "permission_error", "wrong_deployment",
                    "API key " + c.key_id + " is for deployment '" + c.deployment + "', not this one", {});
    case Kind::RateLimited:
      return refuse(429, "rate_limit_error", "rate_limit_exceeded",
                    "API key " + c.key_id + " is over its " + std::to_string(c.limit) + " requests per minute",
                    {{"Retry-After", std::to_string(c.retry_after_s)}});
    case Kind::OutOfTokens:
      return refuse(429, "rate_limit_error", "tokens_exceeded",
                    "API key " + c.key_id + " has used its " + std::to_string(c.limit) + " tokens for today (UTC)",
                    {{"Retry-After", std::to_string(c.retry_after_s)}});
    case Kind::Unavailable:
      // Quotas are counted in the store: a request it cannot count is not let through unchecked.
      state.log("api key " + c.key_id + ": quota not counted: " + c.error);
      return refuse(503, "server_error", "quota_unavailable",
                    "the hub cannot count API key " + c.key_id + "'s quota now; retry shortly", {{"Retry-After", "1"}});
  }
  return false;
}

}  // namespace cellserve::fleet
