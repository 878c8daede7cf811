// TLS for the fleet (OpenSSL 3), as byte pumps between a TLS connection and a plain socket, so the
// HTTP server, the upgrade handshake and the HTTP/2 tunnel keep working on plain descriptors:
//   - the hub's TlsTerminator accepts TLS on the public address and relays each connection to the
//     hub's HTTP server on a loopback port (users' HTTPS and agents' tunnels alike);
//   - an agent's tls_connect() returns one end of a socketpair whose other end is relayed, by
//     a pump thread, to the TLS connection it opened to the hub.
// A pump owns a connection for its life: one thread, non-blocking I/O, at most 64 KiB buffered
// each way (backpressure is TCP's), and a deadline on every wait (TlsTerminatorOptions).
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
  // certificate store when empty ($SSL_CERT_FILE, which the bundle's launcher points at its own
  // CA file; InvalidArgument when that store holds nothing).
  static Result<std::shared_ptr<TlsContext>> client(const std::string& ca_file);
  ~TlsContext();
  SSL_CTX* get() const { return ctx_; }

 private:
  explicit TlsContext(SSL_CTX* ctx) : ctx_(ctx) {}
  SSL_CTX* ctx_;
};

// OpenSSL's oldest queued error as text ("unknown TLS error" when none), clearing the queue.
std::string openssl_error();

// A plain TCP connection to host:port (blocking once connected, TCP_NODELAY set; the caller
// owns the socket), each address tried in turn within `timeout` in all. The name is resolved by
// resolve_host() (name_resolution.h: --dns). Unavailable when it does not resolve or nothing
// answers.
Result<int> connect_tcp(const std::string& host, int port,
                        std::chrono::milliseconds timeout = std::chrono::seconds(10));

// Connects to host:port over TLS, verifying the certificate for `host` (a name or an IP
// address), and returns a plain socket carrying the decrypted stream (the caller owns it; closing
// it ends the connection). Unavailable when unreachable, Unauthenticated when verification fails.
Result<int> tls_connect(const std::string& host, int port, const std::shared_ptr<TlsContext>& ctx,
                        std::chrono::seconds timeout);

// The terminator's limits; docs/security.md ("Connection limits") gives the reasons.
struct TlsTerminatorOptions {
  // Connections held at once (handshaking, waiting for their first bytes, or relayed); each has a
  // thread. At the limit a new connection evicts the oldest that has not yet sent application
  // data; with none such it is closed at once (there is no TLS yet to say why).
  int max_connections = 1024;
  // The same per client IP address; within the address an idle one is evicted, else closed.
  // 0: no cap.
  int max_connections_per_address = 64;
  // The TLS handshake and the client's first application bytes must arrive within this of the
  // accept; only then is the connection relayed (a backend connection opened).
  std::chrono::seconds handshake_timeout{10};
  // Bytes that cannot be passed on for this long (a peer that stopped reading) end the relay.
  std::chrono::seconds write_timeout{30};
  // A relay that moves no byte either way for this long is closed (above the hub's HTTP
  // keep-alive of 120 s and the tunnel's 5 s pings).
  std::chrono::seconds idle_timeout{300};
  // Each relayed connection starts with a PROXY protocol v1 header naming the client
  // (net/proxy_protocol.h), for a backend started with HttpServerOptions::proxy_protocol.
  bool send_proxy_header = false;
};

// Accepts TLS connections on host:port and relays each, decrypted, to 127.0.0.1:target_port.
// Thread-safe: port(), the counters and stop() may be called from any thread.
class TlsTerminator {
 public:
  static Result<std::unique_ptr<TlsTerminator>> start(const std::string& host, int port,
                                                      std::shared_ptr<TlsContext> ctx, int target_port,
                                                      std::function<void(const std::string&)> log,
                                                      const TlsTerminatorOptions& options = {});
  ~TlsTerminator();
  int port() const { return port_; }
  // Closes the listener and every relayed connection, and joins their threads. Idempotent.
  void stop();

  // New connections handshake with `ctx` from now on (a reloaded certificate); connections
  // already open keep theirs, so none is dropped.
  void set_context(std::shared_ptr<TlsContext> ctx);

  // The relayed connection whose connection to the server behind comes from `backend_port` (the
  // peer port, net::peer_port(), of the socket that server accepted) has become an authenticated
  // tunnel (an agent's, or another hub's link): from now on it counts against neither
  // max_connections nor max_connections_per_address, whose bounds are for clients; the hub bounds
  // its tunnels itself (HubOptions::max_agents). False when no relaying connection has that port.
  bool mark_tunnel(int backend_port);

  // Connections whose thread has not finished.
  int active_connections() const { return active_.load(); }
  // Of those, the ones marked as tunnels.
  int tunnel_connections() const { return tunnels_.load(); }
  // Connections closed so far to make room for a new one.
  int evicted_connections() const { return evicted_.load(); }

 private:
  struct Connection;
  TlsTerminator() = default;
  void accept_loop();
  bool admit(const std::string& address);
  void serve(Connection* c);
  void log_limited(const std::string& line);

  mutable std::mutex ctx_mu_;
  std::shared_ptr<TlsContext> ctx_;  // guarded by ctx_mu_
  std::function<void(const std::string&)> log_;
  int listen_fd_ = -1;
  int wake_fd_ = -1;
  int port_ = 0;
  int target_port_ = 0;
  TlsTerminatorOptions options_;
  std::thread accept_thread_;
  std::mutex mu_;  // guards connections_ and each connection's fd
  struct Connection {
    enum Phase { kWaiting, kRelaying, kTunnel, kEvicted };
    int fd = -1;          // the TLS side, shut down by stop() or an eviction
    std::string address;  // the client's IP address
    std::chrono::steady_clock::time_point accepted;
    // kWaiting -> kRelaying once the first bytes arrived -> kTunnel once mark_tunnel() says so.
    std::atomic<int> phase{kWaiting};
    std::atomic<int> backend_port{0};  // the local port of its connection to the server behind
    std::thread thread;
    std::atomic<bool> done{false};
  };
  std::list<std::unique_ptr<Connection>> connections_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> active_{0};
  std::atomic<int> evicted_{0};
  std::atomic<int> tunnels_{0};
  std::mutex log_mu_;
  std::chrono::steady_clock::time_point last_log_{};  // guarded by log_mu_
};

}  // namespace cellserve::fleet
