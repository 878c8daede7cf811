// OpenAI-style error bodies: {"error": {"message", "type", "param", "code"}}.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace cellserve::server {

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

}  // namespace cellserve::server
