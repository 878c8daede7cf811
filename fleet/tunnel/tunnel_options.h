// Settings shared by both ends of the agent↔hub tunnel (tunnel_server.h, tunnel_client.h).
// Both ends should use the same values: the agent derives its idle limit from the hub's ping
// interval and timeout.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace cellserve::fleet {

struct TunnelOptions {
  // Per-stream HTTP/2 flow-control window (bytes) each end advertises for the data it receives.
  // It bounds what a slow user can leave buffered per stream on the hub, and how far an agent's
  // handler can run ahead of that user (about twice this: the agent's own buffer plus the window).
  uint32_t stream_window = 256 * 1024;
  // Connection-level window: the sum of unacknowledged data over all streams.
  uint32_t connection_window = 16 << 20;
  // Streams each end accepts at once; the hub queues further requests until a stream finishes.
  uint32_t max_concurrent_streams = 256;
  // The hub sends a PING this often (the first right after start).
  std::chrono::milliseconds ping_interval{5000};
  // Hub: a PING outstanding with no frame received for this long means the tunnel is dead, and it
  // is closed. Agent: nothing received for ping_interval + ping_timeout closes it. 0 (either one)
  // disables these checks.
  std::chrono::milliseconds ping_timeout{10000};
  // Agent side: request bodies larger than this are answered 413 (the body is read and dropped).
  size_t max_request_body = 8 << 20;
  // Hub side: everything an agent sends is bounded, since any device can be hostile. A response
  // that forward() relays whole (not streamed) may be this large; a call()'s (the hub's own
  // control requests: info, status, assignments) this; a response's header block this. Beyond
  // them the stream is reset and the caller gets ResourceExhausted naming the limit. Streamed
  // responses are bounded by the stream window instead (relayed as they arrive).
  size_t max_response_body = 32 << 20;
  size_t max_call_body = 1 << 20;
  size_t max_response_headers = 64 << 10;
};

}  // namespace cellserve::fleet
