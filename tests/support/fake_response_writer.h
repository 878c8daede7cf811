// The one fake net::ResponseWriter of the tests: it records what a handler, a router or the
// tunnel answered (whole or streamed), and can play a client that leaves (after some writes or
// some client_gone() checks, or when a test says so), a slow client (write_delay), or a client
// whose writes fail. Safe to write from another thread; read a moving one through snapshot().
// Also post(): a POST request to feed a handler.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include "net/http_types.h"

namespace cellserve::testing {

// What a writer received.
struct ResponseRecording {
  int status = 0;
  std::string content_type;
  std::string body;  // what send() sent, or every write() of a stream appended
  net::HeaderList headers;
  std::vector<std::string> writes;  // each write() of a stream
  int sends = 0, begins = 0, ends = 0;
  bool streamed = false, ended = false;

  std::string header(std::string_view name) const {
    for (const auto& [k, v] : headers) {
      if (k == name) return v;
    }
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
};

class FakeResponseWriter : public net::ResponseWriter, public ResponseRecording {
 public:
  FakeResponseWriter() = default;
  // A copy (of a writer a test helper used and returns) takes what was recorded and the switches.
  FakeResponseWriter(const FakeResponseWriter& other)
      : ResponseRecording(other.snapshot()),
        gone(other.gone.load()),
        writes_before_gone(other.writes_before_gone),
        checks_before_gone(other.checks_before_gone),
        checks(other.checks),
        refuse_writes(other.refuse_writes),
        write_delay(other.write_delay.load()),
        delivered(other.delivered.load()),
        on_write(other.on_write) {}
  FakeResponseWriter& operator=(const FakeResponseWriter& other) {
    if (this == &other) return *this;
    ResponseRecording recorded = other.snapshot();
    {
      std::lock_guard lock(mu_);
      static_cast<ResponseRecording&>(*this) = std::move(recorded);
    }
    gone = other.gone.load();
    writes_before_gone = other.writes_before_gone;
    checks_before_gone = other.checks_before_gone;
    checks = other.checks;
    refuse_writes = other.refuse_writes;
    write_delay = other.write_delay.load();
    delivered = other.delivered.load();
    on_write = other.on_write;
    return *this;
  }

  void send(int s, std::string_view type, std::string b, const net::HeaderList& h) override {
    std::lock_guard lock(mu_);
    ++sends;
    status = s;
    content_type = type;
    body = std::move(b);
    headers = h;
  }
  bool begin_stream(int s, std::string_view type, const net::HeaderList& h) override {
    std::lock_guard lock(mu_);
    ++begins;
    streamed = true;
    status = s;
    content_type = type;
    headers = h;
    return !gone;
  }
  bool write(std::string_view data) override {
    {
      std::lock_guard lock(mu_);
      if (writes_before_gone >= 0 && static_cast<int>(writes.size()) >= writes_before_gone) gone = true;
    }
    if (gone) return false;
    if (on_write) on_write(data);
    if (write_delay.load().count() > 0) std::this_thread::sleep_for(write_delay.load());
    std::lock_guard lock(mu_);
    writes.emplace_back(data);
    body.append(data);
    delivered += data.size();
    return !refuse_writes;
  }
  void end_stream() override {
    std::lock_guard lock(mu_);
    ++ends;
    ended = true;
  }
  bool client_gone() override {
    if (checks_before_gone >= 0 && checks++ >= checks_before_gone) gone = true;
    return gone;
  }

  // A consistent copy of what was recorded so far, while another thread may still write.
  ResponseRecording snapshot() const {
    std::lock_guard lock(mu_);
    return static_cast<const ResponseRecording&>(*this);
  }

  std::atomic<bool> gone{false};  // the client left: writes fail, client_gone() says so
  int writes_before_gone = -1;    // >= 0: the client leaves after this many writes
  int checks_before_gone = -1;    // >= 0: the client leaves after this many client_gone() checks
  int checks = 0;
  bool refuse_writes = false;  // write() records, then fails (the client is not reported gone)
  std::atomic<std::chrono::milliseconds> write_delay{std::chrono::milliseconds(0)};  // each write() waits
  std::atomic<size_t> delivered{0};                                                  // bytes written
  std::function<void(std::string_view)> on_write;  // called before a write is recorded; set before use

 private:
  mutable std::mutex mu_;
};

inline net::HttpRequest post(const std::string& path, const std::string& body) {
  net::HttpRequest r;
  r.method = "POST";
  r.path = path;
  r.body = body;
  return r;
}

}  // namespace cellserve::testing
