// A peer's JSON number, whichever of Boost.JSON's three number kinds it parsed as.
#pragma once

#include <optional>

#include <boost/json/value.hpp>

namespace cellserve::fleet {

// The value as a double, or nullopt when `v` is not a number.
inline std::optional<double> json_as_number(const boost::json::value& v) {
  if (v.is_double()) return v.as_double();
  if (v.is_int64()) return static_cast<double>(v.as_int64());
  if (v.is_uint64()) return static_cast<double>(v.as_uint64());
  return std::nullopt;
}

}  // namespace cellserve::fleet
