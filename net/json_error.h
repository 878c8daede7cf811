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

// The one mapping of a failed Status to the error a client sees: the HTTP status via
// http_status(), the type that status implies (api_error() below), and the Status's param() and
// api_code(). A failure that names a request field is an invalid_request_error whatever its
// status (OpenAI's 404 model_not_found is one).
ApiError api_error_from_status(const Status& s);

// An ApiError for `http_status` with the type that status implies (as above; 502 and 503 are
// unavailable_error, 504 timeout).
ApiError api_error(int http_status, std::string message);

// Sends api_error(http_status, message) as a whole JSON response.
void send_error(ResponseWriter& w, int http_status, const std::string& message, const HeaderList& headers = {});

}  // namespace cellserve::net
