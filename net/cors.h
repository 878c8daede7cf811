// Cross-origin requests from browsers. Off unless origins are listed (`--cors-origins`, the flag
// llama-server has; it defaults to "*", we default to none): a web page must not be able to drive
// a key-less server on the user's machine. A request whose Origin is neither the server's own nor
// listed is refused with 403 before any handler runs — also the "simple" text/plain POSTs that a
// browser sends without asking first.
#pragma once

#include <string>
#include <vector>

#include "net/http_types.h"

namespace cellserve::net {

struct CorsPolicy {
  std::vector<std::string> origins;  // e.g. "https://app.example.com"; "*" allows any; empty: off
};

struct CorsDecision {
  bool refused = false;      // a cross-origin request that the policy does not allow
  std::string allow_origin;  // the Access-Control-Allow-Origin to send, "" for none
};

// No Origin header (curl, SDKs outside a browser) or a same-origin one: allowed, no CORS headers.
CorsDecision cors_decision(const CorsPolicy& policy, const HttpRequest& request);

// The answer to an allowed preflight (OPTIONS): methods, the headers the browser asked for
// (the OpenAI SDKs send x-stainless-*), and how long it may cache this.
HeaderList cors_preflight_headers(const HttpRequest& request);

// "a, b,c" → {"a", "b", "c"}, for the flag.
std::vector<std::string> split_origins(const std::string& list);

}  // namespace cellserve::net
