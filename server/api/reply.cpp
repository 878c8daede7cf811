#include "server/api/reply.h"

#include "server/metrics.h"

namespace cellserve::server {

void count_request(const ApiContext& ctx, std::string_view endpoint, int status) {
  if (ctx.metrics != nullptr) ctx.metrics->count_request(std::string(endpoint), status);
}

void reply_json(const ApiContext& ctx, std::string_view endpoint, net::ResponseWriter& writer, int status,
                std::string body) {
  count_request(ctx, endpoint, status);
  writer.send(status, kJsonType, std::move(body));
}

void reply_error(const ApiContext& ctx, std::string_view endpoint, net::ResponseWriter& writer,
                 const net::ApiError& e) {
  net::HeaderList headers;
  if (e.http_status == 429) headers.emplace_back("Retry-After", "1");
  count_request(ctx, endpoint, e.http_status);
  writer.send(e.http_status, kJsonType, net::error_body(e), headers);
}

void reply_error(const ApiContext& ctx, std::string_view endpoint, net::ResponseWriter& writer, const Status& s) {
  reply_error(ctx, endpoint, writer, net::api_error_from_status(s));
}

}  // namespace cellserve::server
