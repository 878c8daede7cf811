#include "server/router.h"

#include <boost/json.hpp>

#include "net/bearer.h"
#include "net/host_check.h"
#include "net/json_error.h"
#include "server/api/embeddings.h"
#include "server/api/handlers.h"
#include "server/metrics.h"

namespace cellserve::server {
namespace {

namespace json = boost::json;

// The label for requests that matched no route: unknown paths must not each make a series.
constexpr std::string_view kUnmatched = "unmatched";

using ApiHandler = void (*)(const ApiContext&, const net::HttpRequest&, net::ResponseWriter&);

}  // namespace

Router::Router(RouterOptions options) : options_(std::move(options)) {
  const auto health = [this](const net::HttpRequest&, const net::PathParams&, net::ResponseWriter& w) {
    if (api_.load() == nullptr) {
      w.send(503, "application/json",
             net::error_body(net::ApiError{503, "the model is loading", "unavailable_error", "", "loading"}));
    } else {
      w.send(200, "application/json", R"({"status":"ok"})");
    }
  };
  public_routes_.add("GET", "/health", health).add("GET", "/v1/health", health);

  // Handlers below run only once the API is ready (handle() checks), so api_ is set.
  const auto api = [this](ApiHandler h) {
    return [this, h](const net::HttpRequest& req, const net::PathParams&, net::ResponseWriter& w) {
      h(*api_.load(), req, w);
    };
  };
  routes_.add("POST", "/v1/chat/completions", api(handle_chat_completions))
      .add("POST", "/chat/completions", api(handle_chat_completions))
      .add("POST", "/v1/completions", api(handle_completions))
      .add("POST", "/completions", api(handle_completions))
      .add("POST", "/v1/responses", api(handle_responses))
      .add("POST", "/responses", api(handle_responses))
      .add("POST", "/completion", api(handle_llama_completion))  // llama-server's native endpoint
      .add("POST", "/v1/embeddings", api(handle_embeddings))
      .add("POST", "/embeddings", api(handle_embeddings))
      .add("GET", "/slots", api(handle_slots))
      .add("GET", "/v1/models", api(handle_models))
      .add("GET", "/models", api(handle_models))
      .add("POST", "/tokenize", api(handle_tokenize))
      .add("POST", "/detokenize", api(handle_detokenize))
      .add("POST", "/apply-template", api(handle_apply_template))
      .add("GET", "/lora-adapters", api(handle_lora_adapters_get))
      .add("POST", "/lora-adapters", api(handle_lora_adapters_post))
      .add("GET", "/metrics",
           [this](const net::HttpRequest&, const net::PathParams&, net::ResponseWriter& w) {
             const Metrics* m = api_.load()->metrics;
             w.send(200, "text/plain; version=0.0.4", m != nullptr ? m->prometheus_text() : "");
           })
      .add("GET", "/props", [this](const net::HttpRequest&, const net::PathParams&, net::ResponseWriter& w) {
        w.send(200, "application/json", json::serialize(props_));
      });
}

void Router::handle(const net::HttpRequest& request, net::ResponseWriter& writer) const {
  if (options_.local_hosts_only && !net::literal_or_localhost_host(request.header("host"))) {
    return writer.send(403, "application/json",
                       net::error_body(net::ApiError{403,
                                                     "this server has no API key and answers only requests to an "
                                                     "address or localhost (Host was '" +
                                                         net::host_name_of(request.header("host")).substr(0, 64) +
                                                         "'); set --api-key-file to serve other names",
                                                     "permission_error", "", "host_not_allowed"}));
  }
  if (net::RouteTable::Found health = public_routes_.find(request.method, request.path); health.handler != nullptr) {
    return net::RouteTable::answer(request, health, writer);
  }
  const ApiContext* api = api_.load();
  net::RouteTable::Found found = routes_.find(request.method, request.path);
  // Metrics are labelled by route pattern, never by the raw path.
  const std::string_view label = found.pattern != nullptr ? std::string_view(*found.pattern) : kUnmatched;
  const auto count = [&](int status) {
    if (api != nullptr && api->metrics != nullptr) api->metrics->count_request(std::string(label), status);
  };
  if (!options_.api_key.empty() && !net::has_api_key(request, options_.api_key)) {
    writer.send(401, "application/json",
                net::error_body(net::ApiError{401, "invalid or missing API key: send 'Authorization: Bearer <key>'",
                                              "authentication_error", "", "invalid_api_key"}),
                {{"WWW-Authenticate", "Bearer"}});
    return count(401);
  }
  if (api == nullptr) {
    writer.send(503, "application/json",
                net::error_body(net::ApiError{503, "the model is loading; retry when /health answers 200",
                                              "unavailable_error", "", "loading"}),
                {{"Retry-After", "1"}});
    return;
  }
  net::RouteTable::answer(request, found, writer);
  // The API handlers count their own outcomes; the router counts what it answered itself.
  if (found.handler == nullptr) {
    count(found.allowed.empty() ? 404 : 405);
  } else if (label == "/props") {
    count(200);
  }
}

}  // namespace cellserve::server
