// The writer between a relayed response and the user while another replica may still be tried:
// a replica's 502 or 503 refusal (not ready, overloaded, failing) is held back instead of passed
// on, so the deployment endpoint can send the request elsewhere and the user sees one answer.
// Everything else passes through, with X-Cellserve-Replica naming the replica that answered.
#pragma once

#include <string>
#include <string_view>

#include "net/http_types.h"

namespace cellserve::fleet {

class FailoverWriter final : public net::ResponseWriter {
 public:
  // `replica`: the index named in the X-Cellserve-Replica header of the response passed on.
  FailoverWriter(net::ResponseWriter& out, bool may_retry, int replica)
      : out_(out), may_retry_(may_retry), replica_(std::to_string(replica)) {}

  void send(int status, std::string_view type, std::string body, const net::HeaderList& headers) override {
    if (hold_back(status)) return;
    passed_on_ = true;
    out_.send(status, type, std::move(body), tagged(headers));
  }
  bool begin_stream(int status, std::string_view type, const net::HeaderList& headers) override {
    if (hold_back(status)) return false;  // the tunnel resets the stream; nothing reached the user
    passed_on_ = true;
    return out_.begin_stream(status, type, tagged(headers));
  }
  bool write(std::string_view data) override { return out_.write(data); }
  void end_stream() override { out_.end_stream(); }
  void abort_stream() override { out_.abort_stream(); }
  bool client_gone() override { return out_.client_gone(); }

  // Whether any response reached the user (then no other replica may answer).
  bool passed_on() const { return passed_on_; }
  // The status held back, 0 when none.
  int refused_status() const { return refused_; }

 private:
  bool hold_back(int status) {
    if (!may_retry_ || (status != 502 && status != 503)) return false;
    refused_ = status;
    return true;
  }

  net::HeaderList tagged(const net::HeaderList& headers) const {
    net::HeaderList out = headers;
    out.emplace_back("X-Cellserve-Replica", replica_);
    return out;
  }

  net::ResponseWriter& out_;
  const bool may_retry_;
  const std::string replica_;
  bool passed_on_ = false;
  int refused_ = 0;
};

}  // namespace cellserve::fleet
