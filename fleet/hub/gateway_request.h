// What the deployment endpoint reads from a request body before choosing a replica: the
// `model` it names and the work it asks for (fleet/hub/route_choice.h), without tokenizing. The
// hub parses a body once (parse_request_body); the gateway request, the quota hold
// (token_reservation.h) and a changed model (with_model) are all read from that one object.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>

#include "base/status.h"
#include "fleet/hub/route_choice.h"
#include "net/http_types.h"

namespace cellserve::fleet {

struct GatewayRequest {
  std::string model;  // "" when the body names none
  bool stream = false;
  RequestWork work;
};

// The most choices ("n") a replica generates for one request (server/api/request_parsing.cpp).
inline constexpr int64_t kMaxChoices = 16;

// Reads a chat, completions or Responses body sent to `endpoint` (its path, with or without
// "/v1"): `model`, the token limit the replica reads there (server/api/token_limit.h; times `n`),
// and the prompt (the messages' roles and text, the Responses `instructions` and `input` read the
// same way, or `prompt`). InvalidArgument naming the problem when the body is not a JSON object,
// `model` is not a string, or the token limit is one the replica refuses (naming its param); the
// replica checks everything else.
Result<GatewayRequest> read_gateway_request(const boost::json::object& body, std::string_view endpoint);
// The same, of a body not yet parsed.
Result<GatewayRequest> read_gateway_request(std::string_view body, std::string_view endpoint);

// A request body as the hub reads it: a JSON object, parsed as deep as the replica's own parser
// accepts (so the hub never refuses a body the replica would take). InvalidArgument otherwise.
Result<boost::json::object> parse_request_body(std::string_view body);

// Makes a user's request one for a replica: the user's credentials (Authorization, X-Api-Key,
// Cookie) never reach a device; the replica key does, as the bearer token.
void address_to_replica(net::HttpRequest& request, const std::string& replica_key);

// The replica's prefix cache is shared only by requests of one API key (issue 43 item 9): a
// request of `key_id` carries that key's partition, so another key's cached_tokens (and its
// prefill time) never show that this key sent a prompt. "" (the admin, an open hub): the
// client's own header, if any, goes on.
void set_cache_partition(net::HttpRequest& request, const std::string& key_id);

// `body` with its "model" set to `model`, as the text to forward.
std::string with_model(boost::json::object body, const std::string& model);
// The same, of a body not yet parsed (unchanged when it is not a JSON object).
std::string with_model(std::string_view body, const std::string& model);

}  // namespace cellserve::fleet
