// Routes HTTP requests to the API handlers: authentication, /health, /metrics, /props, and the
// OpenAI endpoints. The server starts answering before the model is loaded: until ready, /health
// says 503 "loading" and every other endpoint 503.
#pragma once

#include <atomic>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>

#include "server/api/api_context.h"
#include "server/http/http_types.h"

namespace cellserve::server {

struct RouterOptions {
  std::string api_key;  // "" : no authentication
};

// True when `given` equals `expected`, in time that depends only on the lengths (no early exit on
// the first differing byte, so the key cannot be guessed byte by byte from response times).
bool constant_time_equal(std::string_view given, std::string_view expected);

class Router {
 public:
  explicit Router(RouterOptions options) : options_(std::move(options)) {}

  // Makes the API live; `api` must stay valid until the HTTP server stops.
  void set_ready(const ApiContext* api, boost::json::object props) {
    props_ = std::move(props);
    api_.store(api);
  }
  void handle(const HttpRequest& request, ResponseWriter& writer) const;

 private:
  bool authorized(const HttpRequest& request) const;

  RouterOptions options_;
  boost::json::object props_;  // written before api_ is published, read after
  std::atomic<const ApiContext*> api_{nullptr};
};

}  // namespace cellserve::server
