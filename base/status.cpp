#include "base/status.h"

namespace cellserve {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::Ok:
      return "ok";
    case StatusCode::InvalidArgument:
      return "invalid_argument";
    case StatusCode::Unauthenticated:
      return "unauthenticated";
    case StatusCode::PermissionDenied:
      return "permission_denied";
    case StatusCode::NotFound:
      return "not_found";
    case StatusCode::ResourceExhausted:
      return "resource_exhausted";
    case StatusCode::Unavailable:
      return "unavailable";
    case StatusCode::DataLoss:
      return "data_loss";
    case StatusCode::Unimplemented:
      return "unimplemented";
    case StatusCode::Internal:
      return "internal";
  }
  return "unknown";
}

int http_status(StatusCode code) {
  switch (code) {
    case StatusCode::Ok:
      return 200;
    case StatusCode::InvalidArgument:
      return 400;
    case StatusCode::Unauthenticated:
      return 401;
    case StatusCode::PermissionDenied:
      return 403;
    case StatusCode::NotFound:
      return 404;
    case StatusCode::ResourceExhausted:
      return 429;
    case StatusCode::Unavailable:
      return 503;
    case StatusCode::DataLoss:
      return 400;
    case StatusCode::Unimplemented:
      return 501;
    case StatusCode::Internal:
      return 500;
  }
  return 500;
}

std::string Status::to_string() const {
  if (ok()) return "OK";
  return std::string(status_code_name(code_)) + ": " + message_;
}

}  // namespace cellserve
