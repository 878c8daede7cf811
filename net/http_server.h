// The HTTP/1.1 transport of `cellserve serve`, the hub and the agent: a listener plus one thread per connection,
// synchronous Boost.Beast parsing, keep-alive, chunked streaming, limits and timeouts.
// Handlers see only http_types.h; everything about sockets stays in this folder.
// docs/http.md describes the threading model, limits and how disconnects are detected.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "base/status.h"
#include "net/cors.h"
#include "net/http_types.h"

namespace cellserve::net {

struct HttpServerOptions {
  std::string host = "127.0.0.1";      // an address or a name ("0.0.0.0", "::", "localhost")
  int port = 8080;                     // 0: an ephemeral port (tests); see HttpServer::port()
  size_t max_body_bytes = 8 << 20;     // larger request bodies are answered 413
  size_t max_header_bytes = 64 << 10;  // larger request headers are answered 431
  // At this many connections a new one evicts the connection idle the longest (one that never
  // sent a complete request header first, then keep-alive idle ones); with none idle it is
  // answered 503 and closed. Connections serving a request are never evicted.
  int max_connections = 256;
  // The same per client IP address (IPv6: the full address): within the address's own
  // connections an idle one is evicted, else 503. 0: no cap (a server behind a same-host proxy or
  // the TLS terminator, where every connection comes from 127.0.0.1).
  int max_connections_per_address = 64;
  std::chrono::seconds header_timeout{10};  // a request header must arrive whole within this of
                                            // the accept (first request) or of its first byte
  std::chrono::seconds read_timeout{30};    // a started request must arrive whole within this
  std::chrono::seconds idle_timeout{60};    // a keep-alive connection may idle this long between requests
  std::chrono::seconds write_timeout{30};   // a write blocked this long (client not reading) drops the client
  CorsPolicy cors{};                        // cross-origin browser requests: refused unless listed
  // Every connection starts with a PROXY protocol v1 header (net/proxy_protocol.h) whose source
  // address becomes the request's remote_address. Only for a server that listens on loopback
  // behind the TLS terminator: a connection without a valid header is closed.
  bool proxy_protocol = false;
  // Requests for which this returns true (it sees the method, path, query and headers; no body)
  // have their body written to a file in spool_dir instead of memory, up to max_spooled_body_bytes
  // (413 beyond), within spooled_read_timeout. Unset: every body is read into memory.
  // HttpRequest::body_file names the file; docs/http.md, "Spooled request bodies".
  std::function<bool(const HttpRequest& head)> spool_body{};
  std::string spool_dir{};  // must exist; "" : the system temp dir
  uint64_t max_spooled_body_bytes = 512ull << 20;
  std::chrono::seconds spooled_read_timeout{600};  // replaces read_timeout for spooled requests
};

class HttpConnection;

// An HTTP server. Each accepted connection runs on its own thread and calls the handler once per
// request, on that thread; the handler may block (e.g. while the model generates). Thread-safe:
// port(), active_connections() and stop() may be called from any thread.
class HttpServer {
 public:
  // Binds and listens on options.host:options.port and starts the accept thread. Returns
  // Unavailable ("127.0.0.1:8080: address already in use") when the address cannot be bound,
  // InvalidArgument for a bad host or option. `handler` must stay callable until stop() returns.
  static Result<std::unique_ptr<HttpServer>> start(const HttpServerOptions& options, Handler handler);

  // Calls stop().
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The bound port (the ephemeral one when options.port was 0).
  int port() const { return port_; }

  // Closes the listener, shuts down every open connection (blocked reads and writes fail, so
  // client_gone() turns true and write() returns false) and joins all threads. Returns once every
  // handler has returned: a handler that neither writes nor polls client_gone() delays it.
  // Idempotent.
  void stop();

  // Connections accepted and not yet finished (rejected 503 connections are not counted).
  int active_connections() const;

  // Connections closed so far to make room for a new one (see max_connections). Thread-safe.
  int evicted_connections() const { return evicted_.load(); }

 private:
  HttpServer(const HttpServerOptions& options, Handler handler, int listen_fd, int wake_fd, int port);
  void accept_loop();
  // The admission decision for a new connection from `address`; may evict an idle one.
  enum class Admission { Admit, RejectTotal, RejectAddress };
  Admission admit(const std::string& address);
  void start_connection(int fd, std::string address);
  void reject_connection(int fd, Admission why);
  void reap_finished(bool all);

  const HttpServerOptions options_;
  const Handler handler_;
  const int listen_fd_;
  const int wake_fd_;  // an eventfd that wakes accept_loop() for stop()
  const int port_;
  std::thread accept_thread_;

  std::mutex stop_mutex_;  // serializes stop()
  bool stopped_ = false;   // guarded by stop_mutex_

  mutable std::mutex mu_;  // guards connections_ and each connection's fd
  std::list<std::unique_ptr<HttpConnection>> connections_;
  std::atomic<bool> stopping_{false};  // set by stop(): no new connections, no further keep-alive
  std::atomic<int> active_{0};         // connections whose thread has not finished
  std::atomic<int> evicted_{0};        // connections evicted by admit()
};

}  // namespace cellserve::net
