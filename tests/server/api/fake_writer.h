// A net::ResponseWriter that records what a handler answers (whole or streamed), with switches
// for a client that leaves after some writes or checks; and a POST request to feed a handler.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include "net/http_types.h"

namespace cellserve::server {

class FakeWriter : public net::ResponseWriter {
 public:
  void send(int s, std::string_view type, std::string b, const net::HeaderList& h) override {
    ++sends;
    status = s;
    content_type = type;
    body = std::move(b);
    headers = h;
  }
  bool begin_stream(int s, std::string_view type, const net::HeaderList& h) override {
    streamed = true;
    status = s;
    content_type = type;
    headers = h;
    return !gone;
  }
  bool write(std::string_view data) override {
    if (writes_before_gone >= 0 && static_cast<int>(writes.size()) >= writes_before_gone) gone = true;
    if (gone) return false;
    writes.emplace_back(data);
    return true;
  }
  void end_stream() override { ended = true; }
  bool client_gone() override {
    if (checks_before_gone >= 0 && checks++ >= checks_before_gone) gone = true;
    return gone;
  }
  int checks_before_gone = -1;  // >= 0: the client leaves after this many client_gone() checks
  int checks = 0;

  std::string header(const std::string& name) const {
    for (const auto& [k, v] : headers)
      if (k == name) return v;
    return "";
  }
  boost::json::value json_body() const { return boost::json::parse(body); }
  // The payloads of the SSE events written ("data: X\n\n" -> X).
  std::vector<std::string> events() const {
    std::vector<std::string> out;
    for (const std::string& w : writes) {
      EXPECT_EQ(w.rfind("data: ", 0), 0u) << w;
      EXPECT_EQ(w.substr(w.size() - 2), "\n\n") << w;
      out.push_back(w.substr(6, w.size() - 8));
    }
    return out;
  }

  int sends = 0;
  int status = 0;
  std::string content_type, body;
  net::HeaderList headers;
  bool streamed = false, ended = false, gone = false;
  int writes_before_gone = -1;  // >= 0: the client leaves after this many writes
  std::vector<std::string> writes;
};

inline net::HttpRequest post(const std::string& path, const std::string& body) {
  net::HttpRequest r;
  r.method = "POST";
  r.path = path;
  r.body = body;
  return r;
}

}  // namespace cellserve::server
