// How the hub reaches one replica: the seam between the hub's request paths (the gateway, the
// replica address, the batch runner) and the tunnel that carries them to a device. TunnelClient
// implements it; the gateway's unit tests pass fake replicas.
#pragma once

#include "base/status.h"
#include "net/http_types.h"

namespace cellserve::fleet {

class ReplicaTransport {
 public:
  virtual ~ReplicaTransport() = default;
  // Sends `request` and relays the response into `out`, blocking until it ends; polls
  // out.client_gone() and resets the request when it turns true. OK once the whole response was
  // relayed; otherwise Unavailable, with *responded (when given) saying whether anything reached
  // `out` (TunnelClient::forward describes each case).
  virtual Status forward(const net::HttpRequest& request, net::ResponseWriter& out, bool* responded) = 0;
};

}  // namespace cellserve::fleet
