// The reader of a deployment spec's objects (the TOML file's tables, the API's JSON): each key
// read with its type and bounds, errors naming the key with its table's prefix, and the keys no
// reader asked for reported as unknown (a typo, usually). deployment_spec.cpp and
// autoscale_spec.cpp read through it.
#pragma once

#include <cmath>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "base/status.h"

namespace cellserve::fleet {

// Reads one object's keys, remembering which were read so unknown ones can be reported.
class SpecFields {
 public:
  SpecFields(const boost::json::object& o, std::string prefix) : o_(o), prefix_(std::move(prefix)) {}

  std::string name(std::string_view key) const { return prefix_ + std::string(key); }
  const boost::json::object& object() const { return o_; }

  const boost::json::value* get(std::string_view key) {
    seen_.insert(std::string(key));
    const auto it = o_.find(key);
    return it == o_.end() || it->value().is_null() ? nullptr : &it->value();
  }

  Status string(std::string_view key, std::string* out, bool required = false) {
    const boost::json::value* v = get(key);
    if (v == nullptr) return required ? Status::invalid_argument(name(key) + " is required") : Status();
    if (!v->is_string()) return Status::invalid_argument(name(key) + " must be a string");
    *out = std::string(v->as_string());
    return {};
  }

  Status number(std::string_view key, double min, double max, double* out) {
    const boost::json::value* v = get(key);
    if (v == nullptr) return {};
    double d = 0;
    if (v->is_int64()) {
      d = static_cast<double>(v->as_int64());
    } else if (v->is_uint64()) {
      d = static_cast<double>(v->as_uint64());
    } else if (v->is_double()) {
      d = v->as_double();
    } else {
      return Status::invalid_argument(name(key) + " must be a number");
    }
    if (!std::isfinite(d) || d < min || d > max) {
      std::ostringstream m;
      m << name(key) << " must be in [" << min << ", " << max << "]";
      return Status::invalid_argument(m.str());
    }
    *out = d;
    return {};
  }

  Status integer(std::string_view key, int min, int max, int* out) {
    double d = *out;
    CS_RETURN_IF_ERROR(number(key, min, max, &d));
    if (d != std::floor(d)) return Status::invalid_argument(name(key) + " must be an integer");
    *out = static_cast<int>(d);
    return {};
  }

  Status boolean(std::string_view key, bool* out) {
    const boost::json::value* v = get(key);
    if (v == nullptr) return {};
    if (!v->is_bool()) return Status::invalid_argument(name(key) + " must be true or false");
    *out = v->as_bool();
    return {};
  }

  Status strings(std::string_view key, std::vector<std::string>* out) {
    const boost::json::value* v = get(key);
    if (v == nullptr) return {};
    if (!v->is_array()) return Status::invalid_argument(name(key) + " must be a list of strings");
    out->clear();
    for (const boost::json::value& e : v->as_array()) {
      if (!e.is_string()) return Status::invalid_argument(name(key) + " must be a list of strings");
      out->emplace_back(e.as_string());
    }
    return {};
  }

  Result<const boost::json::object*> table(std::string_view key) {
    const boost::json::value* v = get(key);
    if (v == nullptr) return static_cast<const boost::json::object*>(nullptr);
    if (!v->is_object()) return Status::invalid_argument(name(key) + " must be a table");
    return &v->as_object();
  }

  // InvalidArgument naming the first key that no reader asked for (a typo, usually).
  Status no_unknown_keys() const {
    for (const auto& kv : o_) {
      if (!seen_.contains(std::string(kv.key()))) {
        return Status::invalid_argument(name(kv.key()) + " is not a known key");
      }
    }
    return {};
  }

 private:
  const boost::json::object& o_;
  std::string prefix_;
  std::set<std::string> seen_;
};

}  // namespace cellserve::fleet
