// OpenAI-style error bodies: {"error": {"message", "type", "param", "code"}}.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "net/http_types.h"

namespace cellserve::net {

struct ApiError {
  int http_status = 400;
  std::string message;
  std::string type = "invalid_request_error";  // invalid_request_error, authentication_error, ...
  std::string param;                           // the offending request field, "" when none
  std::string code;                            // e.g. "context_length_exceeded", "" when none
};

// The JSON body for `e`; `param` and `code` are null when empty.
std::string error_body(const ApiError& e);

// Maps an engine/base Status to an ApiError (status code via http_status(), type by class:
// 4xx invalid_request_error except 401 authentication_error, 404 not_found_error, 429
// rate_limit_error; 5xx server_error / unavailable_error).
ApiError api_error_from_status(const Status& s, std::string param = {}, std::string code = {});

// An ApiError for `http_status` with the type that status implies (as above; 502 and 503 are
// unavailable_error, 504 timeout).
ApiError api_error(int http_status, std::string message);

// Sends api_error(http_status, message) as a whole JSON response.
void send_error(ResponseWriter& w, int http_status, const std::string& message, const HeaderList& headers = {});

}  // namespace cellserve::net
