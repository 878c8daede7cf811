// A ResponseWriter that keeps what a handler sent, for tests of handlers and routing.
#pragma once

#include <string>
#include <string_view>

#include "net/http_types.h"

namespace cellserve::net {

class RecordingWriter final : public ResponseWriter {
 public:
  void send(int s, std::string_view type, std::string b, const HeaderList& h) override {
    status = s;
    content_type = std::string(type);
    body += b;
    headers = h;
  }
  bool begin_stream(int s, std::string_view type, const HeaderList& h) override {
    status = s;
    content_type = std::string(type);
    headers = h;
    return true;
  }
  bool write(std::string_view data) override {
    body += data;
    return true;
  }
  void end_stream() override { ended = true; }
  bool client_gone() override { return false; }

  std::string header(std::string_view name) const {
    for (const auto& [k, v] : headers) {
      if (k == name) return v;
    }
    return "";
  }

  int status = 0;
  std::string content_type;
  std::string body;
  HeaderList headers;
  bool ended = false;
};

}  // namespace cellserve::net
