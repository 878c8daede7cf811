#include "fleet/hub/admin_api.h"

#include "fleet/hub/dashboard_assets.h"
#include "fleet/hub/files_access.h"
#include "net/bearer.h"

namespace cellserve::fleet {

using net::HttpRequest;
using net::PathParams;
using net::ResponseWriter;

net::RouteHandler AdminApi::admin(net::RouteHandler handler) const {
  return [this, handler = std::move(handler)](const HttpRequest& req, const PathParams& params, ResponseWriter& w) {
    if (!state_.options.api_key.empty() && !net::has_api_key(req, state_.options.api_key)) {
      return send_error(w, 401, "a valid hub API key is required (Authorization: Bearer ...)",
                        {{"WWW-Authenticate", "Bearer"}});
    }
    handler(req, params, w);
  };
}

net::RouteHandler AdminApi::plain(Handler f) {
  return [this, f](const HttpRequest& req, const PathParams&, ResponseWriter& w) { (this->*f)(req, w); };
}

net::RouteHandler AdminApi::by(const char* param, ParamHandler f) {
  return [this, param, f](const HttpRequest&, const PathParams& p, ResponseWriter& w) { (this->*f)(p.get(param), w); };
}

net::RouteHandler AdminApi::by(const char* param, RequestParamHandler f) {
  return [this, param, f](const HttpRequest& req, const PathParams& p, ResponseWriter& w) {
    (this->*f)(req, p.get(param), w);
  };
}

void AdminApi::add_routes(net::RouteTable& routes) {
  routes.add("GET", "/health",
             [](const HttpRequest&, const PathParams&, ResponseWriter& w) { send_json(w, 200, R"({"status":"ok"})"); });
  // Models and adapters: on a closed hub only for the admin key, or an agent's download token for
  // the files its current assignments name while it is enrolled (files_access.h).
  routes.add("GET", "/files/{path...}", [this](const HttpRequest& req, const PathParams&, ResponseWriter& w) {
    if (!state_.options.api_key.empty() && !net::has_api_key(req, state_.options.api_key)) {
      const std::optional<std::string> device =
          state_.files_tokens.verify(net::request_api_key(req), state_.now_ms() / 1000);
      if (!device) {
        return send_error(w, 401, "a hub API key or an agent's download token is required for /files/",
                          {{"WWW-Authenticate", "Bearer"}});
      }
      if (const Status may = device_may_fetch(*state_.store, *device, req.path); !may.ok()) {
        const bool denied = may.code() == StatusCode::PermissionDenied;
        return send_error(w, denied ? 403 : 500, denied ? may.message() : "store error");
      }
    }
    files_(req, w);
  });
  // The dashboard's static files are public; what its pages show comes from the routes below.
  add_dashboard_routes(routes);
  add_processor_routes(routes);
  add_history_routes(routes);
  add_deployment_routes(routes);
  add_secret_routes(routes);
  add_market_routes(routes);
  add_key_routes(routes);
  add_enrollment_routes(routes);
  add_spot_check_routes(routes);
  add_traffic_routes(routes);
  add_hub_routes(routes);
  routes.add("GET", "/metrics", admin([this](const HttpRequest&, const PathParams&, ResponseWriter& w) {
               std::string text = state_.metrics.prometheus_text(state_.registry, forwarder_.queue_lengths());
               const AttestationStatusFeed* feed = state_.attestation ? state_.attestation->status_feed() : nullptr;
               if (feed != nullptr) text += feed->prometheus_text(state_.now_ms());
               text += agreement_metrics_text(state_.agreement.all());
               w.send(200, "text/plain; version=0.0.4", text);
             }));
}

}  // namespace cellserve::fleet
