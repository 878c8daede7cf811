// The hub's own deadline on a replica's first response byte (issue 43, item 8). A device that
// answers the tunnel's pings but never answers a request would otherwise hold every request the
// gateway routes to it, and every batch line leased to it, for ever. The deadline counts against
// the replica (a failure, so the request fails over) and bounds the user's wait.
#pragma once

#include <chrono>
#include <string_view>

#include "base/clock.h"
#include "fleet/hub/route_choice.h"
#include "fleet/store/records.h"
#include "net/http_types.h"

namespace cellserve::fleet {

// Speeds no serving device is slower than: what the default deadline allows for the request's
// prompt and, when the answer is not streamed (its first byte comes with its last token), for
// its whole answer.
inline constexpr double kSlowestPrefillTps = 20;
inline constexpr double kSlowestDecodeTps = 1;
inline constexpr std::chrono::seconds kFirstByteBase{30};  // loading a slot, a queue on the device
inline constexpr std::chrono::hours kMaxFirstByteLimit{2};

// The spec's first_byte_timeout when set; else kFirstByteBase plus the request's work at the
// slowest speeds, at most kMaxFirstByteLimit. Never derived from what a device claims.
std::chrono::milliseconds first_byte_limit(const GatewaySettings& g, const RequestWork& work, bool streamed);

// Passes everything on to `out`; until the first byte (send or begin_stream) it reports the
// client gone once `deadline` has passed, so the tunnel resets the stream and forward() returns
// without having responded. expired() then says why.
class FirstByteDeadlineWriter final : public net::ResponseWriter {
 public:
  FirstByteDeadlineWriter(net::ResponseWriter& out, Clock::time_point deadline, const Clock& clock = Clock::system())
      : out_(out), deadline_(deadline), clock_(clock) {}

  void send(int status, std::string_view type, std::string body, const net::HeaderList& headers) override {
    started_ = true;
    out_.send(status, type, std::move(body), headers);
  }
  bool begin_stream(int status, std::string_view type, const net::HeaderList& headers) override {
    started_ = true;
    return out_.begin_stream(status, type, headers);
  }
  bool write(std::string_view data) override { return out_.write(data); }
  void end_stream() override { out_.end_stream(); }
  void abort_stream() override { out_.abort_stream(); }
  bool client_gone() override;

  // The deadline passed before the first byte (the replica is to blame, not the client).
  bool expired() const { return expired_; }

 private:
  net::ResponseWriter& out_;
  Clock::time_point deadline_;
  const Clock& clock_;
  bool started_ = false;
  bool expired_ = false;
};

}  // namespace cellserve::fleet
