#include "server/router.h"

#include <boost/json.hpp>

#include "server/api/handlers.h"
#include "server/api/openai_error.h"
#include "server/metrics.h"

namespace cellserve::server {
namespace {

namespace json = boost::json;

void send_error(ResponseWriter& w, const ApiError& e, const HeaderList& headers = {}) {
  w.send(e.http_status, "application/json", error_body(e), headers);
}

}  // namespace

bool constant_time_equal(std::string_view given, std::string_view expected) {
  // Compare over the expected key's length whatever was given, folding every difference in.
  unsigned diff = given.size() == expected.size() ? 0u : 1u;
  for (size_t i = 0; i < expected.size(); ++i) {
    const unsigned char g = i < given.size() ? static_cast<unsigned char>(given[i]) : 0;
    diff |= g ^ static_cast<unsigned char>(expected[i]);
  }
  return diff == 0;
}

bool Router::authorized(const HttpRequest& request) const {
  if (options_.api_key.empty()) return true;
  const std::string auth = request.header("authorization");
  constexpr std::string_view kBearer = "Bearer ";
  std::string_view given;
  if (auth.size() > kBearer.size() && std::string_view(auth).substr(0, kBearer.size()) == kBearer) {
    given = std::string_view(auth).substr(kBearer.size());
  } else {
    given = request.header("x-api-key");  // Anthropic-style header some clients send
  }
  return constant_time_equal(given, options_.api_key);
}

void Router::handle(const HttpRequest& request, ResponseWriter& writer) const {
  const ApiContext* api = api_.load();
  const std::string& path = request.path;
  auto count = [&](int status) {
    if (api != nullptr && api->metrics != nullptr) api->metrics->count_request(path, status);
  };

  if (path == "/health" || path == "/v1/health") {
    if (api == nullptr) {
      ApiError e{503, "the model is loading", "unavailable_error", "", "loading"};
      send_error(writer, e);
    } else {
      writer.send(200, "application/json", R"({"status":"ok"})");
    }
    return;
  }
  if (!authorized(request)) {
    ApiError e{401, "invalid or missing API key: send 'Authorization: Bearer <key>'", "authentication_error", "",
               "invalid_api_key"};
    send_error(writer, e, {{"WWW-Authenticate", "Bearer"}});
    count(401);
    return;
  }
  if (api == nullptr) {
    send_error(
        writer,
        ApiError{503, "the model is loading; retry when /health answers 200", "unavailable_error", "", "loading"},
        {{"Retry-After", "1"}});
    return;
  }

  struct Route {
    const char* method;
    std::vector<const char*> paths;
    void (*handler)(const ApiContext&, const HttpRequest&, ResponseWriter&);
  };
  static const std::vector<Route> routes = {
      {"POST", {"/v1/chat/completions", "/chat/completions"}, handle_chat_completions},
      {"POST", {"/v1/completions", "/completions"}, handle_completions},
      {"GET", {"/v1/models", "/models"}, handle_models},
      {"POST", {"/tokenize"}, handle_tokenize},
      {"POST", {"/detokenize"}, handle_detokenize},
      {"GET", {"/lora-adapters"}, handle_lora_adapters_get},
      {"POST", {"/lora-adapters"}, handle_lora_adapters_post},
  };
  std::string allowed;  // methods of the routes with this path, for a 405
  for (const Route& r : routes) {
    for (const char* p : r.paths) {
      if (path != p) continue;
      if (request.method == r.method) {
        r.handler(*api, request, writer);
        return;
      }
      allowed += allowed.empty() ? r.method : std::string(", ") + r.method;
    }
  }
  if (!allowed.empty()) {
    send_error(writer, ApiError{405, "use " + allowed + " for " + path, "invalid_request_error", "", ""},
               {{"Allow", allowed}});
    count(405);
    return;
  }
  if (path == "/metrics" && request.method == "GET") {
    writer.send(200, "text/plain; version=0.0.4", api->metrics != nullptr ? api->metrics->prometheus_text() : "");
    return;
  }
  if (path == "/props" && request.method == "GET") {
    writer.send(200, "application/json", json::serialize(props_));
    count(200);
    return;
  }
  send_error(writer, ApiError{404, "no such endpoint: " + request.method + " " + path, "not_found_error", "", ""});
  count(404);
}

}  // namespace cellserve::server
