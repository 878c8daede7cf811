#include "server/api/token_limit.h"

#include <limits>
#include <string>

#include "server/api/json_fields.h"

namespace cellserve::server {

TokenLimitFields token_limit_fields(std::string_view path) {
  // The replica's routes (server/router.cpp): the OpenAI ones with and without "/v1", llama-server's
  // /completion only without.
  const bool v1 = path.starts_with("/v1/");
  if (v1) path.remove_prefix(3);
  if (path == "/chat/completions" || path == "/completions") return TokenLimitFields::Chat;
  if (path == "/responses") return TokenLimitFields::Responses;
  if (path == "/completion" && !v1) return TokenLimitFields::Llama;
  return TokenLimitFields::None;
}

Result<TokenLimit> read_token_limit(const boost::json::object& body, TokenLimitFields fields) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  TokenLimit limit;
  if (fields == TokenLimitFields::None) return limit;
  int64_t n = 0;
  if (fields == TokenLimitFields::Responses) {
    // The replica reads the chat body it translates this one into (responses_request.cpp), so
    // the value is checked under its chat name and the failure names the Responses field.
    const boost::json::value* v = field(body, "max_output_tokens");
    if (v == nullptr) return limit;
    const boost::json::object as_chat{{"max_completion_tokens", *v}};
    if (Status s = read_int(as_chat, "max_completion_tokens", 1, kMax, &n); !s.ok()) {
      return s.with_param("max_output_tokens");
    }
    limit.tokens = n;
    return limit;
  }
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {  // the newer name wins
    if (!has_field(body, key)) continue;
    CS_RETURN_IF_ERROR(read_int(body, key, 1, kMax, &n));
    limit.tokens = n;
  }
  if (fields == TokenLimitFields::Llama && has_field(body, "n_predict")) {  // wins, as in llama-server
    CS_RETURN_IF_ERROR(read_int(body, "n_predict", -1, kMax, &n));
    if (n == 0)
      return Status::invalid_param("n_predict", "'n_predict' must be -1 (until the end) or at least 1, got 0");
    limit.until_end = n < 0;
    limit.tokens = n < 0 ? std::nullopt : std::optional<int64_t>(n);
  }
  return limit;
}

}  // namespace cellserve::server
