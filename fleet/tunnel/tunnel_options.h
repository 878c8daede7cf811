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
};

}  // namespace cellserve::fleet
