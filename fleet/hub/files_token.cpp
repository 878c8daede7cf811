#include "fleet/hub/files_token.h"

#include <charconv>

#include "fleet/crypto/hmac.h"
#include "fleet/crypto/identity.h"
#include "net/bearer.h"

namespace cellserve::fleet {
namespace {

constexpr std::string_view kPrefix = "cs1.";

}  // namespace

FilesTokens::FilesTokens() : key_(random_hmac_key()) {}

FilesTokens FilesTokens::for_cluster(std::string_view cluster_key) {
  return FilesTokens(hmac_sha256_hex(cluster_key, "cellserve files token v1"));
}

std::string FilesTokens::issue(std::string_view processor_id, int64_t now_s) const {
  const int64_t expiry = (now_s / kPeriodSeconds + 2) * kPeriodSeconds;
  std::string body = std::string(kPrefix) + std::string(processor_id) + "." + std::to_string(expiry);
  return body + "." + hmac_sha256_hex(key_, body);
}

std::optional<std::string> FilesTokens::verify(std::string_view token, int64_t now_s) const {
  // cs1.<processor id>.<expiry>.<mac>; every part checked before the MAC is compared.
  if (token.size() > 256 || !token.starts_with(kPrefix)) return std::nullopt;
  const size_t mac_dot = token.rfind('.');
  if (mac_dot == std::string_view::npos || mac_dot < kPrefix.size()) return std::nullopt;
  const std::string_view body = token.substr(0, mac_dot);
  const size_t expiry_dot = body.rfind('.');
  if (expiry_dot == std::string_view::npos || expiry_dot < kPrefix.size()) return std::nullopt;
  const std::string_view id = body.substr(kPrefix.size(), expiry_dot - kPrefix.size());
  const std::string_view expiry_text = body.substr(expiry_dot + 1);
  int64_t expiry = 0;
  const auto [end, ec] = std::from_chars(expiry_text.data(), expiry_text.data() + expiry_text.size(), expiry);
  if (ec != std::errc() || end != expiry_text.data() + expiry_text.size() || expiry <= now_s) return std::nullopt;
  const std::optional<std::string> canonical = canonical_identity(id);
  if (!canonical || *canonical != id) return std::nullopt;
  if (!net::constant_time_equal(token.substr(mac_dot + 1), hmac_sha256_hex(key_, body))) return std::nullopt;
  return std::string(id);
}

}  // namespace cellserve::fleet
