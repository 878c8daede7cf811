// Answering a request: JSON bodies and OpenAI error bodies, counted into the metrics.
#pragma once

#include <string>
#include <string_view>

#include "server/api/api_context.h"
#include "server/api/openai_error.h"
#include "server/http/http_types.h"

namespace cellserve::server {

inline constexpr std::string_view kJsonType = "application/json";

// Counts (endpoint, status) into ctx.metrics when set.
void count_request(const ApiContext& ctx, std::string_view endpoint, int status);

// Sends `body` as application/json with `status` and counts it.
void reply_json(const ApiContext& ctx, std::string_view endpoint, ResponseWriter& writer, int status, std::string body);

// Sends error_body(e) with e.http_status (429 also gets "Retry-After: 1") and counts it.
void reply_error(const ApiContext& ctx, std::string_view endpoint, ResponseWriter& writer, const ApiError& e);

}  // namespace cellserve::server
