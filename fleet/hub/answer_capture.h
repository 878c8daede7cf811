// A writer that keeps (a bounded prefix of) a response for a spot check (spot_checks.h): in
// front of the user it passes everything on and keeps a copy only when `keep`; alone (no `out`)
// it holds the response of a check request, and tells the tunnel the client left once the
// response outgrows the bound or the hub stops (the device's slot is freed).
#pragma once

#include <atomic>
#include <string>
#include <string_view>

#include "fleet/hub/spot_check_answer.h"
#include "net/http_types.h"

namespace cellserve::fleet {

class AnswerCapture final : public net::ResponseWriter {
 public:
  // Passes on to `out` and keeps a copy when `keep`.
  AnswerCapture(net::ResponseWriter& out, bool keep) : out_(&out), keep_(keep) {}
  // Keeps the response only; `stopping` (may be null) ends it early.
  explicit AnswerCapture(const std::atomic<bool>* stopping) : keep_(true), stopping_(stopping) {}

  void send(int status, std::string_view type, std::string body, const net::HeaderList& headers) override {
    status_ = status;
    keep_bytes(body);
    if (out_ != nullptr) out_->send(status, type, std::move(body), headers);
  }
  bool begin_stream(int status, std::string_view type, const net::HeaderList& headers) override {
    status_ = status;
    return out_ == nullptr ? !client_gone() : out_->begin_stream(status, type, headers);
  }
  bool write(std::string_view data) override {
    keep_bytes(data);
    return out_ == nullptr ? !client_gone() : out_->write(data);
  }
  void end_stream() override {
    if (out_ != nullptr) out_->end_stream();
  }
  void abort_stream() override {
    if (out_ != nullptr) out_->abort_stream();
  }
  bool client_gone() override {
    if (out_ != nullptr) return out_->client_gone();
    return overflowed_ || (stopping_ != nullptr && stopping_->load());
  }

  bool kept() const { return keep_ && !overflowed_; }  // a whole copy is held
  int status() const { return status_; }               // 0: nothing arrived
  const std::string& body() const { return body_; }

 private:
  void keep_bytes(std::string_view data) {
    if (!keep_ || overflowed_) return;
    if (body_.size() + data.size() > kMaxComparedResponseBytes) {
      overflowed_ = true;
      body_.clear();
      return;
    }
    body_.append(data);
  }

  net::ResponseWriter* out_ = nullptr;
  bool keep_ = false;
  const std::atomic<bool>* stopping_ = nullptr;
  bool overflowed_ = false;
  int status_ = 0;
  std::string body_;
};

}  // namespace cellserve::fleet
