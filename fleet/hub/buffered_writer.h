// A whole response held at the hub instead of passed on: one leg of a hedged request
// (hedge.cpp). The leg that answers first is replayed to the user; the others are
// cancelled, which the tunnel sees as a client that left (it resets the stream, and the device
// frees the slot). Thread-safe: cancel() and done() may be called from any thread.
#pragma once

#include <atomic>
#include <string>
#include <string_view>

#include "net/http_types.h"

namespace cellserve::fleet {

class BufferedWriter final : public net::ResponseWriter {
 public:
  void send(int status, std::string_view type, std::string body, const net::HeaderList& headers) override {
    status_ = status;
    type_ = type;
    body_ = std::move(body);
    headers_ = headers;
  }
  bool begin_stream(int status, std::string_view type, const net::HeaderList& headers) override {
    status_ = status;
    type_ = type;
    headers_ = headers;
    return !cancelled_.load();
  }
  bool write(std::string_view data) override {
    body_ += data;
    return !cancelled_.load();
  }
  void end_stream() override {}
  bool client_gone() override { return cancelled_.load(); }

  void cancel() { cancelled_ = true; }
  int status() const { return status_; }  // 0: nothing arrived
  const std::string& body() const { return body_; }
  const net::HeaderList& headers() const { return headers_; }
  // Replays the held response to `out` as one whole answer.
  void replay(net::ResponseWriter& out) { out.send(status_, type_, std::move(body_), headers_); }

 private:
  std::atomic<bool> cancelled_{false};
  int status_ = 0;
  std::string type_;
  std::string body_;
  net::HeaderList headers_;
};

}  // namespace cellserve::fleet
