#include "fleet/hub/token_reservation.h"

#include <algorithm>

#include <boost/json.hpp>

#include "fleet/hub/gateway_request.h"
#include "server/api/token_limit.h"

namespace cellserve::fleet {
namespace {

namespace json = boost::json;

}  // namespace

int64_t token_reservation(std::string_view body, std::string_view endpoint, int64_t ctx_size) {
  if (endpoint == "/embeddings") return token_reservation(nullptr, body.size(), endpoint, ctx_size);
  const Result<json::object> parsed = parse_request_body(body);
  return token_reservation(parsed.ok() ? &*parsed : nullptr, body.size(), endpoint, ctx_size);
}

int64_t token_reservation(const json::object* body, size_t body_bytes, std::string_view endpoint, int64_t ctx_size) {
  const int64_t slot = ctx_size > 0 ? ctx_size : kDefaultSlotContext;
  const auto bytes = static_cast<int64_t>(body_bytes);
  if (endpoint == "/embeddings") return std::max<int64_t>(1, bytes);
  if (body == nullptr) return slot;
  const json::object& o = *body;
  // The limit as the replica reads it at `endpoint`; none, n_predict -1 or one the replica refuses
  // (it answers 400 at once): the whole context.
  int64_t completion = slot;
  const Result<server::TokenLimit> limit = server::read_token_limit(o, server::token_limit_fields(endpoint));
  if (limit.ok() && limit->tokens && *limit->tokens < slot) completion = *limit->tokens;
  int64_t choices = 1;
  if (const json::value* n = o.if_contains("n"); n != nullptr && n->is_int64() && n->as_int64() > 1) {
    choices = std::min<int64_t>(n->as_int64(), kMaxChoices);
  }
  return choices * std::min(slot, bytes + completion);
}

}  // namespace cellserve::fleet
