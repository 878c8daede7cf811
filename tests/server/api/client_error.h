// The error a client is answered for a parser's Status, through the one mapping
// (net::api_error_from_status()); nullopt when the parser succeeded. Parser tests check what a
// client sees: status, type, message, param and code.
#pragma once

#include <optional>

#include "base/status.h"
#include "net/json_error.h"

namespace cellserve::server {

inline std::optional<net::ApiError> client_error(const Status& s) {
  if (s.ok()) return std::nullopt;
  return net::api_error_from_status(s);
}

}  // namespace cellserve::server
