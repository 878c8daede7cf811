// The hub's REST API (/api/v1/...): processors, deployments, market figures. JSON in and out;
// errors are OpenAI-style objects. docs/fleet.md lists every route.
#include <cmath>
#include <map>

#include <boost/json.hpp>

#include "fleet/hub/hub_impl.h"
#include "fleet/matcher/matcher.h"
#include "fleet/spec/agent_protocol.h"
#include "fleet/spec/deployment_spec.h"
#include "server/router.h"

namespace cellserve::fleet {
namespace {

namespace json = boost::json;

json::object processor_json(const Processor& p, const std::vector<Replica>& rows) {
  json::object o = to_json(AgentInfo{p.name, p.price_per_day, p.specs, p.benchmark, ""}).as_object();
  o.erase("version");
  o["id"] = p.id;
  o["online"] = p.online;
  o["attested"] = p.attested;
  o["registered_ms"] = p.registered_ms;
  o["last_seen_ms"] = p.last_seen_ms;
  json::array serving;
  for (const Replica& r : rows) {
    if (r.processor_id == p.id && r.state != ReplicaState::Offline) {
      serving.push_back(
          json::object{{"deployment", r.deployment}, {"index", r.index}, {"state", replica_state_name(r.state)}});
    }
  }
  o["serving"] = std::move(serving);
  return o;
}

json::object replica_json(const Replica& r, const Deployment& d, const Store& store, int64_t now) {
  const bool spare = r.index >= d.spec.replicas;
  json::object o{{"index", r.index},
                 {"role", spare ? "spare" : "replica"},
                 {"processor", r.processor_id},
                 {"state", replica_state_name(r.state)},
                 {"progress", r.progress},
                 {"detail", r.detail},
                 {"price_per_day", r.price_per_day},
                 {"prefill_tps", r.prefill_tps},
                 {"decode_tps", r.decode_tps},
                 {"matched_ms", r.matched_ms},
                 {"cost", store.replica_cost(r, now)}};
  if (!spare) o["path"] = "/d/" + d.spec.name + "/r/" + std::to_string(r.index) + "/v1";
  return o;
}

json::object deployment_json(const Deployment& d, const std::vector<Replica>& rows, const Store& store, int64_t now) {
  json::object o{{"name", d.spec.name}, {"created_ms", d.created_ms}, {"spec", deployment_spec_json(d.spec, false)}};
  json::array replicas;
  double cost = 0;
  int ready = 0;
  for (const Replica& r : rows) {
    if (r.deployment != d.spec.name) continue;
    replicas.push_back(replica_json(r, d, store, now));
    cost += store.replica_cost(r, now);
    if (r.state == ReplicaState::Ready && r.index < d.spec.replicas) ++ready;
  }
  o["replicas"] = std::move(replicas);
  o["ready"] = ready;
  o["cost"] = cost;
  return o;
}

// "a=1&b=x" → map (no percent-decoding needed for the market's numeric and simple values).
std::map<std::string, std::string> parse_query(const std::string& q) {
  std::map<std::string, std::string> out;
  size_t i = 0;
  while (i <= q.size() && !q.empty()) {
    const size_t amp = q.find('&', i);
    const std::string part = q.substr(i, amp == std::string::npos ? std::string::npos : amp - i);
    const size_t eq = part.find('=');
    if (!part.empty()) out[part.substr(0, eq)] = eq == std::string::npos ? "" : part.substr(eq + 1);
    if (amp == std::string::npos) break;
    i = amp + 1;
  }
  return out;
}

}  // namespace

void Hub::Impl::handle_api(const server::HttpRequest& req, server::ResponseWriter& w) {
  if (!options.api_key.empty()) {
    const std::string auth = req.header("authorization");
    if (!auth.starts_with("Bearer ") || !server::constant_time_equal(auth.substr(7), options.api_key)) {
      return send_error(w, 401, "a valid hub API key is required (Authorization: Bearer ...)");
    }
  }
  const int64_t now = now_ms();
  const std::string& path = req.path;
  if (path == "/api/v1/processors") {
    if (req.method != "GET") return send_error(w, 405, "use GET", {{"Allow", "GET"}});
    auto ps = store->processors();
    auto rows = store->replicas("");
    if (!ps.ok() || !rows.ok()) return send_error(w, 500, "store error");
    json::array out;
    for (const Processor& p : *ps) out.push_back(processor_json(p, *rows));
    return send_json(w, 200, json::serialize(json::object{{"processors", std::move(out)}}));
  }
  if (path == "/api/v1/deployments") {
    if (req.method == "GET") {
      auto ds = store->deployments();
      auto rows = store->replicas("");
      if (!ds.ok() || !rows.ok()) return send_error(w, 500, "store error");
      json::array out;
      for (const Deployment& d : *ds) out.push_back(deployment_json(d, *rows, *store, now));
      return send_json(w, 200, json::serialize(json::object{{"deployments", std::move(out)}}));
    }
    if (req.method != "POST") return send_error(w, 405, "use GET or POST", {{"Allow", "GET, POST"}});
    auto body = parse_json(req.body, "request body");
    if (!body.ok()) return send_error(w, 400, body.status().message());
    auto spec = parse_deployment_spec(*body);
    if (!spec.ok()) return send_error(w, 400, spec.status().message());
    Deployment d{*spec, now};
    if (Status s = store->create_deployment(d); !s.ok()) {
      return send_error(w, s.code() == StatusCode::InvalidArgument ? 409 : 500, s.message());
    }
    log("deployment " + spec->name + " created: " + std::to_string(spec->replicas) + " replicas of " + spec->model_url +
        " at <= " + std::to_string(spec->max_price_per_day) + "/day");
    request_reconcile();
    auto rows = store->replicas(spec->name);
    return send_json(w, 201,
                     json::serialize(deployment_json(d, rows.ok() ? *rows : std::vector<Replica>{}, *store, now)));
  }
  if (path.starts_with("/api/v1/deployments/")) {
    const std::string name = path.substr(std::string("/api/v1/deployments/").size());
    auto d = store->deployment(name);
    if (!d.ok()) return send_error(w, 500, d.status().message());
    if (!d->has_value()) return send_error(w, 404, "no deployment named '" + name + "'");
    if (req.method == "GET") {
      auto rows = store->replicas(name);
      if (!rows.ok()) return send_error(w, 500, rows.status().message());
      return send_json(w, 200, json::serialize(deployment_json(**d, *rows, *store, now)));
    }
    if (req.method == "DELETE") {
      if (Status s = store->delete_deployment(name, now); !s.ok()) return send_error(w, 500, s.message());
      log("deployment " + name + " removed");
      request_reconcile();
      return send_json(w, 200, json::serialize(json::object{{"deleted", name}}));
    }
    return send_error(w, 405, "use GET or DELETE", {{"Allow", "GET, DELETE"}});
  }
  if (path == "/api/v1/market") {
    if (req.method != "GET") return send_error(w, 405, "use GET", {{"Allow", "GET"}});
    // The requirements as query parameters (the spec's [requirements] keys) plus replicas.
    json::object reqs;
    int replicas = 1;
    for (const auto& [key, value] : parse_query(req.query)) {
      if (key == "replicas") {
        char* end = nullptr;
        const long n = std::strtol(value.c_str(), &end, 10);
        if (end == value.c_str() || *end != '\0' || n < 1 || n > 10000) {
          return send_error(w, 400, "replicas must be an integer in [1, 10000]");
        }
        replicas = static_cast<int>(n);
      } else if (key == "min_ram" || key == "arch") {
        reqs[key] = value;
      } else if (key == "min_cores" || key == "min_decode_tps") {
        char* end = nullptr;
        const double v = std::strtod(value.c_str(), &end);
        if (end == value.c_str() || *end != '\0' || !std::isfinite(v))
          return send_error(w, 400, key + " must be a number");
        reqs[key] = v;
      } else if (key == "attested_only") {
        reqs[key] = value == "true" || value == "1";
      } else {
        return send_error(w, 400, "unknown market parameter '" + key + "'");
      }
    }
    // Validated by the spec reader, so the market and deployments agree on what a key means.
    json::object probe{{"name", "market"},
                       {"max_price_per_day", 0},
                       {"model", json::object{{"url", "https://x"}, {"sha256", std::string(64, '0')}}},
                       {"requirements", reqs}};
    auto spec = parse_deployment_spec(probe);
    if (!spec.ok()) return send_error(w, 400, spec.status().message());
    auto ps = store->processors();
    auto rows = store->replicas("");
    if (!ps.ok() || !rows.ok()) return send_error(w, 500, "store error");
    const MarketFigures f = market(*ps, *rows, MarketQuery{spec->requirements, replicas});
    json::object out{
        {"eligible", f.eligible},
        {"available", f.available},
        {"average_ask", f.average_ask},
        {"replicas", replicas},
        {"price_for_replicas", f.price_for_replicas ? json::value(*f.price_for_replicas) : json::value(nullptr)}};
    return send_json(w, 200, json::serialize(out));
  }
  send_error(w, 404, "no route for " + req.method + " " + path);
}

}  // namespace cellserve::fleet
