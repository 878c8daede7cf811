#include "fleet/hub/token_reservation.h"

#include <algorithm>

#include <boost/json.hpp>

#include "fleet/hub/gateway_request.h"

namespace cellserve::fleet {
namespace {

namespace json = boost::json;

// A JSON number as a whole count of tokens; nullopt when it is not a number.
std::optional<double> number(const json::value& v) {
  if (v.is_int64()) return static_cast<double>(v.as_int64());
  if (v.is_uint64()) return static_cast<double>(v.as_uint64());
  if (v.is_double()) return v.as_double();
  return std::nullopt;
}

}  // namespace

int64_t token_reservation(std::string_view body, std::string_view endpoint, int64_t ctx_size) {
  const int64_t slot = ctx_size > 0 ? ctx_size : kDefaultSlotContext;
  const auto bytes = static_cast<int64_t>(body.size());
  if (endpoint == "/embeddings") return std::max<int64_t>(1, bytes);
  boost::system::error_code ec;
  json::parse_options opts;
  opts.max_depth = 64;
  const json::value v = json::parse(body, ec, {}, opts);
  if (ec || !v.is_object()) return slot;
  const json::object& o = v.as_object();
  int64_t completion = slot;
  for (const char* key : {"max_completion_tokens", "max_tokens", "max_output_tokens", "n_predict"}) {
    const json::value* limit = o.if_contains(key);
    if (limit == nullptr || limit->is_null()) continue;
    const std::optional<double> n = number(*limit);
    // Compared as doubles first: a huge or fractional value never reaches an integer cast.
    if (n && *n > 0 && *n < static_cast<double>(slot)) completion = static_cast<int64_t>(*n + 0.999);
    break;  // the replica reads the first one set (gateway_request.cpp reads them in this order)
  }
  int64_t choices = 1;
  if (const json::value* n = o.if_contains("n"); n != nullptr && n->is_int64() && n->as_int64() > 1) {
    choices = std::min<int64_t>(n->as_int64(), kMaxChoices);
  }
  return choices * std::min(slot, bytes + completion);
}

}  // namespace cellserve::fleet
