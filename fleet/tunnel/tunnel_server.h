// The agent's end of the agent↔hub tunnel: an HTTP/2 *server* on the socket the agent itself
// opened to the hub (after the HTTP/1.1 Upgrade handshake), so a device behind NAT can be
// reached. The hub's requests (users' API calls and its own control requests) run the handler.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "fleet/tunnel/tunnel_options.h"
#include "net/http_types.h"

namespace cellserve::fleet {

class TunnelServer {
 public:
  // Takes ownership of `fd` (a connected stream socket; closed also on failure). `initial_bytes`:
  // bytes already read from the socket past the handshake. Starts the I/O thread. Each request
  // runs `handler` on its own thread once its body has arrived (handlers may block, e.g. while a
  // model generates); the ResponseWriter it gets writes into the request's stream, and its write()
  // blocks while about options.stream_window bytes wait for the hub. A handler that returns
  // without responding yields 500. Internal when the socket or nghttp2 cannot be set up.
  static Result<std::unique_ptr<TunnelServer>> start(int fd, net::Handler handler, TunnelOptions options = {},
                                                     std::string initial_bytes = {});

  // close().
  ~TunnelServer();
  TunnelServer(const TunnelServer&) = delete;
  TunnelServer& operator=(const TunnelServer&) = delete;

  // Blocks until the connection is closed (peer closed, protocol error, idle timeout, close()).
  // Handlers may still be running then; close() joins them.
  void wait();

  // True once the connection is closed or closing. Thread-safe.
  bool closed() const;

  // Why the connection closed ("" while open), e.g. "peer closed the connection". Thread-safe.
  std::string close_reason() const;

  // Closes the connection: every running handler sees client_gone() == true and write() == false.
  // Returns after all handler threads have been joined, so a handler that neither writes nor polls
  // client_gone() delays it. Idempotent; must not be called from a handler.
  void close();

  struct State;  // the implementation (tunnel_server.cpp)

 private:
  explicit TunnelServer(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace cellserve::fleet
