#include "fleet/hub/relay_writer.h"

#include "fleet/hub/device_headers.h"
#include "net/json_error.h"

namespace cellserve::fleet {

void RelayWriter::send(int status, std::string_view type, std::string body, const net::HeaderList& headers) {
  out_.send(status, content_type_for_user(type), std::move(body), headers_for_user(headers));
}

bool RelayWriter::begin_stream(int status, std::string_view type, const net::HeaderList& headers) {
  streaming_ = true;
  const std::string user_type = content_type_for_user(type);
  event_stream_ = user_type.starts_with("text/event-stream");
  return out_.begin_stream(status, user_type, headers_for_user(headers));
}

void RelayWriter::end_broken(const Status& cause) {
  if (!streaming_ || out_.client_gone()) return;
  if (!event_stream_) return out_.abort_stream();
  const net::ApiError e = net::api_error(
      502, "the device serving this request failed mid-answer: " + cause.message() + "; the answer is incomplete");
  out_.write("data: " + net::error_body(e) + "\n\n");
  out_.write("data: [DONE]\n\n");
  out_.end_stream();
}

}  // namespace cellserve::fleet
