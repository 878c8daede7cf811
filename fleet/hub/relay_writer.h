// The writer a relayed response goes through on its way to the user: it passes the body on, and
// of the device's headers only what device_headers.h allows; it remembers whether a stream began
// and whether it is Server-Sent Events, so that a stream the device broke can be ended honestly
// (end_broken).
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "net/http_types.h"

namespace cellserve::fleet {

class RelayWriter final : public net::ResponseWriter {
 public:
  explicit RelayWriter(net::ResponseWriter& out) : out_(out) {}
  void send(int status, std::string_view type, std::string body, const net::HeaderList& headers) override;
  bool begin_stream(int status, std::string_view type, const net::HeaderList& headers) override;
  bool write(std::string_view data) override { return out_.write(data); }
  void end_stream() override { out_.end_stream(); }
  bool client_gone() override { return out_.client_gone(); }
  void abort_stream() override { out_.abort_stream(); }

  // After the relay failed with `cause` once the response had begun: an SSE stream gets an
  // OpenAI-style error event naming the cause, then [DONE], then its end; any other streamed
  // body is aborted (no clean end). A whole response already sent needs nothing.
  void end_broken(const Status& cause);

 private:
  net::ResponseWriter& out_;
  bool streaming_ = false;
  bool event_stream_ = false;
};

}  // namespace cellserve::fleet
