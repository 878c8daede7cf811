#include "fleet/hub/peer_link_auth.h"

#include <algorithm>

#include "fleet/crypto/hmac.h"
#include "fleet/crypto/identity.h"
#include "net/bearer.h"

namespace cellserve::fleet {
namespace {

// Each field on its own line: ids and tokens are validated to hold no newline, so the message
// splits one way only.
std::string proof_message(std::string_view role, const LinkHandshake& h) {
  std::string m;
  m.append(role).append("\n").append(h.dialer_id).append("\n").append(h.listener_id);
  m.append("\n").append(h.challenge).append("\n").append(h.nonce);
  return m;
}

}  // namespace

std::string hub_link_key(std::string_view cluster_key) { return hmac_sha256_hex(cluster_key, "cellserve hub link v1"); }

bool valid_hub_id(std::string_view id) {
  return !id.empty() && id.size() <= 64 && std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == '-';
  });
}

bool valid_link_token(std::string_view token) {
  return token.size() == 64 && std::all_of(token.begin(), token.end(),
                                           [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::string dialer_proof(std::string_view link_key, const LinkHandshake& h) {
  return hmac_sha256_hex(link_key, proof_message("cellserve hub link dialer", h));
}

std::string listener_proof(std::string_view link_key, const LinkHandshake& h) {
  return hmac_sha256_hex(link_key, proof_message("cellserve hub link listener", h));
}

bool dialer_proof_valid(std::string_view link_key, const LinkHandshake& h, std::string_view proof) {
  return net::constant_time_equal(proof, dialer_proof(link_key, h));
}

bool listener_proof_valid(std::string_view link_key, const LinkHandshake& h, std::string_view proof) {
  return net::constant_time_equal(proof, listener_proof(link_key, h));
}

std::optional<std::string> LinkChallenges::issue() {
  std::lock_guard lock(mu_);
  const auto now = Clock::now();
  std::erase_if(expiry_, [&](const auto& kv) { return kv.second < now; });
  if (expiry_.size() >= kMaxOutstanding) return std::nullopt;
  std::string challenge = random_hex(32);
  expiry_[challenge] = now + ttl_;
  return challenge;
}

bool LinkChallenges::redeem(const std::string& challenge) {
  std::lock_guard lock(mu_);
  const auto it = expiry_.find(challenge);
  if (it == expiry_.end()) return false;
  const bool fresh = it->second >= Clock::now();
  expiry_.erase(it);
  return fresh;
}

}  // namespace cellserve::fleet
