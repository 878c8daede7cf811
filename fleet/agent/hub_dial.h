// The agent's side of opening a tunnel: fetch a challenge, sign it, and upgrade a fresh TCP
// connection to the hub (fleet/spec/agent_protocol.h). Plain HTTP/1.1 over a socket, read with
// Beast, so the bytes after the 101 stay ours to hand to the HTTP/2 server.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "base/status.h"
#include "fleet/crypto/identity.h"
#include "fleet/tls/tls.h"

namespace cellserve::fleet {

struct HubAddress {
  std::string host;  // as given: the Host header and the origin the tunnel signature names
  int port = 0;
  // "" : connect to `host`. Else one of host's addresses to connect to (a name with several:
  // hub_candidates.h); plain http only, since an https hub's certificate is verified by name.
  std::string connect_host;
  bool tls = false;
  std::shared_ptr<TlsContext> tls_context;  // set by the caller for https
};

// "http://host[:port]" (80) or "https://host[:port]" (443). InvalidArgument for anything else.
Result<HubAddress> parse_hub_url(const std::string& url);

struct DialedTunnel {
  int fd = -1;                // the upgraded socket, owned by the caller
  std::string initial_bytes;  // bytes the hub sent after the 101
};

// Unauthenticated (401) when the hub refuses the signature, PermissionDenied (403) when it does
// not admit the device (not enrolled, revoked; the hub's reason in the message); Unavailable
// when it cannot be reached. `enroll_token`: sent as X-Cellserve-Enroll when not empty.
// `on_challenge`, when set, runs with the hub's challenge and this hub's origin before the
// tunnel is requested (the agent prepares its attestation for this registration; the challenge
// is valid for 60 s); what it returns, when not empty, is sent as X-Cellserve-Attested-Signature
// (the attested key's signature of attest::attested_tunnel_digest, base64).
using ChallengeHook = std::function<std::string(const std::string& challenge, const std::string& origin)>;
Result<DialedTunnel> dial_hub(const HubAddress& hub, const Identity& identity, std::chrono::seconds timeout,
                              const std::string& enroll_token = "", const ChallengeHook& on_challenge = {});

}  // namespace cellserve::fleet
