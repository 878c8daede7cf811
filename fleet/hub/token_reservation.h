// The most tokens one request can use, held against its API key's daily quota from admission to
// its end (fleet/hub/key_book.h), so that requests in flight together cannot overshoot it.
#pragma once

#include <cstdint>
#include <string_view>

#include <boost/json/object.hpp>

namespace cellserve::fleet {

// Tokens one sequence holds at most on a replica when the spec leaves ctx_size to the agent
// (server/serve_stack.cpp: 4096 per slot).
inline constexpr int64_t kDefaultSlotContext = 4096;

// The most tokens (prompt + completion) the request `body` to `endpoint` (the path after /v1,
// e.g. "/chat/completions") can use on a replica of a deployment whose engine ctx_size is
// `ctx_size` (0: the agent's default). Each of the `n` choices is bounded by one slot's context;
// within it the prompt by the body's bytes (a token is at least one byte of the text that names
// it) and the completion by the limit the replica reads at `endpoint` (server/api/token_limit.h),
// or the whole context when the body sets none. "/embeddings" generates nothing: the body's bytes.
// A body that is not a JSON object holds one slot's context (the replica refuses it anyway).
int64_t token_reservation(std::string_view body, std::string_view endpoint, int64_t ctx_size);
// The same, of a body the hub parsed already (parse_request_body): `body` is null when it is not
// a JSON object; `body_bytes` its size as sent.
int64_t token_reservation(const boost::json::object* body, size_t body_bytes, std::string_view endpoint,
                          int64_t ctx_size);

}  // namespace cellserve::fleet
