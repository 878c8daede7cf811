// The hub's stopwatch on one forwarded answer: it passes everything on and notes, on the hub's
// clock, when the request left, when the first token's event arrived and when the answer ended,
// with the usage the answer reported and the bytes of text it carried. What a device says of its
// own answer is hostile: its usage is clamped by what was relayed (answer_sample()).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "fleet/hub/replica_speed.h"
#include "net/http_types.h"

namespace cellserve::fleet {

class SpeedProbe final : public net::ResponseWriter {
 public:
  // The stopwatch starts now.
  SpeedProbe(net::ResponseWriter& out, const Clock& clock) : out_(out), clock_(clock), started_(clock.now()) {}

  void send(int status, std::string_view type, std::string body, const net::HeaderList& headers) override;
  bool begin_stream(int status, std::string_view type, const net::HeaderList& headers) override;
  bool write(std::string_view data) override;
  void end_stream() override;
  void abort_stream() override;
  bool client_gone() override { return out_.client_gone(); }

  // The answer as a speed sample, for a whole 200 answer (sent, or streamed and ended cleanly);
  // nullopt otherwise. `request_bytes`: the forwarded request body's size. Prompt tokens are at
  // most one per request byte (usage absent: one per kBytesPerToken bytes); completion tokens at
  // most one per byte of answer text (usage absent, streamed: one per event with text), so a
  // device cannot look faster by reporting tokens it did not send within the time it took.
  std::optional<AnswerSample> answer_sample(size_t request_bytes) const;

 private:
  void note_event(std::string_view json_text);
  double seconds_since_start(Clock::time_point t) const;

  net::ResponseWriter& out_;
  const Clock& clock_;
  Clock::time_point started_;
  int status_ = 0;
  bool streamed_ = false;
  bool complete_ = false;  // sent, or streamed and ended (not aborted)
  std::optional<Clock::time_point> first_token_;
  Clock::time_point ended_{};
  double usage_prompt_ = -1;  // -1: no usage seen
  double usage_completion_ = -1;
  double text_bytes_ = 0;
  double text_events_ = 0;
};

}  // namespace cellserve::fleet
