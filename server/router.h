// Routes `cellserve serve`'s HTTP requests: authentication, /health, /metrics, /props, and the
// OpenAI endpoints, in one route table (net/route_table.h). The server starts answering before
// the model is loaded: until ready, /health says 503 "loading" and every other endpoint 503.
#pragma once

#include <atomic>
#include <string>

#include <boost/json/object.hpp>

#include "net/http_types.h"
#include "net/route_table.h"
#include "server/api/api_context.h"

namespace cellserve::server {

struct RouterOptions {
  std::string api_key;  // "" : no authentication
  // Answer only requests whose Host is an address literal or localhost (net/host_check.h): on
  // for a `serve` without a key, which a DNS-rebinding page could otherwise drive. Off for a
  // replica inside an agent, which is reached only through its hub's tunnel.
  bool local_hosts_only = false;
};

class Router {
 public:
  explicit Router(RouterOptions options);
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  // Makes the API live; `api` must stay valid until the HTTP server stops.
  void set_ready(const ApiContext* api, boost::json::object props) {
    props_ = std::move(props);
    api_.store(api);
  }
  void handle(const net::HttpRequest& request, net::ResponseWriter& writer) const;

 private:
  RouterOptions options_;
  net::RouteTable public_routes_;  // answered without a key (health checks)
  net::RouteTable routes_;         // everything else: key, then readiness
  boost::json::object props_;      // written before api_ is published, read after
  std::atomic<const ApiContext*> api_{nullptr};
};

}  // namespace cellserve::server
