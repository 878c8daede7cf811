// The dialing hub's side of a hub link (peer_link_auth.h): fetch a challenge from the peer, send
// the upgrade with this hub's proof, and check the peer's proof in its 101 before the socket is
// used. Plain HTTP/1.1 read with Beast, so the bytes after the 101 stay ours to hand to HTTP/2.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "base/status.h"
#include "fleet/hub/peer_link_auth.h"
#include "fleet/tls/tls.h"

namespace cellserve::fleet {

struct PeerAddress {
  std::string host;
  int port = 0;
  bool tls = false;
};

// "http://host[:port]" or "https://host[:port]" (a path is ignored). InvalidArgument otherwise.
Result<PeerAddress> parse_peer_url(const std::string& url);

struct PeerDialer {
  std::chrono::milliseconds timeout{5000};  // each step: connect, each exchange
  std::shared_ptr<TlsContext> tls;          // for https peers (null: they cannot be dialed)
};

// GET kHubLinkChallengePath: the peer's one-time challenge. Unavailable when it cannot be reached
// or answers anything but a 64-hex-digit challenge.
Result<std::string> fetch_link_challenge(const PeerAddress& peer, const PeerDialer& dialer);

struct DialedLink {
  int fd = -1;                // the upgraded socket, owned by the caller
  std::string initial_bytes;  // what the peer sent after the 101
};

// Sends the upgrade for `h` with `proof` (dialer_proof(), or anything else in tests of the
// listener) and checks the 101's proof of `h` under `link_key`. Unauthenticated when the peer
// refuses (401) or its own proof is wrong (the socket is then closed: a peer that does not hold
// the cluster key is never served); Unavailable when it cannot be reached or answers otherwise.
Result<DialedLink> request_link(const PeerAddress& peer, const PeerDialer& dialer, const std::string& link_key,
                                const LinkHandshake& h, const std::string& proof);

// The whole dial: a challenge, a fresh nonce, the upgrade and both proofs.
Result<DialedLink> dial_peer(const PeerAddress& peer, const PeerDialer& dialer, const std::string& link_key,
                             const std::string& self_id, const std::string& peer_id);

}  // namespace cellserve::fleet
