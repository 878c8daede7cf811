// The writer between a relayed response and the user while another replica may still be tried:
// a replica's failure (replica_failure.h: a 429 or a 5xx such as 500, 502 or 503) is held back
// instead of passed on, so the deployment endpoint can send the request elsewhere and the user
// sees one answer. Everything else passes through, with X-Cellserve-Replica naming the replica
// that answered.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "fleet/hub/replica_failure.h"
#include "net/http_types.h"

namespace cellserve::fleet {

// A replica's failure answer the hub kept instead of passing on. When no other replica can take
// the request, the last one goes to the user as the replica sent it (a 429's Retry-After, a 500's
// message), unless it was a stream or larger than kMaxBody: then the hub answers itself (a 429 or
// 503 with that status, anything else as 502) naming the replica's status.
struct HeldAnswer {
  static constexpr size_t kMaxBody = 64 * 1024;
  int status = 0;
  std::string type;
  std::string body;
  net::HeaderList headers;  // already tagged with X-Cellserve-Replica
  bool whole = false;       // body, type and headers are the replica's whole answer
};

class FailoverWriter final : public net::ResponseWriter {
 public:
  // `replica`: the index named in the X-Cellserve-Replica header of the response passed on.
  FailoverWriter(net::ResponseWriter& out, bool may_retry, int replica)
      : out_(out), may_retry_(may_retry), replica_(std::to_string(replica)) {}

  void send(int status, std::string_view type, std::string body, const net::HeaderList& headers) override {
    if (hold_back(status)) {
      held_->whole = body.size() <= HeldAnswer::kMaxBody;
      if (held_->whole) {
        held_->type = type;
        held_->body = std::move(body);
        held_->headers = tagged(headers);
      }
      return;
    }
    passed_on_ = status;
    out_.send(status, type, std::move(body), tagged(headers));
  }
  bool begin_stream(int status, std::string_view type, const net::HeaderList& headers) override {
    if (hold_back(status)) return false;  // the tunnel resets the stream; nothing reached the user
    passed_on_ = status;
    return out_.begin_stream(status, type, tagged(headers));
  }
  bool write(std::string_view data) override { return out_.write(data); }
  void end_stream() override { out_.end_stream(); }
  void abort_stream() override { out_.abort_stream(); }
  bool client_gone() override { return out_.client_gone(); }

  // Whether any response reached the user (then no other replica may answer).
  bool passed_on() const { return passed_on_ != 0; }
  // The status that reached the user, 0 when none.
  int passed_on_status() const { return passed_on_; }
  // The status held back, 0 when none.
  int refused_status() const { return held_ ? held_->status : 0; }
  // The answer held back, if any (moved out).
  std::optional<HeldAnswer> take_held() { return std::move(held_); }

 private:
  bool hold_back(int status) {
    if (!may_retry_ || !is_replica_failure(status)) return false;
    held_.emplace();
    held_->status = status;
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
  int passed_on_ = 0;
  std::optional<HeldAnswer> held_;
};

}  // namespace cellserve::fleet
