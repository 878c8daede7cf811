// Reading typed fields of a request body, with OpenAI-style 400 errors that name the field.
//
// Every reader leaves *out unchanged and succeeds when the field is absent or null (SDKs send
// null for "not given"); a present field of the wrong type or out of range gives an
// InvalidArgument Status whose param() is the field's name.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include "base/status.h"

namespace cellserve::server {

// True when `key` is present and not null.
bool has_field(const boost::json::object& o, std::string_view key);

// The field's value when present and not null, else nullptr.
const boost::json::value* field(const boost::json::object& o, std::string_view key);

// A number in a short human form ("0.5", "2", "1e+20") for error messages.
std::string format_number(double v);

Status read_bool(const boost::json::object& o, std::string_view key, bool* out);
Status read_string(const boost::json::object& o, std::string_view key, std::string* out);
// An integer in [min, max]; integral doubles (16.0) are accepted.
Status read_int(const boost::json::object& o, std::string_view key, int64_t min, int64_t max, int64_t* out);
// Any number in [min, max] (inclusive); `min_exclusive` makes the lower bound exclusive.
Status read_number(const boost::json::object& o, std::string_view key, double min, double max, double* out,
                   bool min_exclusive = false);

// `v` as an integer when it is one (int64, uint64 within range, or an integral double).
std::optional<int64_t> as_integer(const boost::json::value& v);

// The JSON type name used in messages: "a string", "an object", "null", ...
const char* json_kind_name(const boost::json::value& v);

}  // namespace cellserve::server
