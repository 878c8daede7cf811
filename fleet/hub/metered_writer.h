// The writer in front of the user at the deployment endpoint: it passes everything on and notes
// what the metrics need, the status sent, when the first byte of the answer left, which replica
// answered (X-Cellserve-Replica) and the tokens its usage reported.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "net/http_types.h"

namespace cellserve::fleet {

class MeteredWriter final : public net::ResponseWriter {
 public:
  using Clock = std::chrono::steady_clock;
  explicit MeteredWriter(net::ResponseWriter& out) : out_(out) {}

  void send(int status, std::string_view type, std::string body, const net::HeaderList& headers) override;
  bool begin_stream(int status, std::string_view type, const net::HeaderList& headers) override;
  bool write(std::string_view data) override;
  void end_stream() override { out_.end_stream(); }
  void abort_stream() override { out_.abort_stream(); }
  bool client_gone() override { return out_.client_gone(); }

  int status() const { return status_; }    // 0: nothing sent
  int replica() const { return replica_; }  // -1: the hub answered itself
  const std::optional<Clock::time_point>& first_byte() const { return first_byte_; }
  int64_t completion_tokens() const { return completion_tokens_; }
  // The tokens the request used, for an API key's daily quota: the answer's usage (prompt +
  // completion) when it reported one; else (a stream without include_usage) an estimate of a
  // token per streamed chunk plus one per 4 bytes of the request.
  int64_t tokens_used(size_t request_bytes) const {
    return total_tokens_ > 0 ? total_tokens_ : static_cast<int64_t>(request_bytes / 4) + chunks_;
  }

 private:
  void note_headers(int status, const net::HeaderList& headers);
  void note_usage(std::string_view json_text);
  // One whole line of a streamed answer.
  void note_line(std::string_view line);

  net::ResponseWriter& out_;
  int status_ = 0;
  int replica_ = -1;
  std::optional<Clock::time_point> first_byte_;
  int64_t completion_tokens_ = 0;
  int64_t total_tokens_ = 0;
  int64_t chunks_ = 0;  // streamed data events
  // The streamed answer's unfinished last line: a write may hold several events, or part of one.
  std::string line_;
  bool line_too_long_ = false;  // the current line passed kMaxLineBytes: skipped to its end
  static constexpr size_t kMaxLineBytes = 1 << 20;
};

}  // namespace cellserve::fleet
