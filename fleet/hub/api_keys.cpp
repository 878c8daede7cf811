// API keys (issue 20, item 3): POST/GET /api/v1/keys and POST /api/v1/keys/{id}/revoke. A key
// opens one deployment's endpoint and replica addresses, within its quotas (fleet/hub/key_book.h).
#include <boost/json.hpp>

#include "fleet/crypto/identity.h"
#include "fleet/hub/admin_api.h"
#include "fleet/spec/agent_protocol.h"

namespace cellserve::fleet {
namespace {

namespace json = boost::json;

constexpr int64_t kMaxTokensPerDay = 1'000'000'000'000;

json::object key_json(const ApiKey& k) {
  return json::object{{"id", k.id},
                      {"name", k.name},
                      {"deployment", k.deployment},
                      {"rpm", k.rpm},
                      {"tokens_per_day", k.tokens_per_day},
                      {"created_ms", k.created_ms},
                      {"revoked", k.revoked},
                      {"requests", k.requests},
                      {"tokens", k.tokens},
                      {"tokens_today", k.day == now_ms() / (24LL * 3600 * 1000) ? k.day_tokens : 0}};
}

}  // namespace

void AdminApi::add_key_routes(net::RouteTable& routes) {
  routes.add("POST", "/api/v1/keys", admin(plain(&AdminApi::create_api_key)));
  routes.add("GET", "/api/v1/keys", admin(plain(&AdminApi::list_api_keys)));
  routes.add("POST", "/api/v1/keys/{id}/revoke", admin(by("id", &AdminApi::revoke_api_key)));
}

void AdminApi::create_api_key(const net::HttpRequest& req, net::ResponseWriter& w) {
  auto body = parse_json(req.body, "request body");
  if (!body.ok()) return send_error(w, 400, body.status().message());
  if (!body->is_object()) {
    return send_error(w, 400, "the body must be an object: {\"deployment\", \"name\", \"rpm\", \"tokens_per_day\"}");
  }
  ApiKey k;
  for (const auto& kv : body->as_object()) {
    const json::value& v = kv.value();
    if (kv.key() == "deployment" && v.is_string()) {
      k.deployment = std::string(v.as_string());
    } else if (kv.key() == "name" && v.is_string() && v.as_string().size() <= 100) {
      k.name = std::string(v.as_string());
    } else if (kv.key() == "rpm" && v.is_int64() && v.as_int64() >= 0 && v.as_int64() <= KeyBook::kMaxRpm) {
      k.rpm = static_cast<int>(v.as_int64());
    } else if (kv.key() == "tokens_per_day" && v.is_int64() && v.as_int64() >= 0 && v.as_int64() <= kMaxTokensPerDay) {
      k.tokens_per_day = v.as_int64();
    } else {
      return send_error(w, 400,
                        "bad or unknown key '" + std::string(kv.key()) +
                            "' (deployment: a name; name: <= 100 bytes; rpm: 0.." + std::to_string(KeyBook::kMaxRpm) +
                            "; tokens_per_day: 0..10^12; 0 means no limit)");
    }
  }
  if (k.deployment.empty()) return send_error(w, 400, "deployment is required");
  auto d = state_.store->deployment(k.deployment);
  if (!d.ok()) return send_error(w, 500, d.status().message());
  if (!d->has_value()) return send_error(w, 404, "no deployment named '" + k.deployment + "'");
  k.deployment_created_ms = (*d)->created_ms;  // this deployment, not a later one of the name
  const std::string key = "csk_" + random_hex(24);
  k.hash = KeyBook::hash_of(key);
  k.id = k.hash.substr(0, 12);
  k.created_ms = state_.now_ms();
  if (Status s = state_.store->add_api_key(k); !s.ok()) return send_error(w, 500, s.message());
  state_.keys.add(k);
  state_.log("api key " + k.id + " created for " + k.deployment + (k.name.empty() ? "" : " (" + k.name + ")"));
  json::object o = key_json(k);
  o["key"] = key;  // the only time it is shown: the hub keeps its hash
  send_json(w, 201, json::serialize(o));
}

void AdminApi::list_api_keys(const net::HttpRequest&, net::ResponseWriter& w) {
  // The usage is counted in the store by every hub (quota_store.h): read it now, not as of the
  // last round's reload.
  state_.flush_key_usage();
  json::array out;
  for (const ApiKey& k : state_.keys.all()) out.push_back(key_json(k));
  send_json(w, 200, json::serialize(json::object{{"keys", std::move(out)}}));
}

void AdminApi::revoke_api_key(const std::string& id, net::ResponseWriter& w) {
  if (!state_.keys.revoke(id)) return send_error(w, 404, "no api key '" + id.substr(0, 40) + "'");
  state_.flush_key_usage();
  state_.log("api key " + id + " revoked");
  send_json(w, 200, json::serialize(json::object{{"id", id}, {"revoked", true}}));
}

}  // namespace cellserve::fleet
