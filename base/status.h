// Status and Result<T>: how expected failures travel through cellserve.
//
// Modelled on leveldb's Status and abseil's StatusOr. A function that can fail on bad input
// (a malformed file, bad JSON, an absurd parameter, a peer that went away) returns Status or
// Result<T>; it never throws across a module boundary and never aborts. The codes map one-to-one
// to OpenAI error types and HTTP statuses (see http_status()). A failure caused by one field of a
// client's request also names that field (param()) and, where OpenAI has one, its error code
// (api_code()); net/json_error.h turns a Status into the HTTP error body in one place.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace cellserve {

enum class StatusCode {
  Ok = 0,
  InvalidArgument,    // 400 invalid_request_error: the caller's input is wrong
  Unauthenticated,    // 401
  PermissionDenied,   // 403
  NotFound,           // 404
  ResourceExhausted,  // 429: queue full, out of memory, context too long
  Unavailable,        // 503: loading, peer gone
  DataLoss,           // corrupt or truncated data (a file that is not what it claims to be)
  Unimplemented,      // a valid input we do not support (yet)
  Internal,           // 500: a bug or an environment failure (I/O error)
};

// Returns a short stable name for `code` ("invalid_argument", ...).
const char* status_code_name(StatusCode code);

// Returns the HTTP status that corresponds to `code` (200 for Ok).
int http_status(StatusCode code);

class [[nodiscard]] Status {
 public:
  // An OK status.
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return {}; }
  static Status invalid_argument(std::string m) { return {StatusCode::InvalidArgument, std::move(m)}; }
  static Status not_found(std::string m) { return {StatusCode::NotFound, std::move(m)}; }
  static Status data_loss(std::string m) { return {StatusCode::DataLoss, std::move(m)}; }
  static Status unimplemented(std::string m) { return {StatusCode::Unimplemented, std::move(m)}; }
  static Status internal(std::string m) { return {StatusCode::Internal, std::move(m)}; }
  static Status resource_exhausted(std::string m) { return {StatusCode::ResourceExhausted, std::move(m)}; }
  static Status unavailable(std::string m) { return {StatusCode::Unavailable, std::move(m)}; }
  // InvalidArgument naming the request field `param` ("messages[2].content", "" for the body).
  static Status invalid_param(std::string param, std::string m) {
    return invalid_argument(std::move(m)).with_param(std::move(param));
  }

  bool ok() const { return code_ == StatusCode::Ok; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // The request field at fault; "" when the failure is not about one field.
  const std::string& param() const { return param_; }
  // OpenAI's error code ("context_length_exceeded", "model_not_found"); "" when none.
  const std::string& api_code() const { return api_code_; }

  // Returns a copy whose message is "`context`: <message>" (for adding where the error happened).
  Status with_context(const std::string& context) const {
    if (ok()) return *this;
    Status s = *this;
    s.message_ = context + ": " + message_;
    return s;
  }
  // Returns a copy that names `param` (e.g. a nested reader's field under its parent's name).
  Status with_param(std::string param) const {
    Status s = *this;
    if (!ok()) s.param_ = std::move(param);
    return s;
  }
  Status with_api_code(std::string code) const {
    Status s = *this;
    if (!ok()) s.api_code_ = std::move(code);
    return s;
  }

  // "OK" or "<code name>: <message>".
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::Ok;
  std::string message_;
  std::string param_;
  std::string api_code_;
};

// A value or the Status that explains why there is none. Constructing a Result from an OK
// Status is a programming error.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}        // NOLINT: implicit by design, like StatusOr
  Result(Status status) : state_(std::move(status)) {  // NOLINT
    assert(!std::get<Status>(state_).ok() && "Result built from an OK status");
  }

  bool ok() const { return std::holds_alternative<T>(state_); }
  // The failure; an OK status when a value is held.
  Status status() const { return ok() ? Status() : std::get<Status>(state_); }

  // REQUIRES: ok().
  T& value() & { return std::get<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> state_;
};

}  // namespace cellserve

// Returns early from the enclosing function when `expr` yields a non-OK Status.
#define CS_RETURN_IF_ERROR(expr)             \
  do {                                       \
    ::cellserve::Status cs_status_ = (expr); \
    if (!cs_status_.ok()) return cs_status_; \
  } while (0)

#define CS_CONCAT_INNER(a, b) a##b
#define CS_CONCAT(a, b) CS_CONCAT_INNER(a, b)

// `CS_ASSIGN_OR_RETURN(auto x, make_x());` binds the value or returns the failure.
#define CS_ASSIGN_OR_RETURN(decl, expr) CS_ASSIGN_OR_RETURN_IMPL(CS_CONCAT(cs_result_, __LINE__), decl, expr)
#define CS_ASSIGN_OR_RETURN_IMPL(tmp, decl, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  decl = std::move(tmp).value()
