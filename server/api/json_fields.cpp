#include "server/api/json_fields.h"

#include <charconv>
#include <cmath>

namespace cellserve::server {

namespace json = boost::json;

bool has_field(const json::object& o, std::string_view key) { return field(o, key) != nullptr; }

const json::value* field(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v == nullptr || v->is_null() ? nullptr : v;
}

std::string format_number(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

const char* json_kind_name(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null:
      return "null";
    case json::kind::bool_:
      return "a boolean";
    case json::kind::int64:
    case json::kind::uint64:
    case json::kind::double_:
      return "a number";
    case json::kind::string:
      return "a string";
    case json::kind::array:
      return "an array";
    case json::kind::object:
      return "an object";
  }
  return "a value";
}

std::optional<int64_t> as_integer(const json::value& v) {
  if (v.is_int64()) return v.get_int64();
  if (v.is_uint64()) {
    if (v.get_uint64() > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<int64_t>(v.get_uint64());
  }
  if (v.is_double()) {
    const double d = v.get_double();
    // 2^63 is exactly representable; anything at or beyond it does not fit.
    if (std::isfinite(d) && d == std::trunc(d) && std::fabs(d) < 9.2233720368547758e18) return static_cast<int64_t>(d);
  }
  return std::nullopt;
}

namespace {
std::string quoted(std::string_view key) { return "'" + std::string(key) + "'"; }

Status wrong_type(std::string_view key, const char* expected, const json::value& got) {
  return Status::invalid_param(std::string(key), quoted(key) + " must be " + expected + ", got " + json_kind_name(got));
}
}  // namespace

Status read_bool(const json::object& o, std::string_view key, bool* out) {
  const json::value* v = field(o, key);
  if (v == nullptr) return {};
  if (!v->is_bool()) return wrong_type(key, "a boolean", *v);
  *out = v->get_bool();
  return {};
}

Status read_string(const json::object& o, std::string_view key, std::string* out) {
  const json::value* v = field(o, key);
  if (v == nullptr) return {};
  if (!v->is_string()) return wrong_type(key, "a string", *v);
  *out = std::string(v->get_string());
  return {};
}

Status read_int(const json::object& o, std::string_view key, int64_t min, int64_t max, int64_t* out) {
  const json::value* v = field(o, key);
  if (v == nullptr) return {};
  const std::optional<int64_t> i = as_integer(*v);
  if (!i) return wrong_type(key, "an integer", *v);
  if (*i < min || *i > max) {
    return Status::invalid_param(std::string(key), quoted(key) + " must be between " + std::to_string(min) + " and " +
                                                       std::to_string(max) + ", got " + std::to_string(*i));
  }
  *out = *i;
  return {};
}

Status read_number(const json::object& o, std::string_view key, double min, double max, double* out,
                   bool min_exclusive) {
  const json::value* v = field(o, key);
  if (v == nullptr) return {};
  if (!v->is_number()) return wrong_type(key, "a number", *v);
  const double d = v->to_number<double>();
  const bool low_ok = min_exclusive ? d > min : d >= min;
  if (!low_ok || !(d <= max)) {
    const std::string range = min_exclusive ? "(" + format_number(min) + ", " + format_number(max) + "]"
                                            : "[" + format_number(min) + ", " + format_number(max) + "]";
    return Status::invalid_param(std::string(key), quoted(key) + " must be in " + range + ", got " + format_number(d));
  }
  *out = d;
  return {};
}

}  // namespace cellserve::server
