// How many tokens a request asks to generate: the one reading of max_tokens,
// max_completion_tokens, max_output_tokens and n_predict, shared by the replica's parsers
// (request_parsing.cpp) and the hub's estimates (fleet/hub/gateway_request.cpp,
// fleet/hub/token_reservation.cpp), so the hub reads a body as the replica will and never
// refuses one that the replica takes.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include <boost/json/object.hpp>

#include "base/status.h"

namespace cellserve::server {

// Which fields an endpoint reads for its completion limit.
enum class TokenLimitFields {
  Chat,       // /v1/chat/completions, /v1/completions: max_tokens, then max_completion_tokens (the newer name wins)
  Responses,  // /v1/responses: max_output_tokens (the replica reads it as max_completion_tokens)
  Llama,      // /completion (llama-server's): as Chat, then n_predict wins (-1: until the end)
  None,       // any other endpoint (embeddings, tokenize, ...): it generates nothing and reads none
};

// The fields of the replica's endpoint at `path` ("/v1/chat/completions", "/responses",
// "/completion"; the OpenAI paths with or without "/v1"); None for a path that is not one of its
// generation endpoints.
TokenLimitFields token_limit_fields(std::string_view path);

struct TokenLimit {
  std::optional<int64_t> tokens;  // >= 1; nullopt when the body sets none (or n_predict is -1)
  bool until_end = false;         // n_predict -1: until end-of-generation or the context is full
};

// The limit `body` sets. A field that is absent or null is not set; each one present must be an
// integer >= 1 (n_predict: -1 or >= 1), else InvalidArgument naming it as the client sent it.
Result<TokenLimit> read_token_limit(const boost::json::object& body, TokenLimitFields fields);

}  // namespace cellserve::server
