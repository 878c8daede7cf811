// GET /api/v1/market: what a deployment with given requirements would find and pay.
#include <cmath>
#include <map>

#include <boost/json.hpp>

#include "fleet/hub/admin_api.h"
#include "fleet/matcher/matcher.h"
#include "fleet/spec/deployment_spec.h"

namespace cellserve::fleet {
namespace {

namespace json = boost::json;

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

void AdminApi::add_market_routes(net::RouteTable& routes) {
  routes.add("GET", "/api/v1/market", admin(plain(&AdminApi::market)));
}

void AdminApi::market(const net::HttpRequest& req, net::ResponseWriter& w) {
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
  auto ps = state_.store->processors();
  auto rows = state_.store->replicas("");
  if (!ps.ok() || !rows.ok()) return send_error(w, 500, "store error");
  const MarketFigures f = fleet::market(*ps, *rows, MarketQuery{spec->requirements, replicas});
  json::object out{
      {"eligible", f.eligible},
      {"available", f.available},
      {"average_ask", f.average_ask},
      {"replicas", replicas},
      {"price_for_replicas", f.price_for_replicas ? json::value(*f.price_for_replicas) : json::value(nullptr)}};
  send_json(w, 200, json::serialize(out));
}

}  // namespace cellserve::fleet
