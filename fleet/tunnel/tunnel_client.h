// The hub's end of the agent↔hub tunnel: an HTTP/2 *client* on the socket the agent opened to
// the hub (after the HTTP/1.1 Upgrade handshake). The hub forwards users' requests to the agent
// through it (forward()) and sends its own small control requests (call()), and pings the agent
// to notice a dead tunnel.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "base/status.h"
#include "fleet/tunnel/replica_transport.h"
#include "fleet/tunnel/tunnel_options.h"
#include "net/http_types.h"

namespace cellserve::fleet {

// A buffered response from call().
struct TunnelResponse {
  int status = 0;
  net::HeaderList headers;  // names lower-case, without pseudo-headers
  std::string body;
};

// Thread-safe: any number of threads may forward() and call() at once; each request is a stream.
class TunnelClient final : public ReplicaTransport {
 public:
  // Takes ownership of `fd` (a connected stream socket; closed also on failure). `initial_bytes`:
  // bytes already read from the socket past the handshake. Starts the I/O thread, which sends the
  // HTTP/2 preface and the first PING. Internal when the socket or nghttp2 cannot be set up.
  static Result<std::unique_ptr<TunnelClient>> start(int fd, TunnelOptions options = {},
                                                     std::string initial_bytes = {});

  // close().
  ~TunnelClient();
  TunnelClient(const TunnelClient&) = delete;
  TunnelClient& operator=(const TunnelClient&) = delete;

  // Forwards `request` (method, path + query, headers, body; "host" becomes :authority) and relays
  // the response into `out`, blocking until it ends. A response the agent produced with send() is
  // relayed with out.send() (whole); one produced with begin_stream()/write() with
  // out.begin_stream()/write() chunk by chunk as it arrives. Received data is acknowledged to the
  // agent only after out.write() returned, so a slow user stalls only its own stream and at most
  // about options.stream_window bytes wait here per stream.
  // Returns OK once the whole response was relayed. Otherwise, with *responded (when given) set
  // to whether anything was sent to `out` (if not, the caller can still answer 502/503 itself):
  //   Unavailable "tunnel closed ..."  the tunnel closed before or during the response;
  //   Unavailable "client gone ..."    out.client_gone() turned true or out.write() failed: the
  //                                    stream was reset (CANCEL), the agent's handler sees
  //                                    client_gone();
  //   Unavailable "stream reset ..."   the agent reset the stream (e.g. its handler threw).
  Status forward(const net::HttpRequest& request, net::ResponseWriter& out, bool* responded = nullptr) override;

  // Sends a small request and buffers its whole response (control messages). Unavailable when the
  // tunnel closes, the stream is reset, or no complete response arrived within `timeout` (the
  // stream is then reset, so the agent's handler sees client_gone()).
  Result<TunnelResponse> call(const std::string& method, const std::string& path, const std::string& body,
                              std::chrono::milliseconds timeout, const net::HeaderList& headers = {});

  // True once the tunnel is closed or closing. Thread-safe.
  bool closed() const;

  // Why the tunnel closed ("" while open), e.g. "ping timeout". Thread-safe.
  std::string close_reason() const;

  // Closes the tunnel (sending GOAWAY if the socket takes it) and fails every pending call() and
  // forward() with Unavailable. Joins the I/O thread. Idempotent.
  void close();

  // `callback` runs once, on the I/O thread, when the tunnel closes (at once, on this thread, if it
  // already has). It must not destroy this TunnelClient; calling close() from it is fine.
  // A later call replaces an earlier callback that has not run yet.
  void on_close(std::function<void()> callback);

  // The round-trip time of the last acknowledged PING; nullopt before the first. Thread-safe.
  std::optional<std::chrono::microseconds> last_ping_rtt() const;

  struct State;  // the implementation (tunnel_client.cpp)

 private:
  explicit TunnelClient(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace cellserve::fleet
