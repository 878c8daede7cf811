// Answering a request: JSON bodies and OpenAI error bodies, counted into the metrics.
#pragma once

#include <string>
#include <string_view>

#include "net/http_types.h"
#include "net/json_error.h"
#include "server/api/api_context.h"

namespace cellserve::server {

inline constexpr std::string_view kJsonType = "application/json";

// Counts (endpoint, status) into ctx.metrics when set.
void count_request(const ApiContext& ctx, std::string_view endpoint, int status);

// Sends `body` as application/json with `status` and counts it.
void reply_json(const ApiContext& ctx, std::string_view endpoint, net::ResponseWriter& writer, int status,
                std::string body);

// Sends net::error_body(e) with e.http_status (429 also gets "Retry-After: 1") and counts it.
void reply_error(const ApiContext& ctx, std::string_view endpoint, net::ResponseWriter& writer, const net::ApiError& e);
// The same for a failed Status, as net::api_error_from_status() maps it.
void reply_error(const ApiContext& ctx, std::string_view endpoint, net::ResponseWriter& writer, const Status& s);

}  // namespace cellserve::server
