// One HTTP/1.1 connection: the request loop that runs on a connection's own thread, and the
// ResponseWriter handed to the handler. Internal to net/ (HttpServer is the public face).
#pragma once

#include <atomic>
#include <chrono>
#include <string>
#include <string_view>

#include "net/http_server.h"

namespace cellserve::net {

// Where a connection is in its request cycle, shared by its thread and the accept thread: a
// connection may be evicted (to admit a new one) only while it waits for a complete request
// header, never while a request is being served. Thread-safe.
class RequestPhase {
 public:
  using Clock = std::chrono::steady_clock;

  // Idle -> Busy once a request header is complete. False when the connection was evicted first.
  bool begin_request() { return exchange(kIdle, kBusy); }
  // Busy -> Idle after the response: the connection has served a request and waits since now.
  void end_request() {
    idle_since_.store(Clock::now().time_since_epoch().count());
    served_.store(true);
    exchange(kBusy, kIdle);
  }
  // Idle -> Evicted. False when a request is being served (or it was evicted already).
  bool evict() { return exchange(kIdle, kEvicted); }

  bool idle() const { return state_.load() == kIdle; }
  bool evicted() const { return state_.load() == kEvicted; }
  // Whether a request was served (a keep-alive client rather than a connection that never spoke).
  bool served() const { return served_.load(); }
  // Since when the connection waits for a request (the accept, or the last response).
  Clock::rep idle_since() const { return idle_since_.load(); }

 private:
  enum Value { kIdle, kBusy, kEvicted };
  bool exchange(int from, int to) { return state_.compare_exchange_strong(from, to); }

  std::atomic<int> state_{kIdle};
  std::atomic<bool> served_{false};
  std::atomic<Clock::rep> idle_since_{Clock::now().time_since_epoch().count()};
};

// Serves requests on the connected socket `fd` (not owned: the caller closes it) until the client
// closes, a timeout or protocol error ends the connection, `stopping` is set, or `phase` is
// evicted (the accept thread then shuts the socket down). Never throws.
void serve_connection(int fd, const HttpServerOptions& options, const Handler& handler,
                      const std::atomic<bool>& stopping, RequestPhase& phase);

// A complete HTTP/1.1 response with an OpenAI-style JSON error body and "Connection: close",
// e.g. the 503 written to connections beyond max_connections.
std::string error_response_bytes(int status, std::string_view message);

// Shuts down our sending side and discards what the client still sends until it closes or
// `linger` passes, so the response just written is not destroyed by a TCP reset (which closing
// a socket with unread input causes). Does not close `fd`.
void lingering_shutdown(int fd, std::chrono::milliseconds linger);

}  // namespace cellserve::net
