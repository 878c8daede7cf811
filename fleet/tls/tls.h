// TLS for the fleet (OpenSSL 3), as byte pumps between a TLS connection and a plain socket, so the
// HTTP server, the upgrade handshake and the HTTP/2 tunnel keep working on plain descriptors:
//   - the hub's TlsTerminator accepts TLS on the public address and relays each connection to the
//     hub's HTTP server on a loopback port (users' HTTPS and agents' tunnels alike);
//   - an agent's tls_connect() returns one end of a socketpair whose other end is relayed, by
//     a pump thread, to the TLS connection it opened to the hub.
// A pump owns a connection for its life: one thread, non-blocking I/O, at most 64 KiB buffered
// each way (backpressure is TCP's).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "base/status.h"

typedef struct ssl_ctx_st SSL_CTX;

namespace cellserve::fleet {

class TlsContext {
 public:
  // A server context from PEM files; errors name the file and OpenSSL's reason.
  static Result<std::shared_ptr<TlsContext>> server(const std::string& cert_file, const std::string& key_file);
  // A client context that verifies the server against `ca_file` (PEM), or the system's
  // certificate store when empty.
  static Result<std::shared_ptr<TlsContext>> client(const std::string& ca_file);
  ~TlsContext();
  SSL_CTX* get() const { return ctx_; }

 private:
  explicit TlsContext(SSL_CTX* ctx) : ctx_(ctx) {}
  SSL_CTX* ctx_;
};

// A plain TCP connection to host:port (blocking, TCP_NODELAY set; the caller owns the socket).
// Unavailable when the name does not resolve or nothing answers.
Result<int> connect_tcp(const std::string& host, int port);

// Connects to host:port over TLS, verifying the certificate for `host` (a name or an IP
// address), and returns a plain socket carrying the decrypted stream (the caller owns it; closing
// it ends the connection). Unavailable when unreachable, Unauthenticated when verification fails.
Result<int> tls_connect(const std::string& host, int port, const std::shared_ptr<TlsContext>& ctx,
                        std::chrono::seconds timeout);

// Accepts TLS connections on host:port and relays each, decrypted, to 127.0.0.1:target_port.
class TlsTerminator {
 public:
  static Result<std::unique_ptr<TlsTerminator>> start(const std::string& host, int port,
                                                      std::shared_ptr<TlsContext> ctx, int target_port,
                                                      std::function<void(const std::string&)> log);
  ~TlsTerminator();
  int port() const { return port_; }
  // Closes the listener and every relayed connection, and joins their threads. Idempotent.
  void stop();

 private:
  TlsTerminator() = default;
  void accept_loop();

  std::shared_ptr<TlsContext> ctx_;
  std::function<void(const std::string&)> log_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;
  int port_ = 0;
  int target_port_ = 0;
  std::thread accept_thread_;
  std::mutex mu_;
  struct Connection {
    int fd = -1;  // the TLS side, shut down by stop()
    std::thread thread;
    std::atomic<bool> done{false};
  };
  std::list<std::unique_ptr<Connection>> connections_;
  std::atomic<bool> stopping_{false};
};

}  // namespace cellserve::fleet
