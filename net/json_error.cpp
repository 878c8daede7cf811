#include "net/json_error.h"

#include <boost/json.hpp>

namespace cellserve::net {

std::string error_body(const ApiError& e) {
  namespace json = boost::json;
  json::object err;
  err["message"] = e.message;
  err["type"] = e.type;
  err["param"] = e.param.empty() ? json::value(nullptr) : json::value(e.param);
  err["code"] = e.code.empty() ? json::value(nullptr) : json::value(e.code);
  return json::serialize(json::object{{"error", std::move(err)}});
}

ApiError api_error(int http_status, std::string message) {
  ApiError e;
  e.http_status = http_status;
  e.message = std::move(message);
  switch (e.http_status) {
    case 401:
      e.type = "authentication_error";
      break;
    case 403:
      e.type = "permission_error";
      break;
    case 404:
      e.type = "not_found_error";
      break;
    case 429:
      e.type = "rate_limit_error";
      break;
    case 502:
    case 503:
      e.type = "unavailable_error";
      break;
    case 504:
      e.type = "timeout";  // a deadline passed: the hub's queue wait or the device's generation
      break;
    default:
      e.type = e.http_status >= 500 ? "server_error" : "invalid_request_error";
  }
  return e;
}

ApiError api_error_from_status(const Status& s) {
  ApiError e = api_error(http_status(s.code()), s.message());
  e.param = s.param();
  e.code = s.api_code();
  if (!e.param.empty()) e.type = "invalid_request_error";
  return e;
}

void send_error(ResponseWriter& w, int http_status, const std::string& message, const HeaderList& headers) {
  w.send(http_status, "application/json", error_body(api_error(http_status, message)), headers);
}

}  // namespace cellserve::net
