// How two hubs prove to each other that both hold the cluster key, without sending it
// (docs/cluster.md, "Hub to hub"). The listener hands out one-time challenges; the dialer answers
// one with its own fresh nonce and a proof, and the listener's 101 carries its proof of the
// dialer's nonce. Both proofs are HMAC-SHA-256 under a key derived from the cluster key, over both
// hubs' ids, the challenge and the nonce, each with its own role label, so a proof never serves
// as the other.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace cellserve::fleet {

inline constexpr std::string_view kHubLinkChallengePath = "/internal/v1/hub-link/challenge";
inline constexpr std::string_view kHubLinkPath = "/internal/v1/hub-link";
inline constexpr std::string_view kHubLinkProtocol = "cellserve-hub-link/1";
// Upgrade request: the dialer's id, the listener's id as the dialer knows it, the challenge, the
// dialer's nonce and its proof. 101 response: the listener's proof.
inline constexpr std::string_view kHubIdHeader = "x-cellserve-hub";
inline constexpr std::string_view kPeerIdHeader = "x-cellserve-peer";
inline constexpr std::string_view kLinkChallengeHeader = "x-cellserve-link-challenge";
inline constexpr std::string_view kLinkNonceHeader = "x-cellserve-link-nonce";
inline constexpr std::string_view kLinkProofHeader = "x-cellserve-link-proof";

// The key both proofs are made with: HMAC-SHA-256(cluster key, "cellserve hub link v1"), as hex.
// The cluster key itself never signs anything else's messages this way.
std::string hub_link_key(std::string_view cluster_key);

// A hub id as it may appear in a handshake: 1 to 64 characters of [A-Za-z0-9_.-].
bool valid_hub_id(std::string_view id);
// 64 lower-case hex digits (challenges and nonces: 32 random bytes).
bool valid_link_token(std::string_view token);

struct LinkHandshake {
  std::string dialer_id;
  std::string listener_id;
  std::string challenge;  // the listener's, single use
  std::string nonce;      // the dialer's, fresh for each dial
};

// The dialer's proof (sent with the upgrade request) and the listener's (sent with the 101).
std::string dialer_proof(std::string_view link_key, const LinkHandshake& h);
std::string listener_proof(std::string_view link_key, const LinkHandshake& h);
// Constant-time checks of a received proof.
bool dialer_proof_valid(std::string_view link_key, const LinkHandshake& h, std::string_view proof);
bool listener_proof_valid(std::string_view link_key, const LinkHandshake& h, std::string_view proof);

// The listener's outstanding challenges: each valid once, for a short time, and few at once (only
// hubs ask for them, but anyone can).
class LinkChallenges {
 public:
  static constexpr size_t kMaxOutstanding = 256;
  explicit LinkChallenges(std::chrono::seconds ttl = std::chrono::seconds(30)) : ttl_(ttl) {}
  // A fresh challenge; nullopt when kMaxOutstanding unexpired ones are outstanding.
  std::optional<std::string> issue();
  // True (and forgets it) when `challenge` was issued, is unused and unexpired.
  bool redeem(const std::string& challenge);

 private:
  using Clock = std::chrono::steady_clock;
  const std::chrono::seconds ttl_;
  std::mutex mu_;
  std::map<std::string, Clock::time_point> expiry_;  // guarded by mu_
};

}  // namespace cellserve::fleet
